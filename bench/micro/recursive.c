/* recursive -- Prosper Table III "Recursive-4/8/16": DEPTH+1 frames of char[4096]; in each,
 * chunks of 30 %, 40 % and 30 % of the buffer are written between spins of 100k-200k
 * iterations.  usage: recursive DEPTH [ROUNDS] */
#include <string.h>
#include "common.h"

static void __attribute__((noinline)) frame(int d)
{
	volatile char buf[4096];
	if (d > 0)
		frame(d - 1);
	static const int cut[4] = { 0, 1229, 2867, 4096 }; /* 30 % | 40 % | 30 % */
	for (int c = 0; c < 3; c++) {
		for (int i = cut[c]; i < cut[c + 1]; i++)
			buf[i] = (char)(i + d + c);
		spin(100000 + lfsr() % 100000);
	}
	mix((uint64_t)buf[lfsr() % 4096]);
}

int main(int argc, char **argv)
{
	if (argc < 2 || (strcmp(argv[1], "4") && strcmp(argv[1], "8") && strcmp(argv[1], "16"))) {
		fprintf(stderr, "usage: recursive 4|8|16 [ROUNDS]\n");
		return 2;
	}
	int depth = atoi(argv[1]);
	long rounds = scale(argc - 1, argv + 1, 3200 / depth);
	for (long r = 0; r < rounds; r++)
		frame(depth);
	return finish();
}

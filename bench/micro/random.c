/* random -- Prosper Table III "Random": per call a depth of (r%4)+1 frames, each a 132 KB u32
 * array with 100 random writes per 4 KB page, then a 1000-iteration spin; (r%10)+24 operations
 * per call.  usage: random [CALLS] */
#include "common.h"

#define FRAME_WORDS (132 * 1024 / 4)

static void __attribute__((noinline)) frame(int depth)
{
	volatile uint32_t a[FRAME_WORDS];
	for (int p = 0; p < FRAME_WORDS / 1024; p++)
		for (int k = 0; k < 100; k++)
			a[p * 1024 + lfsr() % 1024] = lfsr();
	spin(1000);
	if (depth > 1)
		frame(depth - 1);
	mix(a[lfsr() % FRAME_WORDS]);
}

int main(int argc, char **argv)
{
	long calls = scale(argc, argv, 1000);
	for (long c = 0; c < calls; c++) {
		uint32_t r = lfsr();
		for (uint32_t op = 0; op < r % 10 + 24; op++)
			frame((int)(r % 4) + 1);
	}
	return finish();
}

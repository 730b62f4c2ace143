/* sidebyside -- two private anonymous mappings side by side that the kernel keeps apart while the
 * program runs (the lower one is "nohugepage", as glibc's MAP_STACK makes a thread's stack) and
 * that a resume, which maps both anew as plain anonymous memory, gets as one: the capture after a
 * resume must still see two saved regions, each as it was (capture.c, split_at_saved).
 *
 * Both are written whole once (2 x 32 MiB), then ROUNDS times a few pages of each, PAUSE_MS apart
 * (2 by default): the run's length is set by the pauses, the pages written after a kill by the
 * rounds.  Prints a checksum of both.  usage: sidebyside ROUNDS [PAUSE_MS] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define HALF (32ul << 20)
#define PAGE 4096ul

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 200;
	long pause_ms = argc > 2 ? atol(argv[2]) : 2;
	uint8_t *both = mmap(NULL, 2 * HALF, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (both == MAP_FAILED)
		return perror("mmap"), 1;
	uint8_t *low = mmap(both, HALF, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	uint8_t *high = mmap(both + HALF, HALF, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	if (low == MAP_FAILED || high == MAP_FAILED || madvise(low, HALF, MADV_NOHUGEPAGE) != 0)
		return perror("mmap/madvise"), 1;
	for (size_t i = 0; i < 2 * HALF; i++)
		both[i] = (uint8_t)(i * 131 >> 7);
	uint64_t x = 88172645463325252ull;
	for (long r = 0; r < rounds; r++) {
		for (int k = 0; k < 8; k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			both[x % (2 * HALF)] += (uint8_t)r;
		}
		struct timespec ts = { pause_ms / 1000, pause_ms % 1000 * 1000000 };
		nanosleep(&ts, NULL);
	}
	uint64_t sum = 0;
	for (size_t i = 0; i < 2 * HALF; i += 8)
		sum = sum * 31 + *(uint64_t *)(both + i);
	printf("%016llx\n", (unsigned long long)sum);
	return 0;
}

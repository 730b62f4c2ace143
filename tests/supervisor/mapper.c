/* mapper -- a program whose memory map keeps changing, for the capture engine's soundness
 * oracle: heap growth (brk), large allocations (mmap) freed again, mprotect, stack frames, and
 * sleeps so that checkpoints land in between.  Prints a checksum and the time it slept.
 * usage: mapper [ROUNDS] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001B3ull; }

static uint64_t __attribute__((noinline)) frame(int r)
{
	volatile uint8_t buf[20000];
	for (int i = 0; i < 20000; i += 61)
		buf[i] = (uint8_t)(i + r);
	return buf[r % 20000];
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 60;
	uint64_t h = 0;
	char *small[64] = { 0 };
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int r = 0; r < rounds; r++) {
		free(small[r % 64]);
		small[r % 64] = malloc(1000 + (size_t)r * 37);         /* brk heap grows and churns */
		memset(small[r % 64], r, 1000 + (size_t)r * 37);
		size_t big = (size_t)(1 + r % 5) << 20;                  /* mmap'd, then unmapped */
		uint8_t *m = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		for (size_t i = 0; i < big; i += 4096)
			m[i] = (uint8_t)(i >> 12) + (uint8_t)r;
		if (r % 3 == 0)
			mprotect(m, 4096, PROT_READ);                    /* splits the mapping */
		h = mix(h, m[big - 4096]);
		if (r % 2)
			munmap(m, big);
		h = mix(h, frame(r));
		usleep(3000);
	}
	/* A mapping that lives across checkpoints and then goes, also across checkpoints: a removal
	 * every checkpointer sees (a round's munmap mostly falls in the interval of its mmap). */
	size_t kept = 1 << 20;
	uint8_t *k = mmap(NULL, kept, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(k, 0x44, kept);
	usleep(30000);
	h = mix(h, k[kept / 2]);
	munmap(k, kept);
	usleep(30000);
	/* A mapping replaced at the same address by a smaller, new one between two checkpoints:
	 * same start, new contents, and (for the page tracker) not write-protected yet. */
	size_t big = 4 << 20, smaller = 2 << 20;
	uint8_t *a = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(a, 0x11, big);
	usleep(30000);
	munmap(a, big);
	uint8_t *b = mmap(a, smaller, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	memset(b, 0x22, smaller);
	usleep(30000);
	b[100] = 0x33;
	usleep(30000);
	h = mix(h, b[100] + b[smaller - 1]);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double slept = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
	for (int i = 0; i < 64; i++)
		if (small[i])
			h = mix(h, (uint8_t)small[i][0]);
	printf("checksum 0x%016llx\n", (unsigned long long)h);
	fprintf(stderr, "elapsed %.4f requested %.4f\n", slept, rounds * 0.003);
	return 0;
}

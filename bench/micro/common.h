/* common.h -- shared bits of the Prosper micro-benchmarks (paper Table III, artifact parameters):
 * the 16-bit LFSR seeded 0xACE1, spin loops the compiler cannot delete, a result checksum, and
 * the scale argument.  Deterministic: no time, no addresses in the output. */
#ifndef PROSPER_BENCH_COMMON_H
#define PROSPER_BENCH_COMMON_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint32_t lfsr_state = 0xACE1u;
static uint64_t checksum;

static inline uint32_t lfsr(void)
{
	uint32_t s = lfsr_state;
	uint32_t bit = ((s >> 0) ^ (s >> 2) ^ (s >> 3) ^ (s >> 5)) & 1u;
	lfsr_state = (s >> 1) | (bit << 15);
	return lfsr_state;
}

/* spin -- a compute block: n iterations of arithmetic on registers only */
static inline void spin(uint32_t n)
{
	uint32_t x = n;
	for (uint32_t i = 0; i < n; i++)
		__asm__ volatile("" : "+r"(x) : : );
	checksum += x & 1;
}

static inline void mix(uint64_t v) { checksum = (checksum ^ v) * 0x100000001B3ull; }

/* scale -- the first argument, a positive number of outer iterations, or the default */
static inline long scale(int argc, char **argv, long dflt)
{
	if (argc < 2)
		return dflt;
	char *end;
	long v = strtol(argv[1], &end, 10);
	if (*end || v <= 0) {
		fprintf(stderr, "usage: %s [ITERATIONS>0]\n", argv[0]);
		exit(2);
	}
	return v;
}

static inline int finish(void)
{
	printf("checksum 0x%016llx\n", (unsigned long long)checksum);
	return 0;
}
#endif

/* vmachurn -- a program whose memory map changes K times per interval, for the metadata study
 * (bench/scripts/metadata_modes.py): N one-page mappings kept apart by inaccessible pages (so
 * the kernel never merges them), and every INTERVAL_MS, K of them (round robin) flip between
 * read-write and read-only with mprotect -- one VMA change each -- and the writable ones get a
 * byte written.  The map always holds about 2N mappings, so only the number of changes varies.
 * Deterministic: prints a checksum of the pages after a fixed number of ticks.
 * usage: vmachurn K [N=1000] [TICKS=150] [INTERVAL_MS=10] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

int main(int argc, char **argv)
{
	long k = argc > 1 ? atol(argv[1]) : 10, n = argc > 2 ? atol(argv[2]) : 1000;
	long ticks = argc > 3 ? atol(argv[3]) : 150, interval_ms = argc > 4 ? atol(argv[4]) : 10;
	if (k < 0 || n < 1 || k > n || ticks < 1 || interval_ms < 1) {
		fprintf(stderr, "usage: vmachurn K [N] [TICKS] [INTERVAL_MS] (0 <= K <= N)\n");
		return 2;
	}
	uint8_t *base = mmap(NULL, (size_t)(2 * n + 1) * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *writable = calloc((size_t)n, 1);
	if (base == MAP_FAILED || !writable)
		return 1;
	for (long i = 0; i < n; i++) {
		uint8_t *p = base + (2 * i + 1) * 4096;
		if (mprotect(p, 4096, PROT_READ | PROT_WRITE))
			return 1;
		p[0] = (uint8_t)i;
		writable[i] = 1;
	}
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	long at = 0;
	for (long t = 0; t < ticks; t++) {
		for (long j = 0; j < k; j++, at = (at + 1) % n) {
			uint8_t *p = base + (2 * at + 1) * 4096;
			writable[at] ^= 1;
			if (mprotect(p, 4096, writable[at] ? PROT_READ | PROT_WRITE : PROT_READ))
				return 1;
			if (writable[at])
				p[t % 4096] = (uint8_t)(t + at);
		}
		next.tv_nsec += interval_ms * 1000000L;
		while (next.tv_nsec >= 1000000000L)
			next.tv_nsec -= 1000000000L, next.tv_sec++;
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
	uint64_t h = 1469598103934665603ull;
	for (long i = 0; i < n; i++)
		for (long b = 0; b < 4096; b += 64)
			h = (h ^ base[(2 * i + 1) * 4096 + b]) * 0x100000001B3ull;
	printf("checksum 0x%016llx\n", (unsigned long long)h);
	return 0;
}

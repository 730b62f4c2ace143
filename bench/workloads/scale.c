/* scale -- a program of a given size that writes all over its memory: the scale benchmark of
 * `prosper bench scale` (issue: checkpoints of programs of several GiB).
 *
 * usage: scale MIB WRITES
 *   Maps MIB MiB of anonymous memory and fills every byte (a pattern of the offset), prints
 *   "filled MIB MiB", then makes WRITES 8-byte writes at random 8-byte-aligned offsets of the
 *   whole mapping (a xorshift generator: the same offsets every run), and prints a checksum of
 *   every word (a lost or torn write shows).  The output depends only on the arguments, so a run killed
 *   and resumed must print what a native run prints. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

int main(int argc, char **argv)
{
	long mib = argc == 3 ? atol(argv[1]) : 0;
	long long writes = argc == 3 ? atoll(argv[2]) : -1;
	if (mib < 1 || writes < 0) {
		fprintf(stderr, "usage: scale MIB WRITES\n");
		return 2;
	}
	size_t words = ((size_t)mib << 20) / 8;
	uint64_t *m = mmap(NULL, words * 8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		perror("scale: mmap");
		return 2;
	}
	for (size_t i = 0; i < words; i++)
		m[i] = i * 0x9E3779B97F4A7C15ull;
	printf("filled %ld MiB\n", mib);
	fflush(stdout);
	uint64_t x = 88172645463325252ull;
	for (long long w = 0; w < writes; w++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		m[x % words] += x | 1;
	}
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < words; i++)  /* each word weighted by its index: a moved word shows too */
		h += (m[i] ^ i) * 0x100000001B3ull;
	printf("checksum %016llx\n", (unsigned long long)h);
	return 0;
}

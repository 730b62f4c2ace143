/* bigmem -- one large anonymous mapping, for the size limits of the capture and restore path:
 * MIB MiB mapped at once; one byte of every STRIDE KiB (and of the last page) written, so a
 * sparse stride reaches offsets past 4 GiB without the machine's memory, and a stride of 4 fills
 * it; then ROUNDS rounds each change 256 of those bytes at random and sleep 2 ms, so that
 * checkpoints land during them.  Prints a line when filled and a checksum at the end; the output
 * does not depend on interruptions.
 * usage: bigmem MIB STRIDE_KIB ROUNDS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

static uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001B3ull; }

int main(int argc, char **argv)
{
	long mib = argc == 4 ? atol(argv[1]) : 0, stride_kib = argc == 4 ? atol(argv[2]) : 0;
	long rounds = argc == 4 ? atol(argv[3]) : 0;
	if (mib < 1 || stride_kib < 4 || stride_kib % 4 || rounds < 0) {
		fprintf(stderr, "usage: bigmem MIB STRIDE_KIB ROUNDS (STRIDE a multiple of 4)\n");
		return 2;
	}
	size_t len = (size_t)mib << 20, stride = (size_t)stride_kib << 10;
	uint8_t *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED) {
		perror("bigmem: mmap");
		return 2;
	}
	size_t touched = (len - 1) / stride + 1;
	for (size_t i = 0; i < touched; i++)
		m[i * stride] = (uint8_t)(i * 7 + 1);
	m[len - 1] = 0x5a;
	printf("filled %ld MiB, %zu pages touched\n", mib, touched + 1);
	fflush(stdout);
	uint64_t x = 88172645463325252ull;
	struct timespec pause = { 0, 2 * 1000 * 1000 };
	for (long r = 0; r < rounds; r++) {
		for (int k = 0; k < 256; k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			m[(x % touched) * stride] += (uint8_t)(r + k);
		}
		nanosleep(&pause, NULL);
	}
	uint64_t h = mix(0, m[len - 1]);
	for (size_t i = 0; i < touched; i++)
		h = mix(h, m[i * stride]);
	printf("checksum %016llx\n", (unsigned long long)h);
	return 0;
}

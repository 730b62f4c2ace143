/* alloc.c -- Kindle's alloc/free micro-benchmark (page-table study, Table III) as a real program:
 * map TOTAL MiB of anonymous memory and write one byte per page; twice unmap the first CHUNK MiB,
 * map it again at the same address and read each of its pages; unmap everything.  Usage:
 * alloc [TOTAL_MIB [CHUNK_MIB]] (default 16 4).  Prints a checksum line only. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "common.h"

#define PAGE 4096ul

static long arg_mib(int argc, char **argv, int i, long dflt)
{
	if (argc <= i)
		return dflt;
	char *end;
	long v = strtol(argv[i], &end, 10);
	if (*end || v <= 0 || v > 4096) {
		fprintf(stderr, "usage: %s [TOTAL_MIB [CHUNK_MIB]] (1..4096, CHUNK <= TOTAL)\n", argv[0]);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	size_t total = (size_t)arg_mib(argc, argv, 1, 16) << 20, chunk = (size_t)arg_mib(argc, argv, 2, 4) << 20;
	if (chunk > total) {
		fprintf(stderr, "usage: %s [TOTAL_MIB [CHUNK_MIB]] (CHUNK <= TOTAL)\n", argv[0]);
		return 2;
	}
	volatile unsigned char *p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("alloc: mmap");
		return 1;
	}
	for (size_t off = 0; off < total; off += PAGE)
		p[off] = (unsigned char)(off / PAGE);
	for (int round = 0; round < 2; round++) {
		if (munmap((void *)p, chunk) != 0 ||
		    mmap((void *)p, chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != (void *)p) {
			perror("alloc: remap");
			return 1;
		}
		for (size_t off = 0; off < chunk; off += PAGE)
			mix(p[off]);
	}
	for (size_t off = chunk; off < total; off += PAGE)
		mix(p[off]);
	munmap((void *)p, total);
	printf("alloc: checksum %016llx\n", (unsigned long long)checksum);
	return 0;
}

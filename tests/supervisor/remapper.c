/* remapper -- mappings replaced in place between two checkpoints, for the check that a saved
 * mapping is still the one that was tracked: three mappings side by side (rw-, rwx, rw-: they do
 * not merge) are written; then each round one of them, in turn, is unmapped and mapped again at
 * the same address with the same size (MAP_FIXED: fresh zero pages the tracker never saw) and
 * written anew, and a sleep lets a checkpoint land.  Prints a checksum of the three.
 * usage: remapper ROUNDS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#define PAGE 4096
#define PAGES 16 /* per mapping */

static const int prot[3] = { PROT_READ | PROT_WRITE, PROT_READ | PROT_WRITE | PROT_EXEC, PROT_READ | PROT_WRITE };

static void fill(uint8_t *m, int round, int k)
{
	for (int p = 0; p < PAGES; p++)
		for (int i = 0; i < PAGE; i += 512)
			m[p * PAGE + i] = (uint8_t)(round * 31 + k * 7 + p + i / 512 + 1);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 30;
	uint8_t *base = mmap(NULL, 3 * PAGES * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED)
		return perror("remapper: mmap"), 2;
	uint8_t *m[3];
	for (int k = 0; k < 3; k++) {
		m[k] = mmap(base + k * PAGES * PAGE, PAGES * PAGE, prot[k], MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		if (m[k] == MAP_FAILED)
			return perror("remapper: mmap"), 2;
		fill(m[k], 0, k);
	}
	struct timespec pause = { 0, 3 * 1000 * 1000 };
	for (int r = 1; r <= rounds; r++) {
		int k = r % 3;
		if (munmap(m[k], PAGES * PAGE) != 0 ||
		    mmap(m[k], PAGES * PAGE, prot[k], MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != m[k])
			return perror("remapper: remap"), 2;
		if (r % 2) /* every other round: some pages of the new mapping left as zeros */
			fill(m[k], r, k);
		else
			m[k][5 * PAGE + 9] = (uint8_t)r;
		nanosleep(&pause, NULL);
	}
	uint64_t h = 0;
	for (int k = 0; k < 3; k++)
		for (int i = 0; i < PAGES * PAGE; i++)
			h = (h ^ m[k][i]) * 0x100000001B3ull;
	printf("remapper %d rounds: checksum %016llx\n", rounds, (unsigned long long)h);
	return 0;
}

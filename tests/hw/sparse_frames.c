/* sparse_frames -- a stack pattern whose checkpoint sizes are known by construction.
 *
 * Each round enters a frame holding PAGES pages, writes one changed 8-byte word per 4 KiB page,
 * and asks the tool for a checkpoint while the frame is live.  Per checkpoint, Prosper at 8 B
 * should copy PAGES*8 bytes (plus the few words of call overhead), Dirtybit PAGES*4096 bytes.
 * usage: sparse_frames [ROUNDS] [PAGES]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "prosper/prosper_hw.h"

#define MAX_PAGES 256

static uint64_t sink;

static void __attribute__((noinline)) round_frame(int r, int pages)
{
	volatile uint64_t frame[MAX_PAGES * 512];
	for (int i = 0; i < pages; i++)
		frame[i * 512] = (uint64_t)r * 1000003u + (uint64_t)i + 1;
	PROSPER_HW_DO_CHECKPOINT();
	sink += frame[0] + frame[(pages - 1) * 512];
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 10;
	int pages = argc > 2 ? atoi(argv[2]) : 64;
	if (pages < 1 || pages > MAX_PAGES || rounds < 1) {
		fprintf(stderr, "usage: sparse_frames [ROUNDS>0] [PAGES 1..%d]\n", MAX_PAGES);
		return 2;
	}
	PROSPER_HW_DO_CHECKPOINT(); /* the first, full checkpoint */
	for (int r = 0; r < rounds; r++)
		round_frame(r, pages);
	printf("checksum %llu\n", (unsigned long long)sink);
	return 0;
}

/* inspect.c -- SP-aware bitmap inspection (see include/prosper/stackckpt.h).  No libc. */
#include "prosper/stackckpt.h"

void prosper_stack_inspect(uint64_t *bitmap, uint64_t nwords, uint64_t base, uint64_t len, uint32_t log_gran,
			   uint64_t active_lo, uint64_t track_min, prosper_stack_emit_fn emit, void *ctx,
			   struct prosper_stack_inspect_stats *st)
{
	struct prosper_stack_inspect_stats local = { 0 };
	if (!st)
		st = &local;
	if (active_lo < base)
		active_lo = base;
	if (active_lo > base + len)
		active_lo = base + len;
	uint64_t lo_off = active_lo - base;
	uint64_t first_bit = lo_off >> log_gran;
	uint64_t first_word = first_bit >> 6;
	uint64_t g = 1ull << log_gran;

	/* Dead frames: words from track_min's word up to active_lo's word are cleared, not copied. */
	if (track_min >= base && track_min < active_lo) {
		for (uint64_t w = ((track_min - base) >> log_gran) >> 6; w < first_word && w < nwords; w++) {
			if (bitmap[w]) {
				bitmap[w] = 0;
				st->words_zeroed++;
			}
		}
	}

	uint64_t run_start = 0;
	int in_run = 0;
	for (uint64_t w = first_word; w < nwords; w++) {
		uint64_t bits = bitmap[w];
		st->words_scanned++;
		if (w == first_word && (first_bit & 63))
			bits &= ~0ull << (first_bit & 63); /* granules wholly below active_lo's granule */
		bitmap[w] = 0;
		if (!in_run && !bits)
			continue;
		if (in_run && bits == ~0ull) {
			st->granules += 64;
			continue;
		}
		for (uint32_t b = 0; b < 64; b++) {
			int set = (bits >> b) & 1;
			uint64_t gi = w * 64 + b;
			if (set) {
				st->granules++;
				if (!in_run) {
					in_run = 1;
					run_start = gi;
				}
			} else if (in_run) {
				in_run = 0;
				uint64_t from = run_start * g < lo_off ? lo_off : run_start * g;
				uint64_t to = gi * g > len ? len : gi * g;
				if (to > from) {
					emit(ctx, from, to - from);
					st->runs++;
					st->bytes += to - from;
				}
			}
		}
	}
	if (in_run) {
		uint64_t from = run_start * g < lo_off ? lo_off : run_start * g;
		uint64_t to = nwords * 64 * g > len ? len : nwords * 64 * g;
		if (to > from) {
			emit(ctx, from, to - from);
			st->runs++;
			st->bytes += to - from;
		}
	}
}

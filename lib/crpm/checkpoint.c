/* checkpoint.c -- one checkpoint of a container: tell the pool which blocks changed, commit.
 *
 * Called with c->lock held and every writer of the container stopped (the collective
 * crpm_checkpoint).  For each segment written in the epoch:
 *   SEG_HOOKED   the dirty bits name every written block (track.c, T2);
 *   SEG_FAULTED  the blocks are found by comparing the segment with its committed copy
 *                (default mode: the backup bound by the copy-on-write; buffered: the copy the
 *                committed epoch reads), which also drops silent stores.
 * Default mode hands the blocks to prosper_pool_direct_dirty (the commit flushes them from the
 * main slots); buffered mode writes them with prosper_pool_write into the copy the committed
 * epoch does not read.  prosper_pool_commit then makes them one epoch, failure-atomically.
 * Afterwards every segment is SEG_CLEAN and write-protected again.  In default mode the
 * segments written are remembered for crpm_prepare_ahead.
 */
#include <string.h>
#include "prosper/internal/crpm_internal.h"
#include "prosper/track.h"

#ifdef PROSPER_TESTABLE
int crpm_mutation; /* enum crpm_mutation: CRPM_MUT_NONE outside mutation runs */
#endif

/* save_run -- blocks [off, off + len) of the region belong to the new epoch. */
static int save_run(struct crpm_container *c, uint64_t off, uint64_t len)
{
	if (CRPM_MUTANT(CRPM_MUT_BLOCKS_UNSAVED))
		return 0;
	int rc = c->mode == CRPM_MODE_DEFAULT ? prosper_pool_direct_dirty(c->pool, c->region, off, len)
					      : prosper_pool_write(c->pool, c->region, off, c->base + off, len);
	if (rc)
		return crpm_fail(rc, "checkpoint: %s", prosper_pool_errormsg());
	c->ckpt_bytes += len;
	return 0;
}

static int save_hooked(struct crpm_container *c, uint32_t k)
{
	uint64_t bps = c->seg_size >> c->block_shift, first = (uint64_t)k * bps;
	uint64_t run_from = 0, run_len = 0;
	for (uint64_t w = first / 64; w < (first + bps) / 64; w++) {
		uint64_t bits = c->dirty[w];
		if (!bits)
			continue;
		c->dirty[w] = 0;
		while (bits) {
			uint64_t b = w * 64 + (uint64_t)__builtin_ctzll(bits);
			bits &= bits - 1;
			uint64_t off = b << c->block_shift;
			if (run_len && run_from + run_len == off) {
				run_len += c->block_size;
				continue;
			}
			int rc = run_len ? save_run(c, run_from, run_len) : 0;
			if (rc)
				return rc;
			run_from = off;
			run_len = c->block_size;
		}
	}
	return run_len ? save_run(c, run_from, run_len) : 0;
}

struct save_changed_ctx {
	struct crpm_container *c;
	uint64_t seg_off;
	int rc; /* the first failed save; later runs are not saved */
};

static void save_changed(void *ctx, uint64_t off, uint64_t len)
{
	struct save_changed_ctx *s = ctx;
	if (!s->rc)
		s->rc = save_run(s->c, s->seg_off + off, len);
}

/* save_compared -- a segment that faulted: its blocks that differ from the committed copy, in
 * runs (the same compare-and-merge as the supervisor's diff tracker, prosper_track_diff). */
static int save_compared(struct crpm_container *c, uint32_t k)
{
	uint64_t seg_off = (uint64_t)k * c->seg_size;
	int rc = prosper_pool_region_read(c->pool, c->region, seg_off, c->scratch, c->seg_size);
	if (rc)
		return crpm_fail(rc, "checkpoint: %s", prosper_pool_errormsg());
	struct save_changed_ctx s = { c, seg_off, 0 };
	prosper_track_diff(c->scratch, c->base + seg_off, c->seg_size, c->block_size, save_changed, &s);
	if (s.rc)
		return s.rc;
	/* Bits an annotation or the library set are covered by the comparison. */
	uint64_t bps = c->seg_size >> c->block_shift;
	memset(&c->dirty[(uint64_t)k * bps / 64], 0, bps / 8);
	return 0;
}

int crpm_commit(struct crpm_container *c)
{
	if (c->tracking == CRPM_TRACK_PAGES) {
		int rc = crpm_pages_save(c, save_run);
		if (!rc && (rc = prosper_pool_commit(c->pool, NULL, 0)) != 0)
			rc = crpm_fail(rc, "checkpoint commit failed: %s", prosper_pool_errormsg());
		c->checkpoints += !rc;
		return rc;
	}
	uint32_t nsegs = (uint32_t)(c->length / c->seg_size);
	c->nahead = 0;
	for (uint32_t k = 0; k < nsegs; k++) {
		uint8_t st = c->seg_state[k];
		int rc = 0;
		if (st != SEG_CLEAN && c->mode == CRPM_MODE_DEFAULT && c->nahead < CRPM_AHEAD_MAX)
			c->ahead[c->nahead++] = k;
		if (st == SEG_HOOKED)
			rc = save_hooked(c, k);
		else if (st == SEG_FAULTED)
			rc = save_compared(c, k);
		if (rc)
			return rc;
	}
	int rc = prosper_pool_commit(c->pool, NULL, 0);
	if (rc)
		return crpm_fail(rc, "checkpoint commit failed: %s", prosper_pool_errormsg());
	memset(c->seg_state, SEG_CLEAN, c->nsegs_max);
	c->checkpoints++;
	return crpm_protect_all(c);
}

int crpm_prepare_ahead(struct crpm_container *c)
{
	int rc = c->nahead ? prosper_pool_direct_prepare_ahead(c->pool, c->region, c->ahead, c->nahead) : 0;
	c->nahead = 0;
	return rc ? crpm_fail(rc, "copy-on-write ahead: %s", prosper_pool_errormsg()) : 0;
}

/* direct.c -- default-mode primitives (libcrpm §3): the working copy lives in the pool.
 *
 * Before the first write to a segment in an epoch, prosper_pool_direct_prepare():
 *   1. binds a backup slot (a free one, else one stolen from a segment that is not being
 *      modified in this epoch), persisting the binding;
 *   2. copies into it the blocks where it differs from the main slot, persists them;
 *   3. marks the segment BACK in the COMMITTED state array, in place, persists.
 * From 3 on, recovery of the committed epoch restores main from the backup; before 3, the
 * main slot is still unmodified and the committed MAIN is right.  A changed entry in place is
 * safe because backup and main hold the same bytes at that moment.
 *
 * prosper_pool_direct_prepare_ahead() does 2 and 3 for many segments at once, right after a
 * commit (libcrpm's batched copy-on-write at checkpoint): all copies, one drain, all states,
 * one drain -- two fences instead of two per segment.  Only segments that already have a
 * backup (those written in the epoch just committed), and only in pools without a backup
 * limit: a segment prepared ahead cannot lend its backup to a steal.
 *
 * Stealing (the libcrpm defect docs/crpm.md describes): the victim must read MAIN in the
 * committed array before its backup is rebound.  Here that holds by construction: a segment
 * not prepared in this epoch reads MAIN (recovery turns every BACK into MAIN, a commit writes
 * MAIN for every prepared segment, and the inactive array is rewritten for every live
 * segment at each commit, so no stale BACK can become current).  The crash simulator
 * exercises steals at every persist point.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "pool_internal.h"

static struct region *direct_region(struct prosper_pool *p, uint32_t id)
{
	struct region *r = region_by_id(p, id);
	if (!r) {
		pool_err(-ENOENT, "no region with id %u", id);
		return NULL;
	}
	if (r->info.mode != PROSPER_REGION_DIRECT) {
		pool_err(-EINVAL, "region %s is not a direct region", r->info.name);
		return NULL;
	}
	return r;
}

/* direct_seg -- segment seg of direct region id, or NULL with the error set (-EINVAL for a
 * region that is missing or not direct, -ERANGE for a segment beyond it). */
static struct seg *direct_seg(struct prosper_pool *p, uint32_t id, uint32_t seg, int *rc)
{
	struct region *r = direct_region(p, id);
	if (!r) {
		*rc = -EINVAL;
		return NULL;
	}
	if (seg >= r->nsegs) {
		*rc = pool_err(-ERANGE, "segment %u beyond region %s", seg, r->info.name);
		return NULL;
	}
	return &r->segs[seg];
}

void *prosper_pool_direct_addr(prosper_pool *p, uint32_t id, uint32_t seg, uint64_t *len)
{
	struct region *r = direct_region(p, id);
	if (!r || seg >= r->nsegs)
		return NULL;
	uint64_t start = (uint64_t)seg * p->sb.seg_size;
	if (len)
		*len = r->info.length - start < p->sb.seg_size ? r->info.length - start : p->sb.seg_size;
	return slot_addr(p, r->segs[seg].main_slot);
}

int64_t prosper_pool_direct_offset(prosper_pool *p, uint32_t id, uint32_t seg)
{
	int rc;
	struct seg *s = direct_seg(p, id, seg, &rc);
	return s ? (int64_t)(slot_addr(p, s->main_slot) - p->base) : rc;
}

/* steal_backup -- take the backup of a direct segment that is not prepared in this epoch. */
static int steal_backup(struct prosper_pool *p, uint32_t *slot)
{
	for (uint32_t i = 0; i < p->nregions; i++) {
		struct region *r = &p->regions[i];
		if (r->removed || r->info.mode != PROSPER_REGION_DIRECT)
			continue;
		for (uint32_t k = 0; k < r->nsegs; k++) {
			struct seg *v = &r->segs[k];
			if (v->touched || v->back_slot == POOL_SLOT_NONE || v->state != ST_MAIN)
				continue;
			*slot = v->back_slot;
			p->bound_to[v->back_slot] = POOL_SLOT_NONE;
			v->back_slot = POOL_SLOT_NONE;
			free(v->stale);
			v->stale = NULL;
			p->nbackups--;
			p->stats.steals++;
			return 0;
		}
	}
	return pool_err(-ENOSPC, "no backup segment free or stealable (more segments modified in one epoch than backups)");
}

static int bind_backup(struct prosper_pool *p, struct seg *s)
{
	uint32_t b;
	int rc = -ENOSPC;
	if (!p->sb.max_backups || p->nbackups < p->sb.max_backups) {
		rc = slot_alloc(p, &b);
		if (!rc)
			p->slot_use[b] = SLOT_FREE; /* backups are tracked by bound_to, not slot_use */
	}
	if (rc == -ENOSPC)
		rc = steal_backup(p, &b);
	if (rc)
		return rc;
	prosper_persist_store64(&p->pp, PSITE_BIND, bind_entry(p, b), bind_encode(&p->sb, b, s->main_slot));
	prosper_persist_range(&p->pp, PSITE_BIND, bind_entry(p, b), 8);
	if (p->pp.error) {
		p->broken = true;
		return pool_err(p->pp.error, "persisting a backup binding failed: %s", strerror(-p->pp.error));
	}
	p->bound_to[b] = s->main_slot;
	p->nbackups++;
	s->back_slot = b;
	free(s->stale);
	s->stale = NULL; /* a new backup differs everywhere */
	return 0;
}

/* cow_copy -- copy main -> backup where they differ, flushed (the caller drains). */
static void cow_copy(struct prosper_pool *p, struct seg *s)
{
	uint8_t *src = slot_addr(p, s->main_slot), *dst = slot_addr(p, s->back_slot);
	uint32_t nb = blocks_per_seg(p), bs = p->sb.block_size;
	for (uint32_t b = 0; b < nb; b++) {
		if (!bm_test(s->stale, b))
			continue;
		uint32_t e = b + 1;
		while (e < nb && bm_test(s->stale, e))
			e++;
		memcpy(dst + (uint64_t)b * bs, src + (uint64_t)b * bs, (uint64_t)(e - b) * bs);
		prosper_persist_flush(&p->pp, PSITE_COW_COPY, dst + (uint64_t)b * bs, (uint64_t)(e - b) * bs);
		p->stats.cow_bytes += (uint64_t)(e - b) * bs;
		b = e;
	}
}

/* cow_mark -- the segment BACK in the committed state array q, flushed (the caller drains). */
static void cow_mark(struct prosper_pool *p, int q, struct seg *s)
{
	prosper_persist_store64(&p->pp, PSITE_COW_STATE, state_entry(p, q, s->main_slot),
				state_encode(&p->sb, q, s->main_slot, ST_BACK));
	prosper_persist_flush(&p->pp, PSITE_COW_STATE, state_entry(p, q, s->main_slot), 8);
}

/* cow_done -- DRAM view: prepared in this epoch, backup equal to main. */
static int cow_done(struct prosper_pool *p, struct seg *s)
{
	if (!s->stale)
		s->stale = calloc(bitmap_words(p), 8);
	else
		memset(s->stale, 0, bitmap_words(p) * 8);
	if (!s->stale)
		return pool_err(-ENOMEM, "out of memory");
	s->state = ST_BACK;
	s->next_state = ST_MAIN;
	s->touched = true;
	return 0;
}

static int cow_failed(struct prosper_pool *p)
{
	p->broken = true;
	return pool_err(p->pp.error, "persisting a copy-on-write failed: %s", strerror(-p->pp.error));
}

int prosper_pool_direct_prepare(prosper_pool *p, uint32_t id, uint32_t seg)
{
	int rc;
	struct seg *s = direct_seg(p, id, seg, &rc);
	if (!s)
		return rc;
	if (p->broken)
		return pool_err(-EIO, "pool handle unusable after a failed commit");
	if (s->touched)
		return 0;
	int q = (int)(p->epoch & 1);
	if (s->back_slot == POOL_SLOT_NONE && (rc = bind_backup(p, s)) != 0)
		return rc;
	if (POOL_MUTANT(MUT_BIND_AFTER_STATE)) {
		cow_mark(p, q, s);
		prosper_persist_drain(&p->pp, PSITE_COW_STATE);
	}
	cow_copy(p, s);
	prosper_persist_drain(&p->pp, PSITE_COW_COPY);
	/* The segment may be marked BACK only once its backup is durable. */
	if (p->pp.error)
		return cow_failed(p);
	if (!POOL_MUTANT(MUT_STATE_NOT_BACK) && !POOL_MUTANT(MUT_BIND_AFTER_STATE)) {
		cow_mark(p, q, s);
		prosper_persist_drain(&p->pp, PSITE_COW_STATE);
	}
	if (p->pp.error)
		return cow_failed(p);
	return cow_done(p, s);
}

/* ahead_seg -- segment k of r if prepare_ahead takes it: not prepared yet, with a backup. */
static struct seg *ahead_seg(struct region *r, uint32_t k)
{
	struct seg *s = k < r->nsegs ? &r->segs[k] : NULL;
	return s && !s->touched && s->back_slot != POOL_SLOT_NONE ? s : NULL;
}

int prosper_pool_direct_prepare_ahead(prosper_pool *p, uint32_t id, const uint32_t *segs, uint32_t n)
{
	struct region *r = direct_region(p, id);
	if (!r)
		return -EINVAL;
	if (p->broken)
		return pool_err(-EIO, "pool handle unusable after a failed commit");
	if (p->sb.max_backups)
		return 0; /* a segment prepared ahead keeps its backup: none could be stolen from it */
	int q = (int)(p->epoch & 1), any = 0;
	struct seg *s;
	for (uint32_t i = 0; i < n; i++)
		if ((s = ahead_seg(r, segs[i])) != NULL) {
			cow_copy(p, s);
			any = 1;
		}
	if (!any)
		return 0;
	prosper_persist_drain(&p->pp, PSITE_COW_COPY);
	if (p->pp.error)
		return cow_failed(p);
	for (uint32_t i = 0; i < n; i++)
		if ((s = ahead_seg(r, segs[i])) != NULL)
			cow_mark(p, q, s);
	prosper_persist_drain(&p->pp, PSITE_COW_STATE);
	if (p->pp.error)
		return cow_failed(p);
	for (uint32_t i = 0; i < n; i++) {
		int rc = (s = ahead_seg(r, segs[i])) != NULL ? cow_done(p, s) : 0;
		if (rc)
			return rc;
	}
	return 0;
}

int prosper_pool_direct_dirty(prosper_pool *p, uint32_t id, uint64_t off, uint64_t len)
{
	struct region *r = direct_region(p, id);
	if (!r)
		return -EINVAL;
	if (off > r->info.length || len > r->info.length - off)
		return pool_err(-ERANGE, "range beyond region %s", r->info.name);
	while (len) {
		uint32_t k = (uint32_t)(off / p->sb.seg_size);
		uint64_t o = off % p->sb.seg_size;
		uint64_t n = p->sb.seg_size - o < len ? p->sb.seg_size - o : len;
		struct seg *s = &r->segs[k];
		if (!s->touched)
			return pool_err(-EINVAL, "segment %u of %s written without prosper_pool_direct_prepare", k, r->info.name);
		uint32_t b0 = (uint32_t)(o / p->sb.block_size), b1 = (uint32_t)((o + n - 1) / p->sb.block_size);
		for (uint32_t b = b0; b <= b1; b++)
			bm_set(s->dirty, b);
		p->stats.data_bytes += n;
		off += n;
		len -= n;
	}
	return 0;
}

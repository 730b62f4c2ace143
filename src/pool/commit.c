/* commit.c -- buffered writes and the commit of an epoch (libcrpm's protocol, docs/pool-format.md;
 * redo regions add Prosper's two-step commit, see redo.c).
 *
 * Order of a commit of epoch e+1 (committed epoch e, parity q = (e+1) & 1):
 *   1. dirty bytes were written into copies the committed epoch does not read
 *      (buffered: the non-valid copy; direct: main slots whose committed state is BACK);
 *      redo logs are sealed (tagged e+1); flush all of it, drain;
 *   2. write state array q (only entries that differ), flush, drain;
 *   3. write metadata slot q (regions with their log checksums, segments, blob), flush, drain;
 *   4. commit word A := e+1, persist;  commit word B := e+1, persist;
 *   5. apply every redo log to its image, flush, drain.
 * Steps 1-3 touch nothing recovery of epoch e reads (invariant I1); step 4's first store is
 * the atomic switch.  Any persist error before step 4 abandons the epoch; an error in step 5
 * leaves e+1 committed and its logs intact, so reopening applies them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "prosper/stackckpt.h"
#include "pool_internal.h"

static uint32_t valid_slot(const struct seg *s)
{
	switch (s->state) {
	case ST_MAIN: return s->main_slot;
	case ST_BACK: return s->back_slot;
	default: return POOL_SLOT_NONE;
	}
}

/* buffered_touch -- first write to a segment in this epoch: choose the copy we will write
 * (the one the committed epoch does not read).  Its stale blocks (s->stale, NULL = all) are
 * brought up to date lazily: a write that covers a whole stale block needs no copy, a partial
 * one copies the block first, and commit copies the stale blocks nobody wrote (catch_up). */
static int buffered_touch(struct prosper_pool *p, struct seg *s)
{
	uint32_t valid = valid_slot(s);
	uint32_t target = valid == s->main_slot ? s->back_slot : s->main_slot;
	if (POOL_MUTANT(MUT_WRITE_VALID) && valid != POOL_SLOT_NONE)
		target = valid;
	int rc = slot_reserve(p, target); /* its first write (pool_internal.h) */
	if (rc)
		return rc;
	uint8_t *dst = slot_addr(p, target);
	if (valid == POOL_SLOT_NONE) {
		/* A fresh copy starts zero-filled; a slot known to read as zeros already is (writing
		 * zeros over it would only fault in and write back pages of a hole). */
		if (!p->slot_zero[target]) {
			memset(dst, 0, p->sb.seg_size);
			prosper_persist_flush(&p->pp, PSITE_SEG_INIT, dst, p->sb.seg_size);
			p->stats.init_bytes += p->sb.seg_size;
		}
		free(s->stale);
		s->stale = calloc(bitmap_words(p), 8); /* nothing to catch up */
	} else if (!s->stale) {
		s->stale = malloc(bitmap_words(p) * 8);
		if (s->stale)
			memset(s->stale, 0xFF, bitmap_words(p) * 8);
	}
	if (!s->stale)
		return pool_err(-ENOMEM, "out of memory");
	if (POOL_MUTANT(MUT_NO_CATCHUP) || target == valid)
		memset(s->stale, 0, bitmap_words(p) * 8);
	p->slot_zero[target] = 0;
	s->next_state = target == s->main_slot ? ST_MAIN : ST_BACK;
	s->touched = true;
	return 0;
}

static uint8_t *target_of(struct prosper_pool *p, const struct seg *s)
{
	return slot_addr(p, s->next_state == ST_MAIN ? s->main_slot : s->back_slot);
}

static inline void bm_clear(uint64_t *bm, uint32_t i) { bm[i / 64] &= ~(1ull << (i % 64)); }

/* catch_up_partial -- before bytes [o, o+n) of a touched segment are written: stale blocks the
 * write covers whole need nothing; stale blocks it covers in part are copied from the valid
 * copy first.  Either way they stop being stale. */
static void catch_up_partial(struct prosper_pool *p, struct seg *s, uint64_t o, uint64_t n)
{
	uint32_t bs = p->sb.block_size;
	uint32_t b0 = (uint32_t)(o / bs), b1 = (uint32_t)((o + n - 1) / bs);
	uint8_t *dst = target_of(p, s);
	const uint8_t *src = slot_addr(p, valid_slot(s));
	for (uint32_t b = b0; b <= b1; b++) {
		if (!bm_test(s->stale, b))
			continue;
		uint64_t start = (uint64_t)b * bs;
		if (o > start || o + n < start + bs) {
			media_copy(p, dst + start, src + start, bs);
			p->stats.catchup_bytes += bs;
		}
		bm_clear(s->stale, b);
	}
}

/* catch_up_rest -- at commit: the stale blocks no write covered, copied and flushed. */
static void catch_up_rest(struct prosper_pool *p, struct seg *s)
{
	uint32_t nb = blocks_per_seg(p), bs = p->sb.block_size;
	uint8_t *dst = target_of(p, s);
	const uint8_t *src = slot_addr(p, valid_slot(s));
	for (uint32_t b = 0, e; b < nb; b = e) {
		if (!bm_test(s->stale, b)) {
			e = b + 1;
			continue;
		}
		for (e = b + 1; e < nb && bm_test(s->stale, e); e++)
			;
		media_copy(p, dst + (uint64_t)b * bs, src + (uint64_t)b * bs, (uint64_t)(e - b) * bs);
		p->stats.catchup_bytes += (uint64_t)(e - b) * bs;
	}
	flush_runs(p, PSITE_SEG_CATCHUP, dst, s->stale);
}

static void mark_blocks(struct prosper_pool *p, uint64_t *bm, uint64_t from, uint64_t len)
{
	uint32_t b0 = (uint32_t)(from / p->sb.block_size);
	uint32_t b1 = (uint32_t)((from + len - 1) / p->sb.block_size);
	for (uint32_t b = b0; b <= b1; b++)
		bm_set(bm, b);
}

int prosper_pool_write(prosper_pool *p, uint32_t id, uint64_t off, const void *src, uint64_t len)
{
	struct region *r = region_by_id(p, id);
	if (!r)
		return pool_err(-ENOENT, "no region with id %u", id);
	if (p->broken)
		return pool_err(-EIO, "pool handle unusable after a failed commit");
	if (r->info.mode != PROSPER_REGION_BUFFERED && r->info.mode != PROSPER_REGION_REDO)
		return pool_err(-EINVAL, "region %s is neither buffered nor redo", r->info.name);
	if (off > r->info.length || len > r->info.length - off)
		return pool_err(-ERANGE, "write [%llu, +%llu) beyond region %s (%llu bytes)",
				(unsigned long long)off, (unsigned long long)len, r->info.name,
				(unsigned long long)r->info.length);
	if (r->info.mode == PROSPER_REGION_REDO)
		return redo_write(p, r, off, src, len);
	const uint8_t *in = src;
	while (len) {
		uint32_t k = (uint32_t)(off / p->sb.seg_size);
		uint64_t o = off % p->sb.seg_size;
		uint64_t n = p->sb.seg_size - o < len ? p->sb.seg_size - o : len;
		struct seg *s = &r->segs[k];
		if (!s->touched) {
			int rc = buffered_touch(p, s);
			if (rc)
				return rc;
		}
		catch_up_partial(p, s, o, n);
		media_copy(p, target_of(p, s) + o, in, n);
		mark_blocks(p, s->dirty, o, n);
		p->stats.data_bytes += n;
		off += n;
		in += n;
		len -= n;
	}
	return 0;
}

/* The regions and segments of the epoch being built. */
static void count_live(const struct prosper_pool *p, uint32_t *nregions, uint32_t *nsegs)
{
	*nregions = *nsegs = 0;
	for (uint32_t i = 0; i < p->nregions; i++) {
		if (p->regions[i].removed)
			continue;
		(*nregions)++;
		*nsegs += p->regions[i].nsegs;
	}
}

static uint64_t tables_bytes(uint32_t nregions, uint32_t nsegs)
{
	return sizeof(struct pool_meta_hdr) + (uint64_t)nregions * sizeof(struct pool_region_rec) +
	       (uint64_t)nsegs * sizeof(struct pool_seg_rec);
}

uint64_t prosper_pool_blob_room(const prosper_pool *p)
{
	uint32_t nregions, nsegs;
	count_live(p, &nregions, &nsegs);
	uint64_t t = tables_bytes(nregions, nsegs);
	return t < p->sb.meta_bytes ? p->sb.meta_bytes - t : 0;
}

/* build_meta -- serialize the epoch being built into metadata slot q. */
static int build_meta(struct prosper_pool *p, int q, uint64_t epoch, const void *blob, size_t blob_len)
{
	uint32_t nregions, nsegs;
	count_live(p, &nregions, &nsegs);
	uint64_t bytes = tables_bytes(nregions, nsegs) + blob_len;
	if (bytes > p->sb.meta_bytes)
		return pool_err(-ENOSPC, "epoch metadata (%llu bytes) exceeds the metadata slot (%u bytes)",
				(unsigned long long)bytes, p->sb.meta_bytes);
	uint8_t *m = meta_slot(p, q);
	struct pool_meta_hdr h = {
		.magic = POOL_META_MAGIC, .epoch = epoch, .bytes = (uint32_t)bytes, .nregions = nregions,
		.nsegs = nsegs, .blob_bytes = (uint32_t)blob_len, .next_region_id = p->next_region_id,
	};
	uint8_t *rp = m + sizeof h;
	uint8_t *sp = rp + (uint64_t)nregions * sizeof(struct pool_region_rec);
	uint32_t first = 0;
	for (uint32_t i = 0; i < p->nregions; i++) {
		struct region *r = &p->regions[i];
		if (r->removed)
			continue;
		struct pool_region_rec rec;
		memset(&rec, 0, sizeof rec);
		memcpy(rec.name, r->info.name, sizeof rec.name);
		rec.id = r->info.id;
		rec.kind = r->info.kind;
		rec.mode = r->info.mode;
		rec.prot = r->info.prot;
		rec.vaddr = r->info.vaddr;
		rec.length = r->info.length;
		rec.first_seg = first;
		rec.nsegs = r->nsegs;
		rec.log_slot = POOL_SLOT_NONE;
		if (r->info.mode == PROSPER_REGION_REDO) {
			rec.log_slot = r->log_slot;
			rec.log_slots = r->log_slots;
			rec.log_crc = r->log_crc;
		}
		memcpy(rp, &rec, sizeof rec);
		rp += sizeof rec;
		for (uint32_t k = 0; k < r->nsegs; k++) {
			struct pool_seg_rec sr = {
				.main_slot = r->segs[k].main_slot,
				.back_slot = r->info.mode == PROSPER_REGION_BUFFERED ? r->segs[k].back_slot : POOL_SLOT_NONE,
			};
			memcpy(sp, &sr, sizeof sr);
			sp += sizeof sr;
		}
		first += r->nsegs;
	}
	if (blob_len)
		memcpy(sp, blob, blob_len);
	memcpy(m, &h, sizeof h);
	h.crc = meta_crc(&p->sb, m, (uint32_t)bytes);
	memcpy(m, &h, sizeof h);
	prosper_persist_flush(&p->pp, PSITE_META, m, bytes);
	return 0;
}

static void write_commit_words(struct prosper_pool *p, uint64_t epoch)
{
	uint64_t w = commit_word_encode(&p->sb, epoch);
	prosper_persist_store64(&p->pp, PSITE_COMMIT_A, commit_word(p, 0), w);
	prosper_persist_range(&p->pp, PSITE_COMMIT_A, commit_word(p, 0), 8);
	if (p->pp.error)
		return; /* B may only follow a durable A */
	prosper_persist_store64(&p->pp, PSITE_COMMIT_B, commit_word(p, 1), w);
	prosper_persist_range(&p->pp, PSITE_COMMIT_B, commit_word(p, 1), 8);
}

static int failed(struct prosper_pool *p, int rc)
{
	p->broken = true;
	return rc;
}

int prosper_pool_commit(prosper_pool *p, const void *blob, size_t blob_len)
{
	if (p->broken)
		return pool_err(-EIO, "pool handle unusable after a failed commit");
	if (p->epoch >= POOL_EPOCH_MAX)
		return pool_err(-EOVERFLOW, "epoch counter exhausted");
	uint64_t next = p->epoch + 1;
	int q = (int)(next & 1);

	if (POOL_MUTANT(MUT_COMMIT_FIRST))
		write_commit_words(p, next);

	/* 1. data, and the redo logs sealed (step 1 of the two-step commit) */
	FOR_EACH_SEG(p, r, s) {
		if (!s->touched || r->info.mode == PROSPER_REGION_REDO)
			continue; /* a new redo segment was zeroed and flushed when it was added */
		if (r->info.mode == PROSPER_REGION_BUFFERED) {
			catch_up_rest(p, s);
			flush_runs(p, PSITE_DATA, target_of(p, s), s->dirty);
		} else {
			flush_runs(p, PSITE_DIRECT_DATA, slot_addr(p, s->main_slot), s->dirty);
		}
	}
	FOR_EACH_REDO(p, r) {
		redo_seal(p, r);
		if (!POOL_MUTANT(MUT_REDO_LOG_LATE))
			prosper_persist_flush(&p->pp, PSITE_REDO_LOG, redo_log(p, r), prosper_stacklog_bytes(redo_log(p, r)));
	}
	prosper_persist_drain(&p->pp, PSITE_DATA);
	if (p->pp.error)
		return failed(p, pool_err(p->pp.error, "persisting checkpoint data failed: %s", strerror(-p->pp.error)));
	if (POOL_MUTANT(MUT_REDO_APPLY_EARLY)) {
		FOR_EACH_REDO(p, r) {
			(void)redo_apply_copy(p, r); /* a mutant: its space was reserved at the append */
			redo_apply_flush(p, r, PSITE_REDO_APPLY);
		}
		prosper_persist_drain(&p->pp, PSITE_REDO_APPLY);
	}

	/* 2. state array q */
	FOR_EACH_SEG(p, r, s) {
		uint64_t want = state_encode(&p->sb, q, s->main_slot, s->next_state);
		uint64_t *e = state_entry(p, q, s->main_slot);
		if (*e != want) {
			prosper_persist_store64(&p->pp, PSITE_STATE, e, want);
			prosper_persist_flush(&p->pp, PSITE_STATE, e, 8);
		}
	}
	prosper_persist_drain(&p->pp, PSITE_STATE);

	/* 3. metadata slot q */
	int rc = build_meta(p, q, next, blob, blob_len);
	if (rc)
		return failed(p, rc);
	prosper_persist_drain(&p->pp, PSITE_META);
	if (p->pp.error)
		return failed(p, pool_err(p->pp.error, "persisting checkpoint metadata failed: %s", strerror(-p->pp.error)));

	/* 4. the switch */
	if (!POOL_MUTANT(MUT_COMMIT_FIRST))
		write_commit_words(p, next);
	if (p->pp.error)
		return failed(p, pool_err(p->pp.error, "persisting the commit word failed: %s", strerror(-p->pp.error)));

	/* 5. step 2 of the two-step commit: the committed logs applied to the images. */
	FOR_EACH_REDO(p, r) {
		uint8_t *log = redo_log(p, r);
		if (POOL_MUTANT(MUT_REDO_LOG_LATE))
			prosper_persist_range(&p->pp, PSITE_REDO_LOG, log, prosper_stacklog_bytes(log));
		int rc = redo_apply_copy(p, r); /* its space was reserved at the append: cannot fail here */
		if (rc && !p->pp.error)
			p->pp.error = rc;
		if (POOL_MUTANT(MUT_REDO_NEXT_LOG_EARLY)) {
			prosper_stacklog_init(log, redo_log_cap(p, r), next + 1);
			prosper_persist_range(&p->pp, PSITE_REDO_LOG, log, PROSPER_STACKLOG_HEADER);
		}
		redo_apply_flush(p, r, PSITE_REDO_APPLY);
	}
	prosper_persist_drain(&p->pp, PSITE_REDO_APPLY);
	if (p->pp.error)
		return failed(p, pool_err(p->pp.error, "epoch %llu is committed but applying its redo logs failed: %s "
					  "(reopening applies them)", (unsigned long long)next, strerror(-p->pp.error)));

	/* The new epoch is durable: move the in-DRAM view forward. */
	p->epoch = next;
	uint32_t w = 0;
	for (uint32_t i = 0; i < p->nregions; i++) {
		struct region *r = &p->regions[i];
		if (r->removed) {
			free(r->segs);
			continue;
		}
		bool log_written = r->log_begun;
		r->log_begun = POOL_MUTANT(MUT_REDO_NEXT_LOG_EARLY) && r->info.mode == PROSPER_REGION_REDO;
		for (uint32_t k = 0; k < r->nsegs; k++) {
			struct seg *s = &r->segs[k];
			if (s->touched || log_written)
				s->written_epoch = next;
			if (s->touched && (s->state == ST_MAIN || s->state == ST_BACK)) {
				/* The copy that stopped being valid lacks exactly this epoch's blocks. */
				if (!s->stale)
					s->stale = calloc(bitmap_words(p), 8);
				if (s->stale)
					memcpy(s->stale, s->dirty, bitmap_words(p) * 8);
			} else if (s->touched) {
				/* First data of the segment: the other copy was never written. */
				free(s->stale);
				s->stale = NULL;
			}
			if (s->touched) {
				memset(s->dirty, 0, bitmap_words(p) * 8);
				s->touched = false;
			}
			s->state = s->next_state;
		}
		p->regions[w++] = *r;
	}
	p->nregions = w;
	slots_after_commit(p);
	void *nb = blob_len ? malloc(blob_len) : NULL;
	if (blob_len && nb)
		memcpy(nb, blob, blob_len);
	free(p->blob);
	p->blob = nb;
	p->blob_len = nb ? blob_len : 0;
	p->stats.commits++;
	return 0;
}

/* The slot holding the committed bytes of segment s, or POOL_SLOT_NONE (never written: zeros). */
static uint32_t committed_slot(const struct prosper_pool *p, const struct region *r, const struct seg *s)
{
	(void)p;
	if (r->info.mode == PROSPER_REGION_BUFFERED)
		return valid_slot(s);
	if (r->info.mode == PROSPER_REGION_REDO)
		return s->state != ST_NONE ? s->main_slot : POOL_SLOT_NONE; /* applied at each commit */
	if (s->state == ST_BACK || (s->touched && s->state != ST_NONE))
		return s->back_slot; /* the working copy is ahead of the committed one */
	return s->state != ST_NONE ? s->main_slot : POOL_SLOT_NONE;
}

int prosper_pool_region_view(prosper_pool *p, uint32_t id, uint64_t off, uint64_t len, const void **ptr, uint64_t *n)
{
	struct region *r = region_by_id(p, id);
	if (!r)
		return pool_err(-ENOENT, "no region with id %u", id);
	if (!len || off > r->info.length || len > r->info.length - off)
		return pool_err(-ERANGE, "read beyond region %s", r->info.name);
	uint64_t o = off % p->sb.seg_size;
	*n = p->sb.seg_size - o < len ? p->sb.seg_size - o : len;
	uint32_t from = committed_slot(p, r, &r->segs[off / p->sb.seg_size]);
	*ptr = from == POOL_SLOT_NONE ? NULL : slot_addr(p, from) + o;
	return 0;
}

int prosper_pool_region_read(prosper_pool *p, uint32_t id, uint64_t off, void *dst, uint64_t len)
{
	uint8_t *out = dst;
	while (len) {
		const void *src;
		uint64_t n;
		int rc = prosper_pool_region_view(p, id, off, len, &src, &n);
		if (rc)
			return rc;
		if (src)
			memcpy(out, src, n);
		else
			memset(out, 0, n);
		off += n;
		out += n;
		len -= n;
	}
	return 0;
}

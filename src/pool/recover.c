/* recover.c -- open = validate everything, then repair to the committed epoch.
 *
 * Validation happens before any write: a pool that fails it is refused (invariant I4).
 * Repairs, each idempotent (invariant I2):
 *   - direct segments marked BACK: copy backup -> main, persist, mark MAIN in place, persist;
 *   - redo regions whose log area holds the committed epoch's sealed log (its tag and the
 *     checksum the metadata names): apply it to the image again, persist (redo.c);
 *   - a lagging or corrupt commit word: rewrite it to the committed epoch, persist.
 * Afterwards every segment's other copy / backup is treated as wholly stale (the record of
 * which blocks differ lived in DRAM), so the next checkpoint of a segment copies it whole.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "pool_internal.h"

int pool_load(struct prosper_pool *p)
{
	if (p->size < sizeof p->sb)
		return pool_err(-EBADMSG, "file too small to be a pool");
	memcpy(&p->sb, p->base, sizeof p->sb);
	int rc = sb_validate(&p->sb, p->size);
	if (rc)
		return rc;
	uint64_t epoch;
	int valid_words;
	rc = find_committed(&p->sb, p->base, &epoch, &valid_words);
	if (rc)
		return rc;
	p->epoch = epoch;
	int q = (int)(epoch & 1);
	if ((rc = pool_alloc_tables(p)) != 0)
		return rc;

	struct pool_meta_hdr h;
	const uint8_t *m = meta_slot(p, q);
	memcpy(&h, m, sizeof h);
	p->next_region_id = h.next_region_id;
	const struct pool_region_rec *rr = (const void *)(m + sizeof h);
	const struct pool_seg_rec *sr = (const void *)(rr + h.nregions);

	p->regions = calloc(h.nregions ? h.nregions : 1, sizeof *p->regions);
	if (!p->regions)
		return pool_err(-ENOMEM, "out of memory");
	p->cap_regions = h.nregions ? h.nregions : 1;
	for (uint32_t i = 0; i < h.nregions; i++) {
		struct pool_region_rec rec;
		memcpy(&rec, &rr[i], sizeof rec);
		struct region *r = &p->regions[p->nregions++];
		memset(r, 0, sizeof *r);
		memcpy(r->info.name, rec.name, sizeof r->info.name);
		r->info.id = rec.id;
		r->info.kind = rec.kind;
		r->info.mode = rec.mode;
		r->info.prot = rec.prot;
		r->info.vaddr = rec.vaddr;
		r->info.length = rec.length;
		r->log_slot = rec.log_slot;
		r->log_slots = rec.log_slots;
		r->log_crc = rec.log_crc;
		for (uint32_t i = 0; rec.mode == PROSPER_REGION_REDO && i < rec.log_slots; i++) {
			if (p->slot_use[rec.log_slot + i] != SLOT_FREE)
				return pool_err(-EBADMSG, "metadata of epoch %llu: a slot is used twice",
						(unsigned long long)epoch);
			p->slot_use[rec.log_slot + i] = SLOT_USED;
		}
		r->segs = calloc(rec.nsegs ? rec.nsegs : 1, sizeof *r->segs);
		if (!r->segs)
			return pool_err(-ENOMEM, "out of memory");
		for (uint32_t k = 0; k < rec.nsegs; k++) {
			struct pool_seg_rec s;
			memcpy(&s, &sr[rec.first_seg + k], sizeof s);
			struct seg *g = &r->segs[k];
			r->nsegs = k + 1;
			g->main_slot = s.main_slot;
			g->back_slot = s.back_slot;
			if ((rc = seg_bitmaps_alloc(p, g)) != 0)
				return rc;
			if (p->slot_use[s.main_slot] != SLOT_FREE ||
			    (s.back_slot != POOL_SLOT_NONE && p->slot_use[s.back_slot] != SLOT_FREE))
				return pool_err(-EBADMSG, "metadata of epoch %llu: a slot is used twice",
						(unsigned long long)epoch);
			p->slot_use[s.main_slot] = SLOT_USED;
			if (s.back_slot != POOL_SLOT_NONE)
				p->slot_use[s.back_slot] = SLOT_USED;
			if (state_decode(&p->sb, q, s.main_slot, *state_entry(p, q, s.main_slot), &g->state))
				return pool_err(-EBADMSG, "segment state of slot %u is corrupt", s.main_slot);
			if (rec.mode != PROSPER_REGION_BUFFERED && g->state == ST_INIT)
				return pool_err(-EBADMSG, "%s segment in slot %u has no data state",
						rec.mode == PROSPER_REGION_DIRECT ? "direct" : "redo", s.main_slot);
			if (rec.mode == PROSPER_REGION_REDO && g->state != ST_MAIN)
				return pool_err(-EBADMSG, "redo segment in slot %u is not MAIN", s.main_slot);
			g->next_state = g->state;
		}
	}

	/* Backup bindings that belong to live direct segments of this epoch. */
	for (uint32_t b = 0; b < p->sb.nslots; b++) {
		uint32_t mslot;
		if (bind_decode(&p->sb, b, *bind_entry(p, b), &mslot))
			return pool_err(-EBADMSG, "backup binding of slot %u is corrupt", b);
		if (mslot == POOL_SLOT_NONE || p->slot_use[b] != SLOT_FREE)
			continue; /* unbound, or a binding left on a slot that was reused since */
		FOR_EACH_SEG(p, r, g) {
			if (r->info.mode != PROSPER_REGION_DIRECT || g->main_slot != mslot)
				continue;
			if (g->back_slot != POOL_SLOT_NONE)
				return pool_err(-EBADMSG, "two backups bound to slot %u", mslot);
			g->back_slot = b;
			p->bound_to[b] = mslot;
			p->nbackups++;
		}
	}

	/* Repair: direct segments whose committed copy is the backup. */
	FOR_EACH_SEG(p, r, g) {
		if (r->info.mode != PROSPER_REGION_DIRECT || g->state != ST_BACK)
			continue;
		if (g->back_slot == POOL_SLOT_NONE)
			return pool_err(-EBADMSG, "segment in slot %u is BACK but has no backup", g->main_slot);
		memcpy(slot_addr(p, g->main_slot), slot_addr(p, g->back_slot), p->sb.seg_size);
		prosper_persist_range(&p->pp, PSITE_RECOVER_COPY, slot_addr(p, g->main_slot), p->sb.seg_size);
		prosper_persist_store64(&p->pp, PSITE_RECOVER_STATE, state_entry(p, q, g->main_slot),
					state_encode(&p->sb, q, g->main_slot, ST_MAIN));
		prosper_persist_range(&p->pp, PSITE_RECOVER_STATE, state_entry(p, q, g->main_slot), 8);
		g->state = g->next_state = ST_MAIN;
		g->stale = calloc(bitmap_words(p), 8); /* main == backup now */
		if (!g->stale)
			return pool_err(-ENOMEM, "out of memory");
		p->stats.recovered_segments++;
	}

	/* Repair: step 2 of the committed epoch's redo logs, again (it may not have finished). */
	FOR_EACH_REDO(p, r) {
		int c = redo_log_is_committed(p, r);
		if (c < 0)
			return pool_err(-EBADMSG, "redo log of region %s holds epoch %llu but not the log its metadata names",
					r->info.name, (unsigned long long)epoch);
		if (c == 0 || POOL_MUTANT(MUT_REDO_NO_REAPPLY))
			continue;
		int rc = redo_apply_copy(p, r);
		if (rc)
			return rc;
		redo_apply_flush(p, r, PSITE_RECOVER_REDO);
		p->stats.redo_replays++;
	}
	prosper_persist_drain(&p->pp, PSITE_RECOVER_REDO);

	/* Repair the commit words so both name the committed epoch. */
	uint64_t want = commit_word_encode(&p->sb, epoch);
	for (int i = 0; i < 2; i++) {
		if (*commit_word(p, i) == want)
			continue;
		prosper_persist_store64(&p->pp, PSITE_RECOVER_COMMIT, commit_word(p, i), want);
		prosper_persist_range(&p->pp, PSITE_RECOVER_COMMIT, commit_word(p, i), 8);
	}
	if (p->pp.error)
		return pool_err(p->pp.error, "recovery could not persist its repairs: %s", strerror(-p->pp.error));

	if (h.blob_bytes) {
		p->blob = malloc(h.blob_bytes);
		if (!p->blob)
			return pool_err(-ENOMEM, "out of memory");
		memcpy(p->blob, m + h.bytes - h.blob_bytes, h.blob_bytes);
		p->blob_len = h.blob_bytes;
	}
	return 0;
}

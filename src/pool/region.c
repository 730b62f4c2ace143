/* region.c -- the regions of the epoch being built: add, resize and remove (staged changes).
 *
 * A change takes effect at the next commit (commit.c); until then the committed epoch's slots and
 * logs stay as they are (a released slot is reused only after the commit, slots.c).  Bytes a
 * region gains read as zero, each mode making them so its own way (commit.c, direct.c, redo.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "pool_internal.h"

/* region_set_segments -- as many segments as length needs: the ones beyond are released, new
 * ones read as zero. */
static int region_set_segments(struct prosper_pool *p, struct region *r, uint64_t length)
{
	uint32_t want = (uint32_t)((length + p->sb.seg_size - 1) / p->sb.seg_size);
	if (want < r->nsegs) {
		for (uint32_t k = want; k < r->nsegs; k++) {
			slot_release(p, r->segs[k].main_slot);
			slot_release(p, r->segs[k].back_slot);
			if (r->segs[k].back_slot != POOL_SLOT_NONE && r->info.mode == PROSPER_REGION_DIRECT) {
				p->bound_to[r->segs[k].back_slot] = POOL_SLOT_NONE;
				p->nbackups--;
			}
		}
		region_free_segs(r, want);
		r->nsegs = want;
		return 0;
	}
	if (want > r->nsegs) {
		struct seg *ns = realloc(r->segs, want * sizeof *ns);
		if (!ns)
			return pool_err(-ENOMEM, "out of memory");
		r->segs = ns;
		for (uint32_t k = r->nsegs; k < want; k++) {
			struct seg *s = &ns[k];
			memset(s, 0, sizeof *s);
			s->back_slot = POOL_SLOT_NONE;
			s->written_epoch = p->epoch + 1;
			/* reserved at first write; a redo region's at the append that will write it (redo.c) */
			int buffered = r->info.mode == PROSPER_REGION_BUFFERED;
			int rc = slot_alloc_as(p, &s->main_slot, !buffered && r->info.mode != PROSPER_REGION_REDO);
			if (!rc && buffered)
				rc = slot_alloc_as(p, &s->back_slot, 0);
			if (!rc)
				rc = seg_bitmaps_alloc(p, s);
			if (rc) {
				slot_release(p, s->main_slot);
				slot_release(p, s->back_slot);
				free(s->dirty);
				s->dirty = NULL;
				r->nsegs = k;
				return rc;
			}
			r->nsegs = k + 1;
			/* New data reads as zero: INIT for buffered (no copy valid yet); a direct
			 * segment's main slot is zeroed now and is MAIN from its first commit; a redo
			 * segment is zeroed by the ZERO record its growth appends (redo.c, R4). */
			s->state = ST_NONE;
			if (r->info.mode == PROSPER_REGION_BUFFERED) {
				s->next_state = ST_INIT;
			} else if (r->info.mode == PROSPER_REGION_REDO) {
				s->next_state = ST_MAIN;
				s->touched = true;
			} else {
				memset(slot_addr(p, s->main_slot), 0, p->sb.seg_size);
				prosper_persist_flush(&p->pp, PSITE_SEG_INIT, slot_addr(p, s->main_slot), p->sb.seg_size);
				s->next_state = ST_MAIN;
				s->touched = true;
			}
		}
	}
	return 0;
}

int prosper_pool_region_add(prosper_pool *p, const char *name, uint32_t kind, uint32_t mode,
			    uint64_t vaddr, uint64_t length, uint32_t prot)
{
	if (p->broken)
		return pool_err(-EIO, "pool handle unusable after a failed commit");
	if (mode != PROSPER_REGION_BUFFERED && mode != PROSPER_REGION_DIRECT && mode != PROSPER_REGION_REDO)
		return pool_err(-EINVAL, "unknown region mode %u", mode);
	if (!name || !*name || strlen(name) >= PROSPER_REGION_NAME_MAX)
		return pool_err(-EINVAL, "region name must be 1..%d bytes", PROSPER_REGION_NAME_MAX - 1);
	if (region_index(p, name) >= 0)
		return pool_err(-EEXIST, "region %s exists", name);
	if (regions_live(p) >= p->sb.max_regions)
		return pool_err(-ENOSPC, "too many regions (max %u)", p->sb.max_regions);
	if (p->nregions == p->cap_regions) {
		uint32_t cap = p->cap_regions ? 2 * p->cap_regions : 8;
		struct region *nr = realloc(p->regions, cap * sizeof *nr);
		if (!nr)
			return pool_err(-ENOMEM, "out of memory");
		p->regions = nr;
		p->cap_regions = cap;
	}
	struct region *r = &p->regions[p->nregions];
	memset(r, 0, sizeof *r);
	r->info.id = p->next_region_id;
	r->info.kind = kind;
	r->info.mode = mode;
	r->info.prot = prot;
	r->info.vaddr = vaddr;
	strcpy(r->info.name, name);
	r->log_slot = POOL_SLOT_NONE;
	p->nregions++; /* owned by the pool from here on, also if a crash interrupts us */
	int rc = region_set_segments(p, r, length);
	if (!rc && mode == PROSPER_REGION_REDO)
		rc = redo_log_fit(p, r, length);
	if (!rc && mode == PROSPER_REGION_REDO)
		rc = redo_zero(p, r, 0, length);
	if (rc) {
		redo_log_release(p, r);
		region_set_segments(p, r, 0);
		free(r->segs);
		p->nregions--;
		return rc;
	}
	r->info.length = length;
	p->next_region_id++;
	return (int)r->info.id;
}

int prosper_pool_region_resize(prosper_pool *p, uint32_t id, uint64_t new_length)
{
	struct region *r = region_by_id(p, id);
	if (!r)
		return pool_err(-ENOENT, "no region with id %u", id);
	if (p->broken)
		return pool_err(-EIO, "pool handle unusable after a failed commit");
	uint64_t old = r->info.length;
	int rc = region_set_segments(p, r, new_length);
	if (!rc && r->info.mode == PROSPER_REGION_REDO)
		rc = redo_log_fit(p, r, new_length);
	if (rc) {
		region_set_segments(p, r, old); /* give back what the failed growth took */
		return rc;
	}
	if (new_length <= old) {
		r->info.length = new_length;
		return 0;
	}
	if (r->info.mode == PROSPER_REGION_REDO) {
		/* Every byte a redo region gains reads as zero: one ZERO record, applied after the
		 * commit and after any record written there before a shrink (R4). */
		rc = redo_zero(p, r, old, new_length - old);
		if (rc) {
			region_set_segments(p, r, old);
			return rc;
		}
		r->info.length = new_length;
		return 0;
	}
	/* Bytes that come back into a region after a shrink must read as zero. */
	if (new_length > old && old % p->sb.seg_size) {
		uint32_t k = (uint32_t)(old / p->sb.seg_size);
		uint64_t from = old % p->sb.seg_size;
		uint64_t to = new_length - (uint64_t)k * p->sb.seg_size;
		if (to > p->sb.seg_size)
			to = p->sb.seg_size;
		r->info.length = new_length;
		static const uint8_t zeros[4096];
		for (uint64_t o = from; o < to; o += sizeof zeros) {
			uint64_t n = to - o < sizeof zeros ? to - o : sizeof zeros;
			if (r->info.mode == PROSPER_REGION_BUFFERED)
				rc = prosper_pool_write(p, id, (uint64_t)k * p->sb.seg_size + o, zeros, n);
			else {
				rc = prosper_pool_direct_prepare(p, id, k);
				if (!rc) {
					memset(slot_addr(p, r->segs[k].main_slot) + o, 0, n);
					rc = prosper_pool_direct_dirty(p, id, (uint64_t)k * p->sb.seg_size + o, n);
				}
			}
			if (rc) {
				region_set_segments(p, r, old);
				r->info.length = old;
				return rc;
			}
		}
	}
	r->info.length = new_length;
	return 0;
}

int prosper_pool_region_remove(prosper_pool *p, uint32_t id)
{
	struct region *r = region_by_id(p, id);
	if (!r)
		return pool_err(-ENOENT, "no region with id %u", id);
	region_set_segments(p, r, 0);
	if (r->info.mode == PROSPER_REGION_REDO)
		redo_log_release(p, r);
	r->removed = true;
	return 0;
}

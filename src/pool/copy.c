/* copy.c -- one pool made to hold another's committed epoch: the durable replica of a pool
 * (docs/durability.md).
 *
 * prosper_pool_copy_stage(dst, src, since) stages, as dst's epoch being built:
 *   1. dst's regions made the same as src's committed ones, matched by id (the metadata of a
 *      supervised program names its region by id): a dst region src does not have is removed;
 *      one whose name, kind, mode, address or protection differs is removed and added again
 *      under the same id; one whose length alone differs is resized; a missing one is added;
 *   2. in every segment src changed after its epoch `since` (every segment when since is 0, and
 *      every segment dst has just added), the blocks whose committed bytes differ between src
 *      and dst are written into dst -- by the region's own mode (buffered copy, redo record,
 *      direct copy-on-write).
 * The caller commits dst with src's blob.  That commit is dst's ordinary protocol, so a crash
 * at any point leaves dst at its previous committed epoch or at the copy (invariants I1, I2).
 *
 * Invariants
 *   C1 After stage + commit, every byte of every region src's committed epoch reads is the byte
 *      dst's committed epoch reads, and the regions (id, name, kind, mode, address, protection,
 *      length) are the same.  Requires: since is 0, or dst's committed epoch is a copy of src's
 *      committed epoch `since` made through this handle of src.
 *   C2 src is only read.  Both pools have the same segment and block size.
 */
#include <errno.h>
#include <string.h>
#include "pool_internal.h"

static const uint8_t zeros[4096];

static int same_identity(const struct prosper_region_info *a, const struct prosper_region_info *b)
{
	return !strcmp(a->name, b->name) && a->kind == b->kind && a->mode == b->mode && a->vaddr == b->vaddr &&
	       a->prot == b->prot;
}

/* region_add_as -- add a region to dst under the id src gave it. */
static int region_add_as(struct prosper_pool *dst, const struct prosper_region_info *in)
{
	if (POOL_MUTANT(MUT_COPY_FRESH_IDS)) {
		int rc = prosper_pool_region_add(dst, in->name, in->kind, in->mode, in->vaddr, in->length, in->prot);
		return rc < 0 ? rc : 0;
	}
	uint32_t next = dst->next_region_id;
	dst->next_region_id = in->id;
	int rc = prosper_pool_region_add(dst, in->name, in->kind, in->mode, in->vaddr, in->length, in->prot);
	dst->next_region_id = next > in->id + 1 ? next : in->id + 1;
	return rc < 0 ? rc : 0;
}

/* write_run -- [off, off+len) of region r of dst gets bytes, by the region's mode. */
static int write_run(struct prosper_pool *dst, struct region *r, uint64_t off, const uint8_t *bytes, uint64_t len)
{
	if (r->info.mode != PROSPER_REGION_DIRECT)
		return prosper_pool_write(dst, r->info.id, off, bytes, len);
	uint32_t k = (uint32_t)(off / dst->sb.seg_size);
	int rc = prosper_pool_direct_prepare(dst, r->info.id, k);
	if (rc)
		return rc;
	uint64_t seg_len;
	uint8_t *seg = prosper_pool_direct_addr(dst, r->info.id, k, &seg_len);
	if (!seg)
		return pool_err(-EIO, "no working copy of segment %u of %s", k, r->info.name);
	memcpy(seg + off % dst->sb.seg_size, bytes, len);
	return prosper_pool_direct_dirty(dst, r->info.id, off, len);
}

/* copy_segment -- the blocks of segment k that differ, written as runs. */
static int copy_segment(struct prosper_pool *dst, struct region *dr, struct prosper_pool *src, uint32_t src_id,
			uint32_t k, struct prosper_pool_copy_stats *st)
{
	uint64_t seg = dst->sb.seg_size, bs = dst->sb.block_size;
	uint64_t from = (uint64_t)k * seg, to = from + seg < dr->info.length ? from + seg : dr->info.length;
	const void *sv, *dv;
	uint64_t sn, dn;
	int rc = prosper_pool_region_view(src, src_id, from, to - from, &sv, &sn);
	if (!rc)
		rc = prosper_pool_region_view(dst, dr->info.id, from, to - from, &dv, &dn);
	if (rc)
		return rc;
	if (sn != to - from || dn != to - from)
		return pool_err(-EINVAL, "segment %u of %s is not one view", k, dr->info.name);
	if (!sv && !dv)
		return 0; /* both never written: zeros */
	const uint8_t *s = sv, *d = dv;
	uint64_t run = 0, run_len = 0;
	for (uint64_t o = 0; o < to - from; o += bs) {
		uint64_t n = to - from - o < bs ? to - from - o : bs;
		int differs = memcmp(s ? s + o : zeros, d ? d + o : zeros, n) != 0;
		st->compared_bytes += n;
		if (differs && !run_len)
			run = o;
		if (differs)
			run_len += n;
		if ((!differs || o + n == to - from) && run_len) {
			rc = s ? write_run(dst, dr, from + run, s + run, run_len) : 0;
			for (uint64_t z = 0; !s && !rc && z < run_len; z += sizeof zeros)
				rc = write_run(dst, dr, from + run + z, zeros, run_len - z < sizeof zeros ? run_len - z : sizeof zeros);
			if (rc)
				return rc;
			st->written_bytes += run_len;
			run_len = 0;
		}
	}
	return 0;
}

int prosper_pool_copy_stage(prosper_pool *dst, prosper_pool *src, uint64_t since, struct prosper_pool_copy_stats *st)
{
	struct prosper_pool_copy_stats none;
	if (!st)
		st = &none;
	memset(st, 0, sizeof *st);
	if (dst->broken || src->broken)
		return pool_err(-EIO, "pool handle unusable after a failed commit");
	if (dst->sb.seg_size != src->sb.seg_size || dst->sb.block_size != src->sb.block_size)
		return pool_err(-EINVAL, "pools of different geometry (segments %u/%u, blocks %u/%u)", src->sb.seg_size,
				dst->sb.seg_size, src->sb.block_size, dst->sb.block_size);
	if (dst->sb.block_size > sizeof zeros)
		return pool_err(-EINVAL, "blocks of %u bytes are larger than a copy handles", dst->sb.block_size);
	/* 1. regions */
	for (uint32_t i = 0; i < dst->nregions; i++) {
		struct region *d = &dst->regions[i];
		struct region *s = d->removed ? NULL : region_by_id(src, d->info.id);
		if (d->removed || (s && same_identity(&s->info, &d->info)))
			continue;
		int rc = prosper_pool_region_remove(dst, d->info.id);
		if (rc)
			return rc;
		st->regions_removed++;
	}
	for (uint32_t i = 0; i < src->nregions; i++) {
		const struct region *s = &src->regions[i];
		if (s->removed)
			continue;
		struct region *d = region_by_id(dst, s->info.id);
		int rc = 0;
		if (!d) {
			rc = region_add_as(dst, &s->info);
			st->regions_added++;
		} else if (d->info.length != s->info.length) {
			rc = prosper_pool_region_resize(dst, d->info.id, s->info.length);
		}
		if (rc)
			return rc;
	}
	if (dst->next_region_id < src->next_region_id && !POOL_MUTANT(MUT_COPY_FRESH_IDS))
		dst->next_region_id = src->next_region_id;
	/* 2. bytes */
	for (uint32_t i = 0; i < src->nregions; i++) {
		struct region *s = &src->regions[i];
		if (s->removed)
			continue;
		struct region *d = region_by_id(dst, s->info.id);
		for (uint32_t k = 0; d && k < s->nsegs; k++) {
			int fresh = d->segs[k].written_epoch > dst->epoch; /* dst added it just now */
			if (since && !fresh && (s->segs[k].written_epoch <= since || POOL_MUTANT(MUT_COPY_ONLY_NEW)))
				continue;
			int rc = copy_segment(dst, d, src, s->info.id, k, st);
			if (rc)
				return rc;
		}
	}
	return 0;
}

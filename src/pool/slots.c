/* slots.c -- the data slots of a pool and the tables that describe them: the slot allocator,
 * the segments' block bitmaps, region lookup (by id, by name, live count), and flushing runs of
 * blocks within a slot.
 *
 * Slots freed by a staged change stay reserved until the commit (SLOT_RELEASED): the committed
 * epoch may still read them.  A pool file gives a freed slot's space back (a punched hole) once
 * it stayed free PUNCH_AFTER commits, so that the file holds about what the pool holds.  A layer
 * below every file that changes or loads a pool, above pool_file.c and persist.c (pool_internal.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "pool_file.h"
#include "pool_internal.h"

int pool_alloc_tables(struct prosper_pool *p)
{
	uint32_t n = p->sb.nslots;
	p->slot_use = calloc(n, 1);
	p->slot_reserved = calloc(n, 1);
	p->slot_zero = calloc(n, 1);
	p->slot_punch = calloc(n, 1);
	p->slot_pending = calloc(n, 1);
	p->pending = malloc(n * sizeof *p->pending);
	p->bound_to = malloc(n * sizeof *p->bound_to);
	if (!p->slot_use || !p->slot_reserved || !p->slot_zero || !p->slot_punch || !p->slot_pending || !p->pending ||
	    !p->bound_to)
		return pool_err(-ENOMEM, "out of memory for pool tables");
	for (uint32_t i = 0; i < n; i++)
		p->bound_to[i] = POOL_SLOT_NONE;
	return 0;
}


static bool slot_is_free(const struct prosper_pool *p, uint32_t i)
{
	return p->slot_use[i] == SLOT_FREE && p->bound_to[i] == POOL_SLOT_NONE;
}

int slot_reserve(struct prosper_pool *p, uint32_t i)
{
	if (p->slot_reserved[i])
		return 0;
	int rc = pool_file_reserve(p->fd, p->sb.data_off + (uint64_t)i * p->sb.seg_size, p->sb.seg_size);
	if (!rc)
		p->slot_reserved[i] = 1;
	return rc;
}

/* slot_take -- make free slot i usable: file space reserved now or (reserve_now == 0) left to
 * slot_reserve before its first write, no binding left on media. */
static int slot_take(struct prosper_pool *p, uint32_t i, int reserve_now)
{
	/* A hole of a file we created was never written: it reads as zeros, reserved or not (after a
	 * reopen an unreserved slot may hold an earlier run's bytes, so only then). */
	p->slot_zero[i] = 0;
	if (!p->slot_reserved[i]) {
		int rc = reserve_now ? slot_reserve(p, i) : 0;
		if (rc)
			return rc;
		p->slot_zero[i] = p->created_here || p->slot_punch[i] == PUNCH_DONE;
	}
	p->slot_punch[i] = PUNCH_NONE;
	/* A stale binding on media would make recovery think this slot backs a segment. */
	if (*bind_entry(p, i) != 0) {
		prosper_persist_store64(&p->pp, PSITE_BIND, bind_entry(p, i), 0);
		prosper_persist_range(&p->pp, PSITE_BIND, bind_entry(p, i), 8);
	}
	p->slot_use[i] = SLOT_USED;
	return 0;
}

void slot_freed(struct prosper_pool *p, uint32_t i)
{
	if (i < p->free_from)
		p->free_from = i;
}

int slot_alloc(struct prosper_pool *p, uint32_t *slot) { return slot_alloc_as(p, slot, 1); }

int slot_alloc_as(struct prosper_pool *p, uint32_t *slot, int reserve_now)
{
	/* first fit from free_from; below it only if a change to free was not reported (slot_freed) */
	for (uint32_t pass = 0, from = p->free_from; pass < 2; pass++, from = 0) {
		for (uint32_t i = from; i < p->sb.nslots; i++) {
			if (!slot_is_free(p, i))
				continue;
			int rc = slot_take(p, i, reserve_now);
			if (rc)
				return rc;
			*slot = i;
			p->free_from = i + 1;
			return 0;
		}
	}
	return pool_err(-ENOSPC, "pool is full (%u segments of %u bytes)", p->sb.nslots, p->sb.seg_size);
}

int slot_alloc_run(struct prosper_pool *p, uint32_t n, uint32_t at, uint32_t *first)
{
	uint32_t N = p->sb.nslots, start = POOL_SLOT_NONE;
	if (n == 0 || n > N)
		return pool_err(-ENOSPC, "no run of %u free segments", n);
	if (at != POOL_SLOT_NONE) {
		start = at;
		for (uint32_t i = at; start != POOL_SLOT_NONE && i < at + n; i++)
			if (at > N - n || !slot_is_free(p, i))
				start = POOL_SLOT_NONE;
	} else {
		for (uint32_t i = 0, len = 0; i < N && start == POOL_SLOT_NONE; i++) {
			len = slot_is_free(p, i) ? len + 1 : 0;
			if (len == n)
				start = i + 1 - n;
		}
	}
	if (start == POOL_SLOT_NONE)
		return pool_err(-ENOSPC, "no run of %u free segments", n);
	for (uint32_t i = start; i < start + n; i++) {
		int rc = slot_take(p, i, 0); /* a redo log: its space as it is written (redo.c) */
		if (rc) {
			while (i-- > start)
				p->slot_use[i] = SLOT_FREE, slot_freed(p, i); /* nothing was written to them */
			return rc;
		}
	}
	*first = start;
	return 0;
}

void slot_release(struct prosper_pool *p, uint32_t slot)
{
	if (slot == POOL_SLOT_NONE || slot >= p->sb.nslots)
		return;
	p->slot_use[slot] = SLOT_RELEASED;
	if (!p->slot_pending[slot]) {
		p->slot_pending[slot] = 1;
		p->pending[p->npending++] = slot; /* room for every slot: each is listed once */
	}
}

int seg_bitmaps_alloc(struct prosper_pool *p, struct seg *s)
{
	s->dirty = calloc(bitmap_words(p), 8);
	return s->dirty ? 0 : pool_err(-ENOMEM, "out of memory");
}

void region_free_segs(struct region *r, uint32_t from)
{
	for (uint32_t k = from; k < r->nsegs; k++) {
		free(r->segs[k].stale);
		free(r->segs[k].dirty);
		r->segs[k].stale = r->segs[k].dirty = NULL;
	}
}

struct region *region_by_id(struct prosper_pool *p, uint32_t id)
{
	for (uint32_t i = 0; i < p->nregions; i++)
		if (p->regions[i].info.id == id && !p->regions[i].removed)
			return &p->regions[i];
	return NULL;
}

int region_index(const struct prosper_pool *p, const char *name)
{
	int n = 0;
	for (uint32_t i = 0; i < p->nregions; i++) {
		if (p->regions[i].removed)
			continue;
		if (strcmp(p->regions[i].info.name, name) == 0)
			return n;
		n++;
	}
	return -1;
}

uint32_t regions_live(const struct prosper_pool *p)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < p->nregions; i++)
		n += !p->regions[i].removed;
	return n;
}

/* flush_runs -- flush every run of set bits of bm (blocks) within a slot.  With page
 * granularity a flush is an msync of whole pages, so runs less than a page apart are flushed as
 * one range: one system call instead of one per run. */
void flush_runs(struct prosper_pool *p, int site, uint8_t *slot, const uint64_t *bm)
{
	uint32_t nb = blocks_per_seg(p), b = 0, bs = p->sb.block_size;
	uint64_t gap = p->pp.granularity == PROSPER_GRAN_PAGE ? POOL_PAGE : 0;
	uint64_t from = 0, to = 0; /* pending byte range */
	int pending = 0;
	while (b < nb) {
		if (!bm_test(bm, b)) {
			b++;
			continue;
		}
		uint32_t e = b + 1;
		while (e < nb && bm_test(bm, e))
			e++;
		uint64_t a = (uint64_t)b * bs, z = (uint64_t)e * bs;
		if (pending && a <= to + gap) {
			to = z;
		} else {
			if (pending)
				prosper_persist_flush(&p->pp, site, slot + from, to - from);
			from = a;
			to = z;
			pending = 1;
		}
		b = e;
	}
	if (pending)
		prosper_persist_flush(&p->pp, site, slot + from, to - from);
}

void media_copy(struct prosper_pool *p, uint8_t *dst, const void *src, size_t n)
{
	if (p->fd < 0 || !p->pp.has_file || p->pp.file_in_memory || p->pp.granularity != PROSPER_GRAN_PAGE) {
		memcpy(dst, src, n);
		return;
	}
	const uint8_t *in = src;
	off_t off = (off_t)(dst - p->base);
	while (n) {
		ssize_t w = pwrite(p->fd, in, n, off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (!p->pp.error)
				p->pp.error = w < 0 ? -errno : -EIO;
			return;
		}
		in += w, off += w, n -= (size_t)w;
	}
}

void slots_after_commit(struct prosper_pool *p)
{
	uint64_t seg = p->sb.seg_size;
	uint32_t keep = 0;
	for (uint32_t k = 0; k < p->npending; k++) {
		uint32_t i = p->pending[k];
		if (p->slot_punch[i] != PUNCH_NONE && p->slot_punch[i] != PUNCH_DONE && !slot_is_free(p, i))
			p->slot_punch[i] = PUNCH_NONE; /* bound as a backup meanwhile */
		if (p->slot_punch[i] != PUNCH_NONE && p->slot_punch[i] != PUNCH_DONE && ++p->slot_punch[i] > PUNCH_AFTER) {
			if (p->fd >= 0 && fallocate(p->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
						    (off_t)(p->sb.data_off + i * seg), (off_t)seg) == 0) {
				p->slot_reserved[i] = 0;
				p->slot_punch[i] = PUNCH_DONE;
				p->stats.punched_bytes += seg;
			} else {
				p->slot_punch[i] = PUNCH_NONE; /* in memory, or a file system without holes */
			}
		}
		if (p->slot_use[i] == SLOT_RELEASED) {
			p->slot_use[i] = SLOT_FREE;
			slot_freed(p, i);
			p->slot_punch[i] = 1;
		}
		if (p->slot_punch[i] != PUNCH_NONE && p->slot_punch[i] != PUNCH_DONE)
			p->pending[keep++] = i; /* still counting */
		else
			p->slot_pending[i] = 0;
	}
	p->npending = keep;
}

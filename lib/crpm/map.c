/* map.c -- where a container's bytes live in the process.
 *
 * Invariants
 *   M1 [base, base + capacity) is reserved (PROT_NONE, no swap reserved) for the whole time the
 *      container is open, so nothing else can take an address the container may grow into.
 *   M2 Default mode: segment k at base + k * seg_size is a MAP_SHARED view of the pool file at
 *      prosper_pool_direct_offset(k) -- the same page-cache pages the pool flushes, so a store
 *      here is a store into the pool.  The offset of a segment never changes.
 *   M3 Buffered mode: [base, base + length) is anonymous DRAM holding the working state; at open
 *      it is filled with the committed bytes.
 *   M4 length is a whole number of segments; bytes in [length, capacity) are unmapped
 *      (PROT_NONE), so a stray pointer faults instead of writing untracked memory.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include "prosper/internal/crpm_internal.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

int crpm_map_reserve(struct crpm_container *c)
{
	void *want = c->base;
	void *got = mmap(want, c->capacity, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE,
			 -1, 0);
	if (got == MAP_FAILED)
		return crpm_fail(-errno, "cannot reserve %llu bytes at %p for the container: %s",
				 (unsigned long long)c->capacity, want, strerror(errno));
	if (got != want) { /* a kernel that ignores MAP_FIXED_NOREPLACE treats it as a hint */
		munmap(got, c->capacity);
		return crpm_fail(-EEXIST, "address %p is in use; the container must map there", want);
	}
	return 0;
}

/* map_segments -- make segments [from, to) of the region visible at their addresses. */
static int map_segments(struct crpm_container *c, uint32_t from, uint32_t to, int prot)
{
	if (c->mode == CRPM_MODE_BUFFERED) {
		uint8_t *a = c->base + (uint64_t)from * c->seg_size;
		if (mmap(a, (uint64_t)(to - from) * c->seg_size, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
		    MAP_FAILED)
			return crpm_fail(-errno, "cannot map the container's working memory: %s", strerror(errno));
		return 0;
	}
	for (uint32_t k = from; k < to; k++) {
		int64_t off = prosper_pool_direct_offset(c->pool, c->region, k);
		if (off < 0)
			return crpm_fail((int)off, "%s", prosper_pool_errormsg());
		uint8_t *a = c->base + (uint64_t)k * c->seg_size;
		if (mmap(a, c->seg_size, prot, MAP_SHARED | MAP_FIXED, c->fd, off) == MAP_FAILED)
			return crpm_fail(-errno, "cannot map segment %u of the container: %s", k, strerror(errno));
	}
	return 0;
}

/* crpm_map_grow -- the region becomes new_length bytes (a whole number of segments, larger
 * than now): staged in the pool (it takes effect at the next checkpoint) and mapped now. */
int crpm_map_grow(struct crpm_container *c, uint64_t new_length)
{
	if (new_length > c->capacity)
		return crpm_fail(-ENOSPC, "container full (capacity %llu bytes)", (unsigned long long)c->capacity);
	uint32_t from = (uint32_t)(c->length / c->seg_size), to = (uint32_t)(new_length / c->seg_size);
	if (c->length != new_length) {
		int rc = prosper_pool_region_resize(c->pool, c->region, new_length);
		if (rc)
			return crpm_fail(rc, "cannot grow the container: %s", prosper_pool_errormsg());
	}
	/* New segments are CLEAN: write-protected like every clean segment (track.c). */
	int prot = c->tracking == CRPM_TRACK_AUTO || c->tracking == CRPM_TRACK_PROTECT ? PROT_READ : PROT_READ | PROT_WRITE;
	int rc = map_segments(c, from, to, prot);
	if (!rc)
		rc = crpm_pages_add(c, c->length, new_length);
	if (rc)
		return rc;
	c->length = new_length;
	return 0;
}

/* crpm_map_existing -- used by open: map the committed region (length bytes) and, in buffered
 * mode, copy the committed bytes into DRAM.  Writable: the caller protects it afterwards. */
int crpm_map_existing(struct crpm_container *c, uint64_t length)
{
	int rc = map_segments(c, 0, (uint32_t)(length / c->seg_size), PROT_READ | PROT_WRITE);
	if (rc)
		return rc;
	if (c->mode == CRPM_MODE_BUFFERED && length) {
		rc = prosper_pool_region_read(c->pool, c->region, 0, c->base, length);
		if (rc)
			return crpm_fail(rc, "cannot read the checkpoint: %s", prosper_pool_errormsg());
	}
	c->length = length;
	return 0;
}

void crpm_map_release(struct crpm_container *c)
{
	if (c->base)
		munmap(c->base, c->capacity);
}

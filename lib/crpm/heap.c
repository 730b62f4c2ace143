/* heap.c -- the allocator inside a container.
 *
 * All its state is in the container (struct crpm_hdr and the chunk headers), so a checkpoint
 * saves it with the objects it describes and recovery brings back a heap that matches them
 * (C2).  It writes the container only after crpm_note_write, like any other writer.
 *
 * Layout: chunks of size multiple of 16, each with a 16-byte header {size, next}; a pointer
 * handed out is 16 bytes past its header.  heap_top is the end of the carved part; the region
 * grows by whole segments when heap_top passes its length.
 * Free chunks: sizes up to CRPM_SMALL_MAX (+header) have one exact-size LIFO list per size;
 * larger ones go on one first-fit list and are split when the rest is worth a chunk.  No
 * coalescing: the workloads (tree and hash nodes, arrays) reuse sizes.
 *
 * Invariants
 *   H1 Every chunk below heap_top is either in use (next == CRPM_CHUNK_USED) or on exactly one
 *      free list; chunks tile [CRPM_HDR_BYTES, heap_top) without gaps.
 *   H2 Pointers in the lists are offsets from base (the container may be inspected elsewhere).
 */
#include <errno.h>
#include <string.h>
#include "prosper/internal/crpm_internal.h"

#define CHUNK_HDR sizeof(struct crpm_chunk)
#define GROW_MIN (4ull << 20) /* grow the region at least this much at a time */

static inline struct crpm_chunk *chunk_at(struct crpm_container *c, uint64_t off) { return (struct crpm_chunk *)(c->base + off); }

/* set -- write one 8-byte word of the container, noting it first. */
static inline void set(struct crpm_container *c, uint64_t *w, uint64_t v)
{
	if (*w == v)
		return;
	if (!CRPM_MUTANT(CRPM_MUT_HEAP_UNNOTED))
		crpm_note_write(c, w, sizeof *w);
	*w = v;
}

void crpm_heap_format(struct crpm_container *c)
{
	struct crpm_hdr *h = crpm_hdr(c);
	crpm_note_write(c, h, sizeof *h);
	memset(h, 0, sizeof *h);
	h->magic = CRPM_MAGIC;
	h->version = CRPM_VERSION;
	h->mode = (uint32_t)c->mode;
	h->base = (uint64_t)(uintptr_t)c->base;
	h->capacity = c->capacity;
	h->heap_top = CRPM_HDR_BYTES;
}

static uint64_t chunk_size_for(size_t size)
{
	uint64_t n = ((uint64_t)size + CRPM_ALIGN - 1) / CRPM_ALIGN * CRPM_ALIGN + CHUNK_HDR;
	return n < 2 * CHUNK_HDR ? 2 * CHUNK_HDR : n;
}

static inline uint64_t *small_list(struct crpm_hdr *h, uint64_t csize)
{
	return &h->free_small[(csize - CHUNK_HDR) / CRPM_ALIGN - 1];
}

static uint64_t take_large(struct crpm_container *c, uint64_t need)
{
	struct crpm_hdr *h = crpm_hdr(c);
	uint64_t *link = &h->free_large;
	while (*link) {
		struct crpm_chunk *k = chunk_at(c, *link);
		if (k->size >= need) {
			uint64_t off = *link;
			set(c, link, k->next);
			uint64_t rest = k->size - need;
			if (rest >= 2 * CHUNK_HDR) { /* split: the tail becomes a free chunk */
				struct crpm_chunk *t = chunk_at(c, off + need);
				crpm_note_write(c, t, CHUNK_HDR);
				t->size = rest;
				t->next = 0;
				set(c, &k->size, need);
				uint64_t *list = rest - CHUNK_HDR <= CRPM_SMALL_MAX ? small_list(h, rest) : &h->free_large;
				set(c, &t->next, *list);
				set(c, list, off + need);
			}
			return off;
		}
		link = &k->next;
	}
	return 0;
}

static uint64_t carve(struct crpm_container *c, uint64_t need)
{
	struct crpm_hdr *h = crpm_hdr(c);
	uint64_t off = h->heap_top;
	if (off + need > c->length) {
		uint64_t want = off + need - c->length;
		if (want < GROW_MIN)
			want = GROW_MIN;
		uint64_t len = (c->length + want + c->seg_size - 1) / c->seg_size * c->seg_size;
		if (len > c->capacity)
			len = c->capacity;
		if (off + need > len) {
			crpm_fail(-ENOSPC, "container full: %llu bytes asked, capacity %llu",
				  (unsigned long long)need, (unsigned long long)c->capacity);
			return 0;
		}
		pthread_mutex_lock(&c->lock);
		int rc = crpm_map_grow(c, len);
		pthread_mutex_unlock(&c->lock);
		if (rc)
			return 0;
	}
	set(c, &h->heap_top, off + need);
	struct crpm_chunk *k = chunk_at(c, off);
	crpm_note_write(c, k, CHUNK_HDR);
	k->size = need;
	return off;
}

void *crpm_malloc(crpm_t *c, size_t size)
{
	if (!c || size > c->capacity)
		return crpm_fail_null("cannot allocate %zu bytes", size);
	uint64_t need = chunk_size_for(size);
	pthread_mutex_lock(&c->heap_lock);
	struct crpm_hdr *h = crpm_hdr(c);
	uint64_t off = 0;
	if (need - CHUNK_HDR <= CRPM_SMALL_MAX) {
		uint64_t *list = small_list(h, need);
		if (*list) {
			off = *list;
			set(c, list, chunk_at(c, off)->next);
		}
	} else {
		off = take_large(c, need);
	}
	if (!off)
		off = carve(c, need);
	if (off) {
		struct crpm_chunk *k = chunk_at(c, off);
		set(c, &k->next, CRPM_CHUNK_USED);
		set(c, &h->allocated_bytes, h->allocated_bytes + k->size);
	}
	pthread_mutex_unlock(&c->heap_lock);
	return off ? c->base + off + CHUNK_HDR : NULL;
}

void crpm_free(crpm_t *c, void *ptr)
{
	if (!c || !ptr)
		return;
	uint64_t off = (uint64_t)((uint8_t *)ptr - c->base) - CHUNK_HDR;
	pthread_mutex_lock(&c->heap_lock);
	struct crpm_hdr *h = crpm_hdr(c);
	struct crpm_chunk *k = chunk_at(c, off);
	if (off < CRPM_HDR_BYTES || off >= h->heap_top || k->next != CRPM_CHUNK_USED) {
		pthread_mutex_unlock(&c->heap_lock);
		crpm_fail(-EINVAL, "crpm_free(%p): not an allocated object of this container", ptr);
		return;
	}
	uint64_t *list = k->size - CHUNK_HDR <= CRPM_SMALL_MAX ? small_list(h, k->size) : &h->free_large;
	set(c, &k->next, *list);
	set(c, list, off);
	set(c, &h->allocated_bytes, h->allocated_bytes - k->size);
	pthread_mutex_unlock(&c->heap_lock);
}

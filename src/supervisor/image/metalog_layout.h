/* metalog_layout.h -- the metadata region's layout and the log-mode stub, shared by the code
 * that writes them (metalog.c) and the code that reads them back (metalog_read.c).  The format
 * is described in metalog.h and docs/pool-format.md. */
#ifndef PROSPER_SUP_METALOG_LAYOUT_H
#define PROSPER_SUP_METALOG_LAYOUT_H
#include <stdint.h>
#include "metalog.h"

#define META_MAGIC 0x474F4C4D50535250ull      /* "PRSPMLOG": the region */
#define META_STUB_MAGIC 0x4255545350535250ull /* "PRSPSTUB": the epoch blob in log mode */
#define META_VERSION 4u /* 2: img_hdr and img_thread of image version 3 inside; 3: of version 4; 4: of version 5 */
#define HEAP_RESERVED 8u   /* offset 0 is never a string, so a zero file slot is free */
#define CAP_LIMIT (1u << 24)

struct meta_head {
	uint64_t magic;
	uint32_t version, head_bytes;
	uint32_t xstate_bytes, thr_cap;
	uint32_t vma_cap, fd_cap, file_cap;
	uint32_t strings_cap, strings_used, reserved;
};

struct meta_stub {
	uint64_t magic;
	uint32_t version, region;
};

/* Where each part of a region with head h lies. */
struct layout {
	uint64_t thr, vma, fd, file, heap, total;
	uint64_t thr_bytes; /* one thread entry */
};

static inline uint64_t round8(uint64_t n) { return (n + 7) & ~7ull; }

static inline struct layout layout_of(const struct meta_head *h)
{
	struct layout l;
	l.thr = sizeof *h + sizeof(struct img_hdr) + round8(h->xstate_bytes);
	l.thr_bytes = sizeof(struct img_thread) + round8(h->xstate_bytes);
	l.vma = l.thr + (uint64_t)h->thr_cap * l.thr_bytes;
	l.fd = l.vma + (uint64_t)h->vma_cap * sizeof(struct img_vma);
	l.file = l.fd + (uint64_t)h->fd_cap * sizeof(struct img_fd);
	l.heap = l.file + (uint64_t)h->file_cap * sizeof(struct img_file);
	l.total = round8(l.heap + h->strings_cap);
	return l;
}

/* The region a stub names, if the pool holds it: its length (and *id), or 0. */
uint64_t metalog_stub_region(prosper_pool *pool, const void *stub, uint32_t *id);

#endif

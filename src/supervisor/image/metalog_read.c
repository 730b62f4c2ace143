/* metalog_read.c -- the metadata of a committed log-mode epoch read back from its region
 * (metalog.h): the stub, the region's bounds checks, the whole image.h blob rebuilt.
 *
 * Invariant: nothing is read outside the region's used parts -- every count against its table's
 * capacity, every string against the used heap -- and the blob built is checked by img_decode()
 * before anyone sees it.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "metalog_layout.h"

int metalog_is_stub(const void *blob, size_t len)
{
	struct meta_stub s;
	if (!blob || len != sizeof s)
		return 0;
	memcpy(&s, blob, sizeof s);
	return s.magic == META_STUB_MAGIC;
}

uint64_t metalog_stub_region(prosper_pool *pool, const void *stub, uint32_t *id)
{
	struct meta_stub s;
	memcpy(&s, stub, sizeof s);
	struct prosper_region_info info;
	if (s.version != META_VERSION)
		return 0;
	/* the stub names its region by id: a process of a tree has its own ("metadata.PID") */
	for (int i = prosper_pool_region_count(pool) - 1; i >= 0; i--)
		if (prosper_pool_region_get(pool, i, &info) == 0 && info.id == s.region)
			return info.mode == PROSPER_REGION_REDO && info.kind == PROSPER_KIND_OTHER ? (*id = info.id, info.length) : 0;
	return 0;
}

static int by_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* A string of the region's heap: absent, or starting inside the used part and ending there. */
static int heap_ok(const uint8_t *heap, uint32_t used, uint32_t off)
{
	return off == IMG_NONE || (off >= HEAP_RESERVED && off < used && memchr(heap + off, 0, used - off));
}

/* One slot table of a region: where, how many slots of what size, where a slot names its path
 * string, and its key (UINT64_MAX: a free slot). */
struct table_desc {
	uint64_t off;
	uint32_t cap;
	size_t size, path_off;
	int path_required;
	size_t payload_off;  /* a second, optional string field (an fd's payload); 0: none */
	uint64_t (*key_of)(const uint8_t *slot);
};

static uint64_t vma_key(const uint8_t *p)
{
	struct img_vma v;
	memcpy(&v, p, sizeof v);
	return v.end ? v.start >> 12 : UINT64_MAX;
}

static uint64_t fd_key(const uint8_t *p)
{
	struct img_fd f;
	memcpy(&f, p, sizeof f);
	return f.type ? (uint32_t)f.fd : UINT64_MAX;
}

static uint64_t file_key(const uint8_t *p)
{
	struct img_file f;
	memcpy(&f, p, sizeof f);
	return f.path ? f.path : UINT64_MAX;
}

/* copy_table -- append the used slots of table t of region r to out in key order (keys: room
 * for t->cap), their path strings moved from the heap to the blob's string table; *count = how
 * many.  -EINVAL if a path is not a string of the used heap. */
static int copy_table(const uint8_t *r, const struct table_desc *t, uint64_t *keys, const uint8_t *heap,
		      uint32_t used, struct img_buf *strings, struct img_buf *out, uint32_t *count)
{
	size_t n = 0;
	for (uint32_t s = 0; s < t->cap; s++) {
		uint64_t k = t->key_of(r + t->off + (size_t)s * t->size);
		if (k != UINT64_MAX)
			keys[n++] = k << 24 | s; /* slot < CAP_LIMIT = 2^24 */
	}
	qsort(keys, n, sizeof *keys, by_u64);
	uint8_t slot[sizeof(struct img_file)]; /* the largest slot */
	for (size_t i = 0; i < n; i++) {
		uint32_t path;
		memcpy(slot, r + t->off + (keys[i] & 0xFFFFFF) * t->size, t->size);
		memcpy(&path, slot + t->path_off, sizeof path);
		if (!heap_ok(heap, used, path) || (t->path_required && path == IMG_NONE))
			return -EINVAL;
		if (path != IMG_NONE) {
			path = img_str(strings, (const char *)heap + path);
			memcpy(slot + t->path_off, &path, sizeof path);
		}
		if (t->payload_off) {
			uint32_t payload;
			memcpy(&payload, slot + t->payload_off, sizeof payload);
			if (!heap_ok(heap, used, payload))
				return -EINVAL;
			if (payload != IMG_NONE) {
				payload = img_str(strings, (const char *)heap + payload);
				memcpy(slot + t->payload_off, &payload, sizeof payload);
			}
		}
		if (img_buf_put(out, slot, t->size))
			return -ENOMEM;
	}
	*count = (uint32_t)n;
	return 0;
}

/* rebuild -- the image.h blob of region image r (checked by the caller's layout test). */
static int rebuild(const uint8_t *r, struct img_buf *out)
{
	const struct meta_head *mh = (const void *)r;
	struct layout l = layout_of(mh);
	const uint8_t *heap = r + l.heap;
	uint32_t used = mh->strings_used;
	struct img_hdr h;
	memcpy(&h, r + sizeof *mh, sizeof h);
	if (h.xstate_bytes != mh->xstate_bytes || h.nthreads > mh->thr_cap || !heap_ok(heap, used, h.exe_str) ||
	    !heap_ok(heap, used, h.cwd_str) || !heap_ok(heap, used, h.launch_cwd_str) ||
	    !heap_ok(heap, used, h.kernel_str) || !heap_ok(heap, used, h.args_str) || h.args_str == IMG_NONE ||
	    h.exe_str == IMG_NONE)
		return -EINVAL;
	struct img_buf strings = { 0 }, vmas = { 0 }, fds = { 0 }, files = { 0 };
	uint64_t *keys = malloc(((size_t)mh->vma_cap + mh->fd_cap + mh->file_cap + 1) * sizeof *keys);
	int rc = -EINVAL;
	if (!keys)
		return -ENOMEM;
	h.exe_str = img_str(&strings, (const char *)heap + h.exe_str);
	if (h.cwd_str != IMG_NONE)
		h.cwd_str = img_str(&strings, (const char *)heap + h.cwd_str);
	if (h.launch_cwd_str != IMG_NONE)
		h.launch_cwd_str = img_str(&strings, (const char *)heap + h.launch_cwd_str);
	if (h.kernel_str != IMG_NONE)
		h.kernel_str = img_str(&strings, (const char *)heap + h.kernel_str);
	uint32_t at = h.args_str;
	h.args_str = (uint32_t)strings.len;
	for (uint32_t i = 0; i < h.argc + h.envc; i++) {
		if (!heap_ok(heap, used, at) || at == IMG_NONE)
			goto out;
		img_str(&strings, (const char *)heap + at);
		at += (uint32_t)strlen((const char *)heap + at) + 1;
	}
	/* VMAs in address order, fds in fd order, files in heap order */
	const struct table_desc vt = { l.vma, mh->vma_cap, sizeof(struct img_vma), offsetof(struct img_vma, path), 0, 0, vma_key },
				ft = { l.fd, mh->fd_cap, sizeof(struct img_fd), offsetof(struct img_fd, path), 0, offsetof(struct img_fd, payload), fd_key },
				lt = { l.file, mh->file_cap, sizeof(struct img_file), offsetof(struct img_file, path), 1, 0, file_key };
	if (copy_table(r, &vt, keys, heap, used, &strings, &vmas, &h.nvmas) ||
	    copy_table(r, &ft, keys, heap, used, &strings, &fds, &h.nfds) ||
	    copy_table(r, &lt, keys, heap, used, &strings, &files, &h.nfiles))
		goto out;
	uint64_t xb = h.xstate_bytes;
	h.strings_bytes = (uint32_t)strings.len;
	h.total_bytes = (uint32_t)(sizeof h + xb + h.nthreads * (sizeof(struct img_thread) + xb) + vmas.len + fds.len +
				   files.len + strings.len);
	out->len = 0;
	rc = -ENOMEM;
	if (img_buf_put(out, &h, sizeof h) || img_buf_put(out, r + sizeof *mh + sizeof h, xb))
		goto out;
	for (uint32_t t = 0; t < h.nthreads; t++)
		if (img_buf_put(out, r + l.thr + t * l.thr_bytes, sizeof(struct img_thread)))
			goto out;
	for (uint32_t t = 0; t < h.nthreads; t++)
		if (img_buf_put(out, r + l.thr + t * l.thr_bytes + sizeof(struct img_thread), xb))
			goto out;
	if (img_buf_put(out, vmas.p, vmas.len) || img_buf_put(out, fds.p, fds.len) || img_buf_put(out, files.p, files.len) ||
	    img_buf_put(out, strings.p, strings.len))
		goto out;
	rc = 0;
out:
	free(keys);
	free(strings.p);
	free(vmas.p);
	free(fds.p);
	free(files.p);
	return rc;
}

int metalog_load(prosper_pool *pool, const void *stub, size_t stub_len, void **blob, size_t *blob_len,
		 const char **why)
{
	*why = "the metadata log region is missing, damaged or from another version";
	uint32_t id = 0;
	uint64_t len = metalog_is_stub(stub, stub_len) ? metalog_stub_region(pool, stub, &id) : 0;
	if (len < sizeof(struct meta_head) || len > (1ull << 31))
		return -EINVAL;
	uint8_t *r = malloc(len);
	if (!r)
		return -ENOMEM;
	int rc = prosper_pool_region_read(pool, id, 0, r, len);
	if (!rc)
		rc = metalog_decode(r, len, blob, blob_len);
	free(r);
	if (!rc)
		*why = NULL;
	return rc;
}

int metalog_decode(const void *region, size_t len, void **blob, size_t *blob_len)
{
	const uint8_t *r = region;
	struct meta_head mh;
	if (len < sizeof mh)
		return -EINVAL;
	memcpy(&mh, r, sizeof mh);
	int rc = 0;
	if ((mh.magic != META_MAGIC || mh.version != META_VERSION || mh.head_bytes != sizeof mh ||
		    mh.thr_cap > CAP_LIMIT || mh.vma_cap > CAP_LIMIT || mh.fd_cap > CAP_LIMIT || mh.file_cap > CAP_LIMIT ||
		    mh.xstate_bytes > (1u << 20) || mh.strings_cap > (1u << 30) || mh.strings_used > mh.strings_cap ||
		    mh.strings_used < HEAP_RESERVED || layout_of(&mh).total != len))
		rc = -EINVAL;
	struct img_buf out = { 0 };
	if (!rc)
		rc = rebuild(r, &out);
	struct img im;
	const char *w;
	if (!rc && img_decode(out.p, out.len, &im, &w) != 0)
		rc = -EINVAL;
	if (rc) {
		free(out.p);
		return rc;
	}
	*blob = out.p;
	*blob_len = out.len;
	return 0;
}

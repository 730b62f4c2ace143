/* metalog.c -- staging the metadata of an epoch as slot tables in a redo region (metalog.h);
 * metalog_read.c reads a committed epoch back.
 *
 * Staging builds the next image of the region in DRAM (a copy of the committed one, or a new
 * layout for a rebuild), then writes every slot whose bytes differ from the committed image:
 * one pool write, hence one redo record, per changed slot.  The committed image stays in DRAM
 * (the "shadow") so the comparison never reads the pool.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "metalog_layout.h"
#include "metalog_table.h"
#include "prosper/stackckpt.h"

int metalog_mutation;

/* Interned strings of the heap: open addressing over heap offsets. */
struct intern {
	uint32_t *off, *len;
	size_t cap, n;
};

struct metalog {
	uint32_t region;
	int have_region;
	uint64_t region_len;
	int rebuild;              /* the next stage lays the region out again and writes it whole */
	int pending;              /* staged, not yet confirmed by metalog_committed() */
	uint8_t *img, *next;      /* committed image (shadow) and the one being staged */
	uint64_t img_len, next_len;
	struct table vmas, fds, files;
	struct intern strs;
	struct meta_stub stub;
	char name[40];            /* the region's name in the pool */
};

struct metalog *metalog_new_named(const char *name)
{
	struct metalog *m = calloc(1, sizeof *m);
	if (m) {
		m->rebuild = 1;
		snprintf(m->name, sizeof m->name, "%s", name);
	}
	return m;
}

struct metalog *metalog_new(void) { return metalog_new_named(META_REGION_NAME); }

void metalog_delete(struct metalog **pm)
{
	struct metalog *m = *pm;
	if (!m)
		return;
	free(m->img);
	free(m->next);
	table_free(&m->vmas);
	table_free(&m->fds);
	table_free(&m->files);
	free(m->strs.off);
	free(m->strs.len);
	free(m);
	*pm = NULL;
}

/* ------------------------------------------------------------------ strings */

static uint64_t hash_bytes(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static void intern_reset(struct intern *t)
{
	t->n = 0;
	if (t->off)
		memset(t->off, 0, t->cap * sizeof *t->off);
}

static int intern_grow(struct intern *t, const uint8_t *heap)
{
	size_t cap = t->cap ? 2 * t->cap : 1024;
	uint32_t *off = calloc(cap, sizeof *off), *len = calloc(cap, sizeof *len);
	if (!off || !len) {
		free(off);
		free(len);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->cap; i++) {
		if (!t->off[i])
			continue;
		size_t j = hash_bytes(heap + t->off[i], t->len[i]) & (cap - 1);
		while (off[j])
			j = (j + 1) & (cap - 1);
		off[j] = t->off[i];
		len[j] = t->len[i];
	}
	free(t->off);
	free(t->len);
	t->off = off;
	t->len = len;
	t->cap = cap;
	return 0;
}

/* intern -- offset of the n bytes at s in the heap of the image being staged, appended if new.
 * IMG_NONE for s == NULL; -ENOSPC when the heap is full, -ENOMEM. */
static int64_t intern(struct metalog *m, const char *s, size_t n)
{
	if (!s)
		return IMG_NONE;
	struct meta_head *h = (struct meta_head *)m->next;
	uint8_t *heap = m->next + layout_of(h).heap;
	if (2 * (m->strs.n + 1) > m->strs.cap) {
		int rc = intern_grow(&m->strs, heap);
		if (rc)
			return rc;
	}
	struct intern *t = &m->strs;
	size_t j = hash_bytes(s, n) & (t->cap - 1);
	for (; t->off[j]; j = (j + 1) & (t->cap - 1))
		if (t->len[j] == n && !memcmp(heap + t->off[j], s, n))
			return t->off[j];
	if (h->strings_used + n > h->strings_cap)
		return -ENOSPC;
	memcpy(heap + h->strings_used, s, n);
	t->off[j] = h->strings_used;
	t->len[j] = (uint32_t)n;
	t->n++;
	h->strings_used += (uint32_t)n;
	return t->off[j];
}

/* The argv + environment block: argc + envc consecutive strings from off (checked by the caller). */
static size_t args_block_len(const char *strings, uint32_t off, uint32_t count)
{
	size_t n = 0;
	for (uint32_t i = 0; i < count; i++)
		n += strlen(strings + off + n) + 1;
	return n;
}

/* ------------------------------------------------------------------ staging */

static uint32_t cap_for(uint32_t need, uint32_t least, uint32_t old)
{
	uint64_t c = 2ull * need > least ? 2ull * need : least;
	if (c < old)
		c = old;
	return c > CAP_LIMIT ? CAP_LIMIT : (uint32_t)c;
}

/* One table of the blob and the slots it goes to in the region being staged. */
enum stage_key { KEY_U64, KEY_I32, KEY_PATH }; /* u64 / i32 at the entry's start, or its path */
struct stage_desc {
	struct table *t;
	const uint8_t *src;  /* the blob's entries */
	uint32_t n, cap;
	uint64_t off;        /* the slots */
	size_t size, path_off;
	size_t payload_off;  /* a second string field (an fd's payload); 0: none */
	enum stage_key key;
	int is_vma;          /* where the mutant applies */
};

/* stage_table -- the entries of d into their slots of m->next: kept slots for kept keys (a
 * change if the bytes differ), free slots for new keys (an add), zeroed slots for keys gone (a
 * remove).  -ENOSPC if the table or the heap is full. */
static int stage_table(struct metalog *m, const struct img *im, const struct stage_desc *d, int fresh,
		       uint64_t *added, uint64_t *removed, uint64_t *changed)
{
	struct table *t = d->t;
	int rc = keys_reserve(&t->nxt, &t->nxt_alloc, d->n);
	if (rc)
		return rc;
	for (uint32_t i = 0; i < d->n; i++) {
		const uint8_t *e = d->src + (size_t)i * d->size;
		uint32_t path;
		memcpy(&path, e + d->path_off, sizeof path);
		int64_t p = path == IMG_NONE ? IMG_NONE : intern(m, img_s(im, path), strlen(img_s(im, path)) + 1);
		if (p < 0)
			return (int)p;
		int64_t q = IMG_NONE;
		if (d->payload_off) {
			uint32_t payload;
			memcpy(&payload, e + d->payload_off, sizeof payload);
			q = payload == IMG_NONE ? IMG_NONE : intern(m, img_s(im, payload), strlen(img_s(im, payload)) + 1);
			if (q < 0)
				return (int)q;
		}
		uint64_t key = 0;
		int32_t fd;
		if (d->key == KEY_PATH)
			key = (uint64_t)p;
		else if (d->key == KEY_I32)
			memcpy(&fd, e, sizeof fd), key = (uint32_t)fd;
		else
			memcpy(&key, e, sizeof key);
		t->nxt[i] = (struct keyslot){ .key = key, .src = i, .path = (uint32_t)p, .payload = (uint32_t)q };
	}
	t->nnxt = d->n;
	sort_keys(t);
	uint8_t *slots = m->next + d->off;
	if ((rc = table_assign(t, fresh, d->cap, slots, d->size, d->is_vma, added, removed)) != 0)
		return rc;
	uint8_t entry[sizeof(struct img_file)]; /* the largest entry */
	for (size_t j = 0; j < t->nnxt; j++) {
		memcpy(entry, d->src + (size_t)t->nxt[j].src * d->size, d->size);
		memcpy(entry + d->path_off, &t->nxt[j].path, sizeof t->nxt[j].path);
		if (d->payload_off)
			memcpy(entry + d->payload_off, &t->nxt[j].payload, sizeof t->nxt[j].payload);
		uint8_t *dst = slots + (size_t)t->nxt[j].slot * d->size;
		if (!t->nxt[j].added && memcmp(dst, entry, d->size))
			(*changed)++;
		memcpy(dst, entry, d->size);
	}
	return 0;
}

/* new_layout -- m->next becomes an empty region sized for im (tables twice what it needs, never
 * smaller than the committed ones). */
static int new_layout(struct metalog *m, const struct img *im)
{
	const struct img_hdr *h = im->h;
	const struct meta_head *old = m->img_len >= sizeof *old ? (const struct meta_head *)m->img : NULL;
	struct meta_head nh = {
		.magic = META_MAGIC, .version = META_VERSION, .head_bytes = sizeof nh, .xstate_bytes = h->xstate_bytes,
		.thr_cap = cap_for(h->nthreads, 4, old ? old->thr_cap : 0),
		.vma_cap = cap_for(h->nvmas, 64, old ? old->vma_cap : 0),
		.fd_cap = cap_for(h->nfds, 16, old ? old->fd_cap : 0),
		.file_cap = cap_for(h->nfiles, 16, old ? old->file_cap : 0),
		.strings_cap = (uint32_t)round8(cap_for(h->strings_bytes + HEAP_RESERVED, 4096, old ? old->strings_cap : 0)),
		.strings_used = HEAP_RESERVED,
	};
	if (nh.vma_cap < h->nvmas || nh.fd_cap < h->nfds || nh.file_cap < h->nfiles || nh.thr_cap < h->nthreads)
		return -E2BIG;
	uint64_t len = layout_of(&nh).total;
	uint8_t *p = realloc(m->next, len);
	if (!p)
		return -ENOMEM;
	memset(p, 0, len);
	memcpy(p, &nh, sizeof nh);
	m->next = p;
	m->next_len = len;
	intern_reset(&m->strs);
	return 0;
}

/* fill_next -- m->next = the image of im: the committed one with the changes (fresh: a new
 * layout).  -ENOSPC if a table or the heap is full (the caller rebuilds). */
static int fill_next(struct metalog *m, const struct img *im, int fresh, struct metalog_stats *st)
{
	const struct img_hdr *h = im->h;
	int rc;
	if (fresh) {
		if ((rc = new_layout(m, im)) != 0)
			return rc;
	} else {
		const struct meta_head *oh = (const struct meta_head *)m->img;
		if (oh->xstate_bytes != h->xstate_bytes || h->nthreads > oh->thr_cap || h->nvmas > oh->vma_cap ||
		    h->nfds > oh->fd_cap || h->nfiles > oh->file_cap)
			return -ENOSPC;
		uint8_t *p = realloc(m->next, m->img_len);
		if (!p)
			return -ENOMEM;
		memcpy(p, m->img, m->img_len);
		m->next = p;
		m->next_len = m->img_len;
	}
	struct layout l = layout_of((struct meta_head *)m->next);
	uint32_t xb = h->xstate_bytes;
	/* the context: header with heap offsets, registers and xstate of every thread */
	struct img_hdr ch = *h;
	int64_t o[5];
	o[0] = intern(m, img_s(im, h->exe_str), strlen(img_s(im, h->exe_str)) + 1);
	o[1] = h->cwd_str == IMG_NONE ? IMG_NONE : intern(m, img_s(im, h->cwd_str), strlen(img_s(im, h->cwd_str)) + 1);
	o[2] = h->launch_cwd_str == IMG_NONE ? IMG_NONE
					     : intern(m, img_s(im, h->launch_cwd_str), strlen(img_s(im, h->launch_cwd_str)) + 1);
	o[3] = h->kernel_str == IMG_NONE ? IMG_NONE : intern(m, img_s(im, h->kernel_str), strlen(img_s(im, h->kernel_str)) + 1);
	o[4] = intern(m, img_s(im, h->args_str), args_block_len(im->strings, h->args_str, h->argc + h->envc));
	for (int k = 0; k < 5; k++)
		if (o[k] < 0)
			return (int)o[k];
	ch.exe_str = (uint32_t)o[0], ch.cwd_str = (uint32_t)o[1], ch.launch_cwd_str = (uint32_t)o[2];
	ch.kernel_str = (uint32_t)o[3], ch.args_str = (uint32_t)o[4];
	ch.total_bytes = ch.nvmas = ch.nfds = ch.nfiles = ch.strings_bytes = 0;
	memcpy(m->next + sizeof(struct meta_head), &ch, sizeof ch);
	memcpy(m->next + sizeof(struct meta_head) + sizeof ch, im->xstate, xb);
	for (uint32_t t = 0; t < h->nthreads; t++) {
		uint8_t *e = m->next + l.thr + t * l.thr_bytes;
		memcpy(e, &im->threads[t], sizeof(struct img_thread));
		memcpy(e + sizeof(struct img_thread), im->thread_xstate + (size_t)t * xb, xb);
	}

	/* VMAs by start address, fds by number, mapped files by path */
	const struct meta_head *nh = (const struct meta_head *)m->next;
	const struct stage_desc tables[3] = {
		{ &m->vmas, (const uint8_t *)im->vmas, h->nvmas, nh->vma_cap, l.vma, sizeof(struct img_vma),
		  offsetof(struct img_vma, path), 0, KEY_U64, 1 },
		{ &m->fds, (const uint8_t *)im->fds, h->nfds, nh->fd_cap, l.fd, sizeof(struct img_fd),
		  offsetof(struct img_fd, path), offsetof(struct img_fd, payload), KEY_I32, 0 },
		{ &m->files, (const uint8_t *)im->files, h->nfiles, nh->file_cap, l.file, sizeof(struct img_file),
		  offsetof(struct img_file, path), 0, KEY_PATH, 0 },
	};
	uint64_t add[3] = { 0 }, rem[3] = { 0 }, chg[3] = { 0 };
	for (int k = 0; k < 3; k++)
		if ((rc = stage_table(m, im, &tables[k], fresh, &add[k], &rem[k], &chg[k])) != 0)
			return rc;
	st->vma_add += add[0], st->vma_remove += rem[0], st->vma_change += chg[0];
	st->fd_change += add[1] + rem[1] + chg[1];
	st->file_change += add[2] + rem[2] + chg[2];
	return 0;
}

static int emit(struct metalog *m, prosper_pool *pool, uint64_t off, uint64_t len, struct metalog_stats *st)
{
	int rc = prosper_pool_write(pool, m->region, off, m->next + off, len);
	if (!rc) {
		st->records++;
		st->bytes += prosper_stacklog_record_bytes((uint32_t)len);
	}
	return rc;
}

/* emit_changes -- one write per part of m->next that differs from the committed image. */
static int emit_changes(struct metalog *m, prosper_pool *pool, struct metalog_stats *st)
{
	const struct meta_head *nh = (const struct meta_head *)m->next, *oh = (const struct meta_head *)m->img;
	struct layout l = layout_of(nh);
	int rc;
	uint64_t ctx_end = l.thr + (uint64_t)((const struct img_hdr *)(m->next + sizeof *nh))->nthreads * l.thr_bytes;
	if (memcmp(m->next, m->img, ctx_end) && (rc = emit(m, pool, 0, ctx_end, st)) != 0)
		return rc;
	for (uint64_t off = l.vma; off < l.heap;) {
		size_t sz = off < l.fd ? sizeof(struct img_vma) : off < l.file ? sizeof(struct img_fd) : sizeof(struct img_file);
		if (memcmp(m->next + off, m->img + off, sz) && (rc = emit(m, pool, off, sz, st)) != 0)
			return rc;
		off += sz;
	}
	if (nh->strings_used > oh->strings_used)
		return emit(m, pool, l.heap + oh->strings_used, nh->strings_used - oh->strings_used, st);
	return 0;
}

/* place_region -- the region exists with the length of m->next (added or resized). */
static int place_region(struct metalog *m, prosper_pool *pool, struct metalog_stats *st)
{
	if (!m->have_region) {
		int id = prosper_pool_region_add(pool, m->name, PROSPER_KIND_OTHER, PROSPER_REGION_REDO, 0,
						 m->next_len, 0);
		if (id < 0)
			return id;
		m->region = (uint32_t)id;
		m->have_region = 1;
		m->region_len = m->next_len;
		st->bytes += PROSPER_STACKLOG_RECORD; /* the ZERO record of new bytes */
	} else if (m->region_len != m->next_len) {
		int rc = prosper_pool_region_resize(pool, m->region, m->next_len);
		if (rc)
			return rc;
		if (m->next_len > m->region_len)
			st->bytes += PROSPER_STACKLOG_RECORD;
		m->region_len = m->next_len;
	}
	return 0;
}

int metalog_stage(struct metalog *m, int mode, prosper_pool *pool, const void *blob, size_t len,
		  const void **out, size_t *out_len, struct metalog_stats *st)
{
	int rc;
	if (mode == META_REWRITE) {
		if (m->have_region) {
			/* switched from log mode at a resume: the region goes with this epoch */
			if ((rc = prosper_pool_region_remove(pool, m->region)) != 0)
				return rc;
			m->have_region = 0;
		}
		*out = blob;
		*out_len = len;
		st->bytes += len;
		return 0;
	}
	struct img im;
	const char *why;
	if (img_decode(blob, len, &im, &why) != 0)
		return -EINVAL;
	int fresh = m->rebuild || m->pending || !m->img;
	struct metalog_stats c = { 0 };
	rc = fill_next(m, &im, fresh, &c);
	if (rc == -ENOSPC && !fresh) {
		c = (struct metalog_stats){ 0 };
		rc = fill_next(m, &im, fresh = 1, &c);
	}
	if (rc)
		return rc;
	if (fresh) {
		c.rebuilds++;
		if ((rc = place_region(m, pool, &c)) != 0 || (rc = emit(m, pool, 0, m->next_len, &c)) != 0)
			return rc;
	} else if ((rc = emit_changes(m, pool, &c)) != 0) {
		return rc;
	}
	st->bytes += c.bytes, st->records += c.records, st->rebuilds += c.rebuilds;
	st->vma_add += c.vma_add, st->vma_remove += c.vma_remove, st->vma_change += c.vma_change;
	st->fd_change += c.fd_change, st->file_change += c.file_change;
	m->pending = 1;
	m->stub = (struct meta_stub){ .magic = META_STUB_MAGIC, .version = META_VERSION, .region = m->region };
	st->bytes += PROSPER_STACKLOG_HEADER + sizeof m->stub;
	*out = &m->stub;
	*out_len = sizeof m->stub;
	return 0;
}

void metalog_committed(struct metalog *m)
{
	if (!m->pending)
		return;
	m->pending = 0;
	uint8_t *p = m->img;
	m->img = m->next, m->img_len = m->next_len;
	m->next = p, m->next_len = 0;
	table_commit(&m->vmas);
	table_commit(&m->fds);
	table_commit(&m->files);
	m->rebuild = 0;
}

void metalog_attach(struct metalog *m, prosper_pool *pool)
{
	size_t len = 0;
	const void *blob = prosper_pool_blob(pool, &len);
	metalog_attach_stub(m, pool, blob, len);
}

void metalog_attach_stub(struct metalog *m, prosper_pool *pool, const void *blob, size_t len)
{
	m->rebuild = 1;
	m->have_region = 0;
	if (metalog_is_stub(blob, len) && (m->region_len = metalog_stub_region(pool, blob, &m->region)) != 0)
		m->have_region = 1;
}

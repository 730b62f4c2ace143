/* tree_image.c -- the epoch blob of a program of several processes (tree_image.h). */
#include "tree_image.h"
#include <errno.h>
#include <stddef.h>
#include <string.h>

static int pad8(struct img_buf *b)
{
	static const uint8_t zero[8];
	return img_buf_put(b, zero, (8 - b->len % 8) % 8);
}

int tree_begin(struct img_buf *b)
{
	struct tree_hdr h = { .magic = TREE_MAGIC, .version = TREE_VERSION };
	b->len = 0;
	return img_buf_put(b, &h, sizeof h);
}

_Static_assert(offsetof(struct tree_hdr, fg_pgid) == TREE_HDR_V3_BYTES, "a version-3 header is the start of ours");

static struct tree_hdr *hdr(struct img_buf *b) { return (struct tree_hdr *)b->p; }

void tree_set_fg(struct img_buf *b, int32_t pgid) { hdr(b)->fg_pgid = pgid; }

int tree_add_proc(struct img_buf *b, const struct tree_proc *p, const void *blob, size_t len)
{
	struct tree_proc e = *p;
	e.blob_len = (uint32_t)len;
	if (img_buf_put(b, &e, sizeof e) || img_buf_put(b, blob, len) || pad8(b))
		return -ENOMEM;
	hdr(b)->nprocs++;
	return 0;
}

int tree_add_pipe(struct img_buf *b, const struct tree_pipe *p, const char *path, const void *bytes)
{
	struct tree_pipe e = *p;
	e.path_len = path ? (uint32_t)strlen(path) + 1 : 0;
	if (img_buf_put(b, &e, sizeof e) || img_buf_put(b, path, e.path_len) || pad8(b) ||
	    img_buf_put(b, bytes, e.bytes) || pad8(b))
		return -ENOMEM;
	hdr(b)->npipes++;
	return 0;
}

int tree_add_sock(struct img_buf *b, const struct tree_sock *s, const void *bytes)
{
	if (img_buf_put(b, s, sizeof *s) || img_buf_put(b, bytes, s->bytes) || pad8(b))
		return -ENOMEM;
	hdr(b)->nsocks++;
	return 0;
}

int tree_add_shm(struct img_buf *b, const struct tree_shm *s, const struct tree_shm_use *uses, const char *path,
		 const char *links, const void *bytes)
{
	struct tree_shm e = *s;
	e.path_len = path ? (uint32_t)strlen(path) + 1 : 0;
	if (img_buf_put(b, &e, sizeof e) || img_buf_put(b, uses, (size_t)e.nuses * sizeof *uses) ||
	    img_buf_put(b, path, e.path_len) || pad8(b) || img_buf_put(b, links, e.links_len) || pad8(b) ||
	    img_buf_put(b, bytes, e.bytes) || pad8(b))
		return -ENOMEM;
	hdr(b)->nshms++;
	return 0;
}

void tree_end(struct img_buf *b) { hdr(b)->total_bytes = (uint32_t)b->len; }

int tree_is_blob(const void *blob, size_t len)
{
	uint64_t m;
	if (!blob || len < TREE_HDR_V3_BYTES)
		return 0;
	memcpy(&m, blob, sizeof m);
	return m == TREE_MAGIC;
}

/* Past n bytes and their padding to 8, still inside len?  0, or -1. */
static int skip_padded(size_t *at, uint32_t n, size_t len)
{
	*at += ((size_t)n + 7u) & ~(size_t)7u;
	return *at > len ? -1 : 0;
}

/* A record of `size` bytes at *at whose u32 at `count_at` counts the bytes that follow it (then
 * padding): *rec and *bytes point at them, *at past them.  0, or -1 if anything is past len. */
static int take_record(const uint8_t *p, size_t len, size_t *at, size_t size, size_t count_at, const void **rec,
		       const uint8_t **bytes)
{
	uint32_t n;
	if (len - *at < size)
		return -1;
	memcpy(&n, p + *at + count_at, sizeof n);
	*rec = p + *at;
	*at += size;
	if (n > len - *at)
		return -1;
	*bytes = p + *at;
	return skip_padded(at, n, len);
}

/* A name of path_len bytes at *at ("/...", its NUL last; none for 0): *name, *at past its padding.
 * 0, or -1 if it is malformed or past len. */
static int take_name(const uint8_t *p, size_t len, size_t *at, uint32_t path_len, const char **name)
{
	*name = path_len ? (const char *)(p + *at) : NULL;
	if (path_len > len - *at || (path_len && (p[*at] != '/' || memchr(p + *at, 0, path_len) != p + *at + path_len - 1)))
		return -1;
	return skip_padded(at, path_len, len);
}

/* links_len bytes at *at of names ("/...\0" each, at most TREE_SHM_MAX_LINKS): links[] points at
 * them, NULL after the last; *at past their padding.  0, or -1 if malformed or past len. */
static int take_links(const uint8_t *p, size_t len, size_t *at, uint32_t links_len, const char **links)
{
	memset(links, 0, TREE_SHM_MAX_LINKS * sizeof *links);
	if (links_len > len - *at)
		return -1;
	for (uint32_t k = 0, n = 0; k < links_len; n++) {
		const uint8_t *name = p + *at + k, *nul = memchr(name, 0, links_len - k);
		if (n == TREE_SHM_MAX_LINKS || !nul || name[0] != '/')
			return -1;
		links[n] = (const char *)name;
		k += (uint32_t)(nul - name) + 1;
	}
	return skip_padded(at, links_len, len);
}

/* A socket's name (tree_sock): 2..108 bytes, an absolute path with its NUL last, or an abstract
 * name (its first byte 0).  1 if it is not one. */
static int bad_sock_name(const uint8_t *name, uint32_t n)
{
	return n < 2 || n > TREE_SOCK_NAME_MAX || (name[0] != '/' && name[0] != 0) ||
	       (name[0] == '/' && memchr(name, 0, n) != name + n - 1);
}

/* n bytes of messages, each a u32 length and that many bytes, to the last byte.  1 if not. */
static int bad_messages(const uint8_t *q, size_t n)
{
	while (n) {
		uint32_t l;
		if (n < 4)
			return 1;
		memcpy(&l, q, 4);
		if (l > n - 4)
			return 1;
		q += 4 + l, n -= 4 + (size_t)l;
	}
	return 0;
}

int tree_decode(const void *blob, size_t len, struct tree_view *out, const char **why)
{
#define BAD(w) do { *why = (w); return -EINVAL; } while (0)
	const uint8_t *p = blob;
	struct tree_hdr h = { 0 };
	if (!tree_is_blob(blob, len) || ((uintptr_t)blob & 7))
		BAD("not a process-tree checkpoint");
	memcpy(&h, p, TREE_HDR_V3_BYTES);
	if (h.version < 3 || h.version > TREE_VERSION)
		BAD("a process-tree checkpoint of another version");
	size_t hbytes = h.version >= 4 ? sizeof h : TREE_HDR_V3_BYTES;
	if (len < hbytes)
		BAD("a damaged process-tree checkpoint (its header)");
	memcpy(&h, p, hbytes);
	if (h.fg_pgid < 0 || h.reserved)
		BAD("a damaged process-tree checkpoint (its header)");
	if (h.total_bytes != len || h.nprocs == 0 || h.nprocs > TREE_MAX_PROCS || h.npipes > TREE_MAX_PIPES ||
	    h.nsocks > TREE_MAX_PIPES || h.nshms > TREE_MAX_SHMS)
		BAD("a damaged process-tree checkpoint (sizes)");
	out->nprocs = h.nprocs, out->npipes = h.npipes, out->nsocks = h.nsocks, out->nshms = h.nshms;
	out->fg_pgid = h.fg_pgid;
	size_t at = hbytes;
	for (uint32_t i = 0; i < h.nprocs; i++) {
		if (len - at < sizeof(struct tree_proc))
			BAD("a damaged process-tree checkpoint (a process past its end)");
		const struct tree_proc *e = (const void *)(p + at);
		at += sizeof *e;
		if (e->blob_len > len - at || e->pid <= 0)
			BAD("a damaged process-tree checkpoint (a process's image)");
		if (e->exited && (i == 0 || e->blob_len || (e->exited & ~(TREE_EXITED | 0xffffu)) || !(e->exited & TREE_EXITED)))
			BAD("a damaged process-tree checkpoint (an exited process)");
		int parent_known = e->parent == 0; /* the first process, or an orphan (the namespace's init's) */
		for (uint32_t j = 0; j < i; j++) {
			if (out->procs[j]->pid == e->pid)
				BAD("a damaged process-tree checkpoint (a process id twice)");
			parent_known |= out->procs[j]->pid == e->parent;
		}
		if (!parent_known)
			BAD("a damaged process-tree checkpoint (a parent after its child)");
		out->procs[i] = e;
		out->blobs[i] = p + at;
		if (skip_padded(&at, e->blob_len, len))
			BAD("a damaged process-tree checkpoint (padding)");
	}
	for (uint32_t i = 0; i < h.npipes; i++) {
		struct tree_pipe e;
		if (len - at < sizeof e)
			BAD("a damaged process-tree checkpoint (a pipe)");
		memcpy(&e, p + at, sizeof e);
		out->pipes[i] = (const void *)(p + at);
		at += sizeof e;
		if (take_name(p, len, &at, e.path_len, &out->pipe_paths[i]))
			BAD("a damaged process-tree checkpoint (a named pipe's name)");
		if (e.bytes > len - at)
			BAD("a damaged process-tree checkpoint (a pipe's bytes)");
		out->bytes[i] = p + at;
		if (skip_padded(&at, e.bytes, len) || e.bytes > e.capacity)
			BAD("a damaged process-tree checkpoint (a pipe's bytes)");
	}
	for (uint32_t i = 0; i < h.nsocks; i++) {
		const void *rec;
		if (take_record(p, len, &at, sizeof(struct tree_sock), offsetof(struct tree_sock, bytes), &rec, &out->sock_bytes[i]))
			BAD("a damaged process-tree checkpoint (a socket)");
		out->socks[i] = rec;
		const struct tree_sock *k = out->socks[i];
		const uint32_t known = TREE_SOCK_LISTENER | TREE_SOCK_NAME_GONE | TREE_SOCK_DGRAM | TREE_SOCK_SEQPACKET |
				       TREE_SOCK_UNCONNECTED;
		uint32_t type = k->flags & (TREE_SOCK_DGRAM | TREE_SOCK_SEQPACKET);
		uint32_t state = k->flags & (TREE_SOCK_LISTENER | TREE_SOCK_UNCONNECTED);
		if ((k->flags & ~(h.version >= 4 ? known : 0u)) || (type & (type - 1)) || (state & (state - 1)) ||
		    (k->flags & TREE_SOCK_NAME_GONE && !(k->flags & TREE_SOCK_LISTENER)) ||
		    (k->flags & TREE_SOCK_LISTENER && type))
			BAD("a damaged process-tree checkpoint (a socket's flags)");
		if (k->flags & TREE_SOCK_LISTENER) {
			if (bad_sock_name(out->sock_bytes[i], k->bytes) || k->peer > 65535)
				BAD("a damaged process-tree checkpoint (a listening socket's name)");
		} else if (k->flags & TREE_SOCK_UNCONNECTED) {
			if (k->peer || (k->bytes && bad_sock_name(out->sock_bytes[i], k->bytes)))
				BAD("a damaged process-tree checkpoint (an unconnected socket)");
		} else if (k->ino == k->peer) {
			BAD("a damaged process-tree checkpoint (a socket its own peer)");
		} else if (type && bad_messages(out->sock_bytes[i], k->bytes)) {
			BAD("a damaged process-tree checkpoint (a socket's messages)");
		}
	}
	for (uint32_t i = 0; i < h.nshms; i++) {
		struct tree_shm e;
		if (len - at < sizeof e)
			BAD("a damaged process-tree checkpoint (shared memory past its end)");
		memcpy(&e, p + at, sizeof e);
		out->shms[i] = (const void *)(p + at);
		at += sizeof e;
		if (e.nuses > TREE_MAX_SHM_USES || (size_t)e.nuses * sizeof(struct tree_shm_use) > len - at)
			BAD("a damaged process-tree checkpoint (shared memory's mappings)");
		out->shm_uses[i] = (const void *)(p + at);
		at += (size_t)e.nuses * sizeof(struct tree_shm_use);
		if (take_name(p, len, &at, e.path_len, &out->shm_paths[i]))
			BAD("a damaged process-tree checkpoint (shared memory's name)");
		if ((h.version < 5 && e.links_len) || take_links(p, len, &at, e.links_len, out->shm_links[i]))
			BAD("a damaged process-tree checkpoint (shared memory's other names)");
		if (e.bytes > len - at)
			BAD("a damaged process-tree checkpoint (shared memory's bytes)");
		out->shm_bytes[i] = p + at;
		if (skip_padded(&at, e.bytes, len))
			BAD("a damaged process-tree checkpoint (padding)");
		for (uint32_t u = 0; u < e.nuses; u++) {
			int known = 0;
			for (uint32_t k = 0; k < h.nprocs; k++)
				known |= out->procs[k]->pid == out->shm_uses[i][u].pid;
			if (!known)
				BAD("a damaged process-tree checkpoint (shared memory of a process not in it)");
		}
	}
	if (at != len)
		BAD("a damaged process-tree checkpoint (trailing bytes)");
	return 0;
#undef BAD
}

int tree_shm_of(const struct tree_view *v, uint64_t ino)
{
	for (uint32_t i = 0; v && i < v->nshms; i++)
		if (v->shms[i]->ino == ino)
			return (int)i;
	return -1;
}

int tree_shm_named(const struct tree_view *v, const char *path)
{
	for (uint32_t i = 0; v && path && i < v->nshms; i++) {
		if (v->shm_paths[i] && !strcmp(v->shm_paths[i], path))
			return (int)i;
		for (int k = 0; k < TREE_SHM_MAX_LINKS && v->shm_links[i][k]; k++)
			if (!strcmp(v->shm_links[i][k], path))
				return (int)i;
	}
	return -1;
}

int tree_shm_at(const struct tree_view *v, int32_t pid, uint64_t start)
{
	for (uint32_t i = 0; v && i < v->nshms; i++)
		for (uint32_t u = 0; u < v->shms[i]->nuses; u++)
			if (v->shm_uses[i][u].pid == pid && v->shm_uses[i][u].start == start)
				return (int)i;
	return -1;
}

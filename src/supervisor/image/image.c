/* image.c -- building and checking the epoch blob (see image.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "image.h"

int img_buf_put(struct img_buf *b, const void *src, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n)
			cap *= 2;
		uint8_t *p = realloc(b->p, cap);
		if (!p)
			return -ENOMEM;
		b->p = p;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, src, n);
	b->len += n;
	return 0;
}

uint32_t img_str(struct img_buf *strings, const char *s)
{
	uint32_t off = (uint32_t)strings->len;
	return img_buf_put(strings, s, strlen(s) + 1) ? IMG_NONE : off;
}

/* A string reference is valid when it is absent or starts inside the table, which ends in NUL. */
static int str_ok(const struct img *im, uint32_t off)
{
	return off == IMG_NONE || off < im->h->strings_bytes;
}

int img_decode(const void *blob, size_t len, struct img *out, const char **why)
{
	const uint8_t *p = blob;
	const struct img_hdr *h = blob;
	*why = "the checkpoint record is damaged or from another version";
	if (!blob || len < sizeof *h || h->magic != IMG_MAGIC || h->version != IMG_VERSION || h->total_bytes != len ||
	    h->nthreads > 65536 || h->xstate_bytes > (1u << 20))
		return -EINVAL;
	uint64_t need = sizeof *h + (uint64_t)h->xstate_bytes +
			(uint64_t)h->nthreads * (sizeof(struct img_thread) + h->xstate_bytes) +
			(uint64_t)h->nvmas * sizeof(struct img_vma) +
			(uint64_t)h->nfds * sizeof(struct img_fd) + (uint64_t)h->nfiles * sizeof(struct img_file) +
			h->strings_bytes;
	if (need != len || h->strings_bytes == 0 || p[len - 1] != 0)
		return -EINVAL;
	out->h = h;
	out->xstate = p + sizeof *h;
	out->threads = (const void *)(out->xstate + h->xstate_bytes);
	out->thread_xstate = (const uint8_t *)(out->threads + h->nthreads);
	out->vmas = (const void *)(out->thread_xstate + (size_t)h->nthreads * h->xstate_bytes);
	out->fds = (const void *)(out->vmas + h->nvmas);
	out->files = (const void *)(out->fds + h->nfds);
	out->strings = (const char *)(out->files + h->nfiles);
	if (!str_ok(out, h->exe_str) || !str_ok(out, h->cwd_str) || !str_ok(out, h->launch_cwd_str) ||
	    !str_ok(out, h->kernel_str) || !str_ok(out, h->args_str) || h->exe_str == IMG_NONE ||
	    h->args_str == IMG_NONE || h->argc == 0)
		return -EINVAL;
	/* argv and environment: argc + envc strings inside the table */
	uint32_t at = h->args_str;
	for (uint32_t i = 0; i < h->argc + h->envc; i++) {
		if (at >= h->strings_bytes)
			return -EINVAL;
		at += (uint32_t)strlen(out->strings + at) + 1;
	}
	for (uint32_t i = 0; i < h->nvmas; i++)
		if (!str_ok(out, out->vmas[i].path) || out->vmas[i].start >= out->vmas[i].end ||
		    (out->vmas[i].start | out->vmas[i].end) & 4095 || out->vmas[i].perms[7])
			return -EINVAL;
	for (uint32_t i = 0; i < h->nfds; i++)
		if (!str_ok(out, out->fds[i].path) || !str_ok(out, out->fds[i].payload) || out->fds[i].fd < 0 ||
		    out->fds[i].type == 0 || out->fds[i].type >= IMG_FD_NTYPES)
			return -EINVAL;
	for (uint32_t i = 0; i < h->nfiles; i++)
		if (!str_ok(out, out->files[i].path) || out->files[i].path == IMG_NONE ||
		    out->files[i].build_id_len > sizeof out->files[i].build_id)
			return -EINVAL;
	*why = NULL;
	return 0;
}

int img_heap(const struct img *im, const struct img_vma **lowest, uint64_t *end)
{
	*lowest = NULL;
	*end = 0;
	for (uint32_t i = 0; i < im->h->nvmas; i++) {
		const struct img_vma *v = &im->vmas[i];
		const char *name = img_s(im, v->path);
		if (!name || strcmp(name, "[heap]"))
			continue;
		if (!*lowest || v->start < (*lowest)->start)
			*lowest = v;
		if (v->end > *end)
			*end = v->end;
	}
	return *lowest ? 0 : -ENOENT;
}

/* metalog_script.c -- the scripted process of test_metalog.c: its state changed at random epoch
 * by epoch, its blob, and the comparison of two blobs that must describe the same process. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "metalog_script.h"

uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1Dull;
}

static void path_of(int p, char *out, size_t cap)
{
	snprintf(out, cap, p < 8 ? "/usr/lib/x86_64-linux-gnu/lib%d.so" : "/data/run/output-file-%d.txt", p);
}

static void add_vma(struct pstate *ps, uint64_t *rng)
{
	if (ps->nvmas == MAXV)
		return;
	uint64_t start;
	int at, clash;
	do {
		start = 0x400000ull + (rnd(rng) % 4000) * 0x10000;
		clash = 0;
		for (at = 0; at < ps->nvmas && ps->vmas[at].start <= start; at++)
			clash |= ps->vmas[at].start == start;
	} while (clash);
	memmove(&ps->vmas[at + 1], &ps->vmas[at], (size_t)(ps->nvmas - at) * sizeof ps->vmas[0]);
	struct pvma *v = &ps->vmas[at];
	*v = (struct pvma){ .start = start, .end = start + 4096 * (1 + rnd(rng) % 15), .region = (uint32_t)(rnd(rng) % 50),
			    .path = rnd(rng) % 3 ? -1 : (int)(rnd(rng) % 40) };
	memcpy(v->perms, rnd(rng) % 2 ? "rw-p" : "r--p", 5);
	v->region = rnd(rng) % 4 ? v->region : IMG_NONE;
	ps->nvmas++;
}

/* one random change of the process */
static void change(struct pstate *ps, uint64_t *rng)
{
	uint64_t k = rnd(rng) % 12;
	if (k < 3 || ps->nvmas < 3) {
		add_vma(ps, rng);
	} else if (k < 5) {
		int i = (int)(rnd(rng) % (uint64_t)ps->nvmas);
		memmove(&ps->vmas[i], &ps->vmas[i + 1], (size_t)(ps->nvmas - i - 1) * sizeof ps->vmas[0]);
		ps->nvmas--;
	} else if (k < 7) {
		struct pvma *v = &ps->vmas[rnd(rng) % (uint64_t)ps->nvmas];
		v->end = v->start + 4096 * (1 + rnd(rng) % 15);
		v->perms[0] = rnd(rng) % 2 ? 'r' : '-';
	} else if (k == 7 && ps->nfds < MAXF) {
		int fd = 3;
		for (int i = 0; i < ps->nfds; i++)
			if (ps->fds[i].fd >= fd)
				fd = ps->fds[i].fd + 1;
		int epoll = rnd(rng) % 3 == 0; /* one with a payload string */
		ps->fds[ps->nfds++] = (struct pfd){ .fd = fd, .flags = 0x241, .type = epoll ? IMG_FD_EPOLL : IMG_FD_FILE,
						    .path = 8 + (int)(rnd(rng) % 400), .payload = epoll ? (int)(rnd(rng) % 50) : -1 };
	} else if (k == 8 && ps->nfds > 0) {
		int i = (int)(rnd(rng) % (uint64_t)ps->nfds);
		ps->fds[i] = ps->fds[--ps->nfds];
	} else if (k == 9 && ps->nfds > 0) {
		struct pfd *f = &ps->fds[rnd(rng) % (uint64_t)ps->nfds];
		f->pos += rnd(rng) % 5000, f->size = f->pos;
		if (f->payload >= 0)
			f->payload = (f->payload + 1) % 50; /* its watches changed */
	} else if (k == 10) {
		int p = (int)(rnd(rng) % 8), have = 0;
		for (int i = 0; i < ps->nfiles; i++)
			if (ps->files[i] == p)
				ps->files[i] = ps->files[--ps->nfiles], have = 1;
		if (!have && ps->nfiles < MAXF)
			ps->files[ps->nfiles++] = p;
	} else {
		ps->nthreads = (int)(rnd(rng) % (MAXT + 1));
		ps->cwd = (int)(rnd(rng) % 3);
	}
}

void next_state(struct pstate *ps, uint64_t *rng)
{
	/* registers change every interval; a few checkpoints change much of the map */
	ps->regs.rip = rnd(rng), ps->regs.rsp = rnd(rng) & ~15ull, ps->regs.rax = rnd(rng);
	ps->xstate[rnd(rng) % XB] = (uint8_t)rnd(rng);
	for (int t = 0; t < ps->nthreads; t++)
		ps->thr[t].regs.rip = rnd(rng), ps->thr[t].tid = 100 + t, ps->txs[t][rnd(rng) % XB] = (uint8_t)rnd(rng);
	int n = rnd(rng) % 6 == 0 ? 25 : (int)(rnd(rng) % 4);
	for (int i = 0; i < n; i++)
		change(ps, rng);
}

/* blob_of -- the whole image.h blob of ps, as build_blob makes it */
void blob_of(const struct pstate *ps, struct img_buf *out)
{
	struct img_buf str = { 0 }, v = { 0 }, f = { 0 }, fi = { 0 };
	char p[128];
	struct img_hdr h = { .magic = IMG_MAGIC, .version = IMG_VERSION, .regs = ps->regs, .xstate_bytes = XB,
			     .nthreads = (uint32_t)ps->nthreads, .umask = 022, .start_brk = 0x555555559000ull,
			     .argc = 2, .envc = 2, .tid_offset = 720 };
	h.exe_str = img_str(&str, "/usr/bin/prog");
	static const char *cwds[] = { "/srv/job", "/", "/srv/job/a/rather/long/directory/name" };
	h.cwd_str = img_str(&str, cwds[ps->cwd]);
	h.launch_cwd_str = img_str(&str, "/srv/job");
	h.kernel_str = img_str(&str, "6.1.0-test");
	h.args_str = img_str(&str, "/usr/bin/prog");
	img_str(&str, "--flag");
	img_str(&str, "HOME=/srv/job");
	img_str(&str, "PATH=/usr/bin:/bin");
	for (int i = 0; i < ps->nvmas; i++) {
		const struct pvma *a = &ps->vmas[i];
		struct img_vma iv = { .start = a->start, .end = a->end, .offset = a->offset, .region = a->region, .path = IMG_NONE };
		if (a->path >= 0)
			path_of(a->path, p, sizeof p), iv.path = img_str(&str, p);
		memcpy(iv.perms, a->perms, 5);
		img_buf_put(&v, &iv, sizeof iv);
	}
	for (int i = 0; i < ps->nfds; i++) {
		const struct pfd *a = &ps->fds[i];
		path_of(a->path, p, sizeof p);
		struct img_fd e = { .fd = a->fd, .flags = a->flags, .pos = a->pos, .size = a->size, .type = a->type,
				    .path = img_str(&str, p), .payload = IMG_NONE };
		if (a->payload >= 0) {
			char w[64];
			snprintf(w, sizeof w, " %d:19:%x", a->payload, 1000 + a->payload);
			e.payload = img_str(&str, w);
		}
		img_buf_put(&f, &e, sizeof e);
	}
	for (int i = 0; i < ps->nfiles; i++) {
		path_of(ps->files[i], p, sizeof p);
		struct img_file e = { .path = img_str(&str, p), .size = 1000u + ps->files[i], .ino = 7, .build_id_len = 20 };
		img_buf_put(&fi, &e, sizeof e);
	}
	h.nvmas = (uint32_t)ps->nvmas, h.nfds = (uint32_t)ps->nfds, h.nfiles = (uint32_t)ps->nfiles;
	h.strings_bytes = (uint32_t)str.len;
	h.total_bytes = (uint32_t)(sizeof h + XB + (size_t)ps->nthreads * (sizeof(struct img_thread) + XB) + v.len + f.len +
				   fi.len + str.len);
	out->len = 0;
	img_buf_put(out, &h, sizeof h);
	img_buf_put(out, ps->xstate, XB);
	img_buf_put(out, ps->thr, (size_t)ps->nthreads * sizeof ps->thr[0]);
	for (int t = 0; t < ps->nthreads; t++)
		img_buf_put(out, ps->txs[t], XB);
	img_buf_put(out, v.p, v.len);
	img_buf_put(out, f.p, f.len);
	img_buf_put(out, fi.p, fi.len);
	img_buf_put(out, str.p, str.len);
	free(str.p), free(v.p), free(f.p), free(fi.p);
}

/* ---------------------------------------------------------------- comparing two images */

static int strs_eq(const struct img *a, uint32_t x, const struct img *b, uint32_t y)
{
	const char *s = img_s(a, x), *t = img_s(b, y);
	return (!s && !t) || (s && t && !strcmp(s, t));
}

static const struct img *sort_img;
static int fd_order(const void *x, const void *y) { return ((const struct img_fd *)x)->fd - ((const struct img_fd *)y)->fd; }
static int file_order(const void *x, const void *y)
{
	return strcmp(img_s(sort_img, ((const struct img_file *)x)->path), img_s(sort_img, ((const struct img_file *)y)->path));
}

/* same_process -- a and b describe the same process: header fields, strings by value, VMAs in
 * order, fds by number, files by path (their order in a blob carries no meaning). */
int same_process(const void *ab, size_t al, const void *bb, size_t bl, char *why, size_t whylen)
{
	struct img a, b;
	const char *w;
	if (img_decode(ab, al, &a, &w) || img_decode(bb, bl, &b, &w)) {
		snprintf(why, whylen, "a blob does not decode");
		return -1;
	}
	const struct img_hdr *x = a.h, *y = b.h;
	if (memcmp(&x->regs, &y->regs, sizeof x->regs) || x->xstate_bytes != y->xstate_bytes || x->nthreads != y->nthreads ||
	    x->nvmas != y->nvmas || x->nfds != y->nfds || x->nfiles != y->nfiles || x->umask != y->umask ||
	    x->start_brk != y->start_brk || x->argc != y->argc || x->envc != y->envc || x->tid_offset != y->tid_offset ||
	    memcmp(a.xstate, b.xstate, x->xstate_bytes) || !strs_eq(&a, x->exe_str, &b, y->exe_str) ||
	    !strs_eq(&a, x->cwd_str, &b, y->cwd_str) || !strs_eq(&a, x->launch_cwd_str, &b, y->launch_cwd_str) ||
	    !strs_eq(&a, x->kernel_str, &b, y->kernel_str)) {
		snprintf(why, whylen, "header, registers or counts differ (vmas %u/%u fds %u/%u files %u/%u)", x->nvmas,
			 y->nvmas, x->nfds, y->nfds, x->nfiles, y->nfiles);
		return -1;
	}
	const char *sa = img_s(&a, x->args_str), *sb = img_s(&b, y->args_str);
	for (uint32_t i = 0; i < x->argc + x->envc; i++, sa += strlen(sa) + 1, sb += strlen(sb) + 1)
		if (strcmp(sa, sb))
			return snprintf(why, whylen, "argument %u differs", i), -1;
	if (memcmp(a.threads, b.threads, x->nthreads * sizeof *a.threads) ||
	    memcmp(a.thread_xstate, b.thread_xstate, (size_t)x->nthreads * x->xstate_bytes))
		return snprintf(why, whylen, "threads differ"), -1;
	for (uint32_t i = 0; i < x->nvmas; i++) {
		struct img_vma p = a.vmas[i], q = b.vmas[i];
		if (!strs_eq(&a, p.path, &b, q.path))
			return snprintf(why, whylen, "vma %u: path differs", i), -1;
		p.path = q.path = 0;
		if (memcmp(&p, &q, sizeof p))
			return snprintf(why, whylen, "vma %u differs", i), -1;
	}
	struct img_fd fa[MAXF], fb[MAXF];
	struct img_file ga[MAXF], gb[MAXF];
	memcpy(fa, a.fds, x->nfds * sizeof *fa), memcpy(fb, b.fds, y->nfds * sizeof *fb);
	memcpy(ga, a.files, x->nfiles * sizeof *ga), memcpy(gb, b.files, y->nfiles * sizeof *gb);
	qsort(fa, x->nfds, sizeof *fa, fd_order), qsort(fb, y->nfds, sizeof *fb, fd_order);
	sort_img = &a, qsort(ga, x->nfiles, sizeof *ga, file_order);
	sort_img = &b, qsort(gb, y->nfiles, sizeof *gb, file_order);
	for (uint32_t i = 0; i < x->nfds; i++) {
		if (!strs_eq(&a, fa[i].path, &b, fb[i].path))
			return snprintf(why, whylen, "fd %d: path differs", fa[i].fd), -1;
		if (!strs_eq(&a, fa[i].payload, &b, fb[i].payload))
			return snprintf(why, whylen, "fd %d: payload differs", fa[i].fd), -1;
		fa[i].path = fb[i].path = fa[i].payload = fb[i].payload = 0;
		if (memcmp(&fa[i], &fb[i], sizeof fa[i]))
			return snprintf(why, whylen, "fd %d differs", fa[i].fd), -1;
	}
	for (uint32_t i = 0; i < x->nfiles; i++) {
		if (!strs_eq(&a, ga[i].path, &b, gb[i].path))
			return snprintf(why, whylen, "mapped file %u differs", i), -1;
		ga[i].path = gb[i].path = 0;
		if (memcmp(&ga[i], &gb[i], sizeof ga[i]))
			return snprintf(why, whylen, "mapped file %u: identity differs", i), -1;
	}
	return 0;
}

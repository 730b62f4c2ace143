/* capture.c -- one checkpoint of a stopped child = one pool epoch (DESIGN D3).
 *
 * Order inside a stop: registers -> map (regions follow it: added, resized, removed) -> dirty
 * memory of every saved mapping -> fds, cwd, signal mask -> blob -> commit.
 *
 * What is saved: every private, readable mapping that is not code: writable ones, anonymous
 * ones, and read-only file mappings that hold private pages (relocated data made read-only by
 * the loader).  Code and untouched read-only file data are rebuilt from their files at resume,
 * whose identity (size, mtime, inode, build-id) the epoch records.
 *
 * Invariants
 *   - A new or replaced mapping is write-protected BEFORE it is copied, so a write after the copy
 *     is reported by the next checkpoint.
 *   - The stack is SP-aware: below SP - 128 (the red zone) nothing is live, nothing is copied.
 *   - With --verify (the soundness oracle), after the commit and while the child is still stopped,
 *     every saved mapping read back from the pool equals the child's memory.
 */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <unistd.h>
#include "sup.h"

static int read_child(struct sup *s, uint64_t addr, size_t len)
{
	if (len > s->buf_cap) {
		free(s->buf);
		s->buf_cap = len;
		s->buf = malloc(len);
		if (!s->buf) {
			s->buf_cap = 0;
			return -ENOMEM;
		}
	}
	struct iovec local = { s->buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t got = process_vm_readv(s->pid, &local, 1, &remote, 1, 0);
	return got == (ssize_t)len ? 0 : -EIO;
}

const struct known_file *sup_known_file(struct sup *s, const char *path)
{
	for (int i = 0; i < s->nfiles; i++)
		if (!strcmp(s->files[i].path, path))
			return &s->files[i];
	if (s->nfiles == MAX_FILES)
		return NULL;
	struct known_file *k = &s->files[s->nfiles];
	snprintf(k->path, sizeof k->path, "%s", path);
	if (file_identity(path, &k->id) != 0)
		return NULL;
	s->nfiles++;
	return k;
}

/* ------------------------------------------------------------------ dirty memory */

struct diff_ctx {
	struct sup *s;
	struct vma *v;
	uint64_t base; /* region offset of the compared buffer */
	int rc;
	uint64_t bytes;
};

static void write_changed(void *vctx, uint64_t off, uint64_t len)
{
	struct diff_ctx *d = vctx;
	if (d->rc)
		return;
	d->rc = prosper_pool_write(d->s->pool, (uint32_t)d->v->region, d->base + off, d->s->buf + off, len);
	d->bytes += len;
}

/* copy_range -- child bytes [a, b) of v into its region.  `whole`: a new mapping, copied as it
 * is; otherwise candidate pages, filtered by the diff granularity of the region's tracker. */
static int copy_range(struct sup *s, struct vma *v, uint64_t a, uint64_t b, int whole)
{
	int stack = vma_is_stack(v);
	if (stack && !whole) {
		uint64_t lo = s->sp - 128;
		if (lo > a)
			a = lo;
		if (a >= b)
			return 0;
	}
	int rc = read_child(s, a, b - a);
	if (rc)
		return rc;
	int mode = stack ? s->stack_mode : s->heap_mode;
	uint32_t g = stack ? s->stack_gran : s->heap_gran;
	uint64_t n = 0;
	if (whole || mode != TRACK_MODE_DIFF) {
		rc = prosper_pool_write(s->pool, (uint32_t)v->region, a - v->start, s->buf, b - a);
		n = b - a;
	} else {
		if (b - a > s->old_cap) {
			free(s->old);
			s->old_cap = b - a;
			s->old = malloc(s->old_cap);
			if (!s->old) {
				s->old_cap = 0;
				return -ENOMEM;
			}
		}
		rc = prosper_pool_region_read(s->pool, (uint32_t)v->region, a - v->start, s->old, b - a);
		if (rc)
			return rc;
		struct diff_ctx d = { s, v, a - v->start, 0, 0 };
		prosper_track_diff(s->old, s->buf, b - a, g, write_changed, &d);
		rc = d.rc;
		n = d.bytes;
	}
	if (!rc) {
		s->bytes += n;
		if (!whole) {
			s->page_bytes += b - a;
			if (stack) {
				s->stack_bytes += n;
				s->stack_page_bytes += b - a;
			}
		}
	}
	return rc;
}

static struct vma *find_saved(struct sup *s, uint64_t start)
{
	for (int i = 0; i < s->nvmas; i++)
		if (s->vmas[i].start == start)
			return &s->vmas[i];
	return NULL;
}

/* Is this mapping's content saved?  Read-only file data only if it holds private pages; a
 * mapping seen unchanged at the previous stop keeps its earlier answer. */
static int should_save(struct sup *s, const struct vma *v, const struct vma *prev, int nprev)
{
	if (!vma_is_saved(v))
		return 0;
	if (v->perms[1] == 'w' || v->path[0] != '/')
		return 1;
	for (int i = 0; i < nprev; i++)
		if (prev[i].start == v->start && prev[i].end == v->end && !strcmp(prev[i].perms, v->perms) &&
		    prev[i].offset == v->offset && !strcmp(prev[i].path, v->path))
			return prev[i].seen;
	return prosper_track_has_private_pages(&s->track, v->start, v->end) > 0;
}

static int region_kind(const struct vma *v)
{
	return vma_is_stack(v) ? PROSPER_KIND_STACK : vma_is_heap(v) ? PROSPER_KIND_HEAP
	       : v->path[0] == '/'                       ? PROSPER_KIND_DATA
							 : PROSPER_KIND_ANON;
}

/* Regions follow the map: new mappings are added (tracked from now on), changed ones resized,
 * vanished ones removed.  On return s->now[i].seen says whether mapping i is saved. */
static int follow_map(struct sup *s, int n, const struct vma *prev, int nprev)
{
	int rc;
	for (int i = 0; i < s->nvmas; i++)
		s->vmas[i].seen = 0;
	for (int i = 0; i < n; i++) {
		struct vma *nv = &s->now[i];
		nv->seen = should_save(s, nv, prev, nprev);
		if (!nv->seen)
			continue;
		struct vma *old = find_saved(s, nv->start);
		if (old) {
			/* Same start, but maybe a new mapping (munmap + mmap between two stops): its pages
			 * are not tracked and its contents are new; it is then re-added below. */
			uint64_t common_end = old->end < nv->end ? old->end : nv->end;
			int covered = prosper_track_covers(&s->track, nv->start, common_end);
			if (covered < 0)
				return covered;
			if (!covered) {
				if ((rc = prosper_pool_region_remove(s->pool, (uint32_t)old->region)) != 0)
					return rc;
				*old = s->vmas[--s->nvmas];
				old = NULL;
			}
		}
		if (old) {
			old->seen = 1;
			snprintf(old->perms, sizeof old->perms, "%s", nv->perms);
			if (old->end != nv->end) {
				if ((rc = prosper_pool_region_resize(s->pool, (uint32_t)old->region, nv->end - nv->start)) != 0)
					return rc;
				if (nv->end > old->end) {
					if ((rc = prosper_track_add(&s->track, old->end, nv->end)) != 0)
						return rc;
					if ((rc = copy_range(s, old, old->end, nv->end, 1)) != 0)
						return rc;
				}
				old->end = nv->end;
			}
			continue;
		}
		if (s->nvmas == MAX_VMAS)
			return -ENOSPC;
		char name[PROSPER_REGION_NAME_MAX];
		snprintf(name, sizeof name, "m%llx", (unsigned long long)nv->start);
		int id = prosper_pool_region_add(s->pool, name, (uint32_t)region_kind(nv), PROSPER_REGION_BUFFERED,
						 nv->start, nv->end - nv->start, 3);
		if (id < 0)
			return id;
		struct vma *v = &s->vmas[s->nvmas++];
		*v = *nv;
		v->region = id;
		v->seen = 1;
		if ((rc = prosper_track_add(&s->track, v->start, v->end)) != 0)
			return rc;
		if ((rc = copy_range(s, v, v->start, v->end, 1)) != 0)
			return rc;
	}
	for (int i = 0; i < s->nvmas; i++) {
		struct vma *v = &s->vmas[i];
		if (v->seen)
			continue;
		if ((rc = prosper_pool_region_remove(s->pool, (uint32_t)v->region)) != 0)
			return rc;
		s->vmas[i] = s->vmas[--s->nvmas];
		i--;
	}
	return 0;
}

static int copy_dirty(struct sup *s)
{
	int rc;
	for (int i = 0; i < s->nvmas; i++) {
		struct vma *v = &s->vmas[i];
		int mode = vma_is_stack(v) ? s->stack_mode : s->heap_mode;
		long k;
		if (mode == TRACK_MODE_FULL) {
			s->ranges[0] = (struct prosper_range){ v->start, v->end };
			k = 1;
		} else if ((k = prosper_track_collect(&s->track, v->start, v->end, s->ranges, MAX_RANGES)) < 0) {
			return (int)k;
		}
		for (long j = 0; j < k; j++)
			if ((rc = copy_range(s, v, s->ranges[j].start, s->ranges[j].end, 0)) != 0)
				return rc;
	}
	return 0;
}

/* ------------------------------------------------------------------ the blob */

static void warn_once(struct sup *s, int fd, const char *what, const char *path)
{
	if (fd < 0 || fd >= MAX_FDS || (s->warned_fds[fd / 64] >> (fd % 64) & 1))
		return;
	s->warned_fds[fd / 64] |= 1ull << (fd % 64);
	fprintf(stderr, "prosper: warning: fd %d (%s) %s\n", fd, path, what);
}

static int build_blob(struct sup *s, struct img_buf *out, const struct user_regs_struct *regs, const void *xstate,
		      size_t xlen, int nmaps)
{
	struct img_buf strings = { 0 }, vmas = { 0 }, fds = { 0 }, files = { 0 };
	struct img_hdr h = { .magic = IMG_MAGIC, .version = IMG_VERSION, .regs = *regs, .xstate_bytes = (uint32_t)xlen,
			     .tid_offset = s->tid_offset, .xcr0 = cpu_xcr0(), .cwd_str = IMG_NONE, .kernel_str = IMG_NONE };
	int rc = 0;
	struct proc_status ps;
	if ((rc = proc_status(s->pid, &ps)) != 0)
		goto out;
	h.sigblk = ps.sigblk;
	h.umask = ps.umask;
	h.start_brk = ps.start_brk;
	h.exe_str = img_str(&strings, s->exe);
	h.launch_cwd_str = img_str(&strings, s->launch_cwd);
	char p[64], cwd[VMA_PATH_MAX];
	snprintf(p, sizeof p, "/proc/%d/cwd", (int)s->pid);
	ssize_t l = readlink(p, cwd, sizeof cwd - 1);
	if (l > 0) {
		cwd[l] = 0;
		h.cwd_str = img_str(&strings, cwd);
	}
	FILE *f = fopen("/proc/sys/kernel/osrelease", "re");
	if (f) {
		char rel[128] = "";
		if (fgets(rel, sizeof rel, f)) {
			rel[strcspn(rel, "\n")] = 0;
			h.kernel_str = img_str(&strings, rel);
		}
		fclose(f);
	}
	h.args_str = (uint32_t)strings.len;
	h.argc = (uint32_t)s->argc;
	h.envc = (uint32_t)s->envc;
	for (int i = 0; i < s->argc; i++)
		img_str(&strings, s->argv[i]);
	for (int i = 0; i < s->envc; i++)
		img_str(&strings, s->envp[i]);
	/* the map: saved mappings name their region; the rest are rebuilt */
	const struct known_file *exe = sup_known_file(s, s->exe);
	for (int i = 0; i < nmaps; i++) {
		const struct vma *v = &s->now[i];
		if (vma_is_special(v) && !strcmp(v->path, "[vdso]"))
			h.vdso = v->start;
		struct img_vma iv = { .start = v->start, .end = v->end, .offset = v->offset, .region = IMG_NONE,
				      .path = v->path[0] ? img_str(&strings, v->path) : IMG_NONE };
		memcpy(iv.perms, v->perms, 4);
		if (v->seen) {
			const struct vma *sv = find_saved(s, v->start);
			iv.region = sv ? (uint32_t)sv->region : IMG_NONE;
		}
		if (v->perms[3] == 's' && !vma_is_special(v) && !s->warned_shared) {
			s->warned_shared = 1;
			fprintf(stderr, "prosper: warning: shared mapping %s is not persisted\n", v->path[0] ? v->path : "(anonymous)");
		}
		if (v->path[0] == '/')
			sup_known_file(s, v->path);
		img_buf_put(&vmas, &iv, sizeof iv);
	}
	h.nvmas = (uint32_t)(vmas.len / sizeof(struct img_vma));
	/* files: the executable and every file mapped now */
	h.nfiles = 0;
	for (int i = 0; i < s->nfiles; i++) {
		int mapped = &s->files[i] == exe;
		for (int j = 0; j < nmaps && !mapped; j++)
			mapped = !strcmp(s->now[j].path, s->files[i].path);
		if (!mapped)
			continue;
		h.nfiles++;
		struct img_file fi = { .path = img_str(&strings, s->files[i].path), .size = s->files[i].id.size,
				       .mtime_ns = s->files[i].id.mtime_ns, .ino = s->files[i].id.ino,
				       .dev = s->files[i].id.dev, .build_id_len = s->files[i].id.build_id_len };
		memcpy(fi.build_id, s->files[i].id.build_id, sizeof fi.build_id);
		img_buf_put(&files, &fi, sizeof fi);
	}
	int nf = 0;
	if ((rc = proc_fds(s->pid, s->fds, MAX_FDS, &nf)) != 0)
		goto out;
	for (int i = 0; i < nf; i++) {
		const struct fd_info *fi = &s->fds[i];
		struct img_fd e = { .fd = fi->fd, .flags = fi->flags, .pos = fi->pos, .size = fi->size,
				    .type = (uint32_t)fi->type, .path = img_str(&strings, fi->path) };
		if (fi->type == IMG_FD_OTHER && fi->fd > 2)
			warn_once(s, fi->fd, "is not persisted: a resumed program finds it closed", fi->path);
		if (fi->type == IMG_FD_FILE && strstr(fi->path, " (deleted)"))
			warn_once(s, fi->fd, "is a deleted file: the program cannot be resumed while it is open", fi->path);
		img_buf_put(&fds, &e, sizeof e);
	}
	h.nfds = (uint32_t)nf;
	h.strings_bytes = (uint32_t)strings.len;
	h.total_bytes = (uint32_t)(sizeof h + xlen + vmas.len + fds.len + files.len + strings.len);
	out->len = 0;
	if (img_buf_put(out, &h, sizeof h) || img_buf_put(out, xstate, xlen) || img_buf_put(out, vmas.p, vmas.len) ||
	    img_buf_put(out, fds.p, fds.len) || img_buf_put(out, files.p, files.len) ||
	    img_buf_put(out, strings.p, strings.len))
		rc = -ENOMEM;
out:
	free(strings.p);
	free(vmas.p);
	free(fds.p);
	free(files.p);
	return rc;
}

/* ------------------------------------------------------------------ one checkpoint */

static int verify(struct sup *s)
{
	for (int i = 0; i < s->nvmas; i++) {
		struct vma *v = &s->vmas[i];
		uint64_t from = vma_is_stack(v) && s->sp - 128 > v->start ? s->sp - 128 - v->start : 0;
		size_t len = v->end - v->start - from;
		uint8_t *img = malloc(len);
		if (!img || prosper_pool_region_read(s->pool, (uint32_t)v->region, from, img, len) ||
		    read_child(s, v->start + from, len)) {
			free(img);
			return -EIO;
		}
		for (size_t b = 0; b < len; b++)
			s->mismatches += img[b] != s->buf[b];
		s->verified_bytes += len;
		free(img);
	}
	return 0;
}

int sup_checkpoint(struct sup *s)
{
	static struct vma prev[MAX_VMAS];
	static int nprev;
	static uint8_t xstate[16384];
	static struct img_buf blob;
	struct user_regs_struct regs;
	struct iovec xs = { xstate, sizeof xstate };
	if (ptrace(PTRACE_GETREGS, s->pid, 0, &regs) != 0)
		return -errno;
	if (ptrace(PTRACE_GETREGSET, s->pid, (void *)NT_X86_XSTATE, &xs) != 0)
		return -errno;
	s->sp = regs.rsp;
	if (!s->checkpoints) {
		/* glibc caches the thread id in its TCB; resume rewrites it if we find it here */
		uint32_t tid = 0;
		struct iovec l = { &tid, 4 }, r = { (void *)(uintptr_t)(regs.fs_base + 720), 4 };
		if (process_vm_readv(s->pid, &l, 1, &r, 1, 0) == 4 && tid == (uint32_t)s->pid)
			s->tid_offset = 720;
	}
	int n = 0, rc = proc_maps(s->pid, s->now, MAX_VMAS, &n);
	if (rc)
		return rc;
	if ((rc = follow_map(s, n, prev, nprev)) != 0)
		return rc;
	if ((rc = copy_dirty(s)) != 0)
		return rc;
	if ((rc = build_blob(s, &blob, &regs, xstate, xs.iov_len, n)) != 0)
		return rc;
	memcpy(prev, s->now, (size_t)n * sizeof *prev);
	nprev = n;
	if (s->commit_delay_us)
		usleep((useconds_t)s->commit_delay_us);
	if ((rc = prosper_pool_commit(s->pool, blob.p, blob.len)) != 0)
		return rc;
	s->checkpoints++;
	return s->verify ? verify(s) : 0;
}

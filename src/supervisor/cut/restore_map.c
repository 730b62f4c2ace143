/* restore_map.c -- a relaunched process's map made the checkpoint's again, and its memory filled
 * from the pool (steps 2 and 3 of restore.c's list). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include "fillcopy.h"
#include "restore_internal.h"
#include "sharedmem.h"
#include "tree_image.h"

static int same_vma(const struct img *im, const struct img_vma *a, const struct vma *b)
{
	const char *path = img_s(im, a->path);
	return a->start == b->start && a->end == b->end && !strncmp(a->perms, b->perms, 4) &&
	       a->offset == b->offset && !strcmp(path ? path : "", b->path);
}

static int is_named(const struct img *im, const struct img_vma *v, const char *name)
{
	const char *p = img_s(im, v->path);
	return p && !strcmp(p, name);
}

static int img_special(const struct img *im, const struct img_vma *v)
{
	return is_named(im, v, "[vvar]") || is_named(im, v, "[vdso]") || is_named(im, v, "[vsyscall]") ||
	       is_named(im, v, "[vvar_vclock]");
}

static int prot_of(const char *perms)
{
	return (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) | (perms[2] == 'x' ? PROT_EXEC : 0);
}

int restore_rebuild_map(struct sup *s, struct rctx *r, const struct img *im, struct vma *fresh, int nf)
{
	char *why = r->why;
	size_t whylen = r->whylen;
	/* kernel mappings must be where they were */
	for (uint32_t i = 0; i < im->h->nvmas; i++) {
		if (!img_special(im, &im->vmas[i]))
			continue;
		int found = 0;
		for (int j = 0; j < nf; j++)
			found |= same_vma(im, &im->vmas[i], &fresh[j]);
		if (!found)
			WHY_FAIL("the kernel's %s is not where it was at the checkpoint", img_s(im, im->vmas[i].path));
	}
	/* the gate must survive: the mapping holding it is in the checkpoint unchanged */
	for (int j = 0; j < nf; j++) {
		if (fresh[j].start > r->j.in.gate || r->j.in.gate >= fresh[j].end)
			continue;
		int kept = 0, near = -1;
		for (uint32_t i = 0; i < im->h->nvmas; i++) {
			kept |= same_vma(im, &im->vmas[i], &fresh[j]);
			if (im->vmas[i].start <= r->j.in.gate && r->j.in.gate < im->vmas[i].end)
				near = (int)i;
		}
		if (!kept) {
			/* say which mapping differs: the next occurrence is data, not a guess */
			const struct img_vma *c = near >= 0 ? &im->vmas[near] : NULL;
			const char *cp = c ? img_s(im, c->path) : NULL;
			if (!c)
				WHY_FAIL("the preloaded libraries differ from the checkpoint's (now %#llx-%#llx %.4s %s +%#llx; "
				     "the checkpoint has nothing mapped there)", (unsigned long long)fresh[j].start,
				     (unsigned long long)fresh[j].end, fresh[j].perms, fresh[j].path,
				     (unsigned long long)fresh[j].offset);
			WHY_FAIL("the preloaded libraries differ from the checkpoint's (now %#llx-%#llx %.4s %s +%#llx; "
			     "checkpoint %#llx-%#llx %.4s %s +%#llx)", (unsigned long long)fresh[j].start,
			     (unsigned long long)fresh[j].end, fresh[j].perms, fresh[j].path, (unsigned long long)fresh[j].offset,
			     (unsigned long long)c->start, (unsigned long long)c->end, c->perms, cp ? cp : "",
			     (unsigned long long)c->offset);
		}
	}
	if (s->start_brk != im->h->start_brk)
		WHY_FAIL("the program break starts elsewhere than at the checkpoint");
	/* 1. unmap what the checkpoint does not have exactly */
	for (int j = 0; j < nf; j++) {
		struct vma *f = &fresh[j];
		if (vma_is_special(f) || vma_is_stack(f) || vma_is_heap(f) || f->start == r->j.scratch)
			continue;
		int kept = 0;
		for (uint32_t i = 0; i < im->h->nvmas && !kept; i++)
			kept = same_vma(im, &im->vmas[i], f);
		f->seen = kept;
		if (!kept && sys(r, SYS_munmap, (long)f->start, (long)(f->end - f->start), 0, 0, 0, 0) != 0)
			WHY_FAIL("cannot unmap %#llx", (unsigned long long)f->start);
	}
	/* 2. the break */
	uint64_t brk_to = im->h->start_brk, heap_end;
	const struct img_vma *stack = NULL, *heap = NULL;
	if (img_heap(im, &heap, &heap_end) == 0 && heap_end > brk_to)
		brk_to = heap_end;
	for (uint32_t i = 0; i < im->h->nvmas; i++)
		if (is_named(im, &im->vmas[i], "[stack]"))
			stack = &im->vmas[i];
	long got = sys(r, SYS_brk, (long)brk_to, 0, 0, 0, 0, 0);
	if ((uint64_t)got != brk_to)
		WHY_FAIL("cannot restore the program break (%#llx)", (unsigned long long)brk_to);
	/* The kernel shows an anonymous mapping just below the break (the executable's .bss past its
	 * file) merged into [heap]; brk() only creates the part from start_brk up. */
	if (heap && heap->start < im->h->start_brk &&
	    (uint64_t)sys(r, SYS_mmap, (long)heap->start, (long)(im->h->start_brk - heap->start), prot_of(heap->perms),
			  MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) != heap->start)
		WHY_FAIL("cannot map the start of the heap (%#llx)", (unsigned long long)heap->start);
	/* 3. the stack: grow it down to the saved range by a fault the kernel resolves */
	const struct vma *fstack = NULL;
	for (int j = 0; j < nf; j++)
		if (vma_is_stack(&fresh[j]))
			fstack = &fresh[j];
	if (!stack || !fstack || stack->end != fstack->end)
		WHY_FAIL("the stack is not where it was at the checkpoint");
	if (stack->start < fstack->start) {
		long rc = sys(r, SYS_clock_gettime, CLOCK_MONOTONIC, (long)stack->start, 0, 0, 0, 0);
		if (rc != 0)
			WHY_FAIL("cannot grow the stack to the checkpoint's size");
	}
	/* 4. map what is missing */
	for (uint32_t i = 0; i < im->h->nvmas; i++) {
		const struct img_vma *v = &im->vmas[i];
		if (img_special(im, v) || is_named(im, v, "[heap]") || is_named(im, v, "[stack]"))
			continue;
		int kept = 0;
		for (int j = 0; j < nf && !kept; j++)
			kept = fresh[j].seen && same_vma(im, v, &fresh[j]);
		if (kept)
			continue;
		const char *path = img_s(im, v->path);
		int shared = v->perms[3] == 's';
		long flags = MAP_FIXED | (shared ? MAP_SHARED : MAP_PRIVATE), fd = -1;
		int shm_fd = shared && s->tree->resume.view ? shm_fd_at(s->tree, s->own_pid, v->start) : -1;
		if (shm_fd >= 0) {
			/* the tree's shared memory, made again before the processes were forked (sharedmem.h) */
			got = sys(r, SYS_mmap, (long)v->start, (long)(v->end - v->start), prot_of(v->perms), flags, shm_fd,
				  (long)v->offset);
			if ((uint64_t)got != v->start)
				WHY_FAIL("cannot map the shared memory at %#llx again", (unsigned long long)v->start);
			continue;
		} else if (path && path[0] == '/') {
			long p = injector_str(&r->j, path);
			fd = p ? sys(r, SYS_openat, AT_FDCWD, p, shared && v->perms[1] == 'w' ? O_RDWR : O_RDONLY, 0, 0, 0) : -1;
			if (fd < 0)
				WHY_FAIL("cannot reopen mapped file %s", path);
		} else {
			flags |= MAP_ANONYMOUS;
		}
		got = sys(r, SYS_mmap, (long)v->start, (long)(v->end - v->start), prot_of(v->perms), flags, fd,
			  fd >= 0 ? (long)v->offset : 0);
		if (fd >= 0)
			sys(r, SYS_close, fd, 0, 0, 0, 0, 0);
		if ((uint64_t)got != v->start)
			WHY_FAIL("cannot map %#llx-%#llx (%s)", (unsigned long long)v->start, (unsigned long long)v->end,
			     path ? path : "anonymous");
		r->anon_new[i] = fd < 0;
	}
	return 0;
}

/* Writable mappings are filled straight from the pool mapping with process_vm_writev (one copy,
 * batched); the few read-only ones that hold saved bytes (relocated data) through /proc/PID/mem,
 * which ignores protections.  Never-written pool segments are zeros: skipped where the mapping
 * was just created anonymous, written where the fresh process may have put something.
 *
 * The mappings just created anonymous are filled first, with UFFDIO_COPY on every core
 * (fillcopy.h); one it could not fill whole is written here like the rest. */
#define FILL_BATCH 512
/* Mappings the relaunch has already are emptied for a lazy fill from this size up (smaller ones
 * cost less to write than to empty). */
#define LAZY_EMPTIED_MIN (1u << 20)

struct fill {
	struct iovec local[FILL_BATCH], remote[FILL_BATCH];
	int n;
};

static int fill_flush(struct sup *s, struct fill *f)
{
	int rc = proc_mem_writev(s->pid, f->local, f->remote, (size_t)f->n, NULL);
	f->n = 0;
	return rc;
}

int restore_fill_memory(struct sup *s, struct rctx *r, const struct img *im)
{
	char *why = r->why;
	size_t whylen = r->whylen;
	static const uint8_t zeros[1u << 16];
	static struct fill f;
	f.n = 0;
	static uint8_t *copied, *eligible; /* per mapping of the checkpoint */
	static uint32_t cap;
	if (im->h->nvmas + 1u > cap) {
		uint8_t *c = realloc(copied, im->h->nvmas + 1u), *e = c ? realloc(eligible, im->h->nvmas + 1u) : NULL;
		if (c)
			copied = c;
		if (!c || !e)
			WHY_FAIL("out of memory");
		eligible = e;
		cap = im->h->nvmas + 1u;
	}
	memset(copied, 0, im->h->nvmas);
	for (uint32_t i = 0; i < im->h->nvmas; i++) {
		const struct img_vma *v = &im->vmas[i];
		eligible[i] = v->region != IMG_NONE && v->perms[1] == 'w' && r->anon_new[i];
		/* A large anonymous mapping the relaunch has already (the heap) is emptied, so that it
		 * is filled lazily too: its pages are the relaunch's, all to be replaced. */
		const char *path = img_s(im, v->path);
		if (!eligible[i] && r->lazy && r->uffd >= 0 && v->region != IMG_NONE && !strncmp(v->perms, "rw-p", 4) &&
		    (!path || !path[0] || !strcmp(path, "[heap]")) && v->end - v->start >= LAZY_EMPTIED_MIN &&
		    sys(r, SYS_madvise, (long)v->start, (long)(v->end - v->start), MADV_DONTNEED, 0, 0, 0) == 0)
			eligible[i] = r->anon_new[i] = 1;
	}
	if (r->uffd >= 0 && r->lazy)
		s->resume.fill = fillcopy_start(s, r->uffd, im, eligible, copied);
	else if (r->uffd >= 0 && fillcopy_run(s, r->uffd, im, eligible, copied) != 0)
		WHY_FAIL("cannot unregister the memory filled through the userfaultfd: %s", strerror(errno));
	for (uint32_t i = 0; i < im->h->nvmas; i++) {
		const struct img_vma *v = &im->vmas[i];
		if (v->region == IMG_NONE || copied[i])
			continue;
		int writable = v->perms[1] == 'w';
		for (uint64_t off = 0, len = v->end - v->start; off < len;) {
			const void *src;
			uint64_t n;
			if (prosper_pool_region_view(s->tree->pool, v->region, off, len - off, &src, &n) != 0)
				WHY_FAIL("pool: %s", prosper_pool_errormsg());
			if (!src && r->anon_new[i]) {
				off += n;
				continue;
			}
			if (!src && n > sizeof zeros)
				n = sizeof zeros;
			const void *from = src ? src : zeros;
			uint64_t at = v->start + off;
			if (!writable) {
				if (inject_write(&r->j.in, at, from, n) != 0)
					WHY_FAIL("cannot write memory at %#llx", (unsigned long long)at);
			} else {
				f.local[f.n] = (struct iovec){ (void *)from, n };
				f.remote[f.n] = (struct iovec){ (void *)(uintptr_t)at, n };
				if (++f.n == FILL_BATCH && fill_flush(s, &f) != 0)
					WHY_FAIL("cannot write memory near %#llx", (unsigned long long)at);
			}
			s->tree->stats.resume.restored_bytes += n;
			off += n;
		}
	}
	if (fill_flush(s, &f) != 0)
		WHY_FAIL("cannot write the memory of the checkpoint");
	return 0;
}

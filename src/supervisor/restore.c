/* restore.c -- `prosper resume`: rebuild a relaunched process from the committed epoch
 * (docs/run-resume.md, "How a resume works").
 *
 * The program is relaunched exactly as it was run (same executable, argv, environment, preload
 * set, no ASLR), so the loader puts the executable, the libraries, the shim, the vdso and the
 * TCB where they were.  The shim stops the child in its constructor; from that stop the
 * supervisor makes the child execute, through the shim's syscall gate (inject.h):
 *   1. a scratch page in a hole of both layouts (paths and small arguments go there);
 *   2. munmap of every mapping the checkpoint does not have exactly, brk to the saved break,
 *      growth of the stack down to the saved range, mmap of every saved mapping that is missing
 *      (files from their file and offset, the rest anonymous), with final protections;
 *   3. the memory of every saved mapping, from the pool: UFFDIO_COPY into the mappings just made
 *      anonymous -- by default while the program runs (fillcopy.h: the lazy fill, which also
 *      takes the heap, emptied first) --, process_vm_writev or /proc/PID/mem into the rest
 *      (fill_memory); NVM-resident memory is mapped from the pool file again at its address
 *      instead (nvm.c: no copy);
 *   4. glibc's cached tid, fds (files truncated to their checkpointed size, reopened at the same
 *      numbers with the same flags and offsets), cwd, umask, signal handlers and mask, interval
 *      timers (timers.h); the
 *      names ps shows (thread names, and the kernel pointed at the checkpoint's argv);
 *   5. registers and extended state, with an interrupted system call set up to restart.
 *
 * Invariants
 *   - Everything that can refuse (files, kernel, CPU, layout) is checked before anything is
 *     changed on disk: a refused resume leaves the pool and every file as they were.
 *   - Kernel mappings ([vdso], [vvar], ...) are never touched: they must be where they were.
 *   - Any failure after the child was changed kills it: a half-restored process never runs.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "prosper/internal/shim_proto.h"
#include "altstack.h"
#include "fdkind.h"
#include "fillcopy.h"
#include "inject.h"
#include "sup.h"
#include "rlimits.h"
#include "pending.h"
#include "timers.h"
#include "sharedmem.h"
#include "tree_image.h"

#define SCRATCH_BYTES (64u << 10)

#define FAIL(...) do { snprintf(why, whylen, __VA_ARGS__); return -1; } while (0)

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

/* Is every mapping of path in the checkpoint shared and writable?  *needs: the file length they
 * reach (offset + length of the farthest). */
static int shared_writable_only(const struct img *im, const char *path, uint64_t *needs)
{
	int any = 0;
	for (uint32_t i = 0; i < im->h->nvmas; i++) {
		const struct img_vma *v = &im->vmas[i];
		const char *p = img_s(im, v->path);
		if (!p || strcmp(p, path))
			continue;
		if (v->perms[1] != 'w' || v->perms[3] != 's')
			return 0;
		any = 1;
		if (v->offset + (v->end - v->start) > *needs)
			*needs = v->offset + (v->end - v->start);
	}
	return any;
}

enum refusal sup_restore_check(const struct img *im, const struct tree_view *tv, int32_t pid, char *why, size_t whylen)
{
#define REFUSE(r, ...) do { snprintf(why, whylen, __VA_ARGS__); return r; } while (0)
	for (uint32_t i = 0; i < im->h->nfiles; i++) {
		const struct img_file *f = &im->files[i];
		const char *path = img_s(im, f->path);
		struct file_id now;
		if (tree_shm_named(tv, path) >= 0)
			continue; /* shared memory with a name: made again if gone, else as it is (sharedmem.h) */
		if (file_identity(path, &now) != 0)
			REFUSE(REFUSE_FILE_GONE, "%s is gone: the checkpoint needs it", path);
		/* A file mapped only shared and writable is data the program writes through the mapping
		 * (a JVM's hsperfdata counters), not rolled back (docs/limitations.md): it is mapped
		 * again as it is now, so it only has to be long enough for its mappings. */
		uint64_t needs = 0;
		if (shared_writable_only(im, path, &needs)) {
			if (now.size < needs)
				REFUSE(REFUSE_FILE_CHANGED, "%s is shorter than the checkpoint maps it (%llu < %llu bytes): refusing to resume",
				       path, (unsigned long long)now.size, (unsigned long long)needs);
			continue;
		}
		if (now.size != f->size || now.mtime_ns != f->mtime_ns || now.build_id_len != f->build_id_len ||
		    memcmp(now.build_id, f->build_id, f->build_id_len))
			REFUSE(REFUSE_FILE_CHANGED, "%s changed since the checkpoint (size, mtime or build-id): refusing to resume", path);
	}
	const char *rel = kernel_release();
	const char *was = img_s(im, im->h->kernel_str);
	if (was && strcmp(was, rel))
		REFUSE(REFUSE_KERNEL_CHANGED, "the kernel changed (%s, checkpoint taken under %s): refusing to resume", rel, was);
	if (im->h->xcr0 != cpu_xcr0())
		REFUSE(REFUSE_CPU_CHANGED, "the CPU's extended-state features differ from the checkpoint's (XCR0 %#llx vs %#llx)",
		     (unsigned long long)cpu_xcr0(), (unsigned long long)im->h->xcr0);
	for (uint32_t i = 0; i < im->h->nvmas; i++) {
		const char *p = img_s(im, im->vmas[i].path);
		if (p && p[0] == '/' && strstr(p, " (deleted)") && tree_shm_at(tv, pid, im->vmas[i].start) < 0)
			REFUSE(REFUSE_MAPPED_DELETED, "the checkpoint maps a deleted file (%s)", p);
	}
	return fd_check(im, tv, why, whylen); /* each fd by its kind (fdkind.h) */
#undef REFUSE
}

/* A 64 KiB hole free in both the checkpoint's layout and the fresh one. */
static uint64_t find_hole(const struct img *im, const struct vma *fresh, int nf)
{
	for (uint64_t a = 0x100000000000ull; a < 0x7f0000000000ull; a += 1ull << 32) {
		int clash = 0;
		for (uint32_t i = 0; i < im->h->nvmas && !clash; i++)
			clash = im->vmas[i].start < a + SCRATCH_BYTES && a < im->vmas[i].end;
		for (int i = 0; i < nf && !clash; i++)
			clash = fresh[i].start < a + SCRATCH_BYTES && a < fresh[i].end;
		if (!clash)
			return a;
	}
	return 0;
}

struct rctx {
	struct inject in;
	uint64_t scratch;  /* SCRATCH_BYTES of the program's memory, ours during the restore */
	uint8_t *anon_new; /* per checkpoint mapping: mapped anonymous just now (reads as zeros) */
	int uffd;          /* the program's userfaultfd (fillcopy.h), or -1 */
	int lazy;          /* fill the anonymous mappings while the program runs (fillcopy.h) */
	char *why;
	size_t whylen;
};

/* The stack pointer for a call injected into a thread whose saved SP may lie on its alternate
 * signal stack (altstack.h): the scratch's last 64 bytes, clear of what is written at its start. */
static uint64_t scratch_stack(const struct rctx *r)
{
	return r->scratch + SCRATCH_BYTES - 64;
}

static long sys(struct rctx *r, long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
	return inject_syscall(&r->in, nr, a1, a2, a3, a4, a5, a6);
}

/* Put a string into the scratch page; its address in the child. */
static long scratch_str(struct rctx *r, const char *str)
{
	size_t n = strlen(str) + 1;
	if (n > SCRATCH_BYTES || inject_write(&r->in, r->scratch, str, n))
		return 0;
	return (long)r->scratch;
}

static int rebuild_map(struct sup *s, struct rctx *r, const struct img *im, struct vma *fresh, int nf)
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
			FAIL("the kernel's %s is not where it was at the checkpoint", img_s(im, im->vmas[i].path));
	}
	/* the gate must survive: the mapping holding it is in the checkpoint unchanged */
	for (int j = 0; j < nf; j++) {
		if (fresh[j].start > r->in.gate || r->in.gate >= fresh[j].end)
			continue;
		int kept = 0, near = -1;
		for (uint32_t i = 0; i < im->h->nvmas; i++) {
			kept |= same_vma(im, &im->vmas[i], &fresh[j]);
			if (im->vmas[i].start <= r->in.gate && r->in.gate < im->vmas[i].end)
				near = (int)i;
		}
		if (!kept) {
			/* say which mapping differs: the next occurrence is data, not a guess */
			const struct img_vma *c = near >= 0 ? &im->vmas[near] : NULL;
			const char *cp = c ? img_s(im, c->path) : NULL;
			if (!c)
				FAIL("the preloaded libraries differ from the checkpoint's (now %#llx-%#llx %.4s %s +%#llx; "
				     "the checkpoint has nothing mapped there)", (unsigned long long)fresh[j].start,
				     (unsigned long long)fresh[j].end, fresh[j].perms, fresh[j].path,
				     (unsigned long long)fresh[j].offset);
			FAIL("the preloaded libraries differ from the checkpoint's (now %#llx-%#llx %.4s %s +%#llx; "
			     "checkpoint %#llx-%#llx %.4s %s +%#llx)", (unsigned long long)fresh[j].start,
			     (unsigned long long)fresh[j].end, fresh[j].perms, fresh[j].path, (unsigned long long)fresh[j].offset,
			     (unsigned long long)c->start, (unsigned long long)c->end, c->perms, cp ? cp : "",
			     (unsigned long long)c->offset);
		}
	}
	if (s->start_brk != im->h->start_brk)
		FAIL("the program break starts elsewhere than at the checkpoint");
	/* 1. unmap what the checkpoint does not have exactly */
	for (int j = 0; j < nf; j++) {
		struct vma *f = &fresh[j];
		if (vma_is_special(f) || vma_is_stack(f) || vma_is_heap(f) || f->start == r->scratch)
			continue;
		int kept = 0;
		for (uint32_t i = 0; i < im->h->nvmas && !kept; i++)
			kept = same_vma(im, &im->vmas[i], f);
		f->seen = kept;
		if (!kept && sys(r, SYS_munmap, (long)f->start, (long)(f->end - f->start), 0, 0, 0, 0) != 0)
			FAIL("cannot unmap %#llx", (unsigned long long)f->start);
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
		FAIL("cannot restore the program break (%#llx)", (unsigned long long)brk_to);
	/* The kernel shows an anonymous mapping just below the break (the executable's .bss past its
	 * file) merged into [heap]; brk() only creates the part from start_brk up. */
	if (heap && heap->start < im->h->start_brk &&
	    (uint64_t)sys(r, SYS_mmap, (long)heap->start, (long)(im->h->start_brk - heap->start), prot_of(heap->perms),
			  MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) != heap->start)
		FAIL("cannot map the start of the heap (%#llx)", (unsigned long long)heap->start);
	/* 3. the stack: grow it down to the saved range by a fault the kernel resolves */
	const struct vma *fstack = NULL;
	for (int j = 0; j < nf; j++)
		if (vma_is_stack(&fresh[j]))
			fstack = &fresh[j];
	if (!stack || !fstack || stack->end != fstack->end)
		FAIL("the stack is not where it was at the checkpoint");
	if (stack->start < fstack->start) {
		long rc = sys(r, SYS_clock_gettime, CLOCK_MONOTONIC, (long)stack->start, 0, 0, 0, 0);
		if (rc != 0)
			FAIL("cannot grow the stack to the checkpoint's size");
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
		int shm_fd = shared && s->tree->view ? shm_fd_at(s->tree, s->own_pid, v->start) : -1;
		if (shm_fd >= 0) {
			/* the tree's shared memory, made again before the processes were forked (sharedmem.h) */
			got = sys(r, SYS_mmap, (long)v->start, (long)(v->end - v->start), prot_of(v->perms), flags, shm_fd,
				  (long)v->offset);
			if ((uint64_t)got != v->start)
				FAIL("cannot map the shared memory at %#llx again", (unsigned long long)v->start);
			continue;
		} else if (path && path[0] == '/') {
			long p = scratch_str(r, path);
			fd = p ? sys(r, SYS_openat, AT_FDCWD, p, shared && v->perms[1] == 'w' ? O_RDWR : O_RDONLY, 0, 0, 0) : -1;
			if (fd < 0)
				FAIL("cannot reopen mapped file %s", path);
		} else {
			flags |= MAP_ANONYMOUS;
		}
		got = sys(r, SYS_mmap, (long)v->start, (long)(v->end - v->start), prot_of(v->perms), flags, fd,
			  fd >= 0 ? (long)v->offset : 0);
		if (fd >= 0)
			sys(r, SYS_close, fd, 0, 0, 0, 0, 0);
		if ((uint64_t)got != v->start)
			FAIL("cannot map %#llx-%#llx (%s)", (unsigned long long)v->start, (unsigned long long)v->end,
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

static int fill_memory(struct sup *s, struct rctx *r, const struct img *im)
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
			FAIL("out of memory");
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
		s->fill = fillcopy_start(s, r->uffd, im, eligible, copied);
	else if (r->uffd >= 0 && fillcopy_run(s, r->uffd, im, eligible, copied) != 0)
		FAIL("cannot unregister the memory filled through the userfaultfd: %s", strerror(errno));
	for (uint32_t i = 0; i < im->h->nvmas; i++) {
		const struct img_vma *v = &im->vmas[i];
		if (v->region == IMG_NONE || copied[i])
			continue;
		int writable = v->perms[1] == 'w';
		for (uint64_t off = 0, len = v->end - v->start; off < len;) {
			const void *src;
			uint64_t n;
			if (prosper_pool_region_view(s->tree->pool, v->region, off, len - off, &src, &n) != 0)
				FAIL("pool: %s", prosper_pool_errormsg());
			if (!src && r->anon_new[i]) {
				off += n;
				continue;
			}
			if (!src && n > sizeof zeros)
				n = sizeof zeros;
			const void *from = src ? src : zeros;
			uint64_t at = v->start + off;
			if (!writable) {
				if (inject_write(&r->in, at, from, n) != 0)
					FAIL("cannot write memory at %#llx", (unsigned long long)at);
			} else {
				f.local[f.n] = (struct iovec){ (void *)from, n };
				f.remote[f.n] = (struct iovec){ (void *)(uintptr_t)at, n };
				if (++f.n == FILL_BATCH && fill_flush(s, &f) != 0)
					FAIL("cannot write memory near %#llx", (unsigned long long)at);
			}
			s->tree->stats.restored_bytes += n;
			off += n;
		}
	}
	if (fill_flush(s, &f) != 0)
		FAIL("cannot write the memory of the checkpoint");
	return 0;
}

/* The fds, each made again by its kind (fdkind.h). */
static int reopen_fds(struct sup *s, struct rctx *r, const struct img *im)
{
	struct fd_restore fr = { .s = s, .in = &r->in, .scratch = r->scratch, .scratch_bytes = SCRATCH_BYTES - 64,
				 .im = im, .why = r->why, .whylen = r->whylen };
	int rc = fd_reopen(&fr);
	s->tree->stats.epoll_watches_left += fr.watches_left;
	return rc;
}

static int restore_process_state(struct sup *s, struct rctx *r, const struct img *im, const struct shim_hello *hello)
{
	char *why = r->why;
	size_t whylen = r->whylen;
	const char *cwd = img_s(im, im->h->cwd_str);
	long p = cwd ? scratch_str(r, cwd) : 0;
	if (cwd && (!p || sys(r, SYS_chdir, p, 0, 0, 0, 0, 0) != 0))
		FAIL("cannot return to the working directory %s", cwd);
	sys(r, SYS_umask, im->h->umask, 0, 0, 0, 0, 0);
	/* handlers: the shim's table, restored with the rest of memory */
	struct shim_sigtab tab;
	struct iovec l = { &tab, sizeof tab }, rm = { (void *)(uintptr_t)hello->sigtab, sizeof tab };
	if (process_vm_readv(s->pid, &l, 1, &rm, 1, 0) != (ssize_t)sizeof tab)
		FAIL("cannot read the signal table");
	for (int sig = 1; sig < SHIM_NSIG; sig++) {
		if (!(tab.installed >> (sig - 1) & 1) || sig == SIGKILL || sig == SIGSTOP)
			continue;
		long addr = (long)(hello->sigtab + offsetof(struct shim_sigtab, act) + (uint64_t)sig * sizeof tab.act[0]);
		if (sys(r, SYS_rt_sigaction, sig, addr, 0, 8, 0, 0) != 0)
			FAIL("cannot restore the handler of signal %d", sig);
	}
	uint64_t mask = im->h->sigblk;
	if (inject_write(&r->in, r->scratch, &mask, sizeof mask) ||
	    sys(r, SYS_rt_sigprocmask, SIG_SETMASK, (long)r->scratch, 0, 8, 0, 0) != 0)
		FAIL("cannot restore the signal mask");
	if (altstack_restore(&r->in, &r->in, r->scratch, scratch_stack(r), &im->h->altstack) != 0)
		FAIL("cannot restore the alternate signal stack");
	s->thr[0].altstack = im->h->altstack; /* kept until the thread is asked again (altstack.h) */
	int armed = timers_restore(s, &r->in);
	if (armed < 0)
		FAIL("cannot arm the interval timers again: %s", strerror(-armed));
	s->tree->stats.timers_restored = (uint64_t)armed;
	/* glibc's cached thread id: the one the program sees now (its checkpoint's, in its own
	 * pid namespace -- resume.c asked for it) */
	s->thr[0].own = pidns_own_id(s->pid);
	if (im->h->tid_offset) {
		uint32_t tid = (uint32_t)(s->thr[0].own ? s->thr[0].own : s->pid), old = 0;
		struct iovec ol = { &old, 4 }, orm = { (void *)(uintptr_t)(im->h->regs.fs_base + im->h->tid_offset), 4 };
		if (process_vm_readv(s->pid, &ol, 1, &orm, 1, 0) == 4)
			s->old_main_tid = (pid_t)old; /* for the locks it held (lockowners.h) */
		if (inject_write(&r->in, im->h->regs.fs_base + im->h->tid_offset, &tid, 4))
			FAIL("cannot set the thread id");
	}
	return 0;
}

/* A thread's name, from a 16-byte field that may lack its NUL; through thread `in` (NULL: main). */
static void set_name(struct rctx *r, struct inject *in, const char comm[16])
{
	char name[16];
	memcpy(name, comm, 15);
	name[15] = 0;
	long p = name[0] ? scratch_str(r, name) : 0;
	if (p && in)
		inject_syscall(in, SYS_prctl, PR_SET_NAME, p, 0, 0, 0, 0);
	else if (p)
		sys(r, SYS_prctl, PR_SET_NAME, p, 0, 0, 0, 0);
}

/* What ps and /proc/PID/cmdline show.  The relaunch's own strings sit elsewhere on its first stack
 * (another socket name in its environment) and it is named after the resolved executable
 * ("python3.11" for "python3"); the checkpoint's strings are back in memory, so the kernel is
 * pointed at them again (PR_SET_MM_MAP, the rest of the layout as the relaunch has it).  A
 * kernel that refuses changes only what ps shows, not the program: no reason to refuse. */
static void restore_names(struct sup *s, struct rctx *r, const struct img *im)
{
	set_name(r, NULL, im->h->comm);
	struct proc_status ps;
	if (!im->h->arg_start || proc_status(s->pid, &ps) != 0)
		return;
	long brk = sys(r, SYS_brk, 0, 0, 0, 0, 0, 0);
	struct prctl_mm_map m = { .start_code = ps.start_code, .end_code = ps.end_code, .start_data = ps.start_data,
				  .end_data = ps.end_data, .start_brk = ps.start_brk, .brk = (uint64_t)brk,
				  .start_stack = ps.start_stack, .arg_start = im->h->arg_start, .arg_end = im->h->arg_end,
				  .env_start = im->h->env_start, .env_end = im->h->env_end, .exe_fd = (uint32_t)-1 };
	if (brk > 0 && inject_write(&r->in, r->scratch, &m, sizeof m) == 0 &&
	    sys(r, SYS_prctl, PR_SET_MM, PR_SET_MM_MAP, (long)r->scratch, sizeof m, 0, 0) == 0)
		s->tree->stats.names_restored = 1;
}

/* A thread's registers and extended state, with a system call the checkpoint interrupted set up
 * to restart the way the kernel would have: back over `syscall` with the number in rax. */
static int set_registers(pid_t tid, struct user_regs_struct regs, const uint8_t *xstate, uint32_t xlen, char *why,
			 size_t whylen)
{
	long rax = (long)regs.rax;
	if ((long)regs.orig_rax >= 0 && (rax == -512 || rax == -513 || rax == -514 || rax == -516)) {
		regs.rax = regs.orig_rax;
		regs.rip -= 2;
	}
	regs.orig_rax = (unsigned long)-1;
	if (ptrace(PTRACE_SETREGS, tid, 0, &regs) != 0)
		FAIL("cannot set registers: %s", strerror(errno));
	if (xlen) {
		struct iovec xs = { (void *)xstate, xlen };
		if (ptrace(PTRACE_SETREGSET, tid, (void *)NT_X86_XSTATE, &xs) != 0)
			FAIL("cannot set the extended register state: %s", strerror(errno));
	}
	return 0;
}

/* The other threads: each is cloned by the main thread through the gate with its own TLS and
 * stack (glibc's struct pthread, stack and TLS are in memory already), gets its signal mask and
 * robust-futex list, then its registers.  In the program's own pid namespace it is asked to get
 * its checkpoint's tid back (pidns.h); else it gets a new one.  The kernel writes the tid into
 * its struct pthread (CLONE_CHILD_SETTID) and clears it at its exit (CLONE_CHILD_CLEARTID), as
 * pthread_create would have.  Each is left stopped, in s->thr. */
static int restore_threads(struct sup *s, struct rctx *r, const struct img *im)
{
	char *why = r->why;
	size_t whylen = r->whylen;
	for (uint32_t i = 0; i < im->h->nthreads; i++) {
		const struct img_thread *t = &im->threads[i];
		uint64_t tcb_tid = im->h->tid_offset ? t->regs.fs_base + im->h->tid_offset : 0;
		long flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM | CLONE_SETTLS |
			     (tcb_tid ? CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID : 0);
		r->in.cloned = 0;
		if (s->tree->ns.on)
			pidns_next(&s->tree->ns, t->tid); /* not free, or refused: the thread gets another id */
		/* the call returns the id in the program's namespace, the event ours */
		long own = sys(r, SYS_clone, flags, (long)t->regs.rsp, 0, (long)tcb_tid, (long)t->regs.fs_base, 0);
		pid_t tid = r->in.cloned;
		if (own <= 0 || tid <= 0 || pidns_own_id(tid) != own)
			FAIL("cannot recreate thread %d of the checkpoint", (int)t->tid);
		int st;
		if (waitpid((pid_t)tid, &st, __WALL) != tid || !WIFSTOPPED(st))
			FAIL("the recreated thread %ld did not stop", (long)tid);
		struct thr *th = &s->thr[s->nthr++];
		memset(th, 0, sizeof *th);
		th->tid = tid;
		th->own = (pid_t)own;
		th->stopped = 1;
		struct inject tin;
		if (inject_open_thread(&tin, &r->in, (pid_t)tid) != 0)
			FAIL("cannot control the recreated thread %ld", (long)tid);
		if (inject_write(&r->in, r->scratch, &t->sigmask, sizeof t->sigmask) ||
		    inject_syscall(&tin, SYS_rt_sigprocmask, SIG_SETMASK, (long)r->scratch, 0, 8, 0, 0) != 0)
			FAIL("cannot restore the signal mask of thread %ld", (long)tid);
		if (t->robust_head && inject_syscall(&tin, SYS_set_robust_list, (long)t->robust_head, (long)t->robust_len, 0,
						     0, 0, 0) != 0)
			FAIL("cannot restore the robust-futex list of thread %ld", (long)tid);
		if (altstack_restore(&tin, &r->in, r->scratch, scratch_stack(r), &t->altstack) != 0)
			FAIL("cannot restore the alternate signal stack of thread %ld", (long)tid);
		th->altstack = t->altstack;
		set_name(r, &tin, t->comm);
		if (set_registers((pid_t)tid, t->regs, im->thread_xstate + (size_t)i * im->h->xstate_bytes,
				  im->h->xstate_bytes, why, whylen))
			return -1;
	}
	return 0;
}

int sup_restore(struct sup *s, const struct img *im, const struct shim_hello *hello, int uffd, char *why, size_t whylen)
{
	static struct vma fresh[MAX_VMAS];
	int nf = 0;
	/* Lazy where the userfaultfd stays the tracker's (not every mapping tracked whole).  Each
	 * process of a tree has its own memory (a cut never holds a vforked child) and its own fill. */
	int lazy = !s->cfg.eager_restore && !(s->cfg.stack_mode == TRACK_MODE_FULL && s->cfg.heap_mode == TRACK_MODE_FULL);
	struct rctx r = { .why = why, .whylen = whylen, .anon_new = calloc(im->h->nvmas + 1u, 1), .uffd = uffd, .lazy = lazy };
	if (!r.anon_new)
		FAIL("out of memory");
	if (inject_open(&r.in, s->pid, hello->gate) != 0)
		FAIL("cannot control the relaunched program");
	int rc = -1;
	struct proc_status ps;
	if (proc_maps(s->pid, fresh, MAX_VMAS, &nf) != 0 || proc_status(s->pid, &ps) != 0) {
		snprintf(why, whylen, "cannot read the relaunched program's map");
		goto out;
	}
	s->start_brk = ps.start_brk;
	r.scratch = find_hole(im, fresh, nf);
	if (!r.scratch || sys(&r, SYS_mmap, (long)r.scratch, SCRATCH_BYTES, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) != (long)r.scratch) {
		snprintf(why, whylen, "no room for the restorer's scratch page");
		goto out;
	}
	if (rebuild_map(s, &r, im, fresh, nf) ||
	    sup_nvm_restore(s, &r.in, (uint64_t)scratch_str(&r, s->tree->pool_path), why, whylen))
		goto out;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (fill_memory(s, &r, im))
		goto out;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s->tree->stats.restore_memory_seconds = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
	s->tree->stats.limits_restored = (uint64_t)limits_restore(s); /* before the fds: one may be above the relaunch's limit */
	if (reopen_fds(s, &r, im) || restore_process_state(s, &r, im, hello))
		goto out;
	restore_names(s, &r, im);
	if (restore_threads(s, &r, im))
		goto out;
	sys(&r, SYS_munmap, (long)r.scratch, SCRATCH_BYTES, 0, 0, 0, 0);
	int queued = pending_restore(s, &r.in, im); /* the last call: pending.h */
	if (queued < 0) {
		snprintf(why, whylen, "cannot queue the pending signals again: %s", strerror(-queued));
		goto out;
	}
	s->tree->stats.pending_restored = (uint64_t)queued;
	rc = set_registers(s->pid, im->h->regs, im->xstate, im->h->xstate_bytes, why, whylen);
out:
	inject_close(&r.in);
	free(r.anon_new);
	return rc;
}

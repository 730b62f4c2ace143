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
 * Files: restore_check.c holds the checks made before anything is launched; restore_map.c steps 2
 * and 3; the fds of step 4 are made again by their kinds (fdkind.h); this file drives the rest.
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
#include "restore_internal.h"
#include "stopclock.h"
#include "taskpart.h"
#include "sharedmem.h"
#include "tree_image.h"
#include "restore.h"
#include "nvm.h"


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

/* The stack pointer for a call injected into a thread whose saved SP may lie on its alternate
 * signal stack (altstack.h): the scratch's last 64 bytes, clear of what is written at its start. */
static uint64_t scratch_stack(const struct rctx *r)
{
	return r->j.scratch + SCRATCH_BYTES - 64;
}

static long scratch_str(struct rctx *r, const char *str)
{
	return injector_str(&r->j, str);
}

/* The fds, each made again by its kind (fdkind.h). */
static int reopen_fds(struct sup *s, struct rctx *r, const struct img *im)
{
	struct fd_restore fr = { .s = s, .j = &r->j, .im = im, .why = r->why, .whylen = r->whylen };
	int rc = fd_reopen(&fr);
	s->tree->stats.resume.epoll_watches_left += fr.watches_left;
	return rc;
}

static int restore_process_state(struct sup *s, struct rctx *r, const struct img *im, const struct shim_hello *hello)
{
	char *why = r->why;
	size_t whylen = r->whylen;
	const char *cwd = img_s(im, im->h->cwd_str);
	long p = cwd ? scratch_str(r, cwd) : 0;
	if (cwd && (!p || sys(r, SYS_chdir, p, 0, 0, 0, 0, 0) != 0))
		WHY_FAIL("cannot return to the working directory %s", cwd);
	sys(r, SYS_umask, im->h->umask, 0, 0, 0, 0, 0);
	/* handlers: the shim's table, restored with the rest of memory */
	struct shim_sigtab tab;
	struct iovec l = { &tab, sizeof tab }, rm = { (void *)(uintptr_t)hello->sigtab, sizeof tab };
	if (process_vm_readv(s->pid, &l, 1, &rm, 1, 0) != (ssize_t)sizeof tab)
		WHY_FAIL("cannot read the signal table");
	for (int sig = 1; sig < SHIM_NSIG; sig++) {
		if (!(tab.installed >> (sig - 1) & 1) || sig == SIGKILL || sig == SIGSTOP)
			continue;
		long addr = (long)(hello->sigtab + offsetof(struct shim_sigtab, act) + (uint64_t)sig * sizeof tab.act[0]);
		if (sys(r, SYS_rt_sigaction, sig, addr, 0, 8, 0, 0) != 0)
			WHY_FAIL("cannot restore the handler of signal %d", sig);
	}
	uint64_t mask = im->h->sigblk;
	if (inject_write(&r->j.in, r->j.scratch, &mask, sizeof mask) ||
	    sys(r, SYS_rt_sigprocmask, SIG_SETMASK, (long)r->j.scratch, 0, 8, 0, 0) != 0)
		WHY_FAIL("cannot restore the signal mask");
	if (altstack_restore(&r->j.in, &r->j.in, r->j.scratch, scratch_stack(r), &im->h->altstack) != 0)
		WHY_FAIL("cannot restore the alternate signal stack");
	s->thr[0].altstack = im->h->altstack; /* kept until the thread is asked again (altstack.h) */
	if (task_restore(s, &r->j.in, im, TASK_AFTER_FDS, why, whylen) != 0) /* the timers (taskpart.h) */
		return -1;
	/* glibc's cached thread id: the one the program sees now (its checkpoint's, in its own
	 * pid namespace -- resume.c asked for it) */
	s->thr[0].own = pidns_own_id(s->pid);
	if (im->h->tid_offset) {
		uint32_t tid = (uint32_t)(s->thr[0].own ? s->thr[0].own : s->pid), old = 0;
		struct iovec ol = { &old, 4 }, orm = { (void *)(uintptr_t)(im->h->regs.fs_base + im->h->tid_offset), 4 };
		if (process_vm_readv(s->pid, &ol, 1, &orm, 1, 0) == 4)
			s->resume.old_main_tid = (pid_t)old; /* for the locks it held (lockowners.h) */
		if (inject_write(&r->j.in, im->h->regs.fs_base + im->h->tid_offset, &tid, 4))
			WHY_FAIL("cannot set the thread id");
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
	if (brk > 0 && inject_write(&r->j.in, r->j.scratch, &m, sizeof m) == 0 &&
	    sys(r, SYS_prctl, PR_SET_MM, PR_SET_MM_MAP, (long)r->j.scratch, sizeof m, 0, 0) == 0)
		s->tree->stats.resume.names_restored = 1;
}

/* A thread's registers and extended state, with a system call the checkpoint interrupted set up
 * to restart the way the kernel would have: back over `syscall` with the number in rax.  But a
 * connect() whose socket comes back connected (reset: fd_connected_tcp) returns 0 instead: the
 * kernel's restart would have found the connection it had made, where a connect on the socket
 * made again finds it connected already (EISCONN); its next read says what became of it. */
static int set_registers(pid_t tid, struct user_regs_struct regs, const struct img *im, const uint8_t *xstate,
			 uint32_t xlen, char *why, size_t whylen)
{
	long rax = (long)regs.rax;
	if ((long)regs.orig_rax >= 0 && (rax == -512 || rax == -513 || rax == -514 || rax == -516)) {
		if (regs.orig_rax == SYS_connect && fd_connected_tcp(im, (int)regs.rdi)) {
			regs.rax = 0;
		} else {
			regs.rax = regs.orig_rax;
			regs.rip -= 2;
		}
	}
	regs.orig_rax = (unsigned long)-1;
	if (ptrace(PTRACE_SETREGS, tid, 0, &regs) != 0)
		WHY_FAIL("cannot set registers: %s", strerror(errno));
	if (xlen) {
		struct iovec xs = { (void *)xstate, xlen };
		if (ptrace(PTRACE_SETREGSET, tid, (void *)NT_X86_XSTATE, &xs) != 0)
			WHY_FAIL("cannot set the extended register state: %s", strerror(errno));
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
		int lost = 0;
		uint64_t clear_tid = img_clear_tid_decode(t->clear_tid, t->regs.fs_base, &lost);
		if (lost)
			WHY_FAIL("thread %d: where the kernel tells its exit (its clear-child-tid address) cannot be kept",
				 (int)t->tid);
		if (!tcb_tid && clear_tid) { /* not glibc's: musl's lock, say -- cleared only, no id written */
			tcb_tid = clear_tid;
			flags |= CLONE_CHILD_CLEARTID;
		}
		r->j.in.cloned = 0;
		if (s->tree->run.ns.on)
			pidns_next(&s->tree->run.ns, t->tid); /* not free, or refused: the thread gets another id */
		/* the call returns the id in the program's namespace, the event ours */
		long own = sys(r, SYS_clone, flags, (long)t->regs.rsp, 0, (long)tcb_tid, (long)t->regs.fs_base, 0);
		pid_t tid = r->j.in.cloned;
		if (own <= 0 || tid <= 0 || pidns_own_id(tid) != own)
			WHY_FAIL("cannot recreate thread %d of the checkpoint", (int)t->tid);
		int st;
		if (waitpid((pid_t)tid, &st, __WALL) != tid || !WIFSTOPPED(st))
			WHY_FAIL("the recreated thread %ld did not stop", (long)tid);
		struct thr *th = &s->thr[s->nthr++];
		memset(th, 0, sizeof *th);
		th->tid = tid;
		th->own = (pid_t)own;
		th->stopped = 1;
		struct inject tin;
		if (inject_open_thread(&tin, &r->j.in, (pid_t)tid) != 0)
			WHY_FAIL("cannot control the recreated thread %ld", (long)tid);
		if (inject_write(&r->j.in, r->j.scratch, &t->sigmask, sizeof t->sigmask) ||
		    inject_syscall(&tin, SYS_rt_sigprocmask, SIG_SETMASK, (long)r->j.scratch, 0, 8, 0, 0) != 0)
			WHY_FAIL("cannot restore the signal mask of thread %ld", (long)tid);
		if (t->robust_head && inject_syscall(&tin, SYS_set_robust_list, (long)t->robust_head, (long)t->robust_len, 0,
						     0, 0, 0) != 0)
			WHY_FAIL("cannot restore the robust-futex list of thread %ld", (long)tid);
		if (altstack_restore(&tin, &r->j.in, r->j.scratch, scratch_stack(r), &t->altstack) != 0)
			WHY_FAIL("cannot restore the alternate signal stack of thread %ld", (long)tid);
		th->altstack = t->altstack;
		set_name(r, &tin, t->comm);
		if (set_registers((pid_t)tid, t->regs, im, im->thread_xstate + (size_t)i * im->h->xstate_bytes,
				  im->h->xstate_bytes, why, whylen))
			return -1;
	}
	return 0;
}

int sup_restore(struct sup *s, const struct img *im, const struct shim_hello *hello, int uffd, char *why, size_t whylen)
{
	static struct vma fresh[MAX_VMAS];
	int nf = 0;
	/* Lazy where the userfaultfd stays the tracker's (not every mapping tracked whole) and handles
	 * the kernel's faults too: one of user mode only (an ordinary user's, uffd_abi.h) would turn a
	 * fault the kernel takes for the program before its fill ends -- a signal frame, its rseq
	 * area -- into a SIGSEGV.  Each process of a tree has its own memory (a cut never holds a
	 * vforked child) and its own fill. */
	int lazy = !s->cfg.eager_restore && !hello->uffd_user_mode_only &&
		   !(s->cfg.stack_mode == TRACK_MODE_FULL && s->cfg.heap_mode == TRACK_MODE_FULL);
	struct rctx r = { .why = why, .whylen = whylen, .anon_new = calloc(im->h->nvmas + 1u, 1), .uffd = uffd, .lazy = lazy };
	if (!r.anon_new)
		WHY_FAIL("out of memory");
	if (inject_open(&r.j.in, s->pid, hello->gate) != 0)
		WHY_FAIL("cannot control the relaunched program");
	int rc = -1;
	struct proc_status ps;
	if (proc_maps(s->pid, fresh, MAX_VMAS, &nf) != 0 || proc_status(s->pid, &ps) != 0) {
		snprintf(why, whylen, "cannot read the relaunched program's map");
		goto out;
	}
	s->start_brk = ps.start_brk;
	r.j.scratch = find_hole(im, fresh, nf);
	r.j.scratch_bytes = SCRATCH_BYTES - 64; /* the last 64 bytes: scratch_stack */
	if (!r.j.scratch || sys(&r, SYS_mmap, (long)r.j.scratch, SCRATCH_BYTES, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) != (long)r.j.scratch) {
		snprintf(why, whylen, "no room for the restorer's scratch page");
		goto out;
	}
	if (restore_rebuild_map(s, &r, im, fresh, nf) ||
	    sup_nvm_restore(s, &r.j.in, (uint64_t)scratch_str(&r, s->tree->pool_path), why, whylen))
		goto out;
	double t0 = stopclock_now();
	if (restore_fill_memory(s, &r, im))
		goto out;
	s->tree->stats.resume.restore_memory_seconds = stopclock_now() - t0;
	if (task_restore(s, &r.j.in, im, TASK_BEFORE_FDS, why, whylen) || /* the limits: an fd may lie above the relaunch's */
	    reopen_fds(s, &r, im) || restore_process_state(s, &r, im, hello))
		goto out;
	restore_names(s, &r, im);
	if (restore_threads(s, &r, im))
		goto out;
	sys(&r, SYS_munmap, (long)r.j.scratch, SCRATCH_BYTES, 0, 0, 0, 0);
	if (task_restore(s, &r.j.in, im, TASK_LAST, why, whylen)) /* the pending signals: the last calls (pending.h) */
		goto out;
	rc = set_registers(s->pid, im->h->regs, im, im->xstate, im->h->xstate_bytes, why, whylen);
out:
	inject_close(&r.j.in);
	free(r.anon_new);
	return rc;
}

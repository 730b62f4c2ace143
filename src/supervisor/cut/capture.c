/* capture.c -- one checkpoint of a stopped child = one pool epoch (docs/run-resume.md).
 *
 * Order inside a stop: registers -> NVM memory written in the interval write-protected again
 * (nvm.c) -> map (regions follow it: added, resized, removed) -> dirty memory of every saved
 * mapping (read now, or from a copy-on-write view by the commit: snapshot.h) -> fds, cwd, signal
 * mask -> blob -> commit.  NVM-resident mappings are shared mappings
 * of the pool itself: never saved here, never in the blob.
 *
 * What is saved: every private, readable mapping that is not code: writable ones, anonymous
 * ones, and read-only file mappings that hold private pages (relocated data made read-only by
 * the loader).  Code and untouched read-only file data are rebuilt from their files at resume,
 * whose identity (size, mtime, inode, build-id) the epoch records.
 *
 * Files: mapfollow.c (regions follow the map), blob.c (the epoch's record), ckpt_commit.c (the
 * half that runs while the program goes on: the pool writes, the oracle); this file is the stop.
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
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <time.h>
#include <unistd.h>
#include "altstack.h"
#include "mapfollow.h"
#include "sharedmem.h"
#include "snapshot.h"
#include "taskpart.h"
#include "prosper/stackckpt.h"
#include "stage.h"
#include "sup.h"
#include "tree_fds.h"
#include "capture.h"
#include "nvm.h"
#include "why.h"

/* A large mapping that a checkpoint finds mostly written (a hash table updated at random) costs a
 * write-protect fault per page per interval for nothing: it is then copied whole, unprotected, for
 * DENSE_REGION_HOLD checkpoints -- fewer when they are more than DENSE_REGION_HOLD_S seconds in
 * all -- and tracked again after that (the checkpoint that re-arms it copies it whole too, since
 * its writes since the last one were not tracked).  At an interval of DENSE_REGION_HOLD_S or
 * more (an overhead budget's, budget.h) a fault per page is little beside the interval: the
 * mapping stays tracked, and a program that stops writing it is cheap to checkpoint at once. */
#define DENSE_REGION_MIN (1u << 20)
#define DENSE_REGION_PERCENT 50
#define DENSE_REGION_HOLD 16
#define DENSE_REGION_HOLD_S 0.16

/* How many checkpoints a mapping found dense is copied whole at the interval now (0: not at all). */
static int dense_hold(const struct sup *s)
{
	double iv = s->tree->interval_s > 0 ? s->tree->interval_s : 0.01;
	int n = (int)(DENSE_REGION_HOLD_S / iv + 0.5);
	return n > DENSE_REGION_HOLD ? DENSE_REGION_HOLD : n;
}

/* A mapping copied whole: its hold ends at this checkpoint if the interval has grown past
 * DENSE_REGION_HOLD_S since it began (a hold counted at 10 ms must not last seconds). */
static void dense_hold_shorten(const struct sup *s, struct vma *v)
{
	if (v->copy_whole > 1 && dense_hold(s) == 0)
		v->copy_whole = 1;
}

/* A mapping found mostly written by this checkpoint's collection (`dirty` bytes of it) is copied
 * whole for a while instead (above). */
static int judge_dense(struct sup *s, struct vma *v, uint64_t dirty)
{
	int n = dense_hold(s);
	if (v->end - v->start < DENSE_REGION_MIN || dirty * 100 < (v->end - v->start) * DENSE_REGION_PERCENT || n < 1)
		return 0;
	int rc = prosper_track_unprotect(&s->track, v->start, v->end);
	if (!rc) {
		v->copy_whole = n;
		s->tree->stats.bytes.dense_regions++;
	}
	return rc;
}

/* dirty bytes of v were collected by a scan that protected them again: the program's next write
 * to each of those pages is a fault (the overhead budget prices them, budget.h) -- unless v is
 * now copied whole, unprotected. */
static void count_protected(struct sup *s, const struct vma *v, uint64_t dirty)
{
	if (!v->copy_whole && s->track.kind == PROSPER_TRACK_PAGE)
		s->tree->stats.stop.protected_bytes += dirty;
}

/* Is v collected as written pages from its start up (neither a stack, nor copied whole, nor the
 * full tracker's)?  Those are collected together, one scan per run of them (stage_dirty). */
static int collected_plainly(const struct sup *s, const struct vma *v)
{
	return s->track.kind == PROSPER_TRACK_PAGE && !v->sp && s->cfg.heap_mode != TRACK_MODE_FULL && !v->copy_whole;
}

static int by_start(const void *a, const void *b)
{
	const struct vma *x = *(const struct vma *const *)a, *y = *(const struct vma *const *)b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* The written pages of the mappings run[0..n) (ascending, side by side but for mappings not saved
 * between them) by one scan over them all, re-armed: each mapping stages the part that is its own.
 * A mapping in between that is not saved is skipped by the scan (not registered), and none of the
 * others saved lies in between: their marks are theirs to collect. */
static int stage_run(struct sup *s, struct vma **run, int n)
{
	long k = prosper_track_collect_live(&s->track, run[0]->start, run[n - 1]->end, s->cut.ranges, MAX_RANGES);
	if (k < 0)
		return (int)k;
	long j = 0;
	for (int i = 0; i < n; i++) {
		struct vma *v = run[i];
		while (j < k && s->cut.ranges[j].end <= v->start)
			j++;
		uint64_t dirty = 0;
		int rc;
		for (long q = j; q < k && s->cut.ranges[q].start < v->end; q++) {
			/* a range may reach over the next mapping (adjacent pages), or past it (out of room:
			 * a superset): each takes its part */
			uint64_t a = s->cut.ranges[q].start > v->start ? s->cut.ranges[q].start : v->start;
			uint64_t b = s->cut.ranges[q].end < v->end ? s->cut.ranges[q].end : v->end;
			if ((rc = stage_range(s, v, a, b)) != 0)
				return rc;
			dirty += b - a;
		}
		if ((rc = judge_dense(s, v, dirty)) != 0)
			return rc;
		count_protected(s, v, dirty);
	}
	return 0;
}

static int stage_dirty(struct sup *s)
{
	int rc;
	static struct vma *order[MAX_VMAS];
	for (int i = 0; i < s->nvmas; i++)
		order[i] = &s->vmas[i];
	qsort(order, (size_t)s->nvmas, sizeof *order, by_start);
	int run = 0; /* order[i - run .. i): collected plainly, not yet collected */
	for (int i = 0; i <= s->nvmas; i++) {
		struct vma *v = i < s->nvmas ? order[i] : NULL;
		if (v && collected_plainly(s, v)) {
			run++;
			continue;
		}
		if (run && (rc = stage_run(s, order + i - run, run)) != 0)
			return rc;
		run = 0;
		if (!v)
			break;
		int mode = v->sp ? s->cfg.stack_mode : s->cfg.heap_mode;
		/* A stack is collected from SP's page up only: a page below SP was written while dead, but
		 * it keeps its written mark and is saved once the stack grows over it again (a frame
		 * reserved without being written, memory a thread library recycled between threads).
		 * SP's own page is saved from SP - 128 up and keeps its mark too, for the same reason. */
		uint64_t from = v->sp ? prosper_stack_active_from(v->sp, v->start, v->end, PROSPER_STACK_PAGE) : v->start;
		long k;
		dense_hold_shorten(s, v);
		if (mode == TRACK_MODE_FULL) {
			s->cut.ranges[0] = (struct prosper_range){ from, v->end };
			k = 1;
		} else if (v->copy_whole && v->pre_armed) {
			/* a pre-copy protected it again and read it whole: what was written after */
			v->pre_armed = 0;
			if ((k = prosper_track_collect(&s->track, v->start, v->end, s->cut.ranges, MAX_RANGES)) < 0)
				return (int)k;
			if (--v->copy_whole > 0 && (rc = prosper_track_unprotect(&s->track, v->start, v->end)) != 0)
				return rc;
			for (long j = 0; j < k; j++)
				count_protected(s, v, s->cut.ranges[j].end - s->cut.ranges[j].start);
		} else if (v->copy_whole) {
			if (--v->copy_whole == 0 && (rc = prosper_track_rearm(&s->track, v->start, v->end)) != 0)
				return rc;
			s->cut.ranges[0] = (struct prosper_range){ v->start, v->end };
			k = 1;
		} else if ((k = v->sp ? prosper_track_collect_stack(&s->track, from, v->end, s->cut.ranges, MAX_RANGES)
				      : prosper_track_collect(&s->track, from, v->end, s->cut.ranges, MAX_RANGES)) < 0) {
			return (int)k;
		} else {
			uint64_t dirty = 0;
			for (long j = 0; j < k; j++)
				dirty += s->cut.ranges[j].end - s->cut.ranges[j].start;
			if (!v->sp && (rc = judge_dense(s, v, dirty)) != 0)
				return rc;
			count_protected(s, v, dirty);
		}
		for (long j = 0; j < k; j++)
			if ((rc = stage_range(s, v, s->cut.ranges[j].start, s->cut.ranges[j].end)) != 0)
				return rc;
	}
	return 0;
}

/* ------------------------------------------------------------------ one checkpoint */

/* Which mappings are stacks, and whose: [stack] is the main thread's; another thread's stack is
 * the anonymous private mapping holding its SP *with a guard page right below it* and its thread
 * descriptor (fs_base) at the top -- how glibc makes thread stacks.  A thread running on memory
 * that is not such a mapping keeps that memory saved whole: below its SP may be data.  The
 * descriptor is what tells them apart: the Go runtime runs goroutines on stacks inside its heap
 * arenas, which it reserves PROT_NONE and maps in parts, so an arena has the shape of a guarded
 * stack too; taken for one, the heap below a goroutine's SP was not saved (a resumed Go program
 * failed with "concurrent map writes" or a nil dereference).  A user-provided stack inside the
 * heap, a coroutine's, is not one either.  Nor is the heap of a statically linked Go program,
 * whose threads' fs_base points into their m in the heap: a descriptor is one only if its first
 * word holds its own address, as the x86-64 TLS ABI has it of every thread pointer (glibc and
 * musl set it; Go without libc does not -- there a resumed program failed at its first resume
 * with "bad g in signal handler" or "morestack on g0"). */
static int thread_descriptor_at(pid_t pid, uint64_t fs_base)
{
	uint64_t self = 0;
	return proc_mem_read(pid, fs_base, &self, sizeof self) == 0 && self == fs_base;
}

static void mark_stacks(struct sup *s, int n)
{
	for (int i = 0; i < n; i++) {
		struct vma *v = &s->cut.now[i];
		v->sp = 0;
		if (vma_is_stack(v)) {
			v->sp = s->cut.sp;
			continue;
		}
		if (!map_guarded_like_a_stack(s->cut.now, i))
			continue;
		for (int t = 1; t < s->nthr; t++) {
			const struct user_regs_struct *r = &s->thr[t].regs;
			if (r->rsp > v->start && r->rsp <= v->end && r->fs_base >= v->start && r->fs_base < v->end &&
			    thread_descriptor_at(s->pid, r->fs_base))
				v->sp = r->rsp;
		}
	}
}

/* In log mode the changes of the blob are written into the metadata region now, and the epoch
 * blob becomes the stub that names it (metalog.h); in rewrite mode the blob stays whole. */
static int stage_metadata(struct sup *s)
{
	const void *out;
	size_t len;
	int rc = metalog_stage(s->meta, s->cfg.meta_mode, s->tree->pool, s->cut.batch.blob.p, s->cut.batch.blob.len, &out, &len,
			       &s->tree->stats.meta);
	if (rc || out == s->cut.batch.blob.p)
		return rc;
	s->cut.batch.blob.len = 0;
	return img_buf_put(&s->cut.batch.blob, out, len);
}

/* Registers, extended state, signal mask and robust-futex list of every (stopped) thread. */
static int capture_threads(struct sup *s)
{
	for (int t = 0; t < s->nthr; t++) {
		struct thr *th = &s->thr[t];
		struct iovec xs = { th->xstate, sizeof th->xstate };
		if (ptrace(PTRACE_GETREGS, th->tid, 0, &th->regs) != 0 ||
		    ptrace(PTRACE_GETREGSET, th->tid, (void *)NT_X86_XSTATE, &xs) != 0 ||
		    ptrace(PTRACE_GETSIGMASK, th->tid, (void *)sizeof th->sigmask, &th->sigmask) != 0)
			return -errno;
		th->xlen = xs.iov_len;
		void *head = NULL;
		size_t len = 0;
		if (syscall(SYS_get_robust_list, th->tid, &head, &len) != 0)
			head = NULL, len = 0;
		th->robust_head = (uint64_t)(uintptr_t)head;
		th->robust_len = len;
		if (!th->own) /* read once: an id does not change */
			th->own = pidns_own_id(th->tid);
		if (t > 0 && proc_thread_comm(s->pid, th->tid, th->comm) != 0)
			memset(th->comm, 0, sizeof th->comm);
	}
	return 0;
}

static int capture_steps(struct sup *s, char *why, size_t whylen);

int sup_capture(struct sup *s, char *why, size_t whylen)
{
	s->track.err[0] = 0;
	int rc = capture_steps(s, why, whylen);
	if (rc && s->track.err[0])
		WHY_SAY("%s", s->track.err); /* the tracker's own words, read where its call failed */
	return rc;
}

static int capture_steps(struct sup *s, char *why, size_t whylen)
{
	double *phase = s->tree->stats.stop.phase_seconds, t = stopclock_now();
	stage_begin_cut(s);
	/* first: it runs the main thread (for a system call), capture_threads then reads its registers */
	int rc = task_capture(s); /* timers, pending signals, limits (taskpart.h) */
	if (rc)
		return rc;
	double t0 = stopclock_now();
	if ((rc = capture_threads(s)) != 0)
		return rc;
	s->tree->stats.stop.thread_capture_seconds += stopclock_now() - t0;
	s->tree->stats.stop.thread_captures += (uint64_t)s->nthr;
	if ((rc = altstack_ask(s)) != 0)
		return rc;
	if ((rc = sup_nvm_stop(s)) != 0)
		return rc;
	const struct user_regs_struct *regs = &s->thr[0].regs;
	s->cut.sp = regs->rsp;
	if (!s->tid_offset && !s->tid_offset_settled && regs->fs_base) {
		/* glibc caches the thread id in its TCB -- the id the program sees, in its own pid
		 * namespace not ours; resume rewrites it, and recreates threads with the kernel
		 * clearing it at their exit (pthread_join), only if we find it here.  Asked again at
		 * each cut until its place holds a value: a static program's first cut can come
		 * before its libc has set its thread pointer or the id (a resume of `gcc -static`
		 * threads then waited for ever in pthread_join for a thread gone). */
		uint32_t tid = 0, own = (uint32_t)(s->thr[0].own ? s->thr[0].own : s->pid);
		struct iovec l = { &tid, 4 }, r = { (void *)(uintptr_t)(regs->fs_base + 720), 4 };
		if (process_vm_readv(s->pid, &l, 1, &r, 1, 0) == 4 && tid) {
			s->tid_offset = tid == own ? 720 : 0;
			s->tid_offset_settled = 1;
		}
	}
	stopclock_lap(phase, STOP_THREADS, &t);
	int n = 0;
	if ((rc = proc_maps(s->pid, s->cut.now, MAX_VMAS, &n)) != 0 || (rc = map_split_at_saved(s, &n)) != 0)
		return rc;
	stopclock_lap(phase, STOP_MAPS, &t);
	mark_stacks(s, n);
	if ((rc = map_follow(s, n, s->prev, s->nprev)) != 0 || (rc = stage_keep_precopied(s)) != 0)
		return rc;
	stopclock_lap(phase, STOP_FOLLOW, &t);
	if ((rc = stage_dirty(s)) != 0)
		return rc;
	stopclock_lap(phase, STOP_DIRTY, &t);
	if ((rc = snapshot_or_read(s, why, whylen)) != 0) /* now, or from a view by the commit */
		return rc;
	if (s->cut.view > 0)
		s->tree->cut.viewed = 1;
	stopclock_lap(phase, STOP_READ, &t);
	stage_judge_precopy(s);
	if ((rc = capture_blob(s, &s->cut.batch.blob, n)) != 0)
		return rc;
	stopclock_lap(phase, STOP_BLOB, &t);
	if ((rc = stage_metadata(s)) != 0)
		return rc;
	stopclock_lap(phase, STOP_METADATA, &t);
	memcpy(s->prev, s->cut.now, (size_t)n * sizeof *s->prev);
	s->nprev = n;
	s->new_image = 0;
	return 0;
}


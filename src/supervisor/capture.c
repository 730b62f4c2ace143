/* capture.c -- one checkpoint of a stopped child = one pool epoch (docs/run-resume.md).
 *
 * Order inside a stop: registers -> NVM memory written in the interval write-protected again
 * (nvm.c) -> map (regions follow it: added, resized, removed) -> dirty memory of every saved
 * mapping -> fds, cwd, signal mask -> blob -> commit.  NVM-resident mappings are shared mappings
 * of the pool itself: never saved here, never in the blob.
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
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <time.h>
#include <unistd.h>
#include "altstack.h"
#include "fdkind.h"
#include "rlimits.h"
#include "pending.h"
#include "sharedmem.h"
#include "timers.h"
#include "prosper/stackckpt.h"
#include "stage.h"
#include "sup.h"
#include "tree.h"

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

/* ------------------------------------------------------------------ the map, followed */

/* A new mapping: its pages that hold something.  A region starts zero-filled, so untouched
 * anonymous pages need no copy; a file mapping's absent pages are the file's, so all of it.
 * Called before the mapping is write-protected (prosper_track_add): the protection leaves a
 * marker in every empty page's entry, which the kernel reports as a swapped page. */
static int stage_new(struct sup *s, struct vma *v, uint64_t a, uint64_t b)
{
	if (v->path[0] == '/')
		return stage(s, v, a, b, 1);
	long k = prosper_track_present(&s->track, a, b, s->ranges, MAX_RANGES);
	if (k < 0)
		return (int)k;
	for (long j = 0; j < k; j++) {
		int rc = stage(s, v, s->ranges[j].start, s->ranges[j].end, 1);
		if (rc)
			return rc;
	}
	return 0;
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
	return v->sp ? PROSPER_KIND_STACK : vma_is_heap(v) ? PROSPER_KIND_HEAP
	       : v->path[0] == '/'                       ? PROSPER_KIND_DATA
							 : PROSPER_KIND_ANON;
}

/* The stack is saved Prosper's way: one image, updated by redo records committed with the epoch
 * and applied after it (the two-step commit, pool.h).  The rest: libcrpm's buffered protocol. */
static uint32_t region_mode(const struct vma *v)
{
	return v->sp ? PROSPER_REGION_REDO : PROSPER_REGION_BUFFERED;
}

/* A region of the pool for mapping nv, and its entry among the saved mappings (*out); 0 or a
 * negative errno.  Its pages are neither tracked nor staged yet: the caller's order decides. */
static int add_saved_region(struct sup *s, const struct vma *nv, struct vma **out)
{
	if (s->nvmas == MAX_VMAS)
		return -ENOSPC;
	char name[PROSPER_REGION_NAME_MAX];
	snprintf(name, sizeof name, "%sm%llx", s->region_prefix, (unsigned long long)nv->start);
	int id = prosper_pool_region_add(s->tree->pool, name, (uint32_t)region_kind(nv), region_mode(nv), nv->start,
					 nv->end - nv->start, 3);
	if (id < 0)
		return id;
	struct vma *v = &s->vmas[s->nvmas++];
	*v = *nv;
	v->region = id;
	v->added_gen = s->tree->cut_gen;
	*out = v;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The map cut where a saved region starts inside a mapping, so that each piece meets its region
 * as it was.  The kernel merges mappings side by side that it can no longer tell apart: a resume
 * maps a thread's stack (MAP_STACK made it "nohugepage") and the mapping above it as two plain
 * anonymous mappings, which become one; an mprotect undone joins what it had split.  Followed as
 * one mapping, that would be a region resized to the whole and the others removed -- every
 * present page of them read again as new at the next stop (a resumed `sort` read its 1.4 GiB
 * buffer in one 8-10 s stop), and a stack region grown over memory that is not a stack.  Only
 * starts cut: a mapping that grew upward (the heap, a thread's stack region) stays one region,
 * resized; and the kernel's own ([stack], [heap]) are never cut: the main stack grows down, and
 * its region follows it as before.  0, or -ENOSPC when the pieces would not fit in MAX_VMAS. */
static int split_at_saved(struct sup *s, int *n)
{
	static uint64_t cuts[MAX_VMAS];
	static int cut_in[MAX_VMAS]; /* the mapping each cut lies in */
	int ncuts = 0;
	for (int k = 0; k < s->nvmas; k++) { /* which mapping holds each start: a binary search */
		uint64_t a = s->vmas[k].start;
		int lo = 0, hi = *n;
		while (lo < hi) {
			int mid = (lo + hi) / 2;
			if (s->now[mid].end <= a)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < *n && s->now[lo].start < a && s->now[lo].path[0] != '[')
			cuts[ncuts++] = a;
	}
	if (!ncuts)
		return 0;
	if (*n + ncuts > MAX_VMAS)
		return -ENOSPC;
	qsort(cuts, (size_t)ncuts, sizeof *cuts, cmp_u64);
	for (int c = 0, i = 0; c < ncuts; c++) {
		while (s->now[i].end <= cuts[c])
			i++;
		cut_in[c] = i;
	}
	/* from the back, so that no mapping is overwritten before it is cut */
	int j = *n + ncuts - 1, c = ncuts - 1;
	for (int i = *n - 1; i >= 0; i--) {
		uint64_t start = s->now[i].start, offset = s->now[i].offset, end = s->now[i].end;
		for (; c >= 0 && cut_in[c] == i; c--, j--) {
			s->now[j] = s->now[i];
			s->now[j].start = cuts[c];
			s->now[j].end = end;
			s->now[j].offset = offset + (cuts[c] - start); /* as the kernel numbers a split */
			end = cuts[c];
		}
		if (j != i)
			s->now[j] = s->now[i];
		s->now[j].start = start;
		s->now[j].end = end;
		j--;
	}
	*n += ncuts;
	return 0;
}

/* Is now[i] saved, with a saved mapping of the same start and end (the same one, unless it was
 * replaced)? */
static int saved_as_before(struct sup *s, int i)
{
	const struct vma *old = s->now[i].seen ? find_saved(s, s->now[i].start) : NULL;
	return old && old->end == s->now[i].end;
}

/* Is every page of now[i]'s part of [a, b) still tracked?  A run of mappings side by side in the
 * map (none between them) saved as before is asked once for all (*ok_to: the last of a run found
 * tracked; *tried_to: the last of a run asked), one by one only when that finds an untracked page.
 * 1, 0 (replaced: not tracked), or a negative errno. */
static int still_tracked(struct sup *s, int n, int i, uint64_t a, uint64_t b, int *ok_to, int *tried_to)
{
	if (i <= *ok_to)
		return 1;
	if (i > *tried_to && saved_as_before(s, i)) {
		int j = i;
		while (j + 1 < n && saved_as_before(s, j + 1))
			j++;
		*tried_to = j;
		if (j > i) {
			int all = prosper_track_covers(&s->track, s->now[i].start, s->now[j].end);
			if (all < 0)
				return all;
			if (all) {
				*ok_to = j;
				return 1;
			}
		}
	}
	return prosper_track_covers(&s->track, a, b);
}

/* Regions follow the map: new mappings are added (tracked from now on), changed ones resized,
 * vanished ones removed.  On return s->now[i].seen says whether mapping i is saved. */
static int follow_map(struct sup *s, int n, const struct vma *prev, int nprev)
{
	int rc, ok_to = -1, tried_to = -1;
	for (int i = 0; i < s->nvmas; i++)
		s->vmas[i].seen = 0;
	for (int i = 0; i < n; i++)
		s->now[i].seen = should_save(s, &s->now[i], prev, nprev);
	for (int i = 0; i < n; i++) {
		struct vma *nv = &s->now[i];
		if (!nv->seen)
			continue;
		struct vma *old = find_saved(s, nv->start);
		if (old) {
			/* Same start, but maybe a new mapping (munmap + mmap between two stops): its pages
			 * are not tracked and its contents are new; it is then re-added below. */
			uint64_t common_end = old->end < nv->end ? old->end : nv->end;
			int covered = still_tracked(s, n, i, nv->start, common_end, &ok_to, &tried_to);
			if (covered < 0)
				return covered;
			if (!covered) {
				if ((rc = prosper_pool_region_remove(s->tree->pool, (uint32_t)old->region)) != 0)
					return rc;
				*old = s->vmas[--s->nvmas];
				old = NULL;
			}
		}
		if (old) {
			old->seen = 1;
			/* A thread stack whose thread exited stays a stack at its last SP: the thread library
			 * keeps the mapping for the next thread, nothing below that SP is live until a thread
			 * runs on it again (and then that thread's SP bounds it). */
			if (nv->sp)
				old->sp = nv->sp;
			snprintf(old->perms, sizeof old->perms, "%s", nv->perms);
			if (old->end != nv->end) {
				if ((rc = prosper_pool_region_resize(s->tree->pool, (uint32_t)old->region, nv->end - nv->start)) != 0)
					return rc;
				if (nv->end > old->end) {
					if ((rc = stage_new(s, old, old->end, nv->end)) != 0)
						return rc;
					if ((rc = prosper_track_add(&s->track, old->end, nv->end)) != 0)
						return rc;
				}
				old->end = nv->end;
			}
			continue;
		}
		struct vma *v;
		if ((rc = add_saved_region(s, nv, &v)) != 0)
			return rc;
		v->seen = 1;
		if ((rc = stage_new(s, v, v->start, v->end)) != 0)
			return rc;
		if ((rc = prosper_track_add(&s->track, v->start, v->end)) != 0)
			return rc;
	}
	for (int i = 0; i < s->nvmas; i++) {
		struct vma *v = &s->vmas[i];
		if (v->seen)
			continue;
		if ((rc = prosper_pool_region_remove(s->tree->pool, (uint32_t)v->region)) != 0)
			return rc;
		s->vmas[i] = s->vmas[--s->nvmas];
		i--;
	}
	return 0;
}

/* Is now[i] shaped like a thread's stack as glibc makes one: an anonymous private rw mapping
 * with a guard page (an anonymous ---p mapping) right below it?  Whether it is one, its
 * thread's SP tells (mark_stacks). */
static int guarded_like_a_stack(const struct vma *now, int i)
{
	const struct vma *v = &now[i];
	return !v->path[0] && !strcmp(v->perms, "rw-p") && i > 0 && now[i - 1].end == v->start &&
	       !strncmp(now[i - 1].perms, "---p", 4) && !now[i - 1].path[0];
}

/* Is this new mapping maybe a stack, whose live part only its thread's SP, read at the stop,
 * tells?  The main one, or one shaped like a thread's. */
static int maybe_stack(const struct vma *now, int i) { return vma_is_stack(&now[i]) || guarded_like_a_stack(now, i); }

/* Union of two ascending range lists into out (MAX_RANGES). */
static long union_ranges(const struct prosper_range *a, long na, const struct prosper_range *b, long nb,
			 struct prosper_range *out)
{
	long n = 0, i = 0, j = 0;
	while (i < na || j < nb) {
		struct prosper_range r = j >= nb || (i < na && a[i].start <= b[j].start) ? a[i++] : b[j++];
		if (n && (r.start <= out[n - 1].end || n == MAX_RANGES)) { /* out of room: a superset, read as zeros */
			if (r.end > out[n - 1].end)
				out[n - 1].end = r.end;
		} else {
			out[n++] = r;
		}
	}
	return n;
}

int sup_adopt_new_maps(struct sup *s)
{
	static struct prosper_range before[MAX_RANGES], after[MAX_RANGES];
	int n = 0, rc;
	if (proc_maps(s->pid, s->now, MAX_VMAS, &n) != 0 || split_at_saved(s, &n) != 0)
		return 0; /* ending, or the map is being changed: the stop follows it */
	for (int i = 0; i < n; i++) {
		struct vma *nv = &s->now[i];
		if (!vma_is_saved(nv) || maybe_stack(s->now, i) || sup_nvm_find(s, nv->start))
			continue;
		int overlaps = 0;
		for (int k = 0; k < s->nvmas && !overlaps; k++)
			overlaps = s->vmas[k].start < nv->end && nv->start < s->vmas[k].end;
		if (overlaps || !should_save(s, nv, s->prev, s->nprev))
			continue; /* saved already, or it replaced a saved one: the stop decides */
		if (s->nvmas == MAX_VMAS)
			return 0;
		/* Protected first, then its pages found and staged (read after the pass's last step):
		 * a page written after the protection is marked and read again at the stop; one present
		 * before it is found by one of the two scans (before: present or swapped; after: present,
		 * since the protection marks every empty page as if swapped). */
		long na = 0, nb;
		if (nv->path[0] != '/' && (na = prosper_track_present(&s->track, nv->start, nv->end, before, MAX_RANGES)) < 0) {
			s->track.err[0] = 0;
			continue; /* the process ended or executed another program under the pass */
		}
		struct vma *v;
		if ((rc = add_saved_region(s, nv, &v)) != 0)
			return rc;
		int id = v->region;
		nb = 1;
		if (v->path[0] == '/')
			s->ranges[0] = (struct prosper_range){ v->start, v->end }; /* absent pages are the file's */
		if (prosper_track_add(&s->track, v->start, v->end) != 0 ||
		    (v->path[0] != '/' && (nb = prosper_track_resident(&s->track, v->start, v->end, after, MAX_RANGES)) < 0)) {
			/* unmapped or changed since the map was read, or the process ended or executed
			 * another program: not adopted, the stop follows the map as it is then (a protection
			 * already made marks empty pages, so the stop copies more of it: a superset) */
			s->nvmas--;
			if ((rc = prosper_pool_region_remove(s->tree->pool, (uint32_t)id)) != 0)
				return rc;
			s->track.err[0] = 0;
			continue;
		}
		if (v->path[0] != '/')
			nb = union_ranges(before, na, after, nb, s->ranges);
		for (long j = 0; j < nb; j++)
			if ((rc = stage(s, v, s->ranges[j].start, s->ranges[j].end, 1)) != 0)
				return rc;
	}
	return 0;
}

/* A large mapping that a checkpoint finds mostly written (a hash table updated at random) costs a
 * write-protect fault per page per interval for nothing: it is then copied whole, unprotected, for
 * DENSE_REGION_HOLD checkpoints, and tracked again after that (the checkpoint that re-arms it copies
 * it whole too, since its writes since the last one were not tracked). */
#define DENSE_REGION_MIN (1u << 20)
#define DENSE_REGION_PERCENT 50
#define DENSE_REGION_HOLD 16

/* A mapping found mostly written by this checkpoint's collection (`dirty` bytes of it) is copied
 * whole for a while instead (above). */
static int judge_dense(struct sup *s, struct vma *v, uint64_t dirty)
{
	if (v->end - v->start < DENSE_REGION_MIN || dirty * 100 < (v->end - v->start) * DENSE_REGION_PERCENT)
		return 0;
	int rc = prosper_track_unprotect(&s->track, v->start, v->end);
	if (!rc) {
		v->copy_whole = DENSE_REGION_HOLD;
		s->tree->stats.bytes.dense_regions++;
	}
	return rc;
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
	long k = prosper_track_collect_live(&s->track, run[0]->start, run[n - 1]->end, s->ranges, MAX_RANGES);
	if (k < 0)
		return (int)k;
	long j = 0;
	for (int i = 0; i < n; i++) {
		struct vma *v = run[i];
		while (j < k && s->ranges[j].end <= v->start)
			j++;
		uint64_t dirty = 0;
		int rc;
		for (long q = j; q < k && s->ranges[q].start < v->end; q++) {
			/* a range may reach over the next mapping (adjacent pages), or past it (out of room:
			 * a superset): each takes its part */
			uint64_t a = s->ranges[q].start > v->start ? s->ranges[q].start : v->start;
			uint64_t b = s->ranges[q].end < v->end ? s->ranges[q].end : v->end;
			if ((rc = stage_range(s, v, a, b)) != 0)
				return rc;
			dirty += b - a;
		}
		if ((rc = judge_dense(s, v, dirty)) != 0)
			return rc;
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
		if (mode == TRACK_MODE_FULL) {
			s->ranges[0] = (struct prosper_range){ from, v->end };
			k = 1;
		} else if (v->copy_whole && v->pre_armed) {
			/* a pre-copy protected it again and read it whole: what was written after */
			v->pre_armed = 0;
			if ((k = prosper_track_collect(&s->track, v->start, v->end, s->ranges, MAX_RANGES)) < 0)
				return (int)k;
			if (--v->copy_whole > 0 && (rc = prosper_track_unprotect(&s->track, v->start, v->end)) != 0)
				return rc;
		} else if (v->copy_whole) {
			if (--v->copy_whole == 0 && (rc = prosper_track_rearm(&s->track, v->start, v->end)) != 0)
				return rc;
			s->ranges[0] = (struct prosper_range){ v->start, v->end };
			k = 1;
		} else if ((k = v->sp ? prosper_track_collect_stack(&s->track, from, v->end, s->ranges, MAX_RANGES)
				      : prosper_track_collect(&s->track, from, v->end, s->ranges, MAX_RANGES)) < 0) {
			return (int)k;
		} else if (!v->sp) {
			uint64_t dirty = 0;
			for (long j = 0; j < k; j++)
				dirty += s->ranges[j].end - s->ranges[j].start;
			if ((rc = judge_dense(s, v, dirty)) != 0)
				return rc;
		}
		for (long j = 0; j < k; j++)
			if ((rc = stage_range(s, v, s->ranges[j].start, s->ranges[j].end)) != 0)
				return rc;
	}
	return 0;
}

/* ------------------------------------------------------------------ the blob */

static int build_blob(struct sup *s, struct img_buf *out, int nmaps)
{
	struct img_buf strings = { 0 }, vmas = { 0 }, fds = { 0 }, files = { 0 }, threads = { 0 };
	const struct thr *main_thr = &s->thr[0];
	size_t xlen = main_thr->xlen;
	struct img_hdr h = { .magic = IMG_MAGIC, .version = IMG_VERSION, .regs = main_thr->regs,
			     .xstate_bytes = (uint32_t)xlen,
			     .tid_offset = s->tid_offset, .xcr0 = cpu_xcr0(), .cwd_str = IMG_NONE, .kernel_str = IMG_NONE,
			     .altstack = main_thr->altstack };
	int rc = 0;
	struct proc_status ps;
	if ((rc = proc_status(s->pid, &ps)) != 0)
		goto out;
	h.sigblk = main_thr->sigmask;
	for (int t = 1; t < s->nthr; t++) {
		const struct thr *th = &s->thr[t];
		struct img_thread it = { .tid = th->own ? th->own : th->tid, .sigmask = th->sigmask, .robust_head = th->robust_head,
					 .robust_len = th->robust_len, .regs = th->regs, .altstack = th->altstack };
		memcpy(it.comm, th->comm, sizeof it.comm);
		img_buf_put(&threads, &it, sizeof it);
	}
	for (int t = 1; t < s->nthr; t++)
		img_buf_put(&threads, s->thr[t].xstate, xlen);
	h.nthreads = (uint32_t)(s->nthr - 1);
	h.own_pid = (uint32_t)main_thr->own;
	h.umask = ps.umask;
	h.start_brk = ps.start_brk;
	h.arg_start = ps.arg_start, h.arg_end = ps.arg_end, h.env_start = ps.env_start, h.env_end = ps.env_end;
	memcpy(h.comm, ps.comm, sizeof h.comm);
	h.exe_str = img_str(&strings, s->exe);
	h.launch_cwd_str = img_str(&strings, s->launch_cwd);
	char p[64], cwd[VMA_PATH_MAX];
	snprintf(p, sizeof p, "/proc/%d/cwd", (int)s->pid);
	ssize_t l = readlink(p, cwd, sizeof cwd - 1);
	if (l > 0) {
		cwd[l] = 0;
		h.cwd_str = img_str(&strings, cwd);
	}
	if (kernel_release()[0])
		h.kernel_str = img_str(&strings, kernel_release());
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
		if (sup_nvm_find(s, v->start))
			continue; /* NVM memory: the pool's region table is its record (nvm.c, N3) */
		if (vma_is_special(v) && !strcmp(v->path, "[vdso]"))
			h.vdso = v->start;
		struct img_vma iv = { .start = v->start, .end = v->end, .offset = v->offset, .region = IMG_NONE,
				      .path = v->path[0] ? img_str(&strings, v->path) : IMG_NONE };
		memcpy(iv.perms, v->perms, 4);
		if (v->seen) {
			const struct vma *sv = find_saved(s, v->start);
			iv.region = sv ? (uint32_t)sv->region : IMG_NONE;
		}
		/* a read-only shared file mapping is rebuilt from its file, memory only the program's
		 * processes hold is in the tree blob (sharedmem.h); a writable shared mapping of a file
		 * that exists writes to that file, which the pool does not keep */
		if (v->perms[3] == 's' && !vma_is_special(v) && (v->perms[1] == 'w' || v->path[0] != '/') &&
		    !shm_kept_mapping(v) && !s->warned_shared) {
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
	if ((rc = tree_read_fds(s, &nf)) != 0)
		goto out;
	for (int i = 0; i < nf; i++) { /* each fd recorded by its kind (fdkind.h) */
		struct img_fd e;
		if ((rc = fd_record(s, &s->fds[i], &e, &strings)) != 0 || (rc = img_buf_put(&fds, &e, sizeof e) ? -ENOMEM : 0) != 0)
			goto out;
	}
	h.nfds = (uint32_t)nf;
	h.strings_bytes = (uint32_t)strings.len;
	h.total_bytes = (uint32_t)(sizeof h + xlen + threads.len + vmas.len + fds.len + files.len + strings.len);
	out->len = 0;
	if (img_buf_put(out, &h, sizeof h) || img_buf_put(out, main_thr->xstate, xlen) ||
	    img_buf_put(out, threads.p, threads.len) || img_buf_put(out, vmas.p, vmas.len) ||
	    img_buf_put(out, fds.p, fds.len) || img_buf_put(out, files.p, files.len) ||
	    img_buf_put(out, strings.p, strings.len))
		rc = -ENOMEM;
out:
	free(strings.p);
	free(vmas.p);
	free(fds.p);
	free(files.p);
	free(threads.p);
	return rc;
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
 * heap, a coroutine's, is not one either. */
static void mark_stacks(struct sup *s, int n)
{
	for (int i = 0; i < n; i++) {
		struct vma *v = &s->now[i];
		v->sp = 0;
		if (vma_is_stack(v)) {
			v->sp = s->sp;
			continue;
		}
		if (!guarded_like_a_stack(s->now, i))
			continue;
		for (int t = 1; t < s->nthr; t++) {
			const struct user_regs_struct *r = &s->thr[t].regs;
			if (r->rsp > v->start && r->rsp <= v->end && r->fs_base >= v->start && r->fs_base < v->end)
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
	int rc = metalog_stage(s->meta, s->cfg.meta_mode, s->tree->pool, s->batch.blob.p, s->batch.blob.len, &out, &len,
			       &s->tree->stats.meta);
	if (rc || out == s->batch.blob.p)
		return rc;
	s->batch.blob.len = 0;
	return img_buf_put(&s->batch.blob, out, len);
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

int sup_capture(struct sup *s)
{
	double *phase = s->tree->stats.stop_phase_seconds, t = stopclock_now();
	stage_begin_cut(s);
	/* first: it runs the main thread (for a system call), capture_threads then reads its registers */
	int rc = timers_capture(s);
	if (rc || (rc = pending_capture(s)) != 0 || (rc = limits_capture(s)) != 0)
		return rc;
	double t0 = stopclock_now();
	if ((rc = capture_threads(s)) != 0)
		return rc;
	s->tree->stats.thread_capture_seconds += stopclock_now() - t0;
	s->tree->stats.thread_captures += (uint64_t)s->nthr;
	if ((rc = altstack_ask(s)) != 0)
		return rc;
	if ((rc = sup_nvm_stop(s)) != 0)
		return rc;
	const struct user_regs_struct *regs = &s->thr[0].regs;
	s->sp = regs->rsp;
	if (s->new_image && !s->tid_offset) {
		/* glibc caches the thread id in its TCB -- the id the program sees, in its own pid
		 * namespace not ours; resume rewrites it, and recreates threads with the kernel
		 * clearing it at their exit (pthread_join), only if we find it here */
		uint32_t tid = 0, own = (uint32_t)(s->thr[0].own ? s->thr[0].own : s->pid);
		struct iovec l = { &tid, 4 }, r = { (void *)(uintptr_t)(regs->fs_base + 720), 4 };
		if (process_vm_readv(s->pid, &l, 1, &r, 1, 0) == 4 && tid == own)
			s->tid_offset = 720;
	}
	stopclock_lap(phase, STOP_THREADS, &t);
	int n = 0;
	if ((rc = proc_maps(s->pid, s->now, MAX_VMAS, &n)) != 0 || (rc = split_at_saved(s, &n)) != 0)
		return rc;
	stopclock_lap(phase, STOP_MAPS, &t);
	mark_stacks(s, n);
	if ((rc = follow_map(s, n, s->prev, s->nprev)) != 0 || (rc = stage_keep_precopied(s)) != 0)
		return rc;
	stopclock_lap(phase, STOP_FOLLOW, &t);
	if ((rc = stage_dirty(s)) != 0)
		return rc;
	stopclock_lap(phase, STOP_DIRTY, &t);
	if ((rc = stage_read(s)) != 0)
		return rc;
	stopclock_lap(phase, STOP_READ, &t);
	stage_judge_precopy(s);
	if ((rc = build_blob(s, &s->batch.blob, n)) != 0)
		return rc;
	stopclock_lap(phase, STOP_BLOB, &t);
	if ((rc = stage_metadata(s)) != 0)
		return rc;
	stopclock_lap(phase, STOP_METADATA, &t);
	memcpy(s->prev, s->now, (size_t)n * sizeof *s->prev);
	s->nprev = n;
	s->new_image = 0;
	return 0;
}

/* ------------------------------------------------------------------ the commit */

struct diff_ctx {
	struct sup *s;
	uint32_t region;
	uint64_t base;  /* region offset of the compared bytes */
	const uint8_t *cur;
	int rc;
};

static void write_changed(void *vctx, uint64_t off, uint64_t len)
{
	struct diff_ctx *d = vctx;
	if (!d->rc)
		d->rc = prosper_pool_write(d->s->tree->pool, d->region, d->base + off, d->cur + off, len);
}

static void count_only(void *ctx, uint64_t off, uint64_t len) { (void)ctx, (void)off, (void)len; }

/* The stack's sub-page diff pays for itself only when few granules change; when a checkpoint
 * finds nearly all compared bytes changed (a Stream-like frame), the next ones write the
 * tracker's pages whole without comparing, and probe again after DENSE_HOLD checkpoints.
 * 96 %: whole pages then cost at most 1/0.96 = 1.04x the changed bytes. */
#define DENSE_PERCENT 96
#define DENSE_HOLD 8

static int write_chunk(struct sup *s, const struct chunk *c, struct ckpt_stats *cs)
{
	const uint8_t *cur = s->batch.data + c->at;
	int mode = c->stack ? s->cfg.stack_mode : s->cfg.heap_mode;
	uint32_t g = c->stack ? s->cfg.stack_gran : s->cfg.heap_gran;
	int compare = !c->whole && ((mode == TRACK_MODE_DIFF && !(c->stack && s->stack_dense_left)) || (c->stack && s->cfg.stats_exact));
	if (compare) {
		if (c->len > s->old_cap) {
			free(s->old);
			s->old_cap = c->len;
			s->old = malloc(s->old_cap);
			if (!s->old) {
				s->old_cap = 0;
				return -ENOMEM;
			}
		}
		int rc = prosper_pool_region_read(s->tree->pool, c->region, c->off, s->old, c->len);
		if (rc)
			return rc;
	}
	uint64_t written = c->len;
	int rc = 0;
	if (c->stack && !c->whole && s->cfg.stats_exact)
		cs->stack_exact += prosper_track_diff(s->old, cur, c->len, 8, count_only, NULL);
	int dense_skip = c->stack && s->stack_dense_left > 0;
	if (c->whole || mode != TRACK_MODE_DIFF || dense_skip) {
		rc = prosper_pool_write(s->tree->pool, c->region, c->off, cur, c->len);
	} else {
		struct diff_ctx d = { s, c->region, c->off, cur, 0 };
		written = prosper_track_diff(s->old, cur, c->len, g, write_changed, &d);
		rc = d.rc;
	}
	if (rc)
		return rc;
	if (c->whole) {
		cs->new_bytes += written;
	} else if (c->stack) {
		cs->stack += written;
		cs->stack_pages += c->len;
	} else {
		cs->other += written;
		cs->other_pages += c->len;
	}
	return 0;
}

int sup_write_batch(struct sup *s, struct ckpt_stats *cs)
{
	for (size_t i = 0; i < s->batch.nchunks; i++) {
		if (!s->batch.chunks[i].len)
			continue; /* pre-copied for a mapping gone at the stop (stage.h) */
		int rc = write_chunk(s, &s->batch.chunks[i], cs);
		if (rc)
			return rc;
	}
	return sup_nvm_commit(s);
}

void sup_committed(struct sup *s, const struct ckpt_stats *cs)
{
	/* adapt the stack's granularity to the density just seen */
	if (s->cfg.stack_mode == TRACK_MODE_DIFF) {
		if (s->stack_dense_left > 0)
			s->stack_dense_left--, s->tree->stats.bytes.stack_dense_checkpoints++;
		else if (cs->stack_pages && cs->stack * 100 >= cs->stack_pages * DENSE_PERCENT)
			s->stack_dense_left = DENSE_HOLD;
	}
	metalog_committed(s->meta);
}

/* The soundness oracle: after the commit, with the child still stopped, every saved mapping read
 * back from the pool equals the child's memory (the stack from SP-128 up). */
int sup_verify(struct sup *s)
{
	size_t cap = 0;
	uint8_t *img = NULL, *live = NULL;
	int rc = 0;
	for (int i = 0; i < s->nvmas && !rc; i++) {
		struct vma *v = &s->vmas[i];
		uint64_t from = v->sp ? prosper_stack_active_from(v->sp, v->start, v->end, 8) - v->start : 0;
		size_t len = v->end - v->start - from;
		if (len > cap) {
			free(img);
			free(live);
			cap = len;
			img = malloc(cap);
			live = malloc(cap);
			if (!img || !live) {
				rc = -ENOMEM;
				break;
			}
		}
		if (prosper_pool_region_read(s->tree->pool, (uint32_t)v->region, from, img, len) ||
		    proc_mem_read(s->pid, v->start + from, live, len) != 0) {
			rc = -EIO;
			break;
		}
		uint64_t differ = 0, first = 0, last = 0;
		for (size_t b = 0; b < len; b++)
			if (img[b] != live[b]) {
				if (!differ++)
					first = b;
				last = b;
			}
		if (differ) /* where the oracle disagreed: what a bug report needs */
			fprintf(stderr, "%s: verify: checkpoint %llu: %llu bytes differ in %llx-%llx %s (sp %llx), "
				"first at %llx, last at %llx\n", sup_command(), (unsigned long long)s->tree->stats.checkpoints + 1,
				(unsigned long long)differ, (unsigned long long)v->start, (unsigned long long)v->end,
				v->path[0] ? v->path : "[anonymous]", (unsigned long long)v->sp,
				(unsigned long long)(v->start + from + first), (unsigned long long)(v->start + from + last));
		s->tree->stats.bytes.mismatches += differ;
		s->tree->stats.bytes.verified_bytes += len;
	}
	free(img);
	free(live);
	return rc;
}

/* ------------------------------------------------------------------ tracking */

int sup_start_tracking(struct sup *s, int uffd)
{
	int all_full = s->cfg.stack_mode == TRACK_MODE_FULL && s->cfg.heap_mode == TRACK_MODE_FULL;
	if (all_full && uffd >= 0) {
		close(uffd);
		uffd = -1;
	}
	return prosper_track_open(&s->track, all_full ? PROSPER_TRACK_FULL : PROSPER_TRACK_PAGE, s->pid, uffd);
}

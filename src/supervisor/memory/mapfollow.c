/* mapfollow.c -- a process's saved regions follow its map at each stop (capture.c): new mappings
 * added and protected before they are copied, changed ones resized, vanished ones removed; and,
 * while the program runs, the pre-copy pass's adoption of mappings that appeared (stage.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "mapfollow.h"
#include "stage.h"
#include "sup.h"
#include "nvm.h"

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

void sup_known_file_refresh(struct known_file *k)
{
	struct stat st;
	if (stat(k->path, &st) != 0)
		return; /* gone: the resume's check says so */
	uint64_t mtime = (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec;
	if ((uint64_t)st.st_ino == k->id.ino && (uint64_t)st.st_dev == k->id.dev && (uint64_t)st.st_size == k->id.size &&
	    mtime == k->id.mtime_ns)
		return;
	struct file_id now;
	if (file_identity(k->path, &now) == 0)
		k->id = now;
}

/* A new mapping: its pages that hold something.  A region starts zero-filled, so untouched
 * anonymous pages need no copy; a file mapping's absent pages are the file's, so all of it.
 * Called before the mapping is write-protected (prosper_track_add): the protection leaves a
 * marker in every empty page's entry, which the kernel reports as a swapped page. */
static int stage_new(struct sup *s, struct vma *v, uint64_t a, uint64_t b)
{
	if (v->path[0] == '/')
		return stage(s, v, a, b, 1);
	long k = prosper_track_present(&s->track, a, b, s->cut.ranges, MAX_RANGES);
	if (k < 0)
		return (int)k;
	for (long j = 0; j < k; j++) {
		int rc = stage(s, v, s->cut.ranges[j].start, s->cut.ranges[j].end, 1);
		if (rc)
			return rc;
	}
	return 0;
}

struct vma *map_find_saved(struct sup *s, uint64_t start)
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
	v->added_gen = s->tree->cut.gen;
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
int map_split_at_saved(struct sup *s, int *n)
{
	static uint64_t cuts[MAX_VMAS];
	static int cut_in[MAX_VMAS]; /* the mapping each cut lies in */
	int ncuts = 0;
	for (int k = 0; k < s->nvmas; k++) { /* which mapping holds each start: a binary search */
		uint64_t a = s->vmas[k].start;
		int lo = 0, hi = *n;
		while (lo < hi) {
			int mid = (lo + hi) / 2;
			if (s->cut.now[mid].end <= a)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < *n && s->cut.now[lo].start < a && s->cut.now[lo].path[0] != '[')
			cuts[ncuts++] = a;
	}
	if (!ncuts)
		return 0;
	if (*n + ncuts > MAX_VMAS)
		return -ENOSPC;
	qsort(cuts, (size_t)ncuts, sizeof *cuts, cmp_u64);
	for (int c = 0, i = 0; c < ncuts; c++) {
		while (s->cut.now[i].end <= cuts[c])
			i++;
		cut_in[c] = i;
	}
	/* from the back, so that no mapping is overwritten before it is cut */
	int j = *n + ncuts - 1, c = ncuts - 1;
	for (int i = *n - 1; i >= 0; i--) {
		uint64_t start = s->cut.now[i].start, offset = s->cut.now[i].offset, end = s->cut.now[i].end;
		for (; c >= 0 && cut_in[c] == i; c--, j--) {
			s->cut.now[j] = s->cut.now[i];
			s->cut.now[j].start = cuts[c];
			s->cut.now[j].end = end;
			s->cut.now[j].offset = offset + (cuts[c] - start); /* as the kernel numbers a split */
			end = cuts[c];
		}
		if (j != i)
			s->cut.now[j] = s->cut.now[i];
		s->cut.now[j].start = start;
		s->cut.now[j].end = end;
		j--;
	}
	*n += ncuts;
	return 0;
}

/* Is now[i] saved, with a saved mapping of the same start and end (the same one, unless it was
 * replaced)? */
static int saved_as_before(struct sup *s, int i)
{
	const struct vma *old = s->cut.now[i].seen ? map_find_saved(s, s->cut.now[i].start) : NULL;
	return old && old->end == s->cut.now[i].end;
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
			int all = prosper_track_covers(&s->track, s->cut.now[i].start, s->cut.now[j].end);
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
 * vanished ones removed.  On return s->cut.now[i].seen says whether mapping i is saved. */
int map_follow(struct sup *s, int n, const struct vma *prev, int nprev)
{
	int rc, ok_to = -1, tried_to = -1;
	for (int i = 0; i < s->nvmas; i++)
		s->vmas[i].seen = 0;
	for (int i = 0; i < n; i++)
		s->cut.now[i].seen = should_save(s, &s->cut.now[i], prev, nprev);
	for (int i = 0; i < n; i++) {
		struct vma *nv = &s->cut.now[i];
		if (!nv->seen)
			continue;
		struct vma *old = map_find_saved(s, nv->start);
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
int map_guarded_like_a_stack(const struct vma *now, int i)
{
	const struct vma *v = &now[i];
	return !v->path[0] && !strcmp(v->perms, "rw-p") && i > 0 && now[i - 1].end == v->start &&
	       !strncmp(now[i - 1].perms, "---p", 4) && !now[i - 1].path[0];
}

/* Is this new mapping maybe a stack, whose live part only its thread's SP, read at the stop,
 * tells?  The main one, or one shaped like a thread's. */
static int maybe_stack(const struct vma *now, int i) { return vma_is_stack(&now[i]) || map_guarded_like_a_stack(now, i); }

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
	if (proc_maps(s->pid, s->cut.now, MAX_VMAS, &n) != 0 || map_split_at_saved(s, &n) != 0)
		return 0; /* ending, or the map is being changed: the stop follows it */
	for (int i = 0; i < n; i++) {
		struct vma *nv = &s->cut.now[i];
		if (!vma_is_saved(nv) || maybe_stack(s->cut.now, i) || sup_nvm_find(s, nv->start))
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
			s->cut.ranges[0] = (struct prosper_range){ v->start, v->end }; /* absent pages are the file's */
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
			nb = union_ranges(before, na, after, nb, s->cut.ranges);
		for (long j = 0; j < nb; j++)
			if ((rc = stage(s, v, s->cut.ranges[j].start, s->cut.ranges[j].end, 1)) != 0)
				return rc;
	}
	return 0;
}

/* track.h -- dirty-memory trackers for a supervised process (docs/architecture.md: one tracker interface).
 *
 * A tracker answers one question per checkpoint: which parts of a region of the child's
 * address space were written since the last time it was asked.  Implementations:
 *   page  userfaultfd write-protect (asynchronous mode) + PAGEMAP_SCAN: the written pages,
 *         collected and re-protected in one atomic ioctl.  The Dirtybit baseline of the papers.
 *         Soft-dirty bits are compiled out of this kernel and silently report nothing, so they
 *         are never used; prosper_track_probe() checks that the mechanism really works.
 *   full  every page of the region (the correctness reference).
 * Sub-page precision (the `diff` tracker) is a filter over a page tracker's answer, done by the
 * caller against its last committed image: see prosper_track_diff().
 *
 * Invariants: a page written after prosper_track_collect() returns is reported by the next
 * call (collection and re-protection are one atomic step); a region registered with
 * prosper_track_add() reports every page of it at its first collection.
 */
#ifndef PROSPER_TRACK_H
#define PROSPER_TRACK_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

enum prosper_track_kind { PROSPER_TRACK_PAGE = 1, PROSPER_TRACK_FULL = 2 };

struct prosper_track {
	int kind;
	pid_t pid;
	int uffd;          /* the child's userfaultfd (page tracker), or -1 */
	int pagemap_fd;    /* /proc/PID/pagemap */
	char err[160];
};

/* A dirty range, page aligned: [start, end). */
struct prosper_range {
	uint64_t start, end;
};

/* Open a tracker for pid; uffd is the child's userfaultfd (ownership passes) or -1 for `full`. */
int prosper_track_open(struct prosper_track *t, int kind, pid_t pid, int uffd);
void prosper_track_close(struct prosper_track *t);
/* Start tracking [start, end) (page aligned): register and write-protect it. */
int prosper_track_add(struct prosper_track *t, uint64_t start, uint64_t end);
/* Stop write-protecting [start, end) (still registered): writes there are no longer reported
 * and cost no fault; prosper_track_rearm() protects it again (the caller copies it meanwhile). */
int prosper_track_unprotect(struct prosper_track *t, uint64_t start, uint64_t end);
int prosper_track_rearm(struct prosper_track *t, uint64_t start, uint64_t end);
/* Written pages of [start, end) since the last call (or since add), re-armed atomically.
 * Writes up to max ranges to out; returns the count, or negative on error (t->err).  Past max
 * ranges the last one grows to cover the rest: a superset, never a loss. */
long prosper_track_collect(struct prosper_track *t, uint64_t start, uint64_t end, struct prosper_range *out,
			   size_t max);
/* The same for a process that runs while it is scanned, whose map may change under the scan:
 * a mapping that is not (or no longer) registered is skipped instead of failing the call (which
 * would lose what the kernel had already re-protected).  The caller notices the map's change
 * at its next stop. */
long prosper_track_collect_live(struct prosper_track *t, uint64_t start, uint64_t end, struct prosper_range *out,
				size_t max);
/* The same for a stack whose live part begins inside the page at `start` (the page of SP - 128):
 * that page is reported if written but keeps its mark, the pages above are re-armed.  The caller
 * saves only the live part of the first page; the part below, written while dead, must still be
 * reported once the stack grows over it, even if nothing writes that page again. */
long prosper_track_collect_stack(struct prosper_track *t, uint64_t start, uint64_t end, struct prosper_range *out,
				 size_t max);

/* The pages of [start, end) that hold something (present or swapped), as ranges; changes
 * nothing.  Returns the count, or negative on error. */
long prosper_track_present(struct prosper_track *t, uint64_t start, uint64_t end, struct prosper_range *out,
			   size_t max);
/* Pages of [start, end) in memory now (not swapped): after prosper_track_add() the protection
 * leaves a marker in every empty page's entry that prosper_track_present() counts as swapped;
 * this one does not. */
long prosper_track_resident(struct prosper_track *t, uint64_t start, uint64_t end, struct prosper_range *out,
			    size_t max);

/* 1 if every page of [start, end) is tracked (write-protect registered), 0 if some page is not
 * (the mapping was replaced since it was added), negative on error.  Always 1 for `full`. */
int prosper_track_covers(struct prosper_track *t, uint64_t start, uint64_t end);

/* 1 if some present page of [start, end) is not the mapped file's own (anonymous memory, or a
 * private copy made by a write: relocated data that was later made read-only), else 0. */
int prosper_track_has_private_pages(struct prosper_track *t, uint64_t start, uint64_t end);

/* prosper_track_diff -- sub-page filter: compare `len` bytes of new contents with the old image at
 * granule g (power of two, 8..4096); calls emit(ctx, offset, length) for each run of granules that
 * changed.  Returns the number of bytes emitted. */
uint64_t prosper_track_diff(const uint8_t *old, const uint8_t *cur, uint64_t len, uint32_t g,
			    void (*emit)(void *ctx, uint64_t off, uint64_t len), void *ctx);

#ifdef __cplusplus
}
#endif
#endif

/* snapshot.h -- a large cut read from a copy-on-write view of the program, after its stop
 * (docs/run-resume.md "Large programs: copy-on-write views").
 *
 * A stop that copies every written byte lasts as long as the copy: seconds for a program that
 * writes gigabytes between checkpoints.  Instead, once the cut's written pages are staged
 * (stage.h), the stopped program is made to fork: the kernel copies its page tables, not its
 * memory, and the child -- the view -- holds the memory exactly as it is at the cut.  The program
 * then goes on (its next write to each page copies that page, in the kernel), and the commit reads
 * the staged ranges from the view, then ends it.  The stop costs the fork (about 15 ms per GiB in
 * place here) instead of the copy (about 3 GB/s on two cores).
 *
 * The commit reads the view a window at a time (at most SNAPSHOT_WINDOW bytes, into the batch's
 * own buffer, kept in place: stage_window) and writes each window into the pool before it reads
 * the next: a 4 GiB cut read
 * whole needed 4 GiB more of the supervisor's memory, each page of it zeroed by the kernel on its
 * first touch (a third of both cores' time while the view lived, here).
 *
 * The view is made by the clone() system call injected into a thread of the program (inject.h):
 * CLONE_PARENT, so that it is the supervisor's child and not the program's (the program never sees
 * it in wait(), nor a SIGCHLD for it); CLONE_FILES, so that it shares the program's fd table
 * instead of holding every file, pipe and socket open a second time.  It never runs: it stays in
 * its first ptrace stop, its registers set to call exit_group if it is ever let go.
 *
 * Invariants
 *   - A view is made only of a process whose parent is the supervisor (a child of the program
 *     forked with CLONE_PARENT would be its parent's child), after its memory is fully in place (no
 *     lazy fill under way), and only for private mappings: shared memory is read in the stop
 *     (sharedmem.h) and NVM memory is the pool's.
 *   - A fork does not give a view memory advised MADV_DONTFORK (absent) or MADV_WIPEONFORK
 *     (zeros).  The launch filter sends those two calls to the supervisor (filefilter.h), and a
 *     process that made one never gets a view (snapshot_forbid); so a process not under the
 *     filter never gets one either.  The view's map is checked before it is read all the same: a
 *     staged range it does not hold fails the commit.
 *   - The view is read, window by window, before the commit record, and ended by the commit
 *     (read or not); a cut abandoned before its commit ends it too (snapshot_drop).  A view
 *     outlives no commit.  The pool sees the same writes in the same epoch as when the cut was read
 *     whole first: only the order of reads and writes changes, never what the commit record covers.
 *   - A view is made only while the machine's available memory (MemAvailable) could hold the
 *     program's resident memory a second time: what it needs if it rewrites all of it while the
 *     view lives.
 *   - --snapshot copy never makes one.  auto (the default) makes a view only when the stop's copy would last more than
 *     SNAPSHOT_LONG_STOP_S and more than twice the fork, both priced from what this run measured
 *     (the stops' read rate; the last fork per byte in place); at least SNAPSHOT_MIN_BYTES staged.
 *     A view shortens the stop but does not make the cut cheaper: the program copies, one fault
 *     at a time, each page it writes while the view lives -- a shorter cut is copied in the stop.  A fork that fails (memory, process limits, a
 *     seccomp filter) falls back to the copy and is not tried again for that process.
 */
#ifndef PROSPER_SUP_SNAPSHOT_H
#define PROSPER_SUP_SNAPSHOT_H
#include <stddef.h>
#include "sup.h"

#define SNAPSHOT_MIN_BYTES (16ull << 20)
#define SNAPSHOT_LONG_STOP_S 0.05 /* auto: a copy priced longer than this is a long stop */

/* At the stop, once the cut's pages are staged: read them now (stage_read), or fork a view for
 * the commit to read them from.  0, or a negative errno with why (the copy's failure). */
int snapshot_or_read(struct sup *s, char *why, size_t whylen);

/* In the commit, before its batch is written: s's view, if it has one, checked to hold every
 * staged range, and the pre-copied bytes it overrides read from it.  0, or -EIO with why (the view
 * ended).  The rest of the view is read by snapshot_next_window. */
int snapshot_read(struct sup *s, char *why, size_t whylen);

/* The commit's way through the chunks still in s's view (batch.chunks from read_from on). */
#define SNAPSHOT_WINDOW (32ull << 20)
#define SNAPSHOT_WINDOW_PARTS 8192u /* 32 MiB of separate pages */
struct view_window {
	size_t chunk;        /* the next chunk to read */
	uint64_t done;       /* of it, the bytes read already */
	uint8_t *data;       /* the window's bytes (the batch's buffer) */
	struct chunk *parts; /* the parts of chunks it holds, `at` in data */
};
void snapshot_window_begin(struct sup *s, struct view_window *w);
void snapshot_window_end(struct view_window *w);
/* The next window: up to SNAPSHOT_WINDOW bytes of the chunks left, read from the view into
 * w->data and described as chunks in w->parts (their `at` in the window; a chunk
 * too large for a window is split at a page).  The number of parts, 0 when all are read, or a
 * negative errno with why. */
long snapshot_next_window(struct sup *s, struct view_window *w, char *why, size_t whylen);

/* Process s advised memory MADV_DONTFORK or MADV_WIPEONFORK: no view of it from now on. */
void snapshot_forbid(struct sup *s);

/* The view ended unread: the cut was abandoned, or the program is gone. */
void snapshot_drop(struct sup *s);

#endif

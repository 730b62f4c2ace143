/* stage.h -- the bytes of one checkpoint, read from a process into s->batch (stage.c), to be
 * written into the pool by the commit.
 *
 * With --copy stop every dirty byte is read while the program is stopped, by every core
 * (readers.h).  With --copy precopy
 * most are read before the stop, while the program runs: a pass a little before each cut takes
 * the pages written since the last cut out of the tracker (PAGEMAP_SCAN re-protects them in the
 * same step) and reads them; a dense mapping (copied whole, unprotected) is protected again and
 * read whole.  The stop then reads only what was written after the pass.  Stacks are left to the
 * stop: only there is SP known, and they are small.
 *
 * Invariants
 *   - A page whose written mark a collect took is in the batch, read AFTER the collect re-protected
 *     it: a write after the read marks it again, so the stop reads it again.  A pass whose read
 *     failed (a mapping unmapped meanwhile) leaves its chunks to be read again at the stop.
 *   - A range of a region is in the batch at most once: a page the stop reads again overwrites
 *     its pre-copied bytes in place.  The commit's diff compares with the committed image, not
 *     with the batch, so two chunks of one range would let the older win wherever the newer
 *     equals the image.
 *   - Pre-copied chunks of a mapping that is gone or replaced at the stop are dropped (len 0):
 *     its region is removed, or its new one copied whole; of one that shrank, clipped.
 *   - One pass per cut, never while a commit is under way (the batch is the commit's then).
 */
#ifndef PROSPER_SUP_STAGE_H
#define PROSPER_SUP_STAGE_H
#include "sup.h"

/* Add child bytes [a, b) of v to the batch.  `whole`: a new mapping, written as it is; else
 * pages a tracker named, filtered at the commit by the region's diff granularity.  A stack is
 * clipped to [SP-128, top).  Not merged with pre-copied chunks: for ranges no pass could have
 * read (new mappings, a grown mapping's new part). */
int stage(struct sup *s, struct vma *v, uint64_t a, uint64_t b, int whole);

/* At the stop: [a, b) of v, ascending per mapping -- what overlaps v's pre-copied chunks is read
 * again into them, the rest added. */
int stage_range(struct sup *s, struct vma *v, uint64_t a, uint64_t b);

/* Read what was staged and not read yet (many ranges per system call).  0, or -EIO with why
 * (why.h). */
int stage_read(struct sup *s, char *why, size_t whylen);
/* The same, from process `from` (the program, or its copy-on-write view: snapshot.h), for the
 * stop (stopped = 1: shared out between the cores) or beside the running program (0: this thread
 * alone), *bytes counting what it read.  chunks = 0: only the pre-copied bytes to read again (a
 * view's chunks are read a window at a time by the commit). */
int read_staged(struct sup *s, pid_t from, uint64_t *bytes, int stopped, int chunks, char *why, size_t whylen);
/* The bytes staged and not read yet. */
uint64_t stage_unread_bytes(const struct sup *s);
/* At the stop: the most the next stops may read (the saved mappings' size), for stage_ahead;
 * stage_read notes it itself. */
void stage_note_could(struct sup *s);

/* After a commit, beside the running program: the batch's buffer grown and its pages faulted in
 * for what the next stops may read (twice the largest cut, at least `floor`, within the saved
 * mappings' size, and never less than the first 1 MiB: stage.c), so that a stop does not pay a
 * fault and a zeroed page per page it reads (a first large checkpoint read at 1.4 GB/s instead
 * of 6).  Also once before the first stop, while the program starts.  The bytes in place now. */
size_t stage_ahead(struct sup *s, uint64_t floor);

/* In the commit, once the bytes the batch read are written: its buffer, at least `need` bytes,
 * for a copy-on-write view's window (snapshot.h); its pages stay in place for the next stops.
 * NULL if it cannot grow. */
uint8_t *stage_window(struct sup *s, size_t need);

/* The batch's buffer given back (the process is gone). */
void stage_free(struct batch *bt);

/* The start of a capture: a batch that holds no pre-copy is emptied. */
void stage_begin_cut(struct sup *s);

/* After the map was followed at the stop: the pre-copied chunks of mappings that are gone or
 * replaced are dropped, of shrunk ones clipped, and each mapping's are indexed for stage_range. */
int stage_keep_precopied(struct sup *s);

/* After the stop's reads: a mapping whose pre-copied bytes were mostly read again is left out of
 * the next passes for a while (stage.c). */
void stage_judge_precopy(struct sup *s);

/* Empty the batch, pre-copy included: the image it was read from is gone (exec). */
void stage_forget(struct sup *s);

#endif

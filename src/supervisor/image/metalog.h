/* metalog.h -- the process metadata of each epoch kept as a redo log of changes (Kindle's
 * "saved state", papers/kindle.txt §III) instead of rewritten whole.
 *
 * The metadata of an epoch is what image.h describes: the register context of every thread,
 * the memory map (VMAs), the open files, the mapped files' identities and the launch record.
 * Two ways to keep it (`prosper run --metadata log|rewrite`, log by default; metalog.c stages an
 * epoch, metalog_read.c reads a committed one back):
 *   rewrite  the epoch blob is the whole image.h blob, written into the pool's metadata slot of
 *            every epoch (both slots are the two contexts; the commit word flips them).
 *   log      the image lives in a REDO region of the pool named "metadata", laid out as tables
 *            of fixed slots; each checkpoint logs only what changed: the register context, one
 *            record per VMA added, removed or changed, one per fd or mapped file that changed,
 *            and the strings appended to an append-only string heap.  The epoch blob is a stub
 *            naming that region.  The pool's two-step commit makes the log durable with the
 *            epoch, flips the commit word, applies the log to the image, and re-applies it at
 *            recovery (Kindle's MODIFYING -> UPDATED; docs/run-resume.md maps the states).
 *            No second commit protocol: every byte goes through prosper_pool_write.
 *
 * Region layout (version 4 -- it holds image.h structs, of image version 5; little-endian host structs):
 *   head      struct meta_head
 *   context   struct img_hdr (string fields are heap offsets; counts other than nthreads,
 *             argc, envc are 0), the main thread's xstate, then thr_cap entries of
 *             { struct img_thread, xstate } -- only the first nthreads are meaningful
 *   vma slots vma_cap  x struct img_vma   (free: end == 0)
 *   fd slots  fd_cap   x struct img_fd    (free: type == 0)
 *   file slots file_cap x struct img_file (free: path == 0)
 *   heap      strings_cap bytes; [0, 8) reserved (so no string is at offset 0); strings are
 *             appended, never moved; argv+environment are one block of argc+envc strings.
 * A slot keeps its place while its key lives (VMA start, fd number, file path), so a change is
 * one record.  When a table or the heap is full, or the xstate size changes, the region is
 * laid out again with larger tables and written whole (a "rebuild"); so is the first
 * checkpoint of a run or a resume (the supervisor's view of the slots is DRAM state).
 *
 * Invariants
 *   - metalog_load() accepts only a region it can bounds-check; the blob it rebuilds is checked
 *     again by img_decode().  A damaged region is a refusal to resume, never a guess.
 *   - The writes of one checkpoint never overlap (each slot at most once), as the redo mode
 *     asks (pool.h).
 *   - What metalog_load() rebuilds from a committed epoch describes the same process as the
 *     blob metalog_stage() was given for that epoch (same VMAs in address order, fds in fd
 *     order, files in heap order, same strings and registers).
 */
#ifndef PROSPER_SUP_METALOG_H
#define PROSPER_SUP_METALOG_H
#include <stddef.h>
#include <stdint.h>
#include "image.h"
#include "prosper/pool.h"

enum meta_mode { META_REWRITE = 1, META_LOG = 2 };

#define META_REGION_NAME "metadata"

/* Bytes and records one checkpoint (or, summed, a run) put into the metadata. */
struct metalog_stats {
	uint64_t bytes;        /* persisted metadata: the blob, or stub + log header + records */
	uint64_t records;      /* log records (log mode) */
	uint64_t vma_add, vma_remove, vma_change, fd_change, file_change;
	uint64_t rebuilds;     /* checkpoints that wrote the region whole */
};

struct metalog;

/* A metalog whose region (log mode) is named name; metalog_new() names it META_REGION_NAME,
 * the program's first process (a tree's other processes have "metadata.PID"). */
struct metalog *metalog_new(void);
struct metalog *metalog_new_named(const char *name);
void metalog_delete(struct metalog **m);

/* Stage the metadata of the next epoch: blob is a whole image.h blob (build_blob's).
 * rewrite: *out = blob.  log: the changes against the last committed image are written into
 * the region (added or resized first if needed) and *out is the stub.  Adds to *st.
 * 0, or negative (pool error, -ENOMEM, -EINVAL for a blob img_decode refuses). */
int metalog_stage(struct metalog *m, int mode, prosper_pool *pool, const void *blob, size_t len,
		  const void **out, size_t *out_len, struct metalog_stats *st);
/* The epoch staged last was committed.  A stage never confirmed (its commit failed) makes the
 * next stage rebuild the region. */
void metalog_committed(struct metalog *m);
/* Continue from a pool whose committed blob may be a stub (a resume, or after recovery): the
 * region it names is reused, and its next stage rebuilds it. */
void metalog_attach(struct metalog *m, prosper_pool *pool);
/* The same, from the stub (or blob) of one process of a tree's epoch. */
void metalog_attach_stub(struct metalog *m, prosper_pool *pool, const void *blob, size_t len);

/* Is this committed blob a log-mode stub? */
int metalog_is_stub(const void *blob, size_t len);
/* Rebuild the whole image.h blob of the committed epoch from the region a stub names.
 * 0 and a malloc'd *blob, or -EINVAL/-ENOMEM/pool error with *why a one-line reason. */
int metalog_load(prosper_pool *pool, const void *stub, size_t stub_len, void **blob, size_t *blob_len,
		 const char **why);

/* The parser behind metalog_load: the region's bytes -> the image.h blob (malloc'd), or -EINVAL
 * for anything it cannot bounds-check, -ENOMEM. */
int metalog_decode(const void *region, size_t len, void **blob, size_t *blob_len);

/* Test hook: 1 = a removed VMA's slot is not logged (the mutant the crash test must catch). */
extern int metalog_mutation;

#endif

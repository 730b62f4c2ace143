/* filecover.h -- which bytes of which files the journal of the current cut holds already
 * (filechange.c).
 *
 * Undone newest first, the oldest record of a byte since a cut is the one that puts it back; a
 * later overwrite of the same byte in the same interval needs no record of its own.  SQLite
 * rewrites the same pages many times between two checkpoints: without this, each rewrite was a
 * record and, with a pool on a disk, a flush.
 *
 * Invariants
 *   - A range is covered only once its old bytes are recorded (the caller covers after writing).
 *   - Coverage lives for one cut's journal file: fcover_reset at every switch.
 *   - Keyed by inode, as the bytes are (a file's other names share them); a file removed and a
 *     new one given the same inode within the interval is a file made after the cut, whose
 *     bytes need no record.
 *   - When a file has more separate ranges than are kept, what is not kept is simply recorded
 *     again: never a byte left out.
 */
#ifndef PROSPER_SUP_FILECOVER_H
#define PROSPER_SUP_FILECOVER_H
#include <stddef.h>
#include <stdint.h>

struct fcover;

struct frange {
	uint64_t off, end; /* [off, end) */
};

#define FCOVER_MAX_GAPS 64

/* The parts of [off, end) of inode (dev, ino) not covered yet: written to gaps (at most
 * FCOVER_MAX_GAPS; beyond, the whole range is one gap), their number returned.  Nothing is
 * covered by this call. */
size_t fcover_gaps(struct fcover **c, uint64_t dev, uint64_t ino, uint64_t off, uint64_t end, struct frange *gaps);

/* [off, end) of inode (dev, ino) recorded: covered from now on (as far as memory allows). */
void fcover_add(struct fcover **c, uint64_t dev, uint64_t ino, uint64_t off, uint64_t end);

/* Forget everything (a new journal file). */
void fcover_reset(struct fcover **c);

#endif

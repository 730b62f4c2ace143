/* fillcopy.h -- a resume's fill of the mappings it just made anonymous, with UFFDIO_COPY through
 * the program's userfaultfd, on every core (fillcopy.c).
 *
 * A write into a fresh anonymous page first faults in a zeroed page, then copies over it;
 * UFFDIO_COPY puts the page in place with its bytes.  The source is the pool's mapping, whose own
 * first touches cost as much again, so one thread fills at about 2.2 GB/s here: the mappings are
 * cut into chunks that several threads take in turn.
 *
 * Invariants
 *   - The program is stopped throughout: nothing but these copies touches the ranges while they
 *     are registered for missing faults, and every range is unregistered before this returns (a
 *     fault there later would wait for a reader that is not there); one that cannot be
 *     unregistered fails the restore.
 *   - A mapping whose copy the kernel refused, or that could not be registered, is not marked
 *     done: the caller writes it whole (what was copied is written again, the same bytes).
 *   - The pool is only read.
 */
#ifndef PROSPER_SUP_FILLCOPY_H
#define PROSPER_SUP_FILLCOPY_H
#include <stdint.h>
#include "image.h"

struct sup;
/* Fill every mapping i of im with eligible[i] set (writable, made anonymous by the restore) from
 * its pool region through uffd; done[i] = 1 for each one filled whole.  The bytes copied are added
 * to the run's restored_bytes and restore_copied_bytes.  0, or -1 if a range could not be
 * unregistered (the process must then not run: a fault in a hole there would wait forever). */
int fillcopy_run(struct sup *s, int uffd, const struct img *im, const uint8_t *eligible, uint8_t *done);

#endif

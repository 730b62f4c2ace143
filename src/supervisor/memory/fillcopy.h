/* fillcopy.h -- a resume's fill of the mappings it just made anonymous, with UFFDIO_COPY through
 * the program's userfaultfd (fillcopy.c): whole before the program runs (eager), or in the
 * background while it runs (lazy, the default).
 *
 * A write into a fresh anonymous page first faults in a zeroed page, then copies over it;
 * UFFDIO_COPY puts the page in place with its bytes.  The source is the pool's mapping, whose own
 * first touches cost as much again, so one thread fills at about 2.2 GB/s here: the mappings are
 * cut into chunks that several threads take in turn.
 *
 * Lazy: the mappings (empty) are registered for missing faults and write-protect together (one
 * registration: a range has one mode set on one userfaultfd), every page is put in place
 * write-protected (UFFDIO_COPY_MODE_WP: clean for the tracker, as after an eager fill and the
 * tracker's re-arm; the holes, never written, by one pass once the chunks are in place), and the
 * program runs at once.  A first touch of a page not there yet is a
 * missing fault that a server thread answers from the pool before anything else; the chunks
 * follow in the background.  fillcopy_complete puts the rest in place; the server stays and
 * answers later faults with zeros until fillcopy_end, at the first checkpoint's stop, drops the
 * missing mode (which costs every page its protection: hence after the capture, program stopped).
 *
 * Invariants
 *   - Eager: the program is stopped throughout; every range is unregistered before it returns (a
 *     fault there later would wait for a reader that is not there); one that cannot be
 *     unregistered fails the restore.
 *   - Lazy: nothing but the program's own loads and stores (and the kernel's on its behalf:
 *     signal frames, rseq) may touch a pending range until fillcopy_complete returns: the caller
 *     completes before any system call of the program runs (it is resumed under PTRACE_SYSCALL),
 *     at any other ptrace stop of it, and in the first checkpoint's stop before its capture (no
 *     pre-copy pass runs before: the pool does not change under the fill's reads).  So no munmap,
 *     mremap, madvise or fork can race the fill, and a page the program discarded is never
 *     filled again behind its back: once complete, a missing page is answered with zeros.
 *   - A page put in place is never written again by the fill (EEXIST: the program may have
 *     written it since): the fault server and the chunks race for pages, the first one wins.
 *   - A mapping whose copy the kernel refused, or that could not be registered, is not marked
 *     done: eager, the caller writes it whole (the same bytes again); lazy, fillcopy_finish fails
 *     and the program must not go on (pages of it would read as zeros).
 *   - The pool is only read: a kill at any moment of a fill leaves it resumable as it was.
 */
#ifndef PROSPER_SUP_FILLCOPY_H
#define PROSPER_SUP_FILLCOPY_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "image.h"

struct sup;
struct fillcopy;

/* Fill every mapping i of im with eligible[i] set (writable, made anonymous by the restore) from
 * its pool region through uffd; done[i] = 1 for each one filled whole.  The bytes copied are added
 * to the run's restored_bytes and restore_copied_bytes.  0, or -1 if a range could not be
 * unregistered (the process must then not run: a fault in a hole there would wait forever). */
int fillcopy_run(struct sup *s, int uffd, const struct img *im, const uint8_t *eligible, uint8_t *done);

/* Lazy: register the eligible mappings, start the server and the background copy; done[i] = 1 for
 * each mapping taken (the caller writes the others, while the program is stopped).  NULL if
 * nothing was taken: done is all 0 and nothing is left registered. */
struct fillcopy *fillcopy_start(struct sup *s, int uffd, const struct img *im, const uint8_t *eligible,
				uint8_t *done);
/* The background copy starts (until then only the faults are answered: the restore's own work is
 * not slowed by it). */
void fillcopy_go(struct fillcopy *f);
/* Whether the mapping starting at start is one f fills (the tracker must not register it again:
 * that would drop the missing mode before it is filled). */
int fillcopy_pending(const struct fillcopy *f, uint64_t start);
/* Whether the copiers of a lazy fill are still putting its chunks in place (a cut now would finish
 * them in its stop). */
int fillcopy_copying(const struct fillcopy *f);
/* Fill what is left (this thread helps) and stop the copiers; from then on the server answers a
 * fault with zeros (a page the program discarded since, or a hole).  Again: nothing more.  0, or
 * -1 with a one-line why: a page could not be put in place (the program must not go on). */
int fillcopy_complete(struct fillcopy *f, char *why, size_t whylen);
/* The end, with the program `stopped` (its pid) after a capture took what it wrote, or gone (0):
 * the missing mode dropped (see fillcopy.c), the server stopped, the bytes counted, f freed. */
void fillcopy_end(struct fillcopy *f, pid_t stopped);

#endif

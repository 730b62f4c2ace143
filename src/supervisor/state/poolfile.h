/* poolfile.h -- the pool file as the supervisor sees it: locked, in one of four states, marked
 * finished when the program ends (poolfile.c).
 *
 * Invariants
 *   - One pool, one supervisor: the pool file is locked (flock) for as long as we run.
 *   - A program that exits normally has its pool marked finished (an epoch whose blob is the
 *     finished record): resuming it would replay its end.  Killed or crashed, the last checkpoint
 *     stays resumable.
 */
#ifndef PROSPER_SUP_POOLFILE_H
#define PROSPER_SUP_POOLFILE_H
#include <stddef.h>
#include "prosper/pool.h"

enum pool_state { POOL_FOREIGN, POOL_RESUMABLE, POOL_FINISHED, POOL_BUSY };

/* Lock the pool at path for as long as this process lives: the fd, or -EBUSY (another prosper
 * holds it) or another negative errno. */
int poolfile_lock(const char *path);

/* What an existing file at path is; *why says why it is not a pool (POOL_FOREIGN).  A fast
 * pool that belongs to it (tiers.h) is judged in its place, and its path is put in fast
 * ("" if there is none). */
enum pool_state poolfile_state(const char *path, char *why, size_t whylen, char *fast, size_t fastcap);

/* Is blob (the committed epoch's) the finished record?  Then *exit_code is the program's. */
int poolfile_finished(const void *blob, size_t len, int *exit_code);

/* A small fixed-size record of the supervisor's in a region of its own (the run's options, the
 * file-undo journal's cut): staged into the epoch being built, the region added the first time;
 * 0 or a negative errno.  Read back from the committed epoch: 0, 1 if there is no such region,
 * -1 if it is not len bytes or unreadable. */
int poolfile_record_put(prosper_pool *p, const char *name, const void *rec, size_t len);
int poolfile_record_get(prosper_pool *p, const char *name, void *rec, size_t len);

/* Commit the finished record with the program's exit code; 0 or -1 (prosper_pool_errormsg()). */
int poolfile_mark_finished(prosper_pool *p, int exit_code);

#endif

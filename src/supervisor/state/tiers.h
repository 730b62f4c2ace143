/* tiers.h -- where a program's checkpoints go, and which of them survive a power cut
 * (tiers.c; docs/durability.md).
 *
 * The kind follows from the file system of the pool path and --durable-every:
 *   MEMORY    tmpfs/ramfs: every checkpoint survives the program and the supervisor, none a
 *             power cut or a reboot.
 *   PMEM      a mapping with cache-line or byte persistence: every checkpoint is durable.
 *   DISK      a block file system, --durable-every 0: every checkpoint is durable (one fdatasync
 *             per ordering point of the commit).
 *   TWO       a block file system, --durable-every T > 0 (the default, T = 1 s): checkpoints go
 *             into a FAST pool in memory, <fast dir>/prosper-<uid>/<uuid of the pool>.prosper,
 *             and at most every T the latest committed one is copied into the pool at the user's
 *             path (prosper_pool_copy_stage), one failure-atomic epoch of it.
 *
 * Invariants
 *   T1 The pool at the user's path (the durable pool) is written only with copies of the fast
 *      pool's committed epochs: the fast pool, when present and valid, is never older.
 *   T2 A fast pool belongs to one durable pool: it is named by that pool's uuid, and a new run
 *      makes a new durable pool.  The lock on the durable pool's path covers both.
 *   T3 When the supervisor ends (the program finished, crashed or was killed alone), the last
 *      checkpoint is copied into the durable pool and the fast pool is removed: only a
 *      supervisor killed mid-run leaves one, and the resume takes it.
 */
#ifndef PROSPER_SUP_TIERS_H
#define PROSPER_SUP_TIERS_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include "prosper/pool.h"

enum tier_kind { TIER_MEMORY = 1, TIER_PMEM, TIER_DISK, TIER_TWO };

struct tiers {
	int kind;                  /* enum tier_kind */
	double every_s;            /* TWO: seconds between durable copies */
	char fs[16];               /* file system holding the pool path ("ext4", "tmpfs", ...) */
	char fast_path[4096];      /* TWO: the fast pool */
	int made_fast;             /* TWO: a resume made it from the durable pool (there was none) */
	prosper_pool *durable;     /* TWO: the pool at the user's path */
	double last_copy;          /* CLOCK_MONOTONIC seconds of the last durable copy */
	uint64_t since;            /* fast epoch the durable pool holds through this handle (0: none) */
	int failed;                /* a durable copy failed: said once, checkpoints go on in memory */
	/* The durable thread: a copy is staged on the commit thread (it reads the fast pool, which
	 * only that thread may touch) and committed here (the device flushes), while checkpoints go
	 * on.  The durable pool is touched by one of them at a time: the commit thread stages only
	 * when no commit is pending. */
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int thread_started, pending, quit;
	void *blob;                /* the blob of the staged copy */
	size_t blob_len;
	double pending_t0;
	uint64_t pending_written, pending_compared, pending_epoch;
	/* statistics */
	uint64_t copies, copy_written, copy_compared;
	double copy_seconds, copy_max_seconds, stage_max_seconds;
	uint64_t durable_epoch;
	/* A number the caller gives each committed epoch (tag, set before tiers_after_commit): the
	 * one of the epoch the durable pool holds, once its copy is committed (the file-undo
	 * journal's cut, filetrack.h).  Written by the durable thread under mu. */
	uint64_t tag, pending_tag, durable_tag;
	/* Called on the durable thread before a copy commits, with the copy's tag (NULL: none): the
	 * file-undo journal from that cut on made durable (filetrack.h), for a resume from the copy
	 * after a power cut needs it.  0, or a negative errno: the copy fails. */
	int (*before_copy)(void *arg, uint64_t tag);
	void *before_copy_arg;
};

/* Which kind a pool at path gets with --durable-every every_s (< 0: the default).  Fills t->kind,
 * t->fs, t->every_s.  0, or -1 with a reason in why. */
int tiers_choose(struct tiers *t, const char *path, double every_s, char *why, size_t whylen);

/* run: the pools are created (the durable one at path, locked, by the caller already as *work
 * for the one-pool kinds); TWO: *work becomes the fast pool, t->durable the one at path.
 * 0, or -1 with a reason. */
int tiers_start_run(struct tiers *t, prosper_pool **work, const struct prosper_pool_config *cfg, char *why,
		    size_t whylen);

/* resume: *work is the opened pool at path.  A fast pool of it that is present is the newer
 * state (T1): TWO continues in it; the one-pool kinds first copy it into *work and remove it.
 * TWO without a fast pool makes one from *work.  0, or -1 with a reason. */
int tiers_start_resume(struct tiers *t, prosper_pool **work, const struct prosper_pool_config *cfg, char *why,
		       size_t whylen);

/* After each committed checkpoint of *work (the commit thread): TWO copies it into the durable
 * pool when every_s has passed since the last copy and the last copy's commit is done; force:
 * now, waiting for that commit and committing this one before returning. */
void tiers_after_commit(struct tiers *t, prosper_pool *work, int force);

/* A resume refused after tiers_start_resume: a fast pool it made from the durable pool (it holds
 * nothing newer) closed and removed, *work the durable pool again.  One that was there before is
 * kept: it holds the newest state (T1). */
void tiers_refused(struct tiers *t, prosper_pool **work);

/* The end (T3): a last copy, the fast pool closed and removed, the durable one closed.
 * *work is closed too.  0, or a negative errno of the last close. */
int tiers_finish(struct tiers *t, prosper_pool **work);

/* The fast pool that belongs to the durable pool p, if tiers of this kind have one:
 * 1 and its path in out, or 0. */
int tiers_fast_path_of(prosper_pool *p, char *out, size_t cap);

/* One line for the user: where checkpoints go and what survives what. */
void tiers_describe(const struct tiers *t, const char *path, double interval_ms, char *out, size_t cap);

#endif

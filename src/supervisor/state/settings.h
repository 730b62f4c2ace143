/* settings.h -- the checkpoint options of a run, kept in its pool, so that a resume goes on with
 * them (settings.c).
 *
 * `prosper run --interval 100 --copy precopy ...` and then `prosper resume` must checkpoint the
 * resumed program as the run did, not with the defaults.  The options that decide how checkpoints
 * are taken (interval, --durable-every, copy mode, trackers, granularities, metadata mode) are one
 * record in the pool's region SETTINGS_REGION_NAME; a resume takes each of them from it unless its
 * own command line gives that option, and then keeps the options it runs with in the pool.
 *
 * Invariants
 *   - The record is written in the epoch being built: it is committed with the next checkpoint,
 *     atomically with it (the pool's protocol), so a pool with a checkpoint holds the options that
 *     checkpoint was taken under -- or none, a pool made before this record existed, which resumes
 *     with the defaults as it always did.
 *   - A record that is not one (its length, magic, version, or a value no option can give) refuses
 *     the resume as a corrupt pool: options are never guessed.
 *   - Options that do not shape checkpoints (--verify, --stats-json, --json, --host-pids,
 *     --exact-stack-stats, --capacity) are not kept: each command gives its own.
 */
#ifndef PROSPER_SUP_SETTINGS_H
#define PROSPER_SUP_SETTINGS_H
#include "prosper/pool.h"
#include "sup.h"

#define SETTINGS_REGION_NAME "prosper.settings"

/* Which options a command line gave (struct opts.given): a resume keeps those over the pool's. */
enum settings_given {
	GIVEN_INTERVAL = 1 << 0,
	GIVEN_DURABLE = 1 << 1,
	GIVEN_COPY = 1 << 2,
	GIVEN_STACK_TRACKER = 1 << 3,
	GIVEN_HEAP_TRACKER = 1 << 4,
	GIVEN_STACK_GRAN = 1 << 5,
	GIVEN_HEAP_GRAN = 1 << 6,
	GIVEN_METADATA = 1 << 7,
	GIVEN_MAX_OVERHEAD = 1 << 8,
};

/* Stage cfg's checkpoint options into the pool's epoch being built (the region is added the first
 * time, rewritten after).  0, or a negative errno (prosper_pool_errormsg() says why). */
int settings_save(prosper_pool *pool, const struct sup_config *cfg);

/* Take the options the pool's committed epoch was made with into cfg, except those `given`.
 * 1 if the pool holds them, 0 if it holds none (an older pool: cfg unchanged), -1 if the record
 * is not valid (*why says how). */
int settings_load(prosper_pool *pool, struct sup_config *cfg, unsigned given, const char **why);

#endif

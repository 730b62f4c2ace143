/* pool_testing.h -- the seams the crash simulator (src/crashsim) needs inside the pool.
 *
 * Not API: nothing outside the pool, the crash simulator and the tests includes it.
 *   - pool_loading_abandon: after a simulated crash jumped out of prosper_pool_create_mem,
 *     _open_mem or _rollback_mem, free the half-made handle (present in every build).
 *   - Protocol mutations: only the testable build of the pool (PROSPER_TESTABLE, which
 *     prosper crashtest and the tests link) has pool_mutation; each mutation must be caught.
 */
#ifndef PROSPER_POOL_TESTING_H
#define PROSPER_POOL_TESTING_H

#ifdef __cplusplus
extern "C" {
#endif

void pool_loading_abandon(void);

enum pool_mutation {
	MUT_NONE = 0,
	MUT_COMMIT_FIRST,      /* commit words written before state array and metadata */
	MUT_NO_CATCHUP,        /* stale blocks not copied into the target copy */
	MUT_WRITE_VALID,       /* buffered writes go to the committed copy (in place) */
	MUT_STATE_NOT_BACK,    /* direct prepare copies to the backup but never marks BACK */
	MUT_BIND_AFTER_STATE,  /* direct prepare marks BACK before the backup holds the data */
	MUT_REDO_APPLY_EARLY,  /* redo records applied to the image before the commit word */
	MUT_REDO_LOG_LATE,     /* redo log persisted only after the commit word */
	MUT_REDO_NO_REAPPLY,   /* recovery does not apply the committed epoch's log again */
	MUT_REDO_NEXT_LOG_EARLY, /* the next epoch's log started before the apply is persisted */
	MUT_COPY_ONLY_NEW,     /* a copy compares only the segments the replica has just added */
	MUT_COPY_FRESH_IDS,    /* a copy adds regions under the replica's own next ids */
	MUT_COUNT
};
#ifdef PROSPER_TESTABLE
extern int pool_mutation; /* enum pool_mutation; MUT_NONE outside mutation runs */
const char *pool_mutation_name(int m);
#endif

#ifdef __cplusplus
}
#endif
#endif

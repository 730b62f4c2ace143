/* mutation.c -- the pool's protocol mutations (include/prosper/internal/pool_testing.h).
 * Compiled only into prosper_pool_testable: the production pool has no mutation switch. */
#ifndef PROSPER_TESTABLE
#error "mutation.c belongs to the testable build of the pool only"
#endif
#include "pool_internal.h"

int pool_mutation = MUT_NONE;

const char *pool_mutation_name(int m)
{
	static const char *const names[MUT_COUNT] = {
		"none", "commit_first", "no_catchup", "write_valid", "state_not_back", "bind_after_state",
		"redo_apply_before_commit", "redo_log_after_commit", "redo_no_reapply", "redo_next_log_before_apply",
		"copy_only_new_segments", "copy_fresh_region_ids",
	};
	return m >= 0 && m < MUT_COUNT ? names[m] : "?";
}

/* crpm_crashsim.h -- crpm containers under the pool's crash simulator (include/prosper/internal/crashsim.h).
 *
 * The workload is crpm's own call sequence on an in-memory pool whose persistence is simulated:
 * the container is created (crpm_open_pool), then every epoch does a few crpm_malloc / crpm_free
 * / object overwrites / crpm_set_root and a crpm_checkpoint; with `rollbacks`, every fourth
 * epoch the container is closed, rolled back one epoch (prosper_pool_rollback_mem, the MPI
 * restart path) and reopened.  The reference of an epoch is the container's bytes [0, length)
 * at its checkpoint -- heap, roots and allocator metadata.  Every crash image the simulator
 * builds (crash points, lost/torn lines or pages, crashes inside recovery, a continued epoch)
 * must reopen as a container equal to the reference of an epoch the crash may leave.
 */
#ifndef PROSPER_CRPM_CRASHSIM_H
#define PROSPER_CRPM_CRASHSIM_H
#include "prosper/internal/crashsim.h"

struct crpm_crashsim_config {
	struct prosper_crashsim_config sim; /* states, seed, granularity, epochs, pool mutation */
	int mode;                           /* enum crpm_mode */
	int tracking;                       /* CRPM_TRACK_HOOKS (annotated writes) or CRPM_TRACK_PROTECT */
	uint32_t backups;                   /* default mode: backup segments at most (0: unlimited) */
	int rollbacks;                      /* roll back one epoch every fourth epoch */
	int mutation;                       /* enum crpm_mutation */
};

void crpm_crashsim_config_default(struct crpm_crashsim_config *c);
int crpm_crashsim_run(const struct crpm_crashsim_config *c, struct prosper_crashsim_result *r);

/* The variants every test runs: default and buffered mode, with store hooks and with write
 * protection, default mode with 3 backups (stealing, more epochs).  Fills mode, tracking,
 * backups and epochs of *c; returns the variant's name. */
int crpm_crashsim_variant_count(void);
const char *crpm_crashsim_variant(int i, struct crpm_crashsim_config *c);
/* The mutants that must be caught: crpm's own (in every hook-tracked variant they apply to) and
 * the pool's copy-on-write persists.  Fills the variant, mutation, skip_site and rollbacks of
 * *c; returns the mutant's name and, in *variant, the variant's. */
int crpm_crashsim_mutant_count(void);
const char *crpm_crashsim_mutant(int i, struct crpm_crashsim_config *c, const char **variant);
#endif

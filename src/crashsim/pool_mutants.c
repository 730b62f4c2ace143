/* pool_mutants.c -- the pool protocol's mutants: each persist site removed in turn, and each
 * protocol mutation of the pool (src/pool/mutation.c, compiled only into the testable pool);
 * the copy's mutations run the copy variant of the workload.
 * `prosper crashtest` runs every one and requires that the crash checks catch it.
 */
#include <stdio.h>
#include "crashsim_internal.h"

static const int mutant_sites[] = {
	PSITE_CREATE, PSITE_SEG_INIT, PSITE_SEG_CATCHUP, PSITE_DATA, PSITE_DIRECT_DATA, PSITE_STATE, PSITE_META,
	PSITE_COMMIT_A, PSITE_COMMIT_B, PSITE_COW_COPY, PSITE_COW_STATE, PSITE_BIND, PSITE_RECOVER_COPY,
	PSITE_RECOVER_STATE, PSITE_RECOVER_COMMIT, PSITE_REDO_LOG, PSITE_REDO_APPLY, PSITE_RECOVER_REDO,
};
#define NSITES ((int)(sizeof mutant_sites / sizeof mutant_sites[0]))

int prosper_crashsim_mutant_count(void)
{
	return NSITES + (MUT_COUNT - 1);
}

const char *prosper_crashsim_mutant(int i, struct prosper_crashsim_config *c)
{
	static char name[64];
	c->skip_site = -1;
	c->mutation = 0;
	if (i < NSITES) {
		c->skip_site = mutant_sites[i];
		snprintf(name, sizeof name, "no_persist_%s", prosper_persist_site_name(mutant_sites[i]));
	} else {
		c->mutation = i - NSITES + 1;
		c->copy = c->mutation == MUT_COPY_ONLY_NEW || c->mutation == MUT_COPY_FRESH_IDS;
		snprintf(name, sizeof name, "%s", pool_mutation_name(c->mutation));
	}
	return name;
}


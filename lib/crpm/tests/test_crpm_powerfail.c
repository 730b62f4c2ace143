/* test_crpm_powerfail.c -- crpm containers survive every simulated crash and power failure
 * (lib/crpm/crashsim_crpm.h), and the simulator catches crpm's mutants.
 *
 * Variants: default and buffered mode, with store-hook tracking (annotated writes) and with
 * write protection (faults + comparison at the checkpoint), default mode with few backups
 * (stealing), each with a one-epoch rollback every fourth epoch; both failure models (cache
 * lines lost/torn at 8 bytes, pages lost/torn at 512-byte sectors).  Quick by default;
 * PROSPER_LONG=1 explores 100x the states.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "crashsim_crpm.h"
#include "crpm_internal.h"

static int fails, passes;

static void check(int ok, const char *what)
{
	if (ok)
		passes++;
	else {
		fails++;
		printf("FAIL: %s\n", what);
	}
}

struct variant {
	const char *name;
	int mode, tracking;
	uint32_t backups;
};

static const struct variant variants[] = {
	{ "default/hooks", CRPM_MODE_DEFAULT, CRPM_TRACK_HOOKS, 0 },
	{ "default/protect", CRPM_MODE_DEFAULT, CRPM_TRACK_PROTECT, 0 },
	{ "default/steal", CRPM_MODE_DEFAULT, CRPM_TRACK_HOOKS, 3 },
	{ "buffered/hooks", CRPM_MODE_BUFFERED, CRPM_TRACK_HOOKS, 0 },
	{ "buffered/protect", CRPM_MODE_BUFFERED, CRPM_TRACK_PROTECT, 0 },
};
#define NVARIANTS (int)(sizeof variants / sizeof variants[0])

static void config(struct crpm_crashsim_config *c, const struct variant *v, int gran, uint64_t seed)
{
	crpm_crashsim_config_default(c);
	c->mode = v->mode;
	c->tracking = v->tracking;
	c->backups = v->backups;
	c->sim.granularity = gran;
	c->sim.seed = seed;
	if (v->backups)
		c->sim.epochs = 24; /* one operation an epoch: enough to write more segments than backups */
}

/* caught -- does crpm's mutant crpm_mut, or removing the pool's persist site skip_site (-1:
 * none), make some crash state inconsistent? */
static int caught(const struct variant *v, int crpm_mut, int skip_site, char *why, size_t whylen)
{
	int grans[] = { PROSPER_GRAN_CACHE_LINE, PROSPER_GRAN_PAGE };
	for (int g = 0; g < 2; g++)
		for (uint64_t seed = 1; seed <= 3; seed++) {
			struct crpm_crashsim_config c;
			struct prosper_crashsim_result r;
			config(&c, v, grans[g], seed);
			c.mutation = crpm_mut;
			c.sim.skip_site = skip_site;
			/* The rollback compares the container itself: crash images must catch the mutants,
			 * except the one that breaks the rollback. */
			c.rollbacks = crpm_mut == CRPM_MUT_AHEAD_EARLY;
			c.sim.states = 2000;
			c.sim.stop_at_first = 1;
			crpm_crashsim_run(&c, &r);
			if (r.inconsistent) {
				snprintf(why, whylen, "%s", r.first_failure);
				return 1;
			}
		}
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *long_mode = getenv("PROSPER_LONG");
	uint64_t states = long_mode && *long_mode == '1' ? 300000 : 3000;
	int grans[] = { PROSPER_GRAN_CACHE_LINE, PROSPER_GRAN_PAGE };
	/* argv[1], if given: only the variant of that name (for debugging) */
	for (int v = 0; v < NVARIANTS; v++)
		for (int g = 0; g < 2 && (argc < 2 || !strcmp(argv[1], variants[v].name)); g++) {
			struct crpm_crashsim_config c;
			struct prosper_crashsim_result r;
			config(&c, &variants[v], grans[g], 1 + (uint64_t)g);
			c.sim.states = states;
			int rc = crpm_crashsim_run(&c, &r);
			printf("%-16s %-10s: %llu states, %llu crash points, %llu nested, %llu continued, %llu epochs, "
			       "max in flight %llu, cow points %llu, bind points %llu, %llu inconsistent %s\n",
			       variants[v].name, prosper_granularity_name(grans[g]), (unsigned long long)r.states,
			       (unsigned long long)r.crash_points, (unsigned long long)r.nested_states,
			       (unsigned long long)r.continued_states, (unsigned long long)r.epochs,
			       (unsigned long long)r.max_inflight, (unsigned long long)r.points_per_site[PSITE_COW_STATE],
			       (unsigned long long)r.points_per_site[PSITE_BIND],
			       (unsigned long long)r.inconsistent, r.first_failure);
			check(rc == 0, "crash simulation ran");
			/* crash points with few units in flight have fewer distinct images than their share */
			check(r.states >= states * 9 / 10, "explored the requested number of states");
			check(r.epochs == (uint64_t)c.sim.epochs, "the workload committed all its epochs");
			check(r.nested_states > 0 && r.continued_states > 0, "nested and continued recoveries ran");
			check(r.inconsistent == 0, "no inconsistent crash state");
			if (variants[v].mode == CRPM_MODE_DEFAULT)
				check(r.points_per_site[PSITE_COW_STATE] > 0, "copy-on-writes were crashed");
			if (variants[v].backups)
				check(r.points_per_site[PSITE_BIND] > 3ull * variants[v].backups, /* 3 points a binding */
				      "backups were rebound (stolen)");
		}
	/* crpm's mutants: each must be caught under the hook-tracked variants (copy-on-write ahead
	 * exists in default mode only). */
	for (int m = 1; m < CRPM_MUT_COUNT && argc < 2; m++) {
		for (int v = 0; v < NVARIANTS; v++) {
			if (variants[v].tracking != CRPM_TRACK_HOOKS || variants[v].backups ||
			    (m == CRPM_MUT_AHEAD_EARLY && variants[v].mode != CRPM_MODE_DEFAULT))
				continue;
			char why[600] = "";
			int got = caught(&variants[v], m, -1, why, sizeof why);
			printf("mutant %-26s %-16s %s%s\n", crpm_mutation_name(m), variants[v].name,
			       got ? "caught: " : "NOT CAUGHT", why);
			check(got, crpm_mutation_name(m));
		}
	}
	/* The pool's copy-on-write persists, batched ahead or not, seen through crpm. */
	static const int sites[] = { PSITE_COW_COPY, PSITE_COW_STATE };
	for (int i = 0; i < 2 && argc < 2; i++) {
		char why[600] = "";
		int got = caught(&variants[0], 0, sites[i], why, sizeof why);
		printf("mutant no_persist_%-15s %-16s %s%s\n", prosper_persist_site_name(sites[i]), variants[0].name,
		       got ? "caught: " : "NOT CAUGHT", why);
		check(got, prosper_persist_site_name(sites[i]));
	}
	printf("%d passed, %d failed\n", passes, fails);
	return fails != 0;
}

/* test_crpm_powerfail.c -- crpm containers survive every simulated crash and power failure
 * (include/prosper/internal/crpm_crashsim.h), and the simulator catches crpm's mutants.
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
#include "prosper/crpm.h"
#include "prosper/internal/crpm_crashsim.h"

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

/* caught -- does mutant i make some crash state inconsistent (a few seeds, both models)? */
static int caught(int i, const char **name, const char **variant, char *why, size_t whylen)
{
	int grans[] = { PROSPER_GRAN_CACHE_LINE, PROSPER_GRAN_PAGE };
	for (int g = 0; g < 2; g++)
		for (uint64_t seed = 1; seed <= 3; seed++) {
			struct crpm_crashsim_config c;
			struct prosper_crashsim_result r;
			crpm_crashsim_config_default(&c);
			*name = crpm_crashsim_mutant(i, &c, variant);
			c.sim.granularity = grans[g];
			c.sim.seed = seed;
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
	for (int v = 0; v < crpm_crashsim_variant_count(); v++)
		for (int g = 0; g < 2; g++) {
			struct crpm_crashsim_config c;
			struct prosper_crashsim_result r;
			crpm_crashsim_config_default(&c);
			const char *name = crpm_crashsim_variant(v, &c);
			if (argc > 1 && strcmp(argv[1], name))
				break;
			c.sim.granularity = grans[g];
			c.sim.seed = 1 + (uint64_t)g;
			c.sim.states = states;
			int rc = crpm_crashsim_run(&c, &r);
			printf("%-16s %-10s: %llu states, %llu crash points, %llu nested, %llu continued, %llu epochs, "
			       "max in flight %llu, cow points %llu, bind points %llu, %llu inconsistent %s\n",
			       name, prosper_granularity_name(grans[g]), (unsigned long long)r.states,
			       (unsigned long long)r.crash_points, (unsigned long long)r.nested_states,
			       (unsigned long long)r.continued_states, (unsigned long long)r.epochs,
			       (unsigned long long)r.max_inflight, (unsigned long long)r.points_per_site[PSITE_COW_STATE],
			       (unsigned long long)r.points_per_site[PSITE_BIND], (unsigned long long)r.inconsistent,
			       r.first_failure);
			check(rc == 0, "crash simulation ran");
			/* crash points with few units in flight have fewer distinct images than their share */
			check(r.states >= states * 9 / 10, "explored the requested number of states");
			check(r.epochs == (uint64_t)c.sim.epochs, "the workload committed all its epochs");
			check(r.nested_states > 0 && r.continued_states > 0, "nested and continued recoveries ran");
			check(r.inconsistent == 0, "no inconsistent crash state");
			if (c.mode == CRPM_MODE_DEFAULT)
				check(r.points_per_site[PSITE_COW_STATE] > 0, "copy-on-writes were crashed");
			if (c.backups)
				check(r.points_per_site[PSITE_BIND] > 3ull * c.backups, /* 3 points a binding */
				      "backups were rebound (stolen)");
		}
	for (int i = 0; i < crpm_crashsim_mutant_count() && argc < 2; i++) {
		char why[600] = "";
		const char *name, *variant;
		int got = caught(i, &name, &variant, why, sizeof why);
		printf("mutant %-26s %-16s %s%s\n", name, variant, got ? "caught: " : "NOT CAUGHT", why);
		check(got, name);
	}
	printf("%d passed, %d failed\n", passes, fails);
	return fails != 0;
}

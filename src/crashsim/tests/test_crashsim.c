/* test_crashsim.c -- the pool protocol survives every simulated crash, and the simulator
 * catches every mutant (a removed persist or a reordered step). */
#include <stdio.h>
#include <stdlib.h>
#include "prosper/internal/crashsim.h"

static int fails, passes;

static void check(int ok, const char *what)
{
	if (ok) passes++; else { fails++; printf("FAIL: %s\n", what); }
}

int main(void)
{
	const char *long_mode = getenv("PROSPER_LONG");
	uint64_t states = long_mode && *long_mode == '1' ? 2000000 : 6000;
	int grans[] = { PROSPER_GRAN_CACHE_LINE, PROSPER_GRAN_PAGE };
	for (int g = 0; g < 2; g++) {
		for (uint64_t seed = 1; seed <= 3; seed++) {
			struct prosper_crashsim_config c;
			struct prosper_crashsim_result r;
			prosper_crashsim_config_default(&c);
			c.states = states;
			c.seed = seed;
			c.granularity = grans[g];
			int rc = prosper_crashsim_run(&c, &r);
			printf("%s seed %llu: %llu states, %llu crash points, %llu nested, %llu continued, "
			       "%llu epochs, max in flight %llu, %llu inconsistent %s\n",
			       prosper_granularity_name(grans[g]), (unsigned long long)seed, (unsigned long long)r.states,
			       (unsigned long long)r.crash_points, (unsigned long long)r.nested_states,
			       (unsigned long long)r.continued_states, (unsigned long long)r.epochs,
			       (unsigned long long)r.max_inflight, (unsigned long long)r.inconsistent, r.first_failure);
			check(rc == 0, "crashsim ran");
			check(r.states >= states, "explored the requested number of states");
			check(r.epochs >= 10, "workload committed its epochs");
			check(r.nested_states > 0 && r.continued_states > 0, "nested and continued recoveries ran");
			check(r.inconsistent == 0, "no inconsistent crash state");
			check(r.points_per_site[PSITE_REDO_LOG] > 0 && r.points_per_site[PSITE_REDO_APPLY] > 0,
			      "the redo log and its apply were crashed");
		}
	}
	int n = prosper_crashsim_mutant_count();
	for (int i = 0; i < n; i++) {
		struct prosper_crashsim_config c;
		struct prosper_crashsim_result r;
		prosper_crashsim_config_default(&c);
		const char *name = prosper_crashsim_mutant(i, &c);
		c.states = 3000;
		c.stop_at_first = 1;
		int caught = 0;
		for (uint64_t seed = 1; seed <= 4 && !caught; seed++) {
			c.seed = seed;
			prosper_crashsim_run(&c, &r);
			caught = r.inconsistent > 0;
		}
		printf("mutant %-28s %s%s%s\n", name, caught ? "caught: " : "NOT CAUGHT", caught ? r.first_failure : "", "");
		check(caught, name);
	}
	printf("%d passed, %d failed\n", passes, fails);
	return fails != 0;
}

/* crashtest.c -- `prosper crashtest`: the crash simulator (include/prosper/internal/crashsim.h) over the
 * pool's own workload and over libcrpm's containers (include/prosper/internal/crpm_crashsim.h), then every
 * mutant of both.
 *
 * Budget: --states N is what the run explores at least, split between the workloads chosen (half
 * each with `all`) and, within a workload, between the failure models (3/4 cache line, 1/4 page
 * with `both`).  The pool workload runs four seeds per model (different workload shapes) and its
 * copy variant (the durable replica: each epoch a copy of another pool's) two; crpm
 * runs each of its variants (default/buffered mode, store hooks/write protection, stealing) once
 * per model.  A mutant counts as caught when some crash state of a few seeds is inconsistent.
 *
 * Exit codes: 0 no inconsistent state and every mutant caught, 1 otherwise (or the simulator
 * could not run), 2 usage errors.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "prosper/internal/crashsim.h"
#include "prosper/internal/crpm_crashsim.h"
#include "cli_util.h"

enum { W_POOL = 1, W_CRPM = 2 };

struct run {
	const char *workload, *variant, *granularity;
	struct prosper_crashsim_result r;
	double seconds;
};

struct mutant_result {
	const char *workload;
	char name[64], variant[32];
	int caught;
};

#define MAX_RUNS 64
#define MAX_MUTANTS 64

struct report {
	struct run runs[MAX_RUNS];
	int nruns;
	struct mutant_result mutants[MAX_MUTANTS];
	int nmutants;
};

static void add(struct prosper_crashsim_result *acc, const struct prosper_crashsim_result *r, uint64_t seed)
{
	acc->states += r->states;
	acc->inconsistent += r->inconsistent;
	acc->crash_points += r->crash_points;
	acc->nested_states += r->nested_states;
	acc->continued_states += r->continued_states;
	acc->epochs += r->epochs;
	if (r->max_inflight > acc->max_inflight)
		acc->max_inflight = r->max_inflight;
	if (!acc->first_failure[0] && r->first_failure[0])
		snprintf(acc->first_failure, sizeof acc->first_failure, "seed %" PRIu64 ": %.480s", seed, r->first_failure);
}

static const struct { const char *name; int gran; } models[2] = {
	{ "cache_line", PROSPER_GRAN_CACHE_LINE },
	{ "page", PROSPER_GRAN_PAGE },
};

/* model_share -- the states of `budget` that model g gets (grans: bit 0 cache line, bit 1 page) */
static uint64_t model_share(uint64_t budget, int grans, int g)
{
	if (grans != 3)
		return budget;
	return g == 0 ? budget * 3 / 4 : budget - budget * 3 / 4;
}

/* run_pool -- the pool's workload (four seeds per model, 2/3 of the budget) and its copy
 * variant, the durable replica (two seeds per model, the rest). */
static int run_pool(struct report *rep, uint64_t budget, uint64_t seed, int grans, int json)
{
	static const struct { const char *name; int copy, seeds; } variants[2] = { { "pool", 0, 4 }, { "copy", 1, 2 } };
	for (int v = 0; v < 2; v++)
		for (int g = 0; g < 2; g++) {
			if (!(grans & (1 << g)))
				continue;
			struct run *run = &rep->runs[rep->nruns++];
			*run = (struct run){ .workload = "pool", .variant = variants[v].name, .granularity = models[g].name };
			uint64_t share = model_share(budget, grans, g), mine = v == 0 ? share * 2 / 3 : share - share * 2 / 3;
			uint64_t per_seed = (mine + (uint64_t)variants[v].seeds - 1) / (uint64_t)variants[v].seeds;
			double t = now();
			for (uint64_t s = 0; s < (uint64_t)variants[v].seeds; s++) {
				struct prosper_crashsim_config c;
				struct prosper_crashsim_result r;
				prosper_crashsim_config_default(&c);
				c.states = per_seed;
				c.seed = seed + s;
				c.granularity = models[g].gran;
				c.copy = variants[v].copy;
				if (prosper_crashsim_run(&c, &r) != 0) {
					fprintf(stderr, "prosper crashtest: the simulator failed to run the pool workload (%s)\n",
						variants[v].name);
					return -1;
				}
				add(&run->r, &r, c.seed);
				if (!json)
					fprintf(stderr, "  pool %-4s %-10s seed %" PRIu64 ": %" PRIu64 " states, %" PRIu64 " inconsistent\n",
						variants[v].name, models[g].name, c.seed, r.states, r.inconsistent);
			}
			run->seconds = now() - t;
		}
	return 0;
}

static int run_crpm(struct report *rep, uint64_t budget, uint64_t seed, int grans, int json)
{
	int nv = crpm_crashsim_variant_count();
	for (int v = 0; v < nv; v++)
		for (int g = 0; g < 2; g++) {
			if (!(grans & (1 << g)))
				continue;
			struct crpm_crashsim_config c;
			crpm_crashsim_config_default(&c);
			struct run *run = &rep->runs[rep->nruns++];
			*run = (struct run){ .workload = "crpm", .variant = crpm_crashsim_variant(v, &c),
					     .granularity = models[g].name };
			c.sim.states = (model_share(budget, grans, g) + nv - 1) / nv;
			c.sim.seed = seed + (uint64_t)g;
			c.sim.granularity = models[g].gran;
			double t = now();
			struct prosper_crashsim_result r;
			if (crpm_crashsim_run(&c, &r) != 0) {
				fprintf(stderr, "prosper crashtest: the simulator failed to run the crpm workload (%s)\n",
					run->variant);
				return -1;
			}
			add(&run->r, &r, c.sim.seed);
			run->seconds = now() - t;
			if (!json)
				fprintf(stderr, "  crpm %-16s %-10s: %" PRIu64 " states, %" PRIu64 " inconsistent\n", run->variant,
					models[g].name, r.states, r.inconsistent);
		}
	return 0;
}

static void pool_mutants(struct report *rep, uint64_t seed)
{
	for (int i = 0; i < prosper_crashsim_mutant_count() && rep->nmutants < MAX_MUTANTS; i++) {
		struct mutant_result *m = &rep->mutants[rep->nmutants++];
		struct prosper_crashsim_config c;
		prosper_crashsim_config_default(&c);
		*m = (struct mutant_result){ .workload = "pool" };
		snprintf(m->name, sizeof m->name, "%s", prosper_crashsim_mutant(i, &c));
		snprintf(m->variant, sizeof m->variant, "%s", c.copy ? "copy" : "pool");
		c.states = 3000;
		c.stop_at_first = 1;
		for (uint64_t s = 0; s < 4 && !m->caught; s++) {
			struct prosper_crashsim_result r;
			c.seed = seed + s;
			prosper_crashsim_run(&c, &r);
			m->caught = r.inconsistent > 0;
		}
	}
}

static void crpm_mutants(struct report *rep, uint64_t seed)
{
	for (int i = 0; i < crpm_crashsim_mutant_count() && rep->nmutants < MAX_MUTANTS; i++) {
		struct mutant_result *m = &rep->mutants[rep->nmutants++];
		*m = (struct mutant_result){ .workload = "crpm" };
		for (int g = 0; g < 2 && !m->caught; g++)
			for (uint64_t s = 0; s < 3 && !m->caught; s++) {
				struct crpm_crashsim_config c;
				struct prosper_crashsim_result r;
				const char *variant;
				crpm_crashsim_config_default(&c);
				snprintf(m->name, sizeof m->name, "%s", crpm_crashsim_mutant(i, &c, &variant));
				snprintf(m->variant, sizeof m->variant, "%s", variant);
				c.sim.granularity = models[g].gran;
				c.sim.seed = seed + s;
				c.sim.states = 2000;
				c.sim.stop_at_first = 1;
				crpm_crashsim_run(&c, &r);
				m->caught = r.inconsistent > 0;
			}
	}
}

/* json_text -- a simulator message made safe to print inside a JSON string */
static void json_text(char *s)
{
	for (; *s; s++)
		if (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20)
			*s = '\'';
}

static void print_json(struct report *rep, uint64_t states, uint64_t bad, int caught, uint64_t seed, double secs,
		       int workloads)
{
	printf("{\"states\": %" PRIu64 ", \"inconsistent\": %" PRIu64 ", \"mutants\": %d, \"mutants_caught\": %d, "
	       "\"seed\": %" PRIu64 ", \"seconds\": %.2f, \"workloads\": [%s%s%s], \"runs\": [",
	       states, bad, rep->nmutants, caught, seed, secs, workloads & W_POOL ? "\"pool\"" : "",
	       workloads == (W_POOL | W_CRPM) ? ", " : "", workloads & W_CRPM ? "\"crpm\"" : "");
	for (int i = 0; i < rep->nruns; i++) {
		struct run *u = &rep->runs[i];
		json_text(u->r.first_failure);
		printf("%s{\"workload\": \"%s\", \"variant\": \"%s\", \"granularity\": \"%s\", \"states\": %" PRIu64
		       ", \"inconsistent\": %" PRIu64 ", \"crash_points\": %" PRIu64 ", \"nested_states\": %" PRIu64
		       ", \"continued_states\": %" PRIu64 ", \"max_inflight\": %" PRIu64 ", \"epochs\": %" PRIu64
		       ", \"seconds\": %.2f, \"first_failure\": \"%s\"}",
		       i ? ", " : "", u->workload, u->variant, u->granularity, u->r.states, u->r.inconsistent,
		       u->r.crash_points, u->r.nested_states, u->r.continued_states, u->r.max_inflight, u->r.epochs,
		       u->seconds, u->r.first_failure);
	}
	printf("], \"mutant_results\": [");
	for (int i = 0; i < rep->nmutants; i++) {
		struct mutant_result *m = &rep->mutants[i];
		printf("%s{\"workload\": \"%s\", \"variant\": \"%s\", \"name\": \"%s\", \"caught\": %s}", i ? ", " : "",
		       m->workload, m->variant, m->name, m->caught ? "true" : "false");
	}
	printf("]}\n");
}

static void print_text(struct report *rep, uint64_t states, uint64_t bad, int caught, double secs)
{
	printf("crash states explored: %" PRIu64 ", inconsistent: %" PRIu64 "\n", states, bad);
	for (int i = 0; i < rep->nruns; i++) {
		struct run *u = &rep->runs[i];
		printf("  %-4s %-16s %-10s %7" PRIu64 " states at %5" PRIu64 " crash points (%" PRIu64
		       " nested in recovery, %" PRIu64 " continued), %.1f s%s%s\n",
		       u->workload, u->variant, u->granularity, u->r.states, u->r.crash_points, u->r.nested_states,
		       u->r.continued_states, u->seconds, u->r.first_failure[0] ? "; first failure: " : "",
		       u->r.first_failure);
	}
	for (int i = 0; i < rep->nmutants; i++)
		printf("  mutant %-4s %-26s %-16s %s\n", rep->mutants[i].workload, rep->mutants[i].name,
		       rep->mutants[i].variant, rep->mutants[i].caught ? "caught" : "NOT CAUGHT");
	if (rep->nmutants)
		printf("mutants caught: %d of %d\n", caught, rep->nmutants);
	printf("%.1f s\n", secs);
}

int cmd_crashtest(int argc, char **argv)
{
	uint64_t states = 100000, seed = 1;
	int json = 0, mutants = 1, grans = 3, workloads = W_POOL | W_CRPM;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (!strcmp(argv[i], "--no-mutants"))
			mutants = 0;
		else if (!strcmp(argv[i], "--states") && i + 1 < argc) {
			if (parse_u64(argv[++i], &states) || states == 0)
				return die("crashtest", "--states takes a positive whole number");
		} else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
			if (parse_u64(argv[++i], &seed))
				return die("crashtest", "--seed takes a whole number");
		} else if (!strcmp(argv[i], "--granularity") && i + 1 < argc) {
			const char *g = argv[++i];
			grans = !strcmp(g, "cache_line") ? 1 : !strcmp(g, "page") ? 2 : !strcmp(g, "both") ? 3 : 0;
			if (!grans)
				return die("crashtest", "--granularity is cache_line, page or both");
		} else if (!strcmp(argv[i], "--workload") && i + 1 < argc) {
			const char *w = argv[++i];
			workloads = !strcmp(w, "pool") ? W_POOL : !strcmp(w, "crpm") ? W_CRPM
				  : !strcmp(w, "all") ? W_POOL | W_CRPM : 0;
			if (!workloads)
				return die("crashtest", "--workload is pool, crpm or all");
		} else
			return die("crashtest", "unknown option (see prosper crashtest --help)");
	}
	double t0 = now();
	struct report *rep = calloc(1, sizeof *rep);
	if (!rep)
		return die("crashtest", "out of memory");
	uint64_t pool_budget = workloads == (W_POOL | W_CRPM) ? states / 2 : states;
	int rc = 0;
	if (workloads & W_POOL)
		rc = run_pool(rep, pool_budget, seed, grans, json);
	if (!rc && (workloads & W_CRPM))
		rc = run_crpm(rep, states - (workloads & W_POOL ? pool_budget : 0), seed, grans, json);
	if (rc) {
		free(rep);
		return 1;
	}
	if (mutants && (workloads & W_POOL))
		pool_mutants(rep, seed);
	if (mutants && (workloads & W_CRPM))
		crpm_mutants(rep, seed);
	uint64_t total = 0, bad = 0;
	for (int i = 0; i < rep->nruns; i++) {
		total += rep->runs[i].r.states;
		bad += rep->runs[i].r.inconsistent;
	}
	int caught = 0;
	for (int i = 0; i < rep->nmutants; i++)
		caught += rep->mutants[i].caught;
	double secs = now() - t0;
	if (json)
		print_json(rep, total, bad, caught, seed, secs, workloads);
	else
		print_text(rep, total, bad, caught, secs);
	int ok = bad == 0 && caught == rep->nmutants;
	free(rep);
	return ok ? 0 : 1;
}

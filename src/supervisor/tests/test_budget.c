/* test_budget.c -- the overhead budget's steering (budget.h), driven on a simulated clock: a tree
 * with no process (no fault count, no waits to read), cuts whose stops the test chooses, the
 * protect faults each cut's pages cost charged as the tracker's protected bytes, and every cut
 * taken when budget_cut_at allows.  Checked: the share of the run the cuts cost, against the
 * budget.  Deterministic: the faults' prices are set, not measured.
 *   - stops that cost the same settle at the budget;
 *   - stops that vary (kv's: 4-11 ms) settle near it (the controller learns each cost after the
 *     fact: a cheap cut shortens the next interval, a dear one follows);
 *   - a program that writes pages all the time (faults in proportion to the interval) and whose
 *     cuts the controller postpones (it predicts the cheapest stop only: no fault count here, as
 *     for a program whose memory is diff-tracked) settles at its budget: the interval after a
 *     postponed cut is scaled from the period the cut was taken at.  Scaled from the shorter
 *     interval it was due at, the run paid 5.24 % of a 5 % budget;
 *   - stops that cost little stay at --interval.
 * And, with a real process for the tree: the protect faults it takes in an interval are priced
 * whether or not the tracker counted the pages it protected (a mapping copied whole is protected
 * whole again when its hold ends, and none of that was counted: pr's 1025 faults an interval). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "budget.h"
#include "sup.h"

static int failures;
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); failures++; } } while (0)

struct outcome {
	double share;      /* what the cuts cost over the run's time, the first cut left out (it does not steer) */
	double mean_iv_ms; /* from one cut's start to the next's */
	int cuts;
};

/* A run of run_s seconds at --interval 10 ms and a budget of percent: its cuts' stops taken in turn
 * from stops[], each cut's faults fault_rate times the time since the last; the first cut costs
 * first_s. */
static struct outcome simulate(double percent, const double *stops, int nstops, double fault_rate, double first_s,
			       double run_s)
{
	struct tree *t = calloc(1, sizeof *t);
	struct budget b;
	budget_start(&b, t, 10, percent);
	b.fault_s = 0.5e-6, b.cow_s = 2e-6; /* as measured on a quiet machine here */
	double iv = budget_after_cut(&b, t, 0, first_s), last = 0, paid = 0;
	struct outcome o = { 0, 0, 0 };
	for (int k = 0;; k++) {
		double at = last + iv, next;
		while ((next = budget_cut_at(&b, t, at)) > at)
			at = next;
		if (at >= run_s)
			break;
		double stop = stops[k % nstops], faults = fault_rate * (at - last);
		t->stats.stop.protected_bytes += (uint64_t)(faults / b.fault_s) * 4096;
		iv = budget_after_cut(&b, t, at, at + stop);
		CHECK(iv >= 0.010 && iv <= BUDGET_LONGEST_S);
		paid += stop + faults;
		o.mean_iv_ms += (at - last) * 1e3;
		o.cuts++;
		last = at;
	}
	o.share = paid / (run_s - first_s);
	o.mean_iv_ms = o.cuts ? o.mean_iv_ms / o.cuts : 0;
	free(t);
	return o;
}

/* A child that, asked, takes PAGES faults on memory it already holds (dropped and written again:
 * what a write to a page a cut protected costs, without a tracker), its resident pages the same
 * before and after.  Two cuts around it: the second must price those faults. */
enum { PAGES = 4096 }; /* 16 MiB: under ASAN the child gains 70-100 pages of its own between the cuts */
static void measured_faults(void)
{
	int go[2], done[2];
	if (pipe(go) || pipe(done))
		abort();
	pid_t pid = fork();
	if (pid == 0) {
		volatile char *p = mmap(NULL, PAGES * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		char c;
		for (int i = 0; i < PAGES; i++)
			p[i * 4096] = 1;
		if (write(done[1], "r", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(1);
		madvise((void *)p, PAGES * 4096, MADV_DONTNEED);
		for (int i = 0; i < PAGES; i++)
			p[i * 4096] = 2;
		if (write(done[1], "f", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	char c;
	CHECK(read(done[0], &c, 1) == 1);
	struct tree *t = calloc(1, sizeof *t);
	struct sup *m = calloc(1, sizeof *m);
	struct sup *procs[1] = { m };
	m->pid = pid;
	t->procs = procs, t->nprocs = 1;
	struct budget b;
	budget_start(&b, t, 10, 5);
	b.fault_s = 0.5e-6, b.cow_s = 2e-6;
	budget_after_cut(&b, t, 0, 0.001);
	CHECK(write(go[1], "g", 1) == 1 && read(done[0], &c, 1) == 1);
	budget_after_cut(&b, t, 1.0, 1.001); /* nothing protected by the tracker's count */
	double priced = t->stats.budget.fault_total_s, expected = PAGES * b.fault_s;
	printf("a child's %d faults on pages it held: priced %.0f us (%.0f us expected)\n", PAGES, priced * 1e6, expected * 1e6);
	CHECK(priced >= 0.9 * expected && priced <= 1.2 * expected); /* a few faults of its own beside them */
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	free(m);
	free(t);
}

static void say(const char *what, struct outcome o)
{
	printf("%s: %.2f %% of the run, mean interval %.1f ms, %d cuts\n", what, o.share * 100, o.mean_iv_ms, o.cuts);
}

int main(void)
{
	const double steady[] = { 0.010 }, varying[] = { 0.004, 0.011, 0.007, 0.009, 0.005, 0.010 }, cheap[] = { 0.0002 };
	struct outcome s = simulate(5, steady, 1, 0, 0.030, 30);
	struct outcome v = simulate(5, varying, 6, 0, 0.030, 30);
	struct outcome w = simulate(5, steady, 1, 0.04, 0.030, 30);
	struct outcome c = simulate(5, cheap, 1, 0, 0.002, 30);
	say("stops of 10 ms", s);
	say("stops of 4-11 ms", v);
	say("stops of 10 ms, faults 4 % of the time", w);
	say("stops of 0.2 ms", c);
	CHECK(s.share >= 0.045 && s.share <= 0.051);
	CHECK(v.share >= 0.045 && v.share <= 0.055);
	CHECK(w.share >= 0.045 && w.share <= 0.0515);
	CHECK(c.mean_iv_ms < 10.5 && c.share < 0.05);
	measured_faults();
	if (failures)
		fprintf(stderr, "test_budget: %d failed\n", failures);
	return failures != 0;
}

/* budget.h -- the overhead budget (--max-overhead PERCENT): what each checkpoint costs the
 * program, measured at every cut, and the interval that keeps that cost within the budget
 * (budget.c).
 *
 * What a cut costs the program is the time it loses to it:
 *   - the stop: from the first interrupt until every thread goes on again;
 *   - the first write to each page after the cut: the tracker write-protects what it read, and
 *     the kernel resolves one fault per page the program writes again.  Priced by a measurement
 *     of this machine's fault at start (budget_start) times the faults the program took in the
 *     interval beyond its first touches of new memory (/proc/PID/stat), or the pages the cut
 *     protected when more (a process that exits takes its count with it); and, while a
 *     copy-on-write view of the cut lives (snapshot.h), each fault the program takes (a write to
 *     a page it shares with the view copies it), at the price of a copy-on-write fault, also
 *     measured at start -- or, when more, at the system time the program spent while the view
 *     lived beyond its own rate before it (/proc/PID/stat): a copy priced at 2 us on a quiet
 *     machine took 15 us beside a GiB-sized commit;
 *   - the time its threads were ready to run and waited for a core (/proc/TID/schedstat) while
 *     the cut's commit ran, beyond what they wait when no commit runs: the commit's competition
 *     for the cores.  What other programs of the machine take from it is not checkpointing's
 *     cost, and counting it would push the checkpoints of a busy machine away for nothing.
 * The measured overhead is the sum of those costs over the run's time from its first cut to
 * its end.
 *
 * A cut's cost grows with the pages written since the one before (it reads them, and the program
 * faults once on each), and those are counted as they are written: each is a fault of the
 * program's (a write to a page protected by the last cut, or a first touch of new memory), in its
 * minor-fault count (/proc/PID/stat).  Each cut teaches a price per page written (its cost, less
 * the cheapest stop seen, over the pages written in the interval it ends); a due cut whose
 * predicted cost -- that price times the pages written so far -- is more than the budget earned
 * since the last cut is postponed until it is not.  A program that writes gigabytes between
 * cuts is checkpointed when the budget has paid for such a cut, not every interval at a loss the
 * controller learns of only afterwards.  Until a price is learned (the run's first cuts), a page
 * is priced at a protect fault and a copy-on-write fault: what the program pays for it at least.
 *
 * Invariants
 *   - The interval is never below --interval, and with --max-overhead 0 it is --interval always.
 *   - The next interval is the last one (the period the last cut was postponed to, when that cut
 *     cost more than the budget even then) scaled by the last cut's cost share over the budget: a
 *     program whose cuts cost a fixed time (it rewrites the same memory) settles where they meet
 *     the budget, one that writes less comes back down to --interval.  It at most doubles from
 *     one cut to the next (one noisy cut does not push checkpoints away), falls to a quarter at
 *     most, and is at most BUDGET_LONGEST_S.
 *   - The run's first cut (it reads every page) and a resume's (it ends the fill) are counted in
 *     the measured overhead but not in the choice of the interval: they do not recur.
 *   - A postponed cut is taken at the latest BUDGET_LONGEST_S after the last one; with
 *     --max-overhead 0 none is postponed, nor while output held for a cut waits for a connection's
 *     peer or a terminal, or more than OUTHOLD_BACKLOG bytes of it (outhold.h): a server's reply
 *     or a line a person waits for is not kept back for the budget's sake (the interval the
 *     controller chose applies no more: such a cut is taken an --interval after the last,
 *     budget_reply_waits).  Output to a pipe waits for the cut the budget allows: a dense
 *     writer's progress line forced a cut that cost it 14 % of its run at a 5 % budget.
 */
#ifndef PROSPER_SUP_BUDGET_H
#define PROSPER_SUP_BUDGET_H
#include <stdint.h>
#include "sup.h"

/* The longest interval the budget chooses (seconds): beyond it a kill loses more work than a
 * lower overhead is worth to a long computation.  A minute, not less: a 4 GiB dense writer's cut
 * costs it 2.5 s or more (its copy-on-write faults, a GiB-sized commit beside it), so at 10 s
 * it ran 1.4-4.6x native under a 5 % budget; at 5 % such a cut is paid for in 50 s. */
#define BUDGET_LONGEST_S 60.0

/* --max-overhead when not given (percent).  What the budget measures is not all a cut costs: a
 * program whose data lives in the caches refills them after each stop (pr and sssp spent 2.7-3.8 %
 * more CPU time in user mode than natively at 5 %, kv none), and `prosper run` starts and ends a
 * pool.  At 5 %, three runs of bench/scripts/budget.py each had one or two programs over 1.10x
 * native (pr 1.114x, sssp 1.154x, kv 1.102-1.109x); 4 leaves room for that, and kv is still
 * checkpointed 13 times as often as DMTCP's -i 1 (3 %: 8.8 times).  A program whose cuts cost
 * little is checkpointed every --interval all the same. */
#define BUDGET_DEFAULT_PERCENT 4.0
#define BUDGET_DEFAULT_TEXT "4"

struct budget {
	double base_s;          /* --interval */
	double fraction;        /* --max-overhead / 100; 0: off */
	double interval_s;      /* the interval chosen for the next cut */
	double fault_s;         /* one write-protect fault on this machine (0: not measured) */
	double cow_s;           /* one copy-on-write fault on this machine (0: not measured) */
	uint64_t protected_bytes; /* the pages the tracker protected again, summed, at the last cut */
	uint64_t cow_faults;    /* the program's faults while copy-on-write views lived, at the last cut */
	uint64_t cow_ns;        /* their measured time (snapshot_stats.cow_extra_ns), at the last cut */
	/* the run-queue waits of the program's threads (budget.c, waits_at_cut) */
	uint64_t wait_ns;       /* summed, when last read */
	int committing;         /* the last cut's commit has not been seen done */
	double commit_start_s, commit_end_s, commit_span_s; /* commit_end_s 0: not seen done */
	double commit_waited_s; /* the program's wait while the commit ran */
	double quiet_rate;      /* its wait per second when no commit runs */
	double last_cut_s;      /* when the last cut started (stopclock) */
	uint64_t minflt_at_cut; /* the program's minor faults, summed, at the last cut */
	uint64_t minflt_seen;   /* the same, when a due cut was last weighed */
	uint64_t resident_at_cut, resident_seen; /* its resident pages, summed, at those two times */
	double page_s;          /* a cut's cost per page written since the one before (0: not learned) */
	double fixed_s;         /* the cheapest stop seen: a cut's cost with nothing written */
	int postponing;         /* the due cut has been put off (counted once) */
	int cuts;               /* cuts seen */
};

/* The budget a run keeps (percent; 0: the fixed cadence): --max-overhead, but 0 under --verify
 * unless given (the oracle commits in the stop: it checks every interval, whatever it costs). */
double budget_percent(const struct sup_config *cfg);

/* Set up for a run with the interval interval_ms and the budget percent (0: fixed cadence); on,
 * the write-protect and copy-on-write faults are measured here (a few ms). */
void budget_start(struct budget *b, struct tree *t, double interval_ms, double percent);

/* A cut started at started and the program went on at now: its cost is counted (t->stats.budget)
 * and the interval until the next cut returned. */
double budget_after_cut(struct budget *b, struct tree *t, double started, double now);

/* A cut is due at now: the time it may be taken (now, or later when its predicted cost is more
 * than the budget earned since the last cut; counted in t->stats.budget.postponed). */
double budget_cut_at(struct budget *b, struct tree *t, double now);

/* The commit of the last cut is done (the loop saw the worker idle): the waits it caused are counted
 * with the next cut. */
void budget_commit_done(struct budget *b, struct tree *t);

/* Does output held for a cut wait for a connection's peer or a terminal (outhold.h) an --interval
 * or more after the last cut, the budget having lengthened the interval?  Then the cut is due now:
 * a reply waits no longer than at the fixed cadence (a server under a 5 % budget otherwise answered
 * at the lengthened interval, and a test's Redis clients got 115 replies in 20 kills' time).  What
 * it costs beyond the budget is measured and reported all the same. */
int budget_reply_waits(const struct budget *b, struct tree *t, double now);

/* When the loop must look at the held output again (budget_reply_waits): an --interval from now
 * while the interval is lengthened, else wake unchanged. */
double budget_look_by(const struct budget *b, double now, double wake);

/* The program ended at now: the measured cost runs until then, with the last interval's protect
 * faults as far as they were seen (a lower bound: the program's fault count is gone with it). */
void budget_at_end(struct budget *b, struct tree *t, double now);

#endif

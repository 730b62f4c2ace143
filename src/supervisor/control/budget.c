/* budget.c -- the overhead budget: each cut's cost measured, the next interval chosen (budget.h). */
#include "budget.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "prosper/track.h"
#include "prosper/internal/uffd_abi.h"
#include "outhold.h"
#include "procfs.h"
#include "stopclock.h"
#include "settings.h"

/* The most the interval changes from one cut to the next: up slowly (one costly cut does not push
 * checkpoints away for long), down fast (a program that writes less is checkpointed often again
 * soon: what a kill loses is the interval). */
#define MOST_UP 2.0
#define MOST_DOWN 0.25

/* ------------------------------------------------------------------ the write fault's price */

enum { PROBE_PAGES = 1024 };

/* Seconds to write one byte into each page of p (n pages). */
static double touch_all(volatile uint8_t *p, size_t n)
{
	double t0 = stopclock_now();
	for (size_t i = 0; i < n; i++)
		p[i * 4096]++;
	return stopclock_now() - t0;
}

/* One write-protect fault resolved by the kernel, as the tracker leaves the program's pages after
 * a cut: a userfaultfd of our own with the tracker's features over pages of our own, protected,
 * written (a fault each), written again (none); the difference per page, the least of three tries
 * (the others met other work).  0 when this machine cannot say (no userfaultfd here). */
static double measure_fault(uint8_t *p, size_t len)
{
	int flags = O_CLOEXEC | O_NONBLOCK;
	int uffd = (int)syscall(SYS_userfaultfd, flags);
	if (uffd < 0 && prosper_uffd_retry_flags(flags, errno) >= 0)
		uffd = (int)syscall(SYS_userfaultfd, flags | UFFD_USER_MODE_ONLY);
	double best = 0;
	struct prosper_track t;
	struct uffdio_api api = { .api = UFFD_API, .features = PROSPER_UFFD_TRACK_FEATURES };
	if (uffd >= 0 && ioctl(uffd, UFFDIO_API, &api) == 0 &&
	    prosper_track_open(&t, PROSPER_TRACK_PAGE, getpid(), uffd) == 0) {
		uint64_t a = (uint64_t)(uintptr_t)p;
		int ok = prosper_track_add(&t, a, a + len) == 0;
		for (int k = 0; ok && k < 3; k++) {
			if (k && prosper_track_rearm(&t, a, a + len) != 0)
				break;
			double faulting = touch_all(p, PROBE_PAGES), plain = touch_all(p, PROBE_PAGES);
			double each = (faulting - plain) / PROBE_PAGES;
			if (each > 0 && (best == 0 || each < best))
				best = each;
		}
		prosper_track_close(&t); /* closes uffd; the pages are left unprotected */
	} else if (uffd >= 0) {
		close(uffd);
	}
	return best;
}

/* One copy-on-write fault, as the program takes them while a view of a cut lives (snapshot.h):
 * a private mapping of a file of ours, its pages read (mapped shared with the file) then written
 * (the kernel allocates and copies each), then written again (no fault); the difference per page,
 * the least of three tries.  The same fault as a write to a page shared with a view, without a
 * process to make.  0 when this machine cannot say.  Such a copy costs several times a protect
 * fault here: priced as one, a view's cuts looked cheap and a dense writer ran 1.5-3.9x native at
 * a 5 % budget. */
static double measure_cow_fault(size_t len)
{
	int fd = (int)syscall(SYS_memfd_create, "prosper-cow-probe", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	double best = 0;
	if (ftruncate(fd, (off_t)len) == 0) {
		for (int k = 0; k < 3; k++) {
			volatile uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
			if (p == MAP_FAILED)
				break;
			madvise((void *)p, len, MADV_NOHUGEPAGE);
			uint8_t sum = 0;
			for (size_t i = 0; i < PROBE_PAGES; i++) /* each page mapped, the file's */
				sum += p[i * 4096];
			double copying = touch_all(p, PROBE_PAGES), plain = touch_all(p, PROBE_PAGES);
			munmap((void *)p, len);
			double each = (copying - plain) / PROBE_PAGES;
			if (each > 0 && (best == 0 || each < best) && sum == 0)
				best = each;
		}
	}
	close(fd);
	return best;
}

/* The two fault prices, over PROBE_PAGES pages of our own (a few ms in all). */
static void measure_faults(double *fault_s, double *cow_s)
{
	size_t len = (size_t)PROBE_PAGES * 4096;
	*fault_s = *cow_s = 0;
	uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return;
	madvise(p, len, MADV_NOHUGEPAGE); /* the program's pages are tracked 4 KiB at a time */
	memset(p, 1, len);
	*fault_s = measure_fault(p, len);
	*cow_s = measure_cow_fault(len);
	munmap(p, len);
}

/* ------------------------------------------------------------------ the run-queue waits */

/* The program's threads' time ready to run but waiting for a core, summed (ns). */
static uint64_t waits_of(const struct tree *t)
{
	uint64_t sum = 0;
	for (int i = 0; i < t->nprocs; i++) {
		const struct sup *m = t->procs[i];
		for (int k = 0; k < m->nthr && !m->exited; k++) {
			char path[80], line[128];
			snprintf(path, sizeof path, "/proc/%d/task/%d/schedstat", (int)m->pid, (int)m->thr[k].tid);
			unsigned long long run, wait;
			if (proc_read_small(path, line, sizeof line) > 0 && sscanf(line, "%llu %llu", &run, &wait) == 2)
				sum += wait;
		}
	}
	return sum;
}

static int threads_of(const struct tree *t)
{
	int n = 0;
	for (int i = 0; i < t->nprocs; i++)
		if (!t->procs[i]->exited)
			n += t->procs[i]->nthr;
	return n > 0 ? n : 1;
}

/* ------------------------------------------------------------------ the pages written */

/* The program's minor faults, summed over its processes (/proc/PID/stat, field 10): each page it
 * writes after a cut protected it, and each page of new memory it touches, is one.  Its resident
 * pages too (field 24), when asked: a first touch adds one, a protect fault none. */
static uint64_t minflt_of(const struct tree *t, uint64_t *resident)
{
	uint64_t sum = 0, rss_sum = 0;
	for (int i = 0; i < t->nprocs; i++) {
		struct proc_counts c;
		if (t->procs[i]->exited || proc_stat_counts(t->procs[i]->pid, &c) != 0)
			continue;
		sum += c.minflt;
		rss_sum += c.resident_pages;
	}
	if (resident)
		*resident = rss_sum;
	return sum;
}

/* A cut ended at minflt: the price of a page written learned from the interval it ends (cost: its
 * stop, the faults and the waits of the interval). */
static void learn_page_price(struct budget *b, double stop, double cost, uint64_t minflt)
{
	if (b->fixed_s == 0 || stop < b->fixed_s)
		b->fixed_s = stop;
	uint64_t pages = minflt > b->minflt_at_cut ? minflt - b->minflt_at_cut : 0;
	if (pages < 16) /* too few to say what a page costs */
		return;
	double each = (cost > b->fixed_s ? cost - b->fixed_s : 0) / (double)pages;
	b->page_s = b->page_s ? (b->page_s + each) / 2 : each;
}

/* The protect faults the program took in the interval that ended at a cut whose fault count and
 * resident pages are flt and rss: its minor faults less the pages it gained (a first touch of new
 * memory is no cost of checkpointing; a first touch of memory a cut protected before it was
 * populated is two faults, one of them ours) and less the copy-on-write faults of views (priced
 * apart).  Not the pages the last cut protected: a mapping copied whole is protected whole again
 * when its hold ends (capture.c), and pr rewrote its 4 MiB of ranks after each such re-arm, 1025
 * faults an interval that no protected byte counted.  0 when the count went down (a process of
 * the tree exited with its own). */
static uint64_t protect_faults_taken(const struct budget *b, uint64_t flt, uint64_t rss, uint64_t cow)
{
	uint64_t faults = flt > b->minflt_at_cut ? flt - b->minflt_at_cut : 0;
	uint64_t gained = rss > b->resident_at_cut ? rss - b->resident_at_cut : 0;
	uint64_t less = gained + cow;
	return faults > less ? faults - less : 0;
}

/* The faults a cut cost the program: `protected` pages written after it protected them, and `cow`
 * faults taken while its view lived, each at a copy-on-write fault's price (a write to a protected
 * page shared with the view is counted in both: an upper bound, kept so by choice). */
static double faults_cost(const struct budget *b, uint64_t protected, uint64_t cow, uint64_t cow_ns)
{
	double copy_s = b->cow_s > b->fault_s ? b->cow_s : b->fault_s; /* not measured: a fault at least */
	/* a view's copies at their price, or at the system time they took the program when more: on
	 * a machine whose memory is contended (a GiB-sized commit beside them) a copy cost 15 us */
	double copies = copy_s * (double)cow, took = (double)cow_ns * 1e-9;
	return b->fault_s * (double)protected + (took > copies ? took : copies);
}

/* The views' faults and their measured time, as the commit thread adds them. */
static uint64_t cow_faults_of(const struct tree *t) { return __atomic_load_n(&t->stats.snapshot.cow_faults, __ATOMIC_RELAXED); }
static uint64_t cow_ns_of(const struct tree *t) { return __atomic_load_n(&t->stats.snapshot.cow_extra_ns, __ATOMIC_RELAXED); }

/* ------------------------------------------------------------------ the cadence */

/* The bytes the tracker protected again, summed: the stops' and the pre-copy passes' */
static uint64_t bytes_protected(const struct tree *t)
{
	return t->stats.stop.protected_bytes + t->stats.precopy.bytes;
}

/* The commit's competition for the cores, as the program's threads' extra run-queue wait while
 * it ran: their wait then, less what they wait at the rate they wait when no commit runs (other
 * programs of the machine: not ours to count).  The rate is that of the time from the commit's
 * end to the next cut; a commit that runs until then keeps the last rate known.  A stopped thread
 * does not wait, so a stop in the span changes nothing.  Called at a cut's end: the commit that
 * starts now is watched. */
static void waits_at_cut(struct budget *b, struct tree *t, double now)
{
	uint64_t w = waits_of(t);
	double quiet = b->commit_end_s ? now - b->commit_end_s : 0;
	if (quiet > 1e-3 && w >= b->wait_ns)
		b->quiet_rate = (double)(w - b->wait_ns) * 1e-9 / quiet;
	b->wait_ns = w;
	b->commit_start_s = now;
	b->commit_end_s = 0;
	b->committing = 1;
}

double budget_percent(const struct sup_config *cfg)
{
	return cfg->verify && !(cfg->given & GIVEN_MAX_OVERHEAD) ? 0 : cfg->max_overhead_pct;
}

void budget_start(struct budget *b, struct tree *t, double interval_ms, double percent)
{
	memset(b, 0, sizeof *b);
	b->base_s = b->interval_s = interval_ms / 1e3;
	b->fraction = percent / 100.0;
	struct budget_stats *bs = &t->stats.budget;
	bs->percent = percent;
	if (b->fraction > 0) {
		measure_faults(&b->fault_s, &b->cow_s);
		bs->fault_s = b->fault_s, bs->cow_fault_s = b->cow_s;
	}
}

double budget_after_cut(struct budget *b, struct tree *t, double started, double now)
{
	struct budget_stats *bs = &t->stats.budget;
	uint64_t prot = bytes_protected(t);
	uint64_t rss = 0, flt = b->fraction > 0 ? minflt_of(t, &rss) : 0; /* read once: the program runs again */
	double stop = now - started;
	if (b->cuts++ == 0) {
		bs->since = started;
		bs->stop_s += stop;
	} else {
		double period = started - b->last_cut_s;
		uint64_t cow = cow_faults_of(t) - b->cow_faults;
		uint64_t taken = protect_faults_taken(b, flt, rss, cow), protected = (prot - b->protected_bytes) / 4096;
		double faults = faults_cost(b, taken > protected ? taken : protected, cow, cow_ns_of(t) - b->cow_ns);
		/* the last commit's extra wait, the mean thread's: a program of many threads loses it in
		 * each of them at once */
		double extra = b->commit_end_s ? b->commit_waited_s - b->quiet_rate * b->commit_span_s : 0;
		double wait = extra > 0 ? extra / threads_of(t) : 0;
		double cost = stop + faults + wait;
		bs->stop_s += stop, bs->fault_total_s += faults, bs->wait_s += wait;
		if (b->fraction > 0 && b->cuts > 2) /* the interval the first cut ended is not typical */
			learn_page_price(b, stop, cost, flt);
		bs->page_s = b->page_s;
		bs->intervals++;
		bs->interval_sum_s += period;
		if (period > bs->interval_max_s)
			bs->interval_max_s = period;
		if (b->fraction > 0) {
			/* the cost's share of the period over the budget: the interval that would have met
			 * it had the cut cost the same (a cut that reads more after a longer interval costs
			 * more: the next cuts correct it) */
			double over = cost / (period > 0 ? period : b->interval_s) / b->fraction;
			double f = over > MOST_UP ? MOST_UP : over < MOST_DOWN ? MOST_DOWN : over;
			/* a cut over the budget even after the period it was postponed to asks that period
			 * scaled, not the shorter interval it was due at: scaled from that, the next cuts
			 * were due early and each postponed only to the cheapest stop's share while the
			 * interval climbed back (kv, a traced run: periods of 246 ms = 12.3 ms / 5 %, its
			 * cuts costing 25-55 ms); kv's measured cost was 5.7-6.1 % of a 5 % budget, 5.1-5.4 %
			 * with this (tests/test_budget.c: 5.24 % and 5.04 % on a simulated clock) */
			double from = over > 1 && period > b->interval_s ? period : b->interval_s;
			double want = from * f;
			if (want > BUDGET_LONGEST_S)
				want = BUDGET_LONGEST_S;
			b->interval_s = want > b->base_s ? want : b->base_s;
		}
	}
	bs->until = now;
	if (b->interval_s > bs->chosen_max_s)
		bs->chosen_max_s = b->interval_s;
	bs->chosen_last_s = b->interval_s;
	b->protected_bytes = prot;
	b->cow_faults = cow_faults_of(t);
	b->cow_ns = cow_ns_of(t);
	b->last_cut_s = started;
	b->postponing = 0;
	if (b->fraction > 0) {
		b->minflt_at_cut = b->minflt_seen = flt;
		b->resident_at_cut = b->resident_seen = rss;
		waits_at_cut(b, t, now);
	}
	return b->interval_s;
}

double budget_cut_at(struct budget *b, struct tree *t, double now)
{
	if (b->fraction <= 0 || !b->cuts)
		return now;
	/* before a price is learned (the first cuts), a page written is priced at what the program
	 * pays for it at least: its protect fault after the cut, and its copy by the stop or a view */
	double page_s = b->page_s ? b->page_s : b->fault_s + b->cow_s;
	if (!page_s)
		return now;
	double latest = b->last_cut_s + BUDGET_LONGEST_S;
	if (now >= latest || outhold_waiting(t) & OUTHOLD_WAITS_URGENT)
		return now;
	uint64_t flt = minflt_of(t, &b->resident_seen);
	b->minflt_seen = flt;
	double pages = flt > b->minflt_at_cut ? (double)(flt - b->minflt_at_cut) : 0;
	/* the budget earned since the last cut pays for it: fraction * (at - last) >= predicted cost */
	double at = b->last_cut_s + (b->fixed_s + page_s * pages) / b->fraction;
	if (at <= now)
		return now;
	t->stats.budget.postponed += !b->postponing;
	b->postponing = 1;
	/* looked at again an --interval later: more pages are written meanwhile, and output held for a
	 * cut may come (a pipe's bytes reach the hold as its reader takes them) */
	double again = now + b->base_s;
	return again < at ? again : at < latest ? at : latest;
}

void budget_commit_done(struct budget *b, struct tree *t)
{
	if (!b->committing)
		return;
	b->committing = 0;
	uint64_t w = waits_of(t);
	b->commit_end_s = stopclock_now();
	b->commit_span_s = b->commit_end_s - b->commit_start_s;
	b->commit_waited_s = w > b->wait_ns ? (double)(w - b->wait_ns) * 1e-9 : 0;
	b->wait_ns = w;
}

void budget_at_end(struct budget *b, struct tree *t, double now)
{
	struct budget_stats *bs = &t->stats.budget;
	if (b->fraction <= 0 || !b->cuts)
		return;
	/* the protect faults of the last interval, as far as a postponed cut saw them: the program
	 * is gone, its fault count with it.  Less the pages it gained, as at a cut: a 2 GiB writer
	 * filling its memory after its one cut was charged 500 ms of "protect faults" for its first
	 * touches, its measured cost 10.9 % for 4.8 % with them left out */
	uint64_t cow = cow_faults_of(t) - b->cow_faults;
	bs->fault_total_s += faults_cost(b, protect_faults_taken(b, b->minflt_seen, b->resident_seen, cow), cow,
					 cow_ns_of(t) - b->cow_ns);
	bs->until = now;
}

int budget_reply_waits(const struct budget *b, struct tree *t, double now)
{
	return b->fraction > 0 && b->cuts && b->interval_s > b->base_s && now >= b->last_cut_s + b->base_s &&
	       (outhold_waiting(t) & OUTHOLD_WAITS_URGENT);
}

double budget_look_by(const struct budget *b, double now, double wake)
{
	if (b->fraction <= 0 || b->interval_s <= b->base_s)
		return wake;
	double look = now + b->base_s;
	return look < wake ? look : wake;
}

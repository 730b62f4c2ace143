/* snapshot.c -- a large cut read from a copy-on-write view of the program (snapshot.h). */
#include "snapshot.h"
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>
#include "inject.h"
#include "procfs.h"
#include "readers.h"
#include "stage.h"
#include "stopclock.h"

#ifndef CLONE_PARENT
#define CLONE_PARENT 0x00008000
#endif
#ifndef CLONE_FILES
#define CLONE_FILES 0x00000400
#endif
#ifndef CLONE_FS
#define CLONE_FS 0x00000200
#endif

/* Before any fork was measured: 15 ms per GiB in place (a 2 GiB process forked in 29-34 ms
 * here); before any stop's read: 1 GB/s (a 2 GiB writer's stops read 0.64-0.73 GB/s here, the
 * staging pages' first touch included; guessed at 3 GB/s, its first cut was copied in a 144 ms
 * stop).  Each is replaced by what this run measures. */
#define FORK_S_PER_BYTE_GUESS (15e-3 / (1u << 30))
#define COPY_BYTES_PER_S_GUESS 1e9
#define COPY_RATE_MIN_SAMPLE (64ull << 20) /* the stops' reads measure the rate once they read this much */
#define COPY_TIMED_MIN (4ull << 20)         /* in reads of at least this much (a small one is its overheads) */
#define PAGE_BYTES 4096ull

/* The stop's copy, timed when it is large enough to tell the rate. */
static int copy_now(struct sup *s, uint64_t unread, char *why, size_t whylen)
{
	double t0 = stopclock_now();
	int rc = stage_read(s, why, whylen);
	if (!rc && unread >= COPY_TIMED_MIN) {
		s->tree->stats.snapshot.copied_bytes += unread;
		s->tree->stats.snapshot.copy_total_s += stopclock_now() - t0;
	}
	return rc;
}

/* The minor faults of process pid so far, its system time in seconds and its resident pages
 * (proc_stat_counts), 0 if unknown. */
static uint64_t faults_and_stime(pid_t pid, double *stime_s, uint64_t *resident_pages)
{
	struct proc_counts c;
	proc_stat_counts(pid, &c); /* all zero if it cannot be read */
	*stime_s = (double)c.stime_ticks / (double)sysconf(_SC_CLK_TCK);
	if (resident_pages)
		*resident_pages = c.resident_pages;
	return c.minflt;
}

/* MemAvailable of /proc/meminfo, in bytes (0 if unknown). */
static uint64_t memory_available(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	char line[128];
	unsigned long long kb = 0;
	while (f && fgets(line, sizeof line, f) && sscanf(line, "MemAvailable: %llu kB", &kb) != 1)
		;
	if (f)
		fclose(f);
	return (uint64_t)kb << 10;
}

/* Is process s one a view can be made of now?  Its parent must be the supervisor (snapshot.h). */
static int viewable(struct sup *s)
{
	if (s->snap.off || !s->gate || s->vforked || s->resume.fill || !s->tree->files.on)
		return 0; /* without the filter, a madvise that a view would not see through goes unseen */
	if (!s->snap.parent_checked) {
		s->snap.parent_checked = 1;
		if (proc_parent(s->pid) != getpid())
			s->snap.off = 1; /* a child of the program's: its view would be its parent's child */
	}
	return !s->snap.off;
}

/* Is a view worth it for `unread` bytes (--snapshot auto): would the stop's copy be long, and
 * longer than twice the fork?  A view does not make a cut cheaper in all: the program then
 * copies each page it writes while the view lives, in the kernel, one fault at a time (kv, 34
 * MiB written at random, ran 1.68x with a view at every 10 ms cut against 1.16x copied in the
 * stops).  It makes the stop short: worth it once the copy would hold the program long. */
static int worth_it(struct sup *s, uint64_t unread, uint64_t resident)
{
	if (unread < SNAPSHOT_MIN_BYTES)
		return 0;
	const struct snapshot_stats *st = &s->tree->stats.snapshot;
	double rate = st->copied_bytes >= COPY_RATE_MIN_SAMPLE && st->copy_total_s > 0
			      ? (double)st->copied_bytes / st->copy_total_s
			      : COPY_BYTES_PER_S_GUESS;
	double per = s->snap.fork_s_per_byte > 0 ? s->snap.fork_s_per_byte : FORK_S_PER_BYTE_GUESS;
	double copy_s = (double)unread / rate;
	return copy_s > SNAPSHOT_LONG_STOP_S && copy_s > 2 * per * (double)resident;
}

/* Fork the stopped process s through one of its threads: the view's pid, or a negative errno. */
static pid_t fork_view(struct sup *s)
{
	int t = 0;
	while (t < s->nthr && s->thr[t].listening) /* a thread in a group stop does not run calls */
		t++;
	if (t == s->nthr)
		return -EAGAIN;
	struct inject in;
	int rc = inject_open(&in, s->thr[t].tid, s->gate);
	if (rc)
		return rc;
	in.cloned = 0;
	long r = inject_syscall(&in, SYS_clone, CLONE_PARENT | CLONE_FILES | CLONE_FS, 0, 0, 0, 0, 0);
	pid_t view = in.cloned;
	ptrace(PTRACE_SETREGS, in.pid, 0, &in.base); /* back where it stopped */
	struct user_regs_struct let_go = in.base;      /* the view, if ever let go, ends at once */
	inject_close(&in);
	int st;
	if (r < 0 || view <= 0) {
		if (view > 0)
			kill(view, SIGKILL);
		return r < 0 ? (pid_t)r : -ECHILD;
	}
	if (waitpid(view, &st, __WALL) != view || !WIFSTOPPED(st)) {
		kill(view, SIGKILL);
		return -ECHILD;
	}
	let_go.rip = s->gate;
	let_go.rax = SYS_exit_group;
	let_go.orig_rax = (unsigned long)-1;
	let_go.rdi = 0;
	ptrace(PTRACE_SETREGS, view, 0, &let_go);
	return view;
}

int snapshot_or_read(struct sup *s, char *why, size_t whylen)
{
	snapshot_drop(s); /* none should be left: a cut's view ends with its commit */
	int mode = s->cfg.snapshot_mode;
	if (mode == SNAPSHOT_COPY) /* nothing to price, nothing to time */
		return stage_read(s, why, whylen);
	uint64_t unread = stage_unread_bytes(s);
	if (!unread || !viewable(s))
		return copy_now(s, unread, why, whylen);
	if (!s->snap.stime_at) { /* the first: where the program's own system time is measured from */
		s->snap.stime_at = stopclock_now();
		faults_and_stime(s->pid, &s->snap.stime_s, NULL);
	}
	if (mode == SNAPSHOT_AUTO && unread < SNAPSHOT_MIN_BYTES)
		return copy_now(s, unread, why, whylen); /* the common cut: no /proc read in its stop */
	uint64_t resident = proc_resident_bytes(s->pid);
	if (mode == SNAPSHOT_AUTO && !worth_it(s, unread, resident)) {
		s->tree->stats.snapshot.declined += unread >= SNAPSHOT_MIN_BYTES;
		return copy_now(s, unread, why, whylen);
	}
	if (memory_available() < resident) {
		/* while a view lives each page the program writes is there twice: a program that rewrites
		 * all of it could need its size again, and the machine has less left */
		s->tree->stats.snapshot.no_room++;
		return copy_now(s, unread, why, whylen);
	}
	double t0 = stopclock_now();
	pid_t view = fork_view(s);
	double dt = stopclock_now() - t0;
	struct snapshot_stats *st = &s->tree->stats.snapshot;
	if (view < 0) {
		if (view != -EAGAIN) {
			s->snap.off = 1;
			st->failed++;
			fprintf(stderr, "%s: a copy-on-write view of the program cannot be made (%s): its large checkpoints are copied while it is stopped\n",
				sup_command(), strerror(-view));
		}
		return copy_now(s, unread, why, whylen);
	}
	if (resident)
		s->snap.fork_s_per_byte = dt / (double)resident;
	st->views++;
	st->fork_total_s += dt;
	if (dt > st->fork_max_s)
		st->fork_max_s = dt;
	s->cut.view = view;
	s->cut.view_bytes = unread;
	/* the program's system time before the view, per second: what it spends there of its own */
	double now = stopclock_now(), stime;
	s->cut.view_faults_from = faults_and_stime(s->pid, &stime, &s->cut.view_resident_from);
	s->cut.view_stime_rate = s->snap.stime_at > 0 && now > s->snap.stime_at && stime >= s->snap.stime_s
					 ? (stime - s->snap.stime_s) / (now - s->snap.stime_at) : 0;
	s->cut.view_stime_from = stime, s->cut.view_from = now;
	stage_note_could(s);
	return 0;
}

/* The view's mappings, from its maps (in address order). */
struct view_map {
	uint64_t start, end;
};

static int read_view_map(pid_t view, struct view_map **out, int *n)
{
	char path[64], line[512];
	snprintf(path, sizeof path, "/proc/%d/maps", (int)view);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	int cap = 0;
	*n = 0;
	for (int whole = 1; fgets(line, sizeof line, f); whole = strchr(line, '\n') != NULL) {
		unsigned long a, b;
		if (!whole || sscanf(line, "%lx-%lx", &a, &b) != 2)
			continue; /* the rest of a long line (a long path) */
		if (*n == cap) {
			cap = cap ? 2 * cap : 256;
			struct view_map *m = realloc(*out, (size_t)cap * sizeof *m);
			if (!m) {
				fclose(f);
				return -ENOMEM;
			}
			*out = m;
		}
		(*out)[(*n)++] = (struct view_map){ a, b };
	}
	fclose(f);
	return 0;
}

/* Does the view hold [a, b) as the program did (mapped, its pages given by the fork)? */
static int view_holds(const struct view_map *m, int n, uint64_t a, uint64_t b)
{
	int lo = 0, hi = n;
	while (lo < hi) { /* the first mapping ending after a */
		int mid = (lo + hi) / 2;
		if (m[mid].end <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (int i = lo; i < n && a < b; i++) {
		if (m[i].start > a)
			return 0;
		a = m[i].end;
	}
	return a >= b;
}

/* The first staged range of s that its view does not hold, or 0 when it holds them all. */
static uint64_t view_misses(struct sup *s, const struct view_map *m, int n)
{
	const struct batch *bt = &s->cut.batch;
	for (size_t i = bt->read_from; i < bt->nchunks; i++)
		if (bt->chunks[i].len && !view_holds(m, n, bt->chunks[i].addr, bt->chunks[i].addr + bt->chunks[i].len))
			return bt->chunks[i].addr;
	for (size_t i = 0; i < bt->nrereads; i++)
		if (!view_holds(m, n, bt->rereads[i].addr, bt->rereads[i].addr + bt->rereads[i].len))
			return bt->rereads[i].addr;
	return 0;
}

int snapshot_read(struct sup *s, char *why, size_t whylen)
{
	if (!s->cut.view)
		return 0;
	double t0 = stopclock_now();
	struct view_map *m = NULL;
	int n = 0, rc = read_view_map(s->cut.view, &m, &n);
	uint64_t miss = rc ? 0 : view_misses(s, m, n);
	free(m);
	if (rc || miss) {
		if (miss)
			s->snap.off = 1; /* MADV_DONTFORK memory the filter did not see: never again for it */
		if (rc)
			snprintf(why, whylen, "the copy-on-write view of the program (pid %d) cannot be read: %s", (int)s->pid,
				 strerror(-rc));
		else
			snprintf(why, whylen, "the copy-on-write view of the program (pid %d) does not hold its memory at %#llx "
				 "(MADV_DONTFORK memory)", (int)s->pid, (unsigned long long)miss);
		snapshot_drop(s);
		return -EIO;
	}
	uint64_t bytes = 0;
	rc = read_staged(s, s->cut.view, &bytes, 0, 0, why, whylen); /* the pre-copied bytes it overrides */
	if (rc)
		snapshot_drop(s);
	struct snapshot_stats *st = &s->tree->stats.snapshot;
	st->bytes += bytes;
	st->read_total_s += stopclock_now() - t0;
	return rc;
}

void snapshot_window_begin(struct sup *s, struct view_window *w)
{
	*w = (struct view_window){ .chunk = s->cut.batch.read_from };
}

void snapshot_window_end(struct view_window *w)
{
	free(w->parts);
	w->parts = NULL;
}

long snapshot_next_window(struct sup *s, struct view_window *w, char *why, size_t whylen)
{
	struct batch *bt = &s->cut.batch;
	if (!s->cut.view || w->chunk >= bt->nchunks)
		return 0;
	/* the window is the batch's own buffer (what it read is written already): no second one */
	uint64_t cap = s->cut.view_bytes < SNAPSHOT_WINDOW ? s->cut.view_bytes : SNAPSHOT_WINDOW;
	if (!w->parts && !(w->parts = malloc(SNAPSHOT_WINDOW_PARTS * sizeof *w->parts)))
		return snprintf(why, whylen, "no memory to read a copy-on-write view"), -ENOMEM;
	if (!(w->data = stage_window(s, cap)))
		return snprintf(why, whylen, "no memory for the window a copy-on-write view is read through"), -ENOMEM;
	/* the window's pairs: the commit thread's own (the loop's reads have theirs) */
	static __thread struct iov_pairs rl;
	rl.n = 0;
	uint64_t used = 0;
	size_t n = 0;
	while (w->chunk < bt->nchunks && n < SNAPSHOT_WINDOW_PARTS) {
		const struct chunk *c = &bt->chunks[w->chunk];
		uint64_t left = c->len - w->done, room = cap - used;
		if (!left) {
			w->chunk++, w->done = 0;
			continue;
		}
		uint64_t take = left <= room ? left : room & ~(PAGE_BYTES - 1); /* split at a page */
		if (!take)
			break;
		struct chunk *part = &w->parts[n];
		*part = *c;
		part->off += w->done, part->addr += w->done, part->len = take, part->at = used;
		if (iov_pairs_add(&rl, w->data + used, (void *)(uintptr_t)part->addr, take) != 0) {
			snprintf(why, whylen, "no memory to read a copy-on-write view");
			return -ENOMEM;
		}
		n++, used += take, w->done += take;
	}
	double t0 = stopclock_now();
	uint64_t bad = 0;
	if (n && proc_mem_readv(s->cut.view, rl.local, rl.remote, rl.n, &bad) != 0) {
		snprintf(why, whylen, "cannot read the program's memory at %#llx (pid %d, from its copy-on-write view): %s",
			 (unsigned long long)bad, (int)s->pid, strerror(errno));
		return -EIO;
	}
	struct snapshot_stats *st = &s->tree->stats.snapshot;
	st->bytes += used;
	st->read_total_s += stopclock_now() - t0;
	return (long)n;
}

void snapshot_forbid(struct sup *s)
{
	s->snap.off = 1;
	s->tree->stats.snapshot.forbidden++;
}

void snapshot_drop(struct sup *s)
{
	if (s->cut.view > 0) {
		kill(s->cut.view, SIGKILL); /* reaped by the loop (its parent is the supervisor) */
		/* the program's faults while the view lived: a write to any page it shared with the view
		 * copied that page.  A first touch of new memory is a fault too, but it adds a resident
		 * page where a copy only trades the shared page for a private one: the pages the program
		 * gained are not copies (a 2 GiB writer still filling its memory took 431725 faults in a
		 * view's 658 ms, nearly all first touches, and the budget priced them all as copies).
		 * Memory the program gave back meanwhile leaves copies counted: an upper bound. */
		double stime, at = stopclock_now();
		uint64_t resident;
		uint64_t now = faults_and_stime(s->pid, &stime, &resident);
		uint64_t gained = resident > s->cut.view_resident_from ? resident - s->cut.view_resident_from : 0;
		struct snapshot_stats *st = &s->tree->stats.snapshot; /* the loop's budget reads them meanwhile */
		uint64_t faults = now > s->cut.view_faults_from && s->cut.view_faults_from ? now - s->cut.view_faults_from : 0;
		uint64_t copies = faults > gained ? faults - gained : 0;
		if (copies)
			__atomic_add_fetch(&st->cow_faults, copies, __ATOMIC_RELAXED);
		/* ... and their measured price: its system time then, beyond its own rate before the view
		 * (the copies' time, with what the machine's contention added to each), the copies' share
		 * of it by count: the first touches' faults are system time too, and a writer filling
		 * its memory while a view lived was charged them all as copies */
		double extra = stime - s->cut.view_stime_from - s->cut.view_stime_rate * (at - s->cut.view_from);
		extra = faults ? extra * (double)copies / (double)faults : 0;
		if (now && extra > 0)
			__atomic_add_fetch(&st->cow_extra_ns, (uint64_t)(extra * 1e9), __ATOMIC_RELAXED);
		if (now)
			s->snap.stime_s = stime, s->snap.stime_at = at;
	}
	s->cut.view = 0;
	s->cut.view_bytes = 0;
}

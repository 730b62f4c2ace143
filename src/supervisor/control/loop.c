/* loop.c -- the stop (cut) loop of `prosper run` / `prosper resume`: ptrace events as they
 * happen, and every interval one checkpoint of the whole program.
 *
 * A checkpoint is a consistent cut: every thread is interrupted, and the capture is taken only
 * once all of them (and any thread created meanwhile) are stopped; the commit then runs on the
 * worker thread (worker.h) while the program goes on.  With --verify the commit and the soundness
 * oracle run inside the stop instead.
 *
 * Invariants
 *   - The program is never left stopped: every stop we cause ends in PTRACE_CONT/LISTEN, also on
 *     error paths; a checkpoint error stops checkpointing (sup_disable), never the program.
 *   - SIGCHLD is blocked and read from a signalfd, so ptrace stops are handled as they happen,
 *     not only at our own stops.
 *   - An exec is followed (exec.c): the next checkpoint is of the new image.
 *   - Every process the program forks is traced, and a cut stops all of them (tree.h); without a
 *     pid namespace of its own, no cut while the program has a child process (children.h).
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "children.h"
#include "disable.h"
#include "precopy.h"
#include "stage.h"
#include "threads.h"
#include "tree.h"
#include "worker.h"
#include "stopclock.h"
#include "loop.h"
#include "exec.h"
#include "nvm.h"
#include "resume.h"
#include "filetrack.h"
#include "budget.h"
#include "fillcopy.h"

/* Every process's lazy fill (fillcopy.h): completed (in a cut's stop, before the capture), pending,
 * ended (with the program stopped after a capture: stopped = 1, or gone). */
static void fill_complete_all(struct tree *t)
{
	for (int i = 0; i < t->nprocs; i++)
		sup_fill_complete(t->procs[i]);
}

static int fill_pending(const struct tree *t)
{
	for (int i = 0; i < t->nprocs; i++)
		if (t->procs[i]->resume.fill)
			return 1;
	return 0;
}

/* A lazy resume's copiers are still at work in one of the program's processes. */
static int fill_copying(const struct tree *t)
{
	for (int i = 0; i < t->nprocs; i++)
		if (fillcopy_copying(t->procs[i]->resume.fill))
			return 1;
	return 0;
}

static void fill_end_all(struct tree *t, int stopped)
{
	for (int i = 0; i < t->nprocs; i++)
		sup_fill_end(t->procs[i], stopped);
}

/* One stop of ours: capture while stopped; commit on the worker (or here, then verify, with the
 * oracle on).  -EAGAIN: no cut can be taken now (a connection the program has not accepted yet,
 * socketpairs.h); else 0. */
static int checkpoint(struct sup *s, struct worker *w)
{
	char why[400] = "";
	int rc = worker_wait(w, why, sizeof why);
	if (rc)
		sup_checkpoint_failed(s, rc, why);
	if (!s->tree->enabled) {
		fill_end_all(s->tree, 1);
		return 0;
	}
	double t0 = stopclock_now();
	/* A lazy resume's fill ends with the program stopped: it must not write its first
	 * checkpoint's worth of memory while the rest is filled, and the pool must not change under
	 * the fill's reads. */
	fill_complete_all(s->tree);
	if (!s->tree->enabled) { /* a page could not be put back: the program was killed */
		fill_end_all(s->tree, 0);
		return 0;
	}
	why[0] = 0;
	rc = tree_capture(s->tree, why, sizeof why);
	if (rc == -EAGAIN)
		return rc;
	fill_end_all(s->tree, 1); /* what it wrote while filled is taken (or checkpointing is off) */
	if (!rc && s->cfg.verify) {
		rc = worker_timed_commit(s, why, sizeof why);
		if (!rc)
			rc = tree_verify(s->tree);
	}
	double dt = stopclock_now() - t0;
	struct sup_stats *st = &s->tree->stats;
	st->stop.total += dt;
	if (dt > st->stop.max)
		st->stop.max = dt;
	if (!st->stop.count++) /* a run's first stop reads its mappings whole; a resume's also ends its fill */
		st->stop.first = dt;
	else if (dt > st->stop.max_later)
		st->stop.max_later = dt;
	if (rc)
		sup_checkpoint_failed(s, rc, why);
	else if (!s->cfg.verify)
		worker_start_commit(w);
	return 0;
}

/* A signal-delivery stop that is an NVM request or a first write to clean NVM memory (nvm.c):
 * served once the commit under way is done (the pool has one user at a time), the thread goes on
 * without the signal.  Returns 0 when the stop is not ours.  Memory that can no longer be kept
 * consistent ends the program: the last checkpoint stays resumable. */
static int nvm_stop(struct sup *s, struct worker *w, pid_t tid, int sig)
{
	if (!sup_nvm_claims(s, tid, sig))
		return 0;
	if (w) {
		char why[400] = "";
		int rc = worker_wait(w, why, sizeof why);
		if (rc)
			sup_checkpoint_failed(s, rc, why);
	}
	char why[300];
	if (sup_nvm_serve(s, tid, sig, why, sizeof why) != 0) {
		fprintf(stderr, "%s: %s; stopping the program, the last checkpoint (epoch %llu) is kept\n", sup_command(), why,
			(unsigned long long)prosper_pool_epoch(s->tree->pool));
		kill(s->pid, SIGKILL);
	}
	return 1;
}

/* --copy precopy: the pass runs this fraction of the interval before the stop (stage.h) -- late
 * enough that little is written between it and the stop, early enough to end before it. */
#define PRECOPY_LEAD 0.2

static void precopy_all(struct sup *s)
{
	for (int i = 0; i < s->tree->nprocs && s->tree->enabled; i++) {
		int rc = stage_precopy(s->tree->procs[i]);
		if (rc)
			sup_checkpoint_failed(s, rc, NULL);
	}
}

/* While the program has a child, a due checkpoint is looked at again this often (seconds). */
#define CHILD_POLL 0.002
/* The longest a cut keeps the program stopped waiting for a vforked child to execute a program
 * (seconds); past it the cut is given up and tried again CHILD_POLL later. */
#define VFORK_WAIT 0.02
/* The longest a cut waits for every thread to stop (seconds).  Past it the cut is given up, the
 * program goes on and the checkpoint is tried again an interval later: a thread in a long
 * uninterruptible wait (I/O on a slow device) must not hold the others stopped, and no mistake of
 * ours about which threads exist may hold the program stopped for good. */
#define CUT_GIVE_UP 1.0
/* After a file call's stop (filetrack.h) the loop looks for the next stop this long (seconds)
 * before it sleeps: a program that writes in a loop stops again within microseconds, and waking a
 * sleeping CPU costs more than the stop itself on a virtual machine (bench/results/file_undo.md:
 * 73 us a stop with sleeping, 19 us with looking first, on the 2-CPU test machine).  Only with
 * more than one CPU to run on: with one, looking would only keep the program from running. */
#define FILE_STOP_SPIN 30e-6
/* A due cut waits while a lazy resume's copiers put the memory back (a cut would finish the fill
 * in its stop: a GiB took half a second), looking again this often, and at most this long after
 * the resume (seconds): the pool holds the state the resume started from, only the work since is
 * at stake. */
#define FILL_LOOK 0.005
#define FILL_WAIT 5.0

static int cpus_to_run_on(void)
{
	cpu_set_t set;
	return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
}

static void new_child(struct sup *s, pid_t child)
{
	children_add(s, child);
	if (!s->tree->warned.children && s->tree->enabled) {
		s->tree->warned.children = 1;
		fprintf(stderr, "%s: the program started a child process; checkpoints wait while it has one "
			"(child processes are not persisted)\n", sup_command());
	}
}

/* Does a pipe of the program's own hold bytes in flight (children.h)? */
static int pipe_in_flight(struct sup *s)
{
	return children_pipe_in_flight(s) >= 0;
}

static int is_stop_signal(int sig) { return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU; }

/* Every thread of every process of the program (an exited process waits for its parent: it has
 * no thread to stop).  A vforked child is never interrupted: its parent waits for it in the kernel
 * and cannot stop before it executes a program (it then joins the cut: PTRACE_EVENT_EXEC) or
 * exits, so the cut waits for that, at most VFORK_WAIT (tree.h). */
static int all_stopped(struct tree *t)
{
	for (int i = 0; i < t->nprocs; i++)
		if (!t->procs[i]->exited && (t->procs[i]->vforked || !threads_all_stopped(t->procs[i])))
			return 0;
	return 1;
}

/* The first thread a cut still waits for, or NULL. */
static struct thr *not_stopped(struct tree *t, struct sup **proc)
{
	for (int i = 0; i < t->nprocs; i++) {
		struct sup *m = t->procs[i];
		for (int k = 0; k < m->nthr && !m->exited && !m->vforked; k++)
			if (!m->thr[k].stopped) {
				*proc = m;
				return &m->thr[k];
			}
	}
	return NULL;
}

static int vfork_pending(struct tree *t)
{
	for (int i = 0; i < t->nprocs; i++)
		if (!t->procs[i]->exited && t->procs[i]->vforked)
			return 1;
	return 0;
}

static void resume_all(struct tree *t)
{
	for (int i = 0; i < t->nprocs; i++)
		if (!t->procs[i]->exited)
			threads_resume_all(t->procs[i]);
}

static void interrupt_all(struct tree *t, int again)
{
	for (int i = 0; i < t->nprocs; i++) {
		struct sup *m = t->procs[i];
		for (int k = 0; k < m->nthr && !m->exited && !m->vforked; k++)
			if (!m->thr[k].stopped && ptrace(PTRACE_INTERRUPT, m->thr[k].tid, 0, 0) != 0 && errno == ESRCH && !again)
				m->thr[k].stopped = 1; /* exiting: its exit is reported next */
	}
}

/* Can a cut be taken now?  With the program's own pid namespace every process is in it (tree.h);
 * without, only while the program has no child (children.h).  The reason a cut waits is said
 * once. */
static int cut_ready(struct sup *s, int follow)
{
	const char *why = NULL;
	int ok = follow ? tree_cut_ready(s->tree, &why) : !children_any(s) && !pipe_in_flight(s);
	if (!ok && why && !s->tree->warned.tree && s->tree->enabled) {
		s->tree->warned.tree = 1;
		fprintf(stderr, "%s: a checkpoint waits: %s\n", sup_command(), why);
	}
	return ok;
}

/* Returns the program's wait status when it ended, or -1 if it was lost.  SIGCHLD is blocked and
 * read from sigfd, so ptrace stops are handled as they happen, not only at our own stops.
 * A checkpoint is a consistent cut: every thread of every process is interrupted, and the
 * checkpoint is taken only once all of them (and any thread or process created meanwhile) are
 * stopped. */
int sup_supervise(struct sup *s, int sigfd)
{
	struct tree *tree = s->tree;
	int follow = tree->run.ns.on; /* child processes are followed (tree.h) */
	struct worker w;
	if (worker_start(&w, s) != 0)
		sup_disable(s, "cannot start the commit thread");
	int have_worker = w.done_fd[0] >= 0;
	struct budget budget; /* the interval: --interval, lengthened to keep within --max-overhead */
	budget_start(&budget, tree, s->cfg.interval_ms, budget_percent(&s->cfg));
	double iv = tree->interval_s = budget.interval_s, next = stopclock_now() + iv;
	const double resumed_at = stopclock_now(); /* a lazy fill's copiers run from about here */
	double fill_wait_from = 0;                 /* a due cut waits for them since */
	double lead_share = s->cfg.copy_mode == COPY_PRECOPY ? PRECOPY_LEAD : 0;
	const char *lead_env = getenv("PROSPER_PRECOPY_LEAD"); /* for measuring the lead (docs/run-resume.md) */
	if (lead_share && lead_env) {
		double f = atof(lead_env); /* a fraction of the interval: outside (0, 1) means the default */
		if (f > 0 && f < 1)
			lead_share = f;
	}
	double lead = iv * lead_share;
	int interrupting = 0, late = 0, st = -1, precopied = 0;
	double interrupt_sent = 0, cut_started = 0, look_until = 0;
	const int spin = cpus_to_run_on() > 1;
	stage_ahead(s, 0); /* while the program starts: the first stop reads into pages in place */
	for (;;) {
		/* every stop and exit that is pending */
		pid_t pid;
		while ((pid = waitpid(-1, &st, __WALL | WNOHANG)) != 0) {
			if (pid < 0)
				goto out_lost;
			struct thr *t = NULL;
			struct sup *m = tree_find(tree, pid, &t);
			/* A lazy resume's fill completes before the program's system call, or anything at
			 * this stop, runs -- but for the stop of a cut, where checkpoint() completes it with
			 * every thread stopped, in the stop's time. */
			if (m && !(interrupting && WIFSTOPPED(st) && (st >> 16) == PTRACE_EVENT_STOP))
				sup_fill_complete(m);
			if (WIFEXITED(st) || WIFSIGNALED(st)) {
				if (pid == s->pid)
					goto out; /* the last thread of the first process: the program's end */
				if (m && pid == m->pid) {
					m->exited = 1; /* a zombie until its parent waits for it (tree_drop_gone) */
					m->exit_status = st;
					m->nthr = 1;
				} else if (m) {
					threads_remove(m, pid);
				}
				goto look; /* it may have been the last one the cut waited for */
			}
			int event = st >> 16, sig = WSTOPSIG(st);
			if (!m && event == PTRACE_EVENT_STOP) {
				/* a new thread of one of the program's processes, or a new process */
				for (int i = 0; i < tree->nprocs && !m; i++)
					if (threads_same_process(tree->procs[i]->pid, pid))
						m = tree->procs[i];
				if (m) {
					t = threads_add(m, pid);
				} else if (follow) {
					pid_t pp = proc_parent(pid);
					for (int i = 0; i < tree->nprocs && !m; i++)
						if (tree->procs[i]->pid == pp && (m = tree_add_child(tree, tree->procs[i], pid)))
							t = &m->thr[0];
				}
			}
			if (!m || !t) {
				ptrace(PTRACE_DETACH, pid, 0, 0); /* not a process of ours (an untraced child) */
				continue;
			}
			if (event == PTRACE_EVENT_CLONE || event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK) {
				unsigned long msg = 0;
				pid_t tid = ptrace(PTRACE_GETEVENTMSG, pid, 0, &msg) == 0 ? (pid_t)msg : 0;
				/* The new task's first stop may have been read before this event, and a thread may
				 * even have run and exited since (its creator not scheduled in between): known,
				 * or gone, it needs nothing more. */
				if (tid <= 0 || tree_find(tree, tid, NULL) || !task_exists(tid))
					;
				else if (event == PTRACE_EVENT_CLONE && threads_same_process(m->pid, tid))
					threads_add(m, tid); /* its first stop follows */
				else if (follow)
					tree_add_child(tree, m, tid); /* its first stop starts it */
				else
					new_child(s, tid); /* detached at its first stop */
				ptrace(PTRACE_CONT, pid, 0, 0);
			} else if (event == PTRACE_EVENT_STOP) {
				t->listening = is_stop_signal(sig);
				t->stopped = 1;
				if (m->untracked && t == &m->thr[0] && tree->enabled) {
					char why[300];
					if (tree_start_child(m, why, sizeof why) != 0)
						sup_disable(s, why);
				}
				if (!interrupting || m->vforked) /* a new thread's or process's first stop, or a group stop */
					threads_resume_all(m);
			} else if (event == PTRACE_EVENT_EXEC) {
				/* The new image runs to its shim's hello (sup_exec) and joins a cut under way:
				 * the others stay stopped (its parent, if it was vforked, stops now too).  The
				 * schedule is kept: a script that executes a program every few ms must not push
				 * its checkpoints away. */
				sup_fill_end(m, 0); /* its memory went with the old image */
				sup_exec(m, have_worker ? &w : NULL); /* continues it */
				m->vforked = 0;
				m->untracked = m != s && m->track.pagemap_fd < 0;
				t = &m->thr[0];
				t->stopped = 0; /* asked to stop below if a cut is under way */
			} else if (event == PTRACE_EVENT_SECCOMP) {
				filetrack_stop(tree, m, pid); /* a change to the file system, recorded before it runs */
				ptrace(PTRACE_CONT, pid, 0, 0);
				if (spin)
					look_until = stopclock_now() + FILE_STOP_SPIN;
			} else if (event || sig == (SIGTRAP | 0x80)) {
				/* an event, or the system call a lazy resume stopped at (its fill completed above) */
				ptrace(PTRACE_CONT, pid, 0, 0);
			} else if (!nvm_stop(m, have_worker ? &w : NULL, pid, sig)) {
				ptrace(PTRACE_CONT, pid, 0, (void *)(long)sig); /* signal-delivery stop: deliver it */
			}
			/* An interrupt sent while the thread sat in another stop can be lost when that stop
			 * ends: ask again (a pending one is not doubled). */
			if (interrupting && !t->stopped && event != PTRACE_EVENT_STOP)
				ptrace(PTRACE_INTERRUPT, pid, 0, 0);
		look:
			if (interrupting && all_stopped(tree)) {
				/* the program is stopped and cannot fork now: can the cut hold all of it? */
				int asked = cut_ready(s, follow), ready = asked;
				if (tree->enabled && have_worker && ready)
					ready = checkpoint(s, &w) != -EAGAIN;
				s->tree->stats.waited_for_children += !asked;
				s->tree->stats.cuts_put_off += asked && !ready;
				precopied = precopied && !ready;
				interrupting = 0;
				resume_all(tree);
				double now = stopclock_now();
				if (ready && tree->enabled) {
					iv = tree->interval_s = budget_after_cut(&budget, tree, cut_started, now);
					lead = iv * lead_share;
				}
				next = now + (ready ? iv : CHILD_POLL);
			}
		}
		double t = stopclock_now();
		int busy = have_worker && worker_busy(&w);
		if (!busy)
			budget_commit_done(&budget, tree);
		if (lead && !precopied && s->tree->enabled && !interrupting && !busy && t >= next - lead &&
		    !fill_pending(tree)) { /* the pass could add regions while the fill reads the pool */
			precopy_all(s);
			precopied = 1;
			t = stopclock_now();
		}
		if (s->tree->enabled && !interrupting && (t >= next || budget_reply_waits(&budget, tree, t))) {
			if (!follow && children_any(s)) {
				/* no cut while a child lives (children.h): look again shortly */
				s->tree->stats.waited_for_children++;
				next = t + CHILD_POLL;
			} else if (busy) {
				/* the previous commit is still running: stop as soon as it ends */
				s->tree->stats.late += !late;
				late = 1;
			} else if (fill_copying(tree) && t - resumed_at < FILL_WAIT) {
				/* a cut now would finish a resume's fill in its stop (a GiB: half a second):
				 * the copiers finish it beside the running program first */
				if (!fill_wait_from)
					fill_wait_from = t;
				tree->stats.resume.fill_wait_s = t - fill_wait_from;
				next = t + FILL_LOOK;
			} else if (tree_unread_waits(tree, t)) {
				/* events the program has not read yet would be lost with the cut (tree.h) */
				s->tree->stats.cuts_put_off++;
				next = t + CHILD_POLL;
			} else if ((next = budget_cut_at(&budget, tree, t)) > t) {
				/* its cost is more than the budget has earned yet (budget.h) */
			} else {
				interrupting = 1;
				interrupt_sent = cut_started = t;
				late = 0;
				interrupt_all(tree, 0);
				continue; /* the stops may be pending already */
			}
		}
		if (interrupting && t - cut_started > VFORK_WAIT && vfork_pending(tree)) {
			/* a vforked child works long before it executes a program: let the others go on */
			s->tree->stats.waited_for_children++;
			interrupting = 0;
			resume_all(tree);
			next = t + CHILD_POLL;
		}
		if (interrupting && t - cut_started > CUT_GIVE_UP) {
			struct sup *m = NULL;
			struct thr *th = not_stopped(tree, &m);
			if (!tree->stats.cuts_given_up++)
				fprintf(stderr, "%s: a checkpoint was given up: thread %d of process %d did not stop within %.0f s; "
					"it is tried again an interval later\n", sup_command(), th ? (int)th->tid : 0,
					m ? (int)m->pid : 0, CUT_GIVE_UP);
			interrupting = 0;
			resume_all(tree);
			next = t + iv;
		}
		if (interrupting && t - interrupt_sent > 0.1) {
			/* a thread that has not stopped yet: ask again */
			interrupt_all(tree, 1);
			interrupt_sent = t;
		}
		if (t < look_until)
			continue; /* the next file call's stop is likely microseconds away */
		double wake = lead && !precopied && t < next - lead ? next - lead : next;
		wake = budget_look_by(&budget, t, wake); /* a reply held for a lengthened interval */
		int timeout = interrupting ? (int)(VFORK_WAIT * 1e3) + 1 : !s->tree->enabled ? -1 : busy && t >= next ? -1 : (int)((wake - t) * 1e3) + 1;
		struct pollfd pf[2] = { { sigfd, POLLIN, 0 }, { have_worker ? w.done_fd[0] : -1, POLLIN, 0 } };
		if (poll(pf, 2, timeout) < 0 && errno != EINTR)
			goto out_lost;
		struct signalfd_siginfo si;
		while (read(sigfd, &si, sizeof si) > 0)
			;
		char drain[64];
		while (have_worker && read(w.done_fd[0], drain, sizeof drain) > 0)
			;
	}
out_lost:
	st = -1;
out:
	budget_at_end(&budget, tree, stopclock_now());
	fill_end_all(tree, 0);
	if (have_worker) {
		/* the program finished while a view's commit runs (seconds for GiBs): it is given up,
		 * for nothing will resume from it -- the pool is marked finished (main.c) */
		if (st >= 0 && WIFEXITED(st) && tree->cut.viewed && worker_busy(&w))
			__atomic_store_n(&tree->cut.cancel, 1, __ATOMIC_RELEASE);
		char why[400] = "";
		int rc = worker_stop(&w, why, sizeof why);
		if (rc == -ECANCELED)
			tree->commit_cancelled = 1;
		else if (rc)
			sup_checkpoint_failed(s, rc, why);
	}
	tree_release(tree); /* what the program left running goes on, as it would natively */
	return st;
}

/* tree.c -- the program as a tree of processes (tree.h): one cut of all of them, one commit, the
 * end (tree_procs.c: the processes; pipes.c: their pipes' bytes in flight). */
#include "tree.h"
#include "drainer.h"
#include "fdkind.h"
#include "filetrack.h"
#include "ptys.h"
#include "socketpairs.h"
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <linux/userfaultfd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "children.h"
#include "pipes.h"
#include "disable.h"
#include "inject.h"
#include "sharedmem.h"
#include "snapshot.h"
#include "stage.h"
#include "stopclock.h"
#include "threads.h"
#include "tree_fds.h"
#include "tree_image.h"
#include "prosper/internal/uffd_abi.h"
#include "capture.h"
#include "ckpt_commit.h"
#include "why.h"

/* ------------------------------------------------------------------ the cut */

#define MAX_SEEN_PIPES 256

/* The commit of a cut runs on the commit thread while the loop goes on: it sees the processes
 * of its cut, copied here, never tree->procs, which a fork or a new thread's first stop changes
 * meanwhile (and may move when it grows). */
static int cut_members(struct tree *t)
{
	if (t->nprocs > t->cut.cap) {
		struct sup **c = realloc(t->cut.members, (size_t)t->procs_cap * sizeof *c);
		if (!c)
			return -ENOMEM;
		t->cut.members = c, t->cut.cap = t->procs_cap;
	}
	memcpy(t->cut.members, t->procs, (size_t)t->nprocs * sizeof *t->cut.members);
	t->cut.n = t->nprocs;
	return 0;
}

/* The id the program sees for process (group, session) `host` of ours: the one a resume gives
 * back.  0 when it is none of the program's processes (the namespace's init: 1). */
static int32_t own_id(const struct tree *t, pid_t host)
{
	if (host <= 0)
		return 0;
	if (t->run.ns.on && host == t->run.ns.init)
		return 1;
	for (int i = 0; i < t->nprocs; i++)
		if (t->procs[i]->pid == host)
			return t->procs[i]->own_pid ? t->procs[i]->own_pid : host;
	return 0;
}

/* The longest a due cut waits for the program to read what an fd holds that no record can keep
 * (fdkind.h `unread`: an inotify instance's queued events), from the first look that found it
 * (seconds).  A program told the fd is readable reads it within microseconds; one that leaves
 * events queued longer must not go without checkpoints, so past it the cut is taken and the
 * events are lost to a resume from it (counted and warned). */
#define UNREAD_WAIT 0.05

/* Does the wait (above) go on at `now`?  Starts it when bytes are queued. */
static int unread_waits(struct tree *t, long bytes, double now)
{
	if (bytes <= 0)
		return 0;
	if (!t->cut.unread_since)
		t->cut.unread_since = now;
	return now - t->cut.unread_since < UNREAD_WAIT;
}

int tree_unread_waits(struct tree *t, double now)
{
	long bytes = 0;
	for (int i = 0; i < t->cut.nunread_fds && bytes <= 0; i++) {
		char link[64];
		struct fd_info fi = { .fd = t->cut.unread_fds[i].fd };
		snprintf(link, sizeof link, "/proc/%d/fd/%d", (int)t->cut.unread_fds[i].pid, fi.fd);
		ssize_t n = readlink(link, fi.path, sizeof fi.path - 1);
		const char *kind;
		struct sup *m = NULL;
		for (int k = 0; k < t->nprocs && !m; k++)
			if (t->procs[k]->pid == t->cut.unread_fds[i].pid && !t->procs[k]->exited)
				m = t->procs[k];
		if (n > 0 && m)
			fi.path[n] = 0, bytes = fd_unread(m, &fi, &kind);
	}
	return unread_waits(t, bytes, now);
}

/* In the stop, before anything of the cut is taken: 0, or -EAGAIN while the cut waits (above;
 * looked at again shortly).  Notes the fds looked at for tree_unread_waits. */
static int unread_wait(struct tree *t)
{
	long bytes = 0;
	const char *kind = NULL;
	int first_fd = -1;
	pid_t first_pid = 0;
	t->cut.nunread_fds = 0;
	for (int i = 0; i < t->nprocs; i++) {
		int n;
		const struct fd_info *fds = t->procs[i]->exited ? NULL : tree_proc_fds(t->procs[i], &n);
		for (int k = 0; fds && k < n; k++) {
			const char *its;
			long b = fd_unread(t->procs[i], &fds[k], &its);
			if (b >= 0 && t->cut.nunread_fds < (int)(sizeof t->cut.unread_fds / sizeof t->cut.unread_fds[0]))
				t->cut.unread_fds[t->cut.nunread_fds].pid = t->procs[i]->pid,
				t->cut.unread_fds[t->cut.nunread_fds++].fd = fds[k].fd;
			if (b > 0 && first_fd < 0)
				first_fd = fds[k].fd, first_pid = t->procs[i]->pid, kind = its;
			bytes += b > 0 ? b : 0;
		}
	}
	if (!bytes)
		return t->cut.unread_since = 0, 0;
	double now = stopclock_now();
	if (unread_waits(t, bytes, now))
		return -EAGAIN;
	t->stats.unread_lost_bytes += (uint64_t)bytes;
	if (!t->warned.unread++)
		fprintf(stderr,
			"%s: fd %d of process %d (%s) holds %ld bytes of events the program has not read for %.0f ms: "
			"a checkpoint cannot keep them, and a resume from it will not see them (docs/limitations.md)\n",
			sup_command(), first_fd, (int)first_pid, kind, bytes, 1e3 * (now - t->cut.unread_since));
	t->cut.unread_since = 0;
	return 0;
}

/* tree_capture's steps; *clock is the start of the lap under way (stopclock.h). */
static int capture_cut(struct tree *t, double *clock, char *why, size_t whylen)
{
	t->cut.gen++; /* each process's fds are read once in this cut: by the first who asks */
	t->cut.viewed = 0;
	double *phase = t->stats.stop.phase_seconds;
	*clock = stopclock_now();
	int rc = tree_drop_gone(t);
	if (!rc)
		rc = cut_members(t);
	shm_begin(t);
	stopclock_lap(phase, STOP_TREE, clock);
	/* every process's fds, read once for this cut (the sockets below and each blob ask) */
	for (int i = 0; i < t->nprocs && !rc; i++) {
		int nfds;
		if (!t->procs[i]->exited)
			tree_read_fds(t->procs[i], &nfds); /* an error is kept for those who ask */
	}
	if (!rc)
		rc = unread_wait(t); /* before anything of the cut is taken: it may not be taken now */
	stopclock_lap(phase, STOP_FDS, clock);
	if (!rc)
		rc = socketpairs_scan(t); /* before the captures: their fds name the pairs kept */
	if (!rc)
		rc = ptys_scan(t); /* and the terminals */
	stopclock_lap(phase, STOP_TREE, clock);
	for (int i = 0; i < t->nprocs && !rc; i++)
		if ((t->procs[i]->cut.captured = !t->procs[i]->exited))
			rc = sup_capture(t->procs[i], why, whylen);
	*clock = stopclock_now(); /* the rest is STOP_TREE's */
	/* A process killed during its capture (SIGKILL ends a stopped tracee too) may have been read
	 * half gone: an empty map, no fds.  The kernel drops a dying process's memory before its
	 * files, so one that still has its memory now was read whole; one that does not fails the
	 * cut instead of committing it. */
	for (int i = 0; i < t->nprocs && !rc; i++)
		if (t->procs[i]->cut.captured && proc_gone(t->procs[i]->pid)) {
			snprintf(why, whylen, "process %d ended during the checkpoint", (int)t->procs[i]->pid);
			rc = -ESRCH;
		}
	if (!t->procs[0]->own_pid)
		t->procs[0]->own_pid = t->procs[0]->thr[0].own ? t->procs[0]->thr[0].own : t->procs[0]->pid;
	if (rc)
		return rc;
	static struct seen_pipe seen[MAX_SEEN_PIPES];
	int fifos = 0, np = pipes_own(t, seen, MAX_SEEN_PIPES, &fifos);
	/* one process and no bytes in flight: its own blob, as always */
	int full = 0;
	for (int i = 0; i < np && !full; i++) {
		char path[64];
		int n = 0;
		snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)seen[i].pid, seen[i].fd);
		int r = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		full = r >= 0 && ioctl(r, FIONREAD, &n) == 0 && n > 0;
		if (r >= 0)
			close(r);
	}
	int shared = shm_scan(t);
	t->cut.blob.len = 0;
	if (t->nprocs == 1 && !full && t->cut.nsocks == 0 && !shared && !fifos)
		return 0; /* a FIFO is made again before the restore: its open would wait for its peer */
	if ((rc = tree_begin(&t->cut.blob)) != 0)
		return rc;
	pid_t fg = proc_tty_pgrp(t->procs[0]->pid); /* the init's group is never the terminal's */
	tree_set_fg(&t->cut.blob, fg && !(t->run.ns.on && fg == t->run.ns.init) ? own_id(t, fg) : 0);
	for (int i = 0; i < t->nprocs && !rc; i++) {
		struct sup *m = t->procs[i];
		pid_t parent = 0;
		if (i > 0) {
			pid_t pp = proc_parent(m->pid);
			for (int j = 0; j < t->nprocs; j++)
				if (t->procs[j]->pid == pp)
					parent = t->procs[j]->own_pid;
		}
		struct tree_proc e = { .pid = m->own_pid, .parent = parent, .pgid = own_id(t, getpgid(m->pid)),
				       .sid = own_id(t, getsid(m->pid)) };
		if (!m->cut.captured) {
			e.exited = TREE_EXITED | ((uint32_t)m->exit_status & 0xffffu);
			t->stats.zombies_kept++;
		}
		rc = m->cut.captured ? tree_add_proc(&t->cut.blob, &e, m->cut.batch.blob.p, m->cut.batch.blob.len) : tree_add_proc(&t->cut.blob, &e, "", 0);
	}
	for (int i = 0; i < np && !rc; i++) {
		uint8_t *bytes;
		struct tree_pipe e = { .ino = seen[i].ino, .mode = seen[i].mode };
		rc = pipes_contents(&seen[i], &bytes, &e.bytes, &e.capacity);
		if (!rc)
			rc = tree_add_pipe(&t->cut.blob, &e, seen[i].path[0] ? seen[i].path : NULL, bytes);
		t->stats.pipe_bytes_in_flight += e.bytes;
		free(bytes);
	}
	for (int i = 0; i < t->cut.nsocks && !rc; i++) {
		uint8_t *bytes;
		struct tree_sock e = { .ino = t->cut.socks[i].ino, .peer = t->cut.socks[i].peer };
		if (t->cut.socks[i].listener) { /* its name, not bytes in flight */
			e.flags = TREE_SOCK_LISTENER | (t->cut.socks[i].name_gone ? TREE_SOCK_NAME_GONE : 0u);
			e.bytes = t->cut.socks[i].name_len;
			rc = tree_add_sock(&t->cut.blob, &e, t->cut.socks[i].name);
			continue;
		}
		uint32_t type = t->cut.socks[i].type == SOCK_DGRAM ? TREE_SOCK_DGRAM
				: t->cut.socks[i].type == SOCK_SEQPACKET ? TREE_SOCK_SEQPACKET : 0u;
		if (t->cut.socks[i].unconnected) { /* made again so, bound to its name if it has one */
			int named = t->cut.socks[i].name_len && !t->cut.socks[i].name_gone;
			e.flags = TREE_SOCK_UNCONNECTED | type;
			e.bytes = named ? t->cut.socks[i].name_len : 0;
			rc = tree_add_sock(&t->cut.blob, &e, t->cut.socks[i].name);
			continue;
		}
		if (type) { /* its messages, taken at the scan */
			e.flags = type;
			e.bytes = t->cut.socks[i].msgs_len;
			rc = tree_add_sock(&t->cut.blob, &e, t->cut.socks[i].msgs);
			t->stats.pipe_bytes_in_flight += e.bytes;
			continue;
		}
		rc = socketpairs_queued(t->cut.socks[i].pid, t->cut.socks[i].fd, &bytes, &e.bytes);
		if (!rc)
			rc = tree_add_sock(&t->cut.blob, &e, bytes);
		t->stats.pipe_bytes_in_flight += e.bytes;
		free(bytes);
	}
	if (!rc)
		rc = shm_capture(t, &t->cut.blob);
	if (!rc)
		tree_end(&t->cut.blob);
	return rc;
}

int tree_capture(struct tree *t, char *why, size_t whylen)
{
	double clock;
	int rc = capture_cut(t, &clock, why, whylen);
	if (!rc && (rc = filetrack_cut(t)) != 0) /* the journal of what follows this cut (filetrack.h) */
		WHY_SAY("the file-undo journal in %s cannot be written", t->files.dir);
	stopclock_lap(t->stats.stop.phase_seconds, STOP_TREE, &clock);
	for (int i = 0; i < t->nprocs && rc; i++)
		snapshot_drop(t->procs[i]); /* no commit follows to read and end the views */
	return rc;
}

/* ------------------------------------------------------------------ the commit */

int tree_commit(struct tree *t, char *why, size_t whylen)
{
	struct ckpt_stats each[t->cut.n], cs = { 0 };
	memset(each, 0, sizeof each);
	for (int i = 0; i < t->cut.n; i++) {
		/* a process that exits while its cut is committed is still in that cut */
		int rc = t->cut.members[i]->cut.captured ? sup_write_batch(t->cut.members[i], &each[i], why, whylen) : 0;
		if (rc)
			return rc;
	}
	struct sup *first = t->cut.members[0];
	if (first->cfg.commit_delay_us)
		usleep((useconds_t)first->cfg.commit_delay_us);
	if (__atomic_load_n(&t->cut.cancel, __ATOMIC_ACQUIRE)) {
		snprintf(why, whylen, "the program finished: its last checkpoint is not committed");
		return -ECANCELED;
	}
	const struct img_buf *blob = t->cut.blob.len ? &t->cut.blob : &first->cut.batch.blob;
	int rc = prosper_pool_commit(t->pool, blob->p, blob->len);
	if (rc)
		return rc;
	for (int i = 0; i < t->cut.n; i++) {
		if (t->cut.members[i]->cut.captured)
			sup_committed(t->cut.members[i], &each[i]);
		cs.stack += each[i].stack, cs.stack_pages += each[i].stack_pages, cs.stack_exact += each[i].stack_exact;
		cs.other += each[i].other, cs.other_pages += each[i].other_pages, cs.new_bytes += each[i].new_bytes;
	}
	struct sup_stats *st = &t->stats;
	if (!st->checkpoints)
		st->meta_first_bytes = st->meta.bytes;
	st->checkpoints++;
	st->trees += t->cut.n > 1;
	if ((uint64_t)t->cut.n > st->max_processes)
		st->max_processes = (uint64_t)t->cut.n;
	st->bytes.stack += cs.stack;
	st->bytes.stack_pages += cs.stack_pages;
	st->bytes.stack_exact += cs.stack_exact;
	st->bytes.other += cs.other;
	st->bytes.other_pages += cs.other_pages;
	st->bytes.new_bytes += cs.new_bytes;
	return 0;
}

/* The staging made ready beyond what a process's own checkpoints asked for is shared by the
 * tree: a build's dozen compilers get 64 MiB between them, not each. */
#define STAGING_AHEAD_FLOOR (64ull << 20)

void tree_stage_ahead(struct tree *t)
{
	uint64_t in_place = 0;
	for (int i = 0; i < t->cut.n; i++)
		if (t->cut.members[i]->cut.captured)
			in_place += stage_ahead(t->cut.members[i], STAGING_AHEAD_FLOOR / (uint64_t)t->cut.n);
	if (in_place > t->stats.stop.staging_bytes)
		t->stats.stop.staging_bytes = in_place;
}

int tree_verify(struct tree *t)
{
	for (int i = 0; i < t->nprocs; i++) {
		int rc = t->procs[i]->cut.captured && !t->procs[i]->exited ? sup_verify(t->procs[i]) : 0;
		if (rc)
			return rc;
	}
	return 0;
}

/* ------------------------------------------------------------------ the end */

/* The longest tree_release waits for one thread to stop, or a vforked child to execute a program:
 * past it the thread is left to PTRACE_O_EXITKILL (said), never waited for without end. */
#define RELEASE_WAIT_S 5.0

/* Wait for tid's next report, at most RELEASE_WAIT_S: its pid, 0 on timeout, -1 if it is gone. */
static pid_t wait_report(pid_t tid, int *st)
{
	for (double until = stopclock_now() + RELEASE_WAIT_S;;) {
		pid_t r = waitpid(tid, st, __WALL | WNOHANG);
		if (r != 0)
			return r == tid ? tid : -1;
		if (stopclock_now() > until)
			return 0;
		usleep(1000);
	}
}

/* Stop tid (a tracee) in a ptrace stop: the signal its stop holds for delivery (0: none), or -1
 * if it is gone or did not stop in time. */
static long held_in_stop(pid_t tid)
{
	int st;
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) != 0)
		return -1;
	pid_t r = wait_report(tid, &st);
	if (r == 0)
		fprintf(stderr, "%s: thread %d of the program did not stop within %.0f s at its end: it ends with us\n",
			sup_command(), (int)tid, RELEASE_WAIT_S);
	if (r != tid || !WIFSTOPPED(st))
		return -1;
	return (st >> 16) ? 0 : WSTOPSIG(st);
}

/* A vforked child's parent waits in the kernel until the child executes a program or exits, and
 * no interrupt stops it meanwhile; the child may sit in its first stop, waiting for us.  Holding
 * the parent first waited for ever (`sh -c '(sleep 1; ...) & exit 0'`: dash vforks).  So each
 * vforked child is let run first, its stops served (a filtered call runs unrecorded: the program
 * has ended), until it has executed a program -- then it is left in that stop, held -- or exited. */
static void finish_vforks(struct tree *t)
{
	for (int i = 1; i < t->nprocs; i++) {
		struct sup *m = t->procs[i];
		while (m->vforked && !m->exited) {
			int st;
			pid_t r = wait_report(m->pid, &st);
			if (r <= 0) {
				m->exited = r < 0; /* gone; or still running after RELEASE_WAIT_S: held like any other */
				break;
			}
			if (WIFEXITED(st) || WIFSIGNALED(st)) {
				m->exited = 1;
				break;
			}
			int event = st >> 16, sig = WSTOPSIG(st);
			if (event == PTRACE_EVENT_EXEC) {
				m->vforked = 0;
				m->nthr = 1, m->thr[0].tid = m->pid, m->thr[0].stopped = 1; /* held in this stop */
				break;
			}
			ptrace(PTRACE_CONT, m->pid, 0, (void *)(long)(event || sig == (SIGTRAP | 0x80) || sig == SIGSTOP ? 0 : sig));
		}
	}
}

void tree_release(struct tree *t)
{
	/* A thread is detached from a ptrace stop, whichever: ours (PTRACE_INTERRUPT) or one it met
	 * first -- the kernel lets any trap satisfy a pending interrupt, so a thread that stops for
	 * an exec or a signal after we asked would not stop again.  A signal it stopped to receive is
	 * delivered by the detach; a thread that exits meanwhile needs nothing.
	 *
	 * Order: every known thread is held in a stop first (none can fork then), and only then are
	 * the tasks we trace that the tree does not know yet looked for (a thread or process made just
	 * before the end, its first stop not read): they are let go too, or PTRACE_O_EXITKILL kills
	 * them with us.  With the file filter, all of them get SIGSTOP before their detach and go to
	 * the drainer (drainer.h). */
	int drain = t->files.on;
	finish_vforks(t);
	int nthreads = 0;
	for (int i = 1; i < t->nprocs; i++)
		nthreads += t->procs[i]->exited ? 0 : t->procs[i]->nthr;
	long sig[nthreads > 0 ? nthreads : 1];
	enum { MAX_STRAYS = 256 };
	pid_t left[t->nprocs + MAX_STRAYS];
	int nleft = 0, at = 0;
	for (int i = 1; i < t->nprocs; i++) {
		struct sup *m = t->procs[i];
		if (m->exited)
			continue;
		left[nleft++] = m->pid;
		if (drain)
			kill(m->pid, SIGSTOP); /* pending before the detach: no call runs until the drainer has it */
		for (int k = 0; k < m->nthr; k++, at++)
			sig[at] = m->thr[k].stopped ? 0 : held_in_stop(m->thr[k].tid);
	}
	pid_t stray[MAX_STRAYS], stray_tgid[MAX_STRAYS];
	int nstray = 0, ntraced = proc_traced_by(getpid(), stray, stray_tgid, MAX_STRAYS);
	for (int i = 0; i < ntraced && i < MAX_STRAYS; i++)
		if (!tree_find(t, stray[i], NULL))
			stray[nstray] = stray[i], stray_tgid[nstray++] = stray_tgid[i];
	for (int i = 0; i < nstray; i++) {
		int known = 0;
		for (int k = 0; k < nleft && !known; k++)
			known = left[k] == stray_tgid[i];
		if (!known) {
			left[nleft++] = stray_tgid[i];
			if (drain)
				kill(stray_tgid[i], SIGSTOP);
		}
	}
	/* they keep the file filter: a tracer of their own lets its calls through (drainer.h) */
	struct drainer d = { .go_fd = -1 };
	if (nleft && drain && drainer_start(&d, left, nleft) != 0)
		fprintf(stderr, "%s: %d process%s of the program still run%s after it ended, and no process could be left to "
			"follow them: the file changes they try fail with ENOSYS\n", sup_command(), nleft,
			nleft == 1 ? "" : "es", nleft == 1 ? "s" : "");
	at = 0;
	for (int i = 1; i < t->nprocs; i++) {
		struct sup *m = t->procs[i];
		for (int k = 0; k < m->nthr && !m->exited; k++, at++)
			if (sig[at] >= 0)
				ptrace(PTRACE_DETACH, m->thr[k].tid, 0, (void *)sig[at]);
	}
	for (int i = 0; i < nstray; i++) {
		long s = held_in_stop(stray[i]);
		if (s >= 0)
			ptrace(PTRACE_DETACH, stray[i], 0, (void *)s);
	}
	drainer_go(&d, left, nleft);
}

/* tree.c -- the program as a tree of processes (tree.h). */
#include "tree.h"
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
#include "disable.h"
#include "inject.h"
#include "sharedmem.h"
#include "stage.h"
#include "threads.h"
#include "tree_fds.h"
#include "tree_image.h"
#include "prosper/internal/uffd_abi.h"

static void proc_free(struct sup *s);

struct sup *tree_proc_new(struct tree *t, const struct sup_config *cfg)
{
	if (t->nprocs == t->procs_cap) {
		int cap = t->procs_cap ? 2 * t->procs_cap : 8;
		struct sup **p = realloc(t->procs, (size_t)cap * sizeof *p);
		if (!p)
			return NULL;
		t->procs = p, t->procs_cap = cap;
	}
	struct sup *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->tree = t;
	s->cfg = *cfg;
	s->vmas = calloc(MAX_VMAS, sizeof *s->vmas);
	s->now = calloc(MAX_VMAS, sizeof *s->now);
	s->prev = calloc(MAX_VMAS, sizeof *s->prev);
	s->new_image = 1;
	s->fds = calloc(MAX_FDS, sizeof *s->fds);
	s->files = calloc(MAX_FILES, sizeof *s->files);
	s->ranges = malloc(MAX_RANGES * sizeof *s->ranges);
	s->thr = calloc(MAX_THREADS, sizeof *s->thr);
	s->nvm_seg = SUP_SEG_SIZE;
	s->track.uffd = s->track.pagemap_fd = -1;
	if (!s->vmas || !s->now || !s->prev || !s->fds || !s->files || !s->ranges || !s->thr) {
		proc_free(s);
		return NULL;
	}
	t->procs[t->nprocs++] = s;
	return s;
}

static void proc_free(struct sup *s)
{
	prosper_track_close(&s->track);
	metalog_delete(&s->meta);
	free(s->vmas), free(s->now), free(s->prev), free(s->fds), free(s->files), free(s->ranges), free(s->thr);
	stage_free(&s->batch);
	free(s->batch.chunks), free(s->batch.blob.p), free(s->old);
	free(s->exec_mem.args_buf), free(s->exec_mem.env_buf), free(s->exec_mem.argv);
	if (s->exec_mem.envp)
		for (int i = s->exec_mem.own_from; s->exec_mem.envp[i]; i++)
			free(s->exec_mem.envp[i]);
	free(s->exec_mem.envp);
	free(s);
}

struct sup *tree_find(struct tree *t, pid_t tid, struct thr **thr)
{
	for (int i = 0; i < t->nprocs; i++) {
		struct thr *th = threads_find(t->procs[i], tid);
		if (th) {
			if (thr)
				*thr = th;
			return t->procs[i];
		}
	}
	return NULL;
}

/* The child runs the image its parent runs: the same launch record, copied (the parent may exec
 * later and free its own). */
static int copy_record(struct sup *m, const struct sup *p)
{
	size_t alen = 0;
	for (int i = 0; i < p->argc; i++)
		alen += strlen(p->argv[i]) + 1;
	char *args = malloc(alen + 1);
	char **argv = calloc((size_t)p->argc + 1, sizeof *argv);
	char **envp = calloc((size_t)p->envc + 1, sizeof *envp);
	if (!args || !argv || !envp) {
		free(args), free(argv), free(envp);
		return -1;
	}
	size_t at = 0;
	for (int i = 0; i < p->argc; i++) {
		argv[i] = args + at;
		at += (size_t)sprintf(args + at, "%s", p->argv[i]) + 1;
	}
	for (int i = 0; i < p->envc; i++)
		if (!(envp[i] = strdup(p->envp[i]))) {
			while (i--)
				free(envp[i]);
			free(args), free(argv), free(envp);
			return -1;
		}
	m->exec_mem = (struct exec_mem){ .args_buf = args, .argv = argv, .envp = envp, .own_from = 0 };
	m->argv = argv, m->argc = p->argc, m->envp = envp, m->envc = p->envc;
	snprintf(m->exe, sizeof m->exe, "%s", p->exe);
	snprintf(m->launch_cwd, sizeof m->launch_cwd, "%s", p->launch_cwd);
	return 0;
}

/* The last record of the tree, made by tree_proc_new and not filled: out again. */
static void drop_last(struct tree *t)
{
	proc_free(t->procs[--t->nprocs]);
}

struct sup *tree_add_child(struct tree *t, struct sup *parent, pid_t child)
{
	for (int i = 0; i < t->nprocs; i++)
		if (t->procs[i]->pid == child)
			return t->procs[i];
	char why[120];
	/* its id in the program's own pid namespace names its regions: no id, no record (a record of
	 * a task we cannot see would hold every later cut waiting for it to stop) */
	pid_t own = pidns_own_id(child);
	if (!own) {
		snprintf(why, sizeof why, "cannot follow the program's child process %d: %s", (int)child,
			 task_exists(child) ? "its /proc entry cannot be read" : "it is gone");
		sup_disable(parent, why);
		return NULL;
	}
	struct sup *m = tree_proc_new(t, &parent->cfg);
	if (!m) {
		sup_disable(parent, "out of memory for the program's child process");
		return NULL;
	}
	char name[40];
	snprintf(name, sizeof name, "%s.%d", META_REGION_NAME, (int)own);
	if (copy_record(m, parent) != 0 || !(m->meta = metalog_new_named(name))) {
		drop_last(t);
		sup_disable(parent, "out of memory for the program's child process");
		return NULL;
	}
	m->pid = child;
	m->thr[0].tid = child;
	m->nthr = 1;
	m->own_pid = own;
	snprintf(m->region_prefix, sizeof m->region_prefix, "p%d.", (int)m->own_pid);
	/* the same image: the shim's records, holding what the parent's hold, and glibc's layout */
	sup_take_hello(m, &parent->hello);
	m->pending_written = parent->pending_written;
	m->limits_written = parent->limits_written, m->limits_seen = parent->limits_seen;
	m->tid_offset = parent->tid_offset;
	memcpy(m->warned_fds, parent->warned_fds, sizeof m->warned_fds); /* its fds are its parent's */
	m->start_brk = parent->start_brk;
	m->untracked = 1;
	/* vfork and posix_spawn: the child runs in its parent's memory until it execs */
	m->vforked = syscall(SYS_kcmp, parent->pid, child, KCMP_VM, 0, 0) == 0;
	return m;
}

int tree_start_child(struct sup *m, char *why, size_t whylen)
{
	if (m->vforked || !m->untracked)
		return 0;
	struct inject in;
	if (inject_open(&in, m->pid, m->gate) != 0) {
		snprintf(why, whylen, "cannot control the child process %d", (int)m->pid);
		return -1;
	}
	long fd = inject_syscall(&in, SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK, 0, 0, 0, 0, 0);
	int uffd = -1;
	if (fd >= 0) {
		int pidfd = (int)syscall(SYS_pidfd_open, m->pid, 0);
		if (pidfd >= 0) {
			uffd = (int)syscall(SYS_pidfd_getfd, pidfd, (int)fd, 0);
			close(pidfd);
		}
		inject_syscall(&in, SYS_close, fd, 0, 0, 0, 0, 0);
	}
	ptrace(PTRACE_SETREGS, m->pid, 0, &in.base); /* it goes on where it was */
	inject_close(&in);
	if (uffd < 0) {
		snprintf(why, whylen, "cannot give the child process %d a userfaultfd", (int)m->pid);
		return -1;
	}
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED };
	if (ioctl(uffd, UFFDIO_API, &api) != 0 || sup_start_tracking(m, uffd) != 0) {
		snprintf(why, whylen, "cannot track the child process %d: %s", (int)m->pid,
			 m->track.err[0] ? m->track.err : strerror(errno));
		return -1;
	}
	m->untracked = 0;
	return 0;
}

int tree_cut_ready(struct tree *t, const char **why)
{
	for (int i = 0; i < t->nprocs; i++) {
		struct sup *m = t->procs[i];
		if (m->exited)
			continue; /* waited for: it leaves the tree with this cut; or a zombie: its status is kept */
		if (m->vforked) {
			*why = "a child process runs in its parent's memory (vfork) until it executes a program";
			return 0;
		}
		if (m->untracked) {
			*why = "a child process is not tracked yet";
			return 0;
		}
	}
	if (t->nprocs > 1 && t->procs[0]->nnvm > 0) {
		*why = "the program holds NVM memory and has child processes";
		return 0;
	}
	return 1;
}

int tree_drop_gone(struct tree *t)
{
	for (int i = 1; i < t->nprocs; i++) {
		struct sup *m = t->procs[i];
		if (!m->exited)
			continue;
		if (!m->memory_dropped) { /* its memory is gone: a zombie is kept by its status alone */
			for (int v = 0; v < m->nvmas; v++)
				if (prosper_pool_region_remove(t->pool, (uint32_t)m->vmas[v].region) != 0)
					return -EIO;
			m->nvmas = 0;
			char name[48];
			snprintf(name, sizeof name, "%s.%d", META_REGION_NAME, (int)m->own_pid);
			struct prosper_region_info info;
			int at = prosper_pool_region_find(t->pool, name);
			if (at >= 0 && prosper_pool_region_get(t->pool, at, &info) == 0 &&
			    prosper_pool_region_remove(t->pool, info.id) != 0)
				return -EIO;
			m->memory_dropped = 1;
		}
		if (task_exists(m->pid))
			continue; /* a zombie its parent has not waited for */
		proc_free(m);
		memmove(&t->procs[i], &t->procs[i + 1], (size_t)(t->nprocs - i - 1) * sizeof *t->procs);
		t->nprocs--, i--;
	}
	return 0;
}

/* ------------------------------------------------------------------ pipes in flight */

/* A pipe of the program's own (not one it inherited at launch), or a named pipe (FIFO) it has
 * open, seen at the cut: where to reach it. */
struct seen_pipe {
	uint64_t ino;
	pid_t pid;
	int fd;
	uint32_t mode;           /* a FIFO's permission bits */
	char path[VMA_PATH_MAX]; /* a FIFO's name; "" for an anonymous pipe */
};

/* The program's own pipes and its FIFOs, each once, with a process and fd that holds it. */
static int own_pipes(struct tree *t, struct seen_pipe *out, int max, int *fifos)
{
	int n = 0;
	*fifos = 0;
	for (int i = 0; i < t->nprocs; i++) {
		struct sup *m = t->procs[i];
		int nf;
		const struct fd_info *fds = tree_proc_fds(m, &nf);
		for (int j = 0; fds && j < nf; j++) {
			const struct fd_info *fi = &fds[j];
			unsigned long long ino;
			int fifo = fi->type == IMG_FD_FIFO;
			if (fifo)
				ino = fi->ino;
			else if (sscanf(fi->path, "pipe:[%llu]", &ino) != 1 || !children_pipe_is_own(m, fi->path))
				continue;
			int k = 0;
			while (k < n && !(out[k].ino == ino && !out[k].path[0] == !fifo))
				k++;
			if (k < n || n == max)
				continue;
			out[n] = (struct seen_pipe){ .ino = ino, .pid = m->pid, .fd = fi->fd };
			if (fifo) {
				struct stat st;
				char p[64];
				snprintf(p, sizeof p, "/proc/%d/fd/%d", (int)m->pid, fi->fd);
				out[n].mode = stat(p, &st) == 0 ? (uint32_t)(st.st_mode & 07777) : 0600;
				snprintf(out[n].path, sizeof out[n].path, "%s", fi->path);
				(*fifos)++;
			}
			n++;
		}
	}
	return n;
}

/* Read the bytes in flight out of the pipe and put them back (the program is stopped: nothing
 * else reads or writes it meanwhile).  *len bytes into *buf (malloc'd), *cap its capacity. */
static int pipe_contents(const struct seen_pipe *p, uint8_t **buf, uint32_t *len, uint32_t *cap)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)p->pid, p->fd);
	*buf = NULL, *len = 0, *cap = 0;
	int r = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (r < 0)
		return -errno;
	int n = 0, rc = 0;
	long size = fcntl(r, F_GETPIPE_SZ);
	if (ioctl(r, FIONREAD, &n) != 0 || size <= 0) {
		close(r);
		return -EIO;
	}
	*cap = (uint32_t)size;
	if (n > 0) {
		int w = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
		*buf = malloc((size_t)n);
		if (w < 0 || !*buf || read(r, *buf, (size_t)n) != n || write(w, *buf, (size_t)n) != n)
			rc = -EIO; /* a pipe we emptied and could not fill again: the program's data is lost */
		if (w >= 0)
			close(w);
		*len = (uint32_t)n;
	}
	close(r);
	return rc;
}

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
	if (t->ns.on && host == t->ns.init)
		return 1;
	for (int i = 0; i < t->nprocs; i++)
		if (t->procs[i]->pid == host)
			return t->procs[i]->own_pid ? t->procs[i]->own_pid : host;
	return 0;
}

/* tree_capture's steps; *clock is the start of the lap under way (stopclock.h). */
static int capture_cut(struct tree *t, double *clock)
{
	t->cut.err[0] = 0;
	t->cut.gen++; /* each process's fds are read once in this cut: by the first who asks */
	double *phase = t->stats.stop_phase_seconds;
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
	stopclock_lap(phase, STOP_FDS, clock);
	if (!rc)
		rc = socketpairs_scan(t); /* before the captures: their fds name the pairs kept */
	stopclock_lap(phase, STOP_TREE, clock);
	for (int i = 0; i < t->nprocs && !rc; i++)
		if ((t->procs[i]->captured = !t->procs[i]->exited))
			rc = sup_capture(t->procs[i]);
	*clock = stopclock_now(); /* the rest is STOP_TREE's */
	/* A process killed during its capture (SIGKILL ends a stopped tracee too) may have been read
	 * half gone: an empty map, no fds.  The kernel drops a dying process's memory before its
	 * files, so one that still has its memory now was read whole; one that does not fails the
	 * cut instead of committing it. */
	for (int i = 0; i < t->nprocs && !rc; i++)
		if (t->procs[i]->captured && proc_gone(t->procs[i]->pid)) {
			snprintf(t->cut.err, sizeof t->cut.err, "process %d ended during the checkpoint", (int)t->procs[i]->pid);
			rc = -ESRCH;
		}
	if (!t->procs[0]->own_pid)
		t->procs[0]->own_pid = t->procs[0]->thr[0].own ? t->procs[0]->thr[0].own : t->procs[0]->pid;
	if (rc)
		return rc;
	static struct seen_pipe seen[MAX_SEEN_PIPES];
	int fifos = 0, np = own_pipes(t, seen, MAX_SEEN_PIPES, &fifos);
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
	tree_set_fg(&t->cut.blob, fg && !(t->ns.on && fg == t->ns.init) ? own_id(t, fg) : 0);
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
		if (!m->captured) {
			e.exited = TREE_EXITED | ((uint32_t)m->exit_status & 0xffffu);
			t->stats.zombies_kept++;
		}
		rc = m->captured ? tree_add_proc(&t->cut.blob, &e, m->batch.blob.p, m->batch.blob.len) : tree_add_proc(&t->cut.blob, &e, "", 0);
	}
	for (int i = 0; i < np && !rc; i++) {
		uint8_t *bytes;
		struct tree_pipe e = { .ino = seen[i].ino, .mode = seen[i].mode };
		rc = pipe_contents(&seen[i], &bytes, &e.bytes, &e.capacity);
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

int tree_capture(struct tree *t)
{
	double clock;
	int rc = capture_cut(t, &clock);
	stopclock_lap(t->stats.stop_phase_seconds, STOP_TREE, &clock);
	return rc;
}

/* ------------------------------------------------------------------ the commit */

int tree_commit(struct tree *t)
{
	struct ckpt_stats each[t->cut.n], cs = { 0 };
	memset(each, 0, sizeof each);
	for (int i = 0; i < t->cut.n; i++) {
		/* a process that exits while its cut is committed is still in that cut */
		int rc = t->cut.members[i]->captured ? sup_write_batch(t->cut.members[i], &each[i]) : 0;
		if (rc)
			return rc;
	}
	struct sup *first = t->cut.members[0];
	if (first->cfg.commit_delay_us)
		usleep((useconds_t)first->cfg.commit_delay_us);
	const struct img_buf *blob = t->cut.blob.len ? &t->cut.blob : &first->batch.blob;
	int rc = prosper_pool_commit(t->pool, blob->p, blob->len);
	if (rc)
		return rc;
	for (int i = 0; i < t->cut.n; i++) {
		if (t->cut.members[i]->captured)
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
		if (t->cut.members[i]->captured)
			in_place += stage_ahead(t->cut.members[i], STAGING_AHEAD_FLOOR / (uint64_t)t->cut.n);
	if (in_place > t->stats.staging_bytes)
		t->stats.staging_bytes = in_place;
}

int tree_verify(struct tree *t)
{
	for (int i = 0; i < t->nprocs; i++) {
		int rc = t->procs[i]->captured && !t->procs[i]->exited ? sup_verify(t->procs[i]) : 0;
		if (rc)
			return rc;
	}
	return 0;
}

/* ------------------------------------------------------------------ the end */

void tree_release(struct tree *t)
{
	/* A thread is detached from a ptrace stop, whichever: ours (PTRACE_INTERRUPT) or one it met
	 * first -- the kernel lets any trap satisfy a pending interrupt, so a thread that stops for
	 * an exec or a signal after we asked would not stop again.  A signal it stopped to receive is
	 * delivered by the detach; a thread that exits meanwhile needs nothing. */
	for (int i = 1; i < t->nprocs; i++) {
		struct sup *m = t->procs[i];
		for (int k = 0; k < m->nthr && !m->exited; k++) {
			pid_t tid = m->thr[k].tid;
			long sig = 0;
			if (!m->thr[k].stopped) {
				if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) != 0)
					continue; /* gone */
				int st;
				if (waitpid(tid, &st, __WALL) != tid || !WIFSTOPPED(st))
					continue; /* it exited */
				sig = (st >> 16) ? 0 : WSTOPSIG(st);
			}
			ptrace(PTRACE_DETACH, tid, 0, (void *)sig);
		}
	}
}

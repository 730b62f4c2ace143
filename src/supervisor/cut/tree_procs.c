/* tree_procs.c -- the program's processes (tree.h): one added at each fork, started (tracked
 * like the first), found by a thread's id, dropped once gone and waited for. */
#include "tree.h"
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
#include "ckpt_commit.h"
#include "hello.h"


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
	s->cut.now = calloc(MAX_VMAS, sizeof *s->cut.now);
	s->prev = calloc(MAX_VMAS, sizeof *s->prev);
	s->new_image = 1;
	s->cut.fds = calloc(MAX_FDS, sizeof *s->cut.fds);
	s->files = calloc(MAX_FILES, sizeof *s->files);
	s->cut.ranges = malloc(MAX_RANGES * sizeof *s->cut.ranges);
	s->thr = calloc(MAX_THREADS, sizeof *s->thr);
	s->nvm_seg = SUP_SEG_SIZE;
	s->track.uffd = s->track.pagemap_fd = -1;
	if (!s->vmas || !s->cut.now || !s->prev || !s->cut.fds || !s->files || !s->cut.ranges || !s->thr) {
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
	free(s->vmas), free(s->cut.now), free(s->prev), free(s->cut.fds), free(s->files), free(s->cut.ranges), free(s->thr);
	stage_free(&s->cut.batch);
	free(s->cut.batch.chunks), free(s->cut.batch.blob.p), free(s->cut.old);
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
	m->tid_offset = parent->tid_offset, m->tid_offset_settled = parent->tid_offset_settled;
	memcpy(m->warned_fds, parent->warned_fds, sizeof m->warned_fds); /* its fds are its parent's */
	m->start_brk = parent->start_brk;
	m->untracked = 1;
	m->stdio_tight = parent->stdio_tight; /* filters are inherited */
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
	/* tracking only (a child is never filled): one of user mode only does as well (uffd_abi.h) */
	long flags = O_CLOEXEC | O_NONBLOCK;
	long fd = inject_syscall(&in, SYS_userfaultfd, flags, 0, 0, 0, 0, 0);
	if (fd < 0 && (flags = prosper_uffd_retry_flags((int)flags, (int)-fd)) >= 0)
		fd = inject_syscall(&in, SYS_userfaultfd, flags, 0, 0, 0, 0, 0);
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
	struct uffdio_api api = { .api = UFFD_API, .features = PROSPER_UFFD_TRACK_FEATURES };
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

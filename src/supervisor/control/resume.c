/* resume.c -- `prosper resume`: admission, relaunch, restore.
 *
 * Invariants
 *   - Admission before anything is touched: every refusal that needs no child (a missing, busy,
 *     corrupt or finished pool, no checkpoint, a changed executable or library, gone or shorter
 *     files, another kernel or CPU) is decided before the program is relaunched.  Those that
 *     read none of the program's files (the kernel, the CPU, a port taken, an fd of a kind not
 *     kept) are decided before its files are put back as they were at the checkpoint, so that
 *     such a refusal changes nothing; those about files, after (they judge the checkpoint's).
 *   - The program is relaunched exactly as it was run (the pool's launch record: executable,
 *     argv, environment with the shim, cwd), so the loader lays it out as before (restore.c).
 *   - A relaunched program that cannot be rebuilt is killed: it never runs from a wrong state.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include "fileundo.h"
#include "filetrack.h"
#include "disable.h"
#include "fillcopy.h"
#include "lockowners.h"
#include "poolfile.h"
#include "run.h"
#include "settings.h"
#include "threads.h"
#include "tree.h"
#include "tree_image.h"
#include "stopclock.h"
#include "resume.h"
#include "ckpt_commit.h"
#include "restore.h"

/* A checkpoint of several processes (tree_image.h): every process's image decoded. */
static int decode_tree(struct sup *s, const char *pool_path, const void *blob, size_t blen, struct img *im)
{
	struct tree *t = s->tree;
	const char *why;
	void *copy = malloc(blen); /* aligned, and kept: the images point into it */
	t->resume.view = calloc(1, sizeof *t->resume.view);
	if (!copy || !t->resume.view)
		return refuse(REFUSE_SETUP, "%s", "out of memory");
	memcpy(copy, blob, blen);
	if (tree_decode(copy, blen, t->resume.view, &why) != 0)
		return refuse(REFUSE_POOL_CORRUPT, "%s: %s", pool_path, why);
	t->resume.imgs = calloc(t->resume.view->nprocs, sizeof *t->resume.imgs);
	if (!t->resume.imgs)
		return refuse(REFUSE_SETUP, "%s", "out of memory");
	for (uint32_t i = 0; i < t->resume.view->nprocs; i++) {
		if (t->resume.view->procs[i]->exited)
			continue; /* a zombie: its status alone (tree_restore.c) */
		const void *b = t->resume.view->blobs[i];
		size_t len = t->resume.view->procs[i]->blob_len;
		void *rebuilt = NULL;
		if (metalog_is_stub(b, len) && metalog_load(t->pool, b, len, &rebuilt, &len, &why) != 0)
			return refuse(REFUSE_POOL_CORRUPT, "%s: process %d: %s", pool_path, (int)t->resume.view->procs[i]->pid, why);
		if (rebuilt)
			b = rebuilt;
		else if (((uintptr_t)b & 7) || !(rebuilt = malloc(len)))
			return refuse(REFUSE_POOL_CORRUPT, "%s: process %d: misaligned image", pool_path, (int)t->resume.view->procs[i]->pid);
		else
			b = memcpy(rebuilt, b, len);
		if (img_decode(b, len, &t->resume.imgs[i], &why) != 0)
			return refuse(REFUSE_POOL_CORRUPT, "%s: process %d: %s", pool_path, (int)t->resume.view->procs[i]->pid, why);
	}
	if (t->resume.view->nprocs > 1 && !t->run.ns.on)
		return refuse(REFUSE_RESTORE, "the checkpoint holds %u processes, whose ids only a pid namespace of their own gives back (%s)",
			      t->resume.view->nprocs, t->run.ns.why);
	*im = t->resume.imgs[0];
	return 0;
}

/* Every image of the checkpoint checked (restore_check.c): with the files not undone yet, only
 * what reads none of them; after, everything. */
static int check_images(struct sup *s, const struct img *im, int files_undone)
{
	const struct tree *t = s->tree;
	char reason[600];
	if (!t->resume.view) {
		enum refusal r = files_undone ? sup_restore_check(im, NULL, 0, reason, sizeof reason)
					      : sup_restore_check_no_files(im, NULL, reason, sizeof reason);
		return r ? refuse(r, "%s", reason) : 0;
	}
	for (uint32_t i = 0; i < t->resume.view->nprocs; i++) {
		if (t->resume.view->procs[i]->exited)
			continue;
		const struct img *pi = &t->resume.imgs[i];
		enum refusal r = files_undone
					 ? sup_restore_check(pi, t->resume.view, t->resume.view->procs[i]->pid, reason, sizeof reason)
					 : sup_restore_check_no_files(pi, t->resume.view, reason, sizeof reason);
		if (r)
			return refuse(r, "%s", reason);
	}
	return 0;
}

int resume_admit(struct sup *s, const char *pool_path, struct img *im)
{
	struct stat st;
	if (stat(pool_path, &st) != 0)
		return refuse(REFUSE_POOL_MISSING, "%s: %s", pool_path, strerror(errno));
	if (poolfile_lock(pool_path) < 0)
		return refuse(REFUSE_POOL_BUSY, "%s is in use by a running prosper (or unreadable)", pool_path);
	if (prosper_pool_open(pool_path, &s->tree->pool) != 0)
		return refuse(REFUSE_POOL_CORRUPT, "%s: %s", pool_path, prosper_pool_errormsg());
	/* the run's checkpoint options (settings.h): --durable-every decides the tiers, so it is read
	 * from this pool first; the newest epoch's record is read again below */
	const char *why;
	if (settings_load(s->tree->pool, &s->cfg, s->cfg.given, &why) < 0)
		return refuse(REFUSE_POOL_CORRUPT, "%s: %s", pool_path, why);
	/* the newest state may be in the fast pool of two tiers (tiers.h) */
	char why_tier[300] = "";
	struct prosper_pool_config cfg;
	prosper_pool_config_default(&cfg);
	cfg.capacity = prosper_pool_capacity(s->tree->pool);
	prosper_pool_geometry(s->tree->pool, &cfg.seg_size, &cfg.block_size);
	cfg.max_regions = 4096;
	cfg.blob_bytes = SUP_BLOB_BYTES;
	if (tiers_choose(&s->tree->tiers, pool_path, s->cfg.durable_every_s, why_tier, sizeof why_tier) != 0 ||
	    tiers_start_resume(&s->tree->tiers, &s->tree->pool, &cfg, why_tier, sizeof why_tier) != 0)
		return refuse(REFUSE_POOL_CORRUPT, "%s: %s", pool_path, why_tier);
	size_t blen = 0;
	const void *blob = prosper_pool_blob(s->tree->pool, &blen);
	int code;
	if (poolfile_finished(blob, blen, &code))
		return refuse_finished(code, "%s: the program finished (exit code %d): nothing to resume", pool_path, code);
	if (prosper_pool_epoch(s->tree->pool) == 0)
		return refuse(REFUSE_NO_CHECKPOINT,
			      "%s: no checkpoint was committed (the program ran less than one interval, or could not be checkpointed)",
			      pool_path);
	if (settings_load(s->tree->pool, &s->cfg, s->cfg.given | GIVEN_DURABLE, &why) < 0)
		return refuse(REFUSE_POOL_CORRUPT, "%s: %s", pool_path, why);
	void *rebuilt = NULL; /* a log-mode epoch: its blob rebuilt from the metadata region, kept */
	if (metalog_is_stub(blob, blen) && metalog_load(s->tree->pool, blob, blen, &rebuilt, &blen, &why) != 0)
		return refuse(REFUSE_POOL_CORRUPT, "%s: %s", pool_path, why);
	if (rebuilt)
		blob = rebuilt;
	if (tree_is_blob(blob, blen)) {
		int rc = decode_tree(s, pool_path, blob, blen, im);
		if (rc)
			return rc;
	} else if (img_decode(blob, blen, im, &why) != 0) {
		return refuse(REFUSE_POOL_CORRUPT, "%s: %s", pool_path, why);
	}
	/* What refuses without reading the program's files (the kernel, the CPU, sockets, timers...)
	 * before they are touched: a refused resume leaves them as they are. */
	int rc = check_images(s, im, 0);
	if (rc)
		return rc;
	/* the files as they were at the checkpoint, or a refusal that touched nothing (fileundo.h) */
	char why_files[600];
	enum refusal no = fileundo_resume(s->tree, pool_path, why_files, sizeof why_files);
	if (no)
		return refuse(no, "%s", why_files);
	/* the files the checkpoint names, as they are now that they are the checkpoint's */
	return check_images(s, im, 1);
}

/* The launch filter of the relaunched program: writes to fd 1 or 2 let through only when that
 * holds in every process of the checkpoint (filefilter.h). */
static int resume_filter(const struct sup *s, const struct img *im)
{
	const struct tree *t = s->tree;
	if (!t->resume.view)
		return filetrack_filter(t, im);
	int f = filetrack_filter(t, NULL);
	for (uint32_t i = 0; i < t->resume.view->nprocs; i++)
		if (!t->resume.view->procs[i]->exited)
			f &= filetrack_filter(t, &t->resume.imgs[i]) | FILTER_ON;
	return f;
}

int resume_start(struct sup *s, const struct img *im, struct child *c)
{
	/* the options this resume checkpoints with, for the next resume (committed with the next
	 * checkpoint; nothing reaches the pool if this one fails) */
	if (settings_save(s->tree->pool, &s->cfg) != 0)
		return refuse(REFUSE_POOL_CORRUPT, "%s", prosper_pool_errormsg());
	if (s->tree->resume.view)
		for (uint32_t i = 0; i < s->tree->resume.view->nprocs; i++)
			filetrack_mapped_image(s->tree, &s->tree->resume.imgs[i]);
	else
		filetrack_mapped_image(s->tree, im);
	if (s->tree->resume.view)
		metalog_attach_stub(s->meta, s->tree->pool, s->tree->resume.view->blobs[0], s->tree->resume.view->procs[0]->blob_len);
	else
		metalog_attach(s->meta, s->tree->pool);
	const char *exe = img_s(im, im->h->exe_str);
	snprintf(s->exe, sizeof s->exe, "%s", exe);
	snprintf(s->launch_cwd, sizeof s->launch_cwd, "%s", img_s(im, im->h->launch_cwd_str));
	/* argv and environment from the launch record: copies, because the blob lives in the pool's
	 * metadata, which later commits reuse */
	char **args = calloc(im->h->argc + 1u, sizeof *args);
	char **env = calloc(im->h->envc + 1u, sizeof *env);
	if (!args || !env)
		return refuse(REFUSE_SETUP, "%s", "out of memory");
	const char *p = img_s(im, im->h->args_str);
	for (uint32_t i = 0; i < im->h->argc + im->h->envc; i++, p += strlen(p) + 1) {
		if (i < im->h->argc)
			args[i] = strdup(p);
		else
			env[i - im->h->argc] = strdup(p);
	}
	s->argv = args;
	s->argc = (int)im->h->argc;
	s->envp = env;
	s->envc = (int)im->h->envc;
	s->tid_offset = im->h->tid_offset;
	/* the program's process id back, when it has its own namespace (restore.c does the threads) */
	if (s->tree->run.ns.on && im->h->own_pid > 1)
		pidns_next(&s->tree->run.ns, im->h->own_pid);
	s->tree->files.launch_filter = resume_filter(s, im); /* its processes forked later inherit it */
	int rc = launch(c, &s->tree->run.channel, &s->tree->run.ns, exe, args, env, s->envc, s->launch_cwd, 1, 0,
			s->tree->files.launch_filter);
	if (rc != 0)
		return refuse(REFUSE_LAUNCH, "cannot relaunch %s: %s", exe, strerror(-rc));
	return 0;
}

/* The relaunched program did not reach the restorer: why, once it is gone. */
static int not_in_restorer(struct sup *s, int hello_rc, const struct shim_hello *hello)
{
	/* the child may be dying already (its socket closes before its exit is reported) */
	int st = 0;
	struct timespec pause = { 0, 20 * 1000 * 1000 };
	nanosleep(&pause, NULL);
	kill(s->pid, SIGKILL);
	while (waitpid(s->pid, &st, __WALL) == s->pid && WIFSTOPPED(st))
		;
	if (hello_rc == -ENOSYS)
		return refuse(REFUSE_NO_USERFAULTFD, "%s", "userfaultfd is not available (vm.unprivileged_userfaultfd?)");
	if (WIFEXITED(st) || (WIFSIGNALED(st) && WTERMSIG(st) != SIGKILL))
		return refuse(REFUSE_RESTORE, "the relaunched program ended before the restorer (%s %d)",
			      WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	return refuse(REFUSE_RESTORE, "the relaunched program did not reach the restorer (%s)",
		      hello_rc == -EPROTO ? "no asynchronous write-protection"
		      : hello_rc	   ? strerror(-hello_rc)
					   : "not in resume mode");
}

/* The restore wrote each thread's new id into glibc's TCB (and the kernel did, for recreated
 * threads) before tracking was on, so those writes are not marked: the pool still holds the old
 * ids.  Write the same values again now, through /proc/PID/mem, so the next checkpoint saves
 * them (the oracle compares them too).  0 or -1. */
static int retouch_tids(struct sup *s, const struct img *im)
{
	if (!im->h->tid_offset)
		return 0;
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/mem", (int)s->pid);
	int fd = open(p, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = 0;
	for (uint32_t i = 0; i <= im->h->nthreads && !rc; i++) {
		uint64_t fs = i == 0 ? im->h->regs.fs_base : im->threads[i - 1].regs.fs_base;
		uint32_t tid;
		off_t at = (off_t)(fs + im->h->tid_offset);
		if (pread(fd, &tid, sizeof tid, at) != (ssize_t)sizeof tid ||
		    pwrite(fd, &tid, sizeof tid, at) != (ssize_t)sizeof tid)
			rc = -1;
	}
	close(fd);
	return rc;
}

/* Did every thread get its checkpoint's id back?  If not, say so once, with why. */
static void note_changed_ids(struct sup *s, const struct img *im)
{
	pid_t was = im->h->own_pid ? (pid_t)im->h->own_pid : s->resume.old_main_tid;
	uint64_t changed = was && was != s->thr[0].own;
	for (int i = 1; i < s->nthr && i <= (int)im->h->nthreads; i++)
		changed += im->threads[i - 1].tid != s->thr[i].own;
	s->tree->stats.resume.ids_changed = changed;
	if (changed)
		fprintf(stderr, "%s: the program's process and thread ids changed (%s); docs/limitations.md says what that means\n",
			sup_command(), s->tree->run.ns.on ? "not free in its namespace" : s->tree->run.ns.why);
}

/* The locks a thread held at the checkpoint that name their owner: given to its new id. */
static int retag_lock_owners(struct sup *s, const struct img *im)
{
	int n = 1 + (int)im->h->nthreads;
	pid_t *old = calloc((size_t)n, sizeof *old), *now = calloc((size_t)n, sizeof *now);
	uint64_t *heads = calloc((size_t)n, sizeof *heads);
	int rc = -1;
	if (old && now && heads && s->nthr == n) {
		/* the main thread's head is where the relaunched glibc registered it (same TCB address) */
		void *head = NULL;
		size_t len = 0;
		if (syscall(SYS_get_robust_list, s->pid, &head, &len) == 0)
			heads[0] = (uint64_t)(uintptr_t)head;
		/* ids as the program sees them: in its own namespace, mostly the same ones again */
		old[0] = s->resume.old_main_tid, now[0] = s->thr[0].own ? s->thr[0].own : s->pid;
		for (int i = 1; i < n; i++)
			old[i] = im->threads[i - 1].tid, now[i] = s->thr[i].own ? s->thr[i].own : s->thr[i].tid,
			heads[i] = im->threads[i - 1].robust_head;
		int k = lock_owners_retag(s->pid, im, heads, old, now, n);
		if (k >= 0) {
			s->tree->stats.resume.lock_owners_retagged += (uint64_t)k;
			rc = 0;
		}
	}
	free(old), free(now), free(heads);
	return rc;
}

/* Rebuild one stopped, relaunched process of the program from its checkpoint im, and track it.
 * Its threads stay stopped.  0, or -1 with a one-line why. */
static int restore_one(struct sup *s, const struct img *im, const struct shim_hello *hello, int uffd, char *why,
		       size_t whylen)
{
	if (sup_restore(s, im, hello, uffd, why, whylen) != 0)
		return -1;
	/* saved mappings of the checkpoint are tracked from here on */
	if (sup_start_tracking(s, uffd) != 0) {
		snprintf(why, whylen, "%s", s->track.err);
		return -1;
	}
	for (uint32_t i = 0; i < im->h->nvmas; i++) {
		const struct img_vma *v = &im->vmas[i];
		if (v->region == IMG_NONE)
			continue;
		struct vma *sv = &s->vmas[s->nvmas++];
		*sv = (struct vma){ .start = v->start, .end = v->end, .offset = v->offset, .region = (int)v->region };
		memcpy(sv->perms, v->perms, sizeof sv->perms);
		snprintf(sv->path, sizeof sv->path, "%s", img_s(im, v->path) ? img_s(im, v->path) : "");
		if (fillcopy_pending(s->resume.fill, v->start))
			continue; /* registered by the fill already, for write-protect too (fillcopy.h) */
		if (prosper_track_add(&s->track, v->start, v->end) != 0) {
			snprintf(why, whylen, "%s", s->track.err);
			return -1;
		}
	}
	if (retouch_tids(s, im) != 0 || retag_lock_owners(s, im) != 0) {
		snprintf(why, whylen, "cannot give the new thread ids to glibc and the locks they hold: %s", strerror(errno));
		return -1;
	}
	note_changed_ids(s, im);
	return 0;
}

/* Every process of the resumed program is killed: none may run from a half-rebuilt state. */
static void kill_all(struct tree *t)
{
	for (int i = t->nprocs - 1; i >= 0; i--)
		kill(t->procs[i]->pid, SIGKILL);
	int st;
	for (pid_t w = 0; w != t->procs[0]->pid && w >= 0;) /* the threads a restore made are reaped first */
		w = waitpid(-1, &st, __WALL);
	for (int i = 0; i < t->nprocs; i++) /* its copies now fail: the threads end */
		sup_fill_end(t->procs[i], 0);
}

void sup_fill_end(struct sup *m, int stopped)
{
	if (m->resume.fill)
		fillcopy_end(m->resume.fill, stopped ? m->pid : 0);
	m->resume.fill = NULL;
}

void sup_fill_complete(struct sup *m)
{
	char why[200];
	if (!m->resume.fill || fillcopy_complete(m->resume.fill, why, sizeof why) == 0 || proc_gone(m->pid))
		return; /* a copy into a process that was killed meanwhile fails: nothing lost */
	struct tree *t = m->tree;
	char reason[300];
	snprintf(reason, sizeof reason, "%s; the program was killed", why);
	sup_disable(m, reason);
	t->memory_lost = 1;
	for (int i = t->nprocs - 1; i >= 0; i--)
		kill(t->procs[i]->pid, SIGKILL);
}

int resume_started(struct sup *s, const struct img *im, int hello_rc, const struct shim_hello *hello, int uffd,
		   double t_start)
{
	if (hello_rc != 0 || !hello->resume)
		return not_in_restorer(s, hello_rc, hello);
	int st;
	while (waitpid(s->pid, &st, __WALL) == s->pid && WIFSTOPPED(st) && WSTOPSIG(st) != SIGSTOP)
		ptrace(PTRACE_CONT, s->pid, 0, (void *)(long)WSTOPSIG(st));
	char reason[600];
	if (!WIFSTOPPED(st)) {
		kill_all(s->tree);
		return refuse(REFUSE_RESTORE, "%s", "the relaunched program ended before the restore");
	}
	/* a tree: its other processes forked again from their parents, each stopped in its shim */
	if (s->tree->resume.view && tree_relaunch(s, reason, sizeof reason) != 0) {
		kill_all(s->tree);
		return refuse(REFUSE_RESTORE, "%s", reason);
	}
	if (restore_one(s, im, hello, uffd, reason, sizeof reason) != 0) {
		kill_all(s->tree);
		return refuse(REFUSE_RESTORE, "%s", reason);
	}
	for (int i = 1; i < s->tree->nprocs; i++) {
		struct sup *m = s->tree->procs[i];
		if (m->exited)
			continue; /* made a zombie again already (tree_restore.c) */
		if (restore_one(m, m->resume.img, &m->resume.hello, m->resume.uffd, reason, sizeof reason) != 0) {
			kill_all(s->tree);
			return refuse(REFUSE_RESTORE, "process %d: %s", (int)m->own_pid, reason);
		}
	}
	s->tree->stats.resume.restore_seconds = stopclock_now() - t_start;
	s->tree->stats.resume.resume_command_seconds = stopclock_now() - s->tree->run.started;
	for (int i = 0; i < s->tree->nprocs; i++) { /* all at once: the main threads and every thread the restores made */
		struct sup *m = s->tree->procs[i];
		if (m->exited)
			continue;
		m->thr[0].stopped = 1;
		if (!m->resume.fill) {
			threads_resume_all(m);
			continue;
		}
		/* its memory is still being filled: it stops at its first system call, where the loop
		 * ends the fill before the call runs (fillcopy.h) */
		s->tree->stats.resume.restore_lazy = 1;
		threads_resume_all_as(m, PTRACE_SYSCALL);
		fillcopy_go(m->resume.fill);
	}
	return 0;
}

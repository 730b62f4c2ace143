/* run.c -- `prosper run`: the pool created, the program launched.
 *
 * Invariants
 *   - Never destroy what we did not make: a file at the pool path that is not a usable pool is
 *     refused, a pool that holds a checkpoint is replaced only with --fresh, a pool in use by
 *     another prosper is refused.  A pool whose program finished (or never committed) holds
 *     nothing to lose and is replaced.
 *   - The pool is created and locked before the program starts, so its first checkpoint has
 *     somewhere to go.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "filetrack.h"
#include "disable.h"
#include "poolfile.h"
#include "run.h"
#include "settings.h"
#include "ckpt_commit.h"

/* The pool's segments: most mappings are small, keep their slots small. */
static int create_pool(struct sup *s, const struct opts *o, const char *pool_path)
{
	struct tiers *t = &s->tree->tiers;
	char why[300] = "";
	if (tiers_choose(t, pool_path, o->cfg.durable_every_s, why, sizeof why) != 0)
		return refuse(REFUSE_POOL_CREATE, "%s", why);
	struct stat st;
	if (lstat(pool_path, &st) == 0) {
		char fast[4096];
		switch (poolfile_state(pool_path, why, sizeof why, fast, sizeof fast)) {
		case POOL_BUSY:
			return refuse(REFUSE_POOL_BUSY, "%s is in use by a running prosper", pool_path);
		case POOL_FOREIGN:
			return refuse(REFUSE_NOT_A_POOL,
				      "%s exists and is not a usable pool (%s): refusing to overwrite it, choose another --pool",
				      pool_path, why);
		case POOL_RESUMABLE:
			if (!o->fresh)
				return refuse(REFUSE_HAS_CHECKPOINT,
					      "%s already holds a checkpoint: `prosper resume --pool %s` continues it, "
					      "--fresh discards it", pool_path, pool_path);
			break;
		case POOL_FINISHED:
			break;
		}
		if (unlink(pool_path) != 0)
			return refuse(REFUSE_POOL_CREATE, "cannot remove %s: %s", pool_path, strerror(errno));
		if (*fast)
			unlink(fast);
	}
	struct prosper_pool_config cfg;
	prosper_pool_config_default(&cfg);
	cfg.capacity = o->capacity_mib << 20;
	cfg.seg_size = SUP_SEG_SIZE;
	cfg.max_regions = 4096;
	cfg.blob_bytes = SUP_BLOB_BYTES;
	/* a copy may hold a region it replaces and its successor at once: room for both (sparse) */
	struct prosper_pool_config durable = cfg;
	if (t->kind == TIER_TWO)
		durable.capacity *= 2;
	if (prosper_pool_create(pool_path, &durable, &s->tree->pool) != 0)
		return refuse(REFUSE_POOL_CREATE, "%s: %s", pool_path, prosper_pool_errormsg());
	if (poolfile_lock(pool_path) < 0)
		return refuse(REFUSE_POOL_BUSY, "%s is in use by a running prosper", pool_path);
	if (tiers_start_run(t, &s->tree->pool, &cfg, why, sizeof why) != 0)
		return refuse(REFUSE_POOL_CREATE, "%s", why);
	/* committed with the first checkpoint: a resume goes on with these options (settings.h) */
	if (settings_save(s->tree->pool, &s->cfg) != 0)
		return refuse(REFUSE_POOL_CREATE, "%s: %s", pool_path, prosper_pool_errormsg());
	return 0;
}

extern char **environ;

int run_start(struct sup *s, const struct opts *o, const char *pool_path, struct child *c)
{
	int rc = create_pool(s, o, pool_path);
	if (rc)
		return rc;
	int envc = 0;
	char **env = launch_environment(environ, s->tree->run.shim, &envc);
	if (!env)
		return refuse(REFUSE_SETUP, "%s", "cannot build the program's environment");
	if (!getcwd(s->launch_cwd, sizeof s->launch_cwd))
		return refuse(REFUSE_SETUP, "%s", "cannot read the working directory");
	s->argv = o->prog;
	s->argc = o->nprog;
	s->envp = env;
	s->envc = envc;
	char why[300];
	if (filetrack_start(s->tree, pool_path, 0, filetrack_wanted(s->tree), why, sizeof why) != 0)
		return refuse(REFUSE_POOL_CREATE, "%s", why);
	s->tree->files.launch_filter = filetrack_filter(s->tree, NULL);
	if ((rc = launch(c, &s->tree->run.channel, &s->tree->run.ns, o->prog[0], o->prog, env, envc, NULL, 0, 1,
			 s->tree->files.launch_filter)) != 0)
		return refuse(REFUSE_LAUNCH, "cannot start %s: %s", o->prog[0],
			      rc == -EPERM ? "ptrace is not permitted here" : strerror(-rc));
	return 0;
}

void run_exec_done(struct sup *s)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/exe", (int)s->pid);
	ssize_t l = readlink(p, s->exe, sizeof s->exe - 1);
	if (l > 0)
		s->exe[l] = 0;
}

/* Has the program already exited -- a zombie not yet reaped, or on its way out, its memory gone
 * (a live process always has some: /proc/PID/statm counts none only after exit_mm)?  Then a
 * tracker that could not be opened says nothing worth a warning: there is nothing left to
 * checkpoint.  (/bin/true is that far before the tracker opens, every time.) */
static int already_exited(pid_t pid)
{
	siginfo_t si = { 0 };
	if (waitid(P_PID, pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid)
		return 1;
	return proc_gone(pid);
}

void run_started(struct sup *s, int hello_rc, int uffd, const char *why)
{
	char msg[VMA_PATH_MAX + 200];
	if (hello_rc == -ENOEXEC || hello_rc == -EIO) {
		snprintf(msg, sizeof msg, "%s cannot be checkpointed (%s)", s->exe, why);
		sup_disable(s, msg);
	} else if (hello_rc == -ESRCH) {
		s->tree->enabled = 0;
		snprintf(s->tree->disabled_reason, sizeof s->tree->disabled_reason, "%s",
			 "the program ended before its first checkpoint");
	} else if (hello_rc != 0)
		sup_disable(s, hello_rc == -ENOSYS ? "userfaultfd is not available (vm.unprivileged_userfaultfd?)"
						   : "the shim did not report");
	else if (sup_start_tracking(s, uffd) != 0) {
		if (already_exited(s->pid)) {
			s->tree->enabled = 0;
			snprintf(s->tree->disabled_reason, sizeof s->tree->disabled_reason, "%s",
				 "the program ended before its first checkpoint");
		} else {
			sup_disable(s, s->track.err);
		}
	}
}

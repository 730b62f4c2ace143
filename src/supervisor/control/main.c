/* main.c -- prosper-supervise: `prosper run` and `prosper resume` (docs/run-resume.md).
 *
 *   prosper-supervise run    [OPTIONS] [--pool PATH] [--fresh] -- PROGRAM [ARGS...]
 *   prosper-supervise resume [OPTIONS] [--pool PATH]
 *
 * The program is launched with ADDR_NO_RANDOMIZE, rseq off and the shim preloaded, seized with
 * ptrace, and stopped every interval for one checkpoint (loop.c, capture.c).  `resume` relaunches
 * it the same way from the pool's launch record, rebuilds it (resume.c, restore.c) and goes on
 * checkpointing into the same pool.  This file only puts the rooms in order; sup.h has the map.
 *
 * Invariants
 *   - Exit codes: the program's (128 + signal if it was killed); 1 if we lost it; 2 for refused
 *     input, with one line (and with --json one JSON object) on stderr (refusal.h).
 *   - If we die, the program dies with us (PTRACE_O_EXITKILL): it never runs unsupervised.
 *   - A program that exits normally has its pool marked finished (poolfile.h).
 */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
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
#include "poolfile.h"
#include "run.h"
#include "stats.h"
#include "tree.h"
#include "stopclock.h"
#include "exec.h"
#include "hello.h"
#include "loop.h"
#include "undolog.h"
#include "outhold.h"
#include "budget.h"
#include "preflight.h"
#include "userns.h"
#include "shimless.h"

static struct sup *sup_new(const struct sup_config *cfg)
{
	struct tree *tree = calloc(1, sizeof *tree);
	if (!tree)
		return NULL;
	tree->enabled = 1;
	struct sup *s = tree_proc_new(tree, cfg);
	if (!s || !(s->meta = metalog_new()))
		return NULL;
	return s;
}

/* A run whose program could not have ids of its own (pidns.h) is refused: a resume could not give
 * them back, nor see its file changes. */
static int refuse_no_own_ids(const char *why)
{
	return refuse(REFUSE_NO_PID_NAMESPACE, "the program cannot have process ids of its own (%s); --host-pids runs it "
		      "with the system's ids, and a resume then refuses unless --trust-files", why);
}

int main(int argc, char **argv)
{
	/* Each process of the program has tables of a few MiB (sup.h: MAX_VMAS...) of which it uses
	 * a few KiB.  A fixed threshold keeps them mmap'd -- zero pages the kernel gives on first
	 * touch -- instead of glibc's adaptive one, which after the first free serves them from the
	 * heap and clears them whole: ~10 MiB memset per fork or exec of the program. */
	mallopt(M_MMAP_THRESHOLD, 128 << 10);
	double t_command = stopclock_now();
	struct timespec began;
	clock_gettime(CLOCK_REALTIME, &began); /* a resume's: what the shim's bind() compares with */
	struct opts o;
	int rc = options_parse(argc, argv, &o);
	if (rc)
		return rc;
	char pool_path[PATH_MAX];
	if (o.pool)
		snprintf(pool_path, sizeof pool_path, "%s", o.pool);
	else if ((rc = options_default_pool(&o, pool_path, sizeof pool_path)))
		return rc;

	/* what the system must allow, tried before anything starts (preflight.h) */
	char refused[600];
	enum refusal no = !o.cfg.resume && o.nprog ? preflight_program(o.prog[0], refused, sizeof refused) : 0;
	if (!no)
		no = preflight_tracing(refused, sizeof refused);
	if (no)
		return refuse(no, "%s", refused);
	/* an ordinary user's namespaces, before anything is made: from here on we are the supervisor
	 * process inside them, the user's process waits for us (userns.h) */
	char no_userns[200] = "";
	if (!o.cfg.host_pids && userns_needed() && (rc = userns_enter(no_userns, sizeof no_userns)) != 0 &&
	    (rc == USERNS_BROKEN || !o.cfg.resume))
		return refuse_no_own_ids(no_userns);

	/* ptrace stops arrive as SIGCHLD, read from a signalfd by the loop */
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	int sigfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sigfd < 0)
		return refuse(REFUSE_SETUP, "signalfd: %m");
	struct sup *s = sup_new(&o.cfg);
	if (!s)
		return refuse(REFUSE_SETUP, "%s", "out of memory");
	if (launch_shim_path(s->tree->run.shim, sizeof s->tree->run.shim) != 0)
		return refuse(REFUSE_NOT_BUILT, "%s", "the shim libprosper-shim.so is not built (make build)");
	/* output held until committed (outhold.h): a stdout or stderr pipe is one of ours from here on */
	s->tree->files.external_sync = o.cfg.external_sync && !o.cfg.host_pids;
	if (outhold_interpose(s->tree) != 0)
		return refuse(REFUSE_SETUP, "cannot put a pipe of ours before stdout/stderr: %m");
	children_note_inherited_pipes(s);
	if ((rc = hello_channel_open(&s->tree->run.channel)) != 0)
		return refuse(REFUSE_SETUP, "cannot open the shim's socket: %s", strerror(-rc));
	if (o.cfg.host_pids)
		snprintf(s->tree->run.ns.why, sizeof s->tree->run.ns.why, "%s", "--host-pids");
	else if (no_userns[0])
		snprintf(s->tree->run.ns.why, sizeof s->tree->run.ns.why, "%s", no_userns);
	else if (pidns_enter(&s->tree->run.ns) != 0 && !o.cfg.resume)
		return refuse_no_own_ids(s->tree->run.ns.why);

	struct img im;
	struct child c;
	if (o.cfg.resume) {
		if ((rc = resume_admit(s, pool_path, &im)) || (rc = resume_start(s, &im, &c))) {
			tiers_refused(&s->tree->tiers, &s->tree->pool); /* a refusal leaves no fast pool of ours */
			return rc;
		}
	} else if ((rc = run_start(s, &o, pool_path, &c))) {
		return rc;
	}
	/* output held from here on; a resume shows first what the killed run held and had not shown --
	 * only now that nothing can refuse it (a refusal shows nothing) */
	char why_out[300];
	if (s->tree->files.on && outhold_start(s->tree, s->tree->files.dir, o.cfg.resume ? s->tree->files.seq : 0, why_out,
					       sizeof why_out) != 0)
		return refuse(REFUSE_SETUP, "%s", why_out);
	const char *work_path = s->tree->tiers.kind == TIER_TWO ? s->tree->tiers.fast_path : pool_path;
	if (!realpath(work_path, s->tree->pool_path))
		snprintf(s->tree->pool_path, sizeof s->tree->pool_path, "%s", work_path);
	char where[9000];
	tiers_describe(&s->tree->tiers, pool_path, s->cfg.interval_ms, where, sizeof where);
	if (budget_percent(&s->cfg) > 0)
		fprintf(stderr, "%s: %s, longer when they cost more than %g%% of the program's time\n", sup_command(), where,
			budget_percent(&s->cfg));
	else
		fprintf(stderr, "%s: %s\n", sup_command(), where);
	s->tree->run.started = t_command;
	s->tree->run.began_ns = (int64_t)began.tv_sec * 1000000000 + began.tv_nsec;
	s->pid = c.pid;
	s->thr[0].tid = c.pid;
	s->nthr = 1;
	double t_start = stopclock_now();
	int status = 0;
	int ended = launch_wait_exec(c.pid, &status);
	if (ended < 0)
		return refuse(REFUSE_LAUNCH, "%s", "lost the program before it started");
	if (ended) {
		pidns_release(&s->tree->run.ns);
		tiers_finish(&s->tree->tiers, &s->tree->pool);
		return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	}
	if (!o.cfg.resume)
		run_exec_done(s);
	struct shim_hello hello = { 0 };
	int uffd = -1;
	char why[200] = "";
	int hello_rc = 0;
	if (!o.cfg.resume && image_kind(c.pid, why, sizeof why) == IMAGE_SHIMLESS &&
	    sup_give_user_environment(c.pid, why, sizeof why) != 0) {
		ptrace(PTRACE_CONT, c.pid, 0, 0);
		hello_rc = -EIO;
	} else {
		hello_rc = image_hello(&s->tree->run.channel, c.pid, o.cfg.resume, &hello, &uffd, why, sizeof why);
	}
	if (hello_rc == 0 || hello_rc == -ENOSYS || hello_rc == -EPROTO)
		sup_take_hello(s, &hello);
	if (o.cfg.resume) {
		if ((rc = resume_started(s, &im, hello_rc, &hello, uffd, t_start)))
			return rc;
	} else {
		run_started(s, hello_rc, uffd, why);
	}

	int st = sup_supervise(s, sigfd);
	outhold_finish(s->tree); /* the program ended: all it wrote is shown */
	if (st >= 0)
		pidns_release(&s->tree->run.ns); /* what the program left running goes on, as it would natively */
	int code = st < 0 ? 1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	if (s->tree->memory_lost)
		code = 2; /* the reason is printed (sup_fill_finish) */
	int finished = st >= 0 && WIFEXITED(st);
	if (s->tree->commit_cancelled) {
		/* the commit given up at the end (loop.c) left its writes uncommitted in this handle; the
		 * pool on its media is at its last committed epoch, as after a crash in that commit */
		prosper_pool_abandon(&s->tree->pool);
		if (prosper_pool_open(s->tree->pool_path, &s->tree->pool) != 0) {
			fprintf(stderr, "%s: cannot open %s again after the program finished: %s\n", sup_command(),
				s->tree->pool_path, prosper_pool_errormsg());
			return 1;
		}
	}
	if (finished && prosper_pool_epoch(s->tree->pool) > 0 && poolfile_mark_finished(s->tree->pool, code) != 0) {
		fprintf(stderr, "%s: could not mark the pool finished: %s\n", sup_command(), prosper_pool_errormsg());
		finished = 0;
	}
	tiers_after_commit(&s->tree->tiers, s->tree->pool, 1); /* the last state made durable (T3), counted */
	if (finished) {
		/* nothing left to resume: nothing to undo -- once the durable pool says so too */
		s->tree->tiers.before_copy = NULL;
		outhold_remove_all(s->tree->files.dir);
		undolog_remove_all(s->tree->files.dir);
	}
	/* the budget lengthened the interval: said, with what it cost (budget.h) */
	const struct budget_stats *bu = &s->tree->stats.budget;
	if (bu->chosen_max_s > s->cfg.interval_ms / 1e3 && bu->intervals)
		fprintf(stderr, "%s: checkpoints every %g to %.0f ms (mean %.0f ms) to keep their cost within %g%% of the "
			"program's time; measured %.1f%%\n", sup_command(), s->cfg.interval_ms, 1e3 * bu->interval_max_s,
			1e3 * bu->interval_sum_s / (double)bu->intervals, bu->percent, budget_measured_pct(bu));
	else if (bu->percent > 0 && bu->postponed && !bu->intervals && bu->until > bu->since)
		fprintf(stderr, "%s: one checkpoint in %.1f s: the next would have cost more than %g%% of the program's "
			"time; measured %.1f%%\n", sup_command(), bu->until - bu->since, bu->percent, budget_measured_pct(bu));
	if (s->cfg.stats_path && stats_write(s, s->cfg.stats_path) != 0)
		fprintf(stderr, "%s: cannot write %s: %m\n", sup_command(), s->cfg.stats_path);
	prosper_track_close(&s->track);
	tiers_finish(&s->tree->tiers, &s->tree->pool);
	return code;
}

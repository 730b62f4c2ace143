/* main.c -- prosper-supervise: `prosper run` and `prosper resume` (DESIGN D3).
 *
 *   prosper-supervise run    [OPTIONS] [--pool PATH] [--fresh] -- PROGRAM [ARGS...]
 *   prosper-supervise resume [OPTIONS] [--pool PATH]
 *   OPTIONS: --interval MS  --stack-tracker page|diff|full  --heap-tracker page|diff|full
 *            --stack-granularity G  --heap-granularity G  --capacity MIB  --verify
 *            --stats-json PATH  --metadata log|rewrite
 *
 * The program is launched with ADDR_NO_RANDOMIZE, rseq off and the shim preloaded, seized with
 * ptrace, and stopped every interval for one checkpoint (capture.c).  `resume` relaunches it the
 * same way from the pool's launch record, rebuilds it (restore.c) and goes on checkpointing into
 * the same pool.  The program's exit code is ours; stdio is passed through.
 *
 * Invariants
 *   - The child is never left stopped: every stop we cause ends in PTRACE_CONT/LISTEN, also on
 *     error paths; a checkpoint error stops checkpointing, never the program.
 *   - One pool, one supervisor: the pool file is locked (flock) for as long as we run.
 *   - A program that exits normally has its pool marked finished (an epoch whose record says so):
 *     resuming it would replay its end.  Killed or crashed, the last checkpoint stays resumable.
 *   - If we die, the program dies with us (PTRACE_O_EXITKILL): it never runs unsupervised.
 *   - Exit codes: the program's; 2 for refused input (usage, pool, changed binary, ...).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/personality.h>
#include <pthread.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "../shim/shim_proto.h"
#include "sup.h"

extern char **environ;

#define DONE_MAGIC 0x454E4F4450535250ull /* "PRSPDONE": the program finished */
struct done_record {
	uint64_t magic;
	int32_t exit_code;
	uint32_t pad;
};

static const char *cmd = "prosper run";

static int die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", cmd);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return 2;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void disable(struct sup *s, const char *why)
{
	if (!s->enabled)
		return;
	s->enabled = 0;
	s->disabled_reason = why;
	fprintf(stderr, "%s: %s; checkpointing stopped, the last checkpoint (epoch %llu) is kept\n", cmd, why,
		(unsigned long long)(s->pool ? prosper_pool_epoch(s->pool) : 0));
}

/* ------------------------------------------------------------------ options */

struct opts {
	int resume, fresh, verify, exact;
	const char *pool, *stats;
	double interval_ms;
	uint64_t capacity_mib;
	int stack_mode, heap_mode, meta_mode;
	long stack_gran, heap_gran;
	char **prog;
	int nprog;
};

static const char usage[] =
	"usage: prosper run [OPTIONS] [--pool PATH] [--fresh] -- PROGRAM [ARGS...]\n"
	"       prosper resume [OPTIONS] [--pool PATH]\n"
	"\n"
	"run: start PROGRAM and checkpoint it every interval into a pool (default ./PROGRAM.prosper).\n"
	"After kill -9 or a crash, resume relaunches it from the last checkpoint (the only *.prosper in\n"
	"this directory if --pool is not given) and keeps checkpointing into the same pool.  The stack is\n"
	"saved Prosper's way (from SP-128 up, 8-byte granules, two-step redo commit); other memory with\n"
	"libcrpm's protocol.  Exit code: the program's; 2 for refused input, with a one-line reason.\n"
	"Threads are persisted; a fork or exec stops checkpointing (the program runs on).\n"
	"\n"
	"  --pool PATH              the pool file; on /dev/shm commits are fastest (survives process\n"
	"                           death, not power loss)\n"
	"  --fresh                  (run) discard a checkpoint the pool holds; a file that is not a pool\n"
	"                           is never overwritten\n"
	"  --interval MS            checkpoint interval (default 10)\n"
	"  --stack-tracker T        page|diff|full for the stack (default diff)\n"
	"  --heap-tracker T         page|diff|full for other memory (default diff)\n"
	"  --stack-granularity G    diff granule of the stack, 8..4096 (default 8)\n"
	"  --heap-granularity G     diff granule of other memory, 8..4096 (default 256)\n"
	"  --capacity MIB           pool data capacity (default 8192; the file is sparse)\n"
	"  --verify                 commit while stopped and compare the pool with live memory (oracle)\n"
	"  --stats-json PATH        write statistics as JSON at the end (stdout is the program's)\n"
	"  --exact-stack-stats      also count the stack's changed 8-byte words (costs a compare)\n"
	"  --metadata M             log: registers, map and fds kept as a redo log of their changes\n"
	"                           (default, Kindle's way); rewrite: written whole every checkpoint\n"
	"See docs/run-resume.md.\n";

static int tracker_mode(const char *s)
{
	return !strcmp(s, "page") ? TRACK_MODE_PAGE : !strcmp(s, "diff") ? TRACK_MODE_DIFF
	       : !strcmp(s, "full")                 ? TRACK_MODE_FULL
						    : 0;
}

static int parse(int argc, char **argv, struct opts *o)
{
	*o = (struct opts){ .interval_ms = 10, .capacity_mib = 8192, .stack_mode = TRACK_MODE_DIFF,
			    .heap_mode = TRACK_MODE_DIFF, .stack_gran = 8, .heap_gran = 256, .meta_mode = META_LOG };
	if (argc < 2 || (strcmp(argv[1], "run") && strcmp(argv[1], "resume")))
		return die("%s", "the first argument is `run` or `resume`");
	o->resume = !strcmp(argv[1], "resume");
	cmd = o->resume ? "prosper resume" : "prosper run";
	int i;
	for (i = 2; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--")) {
			i++;
			break;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage, stdout);
			exit(0);
		} else if (!strcmp(a, "--fresh")) o->fresh = 1;
		else if (!strcmp(a, "--verify")) o->verify = 1;
		else if (!strcmp(a, "--exact-stack-stats")) o->exact = 1;
		else if (!v) return die("%s needs a value (see --help)", a);
		else if (!strcmp(a, "--pool")) o->pool = v, i++;
		else if (!strcmp(a, "--stats-json")) o->stats = v, i++;
		else if (!strcmp(a, "--interval")) o->interval_ms = atof(v), i++;
		else if (!strcmp(a, "--capacity")) o->capacity_mib = strtoull(v, NULL, 10), i++;
		else if (!strcmp(a, "--stack-granularity")) o->stack_gran = atol(v), i++;
		else if (!strcmp(a, "--heap-granularity")) o->heap_gran = atol(v), i++;
		else if (!strcmp(a, "--stack-tracker")) {
			if (!(o->stack_mode = tracker_mode(v)))
				return die("--stack-tracker is page, diff or full");
			i++;
		} else if (!strcmp(a, "--metadata")) {
			if (!(o->meta_mode = !strcmp(v, "log") ? META_LOG : !strcmp(v, "rewrite") ? META_REWRITE : 0))
				return die("--metadata is log or rewrite");
			i++;
		} else if (!strcmp(a, "--heap-tracker")) {
			if (!(o->heap_mode = tracker_mode(v)))
				return die("--heap-tracker is page, diff or full");
			i++;
		} else
			return die("unknown option %s (see --help)", a);
	}
	o->prog = argv + i;
	o->nprog = argc - i;
	if (!o->resume && o->nprog < 1)
		return die("%s", "no program given: prosper run [OPTIONS] -- PROGRAM [ARGS...]");
	if (o->resume && o->nprog > 0)
		return die("%s", "resume takes no program: it relaunches the one in the pool");
	if (o->interval_ms < 0.1 || o->interval_ms > 3600e3)
		return die("%s", "--interval is 0.1 ms .. 1 h");
	for (int k = 0; k < 2; k++) {
		long g = k ? o->heap_gran : o->stack_gran;
		if (g < 8 || g > 4096 || (g & (g - 1)))
			return die("%s", "granularities are powers of two from 8 to 4096");
	}
	if (o->capacity_mib < 16 || o->capacity_mib > (1u << 20))
		return die("%s", "--capacity is 16 MiB .. 1 TiB");
	return 0;
}

/* The pool when --pool is not given: run: ./<program>.prosper; resume: the only *.prosper here. */
static int default_pool(struct opts *o, char *out, size_t cap)
{
	if (!o->resume) {
		const char *b = strrchr(o->prog[0], '/');
		snprintf(out, cap, "%s.prosper", b ? b + 1 : o->prog[0]);
		return 0;
	}
	DIR *d = opendir(".");
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l > 8 && !strcmp(e->d_name + l - 8, ".prosper") && n++ == 0)
			snprintf(out, cap, "%s", e->d_name);
	}
	if (d)
		closedir(d);
	if (n == 1)
		return 0;
	return die("%s", n ? "several *.prosper pools here: name one with --pool"
			   : "no pool given and no *.prosper pool here (--pool PATH)");
}

/* ------------------------------------------------------------------ launch */

static int shim_path(char *out, size_t cap)
{
	char self[PATH_MAX];
	ssize_t l = readlink("/proc/self/exe", self, sizeof self - 64);
	if (l <= 0)
		return -1;
	self[l] = 0;
	*strrchr(self, '/') = 0;
	strcat(self, "/../shim/libprosper-shim.so");
	return realpath(self, out) && strlen(out) < cap ? 0 : -1;
}

/* The program's environment: ours, with the shim first in LD_PRELOAD and rseq off. */
static char **run_environment(const char *shim, int *envc)
{
	int n = 0;
	while (environ[n])
		n++;
	char **env = calloc((size_t)n + 3, sizeof *env);
	int k = 0;
	const char *user_preload = getenv("LD_PRELOAD"), *user_tunables = getenv("GLIBC_TUNABLES");
	for (int i = 0; i < n; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11) && strncmp(environ[i], "GLIBC_TUNABLES=", 15) &&
		    strncmp(environ[i], "PROSPER_SHIM_", 13) && strncmp(environ[i], "PROSPER_TEST_", 13))
			env[k++] = environ[i];
	char *p;
	if (asprintf(&p, "LD_PRELOAD=%s%s%s", shim, user_preload && *user_preload ? ":" : "",
		     user_preload ? user_preload : "") < 0)
		return NULL;
	env[k++] = p;
	if (asprintf(&p, "GLIBC_TUNABLES=%s%sglibc.pthread.rseq=0", user_tunables ? user_tunables : "",
		     user_tunables && *user_tunables ? ":" : "") < 0)
		return NULL;
	env[k++] = p;
	env[k] = NULL;
	*envc = k;
	return env;
}

struct child {
	pid_t pid;
	int sock;
};

/* Fork the program: no ASLR, in cwd, environment env plus the shim's socket; it waits until we
 * have seized it, then execs.  On return the child is seized and running. */
static int launch(struct child *c, const char *file, char *const argv[], char *const env[], int envc,
		  const char *cwd, int resume, int use_path)
{
	int sv[2], go[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 || pipe2(go, O_CLOEXEC) != 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		char **e = calloc((size_t)envc + 3, sizeof *e);
		memcpy(e, env, (size_t)envc * sizeof *e);
		int fd = dup(sv[1]); /* without CLOEXEC: the shim reads it */
		char s1[48];
		snprintf(s1, sizeof s1, "PROSPER_SHIM_SOCK=%d", fd);
		e[envc] = s1;
		e[envc + 1] = resume ? "PROSPER_SHIM_RESUME=1" : NULL;
		sigset_t all;
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL); /* the supervisor's SIGCHLD block is not the program's */
		personality(ADDR_NO_RANDOMIZE);
		if (cwd && chdir(cwd) != 0) {
			fprintf(stderr, "%s: cannot enter %s: %s\n", cmd, cwd, strerror(errno));
			_exit(2);
		}
		char b;
		close(go[1]);
		while (read(go[0], &b, 1) < 0 && errno == EINTR)
			;
		if (use_path)
			execvpe(file, argv, e);
		else
			execve(file, argv, e);
		fprintf(stderr, "%s: cannot execute %s: %s\n", cmd, file, strerror(errno));
		_exit(127);
	}
	close(sv[1]);
	close(go[0]);
	c->pid = pid;
	c->sock = sv[0];
	long o = PTRACE_O_TRACEEXEC | PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_EXITKILL;
	if (ptrace(PTRACE_SEIZE, pid, 0, (void *)o) != 0) {
		kill(pid, SIGKILL);
		return -EPERM;
	}
	if (write(go[1], "g", 1) != 1)
		return -EPIPE;
	close(go[1]);
	return 0;
}

/* Wait for the exec; returns 0, or 1 + exit status if the program ended before it. */
static int wait_exec(pid_t pid, int *status)
{
	for (;;) {
		int st;
		if (waitpid(pid, &st, __WALL) != pid)
			return -ECHILD;
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			*status = st;
			return 1;
		}
		if ((st >> 16) == PTRACE_EVENT_EXEC) {
			ptrace(PTRACE_CONT, pid, 0, 0);
			return 0;
		}
		int sig = WSTOPSIG(st);
		ptrace(PTRACE_CONT, pid, 0, (void *)(long)((st >> 16) ? 0 : sig));
	}
}

static int recv_hello(int sock, struct shim_hello *h, int *uffd)
{
	struct pollfd p = { sock, POLLIN, 0 };
	if (poll(&p, 1, 10000) <= 0)
		return -ETIMEDOUT;
	struct iovec iov = { h, sizeof *h };
	union { struct cmsghdr c; char buf[CMSG_SPACE(sizeof(int))]; } u;
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf };
	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_WAITALL) != (ssize_t)sizeof *h)
		return -EPIPE;
	*uffd = -1;
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	if (c && c->cmsg_type == SCM_RIGHTS)
		memcpy(uffd, CMSG_DATA(c), sizeof *uffd);
	return h->status == 'K' ? 0 : h->status == 'U' ? -ENOSYS : -EPROTO;
}

/* ------------------------------------------------------------------ the loop */

static int timed_commit(struct sup *s)
{
	double t0 = now();
	int rc = sup_commit(s);
	s->commit_total += now() - t0;
	return rc;
}

/* The commit half of each checkpoint runs on this thread while the program goes on (sup.h). */
struct worker {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int busy, quit, rc;
	int done_fd[2]; /* a byte per finished commit, so the loop can poll for it */
	struct sup *s;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->busy && !w->quit)
			pthread_cond_wait(&w->cv, &w->mu);
		if (!w->busy)
			break;
		pthread_mutex_unlock(&w->mu);
		int rc = timed_commit(w->s);
		pthread_mutex_lock(&w->mu);
		w->rc = rc;
		w->busy = 0;
		pthread_cond_broadcast(&w->cv);
		if (write(w->done_fd[1], "c", 1) < 0) {
			/* the pipe is non-blocking and drained by the loop: a full pipe already says "done" */
		}
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

static int worker_busy(struct worker *w)
{
	pthread_mutex_lock(&w->mu);
	int b = w->busy;
	pthread_mutex_unlock(&w->mu);
	return b;
}

/* Wait for the commit under way, if any; its result. */
static int worker_wait(struct worker *w)
{
	pthread_mutex_lock(&w->mu);
	while (w->busy)
		pthread_cond_wait(&w->cv, &w->mu);
	int rc = w->rc;
	w->rc = 0;
	pthread_mutex_unlock(&w->mu);
	return rc;
}

static void worker_start_commit(struct worker *w)
{
	pthread_mutex_lock(&w->mu);
	w->busy = 1;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

static void checkpoint_failed(struct sup *s, int rc)
{
	static char why[400];
	snprintf(why, sizeof why, "checkpoint failed: %s (%s)", strerror(-rc),
		 s->track.err[0] ? s->track.err : prosper_pool_errormsg());
	disable(s, why);
}

/* One stop of ours: capture while stopped; commit on the worker (or here, then verify, with the
 * oracle on). */
static void checkpoint(struct sup *s, struct worker *w)
{
	int rc = worker_wait(w);
	if (rc)
		checkpoint_failed(s, rc);
	if (!s->enabled)
		return;
	double t0 = now();
	rc = sup_capture(s);
	if (!rc && s->verify) {
		rc = timed_commit(s);
		if (!rc)
			rc = sup_verify(s);
	}
	double dt = now() - t0;
	s->stop_total += dt;
	if (dt > s->stop_max)
		s->stop_max = dt;
	if (rc)
		checkpoint_failed(s, rc);
	else if (!s->verify)
		worker_start_commit(w);
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
		int rc = worker_wait(w);
		if (rc)
			checkpoint_failed(s, rc);
	}
	char why[300];
	if (sup_nvm_serve(s, tid, sig, why, sizeof why) != 0) {
		fprintf(stderr, "%s: %s; stopping the program, the last checkpoint (epoch %llu) is kept\n", cmd, why,
			(unsigned long long)prosper_pool_epoch(s->pool));
		kill(s->pid, SIGKILL);
	}
	return 1;
}

static int is_stop_signal(int sig) { return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU; }

/* Is tid a thread of process pid?  (A forked child's first stop looks like a new thread's.) */
static int same_process(pid_t pid, pid_t tid)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/task/%d", (int)pid, (int)tid);
	return access(p, F_OK) == 0;
}

static struct thr *thread_of(struct sup *s, pid_t tid)
{
	for (int i = 0; i < s->nthr; i++)
		if (s->thr[i].tid == tid)
			return &s->thr[i];
	return NULL;
}

static struct thr *thread_add(struct sup *s, pid_t tid)
{
	struct thr *t = thread_of(s, tid);
	if (t)
		return t;
	if (s->nthr == MAX_THREADS) {
		disable(s, "the program has too many threads");
		return NULL;
	}
	t = &s->thr[s->nthr++];
	memset(t, 0, sizeof *t);
	t->tid = tid;
	return t;
}

static void thread_remove(struct sup *s, pid_t tid)
{
	struct thr *t = thread_of(s, tid);
	if (t && t != &s->thr[0])
		*t = s->thr[--s->nthr];
}

static int all_stopped(const struct sup *s)
{
	for (int i = 0; i < s->nthr; i++)
		if (!s->thr[i].stopped)
			return 0;
	return 1;
}

/* Let every thread run again after our stop (group-stopped ones stay in their stop). */
static void resume_all(struct sup *s)
{
	for (int i = 0; i < s->nthr; i++) {
		struct thr *t = &s->thr[i];
		if (t->stopped)
			ptrace(t->listening ? PTRACE_LISTEN : PTRACE_CONT, t->tid, 0, 0);
		t->stopped = 0;
	}
}

/* Returns the program's wait status when it ended, or -1 if it was lost.  SIGCHLD is blocked and
 * read from sigfd, so ptrace stops are handled as they happen, not only at our own stops.
 * A checkpoint is a consistent cut: every thread is interrupted, and the checkpoint is taken
 * only once all of them (and any thread created meanwhile) are stopped. */
static int supervise(struct sup *s, struct opts *o, int sigfd)
{
	struct worker w = { .s = s };
	pthread_mutex_init(&w.mu, NULL);
	pthread_cond_init(&w.cv, NULL);
	if (pipe2(w.done_fd, O_CLOEXEC | O_NONBLOCK) != 0 || pthread_create(&w.th, NULL, worker_main, &w) != 0) {
		disable(s, "cannot start the commit thread");
		w.done_fd[0] = -1;
	}
	int have_worker = w.done_fd[0] >= 0;
	double iv = o->interval_ms / 1e3, next = now() + iv;
	int interrupting = 0, late = 0, st = -1;
	double interrupt_sent = 0;
	for (;;) {
		/* every stop and exit that is pending */
		pid_t pid;
		while ((pid = waitpid(-1, &st, __WALL | WNOHANG)) != 0) {
			if (pid < 0)
				goto out_lost;
			if (WIFEXITED(st) || WIFSIGNALED(st)) {
				if (pid == s->pid)
					goto out; /* the last thread: the program's end */
				thread_remove(s, pid);
			} else {
				struct thr *t = thread_of(s, pid);
				int event = st >> 16, sig = WSTOPSIG(st);
				if (!t && (event != PTRACE_EVENT_STOP || !same_process(s->pid, pid))) {
					ptrace(PTRACE_DETACH, pid, 0, 0); /* not a thread of ours (a forked child) */
					continue;
				}
				if (!t && !(t = thread_add(s, pid))) {
					ptrace(PTRACE_DETACH, pid, 0, 0);
					continue;
				}
				if (event == PTRACE_EVENT_CLONE) {
					unsigned long tid = 0;
					ptrace(PTRACE_GETEVENTMSG, pid, 0, &tid);
					thread_add(s, (pid_t)tid); /* its first stop follows */
					ptrace(PTRACE_CONT, pid, 0, 0);
				} else if (event == PTRACE_EVENT_STOP) {
					t->listening = is_stop_signal(sig);
					t->stopped = 1;
					if (!interrupting) /* a new thread's first stop, or a group stop */
						resume_all(s);
				} else if (event) {
					if (event == PTRACE_EVENT_EXEC)
						disable(s, "the program executed another program");
					else if (event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK)
						disable(s, "the program forked (multi-process programs are not persisted)");
					ptrace(PTRACE_CONT, pid, 0, 0);
				} else if (!nvm_stop(s, have_worker ? &w : NULL, pid, sig)) {
					ptrace(PTRACE_CONT, pid, 0, (void *)(long)sig); /* signal-delivery stop: deliver it */
				}
				/* An interrupt sent while the thread sat in another stop can be lost when that stop
				 * ends: ask again (a pending one is not doubled). */
				if (interrupting && !t->stopped && event != PTRACE_EVENT_STOP)
					ptrace(PTRACE_INTERRUPT, pid, 0, 0);
			}
			if (interrupting && all_stopped(s)) {
				if (s->enabled && have_worker)
					checkpoint(s, &w);
				next = now() + iv;
				interrupting = 0;
				resume_all(s);
			}
		}
		double t = now();
		int busy = have_worker && worker_busy(&w);
		if (s->enabled && !interrupting && t >= next) {
			if (busy) {
				/* the previous commit is still running: stop as soon as it ends */
				s->late += !late;
				late = 1;
			} else {
				interrupting = 1;
				interrupt_sent = t;
				late = 0;
				for (int i = 0; i < s->nthr; i++)
					if (!s->thr[i].stopped && ptrace(PTRACE_INTERRUPT, s->thr[i].tid, 0, 0) != 0 && errno == ESRCH)
						s->thr[i].stopped = 1; /* exiting: its exit is reported next */
				continue; /* the stops may be pending already */
			}
		}
		if (interrupting && t - interrupt_sent > 0.1) {
			/* a thread that has not stopped yet: ask again */
			for (int i = 0; i < s->nthr; i++)
				if (!s->thr[i].stopped)
					ptrace(PTRACE_INTERRUPT, s->thr[i].tid, 0, 0);
			interrupt_sent = t;
		}
		int timeout = interrupting ? 100 : !s->enabled ? -1 : busy && t >= next ? -1 : (int)((next - t) * 1e3) + 1;
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
	if (have_worker) {
		int rc = worker_wait(&w);
		if (rc)
			checkpoint_failed(s, rc);
		pthread_mutex_lock(&w.mu);
		w.quit = 1;
		pthread_cond_broadcast(&w.cv);
		pthread_mutex_unlock(&w.mu);
		pthread_join(w.th, NULL);
		close(w.done_fd[0]);
		close(w.done_fd[1]);
	}
	return st;
}

static void write_stats(struct sup *s, const char *path, const struct opts *o)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return;
	static const char *names[] = { "", "page", "diff", "full" };
	const struct ckpt_stats *t = &s->st;
	struct prosper_pool_stats ps;
	prosper_pool_stats_get(s->pool, &ps);
	const struct metalog_stats *ms = &s->meta_st;
	fprintf(f,
		"{\"metadata_mode\": \"%s\", \"metadata_bytes\": %llu, \"metadata_records\": %llu, "
		"\"metadata_rebuilds\": %llu, \"vma_adds\": %llu, \"vma_removes\": %llu, \"vma_changes\": %llu, "
		"\"fd_changes\": %llu, \"file_changes\": %llu, \"metadata_first_bytes\": %llu, \"mean_commit_ms\": %.4f, ",
		s->meta_mode == META_LOG ? "log" : "rewrite", (unsigned long long)ms->bytes, (unsigned long long)ms->records,
		(unsigned long long)ms->rebuilds, (unsigned long long)ms->vma_add, (unsigned long long)ms->vma_remove,
		(unsigned long long)ms->vma_change, (unsigned long long)ms->fd_change, (unsigned long long)ms->file_change,
		(unsigned long long)s->meta_first_bytes, s->checkpoints ? 1e3 * s->commit_total / (double)s->checkpoints : 0.0);
	fprintf(f,
		"\"checkpoints\": %llu, \"late\": %llu, \"mean_stop_ms\": %.4f, \"max_stop_ms\": %.4f, "
		"\"mean_threads\": %.3f, \"thread_capture_us\": %.3f, "
		"\"stack_bytes\": %llu, \"stack_page_bytes\": %llu, \"stack_exact_bytes\": %llu, \"stack_dense_checkpoints\": %llu, "
		"\"dense_region_switches\": %llu, "
		"\"other_bytes\": %llu, \"other_page_bytes\": %llu, \"new_mapping_bytes\": %llu, "
		"\"pool_data_bytes\": %llu, \"pool_catchup_bytes\": %llu, "
		"\"mismatches\": %llu, \"verified_bytes\": %llu, \"epoch\": %llu, "
		"\"stack_tracker\": \"%s\", \"heap_tracker\": \"%s\", \"stack_granularity\": %u, \"heap_granularity\": %u, "
		"\"interval_ms\": %g, \"resumed\": %s, \"restore_seconds\": %.6f, \"restore_memory_seconds\": %.6f, "
		"\"restored_bytes\": %llu, \"nvm_regions\": %d, \"nvm_faults\": %llu, \"nvm_dirty_bytes\": %llu, "
		"\"pool_cow_bytes\": %llu, \"nvm_ahead_segments\": %llu, \"nvm_ahead_changed\": %llu, \"nvm_fault_ms\": %.3f, "
		"\"disabled\": %s%s%s}\n",
		(unsigned long long)s->checkpoints, (unsigned long long)s->late,
		s->checkpoints ? 1e3 * s->stop_total / s->checkpoints : 0.0, 1e3 * s->stop_max,
		s->checkpoints ? (double)s->thread_captures / (double)s->checkpoints : 0.0,
		s->thread_captures ? 1e6 * s->thread_capture_seconds / (double)s->thread_captures : 0.0,
		(unsigned long long)t->stack, (unsigned long long)t->stack_pages, (unsigned long long)t->stack_exact,
		(unsigned long long)t->stack_dense_checkpoints, (unsigned long long)t->dense_regions,
		(unsigned long long)t->other, (unsigned long long)t->other_pages, (unsigned long long)t->new_bytes,
		(unsigned long long)ps.data_bytes, (unsigned long long)ps.catchup_bytes,
		(unsigned long long)t->mismatches, (unsigned long long)t->verified_bytes,
		(unsigned long long)prosper_pool_epoch(s->pool), names[o->stack_mode], names[o->heap_mode],
		s->stack_gran, s->heap_gran, o->interval_ms, o->resume ? "true" : "false", s->restore_seconds, s->restore_memory_seconds,
		(unsigned long long)s->restored_bytes, s->nnvm, (unsigned long long)s->nvm_faults,
		(unsigned long long)s->nvm_dirty_bytes, (unsigned long long)ps.cow_bytes,
		(unsigned long long)s->nvm_ahead_segments, (unsigned long long)s->nvm_ahead_changed, 1e3 * s->nvm_fault_seconds,
		s->disabled_reason ? "\"" : "null",
		s->disabled_reason ? s->disabled_reason : "", s->disabled_reason ? "\"" : "");
	fclose(f);
}

static int lock_pool(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		close(fd);
		return -EBUSY;
	}
	return fd; /* held until we exit */
}

enum pool_state { POOL_FOREIGN, POOL_RESUMABLE, POOL_FINISHED, POOL_BUSY };

/* What an existing file at the pool path is; *why says why it is not a pool. */
static enum pool_state pool_state(const char *path, char *why, size_t whylen)
{
	int lock = lock_pool(path);
	if (lock == -EBUSY)
		return POOL_BUSY;
	prosper_pool *p = NULL;
	if (lock < 0 || prosper_pool_open(path, &p) != 0) {
		snprintf(why, whylen, "%s", lock < 0 ? strerror(-lock) : prosper_pool_errormsg());
		if (lock >= 0)
			close(lock);
		return POOL_FOREIGN;
	}
	size_t len = 0;
	const struct done_record *d = prosper_pool_blob(p, &len);
	int done = d && len == sizeof *d && d->magic == DONE_MAGIC;
	int empty = prosper_pool_epoch(p) == 0;
	prosper_pool_close(&p);
	close(lock);
	return done || empty ? POOL_FINISHED : POOL_RESUMABLE;
}

static int start_tracking(struct sup *s, int uffd)
{
	int all_full = s->stack_mode == TRACK_MODE_FULL && s->heap_mode == TRACK_MODE_FULL;
	if (all_full && uffd >= 0) {
		close(uffd);
		uffd = -1;
	}
	return prosper_track_open(&s->track, all_full ? PROSPER_TRACK_FULL : PROSPER_TRACK_PAGE, s->pid, uffd);
}

int main(int argc, char **argv)
{
	struct opts o;
	if (parse(argc, argv, &o))
		return 2;
	char pool_path[PATH_MAX], shim[PATH_MAX];
	if (o.pool)
		snprintf(pool_path, sizeof pool_path, "%s", o.pool);
	else if (default_pool(&o, pool_path, sizeof pool_path))
		return 2;
	if (shim_path(shim, sizeof shim) != 0)
		return die("%s", "the shim libprosper-shim.so is not built (make build)");

	/* ptrace stops arrive as SIGCHLD, read from a signalfd by the loop */
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	int sigfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sigfd < 0)
		return die("signalfd: %s", strerror(errno));

	struct sup *s = calloc(1, sizeof *s);
	s->verify = o.verify;
	s->stats_exact = o.exact;
	s->stack_mode = o.stack_mode;
	s->heap_mode = o.heap_mode;
	s->stack_gran = (uint32_t)o.stack_gran;
	s->heap_gran = (uint32_t)o.heap_gran;
	s->meta_mode = o.meta_mode;
	s->meta = metalog_new();
	s->enabled = 1;
	s->vmas = calloc(MAX_VMAS, sizeof *s->vmas);
	s->now = calloc(MAX_VMAS, sizeof *s->now);
	s->fds = calloc(MAX_FDS, sizeof *s->fds);
	s->files = calloc(MAX_FILES, sizeof *s->files);
	s->ranges = malloc(MAX_RANGES * sizeof *s->ranges);
	s->thr = calloc(MAX_THREADS, sizeof *s->thr);
	const char *delay = getenv("PROSPER_TEST_COMMIT_DELAY_US");
	s->commit_delay_us = delay ? strtoull(delay, NULL, 10) : 0;

	struct img im;
	char **env = NULL;
	int envc = 0, lock = -1;
	struct child c;
	int rc, status = 0;
	if (!o.resume) {
		struct stat st;
		if (lstat(pool_path, &st) == 0) {
			/* Never destroy what we did not make; a checkpoint only with --fresh; a pool whose
			 * program finished (or never committed) holds nothing to lose. */
			char why[300] = "";
			switch (pool_state(pool_path, why, sizeof why)) {
			case POOL_BUSY:
				return die("%s is in use by a running prosper", pool_path);
			case POOL_FOREIGN:
				return die("%s exists and is not a usable pool (%s): refusing to overwrite it, choose another --pool",
					   pool_path, why);
			case POOL_RESUMABLE:
				if (!o.fresh)
					return die("%s already holds a checkpoint: `prosper resume --pool %s` continues it, "
						   "--fresh discards it", pool_path, pool_path);
				break;
			case POOL_FINISHED:
				break;
			}
			if (unlink(pool_path) != 0)
				return die("cannot remove %s: %s", pool_path, strerror(errno));
		}
		struct prosper_pool_config cfg;
		prosper_pool_config_default(&cfg);
		cfg.capacity = o.capacity_mib << 20;
		cfg.seg_size = SUP_SEG_SIZE;
		cfg.max_regions = 4096;
		if (prosper_pool_create(pool_path, &cfg, &s->pool) != 0)
			return die("%s: %s", pool_path, prosper_pool_errormsg());
		if ((lock = lock_pool(pool_path)) < 0)
			return die("%s is in use by a running prosper", pool_path);
		env = run_environment(shim, &envc);
		if (!getcwd(s->launch_cwd, sizeof s->launch_cwd))
			return die("%s", "cannot read the working directory");
		s->argv = o.prog;
		s->argc = o.nprog;
		s->envp = env;
		s->envc = envc;
		if ((rc = launch(&c, o.prog[0], o.prog, env, envc, NULL, 0, 1)) != 0)
			return die("cannot start %s: %s", o.prog[0], rc == -EPERM ? "ptrace is not permitted here" : strerror(-rc));
	} else {
		struct stat st;
		if (stat(pool_path, &st) != 0)
			return die("%s: %s", pool_path, strerror(errno));
		if ((lock = lock_pool(pool_path)) < 0)
			return die("%s is in use by a running prosper (or unreadable)", pool_path);
		if (prosper_pool_open(pool_path, &s->pool) != 0)
			return die("%s: %s", pool_path, prosper_pool_errormsg());
		size_t blen = 0;
		const void *blob = prosper_pool_blob(s->pool, &blen);
		const struct done_record *done = blob;
		if (blob && blen == sizeof *done && done->magic == DONE_MAGIC)
			return die("%s: the program finished (exit code %d): nothing to resume", pool_path, done->exit_code);
		const char *why;
		if (prosper_pool_epoch(s->pool) == 0)
			return die("%s: no checkpoint was committed (the program ran less than one interval, or could not be checkpointed)",
				   pool_path);
		void *rebuilt = NULL; /* a log-mode epoch: its blob rebuilt from the metadata region, kept */
		if (metalog_is_stub(blob, blen) && metalog_load(s->pool, blob, blen, &rebuilt, &blen, &why) != 0)
			return die("%s: %s", pool_path, why);
		if (rebuilt)
			blob = rebuilt;
		if (img_decode(blob, blen, &im, &why) != 0)
			return die("%s: %s", pool_path, why);
		metalog_attach(s->meta, s->pool);
		char reason[600];
		if (sup_restore_check(s, &im, reason, sizeof reason) != 0)
			return die("%s", reason);
		const char *exe = img_s(&im, im.h->exe_str);
		snprintf(s->exe, sizeof s->exe, "%s", exe);
		snprintf(s->launch_cwd, sizeof s->launch_cwd, "%s", img_s(&im, im.h->launch_cwd_str));
		/* argv and environment from the launch record */
		char **args = calloc(im.h->argc + 1u, sizeof *args);
		env = calloc(im.h->envc + 1u, sizeof *env);
		const char *p = img_s(&im, im.h->args_str);
		/* copies: the blob lives in the pool's metadata, which later commits reuse */
		for (uint32_t i = 0; i < im.h->argc + im.h->envc; i++, p += strlen(p) + 1) {
			if (i < im.h->argc)
				args[i] = strdup(p);
			else
				env[i - im.h->argc] = strdup(p);
		}
		envc = (int)im.h->envc;
		s->argv = args;
		s->argc = (int)im.h->argc;
		s->envp = env;
		s->envc = envc;
		s->tid_offset = im.h->tid_offset;
		if ((rc = launch(&c, exe, args, env, envc, s->launch_cwd, 1, 0)) != 0)
			return die("cannot relaunch %s: %s", exe, strerror(-rc));
	}
	if (!realpath(pool_path, s->pool_path))
		snprintf(s->pool_path, sizeof s->pool_path, "%s", pool_path);
	s->nvm_seg = SUP_SEG_SIZE;
	s->pid = c.pid;
	s->thr[0].tid = c.pid;
	s->nthr = 1;
	double t_start = now();
	int ended = wait_exec(c.pid, &status);
	if (ended < 0)
		return die("%s", "lost the program before it started");
	if (ended) {
		prosper_pool_close(&s->pool);
		return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	}
	if (!o.resume) {
		char p[64];
		snprintf(p, sizeof p, "/proc/%d/exe", (int)c.pid);
		ssize_t l = readlink(p, s->exe, sizeof s->exe - 1);
		if (l > 0)
			s->exe[l] = 0;
	}
	struct shim_hello hello = { 0 };
	int uffd = -1;
	rc = recv_hello(c.sock, &hello, &uffd);
	if (rc == 0 || rc == -ENOSYS || rc == -EPROTO) {
		s->gate = hello.gate;
		s->nvm_gate = hello.nvm_gate;
		s->nvm_path_addr = hello.nvm_path;
	}
	if (o.resume) {
		if (rc != 0 || !hello.resume) {
			/* the child may be dying already (its socket closes before its exit is reported) */
			int st = 0;
			struct timespec pause = { 0, 20 * 1000 * 1000 };
			nanosleep(&pause, NULL);
			kill(c.pid, SIGKILL);
			while (waitpid(c.pid, &st, __WALL) == c.pid && WIFSTOPPED(st))
				;
			if (rc == -ENOSYS)
				return die("%s", "userfaultfd is not available (vm.unprivileged_userfaultfd?)");
			if (WIFEXITED(st) || (WIFSIGNALED(st) && WTERMSIG(st) != SIGKILL))
				return die("the relaunched program ended before the restorer (%s %d)",
					   WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
			return die("the relaunched program did not reach the restorer (%s)",
				   rc == -EPROTO ? "no asynchronous write-protection" : rc ? strerror(-rc) : "not in resume mode");
		}
		int st;
		while (waitpid(c.pid, &st, __WALL) == c.pid && WIFSTOPPED(st) && WSTOPSIG(st) != SIGSTOP)
			ptrace(PTRACE_CONT, c.pid, 0, (void *)(long)WSTOPSIG(st));
		char reason[600];
		int stopped = WIFSTOPPED(st);
		if (!stopped || sup_restore(s, &im, &hello, reason, sizeof reason) != 0) {
			kill(c.pid, SIGKILL);
			waitpid(c.pid, &st, __WALL);
			return die("%s", stopped ? reason : "the relaunched program ended before the restore");
		}
		/* saved mappings of the checkpoint are tracked from here on */
		if (start_tracking(s, uffd) != 0) {
			kill(c.pid, SIGKILL);
			return die("%s", s->track.err);
		}
		for (uint32_t i = 0; i < im.h->nvmas; i++) {
			const struct img_vma *v = &im.vmas[i];
			if (v->region == IMG_NONE)
				continue;
			struct vma *sv = &s->vmas[s->nvmas++];
			*sv = (struct vma){ .start = v->start, .end = v->end, .offset = v->offset, .region = (int)v->region };
			memcpy(sv->perms, v->perms, sizeof sv->perms);
			snprintf(sv->path, sizeof sv->path, "%s", img_s(&im, v->path) ? img_s(&im, v->path) : "");
			if (prosper_track_add(&s->track, v->start, v->end) != 0) {
				kill(c.pid, SIGKILL);
				return die("%s", s->track.err);
			}
		}
		s->restore_seconds = now() - t_start;
		s->thr[0].stopped = 1;
		resume_all(s); /* the main thread and every thread sup_restore recreated */
	} else if (rc != 0) {
		disable(s, rc == -ENOSYS ? "userfaultfd is not available (vm.unprivileged_userfaultfd?)"
					 : "the shim did not report (statically linked program?)");
	} else if (start_tracking(s, uffd) != 0) {
		disable(s, s->track.err);
	}
	close(c.sock);
	int st = supervise(s, &o, sigfd);
	int code = st < 0 ? 1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	if (st >= 0 && WIFEXITED(st) && prosper_pool_epoch(s->pool) > 0) {
		/* a normal exit: the pool says so, and a resume will not replay the end */
		struct done_record d = { .magic = DONE_MAGIC, .exit_code = code };
		if (prosper_pool_commit(s->pool, &d, sizeof d) != 0)
			fprintf(stderr, "%s: could not mark the pool finished: %s\n", cmd, prosper_pool_errormsg());
	}
	if (o.stats)
		write_stats(s, o.stats, &o);
	prosper_track_close(&s->track);
	prosper_pool_close(&s->pool);
	return code;
}

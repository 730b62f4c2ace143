/* launch.c -- start the program under ptrace, the same way for a run and for each resume.
 *
 * The child: no ASLR (personality), an empty signal mask, the shim first in LD_PRELOAD, rseq off
 * (GLIBC_TUNABLES), the supervisor's hello channel in PROSPER_SHIM_SOCK; it waits on a pipe until the
 * supervisor has seized it (PTRACE_O_EXITKILL: it never runs unsupervised), installs the filter
 * that sends its file changes to us (filetrack.h; with its own pid namespace), then execs.  The
 * caller's environment is passed through otherwise untouched, so a resume relaunches it exactly.
 */
#include "launch.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>
#include "pidns.h"
#include "refusal.h"
#include "filefilter.h"

extern char **environ;

int launch_shim_path(char *out, size_t cap)
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

char **launch_environment(char *const base[], const char *shim, int *envc)
{
	int n = 0;
	while (base[n])
		n++;
	char **env = calloc((size_t)n + 3, sizeof *env);
	if (!env)
		return NULL;
	int k = 0;
	const char *user_preload = NULL, *user_tunables = NULL;
	for (int i = 0; i < n; i++) {
		if (!strncmp(base[i], "LD_PRELOAD=", 11))
			user_preload = base[i] + 11;
		else if (!strncmp(base[i], "GLIBC_TUNABLES=", 15))
			user_tunables = base[i] + 15;
		else if (strncmp(base[i], "PROSPER_SHIM_", 13) && strncmp(base[i], "PROSPER_TEST_", 13))
			env[k++] = base[i];
	}
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

/* Fork the program: no ASLR, in cwd, environment env plus the shim's socket; it waits until we
 * have seized it, then execs.  On return the child is seized and running. */
int launch(struct child *c, const struct hello_channel *ch, struct pidns *ns, const char *file,
	   char *const argv[], char *const env[], int envc, const char *cwd, int resume, int use_path, int filter)
{
	int go[2];
	if (pipe2(go, O_CLOEXEC) != 0)
		return -errno;
	pid_t pid = ns ? pidns_fork(ns) : fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		char **e = calloc((size_t)envc + 3, sizeof *e);
		memcpy(e, env, (size_t)envc * sizeof *e);
		e[envc] = (char *)ch->env;
		e[envc + 1] = resume ? "PROSPER_SHIM_RESUME=1" : NULL;
		sigset_t all;
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL); /* the supervisor's SIGCHLD block is not the program's */
		personality(ADDR_NO_RANDOMIZE);
		if (ns && ns->on && pidns_child_setup() != 0) {
			fprintf(stderr, "%s: cannot mount /proc for the program's pid namespace: %s\n", sup_command(),
				strerror(errno));
			_exit(2);
		}
		if (cwd && chdir(cwd) != 0) {
			fprintf(stderr, "%s: cannot enter %s: %s\n", sup_command(), cwd, strerror(errno));
			_exit(2);
		}
		char b;
		close(go[1]);
		while (read(go[0], &b, 1) < 0 && errno == EINTR)
			;
		/* seized now (TRACESECCOMP): its file changes reach us from its first instruction on */
		int frc = filter ? filefilter_install(filter) : 0;
		if (frc) {
			fprintf(stderr, "%s: cannot install the filter that sees the program's file changes: %s\n",
				sup_command(), strerror(-frc));
			_exit(2);
		}
		if (use_path)
			execvpe(file, argv, e);
		else
			execve(file, argv, e);
		fprintf(stderr, "%s: cannot execute %s: %s\n", sup_command(), file, strerror(errno));
		_exit(127);
	}
	close(go[0]);
	c->pid = pid;
	/* TRACESYSGOOD: the system-call stops of a lazy resume (fillcopy.h) are told from a SIGTRAP */
	long o = PTRACE_O_TRACEEXEC | PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_EXITKILL |
		 PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACESECCOMP;
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
int launch_wait_exec(pid_t pid, int *status)
{
	for (;;) {
		int st;
		if (waitpid(pid, &st, __WALL) != pid)
			return -ECHILD;
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			*status = st;
			return 1;
		}
		if ((st >> 16) == PTRACE_EVENT_EXEC)
			return 0; /* left at its exec stop: its hello is made or awaited next (shimless.h) */
		int sig = WSTOPSIG(st);
		ptrace(PTRACE_CONT, pid, 0, (void *)(long)((st >> 16) ? 0 : sig));
	}
}

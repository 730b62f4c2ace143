/* launch.c -- start the program under ptrace, the same way for a run and for each resume.
 *
 * The child: no ASLR (personality), an empty signal mask, the shim first in LD_PRELOAD, rseq off
 * (GLIBC_TUNABLES), the shim's socket in PROSPER_SHIM_SOCK; it waits on a pipe until the
 * supervisor has seized it (PTRACE_O_EXITKILL: it never runs unsupervised), then execs.  The
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
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "refusal.h"

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

/* The program's environment: ours, with the shim first in LD_PRELOAD and rseq off. */
char **launch_environment(const char *shim, int *envc)
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

/* Fork the program: no ASLR, in cwd, environment env plus the shim's socket; it waits until we
 * have seized it, then execs.  On return the child is seized and running. */
int launch(struct child *c, const char *file, char *const argv[], char *const env[], int envc,
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
			fprintf(stderr, "%s: cannot enter %s: %s\n", sup_command(), cwd, strerror(errno));
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
		fprintf(stderr, "%s: cannot execute %s: %s\n", sup_command(), file, strerror(errno));
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
		if ((st >> 16) == PTRACE_EVENT_EXEC) {
			ptrace(PTRACE_CONT, pid, 0, 0);
			return 0;
		}
		int sig = WSTOPSIG(st);
		ptrace(PTRACE_CONT, pid, 0, (void *)(long)((st >> 16) ? 0 : sig));
	}
}

int launch_recv_hello(int sock, struct shim_hello *h, int *uffd)
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

/* drainer.c -- a tracer for the processes a program leaves running (drainer.h). */
#include "drainer.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "procfs.h"

#define OPTIONS (PTRACE_O_TRACESECCOMP | PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK)

/* Seize every thread of process pid; the number seized. */
static int seize_process(pid_t pid)
{
	pid_t tids[4096];
	int n = proc_threads(pid, tids, 4096), seized = 0;
	for (int i = 0; i < n && i < 4096; i++)
		seized += ptrace(PTRACE_SEIZE, tids[i], 0, (void *)(long)OPTIONS) == 0;
	return seized;
}

static void drain(const pid_t *pids, int n, int go_fd)
{
	char b;
	while (read(go_fd, &b, 1) < 0 && errno == EINTR)
		;
	close(go_fd);
	int seized = 0;
	for (int i = 0; i < n; i++)
		seized += seize_process(pids[i]);
	for (int i = 0; i < n; i++)
		kill(pids[i], SIGCONT);
	if (!seized)
		_exit(0);
	int st;
	pid_t pid;
	while ((pid = waitpid(-1, &st, __WALL)) > 0 || (pid < 0 && errno == EINTR)) {
		if (pid < 0 || !WIFSTOPPED(st))
			continue; /* gone */
		int event = st >> 16, sig = WSTOPSIG(st);
		/* the filter's stops, new threads and processes (followed: they have the filter too),
		 * execs, group stops: on; a signal: delivered */
		long give = event || sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU ? 0 : sig;
		if (event == PTRACE_EVENT_STOP && (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU))
			ptrace(PTRACE_LISTEN, pid, 0, 0); /* a job-control stop stays one */
		else
			ptrace(PTRACE_CONT, pid, 0, (void *)give);
	}
	_exit(0);
}

int drainer_start(struct drainer *d, const pid_t *pids, int n)
{
	int go[2];
	d->pid = -1, d->go_fd = -1;
	if (n <= 0 || pipe2(go, O_CLOEXEC) != 0)
		return -1;
	pid_t c = fork();
	if (c < 0) {
		close(go[0]), close(go[1]);
		for (int i = 0; i < n; i++)
			kill(pids[i], SIGCONT);
		return -1;
	}
	if (c == 0) {
		/* a session of its own, none of the supervisor's fds (the pool's lock among them) */
		setsid();
		struct rlimit rl;
		int top = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536 ? (int)rl.rlim_cur : 65536;
		for (int fd = 0; fd < top; fd++)
			if (fd != go[0])
				close(fd);
		int null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, 0), dup2(null, 1), dup2(null, 2);
			if (null > 2)
				close(null);
		}
		drain(pids, n, go[0]);
	}
	close(go[0]);
	d->pid = c, d->go_fd = go[1];
	return 0;
}

void drainer_go(struct drainer *d, const pid_t *pids, int n)
{
	if (d->go_fd < 0)
		return;
	if (write(d->go_fd, "g", 1) != 1)
		for (int i = 0; i < n; i++)
			kill(pids[i], SIGCONT); /* no drainer: let them go on, as before it existed */
	close(d->go_fd);
	d->go_fd = -1;
}

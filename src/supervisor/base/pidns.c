/* pidns.c -- the program's own process ids (pidns.h).
 *
 * init speaks on a SOCK_SEQPACKET socket with the supervisor, one int32 per message:
 *   id > 0   "the next new process or thread gets id":  writes id - 1 to ns_last_pid, answers
 *            0 or an errno;
 *   0        "the program has ended": init stops guarding the supervisor, answers 0, and leaves
 *            once the namespace has no other process.  The supervisor waits for that answer:
 *            exiting before it would kill init by its parent-death signal, and with it every
 *            process the program left running (natively they go on).
 * Its first message, unasked, says whether it could mount the namespace's /proc and open
 * ns_last_pid (0 or an errno): the program's own setup is the same mount, so a namespace is
 * used only when that is known to work.
 */
#include "pidns.h"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

int pidns_child_setup(void)
{
	if (unshare(CLONE_NEWNS) != 0)
		return -1;
	/* our mounts stay ours; the system's later mounts still reach us */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) != 0)
		return -1;
	return mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
}

static void reap_all(void)
{
	while (waitpid(-1, NULL, WNOHANG | __WALL) > 0)
		;
}

/* Process 1 of the namespace.  Never returns. */
static void init_main(int ctl)
{
	/* (getppid() is 0 here, the parent being outside the namespace: a supervisor that died before
	 * this line shows as the end of ctl instead) */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* A group of our own: `kill -9 -- -PGID` of the user's job kills the supervisor and the program,
	 * and the parent-death signal then ends us and the namespace.  In the job's group we would be
	 * one more member to wait for, and a killed namespace init lingers until the system has reaped
	 * the program (its parent, the supervisor, being outside the namespace): 1.3 s per kill here. */
	setpgid(0, 0);
	/* hold none of the supervisor's files: a pipe of the user's would wait for us */
	if (ctl > 3)
		close_range(3, (unsigned)ctl - 1, 0);
	close_range((unsigned)ctl + 1, ~0u, 0);
	int null = open("/dev/null", O_RDWR);
	for (int fd = 0; fd < 3; fd++)
		if (null >= 0 && null != fd && fd != ctl)
			dup2(null, fd);
	if (null > 2)
		close(null);
	prctl(PR_SET_NAME, "prosper-init");
	int32_t ready = 0;
	int last = -1;
	if (pidns_child_setup() != 0 || (last = open("/proc/sys/kernel/ns_last_pid", O_RDWR | O_CLOEXEC)) < 0)
		ready = errno ? errno : EIO;
	if (send(ctl, &ready, sizeof ready, MSG_NOSIGNAL) != (ssize_t)sizeof ready || ready)
		_exit(1);
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	int released = 0;
	for (;;) {
		reap_all();
		if (released && waitpid(-1, NULL, WNOHANG | __WALL) < 0 && errno == ECHILD)
			_exit(0); /* the namespace is empty */
		struct pollfd p[2] = { { released ? -1 : ctl, POLLIN, 0 }, { sfd, POLLIN, 0 } };
		/* without a signalfd, look for orphans to reap now and then */
		poll(p, 2, sfd < 0 ? 200 : -1);
		if (sfd >= 0 && (p[1].revents & POLLIN)) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof si) > 0)
				;
		}
		if (released || !(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		int32_t id;
		if (recv(ctl, &id, sizeof id, 0) != (ssize_t)sizeof id)
			_exit(0); /* the supervisor is gone: the kernel ends the namespace with us */
		if (id == 0) {
			prctl(PR_SET_PDEATHSIG, 0);
			int32_t done = 0;
			send(ctl, &done, sizeof done, MSG_NOSIGNAL);
			close(ctl);
			released = 1;
			continue;
		}
		char b[16];
		int n = snprintf(b, sizeof b, "%d", (int)id - 1);
		int32_t rc = pwrite(last, b, (size_t)n, 0) == n ? 0 : errno;
		send(ctl, &rc, sizeof rc, MSG_NOSIGNAL);
	}
}

static int off(struct pidns *ns, const char *what, int err)
{
	snprintf(ns->why, sizeof ns->why, "%s: %s", what, strerror(err));
	ns->on = 0;
	return -1;
}

/* One answer from init, 5 s at most.  0 and *v, or a negative errno. */
static int answer(int ctl, int32_t *v)
{
	struct pollfd p = { ctl, POLLIN, 0 };
	int n = poll(&p, 1, 5000);
	if (n <= 0)
		return n == 0 ? -ETIMEDOUT : -errno;
	return recv(ctl, v, sizeof *v, 0) == (ssize_t)sizeof *v ? 0 : -EPIPE;
}

int pidns_enter(struct pidns *ns)
{
	memset(ns, 0, sizeof *ns);
	ns->ctl = ns->nsfd = ns->ours = -1;
	int self = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		return off(ns, "cannot open our pid namespace", errno);
	if (unshare(CLONE_NEWPID) != 0) {
		int e = errno;
		close(self);
		return off(ns, "cannot make a pid namespace", e);
	}
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
		int e = errno;
		setns(self, CLONE_NEWPID);
		close(self);
		return off(ns, "socketpair", e);
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(sv[0]);
		init_main(sv[1]);
	}
	close(sv[1]);
	int32_t ready = EIO;
	int rc = pid < 0 ? -errno : answer(sv[0], &ready);
	if (rc != 0 || ready != 0) {
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, __WALL);
		}
		close(sv[0]);
		setns(self, CLONE_NEWPID); /* our next children in our own namespace again */
		close(self);
		return off(ns, "cannot give the program its own /proc and ids", rc ? -rc : ready);
	}
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/ns/pid", (int)pid);
	ns->init = pid;
	ns->ctl = sv[0];
	ns->nsfd = open(p, O_RDONLY | O_CLOEXEC);
	ns->ours = self;
	if (ns->nsfd < 0 || setns(self, CLONE_NEWPID) != 0) {
		int e = errno;
		kill(pid, SIGKILL);
		waitpid(pid, NULL, __WALL);
		return off(ns, "cannot enter the program's pid namespace", e);
	}
	ns->on = 1;
	return 0;
}

pid_t pidns_fork(struct pidns *ns)
{
	if (!ns->on)
		return fork();
	if (setns(ns->nsfd, CLONE_NEWPID) != 0)
		return -1;
	pid_t pid = fork();
	int e = errno;
	if (pid != 0 && setns(ns->ours, CLONE_NEWPID) != 0) {
		/* cannot happen (it is the namespace we run in); without it no thread could start */
		if (pid > 0)
			kill(pid, SIGKILL);
		return -1;
	}
	errno = e;
	return pid;
}

int pidns_next(struct pidns *ns, pid_t id)
{
	if (!ns->on)
		return -ENOTSUP;
	int32_t v = (int32_t)id, rc;
	if (id <= 1)
		return -EINVAL;
	if (send(ns->ctl, &v, sizeof v, MSG_NOSIGNAL) != (ssize_t)sizeof v)
		return -errno;
	int e = answer(ns->ctl, &rc);
	return e ? e : -rc;
}

void pidns_release(struct pidns *ns)
{
	if (!ns->on || ns->ctl < 0)
		return;
	int32_t zero = 0, done;
	if (send(ns->ctl, &zero, sizeof zero, MSG_NOSIGNAL) == (ssize_t)sizeof zero)
		answer(ns->ctl, &done); /* init no longer dies with us (5 s at most) */
	close(ns->ctl);
	ns->ctl = -1;
}

pid_t pidns_own_id(pid_t tid)
{
	char p[64], line[256];
	snprintf(p, sizeof p, "/proc/%d/status", (int)tid);
	FILE *f = fopen(p, "re");
	if (!f)
		return 0;
	pid_t id = 0;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, "NSpid:", 6)) {
			/* the last field is the innermost namespace: the thread's own */
			char *end = line + strcspn(line, "\n"), *q = end;
			while (q > line && q[-1] != '\t' && q[-1] != ' ')
				q--;
			*end = 0;
			id = (pid_t)atoi(q);
			break;
		}
	fclose(f);
	return id;
}

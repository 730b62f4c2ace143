/* userns.c -- an ordinary user's supervisor in a user namespace of its own (userns.h).
 *
 * Three processes:
 *   the user's   what the shell started.  Makes the namespaces, forks the keeper, and exits with
 *                the supervisor's status as soon as the keeper sends it (one int over a pipe);
 *   the keeper   process 1 of the new pid namespace.  Forks the supervisor, waits for it, sends
 *                its status, then reaps what the program left running in the background until
 *                the namespace is empty (natively those go on after the command returned; the
 *                kernel would kill them all with process 1);
 *   the supervisor  process 2, in the namespace's active pid namespace (so it may make threads,
 *                and pidns.c may put the program's namespace under it).
 * While the supervisor runs, each dies with its parent (parent-death signals): a `kill -9` of
 * the user's process or of the job's group leaves nothing running unsupervised.
 */
#include "userns.h"
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
#include <sys/wait.h>
#include <unistd.h>

int userns_needed(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	unsigned long long eff = 0;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	if (f)
		fclose(f);
	return !(eff & (1ull << 21)); /* CAP_SYS_ADMIN */
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, text, strlen(text));
	int e = errno;
	close(fd);
	errno = e;
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* The setting that usually forbids an ordinary user's namespace, for the refusal. */
static const char *forbidding_setting(void)
{
	static const struct {
		const char *path, *name;
	} knobs[] = { { "/proc/sys/user/max_user_namespaces", "user.max_user_namespaces is 0" },
		      { "/proc/sys/kernel/unprivileged_userns_clone", "kernel.unprivileged_userns_clone is 0" },
		      { "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
			"kernel.apparmor_restrict_unprivileged_userns is 1" } };
	for (size_t i = 0; i < sizeof knobs / sizeof *knobs; i++) {
		char b[16] = "";
		int fd = open(knobs[i].path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, b, sizeof b - 1) : -1;
		if (fd >= 0)
			close(fd);
		int v = n > 0 ? atoi(b) : -1;
		if ((i == 2 && v == 1) || (i < 2 && v == 0))
			return knobs[i].name;
	}
	return "a seccomp filter or security module?";
}

/* Die with the parent; 0, or -1 if it is gone already (its end of `alive` closed). */
static int die_with_parent(int alive)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	struct pollfd p = { alive, POLLIN, 0 };
	return poll(&p, 1, 0) != 0 ? -1 : 0; /* the parent never writes: readable means hung up */
}

static void exit_as(int status)
{
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		signal(sig, SIG_DFL);
		sigset_t one;
		sigemptyset(&one);
		sigaddset(&one, sig);
		sigprocmask(SIG_UNBLOCK, &one, NULL);
		raise(sig);
		_exit(128 + sig);
	}
	_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

/* Process 1: the supervisor's parent, then the namespace's reaper.  Never returns. */
static void keeper(pid_t supervisor, int status_w)
{
	prctl(PR_SET_NAME, "prosper-keeper");
	/* hold none of the user's files: a pipe of theirs would wait for us after the command ended */
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int fd = 0; fd < 3; fd++)
		if (null >= 0)
			dup3(null, fd, 0);
	if (status_w > 3)
		close_range(3, (unsigned)status_w - 1, 0);
	close_range((unsigned)status_w + 1, ~0u, 0);
	int st = 0;
	while (waitpid(supervisor, &st, __WALL) < 0 && errno == EINTR)
		;
	int32_t v = st;
	prctl(PR_SET_PDEATHSIG, 0); /* the user's process exits on this status: we stay for the rest */
	if (write(status_w, &v, sizeof v) != (ssize_t)sizeof v)
		_exit(1);
	close(status_w);
	while (waitpid(-1, NULL, __WALL) > 0 || errno == EINTR)
		;
	_exit(0); /* ECHILD: the namespace is empty */
}

int userns_enter(char *why, size_t whylen)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	if (unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS) != 0) {
		int e = errno;
		snprintf(why, whylen, "an ordinary user needs a user namespace for them, which is denied (%s; %s)",
			 strerror(e), e == EPERM || e == ENOSPC ? forbidding_setting() : "unshare");
		return USERNS_DENIED;
	}
	char map[64];
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	if (write_file("/proc/self/uid_map", map) != 0 || write_file("/proc/self/setgroups", "deny") != 0 ||
	    (snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid), write_file("/proc/self/gid_map", map)) != 0) {
		snprintf(why, whylen, "cannot map this user's ids into its user namespace: %s", strerror(errno));
		return USERNS_BROKEN;
	}
	int alive[2], status[2];
	if (pipe2(alive, O_CLOEXEC) != 0 || pipe2(status, O_CLOEXEC) != 0) {
		snprintf(why, whylen, "pipe: %s", strerror(errno));
		return USERNS_BROKEN;
	}
	fflush(NULL);
	pid_t k = fork();
	if (k < 0) {
		snprintf(why, whylen, "cannot start the namespace's first process: %s", strerror(errno));
		return USERNS_BROKEN;
	}
	if (k > 0) { /* the user's process */
		close(alive[0]), close(status[1]);
		int32_t v;
		ssize_t n;
		while ((n = read(status[0], &v, sizeof v)) < 0 && errno == EINTR)
			;
		if (n == (ssize_t)sizeof v)
			exit_as(v);
		int st = 0; /* the keeper died before the supervisor ended: the kernel ended it all */
		while (waitpid(k, &st, 0) < 0 && errno == EINTR)
			;
		exit_as(st);
	}
	close(alive[1]), close(status[0]);
	if (die_with_parent(alive[0]) != 0)
		_exit(1);
	/* our mounts stay ours; /proc shows this namespace's ids */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) != 0 ||
	    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0) {
		snprintf(why, whylen, "cannot mount /proc in the user's namespace: %s", strerror(errno));
		return USERNS_BROKEN; /* the caller refuses; its status reaches the user's process as ours would */
	}
	pid_t s = fork();
	if (s < 0) {
		snprintf(why, whylen, "cannot start the supervisor in the namespace: %s", strerror(errno));
		return USERNS_BROKEN;
	}
	if (s > 0)
		keeper(s, status[1]);
	/* the supervisor: dies with the keeper as everything in the namespace does */
	close(status[1]), close(alive[0]);
	return 0;
}

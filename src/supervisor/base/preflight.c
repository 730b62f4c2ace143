/* preflight.c -- what the system must allow, tried before anything starts (preflight.h). */
#include "preflight.h"
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "prosper/internal/uffd_abi.h"

/* The file name names as execvp finds it, into out: 0, or -1 if none is found. */
static int find_program(const char *name, char *out, size_t cap)
{
	if (strchr(name, '/'))
		return snprintf(out, cap, "%s", name) < (int)cap ? 0 : -1;
	const char *path = getenv("PATH");
	for (const char *d = path ? path : "/usr/local/bin:/usr/bin:/bin"; *d;) {
		size_t n = strcspn(d, ":");
		if (snprintf(out, cap, "%.*s%s%s", (int)n, d, n ? "/" : "", name) < (int)cap && access(out, X_OK) == 0)
			return 0;
		d += n + (d[n] == ':');
	}
	return -1;
}

enum refusal preflight_program(const char *name, char *why, size_t whylen)
{
	struct stat st;
	char path[4096];
	if (!name || geteuid() == 0 || find_program(name, path, sizeof path) != 0 || stat(path, &st) != 0 ||
	    !S_ISREG(st.st_mode))
		return 0; /* root keeps its privilege under ptrace; a missing program is the launch's to say */
	if ((st.st_mode & S_ISUID && st.st_uid != geteuid()) || (st.st_mode & S_ISGID && st.st_gid != getegid())) {
		snprintf(why, whylen, "%s is a set-%s-ID program: traced by an ordinary user it runs without that "
			 "privilege, unlike natively; run it as its owner (or root)", path, st.st_mode & S_ISUID ? "user" : "group");
		return REFUSE_SETUID_PROGRAM;
	}
	return 0;
}

static int yama_scope(void)
{
	int fd = open("/proc/sys/kernel/yama/ptrace_scope", O_RDONLY | O_CLOEXEC);
	char b[8] = "";
	ssize_t n = fd >= 0 ? read(fd, b, sizeof b - 1) : -1;
	if (fd >= 0)
		close(fd);
	return n > 0 ? b[0] - '0' : -1;
}

/* A child of ours, seized as the launch will seize the program: 0, or the errno that forbade it. */
static int try_seize(void)
{
	pid_t c = fork();
	if (c < 0)
		return errno;
	if (c == 0) {
		pause();
		_exit(0);
	}
	int e = ptrace(PTRACE_SEIZE, c, 0, 0) == 0 ? 0 : errno;
	kill(c, SIGKILL);
	while (waitpid(c, NULL, __WALL) < 0 && errno == EINTR)
		;
	return e;
}

enum refusal preflight_tracing(char *why, size_t whylen)
{
	int e = try_seize();
	if (e) {
		int yama = yama_scope();
		snprintf(why, whylen, "this user may not trace its own child processes (ptrace: %s)%s", strerror(e),
			 yama >= 2 ? yama == 3 ? "; kernel.yama.ptrace_scope is 3, which forbids it until reboot"
					       : "; kernel.yama.ptrace_scope is 2: only root may"
				   : "; a seccomp filter or security module forbids it");
		return REFUSE_PTRACE_DENIED;
	}
	int flags = O_CLOEXEC | O_NONBLOCK;
	int uffd = (int)syscall(SYS_userfaultfd, flags);
	if (uffd < 0 && (flags = prosper_uffd_retry_flags(flags, errno)) >= 0)
		uffd = (int)syscall(SYS_userfaultfd, flags); /* as the shim will */
	if (uffd < 0) {
		e = errno;
		if (e == EPERM)
			snprintf(why, whylen, "userfaultfd is denied to this user, even for faults of user mode only (a "
				 "seccomp filter or security module?): run as root, or set vm.unprivileged_userfaultfd to 1");
		else
			snprintf(why, whylen, "userfaultfd is not available: %s", strerror(e));
		return REFUSE_NO_USERFAULTFD;
	}
	struct uffdio_api api = { .api = UFFD_API, .features = PROSPER_UFFD_TRACK_FEATURES };
	int ok = ioctl(uffd, UFFDIO_API, &api) == 0;
	e = errno;
	close(uffd);
	if (!ok) {
		snprintf(why, whylen, "this kernel's userfaultfd cannot track writes asynchronously (UFFDIO_API: %s; Linux "
			 "6.7 or later is needed)", strerror(e));
		return REFUSE_NO_USERFAULTFD;
	}
	return 0;
}

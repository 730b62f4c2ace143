/* shim.c -- LD_PRELOADed into a supervised program (docs/architecture.md).  It stays tiny:
 *   - at start (of the first image and of every image the program execs), create a userfaultfd
 *     with asynchronous write-protection and hand it to the supervisor with the hello message
 *     (include/prosper/internal/shim_proto.h); take what the supervisor added out of the
 *     environment, so the program and its children see the user's own;
 *   - in resume mode, then stop itself (SIGSTOP): the supervisor rebuilds the process around
 *     this stop through the syscall gate below and never lets the constructor return;
 *   - record the signal handlers the program installs, in its own .bss, so that a checkpoint
 *     carries them;
 *   - note which interval timers the program arms (setitimer, alarm) and count its limit changes
 *     (setrlimit, prlimit), so that a checkpoint reads them and a resume sets them again;
 *   - after a resume, let bind() take back a unix socket name the killed run bound after the cut
 *     (the program, resumed from before its bind, binds it again: see bind() below);
 *   - offer the NVM request gate that libprosper-nvm calls (include/prosper/internal/shim_proto.h).
 * Raw system calls where libc state could be in flux; no allocation; no stack protector (the
 * canary lives in the TCB, which a restore overwrites). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <unistd.h>
#include "prosper/internal/uffd_abi.h"
#include "prosper/internal/shim_proto.h"

extern char prosper_shim_gate[] __attribute__((visibility("hidden")));
__asm__(".text\n"
	".globl prosper_shim_gate\n"
	".hidden prosper_shim_gate\n"
	".type prosper_shim_gate, @function\n"
	"prosper_shim_gate:\n"
	"\tsyscall\n"
	"\tint3\n"
	".size prosper_shim_gate, 3\n");

/* The NVM request gate (include/prosper/internal/shim_proto.h): exported, libprosper-nvm refers to it weakly. */
__asm__(".text\n"
	".globl prosper_shim_nvm_gate\n"
	".type prosper_shim_nvm_gate, @function\n"
	"prosper_shim_nvm_gate:\n"
	"\tint3\n"
	"\tret\n"
	".size prosper_shim_nvm_gate, 2\n");
extern char prosper_shim_nvm_gate[];

/* Where the supervisor writes the pool's path before it makes the program open it (NVM). */
static char prosper_shim_nvm_path[SHIM_NVM_PATH_MAX];

static struct shim_sigtab prosper_shim_sigtab;
static struct shim_pending prosper_shim_pending; /* written by the supervisor only */

static void record_signal(int sig)
{
	struct shim_ksigaction k;
	if (sig < 1 || sig >= SHIM_NSIG || syscall(SYS_rt_sigaction, sig, NULL, &k, 8) != 0)
		return;
	prosper_shim_sigtab.act[sig] = k;
	if (k.handler == (uint64_t)(uintptr_t)SIG_DFL)
		prosper_shim_sigtab.installed &= ~(1ull << (sig - 1));
	else
		prosper_shim_sigtab.installed |= 1ull << (sig - 1);
}

/* Which resume this image is in: every resume writes a new stamp (pending.h). */
static int64_t resume_stamp(void)
{
	return *(volatile const int64_t *)&prosper_shim_pending.resumed_ns;
}

/* The kernel takes a new disposition before the table above records it, and a cut can fall
 * between the two (even at the very return of the system call).  A resume from that cut gives the
 * kernel the table's older disposition back (restore.c), and record_signal would then read that
 * back: the program's handler lost for good, in it and in every child it forks later (they die
 * of a signal they handle).  So the wrappers below note the stamp before the call, and when a
 * resume came in between, they make the same change again, then record it. */
int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	static int (*real)(int, const struct sigaction *, struct sigaction *);
	if (!real)
		real = (int (*)(int, const struct sigaction *, struct sigaction *))dlsym(RTLD_NEXT, "sigaction");
	int64_t seen = resume_stamp();
	int rc = real(sig, act, old);
	for (int64_t now; rc == 0 && act; seen = now) {
		record_signal(sig);
		if ((now = resume_stamp()) == seen)
			break;
		real(sig, act, NULL); /* old already holds what was there before this call */
	}
	return rc;
}

sighandler_t signal(int sig, sighandler_t handler)
{
	static sighandler_t (*real)(int, sighandler_t);
	if (!real)
		real = (sighandler_t(*)(int, sighandler_t))dlsym(RTLD_NEXT, "signal");
	int64_t seen = resume_stamp();
	sighandler_t rc = real(sig, handler);
	for (int64_t now; rc != SIG_ERR; seen = now) {
		record_signal(sig);
		if ((now = resume_stamp()) == seen)
			break;
		real(sig, handler); /* rc already holds what was there before this call */
	}
	return rc;
}

static struct shim_timers prosper_shim_timers;
static struct shim_posix_timers prosper_shim_posix_timers; /* written by the supervisor only */
static struct shim_limits prosper_shim_limits;   /* the supervisor's too, but for the count of changes */
/* where system calls the supervisor injects write what they return (struct shim_hello) */
static uint64_t prosper_shim_scratch[SHIM_SCRATCH_BYTES / 8];

/* The count changes before the limit does and again after: a checkpoint reads the limits again
 * whenever the count moved since it last did, so a cut on either side of the system call records
 * the limits the kernel has then (one count, before only, let a cut just before the call record
 * the old limits as current, and every later cut skip the new ones).  Programs built with
 * _FILE_OFFSET_BITS=64 (python3, for one) call the *64 names: the same functions on x86-64, and
 * missed here they left the record with the limits of the first cut. */
typedef int (*setrlimit_fn)(__rlimit_resource_t, const struct rlimit *);
typedef int (*prlimit_fn)(pid_t, __rlimit_resource_t, const struct rlimit *, struct rlimit *);

static int counted_setrlimit(setrlimit_fn *real, const char *name, __rlimit_resource_t resource,
			     const struct rlimit *rlim)
{
	if (!*real)
		*real = (setrlimit_fn)dlsym(RTLD_NEXT, name);
	prosper_shim_limits.changes++;
	int rc = (*real)(resource, rlim);
	prosper_shim_limits.changes++;
	return rc;
}

static int counted_prlimit(prlimit_fn *real, const char *name, pid_t pid, __rlimit_resource_t resource,
			   const struct rlimit *new, struct rlimit *old)
{
	if (!*real)
		*real = (prlimit_fn)dlsym(RTLD_NEXT, name);
	if (new)
		prosper_shim_limits.changes++;
	int rc = (*real)(pid, resource, new, old);
	if (new)
		prosper_shim_limits.changes++;
	return rc;
}

int setrlimit(__rlimit_resource_t resource, const struct rlimit *rlim)
{
	static setrlimit_fn real;
	return counted_setrlimit(&real, "setrlimit", resource, rlim);
}

/* struct rlimit64 is struct rlimit on x86-64 (both two 64-bit counts) */
int setrlimit64(__rlimit_resource_t resource, const struct rlimit64 *rlim)
{
	static setrlimit_fn real;
	return counted_setrlimit(&real, "setrlimit64", resource, (const struct rlimit *)rlim);
}

int prlimit(pid_t pid, __rlimit_resource_t resource, const struct rlimit *new, struct rlimit *old)
{
	static prlimit_fn real;
	return counted_prlimit(&real, "prlimit", pid, resource, new, old);
}

int prlimit64(pid_t pid, __rlimit_resource_t resource, const struct rlimit64 *new, struct rlimit64 *old)
{
	static prlimit_fn real;
	return counted_prlimit(&real, "prlimit64", pid, resource, (const struct rlimit *)new, (struct rlimit *)old);
}

int setitimer(__itimer_which_t which, const struct itimerval *new, struct itimerval *old)
{
	static int (*real)(__itimer_which_t, const struct itimerval *, struct itimerval *);
	if (!real)
		real = (int (*)(__itimer_which_t, const struct itimerval *, struct itimerval *))dlsym(RTLD_NEXT, "setitimer");
	int rc = real(which, new, old);
	if (rc == 0 && new && (int)which >= 0 && (int)which < 3)
		prosper_shim_timers.used |= 1ull << (int)which;
	return rc;
}

unsigned int alarm(unsigned int seconds)
{
	static unsigned int (*real)(unsigned int);
	if (!real)
		real = (unsigned int (*)(unsigned int))dlsym(RTLD_NEXT, "alarm");
	prosper_shim_timers.used |= 1ull << ITIMER_REAL;
	return real(seconds);
}

static void send_hello(int sock, int fd, const struct shim_hello *h)
{
	struct iovec iov = { (void *)h, sizeof *h };
	union { struct cmsghdr h; char buf[CMSG_SPACE(sizeof(int))]; } u;
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (fd >= 0) {
		memset(&u, 0, sizeof u);
		msg.msg_control = u.buf;
		msg.msg_controllen = sizeof u.buf;
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof fd);
	}
	while (sendmsg(sock, &msg, 0) < 0 && errno == EINTR)
		;
}

/* A unix socket name is a file, and files are not rolled back: a run killed after it bound a
 * name leaves the socket file behind, and a resume from a cut before that bind makes the program
 * bind it again, to fail with EADDRINUSE where the run that was not killed went on.  So a bind
 * that fails so retries once after removing the name, only when both of these hold -- which
 * makes it the killed run's, unless another program bound the same name in that window:
 *   - this image was resumed (the resume wrote resumed_ns into the pending record);
 *   - the name is a socket file whose inode changed after this image's last bind returned (or
 *     its start), and before the resume began: made between the cut and the resume.
 * The mark is read on the coarse clock file times are taken from, after bind returns, so a name
 * this image bound itself is never newer than it.  Not covered: a program that binds through a
 * raw system call, or a statically linked one (no shim). */
static int64_t prosper_shim_bind_mark;

static int64_t coarse_realtime_ns(void)
{
	struct timespec t;
	if (syscall(SYS_clock_gettime, CLOCK_REALTIME_COARSE, &t) != 0)
		return 0;
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int left_by_the_killed_run(const struct sockaddr *addr, socklen_t len)
{
	int64_t resumed = prosper_shim_pending.resumed_ns;
	const size_t at = offsetof(struct sockaddr_un, sun_path);
	if (!resumed || !addr || addr->sa_family != AF_UNIX || len <= at)
		return 0;
	const struct sockaddr_un *u = (const struct sockaddr_un *)(const void *)addr;
	char path[sizeof u->sun_path + 1];
	size_t n = (size_t)len - at;
	if (n > sizeof u->sun_path)
		n = sizeof u->sun_path;
	if (u->sun_path[0] == 0) /* an abstract name: no file */
		return 0;
	memcpy(path, u->sun_path, n);
	path[n] = 0;
	struct stat st;
	if (syscall(SYS_newfstatat, AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISSOCK(st.st_mode))
		return 0;
	int64_t changed = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
	if (changed <= prosper_shim_bind_mark || changed >= resumed)
		return 0;
	return syscall(SYS_unlinkat, AT_FDCWD, path, 0) == 0;
}

int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	static int (*real)(int, const struct sockaddr *, socklen_t);
	if (!real)
		real = (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "bind");
	int rc = real(fd, addr, len);
	if (rc != 0 && errno == EADDRINUSE) {
		int saved = errno;
		if (left_by_the_killed_run(addr, len))
			rc = real(fd, addr, len);
		else
			errno = saved;
	}
	int e = errno;
	prosper_shim_bind_mark = coarse_realtime_ns();
	errno = e;
	return rc;
}

/* The supervisor's abstract unix socket, "@NAME" in PROSPER_SHIM_SOCK: every image of the
 * program (the first and each one it execs) says hello on a connection of its own. */
static int connect_supervisor(const char *name)
{
	if (name[0] != '@' || strlen(name) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return -1;
	int sock = (int)syscall(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sock < 0)
		return -1;
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	size_t n = strlen(name);
	memcpy(a.sun_path + 1, name + 1, n - 1); /* sun_path[0] = 0: the abstract namespace */
	if (syscall(SYS_connect, sock, &a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n)) != 0) {
		close(sock);
		return -1;
	}
	return sock;
}

/* Take what the supervisor added out of the program's environment, keeping the user's own
 * values: the shim first in LD_PRELOAD, glibc.pthread.rseq=0 last in GLIBC_TUNABLES (launch.h). */
static void strip_environment(void)
{
	const char *pre = getenv("LD_PRELOAD");
	if (pre) {
		const char *colon = strchr(pre, ':');
		if (colon && colon[1])
			setenv("LD_PRELOAD", colon + 1, 1);
		else
			unsetenv("LD_PRELOAD");
	}
	const char *tun = getenv("GLIBC_TUNABLES");
	static const char ours[] = "glibc.pthread.rseq=0";
	size_t n = tun ? strlen(tun) : 0, k = sizeof ours - 1;
	if (tun && n >= k && !strcmp(tun + n - k, ours)) {
		if (n == k) {
			unsetenv("GLIBC_TUNABLES");
		} else if (tun[n - k - 1] == ':' && n - k - 1 < 1024) {
			char keep[1024];
			memcpy(keep, tun, n - k - 1);
			keep[n - k - 1] = 0;
			setenv("GLIBC_TUNABLES", keep, 1);
		}
	}
	unsetenv("PROSPER_SHIM_SOCK");
	unsetenv("PROSPER_SHIM_RESUME");
}

__attribute__((constructor)) static void prosper_shim_init(void)
{
	const char *s = getenv("PROSPER_SHIM_SOCK");
	if (!s)
		return;
	prosper_shim_bind_mark = coarse_realtime_ns();
	int sock = connect_supervisor(s);
	struct shim_hello h = { .status = 'U', .gate = (uint64_t)(uintptr_t)prosper_shim_gate,
				.sigtab = (uint64_t)(uintptr_t)&prosper_shim_sigtab,
				.nvm_gate = (uint64_t)(uintptr_t)prosper_shim_nvm_gate,
				.nvm_path = (uint64_t)(uintptr_t)prosper_shim_nvm_path,
				.timers = (uint64_t)(uintptr_t)&prosper_shim_timers,
				.pending = (uint64_t)(uintptr_t)&prosper_shim_pending,
				.limits = (uint64_t)(uintptr_t)&prosper_shim_limits,
				.posix_timers = (uint64_t)(uintptr_t)&prosper_shim_posix_timers,
				.scratch = (uint64_t)(uintptr_t)prosper_shim_scratch };
	h.resume = getenv("PROSPER_SHIM_RESUME") != NULL;
	strip_environment(); /* what the program and its children see is what the user gave */
	/* Dispositions inherited through exec (an ignored signal stays ignored) are part of the
	 * program's state before it installs any handler of its own. */
	for (int sig = 1; sig < SHIM_NSIG; sig++)
		record_signal(sig);
	/* and so are interval timers an exec kept running */
	for (int w = 0; w < 3; w++) {
		struct itimerval t;
		if (syscall(SYS_getitimer, w, &t) == 0 && (t.it_value.tv_sec || t.it_value.tv_usec))
			prosper_shim_timers.used |= 1ull << w;
	}
	if (sock < 0)
		return;
	int flags = O_CLOEXEC | O_NONBLOCK;
	int uffd = (int)syscall(SYS_userfaultfd, flags);
	if (uffd < 0 && (flags = prosper_uffd_retry_flags(flags, errno)) >= 0 &&
	    (uffd = (int)syscall(SYS_userfaultfd, flags)) >= 0)
		h.uffd_user_mode_only = 1;
	if (uffd >= 0) {
		struct uffdio_api api = { .api = UFFD_API, .features = PROSPER_UFFD_TRACK_FEATURES };
		h.status = ioctl(uffd, UFFDIO_API, &api) == 0 ? 'K' : 'A';
	}
	send_hello(sock, h.status == 'K' ? uffd : -1, &h);
	if (uffd >= 0)
		close(uffd);
	close(sock);
	if (h.resume)
		syscall(SYS_kill, syscall(SYS_getpid), SIGSTOP); /* the supervisor takes over from here */
}

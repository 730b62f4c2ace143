/* hello_channel.c -- the channel every image of the program says hello on (hello_channel.h). */
#include "hello_channel.h"
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "stopclock.h"

int hello_channel_open(struct hello_channel *ch)
{
	ch->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (ch->fd < 0)
		return -errno;
	uint64_t nonce = 0;
	if (getrandom(&nonce, sizeof nonce, 0) != sizeof nonce)
		nonce = (uint64_t)getpid() * 0x9E3779B97F4A7C15ull ^ (uint64_t)time(NULL);
	snprintf(ch->name, sizeof ch->name, "@prosper-%d-%016llx", (int)getpid(), (unsigned long long)nonce);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	size_t n = strlen(ch->name);
	memcpy(a.sun_path + 1, ch->name + 1, n - 1);
	if (bind(ch->fd, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n)) != 0 ||
	    listen(ch->fd, 16) != 0) {
		int e = errno;
		close(ch->fd);
		ch->fd = -1;
		return -e;
	}
	snprintf(ch->env, sizeof ch->env, "PROSPER_SHIM_SOCK=%s", ch->name);
	return 0;
}

/* Process pid at the seccomp stop of a call the filter sends (the shim's own sendmsg of its
 * hello, with output held: outhold.h): let it run as it is.  Other stops are left to the caller. */
static void pass_filter_stop(pid_t pid)
{
	siginfo_t si = { 0 };
	int st;
	if (waitid(P_PID, (id_t)pid, &si, WSTOPPED | WNOHANG | WNOWAIT | __WALL) == 0 && si.si_pid == pid &&
	    si.si_code == CLD_TRAPPED && si.si_status == (SIGTRAP | (PTRACE_EVENT_SECCOMP << 8)) &&
	    waitpid(pid, &st, __WALL | WNOHANG) == pid)
		ptrace(PTRACE_CONT, pid, 0, 0);
}

/* Take one connection's hello of process pid; 0 with *h and *uffd, or negative. */
static int read_hello(int conn, pid_t pid, struct shim_hello *h, int *uffd)
{
	struct pollfd p = { conn, POLLIN, 0 };
	int ready = 0;
	for (int waited = 0; !ready && waited < 2000; waited += 5) {
		ready = poll(&p, 1, 5) > 0;
		if (!ready)
			pass_filter_stop(pid);
	}
	if (!ready)
		return -ETIMEDOUT;
	struct iovec iov = { h, sizeof *h };
	union { struct cmsghdr c; char buf[CMSG_SPACE(sizeof(int))]; } u;
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf };
	if (recvmsg(conn, &msg, MSG_CMSG_CLOEXEC | MSG_WAITALL) != (ssize_t)sizeof *h)
		return -EPIPE;
	*uffd = -1;
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	if (cm && cm->cmsg_type == SCM_RIGHTS)
		memcpy(uffd, CMSG_DATA(cm), sizeof *uffd);
	return 0;
}

/* A connection from process pid, if one is waiting (others are strangers: closed).  1 and the
 * hello, 0 when none is waiting, negative on a broken hello. */
static int accept_hello(const struct hello_channel *ch, pid_t pid, struct shim_hello *h, int *uffd)
{
	for (;;) {
		int conn = accept4(ch->fd, NULL, NULL, SOCK_CLOEXEC);
		if (conn < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -errno;
		struct ucred cred;
		socklen_t len = sizeof cred;
		if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.pid != pid) {
			close(conn);
			continue;
		}
		int rc = read_hello(conn, pid, h, uffd);
		close(conn);
		return rc ? rc : 1;
	}
}

int hello_wait(const struct hello_channel *ch, pid_t pid, struct shim_hello *h, int *uffd)
{
	double deadline = stopclock_now() + 10;
	*uffd = -1;
	for (;;) {
		int rc = accept_hello(ch, pid, h, uffd);
		if (rc)
			return rc < 0 ? rc : h->status == 'K' ? 0 : h->status == 'U' ? -ENOSYS : -EPROTO;
		/* Look at the process's next stop without taking it: the shim's own SIGSTOP (resume)
		 * follows its hello and belongs to the caller, an exit to the loop. */
		siginfo_t si = { 0 };
		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WSTOPPED | WNOHANG | WNOWAIT | __WALL) != 0)
			return -ECHILD;
		if (si.si_pid == pid) {
			if (si.si_code != CLD_TRAPPED && si.si_code != CLD_STOPPED)
				return -ESRCH;
			if (si.si_status == SIGSTOP && (rc = accept_hello(ch, pid, h, uffd)) != 0)
				return rc < 0 ? rc : h->status == 'K' ? 0 : h->status == 'U' ? -ENOSYS : -EPROTO;
			int st;
			if (waitpid(pid, &st, __WALL | WNOHANG) == pid && WIFSTOPPED(st)) {
				int event = st >> 16;
				ptrace(PTRACE_CONT, pid, 0, (void *)(long)(event ? 0 : WSTOPSIG(st)));
				if (event == PTRACE_EVENT_EXEC)
					return -ENOEXEC; /* a new image before any hello: the shim is not in it */
			}
			continue;
		}
		if (stopclock_now() > deadline)
			return -ETIMEDOUT;
		struct pollfd p = { ch->fd, POLLIN, 0 };
		poll(&p, 1, 2);
	}
}

/* shim.c -- LD_PRELOADed into a supervised program (DESIGN D3).  Run mode: create a
 * userfaultfd with asynchronous write-protection, hand it to the supervisor over the inherited
 * unix socket named by PROSPER_SHIM_SOCK, close every trace of itself (the socket, its own uffd
 * copy, the environment variables), and get out of the way.  Raw system calls only where libc
 * state could be in flux; no allocation.  A failure is reported to the supervisor as a
 * one-byte message instead of an fd, so it can refuse with a reason. */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "../track/uffd_abi.h"

static void send_fd(int sock, int fd, char status)
{
	char byte = status;
	struct iovec iov = { &byte, 1 };
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

__attribute__((constructor)) static void prosper_shim_init(void)
{
	const char *s = getenv("PROSPER_SHIM_SOCK");
	if (!s)
		return;
	int sock = atoi(s);
	unsetenv("PROSPER_SHIM_SOCK");
	unsetenv("LD_PRELOAD"); /* children of the program are not supervised */
	int uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	char status = 'U';
	if (uffd >= 0) {
		struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED };
		if (ioctl(uffd, UFFDIO_API, &api) == 0)
			status = 'K';
		else
			status = 'A';
	}
	send_fd(sock, status == 'K' ? uffd : -1, status);
	if (uffd >= 0)
		close(uffd);
	close(sock);
}

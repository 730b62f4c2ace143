/* sockdiag.c -- a dump of this network namespace's sockets (sockdiag.h). */
#include "sockdiag.h"
#include <errno.h>
#include <linux/sock_diag.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

int sock_diag_dump(const void *req, size_t len, int (*each)(const struct nlmsghdr *h, void *ctx), void *ctx)
{
	int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (nl < 0)
		return -errno;
	int rc = send(nl, req, len, 0) == (ssize_t)len ? 0 : -errno, done = 0;
	static _Thread_local uint8_t buf[32768];
	while (!rc && !done) {
		ssize_t got = recv(nl, buf, sizeof buf, 0);
		if (got <= 0) {
			rc = got < 0 ? -errno : -EIO;
			break;
		}
		for (struct nlmsghdr *h = (void *)buf; NLMSG_OK(h, (size_t)got) && !rc; h = NLMSG_NEXT(h, got)) {
			if (h->nlmsg_type == NLMSG_DONE)
				done = 1;
			else if (h->nlmsg_type == NLMSG_ERROR)
				rc = ((const struct nlmsgerr *)NLMSG_DATA(h))->error ?: -EPROTO; /* e.g. -ENOENT: none */
			else
				rc = each(h, ctx);
			if (done)
				break;
		}
		/* a request of one socket is answered by one message, with no end of dump */
		done |= !(((const struct nlmsghdr *)req)->nlmsg_flags & NLM_F_DUMP);
	}
	close(nl);
	return rc;
}

/* tcppair.c -- a connected pair of TCP sockets made in a stopped process (tcppair.h). */
#include "tcppair.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include "inject.h"

static long sys(struct inject *in, long nr, long a1, long a2, long a3, long a4)
{
	return inject_syscall(in, nr, a1, a2, a3, a4, 0, 0);
}

int tcp_loopback_pair(struct inject *in, uint64_t scratch, int family, long fds[2])
{
	struct sockaddr_storage a;
	memset(&a, 0, sizeof a);
	socklen_t len;
	if (family == AF_INET) {
		struct sockaddr_in *v4 = (void *)&a;
		v4->sin_family = AF_INET, v4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof *v4;
	} else {
		struct sockaddr_in6 *v6 = (void *)&a;
		v6->sin6_family = AF_INET6, v6->sin6_addr = in6addr_loopback;
		len = sizeof *v6;
	}
	long lsn = sys(in, SYS_socket, family, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP, 0);
	long con = sys(in, SYS_socket, family, SOCK_STREAM, IPPROTO_TCP, 0);
	long acc = -1;
	socklen_t alen = sizeof a;
	/* bound to port 0, its port read back (getsockname into scratch, the length after it) and
	 * connected to: over loopback the handshake is done when connect returns */
	int ok = lsn >= 0 && con >= 0 && inject_write(in, scratch, &a, len) == 0 &&
		 sys(in, SYS_bind, lsn, (long)scratch, len, 0) == 0 && sys(in, SYS_listen, lsn, 1, 0, 0) == 0 &&
		 inject_write(in, scratch + sizeof a, &alen, sizeof alen) == 0 &&
		 sys(in, SYS_getsockname, lsn, (long)scratch, (long)(scratch + sizeof a), 0) == 0 &&
		 sys(in, SYS_connect, con, (long)scratch, len, 0) == 0 && (acc = sys(in, SYS_accept4, lsn, 0, 0, 0)) >= 0;
	if (lsn >= 0)
		sys(in, SYS_close, lsn, 0, 0, 0);
	if (!ok) {
		if (con >= 0)
			sys(in, SYS_close, con, 0, 0, 0);
		return -1;
	}
	fds[0] = con, fds[1] = acc;
	return 0;
}

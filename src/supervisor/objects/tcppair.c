/* tcppair.c -- TCP connections over loopback (tcppair.h). */
#include "tcppair.h"
#include <arpa/inet.h>
#include <errno.h>
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/inet_diag.h>
#include <linux/sock_diag.h>
#include <stdlib.h>
#include "inject.h"
#include "procfs.h"
#include "sockdiag.h"

#define TCP_STATE_ESTABLISHED 1
#define TCP_STATE_CLOSE_WAIT 8

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

/* One reading: 0 and its figures, or -1. */
static int read_once(int sock, struct tcp_stream *st, struct tcp_info *ti, int *outq)
{
	socklen_t n = sizeof *ti;
	int inq = -1;
	memset(ti, 0, sizeof *ti);
	if (ioctl(sock, SIOCOUTQ, outq) != 0 || getsockopt(sock, IPPROTO_TCP, TCP_INFO, ti, &n) != 0 ||
	    n < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof ti->tcpi_bytes_received ||
	    (ti->tcpi_state != TCP_STATE_ESTABLISHED && ti->tcpi_state != TCP_STATE_CLOSE_WAIT) ||
	    ioctl(sock, SIOCINQ, &inq) != 0 || inq < 0 || inq > TCP_UNREAD_MAX)
		return -1;
	ssize_t got = inq ? recv(sock, st->bytes, (size_t)inq, MSG_PEEK | MSG_DONTWAIT) : 0;
	if (got != inq)
		return -1; /* urgent data stops a peek short */
	st->unread = (uint32_t)inq;
	st->finished = ti->tcpi_state == TCP_STATE_CLOSE_WAIT;
	st->written = ti->tcpi_bytes_acked + (uint64_t)*outq;
	st->received = ti->tcpi_bytes_received;
	return 0;
}

int tcp_stream_read(int sock, struct tcp_stream *st)
{
	int peek_off = -1;
	socklen_t n = sizeof peek_off;
	if (getsockopt(sock, SOL_SOCKET, SO_PEEK_OFF, &peek_off, &n) == 0 && peek_off >= 0)
		return 0; /* a peek would move the program's offset */
	/* the kernel goes on delivering and acknowledging while the program is stopped: a reading
	 * is taken when the next one agrees with it */
	for (int tries = 0; tries < 8; tries++) {
		struct tcp_info a, b;
		int qa, qb;
		uint32_t unread;
		if (read_once(sock, st, &a, &qa) != 0)
			return 0;
		unread = st->unread;
		if (read_once(sock, st, &b, &qb) != 0)
			return 0;
		if (qa == qb && a.tcpi_bytes_acked == b.tcpi_bytes_acked && a.tcpi_bytes_received == b.tcpi_bytes_received &&
		    a.tcpi_state == b.tcpi_state && unread == st->unread)
			return 1;
	}
	return 0;
}

/* The inode of the TCP socket whose local end is (local) and remote end (remote) -- the peer of
 * a socket of the program's, looked up by its addresses -- into *ino (0: it has no file yet, it
 * waits in a listener's accept queue).  0, -ENOENT (not a socket of this machine's), or a
 * negative errno. */
static int take_inode(const struct nlmsghdr *h, void *arg)
{
	*(uint64_t *)arg = ((const struct inet_diag_msg *)NLMSG_DATA(h))->idiag_inode;
	return 0;
}

static int peer_inode(const struct sockaddr_storage *local, const struct sockaddr_storage *remote, uint64_t *ino)
{
	struct {
		struct nlmsghdr h;
		struct inet_diag_req_v2 r;
	} req = { .h = { .nlmsg_len = sizeof req, .nlmsg_type = SOCK_DIAG_BY_FAMILY, .nlmsg_flags = NLM_F_REQUEST },
		  .r = { .sdiag_family = (uint8_t)local->ss_family, .sdiag_protocol = IPPROTO_TCP, .idiag_states = ~0u,
			 .id = { .idiag_cookie = { INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE } } } };
	if (local->ss_family == AF_INET) {
		const struct sockaddr_in *l = (const void *)local, *r = (const void *)remote;
		req.r.id.idiag_sport = l->sin_port, req.r.id.idiag_dport = r->sin_port;
		memcpy(req.r.id.idiag_src, &l->sin_addr, 4), memcpy(req.r.id.idiag_dst, &r->sin_addr, 4);
	} else {
		const struct sockaddr_in6 *l = (const void *)local, *r = (const void *)remote;
		req.r.id.idiag_sport = l->sin6_port, req.r.id.idiag_dport = r->sin6_port;
		memcpy(req.r.id.idiag_src, &l->sin6_addr, 16), memcpy(req.r.id.idiag_dst, &r->sin6_addr, 16);
	}
	*ino = ~0ull;
	int rc = sock_diag_dump(&req, sizeof req, take_inode, ino);
	return rc ? rc : *ino == ~0ull ? -ENOENT : 0;
}

/* Send what Nagle's algorithm holds back on the program's socket s (a copy; not corked, no
 * TCP_NODELAY of its own): setting TCP_NODELAY pushes it, clearing it leaves the socket as it was. */
static void push_pending(int s)
{
	int nodelay = 1, cork = 1, on = 1, off = 0;
	socklen_t n = sizeof nodelay, c = sizeof cork;
	if (getsockopt(s, IPPROTO_TCP, TCP_NODELAY, &nodelay, &n) == 0 && !nodelay &&
	    getsockopt(s, IPPROTO_TCP, TCP_CORK, &cork, &c) == 0 && !cork &&
	    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on) == 0)
		setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &off, sizeof off);
}

/* One held socket s: 1 if it is an established TCP connection to a socket not accepted yet; else
 * 0, *peer_ino its peer's inode when the peer is a socket of this machine's (else 0).  Or a
 * negative errno. */
static int prepare_one(int s, uint64_t *peer_ino)
{
	*peer_ino = 0;
	int domain = 0, protocol = 0;
	socklen_t n = sizeof domain, m = sizeof protocol;
	struct tcp_info ti;
	socklen_t tn = sizeof ti;
	if (getsockopt(s, SOL_SOCKET, SO_DOMAIN, &domain, &n) != 0 || (domain != AF_INET && domain != AF_INET6) ||
	    getsockopt(s, SOL_SOCKET, SO_PROTOCOL, &protocol, &m) != 0 || protocol != IPPROTO_TCP ||
	    getsockopt(s, IPPROTO_TCP, TCP_INFO, &ti, &tn) != 0 || ti.tcpi_state != TCP_STATE_ESTABLISHED)
		return 0;
	struct sockaddr_storage local, remote;
	socklen_t ll = sizeof local, rl = sizeof remote;
	uint64_t ino;
	if (getsockname(s, (struct sockaddr *)&local, &ll) != 0 || getpeername(s, (struct sockaddr *)&remote, &rl) != 0)
		return 0;
	int rc = peer_inode(&remote, &local, &ino); /* the peer's local end is our remote one */
	if (rc == 0 && ino == 0)
		return 1;
	if (rc == 0)
		*peer_ino = ino;
	return rc == -ENOENT ? 0 : rc;
}

int tcp_peer_of(int s, uint64_t *peer_ino)
{
	*peer_ino = 0;
	int domain = 0, protocol = 0;
	socklen_t n = sizeof domain, m = sizeof protocol;
	struct sockaddr_storage local, remote;
	socklen_t ll = sizeof local, rl = sizeof remote;
	if (getsockopt(s, SOL_SOCKET, SO_DOMAIN, &domain, &n) != 0 || (domain != AF_INET && domain != AF_INET6) ||
	    getsockopt(s, SOL_SOCKET, SO_PROTOCOL, &protocol, &m) != 0 || protocol != IPPROTO_TCP)
		return -EPROTONOSUPPORT;
	if (getsockname(s, (struct sockaddr *)&local, &ll) != 0 || getpeername(s, (struct sockaddr *)&remote, &rl) != 0)
		return -ENOTCONN;
	return peer_inode(&remote, &local, peer_ino); /* the peer's local end is our remote one */
}

int tcp_cut_prepare(const struct tcp_held *held, int n, int *kept)
{
	int rc = 0;
	for (int i = 0; i < n && !rc; i++) {
		int s = proc_fd_copy(held[i].pid, held[i].fd);
		uint64_t peer = 0;
		kept[i] = 0;
		if (s >= 0) {
			rc = prepare_one(s, &peer);
			for (int k = 0; !rc && peer && k < n && !kept[i]; k++)
				kept[i] = held[k].ino == peer;
			if (kept[i])
				push_pending(s);
			close(s);
		}
	}
	return rc;
}

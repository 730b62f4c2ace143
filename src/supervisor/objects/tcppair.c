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

/* An established TCP socket's addresses as inet_diag names them. */
struct tuple {
	uint8_t family;
	uint16_t sport, dport; /* network order */
	uint32_t src[4], dst[4];
};

static int same_ends(const struct tuple *a, const struct tuple *b) /* a's peer is b */
{
	return a->family == b->family && a->sport == b->dport && a->dport == b->sport && !memcmp(a->src, b->dst, sizeof a->src) &&
	       !memcmp(a->dst, b->src, sizeof a->dst);
}

static const struct tcp_held *held_ino(const struct tcp_held *held, int n, uint64_t ino)
{
	for (int i = 0; i < n; i++)
		if (held[i].ino == ino)
			return &held[i];
	return NULL;
}

struct tuples {
	struct tuple *v;
	const struct tcp_held **who; /* the held ones': their holder */
	int n, cap;
};

static int add(struct tuples *l, const struct inet_diag_msg *m, const struct tcp_held *who)
{
	if (l->n == l->cap) {
		int cap = l->cap ? 2 * l->cap : 16;
		struct tuple *more = realloc(l->v, (size_t)cap * sizeof *more);
		const struct tcp_held **whos = more ? realloc(l->who, (size_t)cap * sizeof *whos) : NULL;
		if (more)
			l->v = more;
		if (!whos)
			return -ENOMEM;
		l->who = whos, l->cap = cap;
	}
	l->who[l->n] = who;
	struct tuple *t = &l->v[l->n++];
	t->family = m->idiag_family, t->sport = m->id.idiag_sport, t->dport = m->id.idiag_dport;
	memcpy(t->src, m->id.idiag_src, sizeof t->src), memcpy(t->dst, m->id.idiag_dst, sizeof t->dst);
	return 0;
}

struct dump_ctx {
	const struct tcp_held *held;
	int n;
	struct tuples *mine, *queued;
};

/* One established TCP socket of the dump: a held one into mine, one without a file into queued. */
static int take(const struct nlmsghdr *h, void *arg)
{
	struct dump_ctx *c = arg;
	const struct inet_diag_msg *m = NLMSG_DATA(h);
	if (!m->idiag_inode)
		return add(c->queued, m, NULL); /* in an accept queue: established, no file yet */
	const struct tcp_held *who = held_ino(c->held, c->n, m->idiag_inode);
	return who ? add(c->mine, m, who) : 0;
}

/* The established TCP sockets of one family into mine and queued.  0 or a negative errno. */
static int dump_established(int family, const struct tcp_held *held, int n, struct tuples *mine, struct tuples *queued)
{
	struct {
		struct nlmsghdr h;
		struct inet_diag_req_v2 r;
	} req = { .h = { .nlmsg_len = sizeof req, .nlmsg_type = SOCK_DIAG_BY_FAMILY, .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
		  .r = { .sdiag_family = (uint8_t)family, .sdiag_protocol = IPPROTO_TCP,
			 .idiag_states = 1u << TCP_STATE_ESTABLISHED } };
	struct dump_ctx c = { held, n, mine, queued };
	return sock_diag_dump(&req, sizeof req, take, &c);
}

/* Send what Nagle's algorithm holds back on the socket fd of pid (not corked, no TCP_NODELAY of
 * its own): setting TCP_NODELAY pushes it, clearing it leaves the socket as it was. */
static void push_pending(pid_t pid, int fd)
{
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	int s = pidfd >= 0 ? (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0) : -1;
	int nodelay = 1, cork = 1, on = 1, off = 0;
	socklen_t n = sizeof nodelay, c = sizeof cork;
	if (s >= 0 && getsockopt(s, IPPROTO_TCP, TCP_NODELAY, &nodelay, &n) == 0 && !nodelay &&
	    getsockopt(s, IPPROTO_TCP, TCP_CORK, &cork, &c) == 0 && !cork &&
	    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on) == 0)
		setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &off, sizeof off);
	if (s >= 0)
		close(s);
	if (pidfd >= 0)
		close(pidfd);
}

int tcp_cut_prepare(const struct tcp_held *held, int n)
{
	struct tuples mine = { 0 }, queued = { 0 };
	int rc = 0;
	for (int f = 0; f < 2 && !rc; f++)
		rc = dump_established(f ? AF_INET6 : AF_INET, held, n, &mine, &queued);
	for (int i = 0; !rc && i < mine.n; i++)
		for (int k = 0; k < queued.n && !rc; k++)
			rc = same_ends(&mine.v[i], &queued.v[k]);
	for (int i = 0; !rc && i < mine.n; i++)
		push_pending(mine.who[i]->pid, mine.who[i]->fd);
	free(mine.v), free(mine.who), free(queued.v), free(queued.who);
	return rc;
}

/* fd_inet.c -- a TCP or UDP socket of IPv4 or IPv6 the program holds (fdkind.h): a server's
 * listening socket, a bound UDP socket, a connection.
 *
 * Read at each cut from a copy of the socket (pidfd_getfd: getsockopt, getsockname, getpeername,
 * TCP_INFO for a listener's backlog and a connection's state) and recorded by its inode
 * (`object`: the one socket behind every fd that holds it, in any process) and, in its payload,
 * "DOMAIN TYPE PROTOCOL STATE BACKLOG FLAGS ADDR PORT PEER PEERPORT":
 *   STATE  L listening, B bound (UDP; PEER set when connected), C a TCP connection (established
 *          or on its way), F one its peer closed, E one that ended (the fd still open), U not bound;
 *   FLAGS  1 SO_REUSEADDR, 2 SO_REUSEPORT, 4 IPV6_V6ONLY, 8 TCP_NODELAY;
 *   ADDR, PEER as inet_ntop writes them ("-": none), PORT, PEERPORT decimal.
 * A resume makes the socket again with its options -- a listener bound to its address and port
 * and listening with its backlog, a UDP socket bound (and connected) again -- for a tree of
 * processes in the first process before the others are forked (premake), so that a listener a
 * parent and its children share is one again, and places it at every number that held it.  The
 * address is tried at the admission: held by another process, or no longer this machine's, the
 * resume is refused (address-unavailable) before anything starts; held by the killed run's own
 * ended connections, they are cleared first (tcpghosts.h).
 *
 * A connection between two of the program's own sockets (a server and its own client, in one
 * process or two) is kept whole: each end is read at the cut (tcppair.h: what it wrote, what it
 * received, the bytes it has not read -- peeked, at most TCP_UNREAD_MAX), recorded with both
 * addresses and " WRITTEN RECEIVED UNREAD" (the bytes in hex, "-" for none); a resume finds the
 * other end among the checkpoint's fds and, when what each wrote is all in the other (its SYN
 * apart: pair_peer), makes the two again as a loopback pair -- for a tree before the forks --
 * with each end's unread bytes sent in from the other.  Before the cut reads them, the segments
 * Nagle's algorithm holds back are sent, and a cut waits while a connection of the program's
 * sits in its own listener's accept queue (socketpairs_scan).
 *
 * Any other connection cannot be continued without its peer (sequence numbers, the peer's state),
 * so it comes back reset, as after the peer's restart: a TCP socket connected over loopback whose
 * other end was closed with an RST, so that the program's next read or write fails with
 * ECONNRESET or EPIPE -- never EBADF on a number it still holds -- and a server's client, or a
 * client of a server, reconnects.  One whose peer had closed it (CLOSE_WAIT, state F: " UNREAD")
 * comes back with the bytes it had not read, then end of file.  One that had ended comes back
 * ended: end of file to read, EPIPE to write (it is not bound again: its port may be held by its
 * own TIME_WAIT).  What was queued in a listener's accept queue, in a UDP socket's receive queue
 * or in flight on a connection to the outside at the cut is lost (docs/limitations.md).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "fdkind.h"
#include "inject.h"
#include "sup.h"
#include "tcpghosts.h"
#include "tcppair.h"
#include "tree_image.h"

#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif
#define TCP_STATE_CLOSE 7
#define TCP_STATE_CLOSE_WAIT 8
#define TCP_STATE_LISTEN 10

enum { INET_REUSEADDR = 1, INET_REUSEPORT = 2, INET_V6ONLY = 4, INET_NODELAY = 8, INET_FLAGS = 15 };

struct inet_rec {
	int domain, type, protocol;
	char state;
	int backlog;
	unsigned flags;
	char addr[INET6_ADDRSTRLEN], peer[INET6_ADDRSTRLEN];
	unsigned port, peer_port;
	/* a connection whose stream was read whole (tcp_stream_read), which a resume keeps if its
	 * peer is the program's too: what it wrote and received, and its unread bytes */
	int whole;
	unsigned long long written, received;
	const char *unread_hex; /* in the payload: "-" for none (parse) */
	size_t unread_len;      /* bytes */
};

/* The stream of the last connection probe read (record writes its bytes out). */
static _Thread_local struct tcp_stream stream;

static int opt(int fd, int level, int name)
{
	int v = 0;
	socklen_t n = sizeof v;
	return getsockopt(fd, level, name, &v, &n) == 0 ? v : 0;
}

/* addr/port of a socket address into text ("-" and 0 for none).  0, or -1 for another family. */
static int to_text(const struct sockaddr_storage *a, char *addr, unsigned *port)
{
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *v4 = (const void *)a;
		inet_ntop(AF_INET, &v4->sin_addr, addr, INET6_ADDRSTRLEN);
		*port = ntohs(v4->sin_port);
		return 0;
	}
	if (a->ss_family == AF_INET6) {
		const struct sockaddr_in6 *v6 = (const void *)a;
		inet_ntop(AF_INET6, &v6->sin6_addr, addr, INET6_ADDRSTRLEN);
		*port = ntohs(v6->sin6_port);
		return 0;
	}
	return -1;
}

/* The socket at fd of process pid, read from a copy: 1 (a TCP or UDP socket, into *t), 0 (some
 * other socket), or a negative errno.  read_stream: the cut found its peer is the program's too
 * (tcp_cut_prepare): its stream is read, to keep it whole. */
static int probe(pid_t pid, int fd, int read_stream, struct inet_rec *t)
{
	int s = proc_fd_copy(pid, fd);
	if (s < 0)
		return s;
	memset(t, 0, sizeof *t);
	t->domain = opt(s, SOL_SOCKET, SO_DOMAIN);
	t->type = opt(s, SOL_SOCKET, SO_TYPE);
	t->protocol = opt(s, SOL_SOCKET, SO_PROTOCOL);
	int tcp = t->type == SOCK_STREAM && (t->protocol == IPPROTO_TCP || t->protocol == IPPROTO_MPTCP);
	int udp = t->type == SOCK_DGRAM && t->protocol == IPPROTO_UDP;
	if ((t->domain != AF_INET && t->domain != AF_INET6) || (!tcp && !udp)) {
		close(s);
		return 0;
	}
	t->flags = (opt(s, SOL_SOCKET, SO_REUSEADDR) ? INET_REUSEADDR : 0) |
		   (opt(s, SOL_SOCKET, SO_REUSEPORT) ? INET_REUSEPORT : 0) |
		   (t->domain == AF_INET6 && opt(s, IPPROTO_IPV6, IPV6_V6ONLY) ? INET_V6ONLY : 0) |
		   (tcp && opt(s, IPPROTO_TCP, TCP_NODELAY) ? INET_NODELAY : 0);
	struct sockaddr_storage a;
	socklen_t n = sizeof a;
	strcpy(t->addr, "-"), strcpy(t->peer, "-");
	if (getsockname(s, (struct sockaddr *)&a, &n) == 0)
		to_text(&a, t->addr, &t->port);
	n = sizeof a;
	int connected = getpeername(s, (struct sockaddr *)&a, &n) == 0 && to_text(&a, t->peer, &t->peer_port) == 0;
	if (tcp) {
		struct tcp_info ti;
		socklen_t tn = sizeof ti;
		memset(&ti, 0, sizeof ti);
		int have = getsockopt(s, IPPROTO_TCP, TCP_INFO, &ti, &tn) == 0;
		if (opt(s, SOL_SOCKET, SO_ACCEPTCONN)) {
			t->state = 'L';
			t->backlog = have ? (int)ti.tcpi_sacked : SOMAXCONN; /* a listener's: its backlog */
		} else if (connected || (have && ti.tcpi_state != TCP_STATE_CLOSE)) {
			t->state = 'C';
			/* read whole: a connection to another socket of the program's (kept as a pair), or
			 * one whose peer closed (its bytes, then end of file); not one to the outside */
			t->whole = connected && (read_stream || (have && ti.tcpi_state == TCP_STATE_CLOSE_WAIT)) &&
				   tcp_stream_read(s, &stream) == 1;
			if (t->whole)
				t->written = stream.written, t->received = stream.received, t->unread_len = stream.unread;
			if (t->whole && stream.finished) /* its peer closed: its bytes, then end of file */
				t->state = 'F', t->whole = 0;
		} else if (have && ti.tcpi_advmss) {
			t->state = 'E'; /* its connection ended (an MSS was agreed: it had one), fd still open */
		} else {
			t->state = t->port ? 'B' : 'U';
		}
		if ((t->state == 'C' && !t->whole) || t->state == 'E' || t->state == 'F') /* made again over loopback: no address is kept */
			strcpy(t->addr, "-"), t->port = 0, strcpy(t->peer, "-"), t->peer_port = 0;
	} else {
		t->state = t->port ? 'B' : 'U';
		if (!connected)
			strcpy(t->peer, "-"), t->peer_port = 0;
	}
	close(s);
	return 1;
}

/* Is fi a socket whose peer the program holds too, at this cut (socketpairs_scan)? */
static int kept_pair(const struct tree *t, const struct fd_info *fi)
{
	unsigned long long ino;
	if (sscanf(fi->path, "socket:[%llu]", &ino) != 1)
		return 0;
	for (int i = 0; i < t->cut.ntcp_kept; i++)
		if (t->cut.tcp_kept[i] == ino)
			return 1;
	return 0;
}

/* The last probe of this thread's cut: fd_record asks claims, then record, of the same fd -- one
 * copy of the socket read for both. */
static _Thread_local struct {
	pid_t pid;
	const struct fd_info *fi;
	int rc;
	struct inet_rec t;
} last;

static int claims(struct sup *s, const struct fd_info *fi)
{
	if (fi->type != IMG_FD_OTHER || strncmp(fi->path, "socket:[", 8))
		return 0;
	last.pid = s->pid, last.fi = fi;
	last.rc = probe(s->pid, fi->fd, kept_pair(s->tree, fi), &last.t);
	return last.rc == 1;
}

static int record(struct fd_capture *c)
{
	struct inet_rec t;
	int rc = last.pid == c->s->pid && last.fi == c->fi ? last.rc
							   : probe(c->s->pid, c->fi->fd, kept_pair(c->s->tree, c->fi), &last.t);
	t = last.t;
	last.fi = NULL;
	if (rc != 1)
		return rc < 0 ? rc : -EPROTO;
	if ((rc = fd_record_link_ino(c, "socket")))
		return rc;
	char payload[200 + 2 * TCP_UNREAD_MAX];
	int n = snprintf(payload, 200, "%d %d %d %c %d %u %s %u %s %u", t.domain, t.type, t.protocol, t.state, t.backlog,
			 t.flags, t.addr, t.port, t.peer, t.peer_port);
	if ((t.state == 'C' && t.whole) || t.state == 'F') { /* " [WRITTEN RECEIVED ]UNREAD": the bytes in hex, "-" for none */
		if (t.state == 'C')
			n += snprintf(payload + n, 200 - (size_t)n, " %llu %llu", t.written, t.received);
		n += snprintf(payload + n, 200 - (size_t)n, " %s", t.unread_len ? "" : "-");
		for (size_t i = 0; i < t.unread_len; i++)
			n += snprintf(payload + n, 3, "%02x", stream.bytes[i]);
	}
	c->e->payload = img_str(c->strings, payload);
	return c->e->payload == IMG_NONE ? -ENOMEM : 0;
}

/* text (or "-") as a socket address of the domain into *a.  Its length, or 0 if it is not one. */
static socklen_t to_addr(int domain, const char *text, unsigned port, struct sockaddr_storage *a)
{
	memset(a, 0, sizeof *a);
	if (domain == AF_INET) {
		struct sockaddr_in *v4 = (void *)a;
		v4->sin_family = AF_INET, v4->sin_port = htons((uint16_t)port);
		return inet_pton(AF_INET, text, &v4->sin_addr) == 1 ? sizeof *v4 : 0;
	}
	struct sockaddr_in6 *v6 = (void *)a;
	v6->sin6_family = AF_INET6, v6->sin6_port = htons((uint16_t)port);
	return inet_pton(AF_INET6, text, &v6->sin6_addr) == 1 ? sizeof *v6 : 0;
}

/* The payload's grammar (above), every field in its range, the addresses real ones. */
static int parse(const char *p, struct inet_rec *t)
{
	int n = 0;
	memset(t, 0, sizeof *t);
	if (!p || sscanf(p, "%d %d %d %c %d %u %45s %u %45s %u%n", &t->domain, &t->type, &t->protocol, &t->state,
			 &t->backlog, &t->flags, t->addr, &t->port, t->peer, &t->peer_port, &n) != 10)
		return 0;
	if (p[n] && t->state == 'C') { /* a connection read whole: " WRITTEN RECEIVED UNREAD" */
		int m = 0;
		const char *tail = p + n;
		if (tail[0] != ' ' || tail[1] < '0' || tail[1] > '9' ||
		    sscanf(tail, " %llu %llu %n", &t->written, &t->received, &m) != 2 || tail[m - 1] != ' ' || tail[m - 2] == ' ')
			return 0;
		t->unread_hex = tail + m;
		t->whole = 1;
	} else if (t->state == 'F') { /* its peer closed: " UNREAD" */
		if (p[n] != ' ' || p[n + 1] == ' ')
			return 0;
		t->unread_hex = p + n + 1;
	}
	if (t->unread_hex) {
		const char *tail = p + n;
		size_t len = strlen(t->unread_hex);
		if (!strcmp(t->unread_hex, "-"))
			len = 0;
		else if (!len || len % 2 || len > 2 * TCP_UNREAD_MAX || strspn(t->unread_hex, "0123456789abcdef") != len)
			return 0;
		t->unread_len = len / 2;
		n += (int)strlen(tail);
	}
	if (p[n])
		return 0;
	struct sockaddr_storage a;
	int tcp = t->type == SOCK_STREAM && (t->protocol == IPPROTO_TCP || t->protocol == IPPROTO_MPTCP);
	int udp = t->type == SOCK_DGRAM && t->protocol == IPPROTO_UDP;
	int bound = t->state == 'L' || t->state == 'B';
	if (t->whole) /* both ends' addresses, real ones */
		return (t->domain == AF_INET || t->domain == AF_INET6) && tcp && !(t->flags & ~INET_FLAGS) && !t->backlog &&
		       t->port && t->port <= 65535 && t->peer_port && t->peer_port <= 65535 &&
		       to_addr(t->domain, t->addr, t->port, &a) && to_addr(t->domain, t->peer, t->peer_port, &a);
	if (t->state == 'F' && !t->unread_hex)
		return 0;
	return (t->domain == AF_INET || t->domain == AF_INET6) && (tcp || udp) && !(t->flags & ~INET_FLAGS) &&
	       t->port <= 65535 && t->peer_port <= 65535 && t->backlog >= 0 &&
	       (strchr("LCEF", t->state) ? tcp : t->state == 'B' || t->state == 'U') &&
	       (!bound || to_addr(t->domain, t->addr, t->port, &a)) &&
	       (!strcmp(t->peer, "-") ? !t->peer_port : udp && t->state == 'B' && to_addr(t->domain, t->peer, t->peer_port, &a));
}

static enum refusal check(const struct img *im, const struct tree_view *tv, const struct img_fd *f, char *why, size_t whylen)
{
	(void)tv;
	struct inet_rec t;
	if (!f->object || !parse(img_s(im, f->payload), &t)) {
		snprintf(why, whylen, "fd %d: the checkpoint's record of this socket is damaged", f->fd);
		return REFUSE_POOL_CORRUPT;
	}
	if (t.state != 'L' && t.state != 'B')
		return 0;
	/* its address, tried as the resume will bind it; held, it is tried again for a while: the
	 * killed run's processes may still be on their way out (the kernel ends a pid namespace's
	 * processes after its init, not with it) */
	struct sockaddr_storage a;
	socklen_t len = to_addr(t.domain, t.addr, t.port, &a);
	int e = 0, ghosts = 0;
	for (int tries = 0; tries < 150; tries++) {
		int s = socket(t.domain, t.type | SOCK_CLOEXEC, t.protocol == IPPROTO_MPTCP ? IPPROTO_TCP : t.protocol);
		int one = 1;
		e = s < 0 ? errno : 0;
		if (s >= 0) {
			setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
			if (t.flags & INET_REUSEPORT)
				setsockopt(s, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
			if (t.flags & INET_V6ONLY)
				setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
			if (bind(s, (struct sockaddr *)&a, len) != 0)
				e = errno;
			close(s);
		}
		if (e != EADDRINUSE)
			break;
		/* the killed run's own connections, ended, that hold the port (tcpghosts.h) */
		if (tries == 0 && t.type == SOCK_STREAM && (ghosts = tcp_ghosts_clear(&a)) > 0)
			continue;
		if (ghosts == -EPERM) /* they are there, and only CAP_NET_ADMIN clears them */
			break;
		struct timespec pause = { 0, 20 * 1000 * 1000 };
		nanosleep(&pause, NULL);
	}
	if (!e)
		return 0;
	snprintf(why, whylen, "fd %d: the program's %s %s socket on %s port %u cannot be made again: %s", f->fd,
		 t.domain == AF_INET ? "IPv4" : "IPv6", t.type == SOCK_STREAM ? "TCP" : "UDP", t.addr, t.port,
		 ghosts == -EPERM ? "the killed run's ended connections hold that port for up to a minute (clearing them "
				    "needs CAP_NET_ADMIN): resume again then"
		 : e == EADDRINUSE ? "another process holds that port" : e == EADDRNOTAVAIL ? "the address is not this machine's now"
									  : strerror(e));
	return REFUSE_ADDRESS_UNAVAILABLE;
}

static long sys(struct inject *in, long nr, long a1, long a2, long a3, long a4, long a5)
{
	return inject_syscall(in, nr, a1, a2, a3, a4, a5, 0);
}

static int set_int(struct inject *in, uint64_t scratch, long fd, int level, int name, int value)
{
	return inject_write(in, scratch, &value, sizeof value) == 0 &&
			       sys(in, SYS_setsockopt, fd, level, name, (long)scratch, sizeof value) == 0
		       ? 0
		       : -1;
}

/* The bytes of hex (n of them) written into fd of the process of `in`, 256 at a time through its
 * scratch: they reach the other end's receive queue.  0 or -1. */
static int put_hex(struct inject *in, uint64_t scratch, long fd, const char *hex, size_t n)
{
	unsigned char chunk[256];
	for (size_t at = 0; at < n;) {
		size_t len = n - at < sizeof chunk ? n - at : sizeof chunk;
		for (size_t i = 0; i < len; i++) {
			unsigned v;
			sscanf(hex + 2 * (at + i), "%2x", &v);
			chunk[i] = (unsigned char)v;
		}
		if (inject_write(in, scratch, chunk, len) != 0)
			return -1;
		for (size_t put = 0; put < len;) {
			long w = sys(in, SYS_write, fd, (long)(scratch + put), (long)(len - put), 0, 0);
			if (w <= 0)
				return -1;
			put += (size_t)w;
		}
		at += len;
	}
	return 0;
}

/* A TCP socket of the domain, connected over loopback to a peer that reset it: fd, or -1. */
static long make_reset(struct inject *in, uint64_t scratch, int domain)
{
	long pair[2];
	if (tcp_loopback_pair(in, scratch, domain, pair) != 0)
		return -1;
	struct linger now = { 1, 0 }; /* the other end closed with an RST */
	int ok = inject_write(in, scratch, &now, sizeof now) == 0 &&
		 sys(in, SYS_setsockopt, pair[1], SOL_SOCKET, SO_LINGER, (long)scratch, sizeof now) == 0;
	sys(in, SYS_close, pair[1], 0, 0, 0, 0);
	if (!ok)
		sys(in, SYS_close, pair[0], 0, 0, 0, 0);
	return ok ? pair[0] : -1;
}

/* A TCP socket of the domain whose connection ended: its peer closed it (end of file to read)
 * and it shut its own writing (EPIPE to write), as a socket left open after its connection's
 * close is.  fd, or -1. */
static long make_ended(struct inject *in, uint64_t scratch, int domain)
{
	long pair[2];
	if (tcp_loopback_pair(in, scratch, domain, pair) != 0)
		return -1;
	sys(in, SYS_close, pair[1], 0, 0, 0, 0);
	if (sys(in, SYS_shutdown, pair[0], SHUT_WR, 0, 0, 0) != 0) {
		sys(in, SYS_close, pair[0], 0, 0, 0, 0);
		return -1;
	}
	return pair[0];
}

/* A TCP socket whose peer closed the connection after sending the bytes it had not read yet:
 * those bytes, then end of file; its own writes meet the closed peer (EPIPE).  fd, or -1. */
static long make_finished(struct inject *in, uint64_t scratch, const struct inet_rec *t)
{
	long pair[2];
	if (tcp_loopback_pair(in, scratch, t->domain, pair) != 0)
		return -1;
	int ok = put_hex(in, scratch, pair[1], t->unread_hex, t->unread_len) == 0;
	sys(in, SYS_close, pair[1], 0, 0, 0, 0);
	if (!ok) {
		sys(in, SYS_close, pair[0], 0, 0, 0, 0);
		return -1;
	}
	return pair[0];
}

/* The socket of f's record made in the process of `in` (scratch: 256 bytes of it): its number
 * there, or -1. */
static long make(struct inject *in, uint64_t scratch, const struct img *im, const struct img_fd *f)
{
	struct inet_rec t;
	parse(img_s(im, f->payload), &t); /* checked at the admission */
	if (t.state == 'C')
		return make_reset(in, scratch, t.domain);
	if (t.state == 'E')
		return make_ended(in, scratch, t.domain);
	if (t.state == 'F')
		return make_finished(in, scratch, &t);
	long fd = sys(in, SYS_socket, t.domain, t.type, t.protocol, 0, 0);
	if (fd < 0)
		return -1;
	int ok = (!(t.flags & INET_REUSEPORT) || set_int(in, scratch, fd, SOL_SOCKET, SO_REUSEPORT, 1) == 0) &&
		 (t.domain != AF_INET6 || set_int(in, scratch, fd, IPPROTO_IPV6, IPV6_V6ONLY, !!(t.flags & INET_V6ONLY)) == 0) &&
		 (!(t.flags & INET_NODELAY) || set_int(in, scratch, fd, IPPROTO_TCP, TCP_NODELAY, 1) == 0);
	if (ok && (t.state == 'L' || t.state == 'B')) {
		/* bound as the admission tried it (a connection of the killed run may linger in
		 * TIME_WAIT), then the program's own SO_REUSEADDR */
		struct sockaddr_storage a;
		socklen_t len = to_addr(t.domain, t.addr, t.port, &a);
		ok = set_int(in, scratch, fd, SOL_SOCKET, SO_REUSEADDR, 1) == 0 && inject_write(in, scratch, &a, len) == 0 &&
		     sys(in, SYS_bind, fd, (long)scratch, len, 0, 0) == 0;
		if (ok && strcmp(t.peer, "-")) {
			len = to_addr(t.domain, t.peer, t.peer_port, &a);
			ok = inject_write(in, scratch, &a, len) == 0 && sys(in, SYS_connect, fd, (long)scratch, len, 0, 0) == 0;
		}
		ok = ok && (t.state != 'L' || sys(in, SYS_listen, fd, t.backlog, 0, 0, 0) == 0);
	}
	ok = ok && set_int(in, scratch, fd, SOL_SOCKET, SO_REUSEADDR, !!(t.flags & INET_REUSEADDR)) == 0;
	if (!ok) {
		sys(in, SYS_close, fd, 0, 0, 0, 0);
		return -1;
	}
	return fd;
}

/* The other end of f's connection (record *mine) among the fds of the checkpoint -- every process
 * of a tree, or im alone -- when both ends were read whole and agree: what each wrote is what the
 * other received, all of it in the other's unread bytes or read.  Its record (its fields in
 * *theirs), or NULL: the connection comes back reset. */
static const struct img_fd *pair_peer(const struct tree *t, const struct img *im, const struct img_fd *f,
				      const struct inet_rec *mine, struct inet_rec *theirs)
{
	if (mine->state != 'C' || !mine->whole)
		return NULL;
	uint32_t nimgs = t->resume.view ? t->resume.view->nprocs : 1;
	for (uint32_t i = 0; i < nimgs; i++) {
		const struct img *o = t->resume.view ? &t->resume.imgs[i] : im;
		if (t->resume.view && t->resume.view->procs[i]->exited)
			continue;
		for (uint32_t k = 0; k < o->h->nfds; k++) {
			const struct img_fd *g = &o->fds[k];
			if (g->type != IMG_FD_INET || g->object == f->object || !parse(img_s(o, g->payload), theirs) ||
			    !theirs->whole || theirs->domain != mine->domain || theirs->port != mine->peer_port ||
			    theirs->peer_port != mine->port || strcmp(theirs->addr, mine->peer) || strcmp(theirs->peer, mine->addr))
				continue;
			/* The connecting end counts its SYN among the bytes acknowledged (once the handshake is
			 * done), the accepting end does not: with nothing in flight the two differences are
			 * 1 and 0.  A byte either wrote that the other did not receive (still in its send
			 * queue, which a copy cannot read) makes the sum more: reset, never a byte lost. */
			long long there = (long long)(mine->written - theirs->received), back = (long long)(theirs->written - mine->received);
			return there >= 0 && back >= 0 && there + back == 1 ? g : NULL;
		}
	}
	return NULL;
}

/* A connection between two of the program's sockets made again in the process of `in` as a
 * loopback pair, each end with its options and the bytes it had not read (sent in from the other
 * end): fds[0] the end of *mine, fds[1] the end of *theirs.  0, or -1 with nothing left open. */
static int make_pair(struct inject *in, uint64_t scratch, const struct inet_rec *mine, const struct inet_rec *theirs,
		     long fds[2])
{
	if (tcp_loopback_pair(in, scratch, mine->domain, fds) != 0)
		return -1;
	int ok = (!(mine->flags & INET_NODELAY) || set_int(in, scratch, fds[0], IPPROTO_TCP, TCP_NODELAY, 1) == 0) &&
		 (!(theirs->flags & INET_NODELAY) || set_int(in, scratch, fds[1], IPPROTO_TCP, TCP_NODELAY, 1) == 0) &&
		 put_hex(in, scratch, fds[1], mine->unread_hex, mine->unread_len) == 0 &&
		 put_hex(in, scratch, fds[0], theirs->unread_hex, theirs->unread_len) == 0;
	if (!ok) {
		sys(in, SYS_close, fds[0], 0, 0, 0, 0);
		sys(in, SYS_close, fds[1], 0, 0, 0, 0);
	}
	return ok ? 0 : -1;
}

/* A tree's listeners and bound sockets, shared by its processes, and its connections between
 * two of its sockets (made once, by the first end asked, for both); the others (made through a
 * loopback pair, whose ports the kernel chooses) by each process that holds them, once every
 * listener has its port again (every premake comes before any reopen). */
static int premake(struct fd_premake *p, const struct img *im, const struct img_fd *f)
{
	struct inet_rec t, theirs;
	parse(img_s(im, f->payload), &t); /* checked at the admission */
	if (t.state == 'C') {
		const struct img_fd *g = pair_peer(p->t, im, f, &t, &theirs);
		if (!g || fd_premade(p->t, IMG_FD_INET, f->object))
			return 0; /* reset, made by each process; or made with its peer */
		long fds[2];
		int made = make_pair(&p->root->in, p->root->scratch, &t, &theirs, fds) == 0;
		long mine = made ? fd_premake_above(p, fds[0]) : -1, peer = made ? fd_premake_above(p, fds[1]) : -1;
		return fd_premade_add(p, IMG_FD_INET, f->object, mine) || fd_premade_add(p, IMG_FD_INET, g->object, peer) ? -1
															    : 0;
	}
	if (t.state != 'L' && t.state != 'B')
		return 0;
	return fd_premake_shared(p, IMG_FD_INET, make, im, f);
}

static int reopen(struct fd_restore *r, const struct img_fd *f)
{
	struct inet_rec t, theirs;
	parse(img_s(r->im, f->payload), &t);
	const struct img_fd *g = fd_premade(r->s->tree, IMG_FD_INET, f->object) ? NULL : pair_peer(r->s->tree, r->im, f, &t, &theirs);
	if (!g)
		return fd_reopen_shared(r, f, IMG_FD_INET, make, "socket");
	/* a connection between two sockets of a process alone: made at its first end, kept above the
	 * checkpoint's numbers under the lesser of the two ends' ids for the other */
	uint64_t id = f->object < g->object ? f->object : g->object;
	const struct fd_made *here = fd_made_here(r, IMG_FD_INET, id);
	if (!here) {
		long fds[2], made[2] = { -1, -1 };
		if (make_pair(&r->j->in, r->j->scratch, &t, &theirs, fds) == 0)
			made[0] = f->object == id ? fds[0] : fds[1], made[1] = f->object == id ? fds[1] : fds[0];
		if (made[0] >= 0 && fd_make_above(r, IMG_FD_INET, id, made) == 0)
			here = &r->made[r->nmade - 1];
	}
	if (here && fd_place(r, f->object == id ? here->rfd : here->wfd, f) == 0)
		return 0;
	snprintf(r->why, r->whylen, "fd %d: cannot make the program's TCP connection to its own %s port %u again", f->fd,
		 t.peer, t.peer_port);
	return -1;
}

int fd_connected_tcp(const struct img *im, int fd)
{
	for (uint32_t i = 0; i < im->h->nfds; i++) {
		const struct img_fd *f = &im->fds[i];
		struct inet_rec t;
		if (f->fd == fd) /* made again reset, or ended */
			return f->type == IMG_FD_INET && parse(img_s(im, f->payload), &t) && strchr("CEF", t.state);
	}
	return 0;
}

const struct fd_kind fd_kind_inet = { .type = IMG_FD_INET, .name = "TCP/UDP socket", .phase = FD_PHASE_SHARED,
				      .claims = claims, .record = record, .check = check, .reopen = reopen,
				      .premake = premake };

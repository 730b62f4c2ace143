/* socketpairs.c -- unix sockets between the processes of the program (socketpairs.h). */
#include "socketpairs.h"
#include "procfs.h"
#include "sockdiag.h"
#include "tcppair.h"
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "tree_fds.h"

/* A unix stream socket of this network namespace, as sock_diag tells it. */
struct diag_sock {
	uint64_t ino, peer; /* peer 0: none (listening, unconnected), or its peer was closed */
	int type, connected, listening;
	uint32_t queued, backlog; /* a listener: connections not accepted yet, and its backlog */
	uint32_t name_len;        /* its name (sun_path; an abstract one starts with 0), if bound */
	char name[108];
	uint64_t vfs_ino;         /* bound to a path: the socket file's inode */
};

struct pairs_ctx {
	struct diag_sock **out;
	int *n, cap;
};

/* One unix socket of the dump, appended. */
static int take(const struct nlmsghdr *h, void *arg)
{
	struct pairs_ctx *c = arg;
	const struct unix_diag_msg *m = NLMSG_DATA(h);
	if (m->udiag_type != SOCK_STREAM && m->udiag_type != SOCK_DGRAM && m->udiag_type != SOCK_SEQPACKET)
		return 0;
	struct diag_sock d = { .ino = m->udiag_ino, .type = m->udiag_type,
			       .connected = m->udiag_state == 1 /* TCP_ESTABLISHED */,
			       .listening = m->udiag_state == 10 /* TCP_LISTEN */ };
	int alen = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof *m));
	for (const struct rtattr *a = (const void *)(m + 1); RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
		size_t plen = RTA_PAYLOAD(a);
		if (a->rta_type == UNIX_DIAG_PEER) {
			d.peer = *(const uint32_t *)RTA_DATA(a);
		} else if (a->rta_type == UNIX_DIAG_NAME && plen > 0 && plen < sizeof d.name) {
			memcpy(d.name, RTA_DATA(a), plen);
			d.name_len = (uint32_t)plen;
		} else if (a->rta_type == UNIX_DIAG_VFS && plen >= sizeof(struct unix_diag_vfs)) {
			d.vfs_ino = ((const struct unix_diag_vfs *)RTA_DATA(a))->udiag_vfs_ino;
		} else if (a->rta_type == UNIX_DIAG_RQLEN && plen >= sizeof(struct unix_diag_rqlen)) {
			const struct unix_diag_rqlen *q = RTA_DATA(a);
			d.queued = q->udiag_rqueue, d.backlog = q->udiag_wqueue;
		}
	}
	if (d.name_len && d.name[0]) { /* a path: kept with its NUL */
		d.name[d.name_len] = 0;
		d.name_len = (uint32_t)strlen(d.name) + 1;
	}
	if (*c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 64;
		struct diag_sock *p = realloc(*c->out, (size_t)c->cap * sizeof *p);
		if (!p)
			return -ENOMEM;
		*c->out = p;
	}
	(*c->out)[(*c->n)++] = d;
	return 0;
}

/* Every unix stream socket of this network namespace. */
static int diag_pairs(struct diag_sock **out, int *n)
{
	struct {
		struct nlmsghdr h;
		struct unix_diag_req r;
	} req = { .h = { .nlmsg_len = sizeof req, .nlmsg_type = SOCK_DIAG_BY_FAMILY, .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
		  .r = { .sdiag_family = AF_UNIX, .udiag_states = ~0u,
			 .udiag_show = UDIAG_SHOW_PEER | UDIAG_SHOW_NAME | UDIAG_SHOW_RQLEN | UDIAG_SHOW_VFS } };
	struct pairs_ctx c = { out, n, 0 };
	*n = 0;
	return sock_diag_dump(&req, sizeof req, take, &c);
}

static int take_peer(const struct nlmsghdr *h, void *arg)
{
	const struct unix_diag_msg *m = NLMSG_DATA(h);
	int alen = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof *m));
	for (const struct rtattr *a = (const void *)(m + 1); RTA_OK(a, alen); a = RTA_NEXT(a, alen))
		if (a->rta_type == UNIX_DIAG_PEER)
			*(uint64_t *)arg = *(const uint32_t *)RTA_DATA(a);
	return 0;
}

int socketpairs_peer_of(uint64_t ino, uint64_t *peer)
{
	struct {
		struct nlmsghdr h;
		struct unix_diag_req r;
	} req = { .h = { .nlmsg_len = sizeof req, .nlmsg_type = SOCK_DIAG_BY_FAMILY, .nlmsg_flags = NLM_F_REQUEST },
		  .r = { .sdiag_family = AF_UNIX, .udiag_states = ~0u, .udiag_ino = (uint32_t)ino, .udiag_show = UDIAG_SHOW_PEER,
			 .udiag_cookie = { ~0u, ~0u } } };
	*peer = 0;
	return sock_diag_dump(&req, sizeof req, take_peer, peer);
}

/* The socket inodes the program's processes hold, with a process and fd that holds each. */
static int held_sockets(struct tree *t, struct sock_end **out, int *n)
{
	int cap = 0;
	*n = 0;
	for (int i = 0; i < t->nprocs; i++) {
		struct sup *m = t->procs[i];
		int nf;
		const struct fd_info *fds = tree_proc_fds(m, &nf);
		for (int j = 0; fds && j < nf; j++) {
			unsigned long long ino;
			if (sscanf(fds[j].path, "socket:[%llu]", &ino) != 1)
				continue;
			if (*n == cap) {
				cap = cap ? 2 * cap : 32;
				struct sock_end *p = realloc(*out, (size_t)cap * sizeof *p);
				if (!p)
					return -ENOMEM;
				*out = p;
			}
			(*out)[(*n)++] = (struct sock_end){ .ino = ino, .pid = m->pid, .fd = fds[j].fd };
		}
	}
	return 0;
}

static const struct sock_end *holder(const struct sock_end *held, int n, uint64_t ino)
{
	for (int i = 0; i < n; i++)
		if (held[i].ino == ino)
			return &held[i];
	return NULL;
}

/* A bound socket's name as a resume binds it again: a relative path joined to the holder's
 * working directory now; a path that is not this socket's file any more is gone.  0, or -1 when
 * the name does not fit a sun_path (not kept: warned, as before). */
static int bound_name(struct sock_end *e, const struct diag_sock *d)
{
	if (!d->name[0]) { /* abstract */
		memcpy(e->name, d->name, d->name_len);
		e->name_len = d->name_len;
		return 0;
	}
	int n;
	if (d->name[0] == '/') {
		n = snprintf(e->name, sizeof e->name, "%s", d->name);
	} else {
		char p[64], cwd[4096];
		snprintf(p, sizeof p, "/proc/%d/cwd", (int)e->pid);
		ssize_t l = readlink(p, cwd, sizeof cwd - 1);
		if (l <= 0)
			return -1;
		cwd[l] = 0;
		n = snprintf(e->name, sizeof e->name, "%s/%s", strcmp(cwd, "/") ? cwd : "", d->name);
	}
	if (n < 0 || (size_t)n >= sizeof e->name)
		return -1;
	e->name_len = (uint32_t)n + 1;
	struct stat st;
	e->name_gone = stat(e->name, &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_ino != d->vfs_ino;
	return 0;
}

/* One message taken out of a datagram or seqpacket socket, with what came with it. */
struct message {
	uint8_t *bytes;
	size_t len;
	uint8_t control[CMSG_SPACE(253 * sizeof(int))];
	size_t controllen;
};

/* The messages queued at end e, taken out and sent again at once from its peer (held at
 * peer->pid, peer->fd), in order and with the file descriptors they carried.  Kept in e->msgs
 * (a u32 length and the bytes, each) unless one carried file descriptors: then 1 (not kept).  A
 * receiver that asks for credentials (SO_PASSCRED) would see ours on the messages sent again:
 * nothing is taken, 1.  0, 1, or -errno. */
static int take_messages(struct sock_end *e, const struct sock_end *peer)
{
	int rx = proc_fd_copy(e->pid, e->fd), tx = rx >= 0 ? proc_fd_copy(peer->pid, peer->fd) : -1;
	int passcred = 0, rc = 0, n = 0, cap = 0, carried = 0;
	socklen_t ol = sizeof passcred;
	struct message *m = NULL;
	if (rx < 0 || tx < 0) {
		rc = rx < 0 ? rx : tx;
		goto out;
	}
	if (getsockopt(rx, SOL_SOCKET, SO_PASSCRED, &passcred, &ol) != 0 || passcred) {
		rc = passcred ? 1 : -errno;
		goto out;
	}
	for (;;) {
		ssize_t len = recv(rx, NULL, 0, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT); /* its whole length */
		if (len < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				rc = -errno;
			break;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			struct message *p = realloc(m, (size_t)cap * sizeof *p);
			if (!p) {
				rc = -ENOMEM;
				break;
			}
			m = p;
		}
		struct message *k = &m[n];
		k->bytes = malloc(len ? (size_t)len : 1);
		struct iovec iov = { k->bytes, (size_t)len };
		struct msghdr h = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = k->control,
				    .msg_controllen = sizeof k->control };
		ssize_t got = k->bytes ? recvmsg(rx, &h, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) : -1;
		if (got != len) { /* the program is stopped: nothing else reads it */
			free(k->bytes);
			rc = got < 0 ? -errno : -EIO;
			break;
		}
		k->len = (size_t)len;
		k->controllen = h.msg_controllen;
		carried |= k->controllen > 0;
		n++;
	}
	/* every message back where it was, in order -- whatever happened above */
	for (int i = 0; i < n; i++) {
		struct iovec iov = { m[i].bytes, m[i].len };
		struct msghdr h = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = m[i].controllen ? m[i].control : NULL,
				    .msg_controllen = m[i].controllen };
		if (sendmsg(tx, &h, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)m[i].len && !rc) {
			rc = -errno;
			fprintf(stderr, "prosper: error: a message the program had queued could not be put back: %s\n",
				strerror(errno));
		}
		for (struct cmsghdr *c = m[i].controllen ? CMSG_FIRSTHDR(&h) : NULL; c; c = CMSG_NXTHDR(&h, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
				for (size_t f = 0; f < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); f++)
					close(((int *)CMSG_DATA(c))[f]); /* ours were copies: the message has them */
	}
	if (!rc && carried)
		rc = 1;
	size_t total = 0;
	for (int i = 0; i < n && !rc; i++)
		total += 4 + m[i].len;
	if (!rc && total) {
		if (!(e->msgs = malloc(total)))
			rc = -ENOMEM;
		for (int i = 0; i < n && !rc; i++) {
			uint32_t l = (uint32_t)m[i].len;
			memcpy(e->msgs + e->msgs_len, &l, 4);
			memcpy(e->msgs + e->msgs_len + 4, m[i].bytes, m[i].len);
			e->msgs_len += 4 + l;
		}
	}
	for (int i = 0; i < n; i++)
		free(m[i].bytes);
	free(m);
out:
	if (rx >= 0)
		close(rx);
	if (tx >= 0)
		close(tx);
	return rc;
}

int socketpairs_scan(struct tree *t)
{
	for (int i = 0; i < t->cut.nsocks; i++)
		free(t->cut.socks[i].msgs);
	t->cut.nsocks = 0;
	struct sock_end *held = NULL;
	int nheld = 0, rc = held_sockets(t, &held, &nheld);
	if (rc || nheld == 0) {
		free(held);
		return rc;
	}
	/* a TCP connection of the program's to one of its own listeners that it has not accepted
	 * yet: its bytes are out of reach until it does; the others' held back segments sent, so
	 * that their ends can be read whole (fd_inet.c keeps connections between the program's
	 * own sockets) */
	struct tcp_held *tcp = malloc((size_t)nheld * sizeof *tcp);
	int *kept = malloc((size_t)nheld * sizeof *kept);
	uint64_t *kept_inos = realloc(t->cut.tcp_kept, (size_t)nheld * sizeof *kept_inos);
	if (kept_inos)
		t->cut.tcp_kept = kept_inos;
	t->cut.ntcp_kept = 0;
	for (int i = 0; tcp && i < nheld; i++)
		tcp[i] = (struct tcp_held){ .ino = held[i].ino, .pid = held[i].pid, .fd = held[i].fd };
	rc = tcp && kept && kept_inos ? tcp_cut_prepare(tcp, nheld, kept) : -ENOMEM;
	for (int i = 0; !rc && i < nheld; i++)
		if (kept[i])
			t->cut.tcp_kept[t->cut.ntcp_kept++] = held[i].ino;
	free(tcp), free(kept);
	if (rc) {
		free(held);
		return rc == 1 ? -EAGAIN : rc;
	}
	struct diag_sock *all = NULL;
	int nall = 0;
	if ((rc = diag_pairs(&all, &nall)) == 0) {
		free(t->cut.socks);
		t->cut.socks = calloc((size_t)nall + 1, sizeof *t->cut.socks);
		if (!t->cut.socks)
			rc = -ENOMEM;
		for (int i = 0; i < nall && !rc; i++) {
			const struct diag_sock *d = &all[i];
			const struct sock_end *h = holder(held, nheld, d->ino);
			if (!h)
				continue;
			struct sock_end e = { .ino = d->ino, .pid = h->pid, .fd = h->fd, .type = d->type };
			const struct sock_end *ph = d->peer ? holder(held, nheld, d->peer) : NULL;
			if (d->listening) {
				if (d->type != SOCK_STREAM || !d->name_len)
					continue;
				if (d->queued) {
					rc = -EAGAIN; /* a connection whose one end no process holds yet */
					break;
				}
				e.peer = d->backlog, e.listener = 1;
				if (bound_name(&e, d) == 0)
					t->cut.socks[t->cut.nsocks++] = e;
			} else if (!d->connected) {
				/* made and not connected yet (bound to a name, maybe): made again so; one that
				 * holds datagrams from senders it did not connect to is not kept */
				if (d->peer || d->queued)
					continue;
				e.unconnected = 1;
				if (!d->name_len || bound_name(&e, d) == 0)
					t->cut.socks[t->cut.nsocks++] = e;
			} else if (d->peer && !ph) {
				continue; /* its peer is outside the program */
			} else if (d->type == SOCK_STREAM || !d->peer) {
				/* connected, and the kernel names no peer: its peer was closed (the end of the
				 * process that held it) -- kept as such: end of file to read, EPIPE to write.
				 * A message end in that state is kept only empty: its messages could not be
				 * put back from a peer that is gone */
				if (d->type != SOCK_STREAM && d->queued)
					continue;
				e.peer = d->peer;
				t->cut.socks[t->cut.nsocks++] = e;
			} else {
				/* a datagram or seqpacket pair, both ends the program's: message by message */
				e.peer = d->peer;
				int r = take_messages(&e, ph);
				if (r < 0)
					rc = r;
				else if (r == 0)
					t->cut.socks[t->cut.nsocks++] = e;
			}
		}
	}
	free(all);
	free(held);
	return rc;
}

int socketpairs_kept(const struct tree *t, const char *link)
{
	unsigned long long ino;
	if (sscanf(link, "socket:[%llu]", &ino) != 1)
		return 0;
	for (int i = 0; i < t->cut.nsocks; i++)
		if (t->cut.socks[i].ino == ino)
			return 1;
	return 0;
}

int socketpairs_queued(pid_t pid, int fd, uint8_t **buf, uint32_t *len)
{
	*buf = NULL, *len = 0;
	int s = proc_fd_copy(pid, fd);
	if (s < 0)
		return s;
	int rc = 0, queued = 0;
	if (ioctl(s, FIONREAD, &queued) != 0)
		rc = -errno;
	else if (queued > 0) {
		*buf = malloc((size_t)queued);
		ssize_t got = *buf ? recv(s, *buf, (size_t)queued, MSG_PEEK | MSG_DONTWAIT) : -1;
		if (got != queued)
			rc = got < 0 ? -errno : -EIO;
		*len = (uint32_t)queued;
	}
	close(s);
	return rc;
}

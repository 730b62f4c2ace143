/* tcpghosts.c -- ended TCP connections left on a listener's port, cleared (tcpghosts.h). */
#include "tcpghosts.h"
#include "sockdiag.h"
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { ST_FIN_WAIT1 = 4, ST_FIN_WAIT2 = 5, ST_TIME_WAIT = 6, ST_LAST_ACK = 9, ST_CLOSING = 11 };
#define GHOST_STATES (1u << ST_FIN_WAIT1 | 1u << ST_FIN_WAIT2 | 1u << ST_TIME_WAIT | 1u << ST_LAST_ACK | 1u << ST_CLOSING)
#define MAX_GHOSTS 256

struct diag_req {
	struct nlmsghdr h;
	struct inet_diag_req_v2 r;
};

struct ghosts {
	const struct sockaddr_storage *a;
	int family; /* of the dump */
	struct inet_diag_sockid ids[MAX_GHOSTS];
	int n;
};

/* Is the local address of id (of family) a's, or a its family's any address? */
static int on_address(const struct sockaddr_storage *a, int family, const struct inet_diag_sockid *id)
{
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *v4 = (const void *)a;
		if (family != AF_INET || id->idiag_sport != v4->sin_port)
			return 0;
		return v4->sin_addr.s_addr == htonl(INADDR_ANY) || id->idiag_src[0] == v4->sin_addr.s_addr;
	}
	const struct sockaddr_in6 *v6 = (const void *)a;
	if (id->idiag_sport != v6->sin6_port)
		return 0;
	if (IN6_IS_ADDR_UNSPECIFIED(&v6->sin6_addr)) /* every address, IPv4 ones too (unless V6ONLY: no matter) */
		return 1;
	return family == AF_INET6 && !memcmp(id->idiag_src, &v6->sin6_addr, sizeof v6->sin6_addr);
}

static int take(const struct nlmsghdr *h, void *ctx)
{
	struct ghosts *g = ctx;
	const struct inet_diag_msg *m = NLMSG_DATA(h);
	if (m->idiag_inode == 0 && (GHOST_STATES >> m->idiag_state & 1) && on_address(g->a, g->family, &m->id) &&
	    g->n < MAX_GHOSTS)
		g->ids[g->n++] = m->id;
	return 0;
}

static int destroy(int family, const struct inet_diag_sockid *id)
{
	struct diag_req req = { .h = { .nlmsg_len = sizeof req, .nlmsg_type = SOCK_DESTROY,
				       .nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK },
				.r = { .sdiag_family = (uint8_t)family, .sdiag_protocol = IPPROTO_TCP,
				       .idiag_states = ~0u, .id = *id } };
	int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (nl < 0)
		return -errno;
	char buf[512];
	int rc = send(nl, &req, sizeof req, 0) == (ssize_t)sizeof req ? 0 : -errno;
	ssize_t got = rc ? -1 : recv(nl, buf, sizeof buf, 0);
	if (!rc && got < (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr)))
		rc = got < 0 ? -errno : -EIO;
	if (!rc && ((struct nlmsghdr *)buf)->nlmsg_type == NLMSG_ERROR)
		rc = ((struct nlmsgerr *)NLMSG_DATA((struct nlmsghdr *)buf))->error; /* 0: the acknowledgement */
	close(nl);
	return rc;
}

int tcp_ghosts_clear(const struct sockaddr_storage *a)
{
	static const int families[] = { AF_INET, AF_INET6 };
	int removed = 0, rc = 0;
	for (size_t f = 0; f < sizeof families / sizeof families[0]; f++) {
		if (a->ss_family == AF_INET && families[f] != AF_INET)
			continue;
		struct ghosts *g = calloc(1, sizeof *g);
		if (!g)
			return -ENOMEM;
		g->a = a, g->family = families[f];
		struct diag_req req = { .h = { .nlmsg_len = sizeof req, .nlmsg_type = SOCK_DIAG_BY_FAMILY,
					       .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
					.r = { .sdiag_family = (uint8_t)families[f], .sdiag_protocol = IPPROTO_TCP,
					       .idiag_states = GHOST_STATES } };
		rc = sock_diag_dump(&req, sizeof req, take, g);
		for (int i = 0; !rc && i < g->n; i++) {
			int e = destroy(families[f], &g->ids[i]);
			if (e == 0)
				removed++;
			else if (e != -ENOENT) /* gone meanwhile: its time was up */
				rc = e;
		}
		free(g);
		if (rc)
			break;
	}
	return removed ? removed : rc;
}

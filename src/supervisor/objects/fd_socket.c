/* fd_socket.c -- a unix socket the program's processes hold (fdkind.h).
 *
 * The tree's cut decides which are kept (socketpairs.h: a socketpair whose ends the program holds,
 * a listener, an accepted connection, a datagram socket) and saves their queued bytes; they are
 * made again before the processes are forked (tree_restore.c).  An fd records the socket's link
 * text and inode (`object`) and takes the socket made for it.
 */
#include <errno.h>
#include <stdio.h>
#include "fdkind.h"
#include "socketpairs.h"
#include "sup.h"

static int claims(struct sup *s, const struct fd_info *fi)
{
	return fi->type == IMG_FD_OTHER && socketpairs_kept(s->tree, fi->path);
}

static int record(struct fd_capture *c)
{
	return fd_record_link_ino(c, "socket");
}

static int reopen(struct fd_restore *r, const struct img_fd *f)
{
	const struct premade *pm = fd_premade(r->s->tree, IMG_FD_SOCKET, f->object);
	if (pm && fd_place(r, pm->rfd, f) == 0)
		return 0;
	snprintf(r->why, r->whylen, "fd %d: cannot make the program's socket again", f->fd);
	return -1;
}

const struct fd_kind fd_kind_socket = { .type = IMG_FD_SOCKET, .name = "unix socket", .phase = FD_PHASE_SHARED,
					.claims = claims, .record = record, .reopen = reopen };

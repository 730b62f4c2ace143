/* fd_unixgone.c -- a unix stream connection to a peer outside the program (fdkind.h): a client
 * connected to the program's unix listener, a daemon the program talks to.  The peer is not the
 * program's, so its end cannot be had again: the connection comes back ended, as if its peer had
 * closed it -- a read gives end of file, a write EPIPE -- on the number the program holds.
 * (Leaving that number closed, as before, handed it to the next socket the program opened; a
 * Python server's object of the old connection then closed the new one: every client after a
 * resume was cut off.)
 *
 * Recorded by its inode (`object`); a resume makes a connected pair and closes one end, once per
 * inode -- for a tree, in the first process before the others are forked -- and places the other
 * at every number that held it.  Claimed after the kept socketpairs and listeners (fd_socket.c):
 * a connected (getpeername) SOCK_STREAM unix socket that does not listen.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>
#include "fdkind.h"
#include "inject.h"
#include "procfs.h"
#include "sup.h"

static int claims(struct sup *s, const struct fd_info *fi)
{
	if (fi->type != IMG_FD_OTHER || strncmp(fi->path, "socket:[", 8))
		return 0;
	int c = proc_fd_copy(s->pid, fi->fd);
	if (c < 0)
		return 0;
	int domain = 0, type = 0, listening = 1;
	socklen_t dl = sizeof domain, tl = sizeof type, ll = sizeof listening;
	struct sockaddr_un peer;
	socklen_t pl = sizeof peer;
	int yes = getsockopt(c, SOL_SOCKET, SO_DOMAIN, &domain, &dl) == 0 && domain == AF_UNIX &&
		  getsockopt(c, SOL_SOCKET, SO_TYPE, &type, &tl) == 0 && type == SOCK_STREAM &&
		  getsockopt(c, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ll) == 0 && !listening &&
		  getpeername(c, (struct sockaddr *)&peer, &pl) == 0;
	close(c);
	return yes;
}

static int record(struct fd_capture *c)
{
	return fd_record_link_ino(c, "socket");
}

/* A unix stream socket whose peer has closed the connection, made in the process of `in`
 * (scratch: 8 bytes of it): its number there, or -1. */
static long make(struct inject *in, uint64_t scratch, const struct img *im, const struct img_fd *f)
{
	(void)im, (void)f;
	int sv[2];
	if (inject_syscall(in, SYS_socketpair, AF_UNIX, SOCK_STREAM, 0, (long)scratch, 0, 0) != 0 ||
	    proc_mem_read(in->pid, scratch, sv, sizeof sv) != 0)
		return -1;
	inject_syscall(in, SYS_close, sv[1], 0, 0, 0, 0, 0);
	return sv[0];
}

static int premake(struct fd_premake *p, const struct img *im, const struct img_fd *f)
{
	return fd_premake_shared(p, IMG_FD_UNIX_GONE, make, im, f);
}

static int reopen(struct fd_restore *r, const struct img_fd *f)
{
	return fd_reopen_shared(r, f, IMG_FD_UNIX_GONE, make, "unix connection (ended)");
}

const struct fd_kind fd_kind_unixgone = { .type = IMG_FD_UNIX_GONE, .name = "unix connection to the outside",
					  .phase = FD_PHASE_SHARED, .claims = claims, .record = record,
					  .reopen = reopen, .premake = premake };

/* fd_fifo.c -- an end of a named pipe (FIFO) the program has open (fdkind.h).
 *
 * Recorded by its name (path) and its inode at the cut (`object`), which names it among the tree
 * blob's pipes: it is opened again, with its bytes in flight, before the processes are forked
 * (tree_restore.c, which makes the FIFO again if the program removed it later), and each fd takes
 * the end it had; an fd that held both ends (O_RDWR) is opened so again.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include "fdkind.h"
#include "inject.h"
#include "sup.h"

static int claims(struct sup *s, const struct fd_info *fi)
{
	(void)s;
	return fi->type == IMG_FD_FIFO;
}

static int record(struct fd_capture *c)
{
	c->e->object = c->fi->ino;
	c->e->size = 0;
	return 0;
}

static int reopen(struct fd_restore *r, const struct img_fd *f)
{
	const struct premade *pm = fd_premade(r->s->tree, IMG_FD_FIFO, f->object);
	int end = !pm ? -1 : (f->flags & O_ACCMODE) == O_WRONLY ? pm->wfd : pm->rfd;
	long fd = end;
	if (pm && (f->flags & O_ACCMODE) == O_RDWR) { /* both ends in one: opened so again */
		long p = injector_str(r->j, img_s(r->im, f->path));
		fd = p ? inject_syscall(&r->j->in, SYS_openat, AT_FDCWD, p, O_RDWR, 0, 0, 0) : -1;
	}
	int rc = fd_place(r, fd, f);
	if (fd != end && fd >= 0 && fd != f->fd) /* opened here, and not at its own number */
		inject_syscall(&r->j->in, SYS_close, fd, 0, 0, 0, 0, 0);
	if (rc)
		snprintf(r->why, r->whylen, "fd %d: cannot open the named pipe %s again", f->fd, img_s(r->im, f->path));
	return rc;
}

const struct fd_kind fd_kind_fifo = { .type = IMG_FD_FIFO, .name = "named pipe", .phase = FD_PHASE_SHARED,
				      .claims = claims, .record = record, .reopen = reopen };

/* fd_pipe.c -- the program's own anonymous pipes (fdkind.h).
 *
 * A pipe the program made itself, not one it inherited at launch (children.h tells them apart:
 * an inherited pipe is the outside world's, like a terminal).  Its record is its link text and
 * its inode (`object`), which groups the ends of one pipe.  Bytes in flight at the cut are the
 * tree's (tree.c), and a pipe shared by several processes is made before they are forked
 * (tree_restore.c); one only this process held is made here, empty, with one pipe2().  An end the
 * checkpoint did not hold is closed: its reader then sees end of file, its writer EPIPE, as the
 * program would have once the process holding it was gone.
 */
#include <fcntl.h>
#include <errno.h>
#include <stdio.h>
#include <sys/syscall.h>
#include "children.h"
#include "fdkind.h"
#include "inject.h"
#include "sup.h"

static int claims(struct sup *s, const struct fd_info *fi)
{
	return fi->type == IMG_FD_OTHER && children_pipe_is_own(s, fi->path);
}

static int record(struct fd_capture *c)
{
	return fd_record_link_ino(c, "pipe");
}

static enum refusal check(const struct img *im, const struct tree_view *tv, const struct img_fd *f, char *why, size_t whylen)
{
	(void)im, (void)tv;
	if (f->object)
		return 0;
	snprintf(why, whylen, "fd %d: the checkpoint's record of this pipe is damaged", f->fd);
	return REFUSE_POOL_CORRUPT;
}

static int reopen(struct fd_restore *r, const struct img_fd *f)
{
	int32_t rfd, wfd;
	const struct premade *pm = fd_premade(r->s->tree, IMG_FD_PIPE, f->object);
	const struct fd_made *here = pm ? NULL : fd_made_here(r, IMG_FD_PIPE, f->object);
	if (pm) { /* shared with other processes of the tree: made before they were forked */
		rfd = pm->rfd, wfd = pm->wfd;
	} else if (here) { /* its other end was placed already */
		rfd = here->rfd, wfd = here->wfd;
	} else {
		int32_t pfd[2];
		long made[2];
		if (inject_syscall(&r->j->in, SYS_pipe2, (long)r->j->scratch, 0, 0, 0, 0, 0) != 0 ||
		    proc_mem_read(r->j->in.pid, r->j->scratch, pfd, sizeof pfd) != 0)
			goto fail;
		made[0] = pfd[0], made[1] = pfd[1];
		if (fd_make_above(r, IMG_FD_PIPE, f->object, made) != 0)
			goto fail;
		rfd = r->made[r->nmade - 1].rfd, wfd = r->made[r->nmade - 1].wfd;
	}
	if (fd_place(r, (f->flags & O_ACCMODE) == O_WRONLY ? wfd : rfd, f) == 0)
		return 0;
fail:
	snprintf(r->why, r->whylen, "fd %d: cannot make the program's pipe again", f->fd);
	return -1;
}

const struct fd_kind fd_kind_pipe = { .type = IMG_FD_PIPE, .name = "pipe", .phase = FD_PHASE_SHARED,
				      .claims = claims, .record = record, .check = check, .reopen = reopen };

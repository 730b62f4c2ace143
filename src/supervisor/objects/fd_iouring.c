/* fd_iouring.c -- an io_uring instance the program holds (fdkind.h): not kept, and said so.
 *
 * An io_uring's state is the kernel's -- its rings mapped into the program, the submissions in
 * flight, registered files and buffers -- and none of it can be made again from outside the
 * program.  Left closed, a resumed program's next io_uring_enter would fail on a closed fd, or
 * worse, on whatever took its number.  So the run warns once, at the first checkpoint that finds
 * one (libuv, Node's runtime, uses one unless UV_USE_IO_URING=0), and a resume of a checkpoint
 * that holds one is refused (fd-unsupported), before anything is touched.
 */
#include <stdio.h>
#include "fdkind.h"
#include "sup.h"

#define IOURING_LINK "anon_inode:[io_uring]"

static int claims(struct sup *s, const struct fd_info *fi)
{
	(void)s;
	return fd_is_link(fi, IOURING_LINK);
}

static int record(struct fd_capture *c)
{
	fd_warn_once(c->s, c->fi->fd,
		     "is an io_uring, which is not kept: a resume from this checkpoint is refused (libuv programs, "
		     "Node's among them: UV_USE_IO_URING=0 runs them without one)",
		     c->fi->path);
	return 0;
}

static enum refusal check(const struct img *im, const struct tree_view *tv, const struct img_fd *f, char *why, size_t whylen)
{
	(void)im, (void)tv;
	snprintf(why, whylen, "fd %d is an io_uring instance, which is not kept: its rings and the work in flight "
		 "cannot be made again (libuv programs: run them with UV_USE_IO_URING=0)", f->fd);
	return REFUSE_FD_UNSUPPORTED;
}

const struct fd_kind fd_kind_iouring = { .type = IMG_FD_IOURING, .name = "io_uring", .phase = FD_PHASE_OPEN,
					 .claims = claims, .record = record, .check = check };

/* fd_other.c -- every fd no other kind claims: not kept (fdkind.h).
 *
 * Recorded by its link text only ("anon_inode:[eventfd]", "socket:[...]" to the outside, ...),
 * so that `prosper inspect` and a later version can tell what it was; a resume leaves it closed
 * (fds 0-2 are the resumed run's own stdio).  The run warns once per fd number: a resumed program
 * finds it closed (docs/limitations.md).
 */
#include <sys/syscall.h>
#include <linux/kcmp.h>
#include <unistd.h>
#include "fdkind.h"
#include "sup.h"

static int claims(struct sup *s, const struct fd_info *fi)
{
	(void)s, (void)fi;
	return 1;
}

/* Is the program's fd the userfaultfd its shim made for us (the shim closes its copy just after
 * its hello, and a cut can come between)?  Not the program's: closed at a resume, unwarned. */
static int is_our_tracker(const struct sup *s, int fd)
{
	return s->track.uffd >= 0 && syscall(SYS_kcmp, getpid(), s->pid, KCMP_FILE, s->track.uffd, fd) == 0;
}

static int record(struct fd_capture *c)
{
	if (c->fi->fd > 2 && !is_our_tracker(c->s, c->fi->fd))
		fd_warn_once(c->s, c->fi->fd, "is not persisted: a resumed program finds it closed", c->fi->path);
	return 0;
}

const struct fd_kind fd_kind_other = { .type = IMG_FD_OTHER, .name = "not kept", .phase = FD_PHASE_OPEN,
				       .claims = claims, .record = record };

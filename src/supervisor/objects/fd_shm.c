/* fd_shm.c -- an fd of a deleted file in memory the tree keeps (fdkind.h; sharedmem.h:
 * multiprocessing's heap, a memfd).
 *
 * Recorded by its inode at the cut (`object`), which names it in the tree blob, and its file
 * position; the object is made again, with its bytes, before the processes are forked.  A memory
 * object that still has its name is a regular file to the table (fd_file.c: opened by its name
 * again), but it is noted here for the cut all the same.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include "fdkind.h"
#include "inject.h"
#include "sharedmem.h"
#include "sup.h"

static int claims(struct sup *s, const struct fd_info *fi)
{
	uint64_t ino;
	return fi->type == IMG_FD_FILE && shm_kept_path(fi->path) && shm_note_fd(s, fi->fd, fi->path, &ino) &&
	       strstr(fi->path, " (deleted)");
}

static int record(struct fd_capture *c)
{
	c->e->object = c->fi->ino; /* what shm_note_fd named it by in claims() */
	return 0;
}

static int reopen(struct fd_restore *r, const struct img_fd *f)
{
	int shm_fd = shm_fd_of(r->s->tree, f->object);
	if (shm_fd >= 0 && inject_syscall(&r->j->in, SYS_dup3, shm_fd, f->fd, (long)(f->flags & O_CLOEXEC), 0, 0, 0) == f->fd &&
	    inject_syscall(&r->j->in, SYS_lseek, f->fd, (long)f->pos, SEEK_SET, 0, 0, 0) == (long)f->pos)
		return 0;
	snprintf(r->why, r->whylen, "fd %d: cannot make the program's shared memory fd again", f->fd);
	return -1;
}

const struct fd_kind fd_kind_shm = { .type = IMG_FD_SHM, .name = "shared memory", .phase = FD_PHASE_SHARED,
				     .claims = claims, .record = record, .reopen = reopen };

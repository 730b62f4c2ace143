/* fd_shm.c -- an fd of a deleted file the tree keeps (fdkind.h; sharedmem.h: multiprocessing's
 * heap, a memfd, a file held open after its name was removed).
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
#include "tree_image.h"
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

/* The object must be in the checkpoint: past what a checkpoint keeps, none is (sharedmem.h). */
static enum refusal check(const struct img *im, const struct tree_view *tv, const struct img_fd *f, char *why,
			  size_t whylen)
{
	for (uint32_t i = 0; tv && i < tv->nshms; i++)
		if (tv->shms[i]->ino == f->object)
			return 0;
	snprintf(why, whylen, "fd %d: %s is gone: it was not kept with the checkpoint (shared memory and files held "
		 "open with no name, more than a checkpoint keeps)", f->fd, img_s(im, f->path));
	return REFUSE_FD_GONE;
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
				     .claims = claims, .record = record, .check = check, .reopen = reopen };

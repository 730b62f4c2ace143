/* fd_file.c -- fds opened by a path: regular files, devices, directories (fdkind.h).
 *
 * Recorded by path, open flags and position (a regular file open for writing also by its size);
 * made again by opening the path with the same flags at the same number.  A regular file the
 * program writes is cut back to its checkpointed size, so that output written after the
 * checkpoint is written again, not twice (docs/run-resume.md; what that does not cover, a file
 * rewritten in place, docs/limitations.md).
 *
 * Stdio (fds 0-2) that was a regular file is the program's output or input: if the resumed run's
 * stdio is still that file, it is cut back to its checkpointed size and position; if the user
 * gave the resume other stdio, that is used as given.  The supervisor's fds 0-2 are what the
 * relaunched program inherits.  A file the program's shell redirected fd 0-2 to
 * (IMG_FD_REDIRECTED) is opened again like any other fd.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "fdkind.h"
#include "inject.h"
#include "sup.h"
#include "tree_image.h"
#include "why.h"

/* Is the program's fd (0-2) the file the supervisor has at that number -- the stdio the run was
 * given -- or one the program (its shell) opened there itself? */
static int same_as_ours(pid_t pid, int fd)
{
	char p[64];
	struct stat a, b;
	snprintf(p, sizeof p, "/proc/%d/fd/%d", (int)pid, fd);
	return stat(p, &a) == 0 && fstat(fd, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static int stdio_is_checkpointed_file(int fd, const char *path)
{
	struct stat a, b;
	return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Is this fd 0-2 of the checkpoint left as the resumed run has it? */
static int stdio_as_given(const struct img_fd *f, const char *path)
{
	if (f->fd > 2 || (f->flags & IMG_FD_REDIRECTED))
		return 0;
	return f->type != IMG_FD_FILE || !stdio_is_checkpointed_file(f->fd, path);
}

int fd_stdio_reopened_here(const struct img_fd *f, const char *path)
{
	return f->fd <= 2 && !(f->flags & IMG_FD_REDIRECTED) && f->type == IMG_FD_FILE &&
	       stdio_is_checkpointed_file(f->fd, path);
}

static int claims_file(struct sup *s, const struct fd_info *fi) { (void)s; return fi->type == IMG_FD_FILE; }
static int claims_device(struct sup *s, const struct fd_info *fi) { (void)s; return fi->type == IMG_FD_DEVICE; }
static int claims_dir(struct sup *s, const struct fd_info *fi) { (void)s; return fi->type == IMG_FD_DIR; }

static int record_file(struct fd_capture *c)
{
	const struct fd_info *fi = c->fi;
	if (fi->fd <= 2 && !same_as_ours(c->s->pid, fi->fd))
		c->e->flags |= IMG_FD_REDIRECTED;
	if (strstr(fi->path, " (deleted)"))
		fd_warn_once(c->s, fi->fd, "is a deleted file: the program cannot be resumed while it is open", fi->path);
	return 0;
}

static enum refusal check_path(const struct img *im, const struct tree_view *tv, const struct img_fd *f, char *why,
			       size_t whylen)
{
	const char *p = img_s(im, f->path);
	if (stdio_as_given(f, p) || tree_shm_named(tv, p) >= 0)
		return 0; /* this run's own stdio; shared memory with a name, made again if gone (sharedmem.h) */
	struct stat st;
	if (strstr(p, " (deleted)") || stat(p, &st) != 0) {
		snprintf(why, whylen, "fd %d: %s is gone", f->fd, p);
		return REFUSE_FD_GONE;
	}
	if (f->type == IMG_FD_FILE && (f->flags & O_ACCMODE) != O_RDONLY && (uint64_t)st.st_size < f->size) {
		snprintf(why, whylen, "fd %d: %s is shorter than at the checkpoint (%llu < %llu bytes)", f->fd, p,
			 (unsigned long long)st.st_size, (unsigned long long)f->size);
		return REFUSE_FD_SHORTER;
	}
	return 0;
}

static int reopen_path(struct fd_restore *r, const struct img_fd *f)
{
	char *why = r->why;
	size_t whylen = r->whylen;
	const char *path = img_s(r->im, f->path);
	/* stdio that is not the checkpointed file is this run's own; in a tree, stdio the first
	 * process opened again for all (tree_restore.c) */
	if (stdio_as_given(f, path) ||
	    (f->fd <= 2 && !(f->flags & IMG_FD_REDIRECTED) && (r->s->tree->resume.stdio_shared >> f->fd & 1)))
		return 0;
	int writing = (f->flags & O_ACCMODE) != O_RDONLY;
	if (f->type == IMG_FD_FILE && writing && truncate(path, (off_t)f->size) != 0)
		WHY_FAIL("cannot truncate %s to its checkpointed size: %s", path, strerror(errno));
	unsigned keep = O_ACCMODE | O_APPEND | O_NONBLOCK | O_CLOEXEC | O_DIRECTORY | O_NOATIME | O_DSYNC | O_SYNC |
			O_DIRECT | O_LARGEFILE | O_PATH;
	long p = injector_str(r->j, path);
	long fd = p ? inject_syscall(&r->j->in, SYS_openat, AT_FDCWD, p, (long)(f->flags & keep), 0, 0, 0) : -1;
	if (fd < 0)
		WHY_FAIL("fd %d: cannot reopen %s", f->fd, path);
	if (fd != f->fd) {
		if (inject_syscall(&r->j->in, SYS_dup3, fd, f->fd, (long)(f->flags & O_CLOEXEC), 0, 0, 0) != f->fd)
			WHY_FAIL("fd %d: cannot move %s to its number", f->fd, path);
		inject_syscall(&r->j->in, SYS_close, fd, 0, 0, 0, 0, 0);
	}
	if (f->type == IMG_FD_FILE && inject_syscall(&r->j->in, SYS_lseek, f->fd, (long)f->pos, SEEK_SET, 0, 0, 0) != (long)f->pos)
		WHY_FAIL("fd %d: cannot seek %s", f->fd, path);
	return 0;
}

const struct fd_kind fd_kind_file = { .type = IMG_FD_FILE, .name = "regular file", .phase = FD_PHASE_OPEN,
				      .claims = claims_file, .record = record_file, .check_reads_files = 1, .check = check_path, .reopen = reopen_path };
const struct fd_kind fd_kind_device = { .type = IMG_FD_DEVICE, .name = "device", .phase = FD_PHASE_OPEN,
					.claims = claims_device, .check_reads_files = 1, .check = check_path, .reopen = reopen_path };
const struct fd_kind fd_kind_dir = { .type = IMG_FD_DIR, .name = "directory", .phase = FD_PHASE_OPEN,
				     .claims = claims_dir, .check_reads_files = 1, .check = check_path, .reopen = reopen_path };

/* undoput.c -- one record of the file-undo journal put back (undoput.h). */
#include "undoput.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

static int put_bytes(const struct undo_entry *e)
{
	int fd = open(e->path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1; /* removed by a resume killed while undoing: its own
						  * records make it again, or it was made after the cut */
	ssize_t w = pwrite(fd, e->data, e->h.data_len, (off_t)e->h.a);
	close(fd);
	return w == (ssize_t)e->h.data_len ? 0 : -1;
}

static void put_owner_mode_times(const struct undo_entry *e)
{
	if (!S_ISLNK(e->h.mode))
		chmod(e->path, e->h.mode & 07777);
	if (lchown(e->path, e->h.uid, e->h.gid) != 0) {
		/* not ours to give (a user's run): the mode and times still are */
	}
	struct timespec ts[2] = { { e->h.atime_ns / 1000000000, e->h.atime_ns % 1000000000 },
				  { e->h.mtime_ns / 1000000000, e->h.mtime_ns % 1000000000 } };
	utimensat(AT_FDCWD, e->path, ts, AT_SYMLINK_NOFOLLOW);
}

static int put_attrs(const struct undo_entry *e)
{
	struct stat st;
	if (lstat(e->path, &st) != 0)
		return errno == ENOENT ? 0 : -1; /* made after: its own record removes it */
	if (S_ISREG(e->h.mode) && S_ISREG(st.st_mode) && truncate(e->path, (off_t)e->h.a) != 0)
		return -1;
	put_owner_mode_times(e);
	return 0;
}

static int put_removed(const struct undo_entry *e)
{
	mode_t m = e->h.mode;
	int rc = 0;
	if (S_ISREG(m)) {
		int fd = open(e->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, m & 07777);
		rc = fd < 0 ? -1 : close(fd);
	} else if (S_ISLNK(m)) {
		unlink(e->path);
		rc = symlink((const char *)e->data, e->path);
	} else if (S_ISDIR(m)) {
		rc = mkdir(e->path, m & 07777) == 0 || errno == EEXIST ? 0 : -1;
	} else if (S_ISFIFO(m)) {
		rc = mkfifo(e->path, m & 07777) == 0 || errno == EEXIST ? 0 : -1;
	} else {
		return 0; /* a socket's name: bound again by the program */
	}
	if (!rc && !S_ISREG(m))
		put_owner_mode_times(e); /* a regular file's come with its UNDO_ATTRS, after its bytes */
	return rc;
}

int undoput_record(const struct undo_entry *e)
{
	struct stat st;
	switch (e->h.kind) {
	case UNDO_BYTES: return put_bytes(e);
	case UNDO_ATTRS: return put_attrs(e);
	case UNDO_CREATED:
		if ((e->h.a ? rmdir(e->path) : unlink(e->path)) == 0 || errno == ENOENT)
			return 0;
		return -1;
	case UNDO_REMOVED: return put_removed(e);
	case UNDO_RENAMED: {
		const char *to = (const char *)e->data;
		struct stat from;
		if (lstat(to, &st) != 0)
			return 0; /* nothing under the new name: never ran, or moved back already */
		int from_there = lstat(e->path, &from) == 0;
		if (e->h.a) {
			/* exchanged: the name it came from holds its inode (and the other name does not)
			 * when the exchange never ran or was swapped back already -- swapping once more
			 * would undo the undo */
			if (from_there && from.st_ino == e->h.ino && from.st_dev == e->h.dev &&
			    !(st.st_ino == e->h.ino && st.st_dev == e->h.dev))
				return 0;
			return renameat2(AT_FDCWD, to, AT_FDCWD, e->path, RENAME_EXCHANGE);
		}
		if (from_there)
			return 0; /* the rename did not take effect (undoput.h): the new name holds another file */
		return rename(to, e->path);
	}
	default: return 0;
	}
}


/* filechange.h -- what one change to the file system needs kept to be undone, written to the
 * file-undo journal (undolog.h) before the change runs (filechange.c).  The tracker
 * (filetrack.c) decides which change a system call makes; these record it.
 *
 * Invariants
 *   - Every function records, or records that it cannot (UNDO_CANNOT: a resume then refuses),
 *     before it returns; the caller lets the system call run only after.
 *   - An inode's attributes (size, mode, owner, times) are recorded once per cut, at its first
 *     change: undone last, they put back the size the checkpoint saw and the times `make` reads.
 *     A directory's are recorded at the first entry made, removed or renamed in it.
 *   - Old bytes are kept only below the file's size at the change (what lies beyond is cut back by
 *     the attributes' size); at most FILETRACK_BUDGET bytes per cut, beyond is UNDO_CANNOT.
 */
#ifndef PROSPER_SUP_FILECHANGE_H
#define PROSPER_SUP_FILECHANGE_H
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include "sup.h"

#define FILETRACK_BUDGET (1ull << 30)
#define FILETRACK_MAPPED_MAX (64ull << 20)

/* A file of the program's: an absolute path, and the inode found there (st of 0 ino: absent). */
struct fchange_target {
	char path[4200];
	char open_path[64];  /* /proc/PID/fd/N when it is an fd's: opened to read old bytes */
	struct stat st;
};

/* The file an fd of tid is, if a regular file with a path: 0, else -1 (a pipe, a socket, a device...;
 * f->st says which when it could be read, else is zero). */
int fchange_fd_target(pid_t tid, int fd, struct fchange_target *f);
/* Path at addr of tid's memory, relative to dirfd (AT_FDCWD: its cwd) made absolute; lstat'ed
 * (follow = 1: stat'ed) into f.  0, or -1 if the path cannot be read. */
int fchange_path_target(pid_t tid, int dirfd, uint64_t addr, int follow, struct fchange_target *f);
/* The fd's position and open flags (/proc/PID/fdinfo); 0 or -1. */
int fchange_fd_pos(pid_t tid, int fd, uint64_t *pos, int *flags);

/* A new journal file (a cut): what the last one held is forgotten. */
void fchange_new_interval(struct tree *t);

/* The change about to be made: */
void fchange_attrs(struct tree *t, const struct fchange_target *f);                  /* any attribute or size */
void fchange_bytes(struct tree *t, const struct fchange_target *f, uint64_t off, uint64_t len); /* overwrite */
void fchange_created(struct tree *t, const struct fchange_target *f, int dir, const struct stat *of); /* path made */
void fchange_removed(struct tree *t, const struct fchange_target *f);                /* path removed or replaced */
void fchange_renamed(struct tree *t, const struct fchange_target *from, const char *to, int exchange);
void fchange_cannot(struct tree *t, const char *path, const char *what);
/* A file mapped shared and writable, whose stores no call shows: kept whole as it is now (at most
 * FILETRACK_MAPPED_MAX bytes, beyond: UNDO_CANNOT). */
void fchange_snapshot(struct tree *t, const char *path);
/* A file mapped shared and writable (the filter saw the mmap, or a resume mapped it again): kept
 * whole now (fchange_snapshot) and at every cut after (filetrack_cut), one more of ft->mapped. */
void fchange_mapped(struct tree *t, const char *path);
int fchange_is_mapped(const struct file_track *ft, const char *path);

#endif

/* sharedmem.h -- shared memory of the program's processes (docs/run-resume.md "Shared memory").
 *
 * The objects kept: a MAP_SHARED anonymous mapping (inherited over fork), a deleted file on a
 * memory file system held by a mapping or an fd (multiprocessing's heap, a memfd), and a file in
 * /dev/shm mapped or held open (POSIX semaphores and shared memory: glibc's sem_open makes a
 * file there, maps it, names it; Python's multiprocessing then unlinks the name at once).
 *
 * At a cut, every process stopped, each object is read once -- from offset 0 as far as its file
 * or any mapping of it reaches -- and goes into the epoch's tree blob with every mapping of it
 * (tree_image.h: a program of one process that holds one has a tree blob too).  At a resume,
 * before the other processes are forked, the first process makes each one again: a memfd, or
 * for a /dev/shm file whose names (the one it was opened by, and its other names at the cut) are
 * all gone since the cut, that file again under each of them (the program made it and will unlink
 * them); while one name still exists that file, and the names gone are linked to it again.  Either
 * way the object gets the cut's bytes back, like every file the program writes: the killed run
 * went on writing it, and the resumed processes' memory knows only the cut's.  Every process inherits it above every fd of the
 * checkpoint, maps it shared at each of its addresses (restore.c), takes it at the fds that held
 * it, then closes it with the premade pipes.
 *
 * A deleted regular file held open on any file system (SQLite's temporary files, tmpfile(),
 * O_TMPFILE) is such an object too: its bytes are the program's alone; it comes back as a memfd.
 *
 * Invariants: the bytes of one cut are read while every process is stopped; an object is copied
 * whole at every checkpoint into the epoch's blob, so the objects of one cut are kept only up to
 * what the pool's metadata slot has room for (prosper_pool_blob_room, less SHM_BLOB_MARGIN; the
 * supervisor's pools are made with SUP_BLOB_BYTES of it), at
 * most SHM_MAX_BYTES in all -- past that none is kept, `run` says so once and a resume refuses the
 * checkpoint (a deleted mapping, or a file gone), never resumes without them.  System V segments
 * are not kept.
 */
#ifndef PROSPER_SUP_SHAREDMEM_H
#define PROSPER_SUP_SHAREDMEM_H
#include <stdint.h>
#include "procfs.h"
#include "sup.h"

#define SHM_MAX_BYTES (64u << 20)
#define SHM_BLOB_MARGIN (512u << 10) /* of the blob's room, kept for the processes' own metadata */

/* Is this mapping (or an fd whose link text is path) one of the objects kept? */
int shm_kept_mapping(const struct vma *v);
int shm_kept_path(const char *path);

/* Capture, at the start of a cut; then for each fd of process s whose link text is kept
 * (shm_kept_path): 1 and *ino its object's inode, or 0 (not a memory object after all). */
void shm_begin(struct tree *t);
int shm_note_fd(struct sup *s, int fd, const char *path, uint64_t *ino);
/* After every process's capture (their maps are in s->prev): does the cut hold objects to keep
 * (1), none (0)?  Warns once when they are too large to keep. */
int shm_scan(struct tree *t);
/* Append the objects found by shm_scan to the tree blob being built. 0 or -errno. */
int shm_capture(struct tree *t, struct img_buf *blob);

/* Resume: make every object of the checkpoint (t->resume.view) again in the first process, at fd numbers
 * from *next on (advanced), recorded in t->resume.premade.  0, or -1 with why. */
struct injector;
int shm_premake(struct tree *t, struct injector *j, long *next, char *why, size_t whylen);
/* The fd, in the process being restored, of the object its image maps at start, or of the
 * object of inode ino; -1: none made (a name that exists: the path is opened as it is). */
int shm_fd_at(const struct tree *t, int32_t own_pid, uint64_t start);
int shm_fd_of(const struct tree *t, uint64_t ino);

#endif

/* sharedmem.h -- memory the processes of the program share that only they hold (docs/run-resume.md
 * "Shared memory"): MAP_SHARED anonymous mappings (inherited over fork), deleted tmpfs files (a
 * POSIX semaphore: sem_open then sem_unlink, as Python's multiprocessing does), memfds.
 *
 * At a cut, every process stopped, each such object is read once, from offset 0 as far as any
 * mapping of it reaches, and goes into the epoch's tree blob with every mapping of it
 * (tree_image.h: so a program of one process that holds one has a tree blob too).  At a resume it
 * is made again as one memfd in the first process, above every fd of the checkpoint, before the
 * others are forked, so every process inherits it; each maps it shared where it was (restore.c),
 * then closes it with the premade pipes.
 *
 * Invariants: the bytes of one cut are read while every process is stopped; an object is copied
 * whole at every checkpoint, so the objects of one cut are kept only up to SHM_MAX_BYTES in all --
 * past that none of them is kept, the run says so once and a resume refuses the checkpoint (it
 * maps a deleted object), never resumes without it.  A shared mapping of a file that exists is
 * the file system's, like every file the program writes; a SysV segment is not kept.
 */
#ifndef PROSPER_SUP_SHAREDMEM_H
#define PROSPER_SUP_SHAREDMEM_H
#include <stdint.h>
#include "procfs.h"
#include "tree.h"

#define SHM_MAX_BYTES (64u << 20)

/* Is this mapping one of the objects kept? */
int shm_kept_mapping(const struct vma *v);

/* After every process's capture (their maps are in s->prev): does the cut hold objects to keep
 * (1), none (0)?  Warns once when they are too large to keep. */
int shm_scan(struct tree *t);
/* Append the objects found by shm_scan to the tree blob being built. 0 or -errno. */
int shm_capture(struct tree *t, struct img_buf *blob);

/* Capture: fd of process s names a deleted file: the address at which s maps it as kept shared
 * memory (its first nmaps mappings in s->now are this cut's map), or 0. */
struct sup;
uint64_t shm_mapped_by_fd(const struct sup *s, int fd, int nmaps);

/* Resume: make every object of the checkpoint (t->view) again in the first process, at fd numbers
 * from *next on (advanced), recorded in t->premade.  0, or -1 with why. */
struct inject;
int shm_premake(struct tree *t, struct inject *root, uint64_t scratch, long *next, char *why, size_t whylen);
/* The fd, in the process being restored, of the object its image maps at start; or -1. */
int shm_fd_at(const struct tree *t, int32_t own_pid, uint64_t start);

#endif

/* fsclass.h -- which file systems the file-undo journal can put back (docs/limitations.md,
 * "Files").
 *
 *   FS_LOCAL   a local disk file system (ext2/3/4, xfs, btrfs, f2fs, overlay, vfat, exfat, ...):
 *              what the program changes there only the program changes, and its old bytes read
 *              now are its bytes at the checkpoint.  Its changes can outlive a power cut, so
 *              their undo records must too (docs/durability.md).
 *   FS_MEMORY  the same, in memory (tmpfs, ramfs, hugetlbfs): a power cut takes the files with
 *              it, so their records need not be flushed.
 *   FS_KERNEL  a window on kernel state (proc, sysfs, cgroup, debugfs, tracefs, bpf, ...): a
 *              write there sets a value of the kernel, not the bytes of a file; nothing of it is
 *              journalled or undone (a thread's name written to /proc/self/task/N/comm is
 *              process state, saved with the process).
 *   FS_OUTSIDE anything else, named: network and shared file systems (nfs, smb/cifs, 9p,
 *              virtiofs, ceph, fuse, ...), where another machine may change the file between a
 *              checkpoint and a resume and the old bytes read may not be the ones a resume finds.
 *              A change there is recorded as one that cannot be undone (UNDO_CANNOT): a warning
 *              while the program runs, a refusal (file-not-undoable) at a resume from before it.
 *
 * Unknown file systems are FS_OUTSIDE: a wrong "local" would be a silent wrong resume. */
#ifndef PROSPER_SUP_FSCLASS_H
#define PROSPER_SUP_FSCLASS_H
#include <stddef.h>
#include <sys/stat.h>

enum fs_class { FS_LOCAL, FS_MEMORY, FS_KERNEL, FS_OUTSIDE };

/* The class of the file system holding path (or, if path does not exist, its directory); name
 * gets the file system's name ("nfs", "fuse", "0x1234abcd" when unknown). */
enum fs_class fsclass_of(const char *path, char *name, size_t namelen);

/* The same for a file whose stat is st (its device's class is asked once, then remembered). */
enum fs_class fsclass_of_stat(const char *path, const struct stat *st, char *name, size_t namelen);

/* The class and name of a file system type (statfs f_type). */
enum fs_class fsclass_type(unsigned long f_type, char *name, size_t namelen);

#endif

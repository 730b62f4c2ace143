/* tree_fds.h -- the fds of a process of the tree, read once per cut (tree_fds.c).
 *
 * The socketpairs, the capture and the pipes of one cut (tree_capture, tree.h) all look at every
 * process's fds: they share one read.  Below all three, it calls only the /proc reader.
 */
#ifndef PROSPER_SUP_TREE_FDS_H
#define PROSPER_SUP_TREE_FDS_H
#include "sup.h"

/* The fds of live process m now (in m->cut.fds, *n of them): 0, or -errno (-ESRCH: it has exited).
 * Read once per cut (tree_capture): the socketpairs, the capture and the pipes share them. */
int tree_read_fds(struct sup *m, int *n);
/* The same as a list, or NULL when they cannot be read. */
const struct fd_info *tree_proc_fds(struct sup *m, int *n);

#endif

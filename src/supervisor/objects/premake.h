/* premake.h -- the objects a resumed tree's processes share, made before the forks (premake.c). */
#ifndef PROSPER_SUP_PREMAKE_H
#define PROSPER_SUP_PREMAKE_H
#include <stddef.h>

struct tree;
/* The tree's pipes, FIFOs, unix sockets and shared memory made in the first process
 * (root), above every fd number of the checkpoint, as t->resume.premade.  0, or -1 with why. */
struct injector;
int tree_premake(struct tree *t, struct injector *root, char *why, size_t whylen);
/* fd_eventfd.c: every eventfd of the tree made in the first process (root), its count and mode
 * as at the cut, at numbers from *next on (advanced).  0, or -1 with why. */
int eventfd_premake(struct tree *t, struct injector *root, long *next, char *why, size_t whylen);

#endif

/* premake.h -- the objects a resumed tree's processes share, made before the forks (premake.c). */
#ifndef PROSPER_SUP_PREMAKE_H
#define PROSPER_SUP_PREMAKE_H
#include <stddef.h>

struct tree;
/* The tree's pipes, FIFOs, unix sockets, shared memory and the objects of the fd kinds that make
 * their own (fd_premake_all) made in the first process
 * (root), above every fd number of the checkpoint, as t->resume.premade.  0, or -1 with why. */
struct injector;
int tree_premake(struct tree *t, struct injector *root, char *why, size_t whylen);

#endif

/* pipes.h -- the tree-wide half of the pipe and FIFO kinds (pipes.c). */
#ifndef PROSPER_SUP_PIPES_H
#define PROSPER_SUP_PIPES_H
#include <stdint.h>
#include <sys/types.h>
#include "sup.h"

/* A pipe of the program's own (not one it inherited at launch), or a named pipe (FIFO) it has
 * open, seen at the cut: where to reach it. */
struct seen_pipe {
	uint64_t ino;
	pid_t pid;
	int fd;
	uint32_t mode;           /* a FIFO's permission bits */
	char path[VMA_PATH_MAX]; /* a FIFO's name; "" for an anonymous pipe */
};

/* The program's own pipes and its FIFOs, each once, with a process and fd that holds it. */
int pipes_own(struct tree *t, struct seen_pipe *out, int max, int *fifos);
/* Read the bytes in flight out of the pipe and put them back (the program is stopped: nothing
 * else reads or writes it meanwhile).  *len bytes into *buf (malloc'd), *cap its capacity. */
int pipes_contents(const struct seen_pipe *p, uint8_t **buf, uint32_t *len, uint32_t *cap);

#endif

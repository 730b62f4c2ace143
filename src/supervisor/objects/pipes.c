/* pipes.c -- the tree-wide half of the pipe and FIFO kinds (fd_pipe.c, fd_fifo.c): at a cut, each of
 * the program's own pipes and FIFOs found once with a process that holds it, and the bytes in
 * flight in it read out and put back (tree.c saves them in the tree blob; premake.c makes them
 * again). */
#include "pipes.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include "children.h"
#include "tree_fds.h"

/* The program's own pipes and its FIFOs, each once, with a process and fd that holds it. */
int pipes_own(struct tree *t, struct seen_pipe *out, int max, int *fifos)
{
	int n = 0;
	*fifos = 0;
	for (int i = 0; i < t->nprocs; i++) {
		struct sup *m = t->procs[i];
		int nf;
		const struct fd_info *fds = tree_proc_fds(m, &nf);
		for (int j = 0; fds && j < nf; j++) {
			const struct fd_info *fi = &fds[j];
			unsigned long long ino;
			int fifo = fi->type == IMG_FD_FIFO;
			if (fifo)
				ino = fi->ino;
			else if (sscanf(fi->path, "pipe:[%llu]", &ino) != 1 || !children_pipe_is_own(m, fi->path))
				continue;
			int k = 0;
			while (k < n && !(out[k].ino == ino && !out[k].path[0] == !fifo))
				k++;
			if (k < n || n == max)
				continue;
			out[n] = (struct seen_pipe){ .ino = ino, .pid = m->pid, .fd = fi->fd };
			if (fifo) {
				struct stat st;
				char p[64];
				snprintf(p, sizeof p, "/proc/%d/fd/%d", (int)m->pid, fi->fd);
				out[n].mode = stat(p, &st) == 0 ? (uint32_t)(st.st_mode & 07777) : 0600;
				snprintf(out[n].path, sizeof out[n].path, "%s", fi->path);
				(*fifos)++;
			}
			n++;
		}
	}
	return n;
}

/* Read the bytes in flight out of the pipe and put them back (the program is stopped: nothing
 * else reads or writes it meanwhile).  *len bytes into *buf (malloc'd), *cap its capacity. */
int pipes_contents(const struct seen_pipe *p, uint8_t **buf, uint32_t *len, uint32_t *cap)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)p->pid, p->fd);
	*buf = NULL, *len = 0, *cap = 0;
	int r = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (r < 0)
		return -errno;
	int n = 0, rc = 0;
	long size = fcntl(r, F_GETPIPE_SZ);
	if (ioctl(r, FIONREAD, &n) != 0 || size <= 0) {
		close(r);
		return -EIO;
	}
	*cap = (uint32_t)size;
	if (n > 0) {
		int w = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
		*buf = malloc((size_t)n);
		if (w < 0 || !*buf || read(r, *buf, (size_t)n) != n || write(w, *buf, (size_t)n) != n)
			rc = -EIO; /* a pipe we emptied and could not fill again: the program's data is lost */
		if (w >= 0)
			close(w);
		*len = (uint32_t)n;
	}
	close(r);
	return rc;
}

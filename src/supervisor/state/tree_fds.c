/* tree_fds.c -- the fds of a process of the tree, read once per cut (tree_fds.h). */
#include "tree_fds.h"
#include <errno.h>

int tree_read_fds(struct sup *m, int *n)
{
	if (!m->tree->cut.gen || m->fds_gen != m->tree->cut.gen) {
		m->nfds_read = 0;
		m->fds_rc = m->exited ? -ESRCH : proc_fds(m->pid, m->fds, MAX_FDS, &m->nfds_read);
		m->fds_gen = m->tree->cut.gen;
	}
	*n = m->fds_rc ? 0 : m->nfds_read;
	return m->fds_rc;
}

const struct fd_info *tree_proc_fds(struct sup *m, int *n)
{
	return tree_read_fds(m, n) ? NULL : m->fds;
}

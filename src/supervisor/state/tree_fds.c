/* tree_fds.c -- the fds of a process of the tree, read once per cut (tree_fds.h). */
#include "tree_fds.h"
#include <errno.h>

int tree_read_fds(struct sup *m, int *n)
{
	if (!m->tree->cut.gen || m->cut.fds_gen != m->tree->cut.gen) {
		m->cut.nfds_read = 0;
		m->cut.fds_rc = m->exited ? -ESRCH : proc_fds(m->pid, m->cut.fds, MAX_FDS, &m->cut.nfds_read);
		m->cut.fds_gen = m->tree->cut.gen;
	}
	*n = m->cut.fds_rc ? 0 : m->cut.nfds_read;
	return m->cut.fds_rc;
}

const struct fd_info *tree_proc_fds(struct sup *m, int *n)
{
	return tree_read_fds(m, n) ? NULL : m->cut.fds;
}

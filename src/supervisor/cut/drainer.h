/* drainer.h -- the processes a program leaves running when it ends, handed to a small tracer that
 * lets their filtered calls through until they end (tree_release, tree.h).
 *
 * The file filter (filefilter.h) stays with every process of the program for good; a call it
 * sends finds no tracer once the supervisor is gone and fails with ENOSYS, so a background job the
 * program started would lose its writes.  Before the supervisor lets such processes go, it stops
 * them (SIGSTOP, pending before they are detached, so none runs a call in between), detaches them,
 * and a process it forks for the purpose -- in a session of its own, holding no fd of ours -- seizes
 * every thread, continues them (SIGCONT), and from then on only continues their stops: the filter's
 * (the call runs, unrecorded: the program has ended and no checkpoint will be resumed), those of
 * the processes and threads they make (followed), execs, and signals (delivered).  It exits when
 * the last of them has.
 *
 * The processes handed over are the tree's that still run and those of every task we trace that
 * the tree does not know yet (made just before the end, its first stop not read): let go without
 * a detach, PTRACE_O_EXITKILL would kill them with the supervisor (tree_release).
 *
 * Invariant: a left process's filtered call never meets an absent tracer while the drainer runs;
 * a process the drainer cannot seize (gone meanwhile) is skipped.
 */
#ifndef PROSPER_SUP_DRAINER_H
#define PROSPER_SUP_DRAINER_H
#include <sys/types.h>

/* Processes pids[0..n) (their threads found in /proc), sent SIGSTOP by the caller before it
 * detaches them, are handed to the drainer: call drainer_start before detaching, drainer_go after.
 * 0, or -1 if no drainer could be made (the processes are then continued: SIGCONT). */
struct drainer {
	int go_fd;   /* written to when every thread is detached */
	pid_t pid;
};
int drainer_start(struct drainer *d, const pid_t *pids, int n);
void drainer_go(struct drainer *d, const pid_t *pids, int n);

#endif

/* children.h -- the program's child processes and its own pipes (children.c), until the
 * process tree is persisted.
 *
 * A checkpoint is a cut of one process.  While the program has a child -- running, or exited and
 * not yet waited for -- its state depends on a process the checkpoint does not hold (the child's
 * work, its exit status, the pipe between them), so no cut is taken: checkpoints wait until the
 * program has no child again (a `pyenv` shim's `$(...)`, a `subprocess.run` between two phases of
 * work).  The children run on unsupervised (detached at their first stop), exactly as natively.
 * A pipe the program made itself (not one it inherited at launch) is persisted when it is empty
 * at the cut -- resume makes it again, every end at its number (a self-pipe, a pipe made for a
 * child not started yet) -- so the cut also waits while such a pipe holds bytes in flight.
 *
 * Invariants: a pid is dropped only once it is no longer the program's child (waited for, or
 * gone: /proc/PID is absent or names another parent); a child we could not record is counted as
 * alive until the program has none at all (every /proc/PID/task/TID/children is empty).
 */
#ifndef PROSPER_SUP_CHILDREN_H
#define PROSPER_SUP_CHILDREN_H
#include "sup.h"

/* Record a child the program created (the pid its fork/vfork/clone event named). */
void children_add(struct sup *s, pid_t child);
/* Has the program a child now (alive or a zombie not yet waited for)?  Drops the ones it has not. */
int children_any(struct sup *s);
/* Remember the pipes this supervisor passes to the program at launch (its own fds without
 * FD_CLOEXEC): they are the user's (`prosper run prog | tee`), not the program's own. */
void children_note_inherited_pipes(struct sup *s);
/* Is this fd link text ("pipe:[ino]") a pipe the program made itself, not one it inherited? */
int children_pipe_is_own(const struct sup *s, const char *link);
/* The lowest fd >= 3 of the program on a pipe of its own that holds bytes now, or -1. */
int children_pipe_in_flight(struct sup *s);

#endif

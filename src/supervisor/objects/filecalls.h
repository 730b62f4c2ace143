/* filecalls.h -- one system call of the program's, stopped by the file filter before it runs
 * (filefilter.h): what it is about to change recorded in the file-undo journal (filechange.h), or,
 * for a call that may make fd 1 or 2 a file, the process's writes to them sent to us from then on.
 *
 * Invariants
 *   - Called at the call's seccomp stop, before it runs, with the journal's mutex held
 *     (filetrack_stop): what a call changes is recorded whatever the call then does -- it may fail
 *     or never run (undoput.h).
 *   - Only the registers are read, and the program's memory for its arguments (paths, iovecs); a
 *     process whose writes to fd 1 or 2 must be seen gets the tightening filter injected, and the
 *     call is made again under it.
 */
#ifndef PROSPER_SUP_FILECALLS_H
#define PROSPER_SUP_FILECALLS_H
#include <sys/types.h>
#include <sys/user.h>
#include "sup.h"

void filecalls_record(struct tree *t, struct sup *m, pid_t tid, const struct user_regs_struct *r);

#endif

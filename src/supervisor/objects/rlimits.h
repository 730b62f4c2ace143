/* rlimits.h -- the program's resource limits across a checkpoint and a resume (rlimits.c).
 *
 * Limits are kernel state: a program that lowers RLIMIT_NOFILE, raises its soft limit to the
 * hard one to hold many files, or sets RLIMIT_CORE/CPU, got the resume's own limits back -- and
 * a resume could not even reopen an fd above the relaunch's soft limit.  The shim counts the
 * program's setrlimit/prlimit calls, before each and again after it (a cut on either side of the
 * call then finds the count moved since the record was last made); at the first checkpoint of an image, and at one where that
 * count moved, the supervisor reads the limits (prlimit, 16 system calls of its own) into the
 * shim's record (struct shim_limits) before memory is saved; otherwise a checkpoint costs one
 * 8-byte read.  A resume sets them again from the restored record, before it reopens the
 * program's files.  A limit changed from outside (prlimit --pid) after the first checkpoint is
 * seen only at the program's next change of its own.
 *
 * Invariants
 *   - The record always holds the limits at the last checkpoint of this image (rewritten after
 *     a resume and after an exec, whose new image starts with an empty record).
 *   - A hard limit the resume may not raise (no CAP_SYS_RESOURCE, the program had a higher one)
 *     is left as it is, with one line on stderr naming it; the resume goes on.
 */
#ifndef PROSPER_SUP_RLIMITS_H
#define PROSPER_SUP_RLIMITS_H
#include "sup.h"

/* At a stop, before memory is read.  0 or a negative errno. */
int limits_capture(struct sup *s);
/* At a resume, memory restored, before the fds are reopened.  The number of limits that
 * differed from the relaunch's and were set. */
int limits_restore(struct sup *s);

#endif

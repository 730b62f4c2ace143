/* loaderlocks.h -- after a resume, the dynamic loader's recursive locks held by a thread are
 * given that thread's new id (loaderlocks.c says why and how). */
#ifndef PROSPER_SUP_LOADERLOCKS_H
#define PROSPER_SUP_LOADERLOCKS_H
#include <sys/types.h>
#include "image.h"

/* In process pid, rebuilt from im and tracked again: every loader lock whose owner is
 * old_tids[t] is given new_tids[t] (n pairs).  The number of locks retagged, or -1 when the
 * program's memory could not be read or written. */
int loader_locks_retag(pid_t pid, const struct img *im, const pid_t *old_tids, const pid_t *new_tids, int n);

#endif

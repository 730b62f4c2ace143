/* lockowners.h -- after a resume, the glibc locks a thread held (recursive, error-checking,
 * robust and PI mutexes, write-locked rwlocks, the dynamic loader's own among them) are given
 * the thread's new id (lockowners.c says why and how). */
#ifndef PROSPER_SUP_LOCKOWNERS_H
#define PROSPER_SUP_LOCKOWNERS_H
#include <sys/types.h>
#include "image.h"

/* In process pid, rebuilt from im and tracked again: every held lock owned by old[t] is given
 * now[t] (n pairs), in the writable private mappings of im.  The number of locks retagged, or -1
 * when the program's memory could not be opened or written. */
int lock_owners_retag(pid_t pid, const struct img *im, const pid_t *old, const pid_t *now, int n);

#endif

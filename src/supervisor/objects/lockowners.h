/* lockowners.h -- after a resume, the locks a thread held that glibc names by its id -- ld.so's
 * recursive locks, robust mutexes -- are given the thread's new id (lockowners.c says why, and
 * which locks are left alone). */
#ifndef PROSPER_SUP_LOCKOWNERS_H
#define PROSPER_SUP_LOCKOWNERS_H
#include <stdint.h>
#include <sys/types.h>
#include "image.h"

/* In process pid, rebuilt from im and tracked again, with n threads: thread t had id old[t], has
 * now[t], and its robust list head at robust_heads[t] (0: none).  The number of locks retagged,
 * or -1 when the program's memory could not be opened or written. */
int lock_owners_retag(pid_t pid, const struct img *im, const uint64_t *robust_heads, const pid_t *old,
		      const pid_t *now, int n);

#endif

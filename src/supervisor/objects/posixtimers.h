/* posixtimers.h -- the program's POSIX timers (timer_create) across a checkpoint and a resume
 * (posixtimers.c).
 *
 * A POSIX timer is kernel state: an id, a clock, how it notifies (a signal to the process or to
 * one thread, with a value; or nothing), the time left and the interval.  At each checkpoint the
 * supervisor reads /proc/PID/timers (every timer, whoever made it: libc, librt, a runtime's raw
 * system call) into the shim's record (struct shim_posix_timers) and makes the program read each
 * one's time left into it (timer_gettime, injected) before its memory is saved, so the checkpoint
 * carries them.  A resume, every thread back (a timer may name one), makes each timer again with
 * its own id (PR_TIMER_CREATE_RESTORE_IDS, Linux 6.15), on its clock, notifying as it did, armed
 * for the time it had left counted from the resume (like a timerfd, fd_timerfd.c).
 *
 * Invariants
 *   - The values saved are the ones at the cut: read while every thread is stopped, before memory
 *     is read; the main thread gets its registers back untouched.
 *   - A program with no timer costs one read of /proc/PID/timers per checkpoint, and no write once
 *     its record says none.
 *   - A checkpoint whose timers did not all fit in the record (SHIM_POSIX_TIMERS_MAX), or whose
 *     timer a kernel cannot make again with its id, is not resumed: the restore fails before the
 *     program runs.
 *   - A group-stopped main thread (SIGSTOP) is not made to run: the record keeps the timers of the
 *     checkpoint before (counted in timers_stale).
 */
#ifndef PROSPER_SUP_POSIXTIMERS_H
#define PROSPER_SUP_POSIXTIMERS_H
#include <stddef.h>
#include <sys/types.h>
#include "prosper/internal/shim_proto.h"

/* The timers /proc/PID/timers lists in text, into out (at most max; *lost counts the rest): id,
 * clock, notify, signo, value and the thread a SIGEV_THREAD_ID timer names, by the id `text`
 * gives (the reader's pid namespace).  The number parsed, or -1 if the text is not that file's. */
int posix_timers_parse(const char *text, struct shim_posix_timer *out, int max, uint32_t *lost);

#endif

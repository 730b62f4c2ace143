/* timers.h -- the program's interval timers across a checkpoint and a resume (timers.c).
 *
 * setitimer/alarm timers are kernel state, not memory.  The shim notes which ones the program
 * armed (struct shim_timers, include/prosper/internal/shim_proto.h); at a checkpoint with one,
 * the program is made to read them (getitimer, injected) into the shim's record before its
 * memory is saved, so the checkpoint carries them; a resume arms them again from the restored
 * record.  A program that never arms one costs one 8-byte read per checkpoint.
 *
 * Invariants
 *   - The values saved are the ones at the cut: the injection happens while every thread is
 *     stopped, before memory is read, and the main thread gets its registers back untouched.
 *   - A periodic timer read with no time left has fired and its signal is not taken yet (the
 *     kernel rearms ITIMER_REAL only when its SIGALRM is dequeued): a resume arms it to fire at
 *     once, not leaves it off -- the program would lose its timer for good.
 *   - A group-stopped main thread (SIGSTOP) is not made to run: its record keeps the values of
 *     the checkpoint before (counted in timers_stale).
 */
#ifndef PROSPER_SUP_TIMERS_H
#define PROSPER_SUP_TIMERS_H
#include "sup.h"

/* At a stop, all threads stopped, before memory is read.  0 or a negative errno. */
int timers_capture(struct sup *s);
struct inject;
/* At a resume, memory restored: arm the checkpoint's timers again through in.  The number
 * armed, or a negative errno. */
int timers_restore(struct sup *s, struct inject *in);

#endif

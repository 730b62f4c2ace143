/* altstack.h -- each thread's alternate signal stack across a checkpoint and a resume (altstack.c).
 *
 * sigaltstack() is per-thread kernel state that no /proc file shows, and programs set it with raw
 * system calls (the Go runtime gives every thread one and dies without it at its first signal:
 * "signal 23 received on thread with no signal stack").  So the thread itself is made to ask:
 * sigaltstack(NULL, old) is injected, old written into the shim's scratch (never memory the
 * program uses: its dead stack once, which a program reading below its SP saw change), and read
 * back.  That costs a few ptrace round trips, so it is not done at every stop: a thread is
 * asked at the first stop that finds it, and at the next ones while it has none, up to
 * ALTSTACK_EARLY_ASKS (a new thread sets its own a moment after it starts; the Go runtime's
 * threads do, and a kill before their ask resumed one without: "signal 23 received on thread
 * with no signal stack"); then every ALTSTACK_EVERY cuts, one thread per stop.  A resume sets
 * the recorded one again in each thread before it runs.
 *
 * Invariants
 *   - The asking thread gets its registers back untouched (the caller's capture reads them
 *     before or after, alike); a group-stopped thread (SIGSTOP) is not made to run.
 *   - A thread never asked (img_altstack.known = 0) is resumed without one, as before this record
 *     existed; a stack changed between two asks is resumed as last asked (docs/limitations.md).
 */
#ifndef PROSPER_SUP_ALTSTACK_H
#define PROSPER_SUP_ALTSTACK_H
#include <stdint.h>
#include "image.h"

struct sup;
struct inject;

#define ALTSTACK_EARLY_ASKS 3
#define ALTSTACK_EVERY 32

/* At a stop, with every thread stopped: ask the threads that are due (above).  0, or a negative
 * errno when the injection itself failed (the thread is gone or stopped otherwise). */
int altstack_ask(struct sup *s);

/* At a resume, in the thread `in` controls, before it runs: set a recorded stack again.  The
 * call runs with its stack pointer at stack_top (outside the alternate stack: the kernel refuses
 * to change it from a thread running on it); the stack_t is written at scratch through `proc`
 * (the process's injector, which holds its memory).  0, or a negative errno. */
int altstack_restore(struct inject *in, struct inject *proc, uint64_t scratch, uint64_t stack_top,
		     const struct img_altstack *a);

#endif

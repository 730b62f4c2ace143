/* pending.h -- signals pending at a checkpoint, queued again at a resume (pending.c).
 *
 * A signal can be pending at the cut: blocked by the program (a thread that waits for it in
 * sigwait, a mask held over a critical section), or arrived while the program was stopped for
 * the checkpoint.  Every queued instance (PTRACE_PEEKSIGINFO: the process's queue and each
 * thread's) is written, with its siginfo, into the shim's record (struct shim_pending,
 * include/prosper/internal/shim_proto.h) before memory is saved, so the checkpoint carries them;
 * a resume queues each again, in order, to the same thread (rt_tgsigqueueinfo) or the process
 * (rt_sigqueueinfo), from inside the program.
 *
 * Invariants
 *   - The record always describes this cut: it is rewritten empty when nothing is pending and
 *     the last checkpoint had something (no signal is delivered twice after a resume).
 *   - SIGKILL and SIGSTOP are not kept (a kill ends the run; a stopped program resumes running).
 */
#ifndef PROSPER_SUP_PENDING_H
#define PROSPER_SUP_PENDING_H
#include "sup.h"

/* At a stop, all threads stopped, before memory is read.  0 or a negative errno. */
int pending_capture(struct sup *s);
struct inject;
/* At a resume, memory restored and every thread recreated, as the last calls in the main
 * thread (in) before its registers: each thread queues its own signals (the main thread also
 * the process's) with every signal blocked, then gets its mask back, so that each is delivered
 * when the program runs, with its siginfo, not during the restore.  It also writes when the
 * resume command began into the record (the shim's bind() reads it).  The number queued, or a
 * negative errno. */
int pending_restore(struct sup *s, struct inject *in, const struct img *im);

#endif

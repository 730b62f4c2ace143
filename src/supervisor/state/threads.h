/* threads.h -- the table of the program's threads (threads.c).
 *
 * s->thr[0] is the main thread (tid == pid) and is never removed.  A thread is `stopped` while it
 * sits in a stop of ours (PTRACE_INTERRUPT, or the first stop of a new thread) and `listening`
 * while it is group-stopped (SIGSTOP & co.): such a thread is let go with PTRACE_LISTEN, so that it
 * stays in its group stop.
 */
#ifndef PROSPER_SUP_THREADS_H
#define PROSPER_SUP_THREADS_H
#include "sup.h"

struct thr *threads_find(struct sup *s, pid_t tid);
/* The entry of tid, added if new; NULL (and checkpointing disabled) when the table is full. */
struct thr *threads_add(struct sup *s, pid_t tid);
void threads_remove(struct sup *s, pid_t tid);
int threads_all_stopped(const struct sup *s);
/* Let every thread run again after our stop (group-stopped ones stay in their stop). */
void threads_resume_all(struct sup *s);
/* The same with another ptrace request for the stopped ones (a lazy resume: PTRACE_SYSCALL). */
void threads_resume_all_as(struct sup *s, int request);
/* Is tid a thread of process pid?  (A forked child's first stop looks like a new thread's.) */
int threads_same_process(pid_t pid, pid_t tid);
/* Does task tid (a thread or a process, a zombie included) still exist?  Not once it was waited
 * for. */
int task_exists(pid_t tid);

#endif

/* taskpart.h -- the parts of a process's kernel state besides its memory, threads and fds that a
 * checkpoint keeps through the shim's records: interval timers (timers.c), pending signals
 * (pending.c), resource limits (rlimits.c).  Each part is one file holding both halves and exports
 * one `const struct task_part`; task_parts[] (taskpart.c) lists them.  Capture and restore call
 * them only through the table.
 *
 *   capture  task_capture(): at a stop, every thread stopped, before the threads' registers and
 *            the memory are read, each part in table order writes its record (a part may run the
 *            main thread for a system call: its registers are read after).
 *   restore  task_restore(): in the relaunched process, memory restored, each part of a phase
 *            sets its state again; the count it set goes to its resume statistic.
 *
 * An alternate signal stack is a thread's, not a process's: asked and set thread by thread with
 * the thread's registers (altstack.h), so it is not a part.  To add a part: one file with its
 * struct task_part, one row in task_parts[], its statistic in struct resume_stats.
 */
#ifndef PROSPER_SUP_TASKPART_H
#define PROSPER_SUP_TASKPART_H
#include <stddef.h>
#include "image.h"

struct sup;
struct inject;

/* When a part is set again at a resume. */
enum task_phase {
	TASK_BEFORE_FDS, /* before the fds are made again (an fd may lie above the relaunch's limit) */
	TASK_AFTER_FDS,  /* with the signal handlers, mask and alternate stack, before the threads */
	TASK_LAST,       /* the last calls, every thread made again, before the registers */
};

struct task_part {
	const char *name;           /* in messages: "the interval timers" */
	enum task_phase phase;
	/* at a stop: 0 or a negative errno */
	int (*capture)(struct sup *s);
	/* at a resume, through the main thread (in): the number set again, or a negative errno; NULL:
	 * nothing to set (its record is memory, restored with the rest) */
	int (*restore)(struct sup *s, struct inject *in, const struct img *im);
	size_t restored;            /* offsetof(struct resume_stats, its count) */
};

extern const struct task_part *const task_parts[];
extern const int task_nparts;

/* Every part's capture, in table order.  0 or the first negative errno. */
int task_capture(struct sup *s);
/* Every part of phase, set again.  0, or -1 with a one-line why. */
int task_restore(struct sup *s, struct inject *in, const struct img *im, enum task_phase phase, char *why,
		 size_t whylen);

#endif

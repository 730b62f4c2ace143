/* taskpart.c -- the table of a process's state parts and the calls through it (taskpart.h). */
#include "taskpart.h"
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "sup.h"

extern const struct task_part task_part_shimless, task_part_timers, task_part_posix_timers, task_part_pending,
	task_part_limits;

/* An image without the shim has its records read first (shimrecords.c); then the timers: reading them
 * runs the main thread for a system call.  At a resume the POSIX timers come before the pending
 * signals (both last): a signal queued again stays pending. */
const struct task_part *const task_parts[] = { &task_part_shimless, &task_part_timers, &task_part_posix_timers,
					       &task_part_pending, &task_part_limits };
const int task_nparts = (int)(sizeof task_parts / sizeof task_parts[0]);

int task_capture(struct sup *s)
{
	for (int i = 0; i < task_nparts; i++) {
		int rc = task_parts[i]->capture(s);
		if (rc)
			return rc;
	}
	return 0;
}

int task_restore(struct sup *s, struct inject *in, const struct img *im, enum task_phase phase, char *why,
		 size_t whylen)
{
	for (int i = 0; i < task_nparts; i++) {
		const struct task_part *p = task_parts[i];
		if (p->phase != phase || !p->restore)
			continue;
		int n = p->restore(s, in, im);
		if (n < 0) {
			snprintf(why, whylen, "cannot set %s again: %s", p->name, strerror(-n));
			return -1;
		}
		*(uint64_t *)((char *)&s->tree->stats.resume + p->restored) = (uint64_t)n;
	}
	return 0;
}

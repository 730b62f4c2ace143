/* shimrecords.c -- the records of an image without the shim (base/shimless.h), read again at
 * every checkpoint: a part of the process's state (taskpart.h) with nothing of its own to set at a
 * resume -- its records are memory of the program's, restored with the rest, and set again from
 * there by the parts and the restore that read them (timers.c, restore.c). */
#include <errno.h>
#include <stdio.h>
#include "refusal.h"
#include "taskpart.h"
#include "shimless.h"
#include "sup.h"

/* An image without the shim (shimless.h): its signal dispositions and interval timers read into
 * its records by the blob, in one injected run.  A group-stopped main thread is not made to run:
 * no thread of it has run since the last checkpoint read them (timers_stale counts it). */
static int shimless_capture(struct sup *s)
{
	if (!s->hello.injected)
		return 0;
	if (s->thr[0].listening) {
		s->tree->stats.timers_stale++;
		return 0;
	}
	int rc = shimless_refresh(s->pid, &s->hello);
	if (rc == -EPROTO) /* the gate faulted: the program mapped over the area */
		fprintf(stderr, "%s: the program replaced the memory at %#llx that its checkpoints run code in (a "
			"statically linked program's; docs/limitations.md)\n", sup_command(),
			(unsigned long long)s->hello.gate);
	return rc;
}

const struct task_part task_part_shimless = { .name = "the records of an image without the shim",
					      .phase = TASK_AFTER_FDS, .capture = shimless_capture };


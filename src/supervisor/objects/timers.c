/* timers.c -- interval timers across a checkpoint and a resume (timers.h). */
#include "timers.h"
#include "taskpart.h"
#include <errno.h>
#include <stddef.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include "inject.h"
#include "prosper/internal/shim_proto.h"

int timers_capture(struct sup *s)
{
	uint64_t used = 0;
	if (s->hello.injected) /* read with the rest of its records (task_part_shimless) */
		return 0;
	if (!s->timers_addr || !s->gate || proc_mem_read(s->pid, s->timers_addr, &used, sizeof used) != 0 || !used)
		return 0;
	if (s->thr[0].listening) {
		s->tree->stats.timers_stale++;
		return 0;
	}
	struct inject in;
	int rc = inject_open(&in, s->pid, s->gate);
	for (int w = 0; w < 3 && !rc; w++) {
		uint64_t at = s->timers_addr + offsetof(struct shim_timers, now) + (uint64_t)w * sizeof(struct shim_itimerval);
		if (used >> w & 1) {
			long got = inject_syscall(&in, SYS_getitimer, w, (long)at, 0, 0, 0, 0);
			rc = got < 0 ? (int)got : 0;
		}
	}
	/* the program goes on exactly where it was stopped */
	if (ptrace(PTRACE_SETREGS, s->pid, 0, &in.base) != 0 && !rc)
		rc = -errno;
	inject_close(&in);
	return rc;
}

int timers_restore(struct sup *s, struct inject *in)
{
	struct shim_timers t;
	if (!s->timers_addr || proc_mem_read(s->pid, s->timers_addr, &t, sizeof t) != 0)
		return 0;
	int armed = 0;
	for (int w = 0; w < 3; w++) {
		struct shim_itimerval *v = &t.now[w];
		int expired = !v->value_sec && !v->value_usec;
		if (!(t.used >> w & 1) || (expired && !v->interval_sec && !v->interval_usec))
			continue;
		uint64_t at = s->timers_addr + offsetof(struct shim_timers, now) + (uint64_t)w * sizeof *v;
		if (expired) {
			/* A periodic timer read with nothing left: it fired and its signal was not taken
			 * yet (ITIMER_REAL comes back only when its SIGALRM is dequeued).  It fires again
			 * at once, so that taking the signal brings it back. */
			v->value_usec = 1;
			if (inject_write(in, at, v, sizeof *v) != 0)
				return -EIO;
		}
		long rc = inject_syscall(in, SYS_setitimer, w, (long)at, 0, 0, 0, 0);
		if (rc < 0)
			return (int)rc;
		armed++;
	}
	return armed;
}

static int restore_part(struct sup *s, struct inject *in, const struct img *im)
{
	(void)im;
	return timers_restore(s, in);
}

const struct task_part task_part_timers = { .name = "the interval timers", .phase = TASK_AFTER_FDS,
					    .capture = timers_capture, .restore = restore_part,
					    .restored = offsetof(struct resume_stats, timers_restored) };

/* rlimits.c -- resource limits across a checkpoint and a resume (rlimits.h). */
#include "rlimits.h"
#include "taskpart.h"
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include "prosper/internal/shim_proto.h"

static const char *const names[SHIM_NLIMITS] = {
	"RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_DATA", "RLIMIT_STACK", "RLIMIT_CORE", "RLIMIT_RSS",
	"RLIMIT_NPROC", "RLIMIT_NOFILE", "RLIMIT_MEMLOCK", "RLIMIT_AS", "RLIMIT_LOCKS", "RLIMIT_SIGPENDING",
	"RLIMIT_MSGQUEUE", "RLIMIT_NICE", "RLIMIT_RTPRIO", "RLIMIT_RTTIME",
};

int limits_capture(struct sup *s)
{
	uint64_t changes = 0;
	if (!s->limits_addr || proc_mem_read(s->pid, s->limits_addr, &changes, sizeof changes))
		return 0;
	if (s->limits_written && changes == s->limits_seen && !s->hello.injected)
		return 0; /* the record holds them already (without the shim nothing counts changes) */
	struct shim_limits now = { .known = 1 };
	for (int r = 0; r < SHIM_NLIMITS; r++) {
		struct rlimit l;
		if (prlimit(s->pid, (__rlimit_resource_t)r, NULL, &l) != 0)
			return -errno;
		now.lim[r].cur = l.rlim_cur, now.lim[r].max = l.rlim_max;
	}
	size_t at = offsetof(struct shim_limits, known);
	if (proc_mem_write(s->pid, s->limits_addr + at, (const char *)&now + at, sizeof now - at))
		return -EIO;
	s->limits_seen = changes;
	s->limits_written = 1;
	return 0;
}

int limits_restore(struct sup *s)
{
	struct shim_limits saved;
	if (!s->limits_addr || proc_mem_read(s->pid, s->limits_addr, &saved, sizeof saved) || saved.known != 1)
		return 0;
	s->limits_written = 0; /* the next checkpoint writes the record again */
	int set = 0;
	for (int r = 0; r < SHIM_NLIMITS; r++) {
		struct rlimit want = { saved.lim[r].cur, saved.lim[r].max }, now;
		if (prlimit(s->pid, (__rlimit_resource_t)r, NULL, &now) != 0 ||
		    (now.rlim_cur == want.rlim_cur && now.rlim_max == want.rlim_max))
			continue;
		if (prlimit(s->pid, (__rlimit_resource_t)r, &want, NULL) == 0) {
			set++;
			continue;
		}
		/* a hard limit above ours: keep ours, and as much of the soft one as it allows */
		fprintf(stderr, "%s: %s cannot be raised back to %llu (%s); it stays %llu\n", sup_command(), names[r],
			(unsigned long long)want.rlim_max, strerror(errno), (unsigned long long)now.rlim_max);
		want.rlim_max = now.rlim_max;
		if (want.rlim_cur > want.rlim_max)
			want.rlim_cur = want.rlim_max;
		set += prlimit(s->pid, (__rlimit_resource_t)r, &want, NULL) == 0;
	}
	return set;
}

static int restore_part(struct sup *s, struct inject *in, const struct img *im)
{
	(void)in, (void)im;
	return limits_restore(s);
}

const struct task_part task_part_limits = { .name = "the resource limits", .phase = TASK_BEFORE_FDS,
					    .capture = limits_capture, .restore = restore_part,
					    .restored = offsetof(struct resume_stats, limits_restored) };

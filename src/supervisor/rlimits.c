/* rlimits.c -- resource limits across a checkpoint and a resume (rlimits.h). */
#include "rlimits.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include "prosper/internal/shim_proto.h"

static const char *const names[SHIM_NLIMITS] = {
	"RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_DATA", "RLIMIT_STACK", "RLIMIT_CORE", "RLIMIT_RSS",
	"RLIMIT_NPROC", "RLIMIT_NOFILE", "RLIMIT_MEMLOCK", "RLIMIT_AS", "RLIMIT_LOCKS", "RLIMIT_SIGPENDING",
	"RLIMIT_MSGQUEUE", "RLIMIT_NICE", "RLIMIT_RTPRIO", "RLIMIT_RTTIME",
};

int limits_capture(struct sup *s)
{
	if (!s->limits_addr)
		return 0;
	struct shim_limits now = { .known = 1 };
	for (int r = 0; r < SHIM_NLIMITS; r++) {
		struct rlimit l;
		if (prlimit(s->pid, (__rlimit_resource_t)r, NULL, &l) != 0)
			return -errno;
		now.lim[r].cur = l.rlim_cur, now.lim[r].max = l.rlim_max;
	}
	if (s->limits_written && !memcmp(&now, &s->limits_last, sizeof now))
		return 0;
	struct iovec lo = { &now, sizeof now }, re = { (void *)(uintptr_t)s->limits_addr, sizeof now };
	if (process_vm_writev(s->pid, &lo, 1, &re, 1, 0) != (ssize_t)sizeof now)
		return -EIO;
	memcpy(&s->limits_last, &now, sizeof now);
	s->limits_written = 1;
	return 0;
}

int limits_restore(struct sup *s)
{
	struct shim_limits saved;
	struct iovec lo = { &saved, sizeof saved }, re = { (void *)(uintptr_t)s->limits_addr, sizeof saved };
	if (!s->limits_addr || process_vm_readv(s->pid, &lo, 1, &re, 1, 0) != (ssize_t)sizeof saved || saved.known != 1)
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

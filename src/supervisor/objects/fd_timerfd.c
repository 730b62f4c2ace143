/* fd_timerfd.c -- a timerfd the program holds (fdkind.h): the timers of event loops (libuv's,
 * glib's, systemd's, tokio's) and of servers' periodic work.
 *
 * Recorded, from /proc's fdinfo, in its payload "CLOCK FLAGS TICKS VSEC VNSEC ISEC INSEC" (all
 * decimal): its clock, the flags it was last set with (TFD_TIMER_ABSTIME, _CANCEL_ON_SET), the
 * expirations not read yet, the time left to the next one and the interval.  A resume makes a
 * timerfd on that clock at its number, sets the expirations not read (TFD_IOC_SET_TICKS) and arms
 * it for the time that was left, counted from the resume: the time the program was dead does not
 * count, so the timer fires as it would have relative to the checkpoint (a periodic one then
 * every interval; one that had expired unread reads its expirations at once -- a periodic one
 * then expires an interval after the resume; a disarmed one stays disarmed).  An absolute timer is armed so too (what /proc shows of it is the time left),
 * and a REALTIME one loses its cancel-on-set (docs/limitations.md).  O_NONBLOCK and O_CLOEXEC are
 * the fd's own.  Like a signalfd, one timerfd that several fds or processes shared comes back as
 * one per fd (/proc names no timer), so an expiration read through one is not read through the
 * others.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/ioctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include "fdkind.h"
#include "inject.h"
#include "sup.h"

#define TIMERFD_LINK "anon_inode:[timerfd]"
#define TFD_IOC_SET_TICKS _IOW('T', 0, uint64_t) /* the kernel's uapi (timerfd.h): not in glibc's */
#define TFD_FLAGS_KNOWN 3u                       /* TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET */

struct timer_rec {
	int clock;
	unsigned flags;
	unsigned long long ticks;
	long long vsec, vnsec, isec, insec;
};

static int claims(struct sup *s, const struct fd_info *fi)
{
	(void)s;
	return fd_is_link(fi, TIMERFD_LINK);
}

static int record(struct fd_capture *c)
{
	char line[128];
	FILE *f = fd_fdinfo(c);
	if (!f)
		return -errno;
	struct timer_rec t = { 0 };
	int have = 0;
	while (fgets(line, sizeof line, f)) {
		have |= (sscanf(line, "clockid: %d", &t.clock) == 1) << 0;
		have |= (sscanf(line, "ticks: %llu", &t.ticks) == 1) << 1;
		have |= (sscanf(line, "settime flags: %o", &t.flags) == 1) << 2;
		have |= (sscanf(line, "it_value: (%lld, %lld)", &t.vsec, &t.vnsec) == 2) << 3;
		have |= (sscanf(line, "it_interval: (%lld, %lld)", &t.isec, &t.insec) == 2) << 4;
	}
	fclose(f);
	if (have != 0x1f)
		return -EPROTO;
	char payload[160];
	snprintf(payload, sizeof payload, "%d %u %llu %lld %lld %lld %lld", t.clock, t.flags, t.ticks, t.vsec, t.vnsec,
		 t.isec, t.insec);
	c->e->payload = img_str(c->strings, payload);
	return c->e->payload == IMG_NONE ? -ENOMEM : 0;
}

static int clock_known(int clock)
{
	return clock == CLOCK_REALTIME || clock == CLOCK_MONOTONIC || clock == CLOCK_BOOTTIME ||
	       clock == CLOCK_REALTIME_ALARM || clock == CLOCK_BOOTTIME_ALARM;
}

/* The payload's grammar: seven decimal numbers, one space apart, nothing else; a clock timerfd
 * takes, known flags, times with nanoseconds below a second. */
static int parse(const char *p, struct timer_rec *t)
{
	int n = 0;
	if (!p || sscanf(p, "%d %u %llu %lld %lld %lld %lld%n", &t->clock, &t->flags, &t->ticks, &t->vsec, &t->vnsec,
			 &t->isec, &t->insec, &n) != 7 || p[n] || p[0] == ' ')
		return 0;
	for (const char *q = p; *q; q++) /* no signs, no double spaces: what record writes */
		if (!(*q >= '0' && *q <= '9') && !(*q == ' ' && q[1] >= '0' && q[1] <= '9'))
			return 0;
	return clock_known(t->clock) && !(t->flags & ~TFD_FLAGS_KNOWN) && t->vnsec < 1000000000 && t->insec < 1000000000;
}

static enum refusal check(const struct img *im, const struct tree_view *tv, const struct img_fd *f, char *why, size_t whylen)
{
	(void)tv;
	struct timer_rec t;
	if (parse(img_s(im, f->payload), &t))
		return 0;
	snprintf(why, whylen, "fd %d: the checkpoint's record of this timerfd is damaged", f->fd);
	return REFUSE_POOL_CORRUPT;
}

static int reopen(struct fd_restore *r, const struct img_fd *f)
{
	struct timer_rec t;
	parse(img_s(r->im, f->payload), &t); /* checked at the admission */
	struct inject *in = &r->j->in;
	long fd = inject_syscall(in, SYS_timerfd_create, t.clock, 0, 0, 0, 0, 0);
	/* the time left, then the expirations not read (setting the time clears them) */
	struct timespec arm[2] = { { (time_t)t.isec, (long)t.insec }, { (time_t)t.vsec, (long)t.vnsec } };
	/* A periodic timer that expired and was not read since shows no time left: the kernel moves
	 * it on to its next expiration only when it is read.  Its next one is an interval away. */
	if (!t.vsec && !t.vnsec)
		arm[1] = arm[0];
	uint64_t ticks = t.ticks;
	int ok = fd >= 0;
	if (ok && (arm[1].tv_sec || arm[1].tv_nsec))
		ok = inject_write(in, r->j->scratch, arm, sizeof arm) == 0 &&
		     inject_syscall(in, SYS_timerfd_settime, fd, 0, (long)r->j->scratch, 0, 0, 0) == 0;
	if (ok && ticks)
		ok = inject_write(in, r->j->scratch, &ticks, sizeof ticks) == 0 &&
		     inject_syscall(in, SYS_ioctl, fd, (long)TFD_IOC_SET_TICKS, (long)r->j->scratch, 0, 0, 0) == 0;
	int rc = ok ? fd_place(r, fd, f) : -1;
	if (fd >= 0 && fd != f->fd)
		inject_syscall(in, SYS_close, fd, 0, 0, 0, 0, 0);
	if (rc)
		snprintf(r->why, r->whylen, "fd %d: cannot make the program's timerfd again", f->fd);
	return rc;
}

const struct fd_kind fd_kind_timerfd = { .type = IMG_FD_TIMERFD, .name = "timerfd", .phase = FD_PHASE_OPEN,
					 .claims = claims, .record = record, .check = check, .reopen = reopen };

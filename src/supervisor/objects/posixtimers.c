/* posixtimers.c -- POSIX timers across a checkpoint and a resume (posixtimers.h). */
#include "posixtimers.h"
#include "taskpart.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "inject.h"
#include "pidns.h"
#include "sup.h"

#define PR_TIMER_CREATE_RESTORE_IDS 77 /* Linux 6.15 uapi: timer_create takes the id it is given */
#define RESTORE_IDS_OFF 0
#define RESTORE_IDS_ON 1
#define NOTIFY_THREAD_ID 4             /* SIGEV_THREAD_ID */

int posix_timers_parse(const char *text, struct shim_posix_timer *out, int max, uint32_t *lost)
{
	int n = 0;
	*lost = 0;
	for (const char *p = text; *p;) {
		struct shim_posix_timer t = { 0 };
		char how[16], whom[8];
		int pid = 0, used = 0;
		unsigned long long value = 0;
		/* four lines a timer, as the kernel's show_timer writes them */
		if (sscanf(p, "ID: %d\nsignal: %d/%llx\nnotify: %15[a-z]/%7[a-z].%d\nClockID: %d\n%n", &t.id, &t.signo, &value,
			   how, whom, &pid, &t.clock, &used) != 7 || !used)
			return -1;
		p += used;
		t.value = value;
		if (!strcmp(how, "signal"))
			t.notify = SIGEV_SIGNAL;
		else if (!strcmp(how, "none"))
			t.notify = SIGEV_NONE;
		else if (!strcmp(how, "thread"))
			t.notify = SIGEV_THREAD;
		else
			return -1;
		if (!strcmp(whom, "tid")) {
			t.notify |= NOTIFY_THREAD_ID;
			t.tid = pid;
		} else if (strcmp(whom, "pid")) {
			return -1;
		}
		if (n < max)
			out[n++] = t;
		else
			(*lost)++;
	}
	return n;
}

/* /proc/PID/timers whole into buf (NUL-terminated).  0 or a negative errno. */
static int read_timers(pid_t pid, char *buf, size_t cap)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/timers", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t len = 0;
	ssize_t got;
	while (len + 1 < cap && (got = read(fd, buf + len, cap - 1 - len)) > 0)
		len += (size_t)got;
	int e = errno;
	close(fd);
	buf[len] = 0;
	return got < 0 ? -e : 0;
}

static int capture(struct sup *s)
{
	if (!s->posix_timers_addr || !s->gate)
		return 0;
	/* 32 timers at about 90 bytes each, and room to count the ones beyond */
	char text[16384];
	struct shim_posix_timer t[SHIM_POSIX_TIMERS_MAX];
	uint32_t lost = 0;
	int rc = read_timers(s->pid, text, sizeof text);
	if (rc == -ENOENT)
		return 0; /* a kernel built without CONFIG_CHECKPOINT_RESTORE shows none (docs/limitations.md) */
	int n = rc ? rc : posix_timers_parse(text, t, SHIM_POSIX_TIMERS_MAX, &lost);
	if (n < 0)
		return n == -1 ? -EPROTO : n;
	if (!n && !lost && s->posix_timers_written == 0)
		return 0; /* none, and the record says so */
	if (s->thr[0].listening) {
		s->tree->stats.timers_stale++;
		return 0;
	}
	for (int i = 0; i < n; i++)
		if (t[i].notify & NOTIFY_THREAD_ID && !(t[i].tid = pidns_own_id(t[i].tid)))
			return -ESRCH; /* the thread it names is gone */
	struct { uint32_t n, lost; } head = { (uint32_t)n, lost };
	if (proc_mem_write(s->pid, s->posix_timers_addr, &head, sizeof head) != 0 ||
	    (n && proc_mem_write(s->pid, s->posix_timers_addr + offsetof(struct shim_posix_timers, t), t,
				 (size_t)n * sizeof t[0]) != 0))
		return -EIO;
	s->posix_timers_written = n;
	if (!n)
		return 0;
	struct inject in;
	rc = inject_open(&in, s->pid, s->gate);
	for (int i = 0; i < n && !rc; i++) {
		uint64_t at = s->posix_timers_addr + offsetof(struct shim_posix_timers, t) +
			      (uint64_t)i * sizeof t[0] + offsetof(struct shim_posix_timer, spec);
		long got = inject_syscall(&in, SYS_timer_gettime, t[i].id, (long)at, 0, 0, 0, 0);
		rc = got < 0 ? (int)got : 0;
	}
	/* the program goes on exactly where it was stopped */
	if (ptrace(PTRACE_SETREGS, s->pid, 0, &in.base) != 0 && !rc)
		rc = -errno;
	inject_close(&in);
	return rc;
}

/* Timer t made again in the process of `in`, with its id: 0 or a negative errno. */
static int make_one(struct sup *s, struct inject *in, const struct shim_posix_timer *t, uint64_t at)
{
	/* struct sigevent as the kernel reads it: value, signo, notify, then the thread's id */
	uint8_t ev[64] = { 0 };
	memcpy(ev, &t->value, 8);
	memcpy(ev + 8, &t->signo, 4);
	memcpy(ev + 12, &t->notify, 4);
	memcpy(ev + 16, &t->tid, 4);
	uint64_t scratch = s->posix_timers_addr + offsetof(struct shim_posix_timers, scratch);
	int32_t id = t->id;
	if (inject_write(in, scratch, ev, sizeof ev) || inject_write(in, scratch + 64, &id, sizeof id))
		return -EIO;
	long rc = inject_syscall(in, SYS_timer_create, t->clock, (long)scratch, (long)(scratch + 64), 0, 0, 0);
	if (rc < 0)
		return (int)rc;
	if (proc_mem_read(s->pid, scratch + 64, &id, sizeof id) != 0 || id != t->id)
		return -EEXIST; /* made with another id: the program's would name another timer */
	if (!t->spec.value_sec && !t->spec.value_nsec)
		return 0; /* disarmed (an armed one shows at least 1 ns left) */
	/* relative: the time left, counted from now */
	rc = inject_syscall(in, SYS_timer_settime, t->id, 0, (long)(at + offsetof(struct shim_posix_timer, spec)), 0, 0, 0);
	return rc < 0 ? (int)rc : 0;
}

static int restore(struct sup *s, struct inject *in, const struct img *im)
{
	(void)im;
	struct shim_posix_timers rec;
	if (!s->posix_timers_addr || proc_mem_read(s->pid, s->posix_timers_addr, &rec, sizeof rec) != 0)
		return 0;
	if (rec.lost)
		return -E2BIG; /* more timers than the record holds: the program would miss some */
	if (rec.n > SHIM_POSIX_TIMERS_MAX)
		return -EPROTO;
	if (!rec.n)
		return 0;
	long rc = inject_syscall(in, SYS_prctl, PR_TIMER_CREATE_RESTORE_IDS, RESTORE_IDS_ON, 0, 0, 0, 0);
	if (rc < 0)
		return rc == -EINVAL ? -ENOSYS : (int)rc; /* a kernel before 6.15 cannot give the ids back */
	/* by id, so that a timer the program makes later gets the id after the highest, as it would
	 * most often natively */
	uint32_t order[SHIM_POSIX_TIMERS_MAX];
	for (uint32_t i = 0; i < rec.n; i++)
		order[i] = i;
	for (uint32_t i = 1; i < rec.n; i++)
		for (uint32_t j = i; j > 0 && rec.t[order[j]].id < rec.t[order[j - 1]].id; j--) {
			uint32_t x = order[j];
			order[j] = order[j - 1], order[j - 1] = x;
		}
	int err = 0;
	for (uint32_t k = 0; k < rec.n && !err; k++) {
		uint32_t i = order[k];
		err = make_one(s, in, &rec.t[i],
			       s->posix_timers_addr + offsetof(struct shim_posix_timers, t) + (uint64_t)i * sizeof rec.t[0]);
	}
	rc = inject_syscall(in, SYS_prctl, PR_TIMER_CREATE_RESTORE_IDS, RESTORE_IDS_OFF, 0, 0, 0, 0);
	if (err)
		return err;
	return rc < 0 ? (int)rc : (int)rec.n;
}

const struct task_part task_part_posix_timers = { .name = "the POSIX timers", .phase = TASK_LAST, .capture = capture,
						  .restore = restore,
						  .restored = offsetof(struct resume_stats, posix_timers_restored) };

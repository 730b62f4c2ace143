/* pending.c -- pending signals across a checkpoint and a resume (pending.h). */
#include "pending.h"
#include "taskpart.h"
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include "inject.h"
#include "prosper/internal/shim_proto.h"

/* Append every instance queued for thread t (shared: the process's queue) to rec. */
static int peek(struct shim_pending *rec, pid_t tid, int thread, int shared)
{
	for (uint64_t off = 0;; off++) {
		struct __ptrace_peeksiginfo_args a = { .off = off, .flags = shared ? PTRACE_PEEKSIGINFO_SHARED : 0, .nr = 1 };
		siginfo_t si;
		long n = ptrace(PTRACE_PEEKSIGINFO, tid, &a, &si);
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		if (si.si_signo == SIGKILL || si.si_signo == SIGSTOP)
			continue;
		if (rec->n == SHIM_PENDING_MAX) {
			rec->lost++;
			continue;
		}
		rec->sig[rec->n].thread = shared ? -1 : thread;
		rec->sig[rec->n].pad = 0;
		memcpy(rec->sig[rec->n].info, &si, sizeof rec->sig[rec->n].info);
		rec->n++;
	}
}

int pending_capture(struct sup *s)
{
	if (!s->pending_addr)
		return 0;
	static struct shim_pending rec;
	rec.n = rec.lost = 0;
	int rc = peek(&rec, s->pid, -1, 1);
	for (int t = 0; t < s->nthr && !rc; t++)
		rc = peek(&rec, s->thr[t].tid, t, 0);
	if (rc)
		return rc;
	s->tree->stats.pending_lost += rec.lost;
	if (!rec.n && !s->pending_written)
		return 0; /* the record says "none" already */
	/* the counts, then the records: mask and resumed_ns between them are the resume's, kept */
	uint64_t at = s->pending_addr + offsetof(struct shim_pending, sig);
	if (proc_mem_write(s->pid, s->pending_addr, &rec, offsetof(struct shim_pending, mask)) ||
	    (rec.n && proc_mem_write(s->pid, at, rec.sig, rec.n * sizeof rec.sig[0])))
		return -EIO;
	s->pending_written = rec.n > 0;
	s->tree->stats.pending_saved += rec.n;
	return 0;
}

static long set_mask(struct sup *s, struct inject *in, uint64_t mask)
{
	uint64_t at = s->pending_addr + offsetof(struct shim_pending, mask);
	if (proc_mem_write(s->pid, at, &mask, sizeof mask)) /* in may be a thread's: no mem fd */
		return -EIO;
	return inject_syscall(in, SYS_rt_sigprocmask, SIG_SETMASK, (long)at, 0, 8, 0, 0);
}

/* Queue thread t's records (t == 0: and the process's) from thread t itself, through in: the
 * kernel lets only the target thread queue a signal that names a sender (kill, tgkill).  With
 * every signal blocked meanwhile, then the thread's own mask. */
static int queue_from(struct sup *s, struct inject *in, const struct shim_pending *rec, int t, uint64_t mask)
{
	pid_t tgid = s->thr[0].own ? s->thr[0].own : s->pid; /* ids as the program sees them */
	pid_t tid = s->thr[t].own ? s->thr[t].own : s->thr[t].tid;
	int n = 0;
	for (uint32_t i = 0; i < rec->n; i++) {
		int to = rec->sig[i].thread, sig = ((const siginfo_t *)(const void *)rec->sig[i].info)->si_signo;
		if (to != t && !(t == 0 && to < 0))
			continue;
		if (sig < 1 || sig > 64)
			return -EPROTO;
		long rc = n++ ? 0 : set_mask(s, in, ~0ull);
		uint64_t info = s->pending_addr + offsetof(struct shim_pending, sig) + i * sizeof rec->sig[0] +
				offsetof(__typeof__(rec->sig[0]), info);
		if (!rc)
			rc = to < 0 ? inject_syscall(in, SYS_rt_sigqueueinfo, tgid, sig, (long)info, 0, 0, 0)
				    : inject_syscall(in, SYS_rt_tgsigqueueinfo, tgid, tid, sig, (long)info, 0, 0);
		if (rc < 0)
			return (int)rc;
	}
	long rc = n ? set_mask(s, in, mask) : 0;
	return rc < 0 ? (int)rc : n;
}

int pending_restore(struct sup *s, struct inject *in, const struct img *im)
{
	struct shim_pending rec;
	if (!s->pending_addr)
		return 0;
	uint64_t at = s->pending_addr + offsetof(struct shim_pending, resumed_ns);
	if (proc_mem_write(s->pid, at, &s->tree->run.began_ns, sizeof s->tree->run.began_ns))
		return -EIO;
	if (proc_mem_read(s->pid, s->pending_addr, &rec, sizeof rec) || !rec.n)
		return 0;
	if (rec.n > SHIM_PENDING_MAX)
		return -EPROTO;
	for (uint32_t i = 0; i < rec.n; i++)
		if (rec.sig[i].thread >= s->nthr || rec.sig[i].thread > (int)im->h->nthreads)
			return -EPROTO;
	s->pending_written = 1; /* the next checkpoint rewrites the record, empty if nothing is pending then */
	int total = queue_from(s, in, &rec, 0, im->h->sigblk);
	for (int t = 1; t < s->nthr && total >= 0; t++) {
		struct inject tin;
		if (inject_open_thread(&tin, in, s->thr[t].tid) != 0)
			return -ESRCH;
		int n = queue_from(s, &tin, &rec, t, im->threads[t - 1].sigmask);
		/* its registers, as the restore set them */
		if (n > 0 && ptrace(PTRACE_SETREGS, s->thr[t].tid, 0, &tin.base) != 0)
			n = -errno;
		inject_close(&tin);
		total = n < 0 ? n : total + n;
	}
	return total;
}

const struct task_part task_part_pending = { .name = "the pending signals", .phase = TASK_LAST,
					     .capture = pending_capture, .restore = pending_restore,
					     .restored = offsetof(struct resume_stats, pending_restored) };

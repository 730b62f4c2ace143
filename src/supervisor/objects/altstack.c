/* altstack.c -- each thread's alternate signal stack across a checkpoint and a resume (altstack.h). */
#include "altstack.h"
#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include "inject.h"
#include "procfs.h"
#include "sup.h"

/* Is thread t to be asked at this cut, and among how many?  A thread never asked, or that had none
 * at its first asks (a new thread sets its own a moment after it starts), is asked now, with every
 * such one; the others every ALTSTACK_EVERY cuts, one per stop. */
enum { NOT_DUE, DUE_NOW, DUE_ONE };

static int due(const struct thr *t, uint64_t cut)
{
	if (t->listening)
		return NOT_DUE;
	int has_one = t->altstack.known && !(t->altstack.flags & SS_DISABLE);
	if (!t->altstack_asked || (!has_one && t->altstack_asks < ALTSTACK_EARLY_ASKS))
		return DUE_NOW;
	return cut - t->altstack_asked >= ALTSTACK_EVERY ? DUE_ONE : NOT_DUE;
}

/* Ask thread i (proc: the process's injector, open).  0, or a negative errno. */
static int ask(struct sup *s, struct inject *proc, int i)
{
	struct thr *t = &s->thr[i];
	struct inject in;
	int rc = i > 0 ? inject_open_thread(&in, proc, t->tid) : 0;
	struct inject *ti = i > 0 ? &in : proc;
	if (!rc && i > 0 && !t->altstack_asks) {
		/* with its first ask, where the kernel clears its id at its exit: set by the clone that
		 * made it (a thread changes it only by set_tid_address, which threads libraries never
		 * call in a thread they made) */
		uint64_t at = 0;
		long got = inject_syscall(ti, SYS_prctl, PR_GET_TID_ADDRESS, (long)s->scratch_addr, 0, 0, 0, 0);
		if (got == 0 && proc_mem_read(s->pid, s->scratch_addr, &at, sizeof at) == 0)
			t->clear_tid = at;
		else if (got == -ESRCH || got == -EPROTO)
			rc = (int)got;
	}
	if (!rc) {
		long got = inject_syscall(ti, SYS_sigaltstack, 0, (long)s->scratch_addr, 0, 0, 0, 0);
		stack_t ss;
		if (got == 0 && proc_mem_read(s->pid, s->scratch_addr, &ss, sizeof ss) == 0)
			t->altstack = (struct img_altstack){ .sp = (uint64_t)(uintptr_t)ss.ss_sp, .size = ss.ss_size,
							     .flags = (uint32_t)ss.ss_flags, .known = 1 };
		else if (got == -ESRCH || got == -EPROTO)
			rc = (int)got;
		if (ptrace(PTRACE_SETREGS, t->tid, 0, &ti->base) != 0 && !rc)
			rc = -errno;
	}
	if (i > 0)
		inject_close(&in);
	t->altstack_asked = s->tree->cut.gen;
	t->altstack_asks++;
	return rc;
}

int altstack_ask(struct sup *s)
{
	if (!s->gate || !s->scratch_addr)
		return 0;
	uint64_t cut = s->tree->cut.gen;
	int one = -1, now = 0;
	for (int i = 0; i < s->nthr; i++) {
		int d = due(&s->thr[i], cut);
		now += d == DUE_NOW;
		if (d == DUE_ONE && (one < 0 || s->thr[i].altstack_asked < s->thr[one].altstack_asked))
			one = i;
	}
	if (!now && one < 0)
		return 0;
	struct inject proc;
	int rc = inject_open(&proc, s->pid, s->gate);
	for (int i = 0; i < s->nthr && !rc; i++)
		if (due(&s->thr[i], cut) == DUE_NOW || i == one)
			rc = ask(s, &proc, i);
	inject_close(&proc);
	return rc;
}

int altstack_restore(struct inject *in, struct inject *proc, uint64_t scratch, uint64_t stack_top,
		     const struct img_altstack *a)
{
	if (!a->known || (a->flags & SS_DISABLE))
		return 0;
	stack_t ss = { .ss_sp = (void *)(uintptr_t)a->sp, .ss_size = a->size,
		       .ss_flags = (int)(a->flags & ~(uint32_t)SS_ONSTACK) };
	int rc = inject_write(proc, scratch, &ss, sizeof ss);
	if (rc)
		return rc;
	uint64_t rsp = in->base.rsp;
	in->base.rsp = stack_top;
	long got = inject_syscall(in, SYS_sigaltstack, (long)scratch, 0, 0, 0, 0, 0);
	in->base.rsp = rsp;
	return got < 0 ? (int)got : 0;
}

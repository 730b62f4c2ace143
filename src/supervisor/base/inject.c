/* inject.c -- system calls executed by a stopped tracee on the supervisor's behalf (inject.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "inject.h"

int inject_open(struct inject *in, pid_t pid, uint64_t gate)
{
	in->pid = pid;
	in->tgid = pid;
	in->gate = gate;
	in->deferred = 0;
	char status[64], line[128];
	snprintf(status, sizeof status, "/proc/%d/status", (int)pid);
	FILE *f = fopen(status, "r");
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "Tgid: %d", &in->tgid) == 1)
			break;
	if (f)
		fclose(f);
	if (ptrace(PTRACE_GETREGS, pid, 0, &in->base) != 0)
		return -errno;
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/mem", (int)pid);
	in->mem_fd = open(p, O_RDWR | O_CLOEXEC);
	return in->mem_fd < 0 ? -errno : 0;
}

int inject_open_thread(struct inject *in, const struct inject *proc, pid_t tid)
{
	*in = *proc;
	in->pid = tid;
	in->mem_fd = -1; /* not owned */
	in->deferred = 0;
	return ptrace(PTRACE_GETREGS, tid, 0, &in->base) != 0 ? -errno : 0;
}

void inject_close(struct inject *in)
{
	for (int sig = 1; sig <= 64; sig++)
		if (in->deferred >> (sig - 1) & 1)
			syscall(SYS_tgkill, in->tgid, in->pid, sig);
	in->deferred = 0;
	if (in->mem_fd >= 0)
		close(in->mem_fd);
	in->mem_fd = -1;
}

/* Is this signal-delivery stop the int3 the injected code ends in (rip just past it: trap_rip)? */
static int at_trap(struct inject *in, int sig, uint64_t trap_rip)
{
	struct user_regs_struct r;
	return sig == SIGTRAP && ptrace(PTRACE_GETREGS, in->pid, 0, &r) == 0 && r.rip == trap_rip;
}

static long run_to_trap(struct inject *in, struct user_regs_struct r, uint64_t trap_rip);

long inject_syscall(struct inject *in, long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
	struct user_regs_struct r = in->base;
	r.rip = in->gate;
	r.rax = (unsigned long)nr;
	r.orig_rax = (unsigned long)-1;
	r.rdi = (unsigned long)a1;
	r.rsi = (unsigned long)a2;
	r.rdx = (unsigned long)a3;
	r.r10 = (unsigned long)a4;
	r.r8 = (unsigned long)a5;
	r.r9 = (unsigned long)a6;
	return run_to_trap(in, r, in->gate + 3);
}

long inject_code(struct inject *in, uint64_t entry, uint64_t trap_rip, long a1, long a2)
{
	struct user_regs_struct r = in->base;
	r.rip = entry;
	r.orig_rax = (unsigned long)-1;
	r.rdi = (unsigned long)a1;
	r.rsi = (unsigned long)a2;
	return run_to_trap(in, r, trap_rip);
}

/* Continue the tracee with registers r until the int3 before trap_rip: its rax, or -ESRCH/-EPROTO. */
static long run_to_trap(struct inject *in, struct user_regs_struct r, uint64_t trap_rip)
{
	if (ptrace(PTRACE_SETREGS, in->pid, 0, &r) != 0 || ptrace(PTRACE_CONT, in->pid, 0, 0) != 0)
		return -ESRCH;
	int st;
	for (;;) {
		if (waitpid(in->pid, &st, __WALL) != in->pid || !WIFSTOPPED(st))
			return -ESRCH;
		if ((st >> 16) == PTRACE_EVENT_SECCOMP) {
			/* our own call, sent to us by the program's file filter (filetrack.h): it runs */
			if (ptrace(PTRACE_CONT, in->pid, 0, 0) != 0)
				return -ESRCH;
			continue;
		}
		if ((st >> 16) == PTRACE_EVENT_STOP) {
			/* an interrupt of the checkpoint loop that was pending: consumed here, sent again by
			 * the loop (inject.h) */
			if (ptrace(PTRACE_CONT, in->pid, 0, 0) != 0)
				return -ESRCH;
			continue;
		}
		if (!(st >> 16) && !at_trap(in, WSTOPSIG(st), trap_rip)) {
			/* a signal that was pending or arrived meanwhile: a fault of the interrupted instruction
			 * is dropped (it happens again when that instruction runs again), any other is held back
			 * and raised again by inject_close */
			int sig = WSTOPSIG(st);
			siginfo_t si;
			int fault = (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE) &&
				    ptrace(PTRACE_GETSIGINFO, in->pid, 0, &si) == 0 && si.si_code > 0 && si.si_code != SI_KERNEL;
			struct user_regs_struct at;
			if (fault && ptrace(PTRACE_GETREGS, in->pid, 0, &at) == 0 && at.rip >= r.rip && at.rip < trap_rip)
				return -EPROTO; /* the injected code itself faults (not executable, say): it would again */
			if (!fault && sig >= 1 && sig <= 64)
				in->deferred |= 1ull << (sig - 1);
			if (ptrace(PTRACE_CONT, in->pid, 0, 0) != 0)
				return -ESRCH;
			continue;
		}
		if ((st >> 16) != PTRACE_EVENT_CLONE && (st >> 16) != PTRACE_EVENT_FORK)
			break;
		/* an injected clone() or fork(): note the new thread or process, let the call return */
		unsigned long tid = 0;
		ptrace(PTRACE_GETEVENTMSG, in->pid, 0, &tid);
		in->cloned = (pid_t)tid;
		if (ptrace(PTRACE_CONT, in->pid, 0, 0) != 0)
			return -ESRCH;
	}
	if (WSTOPSIG(st) != SIGTRAP || (st >> 16) != 0)
		return -EPROTO;
	if (ptrace(PTRACE_GETREGS, in->pid, 0, &r) != 0)
		return -ESRCH;
	if (r.rip != trap_rip)
		return -EPROTO;
	return (long)r.rax;
}

int inject_write(struct inject *in, uint64_t addr, const void *src, size_t len)
{
	const char *p = src;
	while (len) {
		ssize_t n = pwrite(in->mem_fd, p, len, (off_t)addr);
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		addr += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

long injector_str(struct injector *j, const char *s)
{
	size_t n = strlen(s) + 1;
	if (!j->scratch || n > j->scratch_bytes || inject_write(&j->in, j->scratch, s, n))
		return 0;
	return (long)j->scratch;
}

int injector_open(struct injector *j, pid_t pid, uint64_t gate, size_t bytes)
{
	if (inject_open(&j->in, pid, gate) != 0)
		return -1;
	long a = inject_syscall(&j->in, SYS_mmap, 0, (long)bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a < 0 && a > -4096) {
		inject_close(&j->in);
		return -1;
	}
	j->scratch = (uint64_t)a;
	j->scratch_bytes = bytes;
	return 0;
}

void injector_close(struct injector *j)
{
	inject_syscall(&j->in, SYS_munmap, (long)j->scratch, (long)j->scratch_bytes, 0, 0, 0, 0);
	ptrace(PTRACE_SETREGS, j->in.pid, 0, &j->in.base); /* back where it was: its shim's stop */
	inject_close(&j->in);
}

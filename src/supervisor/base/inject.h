/* inject.h -- making a stopped tracee execute system calls for the supervisor.
 *
 * The shim exports a two-instruction gate, `syscall; int3`.  To run a system call in the child
 * the supervisor sets its registers to (rip = gate, rax = nr, args), continues it, and waits
 * for the SIGTRAP of the int3: the child's own mm, fd table and credentials do the work, which
 * is how a resume rebuilds mappings and reopens files without any restore code running on a
 * half-rebuilt address space.  The caller owns the registers: after injecting, it sets the
 * ones the program is to continue with.
 *
 * Invariants: orig_rax is -1 in every injected context, so the kernel's syscall-restart logic
 * never rewrites it; a stop other than the gate's SIGTRAP is an error (-EPROTO), reported, and
 * the child is then killed by the caller (a half-restored process must never run).  Two stops
 * are not errors, since calls are also injected into a running program (NVM memory, nvm.c): an
 * interrupt stop (PTRACE_EVENT_STOP) is consumed -- the checkpoint loop sends its interrupt
 * again -- and a signal pending or arriving meanwhile is held back and raised again by
 * inject_close, except a fault of the interrupted instruction, which recurs by itself.  (A
 * pending int3 of the NVM gate is raised again as SIGTRAP and is served when it stops.)
 */
#ifndef PROSPER_SUP_INJECT_H
#define PROSPER_SUP_INJECT_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

struct inject {
	pid_t pid;          /* the thread that executes the calls */
	uint64_t gate;
	struct user_regs_struct base;
	int mem_fd;         /* /proc/PID/mem, for writes that ignore page protections */
	pid_t cloned;       /* the thread or process an injected clone() created (its first stop is the caller's) */
	pid_t tgid;         /* the process of pid */
	uint64_t deferred;  /* signals that arrived during a call (bit s-1: signal s), raised at close */
};

int inject_open(struct inject *in, pid_t pid, uint64_t gate);
/* The same, for another thread of the process (shares in's /proc/PID/mem). */
int inject_open_thread(struct inject *in, const struct inject *proc, pid_t tid);
void inject_close(struct inject *in);
/* The system call's return value (negative errno on failure), or -EPROTO/-ESRCH when the
 * injection itself failed. */
long inject_syscall(struct inject *in, long nr, long a1, long a2, long a3, long a4, long a5, long a6);
/* Run code of the tracee's from entry, rdi = a1 and rsi = a2, until the int3 that ends it (rip
 * then trap_rip): its rax, or -EPROTO/-ESRCH as above.  Stops meanwhile are handled as for a call. */
long inject_code(struct inject *in, uint64_t entry, uint64_t trap_rip, long a1, long a2);
/* Write bytes into the child's memory (any protection). */
int inject_write(struct inject *in, uint64_t addr, const void *src, size_t len);

/* An injector with scratch memory in the tracee that is the supervisor's while it makes calls:
 * where paths, small structs and results go.  The one shape every restore step uses. */
struct injector {
	struct inject in;
	uint64_t scratch;        /* its address in the tracee, 0 until mapped */
	size_t scratch_bytes;
};
/* s at the scratch's start: its address in the tracee, or 0 (does not fit, or cannot write). */
long injector_str(struct injector *j, const char *s);
/* inject_open, and `bytes` of scratch mapped anywhere in the tracee.  0 or -1. */
int injector_open(struct injector *j, pid_t pid, uint64_t gate, size_t bytes);
/* The scratch unmapped, the tracee's registers as they were at the open, inject_close. */
void injector_close(struct injector *j);

#endif

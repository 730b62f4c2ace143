/* shim_proto.h -- what the shim tells the supervisor at start, and the signal table it keeps.
 *
 * The hello message travels once over the unix socket named by PROSPER_SHIM_SOCK, with the
 * child's userfaultfd attached (SCM_RIGHTS) when status is 'K'.  Addresses are the child's and
 * are identical in a run and in its resumes (same binary, same preload set, no ASLR).
 *
 * The signal table lives in the shim's .bss, which is part of every checkpoint: after a resume
 * rebuilt memory, it holds the handlers the program had installed, in the kernel's own layout,
 * ready to be passed to rt_sigaction by injected system calls.
 */
#ifndef PROSPER_SHIM_PROTO_H
#define PROSPER_SHIM_PROTO_H
#include <stdint.h>

#define SHIM_NSIG 65

struct shim_ksigaction { /* struct kernel_sigaction, x86-64 */
	uint64_t handler, flags, restorer, mask;
};

struct shim_sigtab {
	uint64_t installed; /* bit s-1: signal s has a handler or is ignored */
	struct shim_ksigaction act[SHIM_NSIG];
};

struct shim_hello {
	char status;        /* 'K' ok, 'U' no userfaultfd, 'A' no async write-protect */
	char resume;        /* 1: the shim stopped itself with SIGSTOP for the restore */
	char pad[6];
	uint64_t gate;      /* address of `syscall; int3` */
	uint64_t sigtab;    /* address of struct shim_sigtab */
};

#endif

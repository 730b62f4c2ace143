/* shim_proto.h -- what the shim tells the supervisor at start, and the signal table it keeps.
 *
 * The hello message travels once over the unix socket named by PROSPER_SHIM_SOCK, with the
 * child's userfaultfd attached (SCM_RIGHTS) when status is 'K'.  Addresses are the child's and
 * are identical in a run and in its resumes (same binary, same preload set, no ASLR).
 *
 * The signal table lives in the shim's .bss, which is part of every checkpoint: after a resume
 * rebuilt memory, it holds the handlers the program had installed, in the kernel's own layout,
 * ready to be passed to rt_sigaction by injected system calls.
 *
 * Interval timers (setitimer, alarm) live in the kernel, not in memory.  The shim notes in
 * struct shim_timers which ones the program armed (or inherited armed through exec); at every
 * checkpoint with one, the supervisor makes the program read them into `now` (getitimer, injected
 * before memory is saved), so the values travel in the checkpoint with the rest of the shim's
 * .bss, and a resume arms them again from there (src/supervisor/objects/timers.c).
 *
 * Signals pending at a checkpoint (blocked ones, or ones that arrived while the program was
 * stopped) are kernel state too: the supervisor writes them into struct shim_pending before
 * memory is saved (an empty record when there are none), and a resume queues them again
 * (src/supervisor/objects/pending.c).
 *
 * A resume also writes, into the same record, when its command began (resumed_ns): the shim's
 * bind() then removes a unix socket name the killed run bound after the cut -- a socket file
 * changed after this image's last bind and before the resume -- when the program, resumed from
 * before its bind, binds that name again and finds it taken (src/shim/shim.c).
 *
 * Resource limits likewise: the shim counts the program's setrlimit/prlimit calls; the supervisor
 * reads the limits (prlimit) at the first checkpoint of an image and whenever that count moved,
 * and writes them into struct shim_limits; a resume sets them again before it reopens the
 * program's files (src/supervisor/objects/rlimits.c).
 *
 * NVM requests (include/prosper/nvm.h): libprosper-nvm calls prosper_shim_nvm_gate(op, arg), an
 * `int3; ret` in the shim.  The supervisor sees the SIGTRAP stop with rip == nvm_gate + 1, reads
 * op from rdi and arg from rsi, puts its answer in rax (an address or 0 on success, -errno on
 * failure, -ENOSYS: not checkpointing, use plain memory) and continues without the signal.
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

struct shim_itimerval { /* struct itimerval, x86-64 */
	int64_t interval_sec, interval_usec, value_sec, value_usec;
};

struct shim_timers {
	uint64_t used;                   /* bit w: interval timer w (ITIMER_REAL 0, VIRTUAL 1, PROF 2) was armed */
	struct shim_itimerval now[3];    /* as the last checkpoint read them */
};

/* The program's POSIX timers (timer_create) as the last checkpoint found them: the supervisor
 * reads /proc/PID/timers at each checkpoint, writes what it says here and makes the program read
 * each timer's time left (timer_gettime, injected) into `spec`, so the record travels with the
 * shim's .bss; a resume makes each timer again with its id (src/supervisor/objects/posixtimers.c). */
#define SHIM_POSIX_TIMERS_MAX 32
struct shim_posix_timer {
	int32_t id, clock;
	int32_t notify;                  /* sigev_notify as the kernel holds it (SIGEV_THREAD_ID: | 4) */
	int32_t signo;
	int32_t tid;                     /* SIGEV_THREAD_ID: the thread, by the program's own id */
	int32_t pad;
	uint64_t value;                  /* sigev_value */
	struct { int64_t interval_sec, interval_nsec, value_sec, value_nsec; } spec; /* a struct itimerspec */
};
struct shim_posix_timers {
	uint32_t n, lost;                /* records; timers beyond SHIM_POSIX_TIMERS_MAX (not kept: refused) */
	uint8_t scratch[80];             /* a resume's: the sigevent (64 bytes) and the id it asks for */
	struct shim_posix_timer t[SHIM_POSIX_TIMERS_MAX];
};

#define SHIM_PENDING_MAX 64
struct shim_pending {
	uint32_t n, lost;                /* records; signals beyond SHIM_PENDING_MAX (not kept) */
	uint64_t mask;                   /* the resume's scratch: a signal mask it sets */
	int64_t resumed_ns;              /* a resume's: CLOCK_REALTIME when its command began (0: none) */
	struct {
		int32_t thread;          /* -1: the process's queue; else the thread's index (0: main) */
		uint32_t pad;
		uint8_t info[128];       /* siginfo_t */
	} sig[SHIM_PENDING_MAX];
};

#define SHIM_NLIMITS 16 /* RLIM_NLIMITS */
struct shim_limits {
	uint64_t changes;                /* the shim's: moved before and after each setrlimit/prlimit that sets a limit */
	uint64_t known;                  /* the supervisor's from here: 1: lim holds the limits at the last checkpoint */
	struct { uint64_t cur, max; } lim[SHIM_NLIMITS];
};

struct shim_hello {
	char status;        /* 'K' ok, 'U' no userfaultfd, 'A' no async write-protect */
	char resume;        /* 1: the shim stopped itself with SIGSTOP for the restore */
	char uffd_user_mode_only; /* 1: the userfaultfd handles faults of user mode only (uffd_abi.h) */
	char injected;      /* 1: no shim: made by the supervisor, by injection (src/supervisor/base/shimless.h) */
	char pad[4];
	uint64_t gate;      /* address of `syscall; int3` */
	uint64_t sigtab;    /* address of struct shim_sigtab */
	uint64_t nvm_gate;  /* address of prosper_shim_nvm_gate (`int3; ret`) */
	uint64_t nvm_path;  /* SHIM_NVM_PATH_MAX bytes in the shim where the supervisor puts the pool's path */
	uint64_t timers;    /* address of struct shim_timers */
	uint64_t pending;   /* address of struct shim_pending */
	uint64_t limits;    /* address of struct shim_limits */
	uint64_t posix_timers; /* address of struct shim_posix_timers */
	uint64_t scratch;   /* SHIM_SCRATCH_BYTES in the shim that injected system calls write their
	                     * results into: never memory the program uses (altstack.h) */
};

#define SHIM_SCRATCH_BYTES 64

enum shim_nvm_op { SHIM_NVM_ALLOC = 1, SHIM_NVM_FREE = 2 };
#define SHIM_NVM_PATH_MAX 4096

#endif

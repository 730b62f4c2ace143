/* launch.h -- start the program under ptrace (launch.c). */
#ifndef PROSPER_SUP_LAUNCH_H
#define PROSPER_SUP_LAUNCH_H
#include <stddef.h>
#include <sys/types.h>
#include "prosper/internal/shim_proto.h"

/* The channel every image of the program says hello on -- the first one and each one it execs:
 * an abstract unix socket, named in the program's environment by env ("PROSPER_SHIM_SOCK=@NAME").
 * Only a connection from the process we wait for is heard (SO_PEERCRED). */
struct hello_channel {
	int fd;         /* listening, non-blocking */
	char name[48];  /* "@prosper-PID-NONCE" */
	char env[72];
};
int launch_channel_open(struct hello_channel *ch);

struct child {
	pid_t pid;
};

/* The shim beside this executable's build (../shim/libprosper-shim.so); 0 or -1. */
int launch_shim_path(char *out, size_t cap);

/* The environment an image of the program gets: base (NULL-terminated), with the shim first in
 * LD_PRELOAD and rseq off (the user's own LD_PRELOAD and GLIBC_TUNABLES kept after ours; the shim
 * takes ours out again before the program runs).  NULL on failure.  *envc: its length. */
char **launch_environment(char *const base[], const char *shim, int *envc);

/* Fork the program: no ASLR, in cwd (NULL: ours), environment env plus the hello channel; it
 * waits until we have seized it, then execs (use_path: search PATH).  With ns on it is in the
 * program's pid namespace and gets its /proc there (pidns.h).  On return the child is
 * seized and running.  0 or a negative errno (-EPERM: ptrace is not permitted). */
struct pidns;
int launch(struct child *c, const struct hello_channel *ch, struct pidns *ns, const char *file,
	   char *const argv[], char *const env[], int envc, const char *cwd, int resume, int use_path);

/* Wait for the exec; 0, or 1 with *status if the program ended before it, or -ECHILD. */
int launch_wait_exec(pid_t pid, int *status);

/* Wait (10 s at most) for the hello of process pid -- a new image running its loader -- and,
 * with status 'K', its userfaultfd (else *uffd = -1).  Its ptrace stops meanwhile are served
 * (signals delivered); its exit and the shim's own SIGSTOP are left for the caller to wait for.
 * 0; -ENOSYS: no userfaultfd; -EPROTO: no asynchronous write-protection; -ESRCH: it ended;
 * -ENOEXEC: it exec'd again first; -ETIMEDOUT, or another negative errno: no hello. */
int launch_wait_hello(const struct hello_channel *ch, pid_t pid, struct shim_hello *h, int *uffd);

#endif

/* launch.h -- start the program under ptrace (launch.c). */
#ifndef PROSPER_SUP_LAUNCH_H
#define PROSPER_SUP_LAUNCH_H
#include <stddef.h>
#include <sys/types.h>
#include "prosper/internal/shim_proto.h"

struct child {
	pid_t pid;
	int sock; /* our end of the shim's socket */
};

/* The shim beside this executable's build (../shim/libprosper-shim.so); 0 or -1. */
int launch_shim_path(char *out, size_t cap);

/* The program's environment: ours, with the shim first in LD_PRELOAD and rseq off; NULL on
 * failure.  *envc: its length. */
char **launch_environment(const char *shim, int *envc);

/* Fork the program: no ASLR, in cwd (NULL: ours), environment env plus the shim's socket; it
 * waits until we have seized it, then execs (use_path: search PATH).  On return the child is
 * seized and running.  0 or a negative errno (-EPERM: ptrace is not permitted). */
int launch(struct child *c, const char *file, char *const argv[], char *const env[], int envc, const char *cwd,
	   int resume, int use_path);

/* Wait for the exec; 0, or 1 with *status if the program ended before it, or -ECHILD. */
int launch_wait_exec(pid_t pid, int *status);

/* The shim's hello and, with status 'K', its userfaultfd (else *uffd = -1).  0; -ENOSYS: no
 * userfaultfd; -EPROTO: no asynchronous write-protection; another negative errno: no hello. */
int launch_recv_hello(int sock, struct shim_hello *h, int *uffd);

#endif

/* launch.h -- start the program under ptrace (launch.c). */
#ifndef PROSPER_SUP_LAUNCH_H
#define PROSPER_SUP_LAUNCH_H
#include "filefilter.h" /* FILTER_* */
#include <stddef.h>
#include <sys/types.h>
#include "prosper/internal/shim_proto.h"
#include "hello_channel.h"

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
 * program's pid namespace and gets its /proc there (pidns.h).  With filter (FILTER_*), its file
 * changes are sent to us from its first instruction on (filefilter.h).  On return the child is
 * seized and running.  0 or a negative errno (-EPERM: ptrace is not permitted). */
struct pidns;
int launch(struct child *c, const struct hello_channel *ch, struct pidns *ns, const char *file,
	   char *const argv[], char *const env[], int envc, const char *cwd, int resume, int use_path, int filter);

/* Wait for the exec; 0 (the program left at its exec stop), or 1 with *status if it ended
 * before it, or -ECHILD. */
int launch_wait_exec(pid_t pid, int *status);


#endif

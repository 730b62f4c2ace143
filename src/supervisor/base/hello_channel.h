/* hello_channel.h -- the channel every image of the program says hello on: its shim connects,
 * sends its hello (the addresses of its gate and records, shim_proto.h) and, in run mode, its
 * userfaultfd.  Below everything that starts, adopts or relaunches an image. */
#ifndef PROSPER_SUP_HELLO_CHANNEL_H
#define PROSPER_SUP_HELLO_CHANNEL_H
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
int hello_channel_open(struct hello_channel *ch);

/* Wait (10 s at most) for the hello of process pid -- a new image running its loader -- and,
 * with status 'K', its userfaultfd (else *uffd = -1).  Its ptrace stops meanwhile are served
 * (signals delivered); its exit and the shim's own SIGSTOP are left for the caller to wait for.
 * 0; -ENOSYS: no userfaultfd; -EPROTO: no asynchronous write-protection; -ESRCH: it ended;
 * -ENOEXEC: it exec'd again first; -ETIMEDOUT, or another negative errno: no hello. */
int hello_wait(const struct hello_channel *ch, pid_t pid, struct shim_hello *h, int *uffd);

#endif

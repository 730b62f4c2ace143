/* socketpairs.h -- unix stream socketpairs between the processes of the program (socketpairs.c;
 * docs/run-resume.md "Process trees").
 *
 * A socketpair(AF_UNIX, SOCK_STREAM) whose two ends are both held by processes of the program --
 * a parent and the child it forked, talking both ways -- is kept like a pipe: each end is saved
 * as what it is (IMG_FD_SOCKET, "socket:[ino]"), the bytes queued at each end are read at the cut
 * without being taken (MSG_PEEK on a copy of the fd, pidfd_getfd), and a resume makes the pair
 * again before the processes are forked and sends each end's bytes from its peer.  The kernel
 * says which socket is whose peer (sock_diag, UNIX_DIAG_PEER).
 *
 * An end whose peer was closed (its process ended) is kept with peer 0: a resume makes a pair,
 * sends the bytes that were queued from the other end and closes that one.
 *
 * Not kept: a socket bound to a name, one whose peer is outside the program, datagram and
 * seqpacket pairs, and file descriptors in flight (SCM_RIGHTS): such an fd is warned about and
 * found closed at a resume, as before.
 */
#ifndef PROSPER_SUP_SOCKETPAIRS_H
#define PROSPER_SUP_SOCKETPAIRS_H
#include <stdint.h>
#include <sys/types.h>

struct tree;

/* One end of a kept socketpair. */
struct sock_end {
	uint64_t ino, peer; /* peer 0: it was closed */
	pid_t pid;  /* a process that holds it at this cut, and at which fd */
	int fd;
};

/* Find the program's socketpairs now (the program stopped): the ends, held by its processes,
 * of anonymous unix stream sockets whose peer it holds too.  Sets t->socks; 0 or -errno. */
int socketpairs_scan(struct tree *t);
/* Is this fd link text ("socket:[ino]") an end of a kept socketpair? */
int socketpairs_kept(const struct tree *t, const char *link);
/* The bytes queued to be read at the end behind fd of process pid, left in place: *buf
 * (malloc'd, or NULL) and *len.  0 or -errno. */
int socketpairs_queued(pid_t pid, int fd, uint8_t **buf, uint32_t *len);

#endif

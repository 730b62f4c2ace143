/* socketpairs.h -- unix sockets between the processes of the program (socketpairs.c;
 * docs/run-resume.md "Process trees").
 *
 * A connected unix stream socket whose two ends are both held by processes of the program -- a
 * socketpair between a parent and the child it forked, or a connection one of them accepted from
 * another that connected to its name -- is kept like a pipe: each end is saved as what it is
 * (IMG_FD_SOCKET, "socket:[ino]"), the bytes queued at each end are read at the cut without being
 * taken (MSG_PEEK on a copy of the fd, pidfd_getfd), and a resume makes the pair again (as a
 * socketpair: the names the ends had are not given back) before the processes are forked and
 * sends each end's bytes from its peer.  The kernel says which socket is whose peer (sock_diag,
 * UNIX_DIAG_PEER).
 *
 * An end whose peer was closed (its process ended) is kept with peer 0: a resume makes a pair,
 * sends the bytes that were queued from the other end and closes that one.
 *
 * A listening unix stream socket bound to a name (a path, or an abstract name) is kept by its
 * name and backlog: a resume makes it again -- removing the socket file the killed run left at
 * that path first -- so that the program accepts the next connections on it.  A connection not
 * accepted yet has one end no process holds: a cut waits until the program has accepted it
 * (socketpairs_scan says -EAGAIN).  A relative path is kept as the holder's working directory at
 * the cut joined with it.  A listener whose path the program has removed (or that names another
 * file now) no new client can reach: a resume makes it again unnamed (an abstract autobind).
 *
 * A unix socket made and not connected yet (between socket() and connect(), bind() or listen())
 * is made again so, bound to its name if it had one.
 *
 * A datagram or seqpacket socketpair whose two ends the program holds is kept too, message by
 * message: the messages queued at an end are taken out at the cut and sent again at once from its
 * peer (a copy of its fd), in order -- the program, stopped, sees the same queue -- and a resume
 * sends them again the same way.  One whose messages carry file descriptors or credentials is not
 * kept (they are put back as they were, with them).
 *
 * Not kept: a socket whose peer is outside the program, a datagram or seqpacket socket whose peer
 * was closed while messages wait at it, an unconnected one holding datagrams, and file
 * descriptors in flight (SCM_RIGHTS): such an fd is warned about and found closed at a resume.
 */
#ifndef PROSPER_SUP_SOCKETPAIRS_H
#define PROSPER_SUP_SOCKETPAIRS_H
#include <stdint.h>
#include <sys/types.h>

struct tree;

/* One end of a kept connection, or a kept listening socket. */
struct sock_end {
	uint64_t ino, peer; /* peer 0: it was closed; a listener: its backlog */
	pid_t pid;  /* a process that holds it at this cut, and at which fd */
	int fd;
	int type;   /* SOCK_STREAM, SOCK_DGRAM or SOCK_SEQPACKET */
	uint8_t *msgs;     /* datagram and seqpacket: the messages queued at it, each a u32 length and */
	uint32_t msgs_len; /* its bytes (malloc'd; socketpairs_scan frees the last cut's) */
	int listener, unconnected, name_gone; /* name_gone: its path was removed (or is another file's now) */
	uint32_t name_len;  /* a listener's name: name_len bytes of name */
	char name[108];
};

/* Find the program's unix stream sockets now (the program stopped): the ends, held by its
 * processes, of connections whose peer it holds too, and its listening sockets.  Sets t->cut.socks;
 * 0, -EAGAIN while a listener (unix, or TCP for a client of the program's own) has a connection
 * the program has not accepted yet, or -errno. */
int socketpairs_scan(struct tree *t);
/* Is this fd link text ("socket:[ino]") an end of a kept socketpair? */
int socketpairs_kept(const struct tree *t, const char *link);
/* The peer of the unix socket of inode ino: 0 and *peer (0: none, unconnected or its peer
 * closed), or -errno. */
int socketpairs_peer_of(uint64_t ino, uint64_t *peer);
/* The bytes queued to be read at the end behind fd of process pid, left in place: *buf
 * (malloc'd, or NULL) and *len.  0 or -errno. */
int socketpairs_queued(pid_t pid, int fd, uint8_t **buf, uint32_t *len);

#endif

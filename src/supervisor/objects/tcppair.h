/* tcppair.h -- TCP connections over loopback, for fd_inet.c (tcppair.c).
 *
 * At a resume, a connected pair of TCP sockets made in a stopped process stands for a connection
 * between two of the program's own sockets (kept, with the bytes each end had not read), and for
 * one that cannot be continued (reset by its peer, or ended).  At a cut, what a connected socket
 * holds of its stream is read from a copy of it (tcp_stream_read), to judge whether its
 * connection can be kept whole.
 *
 * Invariants
 *   - A pair's ends are the process's, blocking; nothing else of it is left open (the listener the
 *     pair was made through is closed).  Their addresses are loopback ones of the family, with
 *     ports the kernel chose.
 *   - tcp_stream_read changes nothing the program can see: it peeks (a socket with a peek offset
 *     of the program's, SO_PEEK_OFF, is not peeked), and its figures are one instant's (read
 *     twice, taken when both readings agree).
 */
#ifndef PROSPER_SUP_TCPPAIR_H
#define PROSPER_SUP_TCPPAIR_H
#include <stdint.h>
#include <sys/types.h>

struct inject;

/* A connected pair in the process of `in` (scratch: 256 bytes of it): fds[0] the connecting end,
 * fds[1] the accepted one.  0, or -1 with nothing left open. */
int tcp_loopback_pair(struct inject *in, uint64_t scratch, int family, long fds[2]);

/* The bytes in flight a connection's end may hold that a resume puts back: beyond, not kept. */
#define TCP_UNREAD_MAX 16384

/* One end of an established connection at a cut. */
struct tcp_stream {
	uint64_t written;   /* bytes the program wrote into it: acknowledged by the peer, or queued */
	uint64_t received;  /* bytes it received in order, read by the program or not */
	uint32_t unread;    /* of those, the bytes not read yet: in `bytes` */
	int finished;       /* the peer closed its side (CLOSE_WAIT): end of file after them */
	unsigned char bytes[TCP_UNREAD_MAX];
};

/* The stream of the connected TCP socket sock (the supervisor's copy of the program's), established
 * or finished by its peer: 1, or 0 when it cannot be read whole (another state, more unread than
 * TCP_UNREAD_MAX, a peek offset, urgent data, or it kept changing). */
int tcp_stream_read(int sock, struct tcp_stream *st);

/* A socket the program holds, at a cut. */
struct tcp_held {
	uint64_t ino;
	pid_t pid;
	int fd;
};

/* Before a cut reads the program's sockets (the program stopped): is one of its established TCP
 * connections connected to a socket still waiting in a listener's accept queue (no file yet)?
 * Its bytes cannot be read until the program accepts it: 1, the cut waits (socketpairs.h).  Else
 * kept[i] says whether held[i] is an established connection whose peer the program holds too
 * (the only ones a resume keeps whole, so the only ones whose stream the cut reads), and those
 * ends' segments that Nagle's algorithm holds back are sent (TCP_NODELAY set and cleared on a
 * copy, as the program's own setting would do), so that what each end wrote is in the other's
 * receive queue when it is read: 0.  Or a negative errno. */
int tcp_cut_prepare(const struct tcp_held *held, int n, int *kept);

/* The peer of s (a copy of a connected TCP socket): 0 and *peer_ino, its inode when the peer is a
 * socket of this machine's (0: it waits in a listener's accept queue), -ENOENT when it is not (a
 * peer on another machine), -EPROTONOSUPPORT when s is no TCP socket (MPTCP is not), -ENOTCONN
 * when it is not connected, or a negative errno. */
int tcp_peer_of(int s, uint64_t *peer_ino);

#endif

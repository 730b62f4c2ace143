/* tcpghosts.h -- the ended TCP connections a killed run leaves on its listener's port, cleared so
 * that a resume can bind the listener again (tcpghosts.c; fd_inet.c asks).
 *
 * A server's accepted connections share its listening port.  When the program is killed, the
 * kernel closes them, and those it closes first stay on the port in TIME_WAIT for a minute (or
 * linger unowned in FIN_WAIT, CLOSING, LAST_ACK): sockets no process holds.  A listener that did
 * not set SO_REUSEADDR left them unable to be bound past (the kernel lets a bind by them only when
 * both sides set it) -- Open MPI's mpirun is one -- so its resume found its port "held".  These
 * are removed (sock_diag's SOCK_DESTROY, as `ss -K` does): what SO_REUSEADDR waives for a server
 * restarted in place, the protection of a closed connection against stray segments of itself.
 *
 * Invariants
 *   - Only sockets no process holds (inode 0) in a closing state (TIME_WAIT, FIN_WAIT1,
 *     FIN_WAIT2, CLOSING, LAST_ACK) whose local port is the listener's, on its address (any
 *     address for a listener bound to every one), are removed; a listener or a socket a process
 *     holds never is.
 *   - It needs CAP_NET_ADMIN: without it nothing is removed, and the port stays as it was.
 */
#ifndef PROSPER_SUP_TCPGHOSTS_H
#define PROSPER_SUP_TCPGHOSTS_H
#include <sys/socket.h>

/* The ended connections no process holds on local address a (port included; the family's any
 * address: every address) removed: how many, or a negative errno. */
int tcp_ghosts_clear(const struct sockaddr_storage *a);

#endif

/* tcppair.h -- a connected pair of TCP sockets made in a stopped process over loopback
 * (tcppair.c): what stands at a resume for a TCP connection that cannot be continued -- one reset
 * by its peer, one whose connection had ended (fd_inet.c).
 *
 * Invariants
 *   - Both ends are the process's, blocking; nothing else of it is left open (the listener the
 *     pair was made through is closed).
 *   - Their addresses are loopback ones of the family, with ports the kernel chose.
 */
#ifndef PROSPER_SUP_TCPPAIR_H
#define PROSPER_SUP_TCPPAIR_H
#include <stdint.h>

struct inject;

/* A connected pair in the process of `in` (scratch: 256 bytes of it): fds[0] the connecting end,
 * fds[1] the accepted one.  0, or -1 with nothing left open. */
int tcp_loopback_pair(struct inject *in, uint64_t scratch, int family, long fds[2]);

#endif

/* sockdiag.h -- a dump of this network namespace's sockets through NETLINK_SOCK_DIAG: one request
 * out, every answer handed to a callback (sockdiag.c).  What socketpairs.c asks of the unix
 * sockets and tcppair.c of the TCP ones; each knows its own request and answers.
 *
 * Invariants
 *   - The netlink socket is the caller's for the call alone: opened and closed in it.
 *   - A dump is read to its end (NLMSG_DONE) unless an answer or the callback fails; a request of
 *     one socket, to its one answer.
 */
#ifndef PROSPER_SUP_SOCKDIAG_H
#define PROSPER_SUP_SOCKDIAG_H
#include <linux/netlink.h>
#include <stddef.h>

/* Send req (len bytes: a struct nlmsghdr, then its family's request) and call each(h, ctx) for
 * every answer: all the dump's with NLM_F_DUMP, else the one socket's.  0, a negative errno (the
 * kernel's own for a request it refused: -ENOENT for no such socket), or what each returned when
 * not 0 (it stops the dump). */
int sock_diag_dump(const void *req, size_t len, int (*each)(const struct nlmsghdr *h, void *ctx), void *ctx);

#endif

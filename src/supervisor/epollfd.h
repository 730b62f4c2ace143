/* epollfd.h -- the program's epoll instances across a checkpoint and a resume (epollfd.c).
 *
 * An epoll instance is kernel state: which fds it watches, for which events, with what data
 * (Python's asyncio loop, libuv's, any event loop).  /proc/PID/fdinfo lists them, one "tfd:"
 * line each; the checkpoint records them in the fd's path string (IMG_FD_EPOLL, image.h), and a
 * resume makes the instance again at its number and adds every watched fd that the resumed
 * program has, once all its other fds are back.
 *
 * Invariants
 *   - A watch is added with the events the kernel listed: a one-shot watch that fired is added
 *     disarmed, as it was.  Readiness is the kernel's to compute again from the fds' state; an
 *     edge a program had not consumed yet (EPOLLET) is not kept.
 *   - A watched fd that is not back (a socket to the outside, closed at a resume, docs/
 *     limitations.md) is left out; a watch the kernel refuses otherwise fails the resume.
 */
#ifndef PROSPER_SUP_EPOLLFD_H
#define PROSPER_SUP_EPOLLFD_H
#include <stdint.h>
#include <sys/types.h>
#include "image.h"

struct inject;

#define EPOLL_LINK "anon_inode:[eventpoll]"

/* The record of epoll fd `fd` of process pid: EPOLL_LINK followed by " TFD:EVENTS:DATA" per
 * watch (decimal, hex, hex), malloc'd; NULL with errno. */
char *epoll_record(pid_t pid, int fd);

/* Resume, first pass: the instance of f made again at its number (O_CLOEXEC as it had). */
int epoll_remake(struct inject *in, const struct img_fd *f);

/* Resume, second pass (every fd back): its watches added, each struct epoll_event passed at
 * scratch.  *left: watches of fds not back. */
int epoll_rewatch(struct inject *in, uint64_t scratch, const struct img_fd *f, const char *record, int *left);

#endif

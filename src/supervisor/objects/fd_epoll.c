/* fd_epoll.c -- the program's epoll instances across a checkpoint and a resume (fdkind.h).
 *
 * An epoll instance is kernel state: which fds it watches, for which events, with what data
 * (Python's asyncio loop, libuv's, any event loop).  /proc/PID/fdinfo lists them, one "tfd:"
 * line each; the record's payload holds them, " TFD:EVENTS:DATA" per watch (decimal, hex, hex).
 * A resume makes the instance again at its number and adds every watched fd that the resumed
 * program has, once all its other fds are back (`after`).
 *
 * Invariants
 *   - A watch is added with the events the kernel listed: a one-shot watch that fired is added
 *     disarmed, as it was.  Readiness is the kernel's to compute again from the fds' state; an
 *     edge a program had not consumed yet (EPOLLET) is not kept.
 *   - A watched fd that is not back (a socket to the outside, closed at a resume, docs/
 *     limitations.md) is left out; a watch the kernel refuses otherwise fails the resume.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include "fdkind.h"
#include "inject.h"
#include "sup.h"

#define EPOLL_LINK "anon_inode:[eventpoll]"

static int claims(struct sup *s, const struct fd_info *fi)
{
	(void)s;
	return fd_is_link(fi, EPOLL_LINK);
}

/* The watches of epoll fd `fd` of process pid, " TFD:EVENTS:DATA" each, malloc'd; NULL with errno. */
static char *watches(pid_t pid, int fd)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/fdinfo/%d", (int)pid, fd);
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	size_t cap = 256, len = 0;
	char *out = malloc(cap), line[256];
	if (!out) {
		fclose(f);
		return NULL;
	}
	out[0] = 0;
	while (fgets(line, sizeof line, f)) {
		int tfd;
		unsigned events;
		unsigned long long data;
		if (sscanf(line, "tfd: %d events: %x data: %llx", &tfd, &events, &data) != 3)
			continue;
		char one[64];
		int n = snprintf(one, sizeof one, " %d:%x:%llx", tfd, events, data);
		if (len + (size_t)n + 1 > cap) {
			char *bigger = realloc(out, cap * 2 + (size_t)n);
			if (!bigger) {
				free(out);
				fclose(f);
				errno = ENOMEM;
				return NULL;
			}
			out = bigger, cap = cap * 2 + (size_t)n;
		}
		memcpy(out + len, one, (size_t)n + 1);
		len += (size_t)n;
	}
	fclose(f);
	return out;
}

static int record(struct fd_capture *c)
{
	char *w = watches(c->s->pid, c->fi->fd);
	if (!w)
		return -errno;
	c->e->payload = img_str(c->strings, w);
	free(w);
	return c->e->payload == IMG_NONE ? -ENOMEM : 0;
}

/* The payload's grammar: (" " TFD ":" EVENTS ":" DATA)*, nothing else. */
static int parse_watch(const char **p, int *tfd, unsigned *events, unsigned long long *data)
{
	int n = 0;
	if (**p != ' ' || sscanf(*p, " %d:%x:%llx%n", tfd, events, data, &n) != 3 || *tfd < 0)
		return 0;
	*p += n;
	return 1;
}

static enum refusal check(const struct img *im, const struct tree_view *tv, const struct img_fd *f, char *why, size_t whylen)
{
	(void)tv;
	const char *p = img_s(im, f->payload);
	int tfd;
	unsigned events;
	unsigned long long data;
	while (p && parse_watch(&p, &tfd, &events, &data))
		;
	if (p && !*p)
		return 0;
	snprintf(why, whylen, "fd %d: the checkpoint's record of this epoll instance is damaged", f->fd);
	return REFUSE_POOL_CORRUPT;
}

static int reopen(struct fd_restore *r, const struct img_fd *f)
{
	long ep = inject_syscall(&r->j->in, SYS_epoll_create1, (f->flags & O_CLOEXEC) ? EPOLL_CLOEXEC : 0, 0, 0, 0, 0, 0);
	long got = ep;
	if (ep >= 0 && ep != f->fd) {
		got = inject_syscall(&r->j->in, SYS_dup3, ep, f->fd, (f->flags & O_CLOEXEC) ? O_CLOEXEC : 0, 0, 0, 0);
		inject_syscall(&r->j->in, SYS_close, ep, 0, 0, 0, 0, 0);
	}
	if (got == f->fd)
		return 0;
	snprintf(r->why, r->whylen, "fd %d: cannot make its epoll instance again", f->fd);
	return -1;
}

static int rewatch(struct fd_restore *r, const struct img_fd *f)
{
	const char *p = img_s(r->im, f->payload);
	int tfd;
	unsigned events;
	unsigned long long data;
	while (p && parse_watch(&p, &tfd, &events, &data)) {
		struct epoll_event ev = { .events = events, .data.u64 = data };
		long got = inject_write(&r->j->in, r->j->scratch, &ev, sizeof ev) ? -EIO
			   : inject_syscall(&r->j->in, SYS_epoll_ctl, f->fd, EPOLL_CTL_ADD, tfd, (long)r->j->scratch, 0, 0);
		if (got == -EBADF)
			r->watches_left++; /* not back */
		else if (got < 0) {
			snprintf(r->why, r->whylen, "fd %d: cannot watch its fds again with its epoll instance", f->fd);
			return -1;
		}
	}
	return 0;
}

const struct fd_kind fd_kind_epoll = { .type = IMG_FD_EPOLL, .name = "epoll instance", .phase = FD_PHASE_OPEN,
				       .claims = claims, .record = record, .check = check, .reopen = reopen, .after = rewatch };

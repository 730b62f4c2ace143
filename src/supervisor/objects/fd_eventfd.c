/* fd_eventfd.c -- an eventfd the program holds (fdkind.h): libuv's, glib's, tokio's wake-up
 * channel, a counter or a semaphore between threads.
 *
 * Recorded by its id (`object`: /proc's eventfd-id + 1, which names the one counter behind every
 * fd that dup'ed it) and, in its payload, "COUNT SEMAPHORE SHARED": the counter's value at the cut
 * (hex), whether it counts as a semaphore (EFD_SEMAPHORE), and whether another process of the
 * program holds it too.  A resume makes one eventfd per id, with that count and mode, and places
 * it at every number that held it; O_NONBLOCK and O_CLOEXEC are the fd's own.
 *
 * Not kept yet: an eventfd two processes of the program share (a fork), which must be one counter
 * after a resume as before it.  The run records that it was shared; a resume from such a
 * checkpoint is refused (fd-unsupported), never made as two counters.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "fdkind.h"
#include "inject.h"
#include "sup.h"
#include "tree_fds.h"

#define EVENTFD_LINK "anon_inode:[eventfd]"

static int claims(struct sup *s, const struct fd_info *fi)
{
	(void)s;
	return fi->type == IMG_FD_OTHER && !strcmp(fi->path, EVENTFD_LINK);
}

/* Does another process of the tree hold the open file behind process s's fd? */
static int shared_with_another(struct sup *s, int fd)
{
	struct tree *t = s->tree;
	for (int i = 0; i < t->nprocs; i++) {
		struct sup *m = t->procs[i];
		int n = 0;
		const struct fd_info *fds = m == s || m->exited ? NULL : tree_proc_fds(m, &n);
		for (int j = 0; fds && j < n; j++)
			if (!strcmp(fds[j].path, EVENTFD_LINK) &&
			    syscall(SYS_kcmp, s->pid, m->pid, KCMP_FILE, fd, fds[j].fd) == 0)
				return 1;
	}
	return 0;
}

static int record(struct fd_capture *c)
{
	char path[64], line[128];
	snprintf(path, sizeof path, "/proc/%d/fdinfo/%d", (int)c->s->pid, c->fi->fd);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	unsigned long long count = 0, id = 0;
	int have_count = 0, have_id = 0, semaphore = -1; /* -1: this kernel does not say */
	while (fgets(line, sizeof line, f)) {
		have_count |= sscanf(line, "eventfd-count: %llx", &count) == 1;
		have_id |= sscanf(line, "eventfd-id: %llu", &id) == 1;
		if (sscanf(line, "eventfd-semaphore: %d", &semaphore) == 1 && semaphore != 0)
			semaphore = 1;
	}
	fclose(f);
	if (!have_count || !have_id)
		return -EPROTO;
	char payload[64];
	snprintf(payload, sizeof payload, "%llx %d %d", count, semaphore, shared_with_another(c->s, c->fi->fd));
	c->e->object = id + 1;
	c->e->payload = img_str(c->strings, payload);
	return c->e->payload == IMG_NONE ? -ENOMEM : 0;
}

/* The payload's grammar: COUNT (hex) " " SEMAPHORE (-1, 0 or 1) " " SHARED (0 or 1), nothing else. */
static int parse(const char *p, unsigned long long *count, int *semaphore, int *shared)
{
	int n = 0;
	return p && sscanf(p, "%llx %d %d%n", count, semaphore, shared, &n) == 3 && !p[n] && *count < ~0ull &&
	       *semaphore >= -1 && *semaphore <= 1 && (*shared == 0 || *shared == 1);
}

static enum refusal check(const struct img *im, const struct tree_view *tv, const struct img_fd *f, char *why, size_t whylen)
{
	(void)tv;
	unsigned long long count;
	int semaphore, shared;
	if (!f->object || !parse(img_s(im, f->payload), &count, &semaphore, &shared)) {
		snprintf(why, whylen, "fd %d: the checkpoint's record of this eventfd is damaged", f->fd);
		return REFUSE_POOL_CORRUPT;
	}
	if (shared) {
		snprintf(why, whylen, "fd %d: an eventfd shared by two processes of the program is not kept yet", f->fd);
		return REFUSE_FD_UNSUPPORTED;
	}
	if (semaphore < 0) {
		snprintf(why, whylen, "fd %d: the checkpoint did not learn whether this eventfd is a semaphore", f->fd);
		return REFUSE_FD_UNSUPPORTED;
	}
	return 0;
}

static int reopen(struct fd_restore *r, const struct img_fd *f)
{
	const struct fd_made *here = fd_made_here(r, IMG_FD_EVENTFD, f->object);
	long from = here ? here->rfd : -1;
	if (!here) { /* the first of its fds: the counter made again */
		unsigned long long count;
		int semaphore, shared;
		parse(img_s(r->im, f->payload), &count, &semaphore, &shared); /* checked at the admission */
		/* eventfd2 takes an unsigned int: the count is written in after, as the program would */
		long made[2] = { inject_syscall(&r->j->in, SYS_eventfd2, 0, semaphore ? EFD_SEMAPHORE : 0, 0, 0, 0, 0), -1 };
		uint64_t v = count;
		int rc = made[0] < 0 ? -1 : 0;
		if (!rc && count &&
		    (inject_write(&r->j->in, r->j->scratch, &v, sizeof v) != 0 ||
		     inject_syscall(&r->j->in, SYS_write, made[0], (long)r->j->scratch, sizeof v, 0, 0, 0) != (long)sizeof v))
			rc = -1;
		if (rc || fd_make_above(r, IMG_FD_EVENTFD, f->object, made) != 0)
			goto fail;
		from = r->made[r->nmade - 1].rfd;
	}
	if (fd_place(r, from, f) == 0)
		return 0;
fail:
	snprintf(r->why, r->whylen, "fd %d: cannot make the program's eventfd again", f->fd);
	return -1;
}

const struct fd_kind fd_kind_eventfd = { .type = IMG_FD_EVENTFD, .name = "eventfd", .phase = FD_PHASE_SHARED,
					 .claims = claims, .record = record, .check = check, .reopen = reopen };

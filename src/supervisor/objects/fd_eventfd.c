/* fd_eventfd.c -- an eventfd the program holds (fdkind.h): libuv's, glib's, tokio's wake-up
 * channel, a counter or a semaphore between threads or processes.
 *
 * Recorded by its id (`object`: /proc's eventfd-id + 1, which names the one counter behind every
 * fd that holds it, in any process) and, in its payload, "COUNT SEMAPHORE": the counter's value at
 * the cut (hex) and whether it counts as a semaphore (EFD_SEMAPHORE).  A resume makes one eventfd
 * per id with that count and mode -- for a tree of processes in the first process before the
 * others are forked (premake), so that processes that shared a counter share it again --
 * and places it at every number that held it; O_NONBLOCK and O_CLOEXEC are each fd's own.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "fdkind.h"
#include "inject.h"
#include "sup.h"
#include "tree_image.h"

#define EVENTFD_LINK "anon_inode:[eventfd]"

static int claims(struct sup *s, const struct fd_info *fi)
{
	(void)s;
	return fd_is_link(fi, EVENTFD_LINK);
}

static int record(struct fd_capture *c)
{
	char line[128];
	FILE *f = fd_fdinfo(c);
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
	snprintf(payload, sizeof payload, "%llx %d", count, semaphore);
	c->e->object = id + 1;
	c->e->payload = img_str(c->strings, payload);
	return c->e->payload == IMG_NONE ? -ENOMEM : 0;
}

/* The payload's grammar: COUNT (hex) " " SEMAPHORE (-1, 0 or 1), nothing else. */
static int parse(const char *p, unsigned long long *count, int *semaphore)
{
	int n = 0;
	return p && sscanf(p, "%llx %d%n", count, semaphore, &n) == 2 && !p[n] && *count < ~0ull && *semaphore >= -1 &&
	       *semaphore <= 1;
}

static enum refusal check(const struct img *im, const struct tree_view *tv, const struct img_fd *f, char *why, size_t whylen)
{
	(void)tv;
	unsigned long long count;
	int semaphore;
	if (!f->object || !parse(img_s(im, f->payload), &count, &semaphore)) {
		snprintf(why, whylen, "fd %d: the checkpoint's record of this eventfd is damaged", f->fd);
		return REFUSE_POOL_CORRUPT;
	}
	if (semaphore < 0) {
		snprintf(why, whylen, "fd %d: the checkpoint did not learn whether this eventfd is a semaphore", f->fd);
		return REFUSE_FD_UNSUPPORTED;
	}
	return 0;
}

/* An eventfd of f's count and mode made in the process of `in` (scratch: 8 bytes of it): its
 * number there, or -1. */
static long make(struct inject *in, uint64_t scratch, const struct img *im, const struct img_fd *f)
{
	unsigned long long count;
	int semaphore;
	parse(img_s(im, f->payload), &count, &semaphore); /* checked at the admission */
	/* eventfd2 takes an unsigned int: the count is written in after, as the program would */
	long fd = inject_syscall(in, SYS_eventfd2, 0, semaphore ? EFD_SEMAPHORE : 0, 0, 0, 0, 0);
	uint64_t v = count;
	if (fd >= 0 && count &&
	    (inject_write(in, scratch, &v, sizeof v) != 0 ||
	     inject_syscall(in, SYS_write, fd, (long)scratch, sizeof v, 0, 0, 0) != (long)sizeof v)) {
		inject_syscall(in, SYS_close, fd, 0, 0, 0, 0, 0);
		return -1;
	}
	return fd;
}

static int premake(struct fd_premake *p, const struct img *im, const struct img_fd *f)
{
	return fd_premake_shared(p, IMG_FD_EVENTFD, make, im, f);
}

/* one counter per id: a tree's made before the forks, a process alone's made at its first fd */
static int reopen(struct fd_restore *r, const struct img_fd *f)
{
	return fd_reopen_shared(r, f, IMG_FD_EVENTFD, make, "eventfd");
}

const struct fd_kind fd_kind_eventfd = { .type = IMG_FD_EVENTFD, .name = "eventfd", .phase = FD_PHASE_SHARED,
					 .claims = claims, .record = record, .check = check, .reopen = reopen,
					 .premake = premake };

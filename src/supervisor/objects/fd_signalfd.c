/* fd_signalfd.c -- a signalfd the program holds (fdkind.h): signals read as data, as event loops
 * (systemd's, glib's) and servers take them.
 *
 * Recorded by its mask, the payload (hex, as /proc's "sigmask:" shows it).  A resume makes a
 * signalfd with that mask at its number; O_NONBLOCK and O_CLOEXEC are the fd's own.  What a
 * signalfd reads is the signals pending for the process that reads it, which the checkpoint keeps
 * itself (pending.h): so a signalfd two processes share, or one at two numbers, reads the same
 * made as one per fd -- only a later change of its mask (signalfd(fd, ...)) reaches the one fd it
 * names, not the others that shared it (docs/limitations.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include "fdkind.h"
#include "inject.h"
#include "sup.h"

#define SIGNALFD_LINK "anon_inode:[signalfd]"

static int claims(struct sup *s, const struct fd_info *fi)
{
	(void)s;
	return fd_is_link(fi, SIGNALFD_LINK);
}

static int record(struct fd_capture *c)
{
	char line[128];
	FILE *f = fd_fdinfo(c);
	if (!f)
		return -errno;
	unsigned long long mask = 0;
	int have = 0;
	while (fgets(line, sizeof line, f))
		have |= sscanf(line, "sigmask: %llx", &mask) == 1;
	fclose(f);
	if (!have)
		return -EPROTO;
	char payload[32];
	snprintf(payload, sizeof payload, "%llx", mask);
	c->e->payload = img_str(c->strings, payload);
	return c->e->payload == IMG_NONE ? -ENOMEM : 0;
}

/* The payload's grammar: MASK (hex, at least one digit), nothing else. */
static int parse(const char *p, unsigned long long *mask)
{
	int n = 0;
	return p && sscanf(p, "%llx%n", mask, &n) == 1 && n > 0 && !p[n] && p[0] != '-' && p[0] != ' ';
}

static enum refusal check(const struct img *im, const struct tree_view *tv, const struct img_fd *f, char *why, size_t whylen)
{
	(void)tv;
	unsigned long long mask;
	if (parse(img_s(im, f->payload), &mask))
		return 0;
	snprintf(why, whylen, "fd %d: the checkpoint's record of this signalfd is damaged", f->fd);
	return REFUSE_POOL_CORRUPT;
}

static int reopen(struct fd_restore *r, const struct img_fd *f)
{
	unsigned long long mask;
	parse(img_s(r->im, f->payload), &mask); /* checked at the admission */
	uint64_t m = mask;
	long fd = inject_write(&r->j->in, r->j->scratch, &m, sizeof m) ? -1
		  : inject_syscall(&r->j->in, SYS_signalfd4, -1, (long)r->j->scratch, sizeof m, 0, 0, 0);
	int rc = fd_place(r, fd, f);
	if (fd >= 0 && fd != f->fd)
		inject_syscall(&r->j->in, SYS_close, fd, 0, 0, 0, 0, 0);
	if (rc)
		snprintf(r->why, r->whylen, "fd %d: cannot make the program's signalfd again", f->fd);
	return rc;
}

const struct fd_kind fd_kind_signalfd = { .type = IMG_FD_SIGNALFD, .name = "signalfd", .phase = FD_PHASE_OPEN,
					  .claims = claims, .record = record, .check = check, .reopen = reopen };

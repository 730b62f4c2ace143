/* fdkind.c -- the table of fd kinds and the calls through it (fdkind.h). */
#include "fdkind.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include "inject.h"
#include "sup.h"
#include "tree_image.h"

extern const struct fd_kind fd_kind_epoll, fd_kind_eventfd, fd_kind_signalfd, fd_kind_timerfd, fd_kind_inotify, fd_kind_iouring, fd_kind_pipe, fd_kind_socket, fd_kind_inet, fd_kind_shm,
	fd_kind_fifo, fd_kind_pty, fd_kind_unixgone, fd_kind_file,
	fd_kind_device, fd_kind_dir, fd_kind_other;

/* Asked in this order: a kind that tests another's claim first comes after it (shared memory
 * is a file to /proc; "other" takes what nobody claimed). */
const struct fd_kind *const fd_kinds[] = {
	&fd_kind_epoll, &fd_kind_eventfd, &fd_kind_signalfd, &fd_kind_timerfd, &fd_kind_inotify, &fd_kind_iouring, &fd_kind_pipe, &fd_kind_socket, &fd_kind_inet, &fd_kind_shm,
	&fd_kind_fifo, &fd_kind_pty, &fd_kind_unixgone,
	&fd_kind_file, &fd_kind_device, &fd_kind_dir, &fd_kind_other,
};
const int fd_nkinds = (int)(sizeof fd_kinds / sizeof fd_kinds[0]);

const struct fd_kind *fd_kind_of(uint32_t type)
{
	for (int k = 0; k < fd_nkinds; k++)
		if (fd_kinds[k]->type == type)
			return fd_kinds[k];
	return NULL;
}

int fd_record(struct sup *s, const struct fd_info *fi, struct img_fd *e, struct img_buf *strings)
{
	*e = (struct img_fd){ .fd = fi->fd, .flags = fi->flags, .pos = fi->pos, .size = fi->size,
			      .path = img_str(strings, fi->path), .payload = IMG_NONE };
	if (e->path == IMG_NONE)
		return -ENOMEM;
	for (int k = 0; k < fd_nkinds; k++) {
		const struct fd_kind *kind = fd_kinds[k];
		if (!kind->claims(s, fi))
			continue;
		e->type = kind->type;
		struct fd_capture c = { .s = s, .fi = fi, .e = e, .strings = strings };
		return kind->record ? kind->record(&c) : 0;
	}
	return -EINVAL; /* unreachable: the last kind claims every fd */
}

long fd_unread(struct sup *s, const struct fd_info *fi, const char **kind)
{
	for (int k = 0; k < fd_nkinds; k++)
		if (fd_kinds[k]->unread && fd_kinds[k]->claims(s, fi))
			return *kind = fd_kinds[k]->name, fd_kinds[k]->unread(s, fi);
	return -1;
}

static enum refusal check_kinds(const struct img *im, const struct tree_view *tv, int with_files, char *why, size_t whylen)
{
	for (uint32_t i = 0; i < im->h->nfds; i++) {
		const struct img_fd *f = &im->fds[i];
		const struct fd_kind *kind = fd_kind_of(f->type);
		if (kind && kind->check_reads_files && !with_files)
			continue;
		if (!kind) {
			snprintf(why, whylen, "fd %d: the checkpoint records it as a kind this version does not know (%u)", f->fd,
				 f->type);
			return REFUSE_POOL_CORRUPT;
		}
		enum refusal r = kind->check ? kind->check(im, tv, f, why, whylen) : 0;
		if (r)
			return r;
	}
	return 0;
}

enum refusal fd_check(const struct img *im, const struct tree_view *tv, char *why, size_t whylen)
{
	return check_kinds(im, tv, 1, why, whylen);
}

enum refusal fd_check_no_files(const struct img *im, const struct tree_view *tv, char *why, size_t whylen)
{
	return check_kinds(im, tv, 0, why, whylen);
}

int fd_reopen(struct fd_restore *r)
{
	const struct img *im = r->im;
	struct sup *s = r->s;
	r->top = 2;
	for (uint32_t i = 0; i < im->h->nfds; i++)
		if (im->fds[i].fd > r->top)
			r->top = im->fds[i].fd;
	r->next = r->top + 1;
	int nf = 0;
	if (proc_fds(s->pid, s->cut.fds, MAX_FDS, &nf) != 0) {
		snprintf(r->why, r->whylen, "cannot list the relaunched program's fds");
		return -1;
	}
	/* what the fresh program has beyond stdio goes (the tree's premade objects are taken below) */
	for (int j = 0; j < nf; j++)
		if (s->cut.fds[j].fd > 2 && !fd_is_premade(s->tree, s->cut.fds[j].fd))
			inject_syscall(&r->j->in, SYS_close, s->cut.fds[j].fd, 0, 0, 0, 0, 0);
	int rc = 0;
	for (int phase = 0; phase < FD_NPHASES && !rc; phase++)
		for (uint32_t i = 0; i < im->h->nfds && !rc; i++) {
			const struct fd_kind *kind = fd_kind_of(im->fds[i].type);
			if (kind && kind->phase == phase && kind->reopen)
				rc = kind->reopen(r, &im->fds[i]);
		}
	for (uint32_t i = 0; i < im->h->nfds && !rc; i++) {
		const struct fd_kind *kind = fd_kind_of(im->fds[i].type);
		if (kind && kind->after)
			rc = kind->after(r, &im->fds[i]);
	}
	/* every fd is at its number: the objects made for them go, and the tree's premade ones */
	for (int i = 0; i < r->nmade; i++) {
		inject_syscall(&r->j->in, SYS_close, r->made[i].rfd, 0, 0, 0, 0, 0);
		if (r->made[i].wfd != r->made[i].rfd)
			inject_syscall(&r->j->in, SYS_close, r->made[i].wfd, 0, 0, 0, 0, 0);
	}
	for (int i = 0; i < s->tree->resume.npremade; i++) {
		inject_syscall(&r->j->in, SYS_close, s->tree->resume.premade[i].rfd, 0, 0, 0, 0, 0);
		if (s->tree->resume.premade[i].wfd != s->tree->resume.premade[i].rfd)
			inject_syscall(&r->j->in, SYS_close, s->tree->resume.premade[i].wfd, 0, 0, 0, 0, 0);
	}
	free(r->made);
	r->made = NULL, r->nmade = r->made_cap = 0;
	return rc ? -1 : 0;
}

int fd_is_link(const struct fd_info *fi, const char *link)
{
	return fi->type == IMG_FD_OTHER && !strcmp(fi->path, link);
}

FILE *fd_fdinfo(const struct fd_capture *c)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/fdinfo/%d", (int)c->s->pid, c->fi->fd);
	return fopen(path, "re");
}

int fd_record_link_ino(struct fd_capture *c, const char *prefix)
{
	const char *p = c->fi->path;
	size_t n = strlen(prefix);
	char *end;
	if (strncmp(p, prefix, n) || p[n] != ':' || p[n + 1] != '[')
		return -EINVAL;
	unsigned long long ino = strtoull(p + n + 2, &end, 10);
	if (end == p + n + 2 || strcmp(end, "]"))
		return -EINVAL;
	c->e->object = ino;
	return 0;
}

int fd_premake_all(struct fd_premake *p)
{
	const struct tree_view *v = p->t->resume.view;
	for (uint32_t n = 0; n < v->nprocs; n++) {
		const struct img *im = &p->t->resume.imgs[n];
		for (uint32_t i = 0; im->h && i < im->h->nfds; i++) {
			const struct img_fd *f = &im->fds[i];
			const struct fd_kind *kind = fd_kind_of(f->type);
			if (kind && kind->premake && !fd_premade(p->t, f->type, f->object) && kind->premake(p, im, f) != 0)
				return -1;
		}
	}
	return 0;
}

int fd_premade_add(struct fd_premake *p, uint32_t type, uint64_t object, long fd)
{
	struct tree *t = p->t;
	struct premade *more = fd >= 0 ? realloc(t->resume.premade, ((size_t)t->resume.npremade + 1) * sizeof *more) : NULL;
	if (!more) {
		snprintf(p->why, p->whylen, fd < 0 ? "cannot make the program's %ss again" : "out of memory",
			 fd_kind_of(type) ? fd_kind_of(type)->name : "fd");
		return -1;
	}
	t->resume.premade = more;
	t->resume.premade[t->resume.npremade++] = (struct premade){ .type = type, .object = object, .rfd = (int)fd,
								    .wfd = (int)fd };
	return 0;
}

void fd_warn_once(struct sup *s, int fd, const char *what, const char *path)
{
	if (fd < 0 || fd >= MAX_FDS || (s->warned_fds[fd / 64] >> (fd % 64) & 1))
		return;
	s->warned_fds[fd / 64] |= 1ull << (fd % 64);
	fprintf(stderr, "prosper: warning: fd %d (%s) %s\n", fd, path, what);
}

const struct premade *fd_premade(const struct tree *t, uint32_t type, uint64_t object)
{
	for (int i = 0; i < t->resume.npremade; i++)
		if (t->resume.premade[i].type == type && t->resume.premade[i].object == object)
			return &t->resume.premade[i];
	return NULL;
}

int fd_is_premade(const struct tree *t, int fd)
{
	for (int i = 0; i < t->resume.npremade; i++)
		if (t->resume.premade[i].rfd == fd || t->resume.premade[i].wfd == fd)
			return 1;
	return 0;
}

int fd_place(struct fd_restore *r, long from, const struct img_fd *f)
{
	if (from < 0)
		return -1;
	/* made at its own number already (the lowest free one): dup3 would refuse it */
	long placed = from == f->fd
			      ? inject_syscall(&r->j->in, SYS_fcntl, f->fd, F_SETFD, (f->flags & O_CLOEXEC) ? FD_CLOEXEC : 0, 0, 0, 0)
			      : inject_syscall(&r->j->in, SYS_dup3, from, f->fd, (long)(f->flags & O_CLOEXEC), 0, 0, 0) - f->fd;
	if (placed != 0 || inject_syscall(&r->j->in, SYS_fcntl, f->fd, F_SETFL, (long)(f->flags & O_NONBLOCK), 0, 0, 0) != 0)
		return -1;
	return 0;
}

int fd_make_above(struct fd_restore *r, uint32_t type, uint64_t object, const long made[2])
{
	if (r->nmade == r->made_cap) {
		int cap = r->made_cap ? 2 * r->made_cap : 8;
		struct fd_made *more = realloc(r->made, (size_t)cap * sizeof *more);
		if (!more)
			return -1;
		r->made = more, r->made_cap = cap;
	}
	int32_t hi[2] = { -1, -1 }, rc = 0;
	for (int e = 0; e < 2; e++) {
		if (made[e] < 0)
			continue;
		long at = inject_syscall(&r->j->in, SYS_fcntl, made[e], F_DUPFD, r->next, 0, 0, 0);
		inject_syscall(&r->j->in, SYS_close, made[e], 0, 0, 0, 0, 0);
		if (at < r->next) {
			rc = -1;
			continue;
		}
		hi[e] = (int32_t)at;
		r->next = (int32_t)at + 1;
	}
	/* remembered even when half made, so that fd_reopen closes what was made */
	r->made[r->nmade++] = (struct fd_made){ .type = type, .object = object, .rfd = hi[0] >= 0 ? hi[0] : hi[1],
						.wfd = hi[1] >= 0 ? hi[1] : hi[0] };
	return rc;
}

const struct fd_made *fd_made_here(const struct fd_restore *r, uint32_t type, uint64_t object)
{
	for (int i = 0; i < r->nmade; i++)
		if (r->made[i].type == type && r->made[i].object == object)
			return &r->made[i];
	return NULL;
}

long fd_premake_above(struct fd_premake *p, long fd)
{
	struct inject *in = &p->root->in;
	long hi = fd >= 0 ? inject_syscall(in, SYS_fcntl, fd, F_DUPFD, p->next, 0, 0, 0) : -1;
	if (fd >= 0)
		inject_syscall(in, SYS_close, fd, 0, 0, 0, 0, 0);
	if (hi < p->next)
		return -1;
	p->next = hi + 1;
	return hi;
}

int fd_premake_shared(struct fd_premake *p, uint32_t type, fd_make_fn make, const struct img *im, const struct img_fd *f)
{
	/* not made: fd_premade_add says so */
	return fd_premade_add(p, type, f->object, fd_premake_above(p, make(&p->root->in, p->root->scratch, im, f)));
}

int fd_reopen_shared(struct fd_restore *r, const struct img_fd *f, uint32_t type, fd_make_fn make, const char *what)
{
	const struct premade *pm = fd_premade(r->s->tree, type, f->object);
	const struct fd_made *here = pm ? NULL : fd_made_here(r, type, f->object);
	long from = pm ? pm->rfd : here ? here->rfd : -1;
	if (!pm && !here) {
		long made[2] = { make(&r->j->in, r->j->scratch, r->im, f), -1 };
		if (made[0] >= 0 && fd_make_above(r, type, f->object, made) == 0)
			from = r->made[r->nmade - 1].rfd;
	}
	if (from >= 0 && fd_place(r, from, f) == 0)
		return 0;
	snprintf(r->why, r->whylen, "fd %d: cannot make the program's %s again", f->fd, what);
	return -1;
}

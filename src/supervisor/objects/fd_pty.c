/* fd_pty.c -- an end of a pseudo-terminal the program made for itself (fdkind.h; ptys.h says
 * which terminals are the program's own and what a cut reads of them).
 *
 * Recorded by its terminal (`object`: 2(N+1) for the master of /dev/pts/N, one more for its
 * slave, so that the ends of one terminal are told apart and found together) and, in its
 * payload, for a slave "S", for a master
 *   "M LOCKED PACKET IFLAG OFLAG CFLAG LFLAG LINE CC ROWS COLS XPIXEL YPIXEL DATA"
 * LOCKED, PACKET 0 or 1; the termios flags in hex, its line discipline in decimal, its 19 control
 * characters as 38 hex digits; the window size in decimal; DATA the bytes waiting at the master
 * (hex, at most PTY_DATA_MAX of them), "-" for none, or "?K" for a terminal not kept (K: enum
 * pty_unkept), whose resume is refused.
 *
 * A resume opens /dev/ptmx for a new terminal with the slave's settings and opens its slave from
 * it (TIOCGPTPEER: no path, whatever N it has), writes the kept bytes into the slave with output
 * processing off, then sets the termios, the packet mode and the lock -- for a tree in the first
 * process before the others are forked, so that the processes that held its ends hold the new
 * one's -- and places master and slave at every number that held them (read and write both: a
 * slave opened write-only comes back readable too).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "fdkind.h"
#include "inject.h"
#include "ptys.h"
#include "sup.h"
#include "tree_image.h"

_Static_assert(sizeof(struct pty_termios) == 36, "TCGETS's struct termios is 36 bytes");

#define OPOST_BIT 0000001

/* A master's record. */
struct pty_rec {
	int locked, packet;
	struct pty_termios tio;
	struct pty_winsize ws;
	const char *hex;  /* DATA's bytes in the payload (len of them), when kept */
	size_t len;
	int unkept;       /* enum pty_unkept */
};

static int claims(struct sup *s, const struct fd_info *fi)
{
	if (fi->type != IMG_FD_DEVICE)
		return 0;
	if (pty_is_master_path(fi->path)) /* every master: one the cut did not read is not kept */
		return 1;
	int master;
	return pty_slave_index(fi->path) >= 0 && ptys_of_fd(s->tree, s->pid, fi->fd, fi->path, &master) != NULL;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static void to_hex(char *out, const uint8_t *b, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++)
		out[2 * i] = digits[b[i] >> 4], out[2 * i + 1] = digits[b[i] & 15];
	out[2 * n] = 0;
}

/* The fields of a master's payload before DATA, as record writes them, into out. */
static int fields(char *out, size_t n, const struct pty_rec *t, const char *cc)
{
	return snprintf(out, n, "M %d %d %x %x %x %x %u %s %u %u %u %u ", t->locked, t->packet, t->tio.iflag, t->tio.oflag,
			t->tio.cflag, t->tio.lflag, t->tio.line, cc, t->ws.rows, t->ws.cols, t->ws.xpixel, t->ws.ypixel);
}

static int record(struct fd_capture *c)
{
	int master;
	const struct pty_cut *p = ptys_of_fd(c->s->tree, c->s->pid, c->fi->fd, c->fi->path, &master);
	uint64_t index = p ? (uint64_t)p->index : (uint64_t)c->fi->fd + (1u << 20); /* unread: its own, never another's */
	c->e->object = 2 * (index + 1) + !master;
	if (!master) {
		c->e->payload = img_str(c->strings, "S");
		return c->e->payload == IMG_NONE ? -ENOMEM : 0;
	}
	static const struct pty_cut unread = { .unkept = PTY_UNREAD };
	if (!p)
		p = &unread;
	size_t cap = 256 + 2 * (size_t)p->len;
	char *payload = malloc(cap);
	if (!payload)
		return -ENOMEM;
	char cc[2 * sizeof p->tio.cc + 1];
	to_hex(cc, p->tio.cc, sizeof p->tio.cc);
	struct pty_rec t = { .locked = p->locked, .packet = p->packet, .tio = p->tio, .ws = p->ws };
	int n = fields(payload, cap, &t, cc);
	if (p->unkept)
		snprintf(payload + n, cap - (size_t)n, "?%d", p->unkept);
	else if (!p->len)
		snprintf(payload + n, cap - (size_t)n, "-");
	else
		to_hex(payload + n, p->data, p->len);
	c->e->payload = img_str(c->strings, payload);
	free(payload);
	return c->e->payload == IMG_NONE ? -ENOMEM : 0;
}

/* A master's payload into *t: 1, or 0 when it is not one of the grammar's (exactly as record
 * writes it: the fields read are written again and must be the same text). */
static int parse(const char *p, struct pty_rec *t)
{
	char cc[40], again[256];
	unsigned line, rows, cols, xp, yp;
	int n = 0;
	memset(t, 0, sizeof *t);
	if (!p || sscanf(p, "M %d %d %x %x %x %x %u %39s %u %u %u %u %n", &t->locked, &t->packet, &t->tio.iflag,
			 &t->tio.oflag, &t->tio.cflag, &t->tio.lflag, &line, cc, &rows, &cols, &xp, &yp, &n) != 12 || !n ||
	    (t->locked | t->packet) & ~1 || line > 255 || rows > 65535 || cols > 65535 || xp > 65535 || yp > 65535 ||
	    strlen(cc) != 2 * sizeof t->tio.cc)
		return 0;
	t->tio.line = (uint8_t)line;
	t->ws = (struct pty_winsize){ (uint16_t)rows, (uint16_t)cols, (uint16_t)xp, (uint16_t)yp };
	for (size_t i = 0; i < sizeof t->tio.cc; i++) {
		int hi = hexval(cc[2 * i]), lo = hexval(cc[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return 0;
		t->tio.cc[i] = (uint8_t)(hi << 4 | lo);
	}
	if (fields(again, sizeof again, t, cc) != n || strncmp(again, p, (size_t)n))
		return 0;
	const char *d = p + n;
	if (d[0] == '?') {
		int k = 0;
		char why[16];
		if (sscanf(d, "?%d", &k) != 1 || k <= 0 || k >= PTY_NUNKEPT)
			return 0;
		snprintf(why, sizeof why, "?%d", k);
		return !strcmp(why, d) && (t->unkept = k);
	}
	if (!strcmp(d, "-"))
		return 1;
	size_t len = strlen(d);
	if (!len || len % 2 || len > 2 * PTY_DATA_MAX)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (hexval(d[i]) < 0)
			return 0;
	t->hex = d, t->len = len / 2;
	return 1;
}

static enum refusal check(const struct img *im, const struct tree_view *tv, const struct img_fd *f, char *why, size_t whylen)
{
	(void)tv;
	struct pty_rec t;
	const char *p = img_s(im, f->payload);
	int slave = f->object & 1;
	if (f->object < 2 || !(slave ? p && !strcmp(p, "S") : parse(p, &t))) {
		snprintf(why, whylen, "fd %d: the checkpoint's record of this terminal is damaged", f->fd);
		return REFUSE_POOL_CORRUPT;
	}
	if (!slave && t.unkept) {
		snprintf(why, whylen, "fd %d: the pseudo-terminal the program made is not kept: %s", f->fd,
			 pty_unkept_why(t.unkept));
		return REFUSE_FD_UNSUPPORTED;
	}
	return 0;
}

/* The master's record of f's terminal among the checkpoint's fds (every process of a tree, or
 * im alone), or NULL. */
static const struct img_fd *master_of(const struct tree *t, const struct img *im, const struct img_fd *f,
				      const struct img **in)
{
	uint64_t object = f->object & ~1ull;
	uint32_t nimgs = t->resume.view ? t->resume.view->nprocs : 1;
	for (uint32_t i = 0; i < nimgs; i++) {
		const struct img *o = t->resume.view ? &t->resume.imgs[i] : im;
		if (t->resume.view && t->resume.view->procs[i]->exited)
			continue;
		for (uint32_t k = 0; o->h && k < o->h->nfds; k++)
			if (o->fds[k].type == IMG_FD_PTY && o->fds[k].object == object) {
				*in = o;
				return &o->fds[k];
			}
	}
	return NULL;
}

static long sys(struct inject *in, long nr, long a1, long a2, long a3)
{
	return inject_syscall(in, nr, a1, a2, a3, 0, 0, 0);
}

/* ioctl(fd, req, &v) with v put in the scratch. */
static long ioctl_with(struct injector *j, long fd, unsigned long req, const void *v, size_t n)
{
	if (inject_write(&j->in, j->scratch, v, n) != 0)
		return -EIO;
	return sys(&j->in, SYS_ioctl, fd, (long)req, (long)j->scratch);
}

/* The terminal of master record t made in the process of j: fds[0] its master, fds[1] its slave.
 * 0, or -1 with nothing left open. */
static int make_pair(struct injector *j, const struct pty_rec *t, long fds[2])
{
	struct inject *in = &j->in;
	long path = injector_str(j, "/dev/ptmx");
	long m = path ? sys(in, SYS_openat, AT_FDCWD, path, O_RDWR | O_NOCTTY | O_CLOEXEC) : -1;
	if (m < 0)
		return -1;
	int zero = 0, one = 1;
	struct winsize ws = { t->ws.rows, t->ws.cols, t->ws.xpixel, t->ws.ypixel };
	long s = ioctl_with(j, m, TIOCSPTLCK, &zero, sizeof zero) == 0
			 ? sys(in, SYS_ioctl, m, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC)
			 : -1;
	int ok = s >= 0 && ioctl_with(j, m, TIOCSWINSZ, &ws, sizeof ws) == 0;
	if (ok && t->len) { /* the bytes waiting at the master: processed once already, so written raw */
		struct pty_termios raw = t->tio;
		raw.oflag &= ~(uint32_t)OPOST_BIT;
		ok = ioctl_with(j, m, TCSETS, &raw, sizeof raw) == 0;
		size_t chunk = j->scratch_bytes < 4096 ? j->scratch_bytes : 4096;
		uint8_t buf[4096];
		for (size_t done = 0; ok && done < t->len;) {
			size_t n = t->len - done < chunk ? t->len - done : chunk;
			for (size_t i = 0; i < n; i++)
				buf[i] = (uint8_t)(hexval(t->hex[2 * (done + i)]) << 4 | hexval(t->hex[2 * (done + i) + 1]));
			long put = inject_write(in, j->scratch, buf, n) == 0 ? sys(in, SYS_write, s, (long)j->scratch, (long)n) : -1;
			ok = put > 0;
			done += ok ? (size_t)put : 0;
		}
	}
	ok = ok && ioctl_with(j, m, TCSETS, &t->tio, sizeof t->tio) == 0 &&
	     (!t->packet || ioctl_with(j, m, TIOCPKT, &one, sizeof one) == 0) &&
	     (!t->locked || ioctl_with(j, m, TIOCSPTLCK, &one, sizeof one) == 0);
	if (!ok) {
		if (s >= 0)
			sys(in, SYS_close, s, 0, 0);
		sys(in, SYS_close, m, 0, 0);
		return -1;
	}
	fds[0] = m, fds[1] = s;
	return 0;
}

/* A tree's terminals, made once (by the first end asked) for both ends. */
static int premake(struct fd_premake *p, const struct img *im, const struct img_fd *f)
{
	uint64_t object = f->object & ~1ull;
	const struct img *mim = NULL;
	const struct img_fd *g = master_of(p->t, im, f, &mim);
	struct pty_rec t;
	long fds[2];
	if (fd_premade(p->t, IMG_FD_PTY, object))
		return 0;
	int made = g && parse(img_s(mim, g->payload), &t) && make_pair(p->root, &t, fds) == 0;
	long master = made ? fd_premake_above(p, fds[0]) : -1, slave = made ? fd_premake_above(p, fds[1]) : -1;
	return fd_premade_add(p, IMG_FD_PTY, object, master) || fd_premade_add(p, IMG_FD_PTY, object | 1, slave) ? -1 : 0;
}

static int reopen(struct fd_restore *r, const struct img_fd *f)
{
	const struct premade *pm = fd_premade(r->s->tree, IMG_FD_PTY, f->object);
	if (pm && fd_place(r, pm->rfd, f) == 0)
		return 0;
	uint64_t object = f->object & ~1ull;
	const struct fd_made *here = pm ? NULL : fd_made_here(r, IMG_FD_PTY, object);
	if (!pm && !here) { /* a process alone: its terminal made at its first end */
		const struct img *mim = NULL;
		const struct img_fd *g = master_of(r->s->tree, r->im, f, &mim);
		struct pty_rec t;
		long fds[2];
		if (g && parse(img_s(mim, g->payload), &t) && make_pair(r->j, &t, fds) == 0 && fd_make_above(r, IMG_FD_PTY, object, fds) == 0)
			here = &r->made[r->nmade - 1];
	}
	if (here && fd_place(r, f->object & 1 ? here->wfd : here->rfd, f) == 0)
		return 0;
	snprintf(r->why, r->whylen, "fd %d: cannot make the program's pseudo-terminal again", f->fd);
	return -1;
}

const struct fd_kind fd_kind_pty = { .type = IMG_FD_PTY, .name = "pseudo-terminal", .phase = FD_PHASE_SHARED,
				     .claims = claims, .record = record, .check = check, .reopen = reopen,
				     .premake = premake };

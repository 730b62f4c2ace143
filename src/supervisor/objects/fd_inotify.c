/* fd_inotify.c -- an inotify instance the program holds (fdkind.h): the file watchers of build
 * tools, editors' servers, Node's fs.watch, systemd-style services.
 *
 * /proc's fdinfo lists each watch by its number (wd), its mask and a file handle of the inode it
 * watches -- not by path.  The cut opens each handle (open_by_handle_at, on a mount of that
 * device), checks the inode is the one named, and records the path it is reached by now.  The
 * payload is "N" and then, for each of the N watches in rising wd order, " WD MASK LEN PATH":
 * WD decimal, MASK hex (the kernel's event bits with IN_ONESHOT and IN_EXCL_UNLINK, and
 * IN_DONT_FOLLOW when the watched inode is a symbolic link), PATH absolute and LEN bytes long (a
 * path may hold spaces).  An instance whose watches cannot be opened (an ordinary user may not
 * open handles; a kernel without them) is recorded as "?": the run warns once and its resume is
 * refused (fd-unsupported), never resumed without its watches.
 *
 * A resume checks every path still exists (else fd-gone, before anything is touched), makes an
 * inotify instance at the fd's number and adds the watches in wd order.  The kernel gives the
 * next number after the last it gave (cyclically), so a watch whose number comes back lower is
 * removed and added again until it reaches its own (the IN_IGNORED events that queues are read
 * away before the program runs); a path that now names the inode of an earlier watch (a rename
 * meanwhile) fails the resume rather than merge two watches.
 *
 * Queued events cannot be read without taking them from the program, nor put in a new instance:
 * a cut that finds some queued (`unread`, FIONREAD on a copy of the fd) waits for the program to
 * read them (tree.c), so that a program that was told the fd is readable is not resumed to find it
 * empty.  Only events the program leaves unread longer than that wait are lost with the cut
 * (counted, warned), as are the events of what changed while the program was dead
 * (docs/limitations.md).  Like a timerfd, one instance that several fds or processes shared comes
 * back as one per fd.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "fdkind.h"
#include "inject.h"
#include "sup.h"

#define INOTIFY_LINK "anon_inode:inotify"
#define WATCH_BITS (IN_ALL_EVENTS | IN_ONESHOT | IN_EXCL_UNLINK | IN_DONT_FOLLOW)
#define MAX_WATCHES 8192           /* per instance: the payload's bound */
#define MAX_RENUMBER (1L << 20)    /* adds a resume may spend reaching the watches' numbers */
#define UNRESOLVED "?"

struct watch {
	int wd;
	unsigned mask;
	const char *path; /* into the payload: LEN bytes */
	size_t len;
	size_t off;       /* at the cut: its offset in the paths read so far */
};

static int claims(struct sup *s, const struct fd_info *fi)
{
	(void)s;
	return fd_is_link(fi, INOTIFY_LINK);
}

/* Undo mountinfo's octal escapes (\040 for a space) in place. */
static void unescape(char *p)
{
	char *o = p;
	for (; *p; p++) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' && p[3] >= '0' && p[3] <= '7') {
			*o++ = (char)((p[1] - '0') << 6 | (p[2] - '0') << 3 | (p[3] - '0'));
			p += 3;
		} else {
			*o++ = *p;
		}
	}
	*o = 0;
}

/* A directory of the mount of device (maj, min) as process pid sees it, open: the mount
 * of its file system's root if there is one (a handle's inode is always under it).  -1 if none. */
static int open_mount(pid_t pid, unsigned maj, unsigned min)
{
	char p[64], line[4096], mnt_root[PATH_MAX], point[PATH_MAX], where[PATH_MAX + 64];
	snprintf(p, sizeof p, "/proc/%d/mountinfo", (int)pid);
	FILE *f = fopen(p, "re");
	if (!f)
		return -1;
	int fd = -1, best = 0;
	while (fgets(line, sizeof line, f)) {
		unsigned a, b;
		if (sscanf(line, "%*d %*d %u:%u %4095s %4095s", &a, &b, mnt_root, point) != 4 || a != maj || b != min)
			continue;
		int whole = !strcmp(mnt_root, "/");
		if (fd >= 0 && (best || !whole))
			continue;
		unescape(point);
		snprintf(where, sizeof where, "/proc/%d/root%s", (int)pid, point);
		int m = open(where, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* not O_PATH: open_by_handle_at refuses one */
		if (m < 0)
			continue;
		if (fd >= 0)
			close(fd);
		fd = m, best = whole;
	}
	fclose(f);
	return fd;
}

/* The path one watch's inode is reached by now (into out), its mask with IN_DONT_FOLLOW for a
 * symbolic link.  0, or a negative errno. */
static int resolve(pid_t pid, const char *line, struct watch *w, char *out, size_t outlen)
{
	unsigned wd, sdev, mask, hbytes, htype;
	unsigned long ino;
	char hex[2 * MAX_HANDLE_SZ + 1];
	if (sscanf(line, "inotify wd:%x ino:%lx sdev:%x mask:%x ignored_mask:%*x fhandle-bytes:%x fhandle-type:%x f_handle:%256s",
		   &wd, &ino, &sdev, &mask, &hbytes, &htype, hex) != 7)
		return -EPROTO;
	if (!wd || wd > INT_MAX || hbytes > MAX_HANDLE_SZ || strlen(hex) != 2 * hbytes)
		return -EPROTO;
	union {
		struct file_handle fh;
		char space[sizeof(struct file_handle) + MAX_HANDLE_SZ];
	} h;
	h.fh.handle_bytes = hbytes, h.fh.handle_type = (int)htype;
	for (unsigned i = 0; i < hbytes; i++) {
		unsigned byte;
		if (sscanf(hex + 2 * i, "%2x", &byte) != 1)
			return -EPROTO;
		h.fh.f_handle[i] = (unsigned char)byte;
	}
	/* the kernel's dev_t: 12 bits of major above 20 of minor */
	int mnt = open_mount(pid, sdev >> 20, sdev & 0xfffff);
	if (mnt < 0)
		return -ENOENT;
	int fd = open_by_handle_at(mnt, &h.fh, O_PATH | O_CLOEXEC);
	int err = fd < 0 ? -errno : 0;
	close(mnt);
	if (fd < 0)
		return err;
	struct stat st;
	char link[64];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = fstat(fd, &st) == 0 && st.st_ino == ino && major(st.st_dev) == sdev >> 20 &&
				    minor(st.st_dev) == (sdev & 0xfffff)
			    ? readlink(link, out, outlen - 1)
			    : -1;
	close(fd);
	if (n <= 0 || out[0] != '/' || (size_t)n >= outlen - 1)
		return -ENOENT;
	out[n] = 0;
	if (n > 10 && !strcmp(out + n - 10, " (deleted)"))
		return -ENOENT;
	w->wd = (int)wd;
	w->mask = (mask & WATCH_BITS) | (S_ISLNK(st.st_mode) ? IN_DONT_FOLLOW : 0);
	w->path = out, w->len = (size_t)n;
	return 0;
}

static int by_wd(const void *a, const void *b)
{
	const struct watch *x = a, *y = b;
	return (x->wd > y->wd) - (x->wd < y->wd);
}

/* The record of an instance (into *out, malloc'd): its watches resolved, or "?" when one cannot be
 * (err then says why).  0, or -ENOMEM. */
static int describe(struct fd_capture *c, char **out, int *err)
{
	FILE *f = fd_fdinfo(c);
	if (!f)
		return *err = -errno, *out = strdup(UNRESOLVED), *out ? 0 : -ENOMEM;
	struct watch *w = NULL;
	char *paths = NULL, line[1024], path[PATH_MAX];
	size_t used = 0, room = 0;
	int n = 0, cap = 0;
	*err = 0, *out = NULL;
	while (!*err && fgets(line, sizeof line, f)) {
		if (strncmp(line, "inotify ", 8))
			continue;
		struct watch one;
		if ((*err = resolve(c->s->pid, line, &one, path, sizeof path)))
			break;
		if (n == MAX_WATCHES) {
			*err = -E2BIG;
			break;
		}
		if (n == cap) {
			struct watch *more = realloc(w, (size_t)(cap = cap ? 2 * cap : 16) * sizeof *w);
			if (!more)
				goto nomem;
			w = more;
		}
		if (used + one.len + 1 > room) {
			char *more = realloc(paths, room = 2 * (used + one.len + 1));
			if (!more)
				goto nomem;
			paths = more;
		}
		memcpy(paths + used, path, one.len + 1);
		one.path = NULL, one.off = used;
		used += one.len + 1;
		w[n++] = one;
	}
	fclose(f), f = NULL;
	if (*err) {
		*out = strdup(UNRESOLVED);
	} else {
		qsort(w, (size_t)n, sizeof *w, by_wd);
		size_t len = 0, size = 16 + used + (size_t)n * 32;
		if ((*out = malloc(size)))
			len = (size_t)snprintf(*out, size, "%d", n);
		for (int i = 0; *out && i < n; i++)
			len += (size_t)snprintf(*out + len, size - len, " %d %x %zu %s", w[i].wd, w[i].mask, w[i].len,
						paths + w[i].off);
	}
	free(w), free(paths);
	return *out ? 0 : -ENOMEM;
nomem:
	fclose(f);
	free(w), free(paths);
	return -ENOMEM;
}

static int record(struct fd_capture *c)
{
	char *rec, what[300];
	int err;
	if (describe(c, &rec, &err))
		return -ENOMEM;
	if (err) {
		snprintf(what, sizeof what, "is an inotify instance whose watched files cannot be named (%s%s): a resume from "
			 "this checkpoint is refused", strerror(-err),
			 err == -EPERM ? "; opening a file handle needs CAP_DAC_READ_SEARCH, which an ordinary user lacks" : "");
		fd_warn_once(c->s, c->fi->fd, what, c->fi->path);
	}
	c->e->payload = img_str(c->strings, rec);
	free(rec);
	return c->e->payload == IMG_NONE ? -ENOMEM : 0;
}

/* The bytes of events queued for the program to read now. */
static long unread(struct sup *s, const struct fd_info *fi)
{
	int copy = proc_fd_copy(s->pid, fi->fd), n = 0;
	if (copy < 0)
		return 0; /* no copy, no wait: the record then says what it can */
	if (ioctl(copy, FIONREAD, &n) != 0)
		n = 0;
	close(copy);
	return n;
}

/* The payload's grammar (above): the watches into w (at most MAX_WATCHES; paths point into p),
 * their count, or -1 for a damaged record.  "?" is 0 watches with *unresolved set. */
static int parse(const char *p, struct watch *w, int *unresolved)
{
	*unresolved = 0;
	if (!p)
		return -1;
	if (!strcmp(p, UNRESOLVED))
		return *unresolved = 1, 0;
	int n, k = 0;
	if (sscanf(p, "%d%n", &n, &k) != 1 || n < 0 || n > MAX_WATCHES || p[0] < '0' || p[0] > '9')
		return -1;
	p += k;
	for (int i = 0; i < n; i++) {
		unsigned mask;
		size_t len;
		int wd;
		if (p[0] != ' ' || p[1] < '1' || p[1] > '9' || sscanf(p, " %d %x %zu %n", &wd, &mask, &len, &k) != 3)
			return -1;
		p += k;
		if (wd <= 0 || (i && wd <= w[i - 1].wd) || !(mask & IN_ALL_EVENTS) || (mask & ~WATCH_BITS) || len == 0 ||
		    len >= PATH_MAX || strnlen(p, len) != len || p[0] != '/' || p[-1] != ' ' || p[-2] == ' ')
			return -1;
		w[i] = (struct watch){ .wd = wd, .mask = mask, .path = p, .len = len };
		p += len;
	}
	return *p ? -1 : n;
}

/* A watch's path as a string. */
static const char *path_of(const struct watch *w, char *buf)
{
	memcpy(buf, w->path, w->len);
	buf[w->len] = 0;
	return buf;
}

static enum refusal check(const struct img *im, const struct tree_view *tv, const struct img_fd *f, char *why, size_t whylen)
{
	(void)tv;
	struct watch *w = malloc(MAX_WATCHES * sizeof *w);
	if (!w) {
		snprintf(why, whylen, "fd %d: no memory to check its inotify watches", f->fd);
		return REFUSE_RESTORE;
	}
	char path[PATH_MAX];
	struct stat st;
	enum refusal r = 0;
	int unresolved, n = parse(img_s(im, f->payload), w, &unresolved);
	if (n < 0) {
		snprintf(why, whylen, "fd %d: the checkpoint's record of this inotify instance is damaged", f->fd);
		r = REFUSE_POOL_CORRUPT;
	} else if (unresolved) {
		snprintf(why, whylen, "fd %d is an inotify instance whose watched files the checkpoint could not name "
			 "(an ordinary user's run cannot open file handles)", f->fd);
		r = REFUSE_FD_UNSUPPORTED;
	}
	for (int i = 0; !r && i < n; i++)
		if (lstat(path_of(&w[i], path), &st) != 0) {
			snprintf(why, whylen, "fd %d: inotify watch %d's file %s is gone", f->fd, w[i].wd, path);
			r = REFUSE_FD_GONE;
		}
	free(w);
	return r;
}

static int reopen(struct fd_restore *r, const struct img_fd *f)
{
	struct watch *w = malloc(MAX_WATCHES * sizeof *w);
	int unresolved, n = w ? parse(img_s(r->im, f->payload), w, &unresolved) : -1; /* checked at the admission */
	struct inject *in = &r->j->in;
	char path[PATH_MAX] = "";
	/* non-blocking until placed (fd_place gives the fd its own flags): drained below */
	long fd = n >= 0 ? inject_syscall(in, SYS_inotify_init1, IN_NONBLOCK, 0, 0, 0, 0, 0) : -1, spent = 0;
	int ok = fd >= 0 && !unresolved, at = 0;
	for (; ok && at < n; at++) {
		long where = injector_str(r->j, path_of(&w[at], path)), wd;
		ok = where != 0;
		/* numbers come cyclically: one below the watch's own is given back and taken again */
		while (ok && (wd = inject_syscall(in, SYS_inotify_add_watch, fd, where, w[at].mask, 0, 0, 0)) != w[at].wd)
			ok = wd > 0 && wd < w[at].wd && (!at || wd > w[at - 1].wd) && ++spent < MAX_RENUMBER &&
			     inject_syscall(in, SYS_inotify_rm_watch, fd, wd, 0, 0, 0, 0) == 0;
	}
	/* a watch given back queued its IN_IGNORED event, which the program must not read */
	long got = 0;
	for (int rounds = 0; ok && spent && rounds < 1000 && got != -EAGAIN; rounds++)
		ok = (got = inject_syscall(in, SYS_read, fd, (long)r->j->scratch, (long)r->j->scratch_bytes, 0, 0, 0)) > 0 ||
		     got == -EAGAIN;
	ok = ok && (!spent || got == -EAGAIN);
	int rc = ok ? fd_place(r, fd, f) : -1;
	if (fd >= 0 && fd != f->fd)
		inject_syscall(in, SYS_close, fd, 0, 0, 0, 0, 0);
	if (rc && !ok && at > 0)
		snprintf(r->why, r->whylen, "fd %d: cannot watch %s again as inotify watch %d", f->fd, path, w[at - 1].wd);
	else if (rc)
		snprintf(r->why, r->whylen, "fd %d: cannot make the program's inotify instance again", f->fd);
	free(w);
	return rc;
}

const struct fd_kind fd_kind_inotify = { .type = IMG_FD_INOTIFY, .name = "inotify", .phase = FD_PHASE_OPEN,
					 .claims = claims, .record = record, .unread = unread, .check_reads_files = 1, .check = check, .reopen = reopen };

/* procfs.c -- readers of /proc/PID/{maps,fd,fdinfo,status,stat} (procfs.h; a process's memory:
 * procmem.c; its tasks: proctasks.c; file and machine identities: identity.c). */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include "image.h"
#include "procfs.h"

/* The supervisor reads a few /proc files of each process of the program at every stop: they stay
 * open (per pid, for the PROC_SLOTS processes asked last: a tree of processes keeps them all) and
 * are read whole with one pread each; sscanf/stdio cost more than the kernel's side.  An empty
 * read opens the file again once: a maps file opened before an exec shows the old memory map,
 * which is empty (and a process gone reads nothing, as when each read opened it by its number).
 * status, stat and statm are one record each, made whole at every read: a read shorter than
 * asked is all of it (maps comes a page of lines per read, until an empty one). */
#define PROC_SLOTS 16   /* a bigger tree opens its files again, as each stop did before */
enum { PF_MAPS, PF_STATUS, PF_STAT, PF_STATM, PF_N };

/* What is kept open of one process between stops: its /proc files, and proc_fds's state. */
static struct proc_slot {
	pid_t pid;
	uint64_t used;        /* when last asked: the least recent slot is taken for a new pid */
	int fd[PF_N];         /* read_proc's files, or -1 */
	int fd_dir, info_dir; /* proc_fds's directories, or -1 */
	struct fd_info *prev; /* proc_fds's last answer, nprev of them (room for cap) */
	int *prev_info;       /* the open fdinfo file of prev[i], or -1 */
	int nprev, cap;
	int kept;             /* of prev_info, how many are open */
} slots[PROC_SLOTS];
static uint64_t slot_clock;
/* fdinfo files kept open over every slot: the supervisor's own fds are limited (RLIMIT_NOFILE,
 * often 1024) and it needs them for the pool, the trackers and the pipes; past this, a fd's
 * fdinfo is opened again at each call */
#define KEPT_INFO_MAX 128
static int kept_infos;

static void fd_dirs_clear(struct proc_slot *e)
{
	if (e->fd_dir >= 0)
		close(e->fd_dir);
	if (e->info_dir >= 0)
		close(e->info_dir);
	for (int i = 0; i < e->nprev; i++)
		if (e->prev_info[i] >= 0)
			close(e->prev_info[i]);
	kept_infos -= e->kept;
	e->fd_dir = e->info_dir = -1;
	e->nprev = e->kept = 0;
}

/* The slot of pid: found, or the least recently asked one emptied for it. */
static struct proc_slot *slot_of(pid_t pid)
{
	struct proc_slot *e = NULL, *old = &slots[0];
	for (int i = 0; i < PROC_SLOTS && !e; i++) {
		if (slots[i].pid == pid)
			e = &slots[i];
		else if (slots[i].used < old->used)
			old = &slots[i];
	}
	if (!e) {
		e = old;
		if (e->pid) {
			for (int i = 0; i < PF_N; i++)
				if (e->fd[i] >= 0)
					close(e->fd[i]);
			fd_dirs_clear(e);
		}
		for (int i = 0; i < PF_N; i++)
			e->fd[i] = -1;
		e->fd_dir = e->info_dir = -1;
		e->pid = pid;
	}
	e->used = ++slot_clock;
	return e;
}

static int read_proc(pid_t pid, int which, char **buf, size_t *cap, size_t *len)
{
	static const char *const name[PF_N] = { "maps", "status", "stat", "statm" };
	int *pf_fd = slot_of(pid)->fd;
	if (pf_fd[which] < 0) {
		char path[64];
		snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name[which]);
		if ((pf_fd[which] = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			return -errno;
	}
	*len = 0;
	int reopened = 0;
	for (;;) {
		if (*cap - *len < 4096) {
			size_t ncap = *cap ? 2 * *cap : 65536;
			char *nb = realloc(*buf, ncap);
			if (!nb)
				return -ENOMEM;
			*buf = nb;
			*cap = ncap;
		}
		size_t room = *cap - *len - 1;
		ssize_t got = pread(pf_fd[which], *buf + *len, room, (off_t)*len);
		if (got > 0 && which != PF_MAPS && (size_t)got < room) {
			*len += (size_t)got;
			break;
		}
		if (got <= 0 && *len == 0 && !reopened) {
			/* the process this file was opened for is gone (its id may be another's now), or
			 * it executed a program: the maps file of its old memory map reads empty */
			reopened = 1;
			close(pf_fd[which]);
			char path[64];
			snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name[which]);
			if ((pf_fd[which] = open(path, O_RDONLY | O_CLOEXEC)) < 0)
				return -errno;
			continue;
		}
		if (got < 0)
			return -errno;
		if (got == 0)
			break;
		*len += (size_t)got;
	}
	(*buf)[*len] = 0;
	return 0;
}

static uint64_t hex(const char **p)
{
	uint64_t v = 0;
	for (;; (*p)++) {
		char c = **p;
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (d < 0)
			return v;
		v = v << 4 | (uint64_t)d;
	}
}

static void skip_field(const char **p)
{
	while (**p && **p != ' ' && **p != '\n')
		(*p)++;
	while (**p == ' ')
		(*p)++;
}

int proc_maps(pid_t pid, struct vma *out, int max, int *n)
{
	static char *buf;
	static size_t cap;
	size_t len;
	int rc = read_proc(pid, PF_MAPS, &buf, &cap, &len);
	if (rc)
		return rc;
	*n = 0;
	/* start-end perms offset dev inode [path] */
	for (const char *p = buf; *p;) {
		const char *eol = strchr(p, '\n');
		if (!eol)
			eol = p + strlen(p);
		if (*n == max)
			return -ENOSPC;
		struct vma v = { .region = -1 };
		v.start = hex(&p);
		if (*p++ != '-')
			return -EPROTO;
		v.end = hex(&p);
		while (*p == ' ')
			p++;
		memcpy(v.perms, p, 4);
		p += 4;
		while (*p == ' ')
			p++;
		v.offset = hex(&p);
		while (*p == ' ')
			p++;
		skip_field(&p); /* dev */
		while (*p >= '0' && *p <= '9')
			v.ino = v.ino * 10 + (uint64_t)(*p++ - '0');
		while (*p == ' ')
			p++;
		size_t l = (size_t)(eol - p);
		if (l >= sizeof v.path)
			l = sizeof v.path - 1;
		memcpy(v.path, p, l);
		out[(*n)++] = v;
		p = *eol ? eol + 1 : eol;
	}
	return *n ? 0 : -ESRCH; /* a process always has a mapping, until it is gone */
}

int vma_is_special(const struct vma *v)
{
	return !strcmp(v->path, "[vvar]") || !strcmp(v->path, "[vdso]") || !strcmp(v->path, "[vsyscall]") ||
	       !strcmp(v->path, "[vvar_vclock]");
}

int vma_is_saved(const struct vma *v)
{
	if (v->perms[3] != 'p' || v->perms[0] != 'r' || vma_is_special(v))
		return 0;
	return v->perms[1] == 'w' || v->perms[2] != 'x';
}

int vma_is_stack(const struct vma *v) { return !strcmp(v->path, "[stack]"); }
int vma_is_heap(const struct vma *v) { return !strcmp(v->path, "[heap]"); }

/* /proc/PID/fd and fdinfo stay open as directories: every lookup is relative to them.  A pipe,
 * socket or other kernel object that a fd still names at the next call (its link text holds a
 * unique inode number) keeps its earlier answer: it is not persisted, only warned about.
 *
 * A fd read at every stop costs system calls on /proc, each a path walk with its permission
 * check: its link, its type, its fdinfo (position, flags).  So a fd's fdinfo file stays open from
 * one call to the next (the file follows the fd number: a read shows whatever that number names
 * then) and is read again with one pread; and a fd whose link text is unchanged and that is no
 * regular file or FIFO (a device, a directory, an anonymous object) keeps its type without a new
 * stat -- a regular file's size, a FIFO's inode are read every time. */
static int info_read(int h, char *info, size_t cap)
{
	ssize_t got = h >= 0 ? pread(h, info, cap - 1, 0) : -1;
	if (got > 0)
		info[got] = 0;
	return got > 0;
}

/* The slot of pid with its fd directories open; NULL with errno. */
static struct proc_slot *fd_slot(pid_t pid)
{
	struct proc_slot *e = slot_of(pid);
	if (e->fd_dir < 0) {
		char p[64];
		snprintf(p, sizeof p, "/proc/%d/fd", (int)pid);
		e->fd_dir = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		snprintf(p, sizeof p, "/proc/%d/fdinfo", (int)pid);
		e->info_dir = e->fd_dir >= 0 ? open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
		if (e->info_dir < 0) {
			int err = errno;
			fd_dirs_clear(e);
			errno = err;
			return NULL;
		}
	}
	return e;
}

int proc_fds(pid_t pid, struct fd_info *out, int max, int *n)
{
	static int *cur_info; /* the open fdinfo file of out[i], or -1 */
	static int cur_cap;
	static char dents[16384];
	if (cur_cap < max) {
		int *c = realloc(cur_info, (size_t)max * sizeof *c);
		if (!c)
			return -ENOMEM;
		cur_info = c, cur_cap = max;
	}
	/* The listing starts afresh, read with the directory's own fd: no stream to set up.  The
	 * directory of a process gone reads ENOENT: its number may be another's now, so the
	 * directories are opened again, once. */
	struct proc_slot *e = fd_slot(pid);
	long got = !e ? -1 : lseek(e->fd_dir, 0, SEEK_SET) == 0 ? syscall(SYS_getdents64, e->fd_dir, dents, sizeof dents) : -1;
	if (e && got < 0 && errno == ENOENT) {
		fd_dirs_clear(e);
		e = fd_slot(pid);
		got = !e ? -1 : lseek(e->fd_dir, 0, SEEK_SET) == 0 ? syscall(SYS_getdents64, e->fd_dir, dents, sizeof dents) : -1;
	}
	if (got < 0)
		return -errno;
	int fd_dir = e->fd_dir, info_dir = e->info_dir, nprev = e->nprev;
	struct fd_info *prev = e->prev;
	int *prev_info = e->prev_info;
	long at = 0;
	*n = 0;
	int rc = 0;
	for (;;) {
		if (at >= got) {
			if ((got = syscall(SYS_getdents64, fd_dir, dents, sizeof dents)) <= 0) {
				if (got < 0)
					rc = -errno;
				break;
			}
			at = 0;
		}
		struct linux_dirent64 {
			uint64_t d_ino;
			int64_t d_off;
			unsigned short d_reclen;
			unsigned char d_type;
			char d_name[];
		} *d = (void *)(dents + at);
		at += d->d_reclen;
		if (d->d_name[0] < '0' || d->d_name[0] > '9')
			continue;
		if (*n == max) {
			rc = -ENOSPC;
			break;
		}
		struct fd_info fi = { .fd = atoi(d->d_name) };
		ssize_t l = readlinkat(fd_dir, d->d_name, fi.path, sizeof fi.path - 1);
		if (l < 0)
			continue; /* closed meanwhile: the process is stopped, so it was ours */
		fi.path[l] = 0;
		int was = -1; /* this fd number at the last call */
		for (int i = 0; i < nprev && was < 0; i++)
			if (prev[i].fd == fi.fd)
				was = i;
		int same_link = was >= 0 && !strcmp(prev[was].path, fi.path);
		int h = was >= 0 ? prev_info[was] : -1;
		if (was >= 0)
			prev_info[was] = -1; /* taken over (or closed below) */
		if (same_link && prev[was].type == IMG_FD_OTHER && strchr(fi.path, '[')) {
			cur_info[*n] = h;
			out[(*n)++] = prev[was];
			continue;
		}
		struct stat st;
		if (same_link && prev[was].type != IMG_FD_FILE && prev[was].type != IMG_FD_FIFO)
			fi.type = prev[was].type;
		else if (fstatat(fd_dir, d->d_name, &st, 0) != 0)
			fi.type = IMG_FD_OTHER;
		else if (S_ISREG(st.st_mode))
			fi.type = IMG_FD_FILE, fi.size = (uint64_t)st.st_size;
		else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
			fi.type = IMG_FD_DEVICE;
		else if (S_ISDIR(st.st_mode))
			fi.type = IMG_FD_DIR;
		else if (S_ISFIFO(st.st_mode) && fi.path[0] == '/')
			fi.type = IMG_FD_FIFO; /* a named pipe (an anonymous one: OTHER) */
		else
			fi.type = IMG_FD_OTHER;
		if (fi.type == IMG_FD_FILE || fi.type == IMG_FD_FIFO)
			fi.ino = (uint64_t)st.st_ino; /* what names a memory object or a named pipe in the tree's cut */
		if (fi.type != IMG_FD_OTHER && fi.path[0] != '/')
			fi.type = IMG_FD_OTHER; /* memfd:, anon_inode: */
		char info[512];
		if (!info_read(h, info, sizeof info)) {
			if (h >= 0)
				close(h);
			h = openat(info_dir, d->d_name, O_RDONLY | O_CLOEXEC);
			if (!info_read(h, info, sizeof info))
				info[0] = 0;
		}
		char *s = strstr(info, "pos:");
		if (s)
			fi.pos = strtoull(s + 4, NULL, 10);
		s = strstr(info, "flags:");
		if (s)
			fi.flags = (unsigned)strtoul(s + 6, NULL, 8);
		cur_info[*n] = h;
		out[(*n)++] = fi;
	}
	for (int i = 0; i < nprev; i++) /* fd numbers closed since */
		if (prev_info[i] >= 0)
			close(prev_info[i]);
	int room = KEPT_INFO_MAX - (kept_infos - e->kept), k = 0;
	for (int i = 0; i < *n; i++)
		if (cur_info[i] >= 0 && k++ >= room) {
			close(cur_info[i]);
			cur_info[i] = -1;
			k--;
		}
	kept_infos += k - e->kept;
	e->kept = k;
	e->nprev = 0;
	if (e->cap < *n) {
		struct fd_info *p = realloc(e->prev, (size_t)*n * sizeof *p);
		int *pi = p ? realloc(e->prev_info, (size_t)*n * sizeof *pi) : NULL;
		if (p)
			e->prev = p;
		if (!pi) { /* nothing kept: the next call reads every fd afresh */
			for (int i = 0; i < *n; i++)
				if (cur_info[i] >= 0)
					close(cur_info[i]);
			kept_infos -= e->kept;
			e->kept = 0;
			return rc ? rc : -ENOMEM;
		}
		e->prev_info = pi, e->cap = *n;
	}
	memcpy(e->prev, out, (size_t)*n * sizeof *out);
	memcpy(e->prev_info, cur_info, (size_t)*n * sizeof *cur_info);
	e->nprev = *n;
	return rc;
}

int proc_status(pid_t pid, struct proc_status *out)
{
	static char *buf;
	static size_t cap;
	size_t len;
	memset(out, 0, sizeof *out);
	int rc = read_proc(pid, PF_STATUS, &buf, &cap, &len);
	if (rc)
		return rc;
	char *s = strstr(buf, "\nUmask:");
	if (s)
		out->umask = (unsigned)strtoul(s + 7, NULL, 8);
	s = strstr(buf, "\nSigBlk:");
	if (s)
		out->sigblk = strtoull(s + 8, NULL, 16);
	if ((rc = read_proc(pid, PF_STAT, &buf, &cap, &len)) != 0)
		return rc;
	/* fields after the command name (which may hold spaces) start at the last ')' */
	char *f = strrchr(buf, ')'), *name = strchr(buf, '(');
	if (!f || !name || name > f)
		return -EPROTO;
	size_t nl = (size_t)(f - name - 1) < sizeof out->comm - 1 ? (size_t)(f - name - 1) : sizeof out->comm - 1;
	memcpy(out->comm, name + 1, nl);
	f += 2; /* field 3 */
	uint64_t v[52] = { 0 };
	for (int field = 3; field <= 51 && f; field++) {
		v[field] = strtoull(f, NULL, 10);
		f = strchr(f, ' ');
		if (f)
			f++;
	}
	out->start_code = v[26], out->end_code = v[27], out->start_stack = v[28];
	out->start_data = v[45], out->end_data = v[46], out->start_brk = v[47];
	out->arg_start = v[48], out->arg_end = v[49], out->env_start = v[50], out->env_end = v[51];
	return out->start_brk || out->start_stack ? 0 : -EPROTO;
}

static const char *stat_fields(pid_t pid)
{
	static char *buf;
	static size_t cap;
	size_t len;
	if (read_proc(pid, PF_STAT, &buf, &cap, &len) != 0)
		return NULL;
	const char *e = strrchr(buf, ')');
	return e ? e + 1 : NULL;
}

pid_t proc_parent(pid_t pid)
{
	const char *f = stat_fields(pid);
	int ppid = 0;
	char state;
	return f && sscanf(f, " %c %d", &state, &ppid) == 2 ? ppid : 0;
}

pid_t proc_tty_pgrp(pid_t pid)
{
	const char *f = stat_fields(pid);
	int ppid, pgrp, session, tty_nr, tpgid;
	char state;
	int n = f ? sscanf(f, " %c %d %d %d %d %d", &state, &ppid, &pgrp, &session, &tty_nr, &tpgid) : 0;
	return n == 6 && tty_nr && tpgid > 0 ? tpgid : 0;
}

int proc_fd_copy(pid_t pid, int fd)
{
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0)
		return -errno;
	int mine = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	int e = errno;
	close(pidfd);
	return mine >= 0 ? mine : -e;
}

int proc_tty_nr(pid_t pid)
{
	const char *f = stat_fields(pid);
	int ppid, pgrp, session, tty_nr;
	char state;
	return f && sscanf(f, " %c %d %d %d %d", &state, &ppid, &pgrp, &session, &tty_nr) == 5 ? tty_nr : -1;
}

int proc_gone(pid_t pid)
{
	static char *buf;
	static size_t cap;
	size_t len;
	return read_proc(pid, PF_STATM, &buf, &cap, &len) != 0 || strtoul(buf, NULL, 10) == 0;
}

int proc_read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, cap - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return (int)n;
}

int proc_stat_counts(pid_t pid, struct proc_counts *c)
{
	char path[64], line[1024];
	memset(c, 0, sizeof *c);
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (proc_read_small(path, line, sizeof line) < 0)
		return -1;
	const char *after = strrchr(line, ')'); /* the command's name may hold anything */
	unsigned long long flt, stime;
	long long rss;
	/* fields 10 (minflt), 15 (stime) and 24 (rss), counted from 1 at the pid */
	if (!after || sscanf(after + 1, " %*c %*d %*d %*d %*d %*d %*u %llu %*u %*u %*u %*u %llu %*d %*d %*d %*d %*d %*d "
					"%*u %*u %lld", &flt, &stime, &rss) != 3)
		return -1;
	c->minflt = flt, c->stime_ticks = stime, c->resident_pages = rss > 0 ? (uint64_t)rss : 0;
	return 0;
}

uint64_t proc_resident_bytes(pid_t pid)
{
	static char *buf;
	static size_t cap;
	size_t len;
	unsigned long size, resident;
	if (read_proc(pid, PF_STATM, &buf, &cap, &len) != 0 || sscanf(buf, "%lu %lu", &size, &resident) != 2)
		return 0;
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

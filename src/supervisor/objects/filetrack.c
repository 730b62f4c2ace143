/* filetrack.c -- the filter, and what each system call it sends us changes (filetrack.h). */
#include "filetrack.h"
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <unistd.h>
#include "disable.h"
#include "filechange.h"
#include "filefilter.h"
#include "inject.h"
#include "fsclass.h"
#include "poolfile.h"
#include "procfs.h"
#include "undolog.h"

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE 2
#endif
#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452
#endif

int filetrack_wanted(const struct tree *t)
{
	const char *off = getenv("PROSPER_TEST_NO_FILE_FILTER");
	return t->run.ns.on && !(off && *off == '1');
}

/* May our fd n be written unseen (filefilter.h)? */
static int own_fd_passable(int n)
{
	struct stat st;
	int fl = fcntl(n, F_GETFL);
	if (fl < 0 || fstat(n, &st) != 0)
		return 0; /* not open: what the program opens there is anything */
	if (S_ISBLK(st.st_mode))
		return 0;
	return !S_ISREG(st.st_mode) || (fl & O_APPEND);
}

/* In checkpoint image im, is fd n one the resume makes again as given (our own, passable), or
 * one the program put there that is no file? */
static int image_fd_passable(const struct img *im, int n)
{
	for (uint32_t i = 0; im->h && i < im->h->nfds; i++) {
		const struct img_fd *f = &im->fds[i];
		if (f->fd != n)
			continue;
		if (!(f->flags & IMG_FD_REDIRECTED))
			return own_fd_passable(n); /* the resume gives it its own (fd_file.c) */
		const char *p = f->path != IMG_NONE ? img_s(im, f->path) : "";
		return f->type == IMG_FD_PIPE || f->type == IMG_FD_SOCKET || f->type == IMG_FD_FIFO ||
		       (f->type == IMG_FD_DEVICE && (!strcmp(p, "/dev/null") || !strncmp(p, "/dev/pts/", 9) ||
						     !strncmp(p, "/dev/tty", 8)));
	}
	return 0; /* closed at the cut */
}

int filetrack_filter(const struct tree *t, const struct img *im)
{
	if (!t->files.on)
		return FILTER_NONE;
	int f = FILTER_ON;
	if (own_fd_passable(1) && (!im || image_fd_passable(im, 1)))
		f |= FILTER_PASS_FD1;
	if (own_fd_passable(2) && (!im || image_fd_passable(im, 2)))
		f |= FILTER_PASS_FD2;
	return f;
}

/* ------------------------------------------------------------------ the journal's files */

static int is_mapped(const struct file_track *ft, const char *path)
{
	for (int i = 0; i < ft->nmapped; i++)
		if (!strcmp(ft->mapped[i], path))
			return 1;
	return 0;
}

void filetrack_mapped(struct tree *t, const char *path)
{
	struct file_track *ft = &t->files;
	if (!strncmp(path, "/dev/shm/", 9) || !strncmp(path, "/memfd:", 7) || strstr(path, " (deleted)") ||
	    !strcmp(path, t->pool_path) || path[0] != '/')
		return; /* shared memory is kept whole at the cuts (sharedmem.h); the pool is ours */
	if (is_mapped(ft, path))
		return;
	if (ft->nmapped == (int)(sizeof ft->mapped / sizeof ft->mapped[0]) || strlen(path) >= sizeof ft->mapped[0]) {
		fchange_cannot(t, path, "mapped shared and writable, one file more than are kept at each checkpoint");
		return;
	}
	snprintf(ft->mapped[ft->nmapped++], sizeof ft->mapped[0], "%s", path);
	fchange_snapshot(t, path); /* its stores from now on are not seen: as it is before them */
}

void filetrack_mapped_image(struct tree *t, const struct img *im)
{
	for (uint32_t i = 0; im->h && i < im->h->nvmas; i++) {
		const struct img_vma *v = &im->vmas[i];
		if (v->perms[1] == 'w' && v->perms[3] == 's' && v->path != IMG_NONE)
			filetrack_mapped(t, img_s(im, v->path));
	}
}

int filetrack_region(prosper_pool *pool, struct files_record *r)
{
	int rc = poolfile_record_get(pool, FILES_REGION_NAME, r, sizeof *r);
	return rc == 0 && r->tracked > 1 ? -1 : rc;
}

static int switch_to(struct tree *t, uint64_t seq, int fresh)
{
	struct file_track *ft = &t->files;
	int fd = undolog_open(ft->dir, seq, fresh);
	if (fd < 0)
		return fd;
	if (ft->fd >= 0)
		close(ft->fd);
	ft->fd = fd, ft->seq = seq;
	ft->saved_bytes = 0, ft->ntouched = 0;
	fchange_new_interval(t);
	ft->unflushed = 0, ft->name_flushed = 0;
	return 0;
}

/* Can a checkpoint of this run outlive a power cut (a pool on a disk or on persistent memory)?
 * Then so must the records that undo what the program changed on a disk since (docs/durability.md). */
static int outlives_power_cut(const struct tree *t)
{
	return t->tiers.kind == TIER_DISK || t->tiers.kind == TIER_PMEM || t->tiers.kind == TIER_TWO;
}

/* The journal file being appended made durable (with its name the first time); 0, or -1 and the
 * journal failed. */
static int flush_journal(struct tree *t)
{
	struct file_track *ft = &t->files;
	double t0 = stopclock_now();
	int rc = undolog_sync(ft->dir, ft->seq, ft->fd, !ft->name_flushed);
	ft->flush_seconds += stopclock_now() - t0;
	ft->unflushed = 0;
	if (rc) {
		ft->failed = 1;
		fprintf(stderr, "%s: cannot flush the file-undo journal in %s: %s\n", sup_command(), ft->dir, strerror(-rc));
		return -1;
	}
	ft->name_flushed = 1;
	ft->flushes++;
	return 0;
}

/* The durable thread, before a copy of cut tag commits (tiers.h). */
static int before_copy(void *arg, uint64_t tag)
{
	struct tree *t = arg;
	struct file_track *ft = &t->files;
	/* from now on what was made after tag is what needs no flush; what was recorded before,
	 * under the older base, is flushed here (every file from tag on) */
	pthread_mutex_lock(&ft->mu);
	ft->flush_base = tag;
	pthread_mutex_unlock(&ft->mu);
	return undolog_sync_from(ft->dir, tag);
}

int filetrack_start(struct tree *t, const char *pool_path, uint64_t seq, int on, char *why, size_t whylen)
{
	struct file_track *ft = &t->files;
	ft->fd = -1, ft->on = on;
	ft->flush_base = UINT64_MAX; /* no checkpoint known durable yet: every record is flushed */
	pthread_mutex_init(&ft->mu, NULL);
	if (undolog_dir(pool_path, ft->dir, sizeof ft->dir) != 0) {
		snprintf(why, whylen, "the pool's path is too long for its file-undo journal");
		return -1;
	}
	if (!seq)
		undolog_remove_all(ft->dir); /* a new run: an older run's journal means nothing now */
	else
		undolog_drop(ft->dir, 0, seq); /* undone by this resume */
	if (seq)
		undolog_notes_restart(ft->dir, seq);
	int rc = on ? switch_to(t, seq, 1) : 0;
	if (rc) {
		snprintf(why, whylen, "cannot write the file-undo journal in %s: %s", ft->dir, strerror(-rc));
		return -1;
	}
	undolog_progress_clear(ft->dir); /* the records it undid are gone now */
	if (on && outlives_power_cut(t) && flush_journal(t) != 0) {
		/* the restarted journal and the cleared progress durable: after a power cut, a resume
		 * must not find the records this one undid and undo them again */
		snprintf(why, whylen, "cannot flush the file-undo journal in %s", ft->dir);
		return -1;
	}
	if (on && t->tiers.kind == TIER_TWO)
		t->tiers.before_copy = before_copy, t->tiers.before_copy_arg = t;
	const char *die = getenv("PROSPER_TEST_DIE_AT_CALL");
	ft->ndie_at = 0;
	for (char *end; die && *die && ft->ndie_at < sizeof ft->die_at / sizeof ft->die_at[0]; die = *end ? end + 1 : end)
		ft->die_at[ft->ndie_at++] = strtol(die, &end, 10);
	return 0;
}

int filetrack_before_durable(struct tree *t)
{
	struct file_track *ft = &t->files;
	if (!ft->on || (t->tiers.kind != TIER_DISK && t->tiers.kind != TIER_PMEM))
		return 0; /* two tiers: the durable thread flushes before its copy (before_copy) */
	return before_copy(t, ft->seq);
}

static int cut_locked(struct tree *t);

int filetrack_cut(struct tree *t)
{
	struct file_track *ft = &t->files;
	pthread_mutex_lock(&ft->mu);
	int rc = cut_locked(t);
	pthread_mutex_unlock(&ft->mu);
	/* a mapped file's copy is flushed before its stores can reach the disk: before the program
	 * runs again */
	if (!rc && ft->unflushed && !ft->failed && outlives_power_cut(t) && flush_journal(t) != 0)
		rc = -EIO;
	ft->unflushed = 0;
	return rc;
}

static int cut_locked(struct tree *t)
{
	struct file_track *ft = &t->files;
	struct files_record r = { .seq = ft->seq + 1, .tracked = (uint32_t)ft->on };
	int rc = poolfile_record_put(t->pool, FILES_REGION_NAME, &r, sizeof r);
	if (rc)
		return rc;
	if (ft->on && switch_to(t, r.seq, 1) != 0) {
		ft->failed = 1;
		return -EIO;
	}
	if (!ft->on)
		ft->seq = r.seq;
	/* files mapped shared and writable: their stores are not seen, so each cut keeps them whole
	 * (a resume puts back the newest copy of the cut it resumes from: the first record of its
	 * journal file); one another process resized is refused (UNDO_WATCH, b = 1) */
	for (int i = 0; ft->on && i < ft->nmapped; i++) {
		struct stat st;
		if (stat(ft->mapped[i], &st) != 0 || !S_ISREG(st.st_mode))
			continue; /* gone (SQLite removes its -shm at the end): nothing to keep */
		struct undo_rec h = { .kind = UNDO_WATCH, .dev = st.st_dev, .ino = st.st_ino, .a = (uint64_t)st.st_size, .b = 1,
				      .mode = st.st_mode };
		if (undolog_append(ft->fd, &h, ft->mapped[i], NULL, 0) != 0)
			ft->failed = 1;
		fchange_snapshot(t, ft->mapped[i]);
	}
	/* the files the program holds open, as they are at the cut: a resume compares */
	for (int p = 0; ft->on && p < t->nprocs; p++) {
		struct sup *m = t->procs[p];
		for (int k = 0; !m->exited && k < m->cut.nfds_read && m->cut.fds_gen == t->cut.gen; k++) {
			struct fchange_target f;
			struct stat ours;
			int fd = m->cut.fds[k].fd;
			if (fchange_fd_target(m->pid, fd, &f) != 0)
				continue;
			if (fd <= 2 && fstat(fd, &ours) == 0 && ours.st_dev == f.st.st_dev && ours.st_ino == f.st.st_ino)
				continue; /* the run's own stdio, ours too: a resume is given its own (fd_file.c) */
			if (is_mapped(ft, f.path))
				continue; /* its stores move its time: watched by its size below */
			char fsname[64];
			if (fsclass_of(f.open_path, fsname, sizeof fsname) == FS_KERNEL)
				continue; /* a value of the kernel's (/proc/N/comm), not a file's bytes */
			struct undo_rec h = { .kind = UNDO_WATCH, .dev = f.st.st_dev, .ino = f.st.st_ino, .a = (uint64_t)f.st.st_size,
					      .mode = f.st.st_mode };
			h.mtime_ns = (int64_t)f.st.st_mtim.tv_sec * 1000000000 + f.st.st_mtim.tv_nsec;
			h.ctime_ns = (int64_t)f.st.st_ctim.tv_sec * 1000000000 + f.st.st_ctim.tv_nsec;
			if (undolog_append(ft->fd, &h, f.path, NULL, 0) != 0)
				ft->failed = 1;
		}
	}
	return ft->failed ? -EIO : 0;
}

void filetrack_committed(struct tree *t)
{
	struct file_track *ft = &t->files;
	ft->committed_seq = ft->seq;
	uint64_t keep = ft->committed_seq;
	if (t->tiers.kind == TIER_TWO) {
		t->tiers.tag = ft->committed_seq;
		if (t->tiers.thread_started)
			pthread_mutex_lock(&t->tiers.mu);
		if (t->tiers.durable_tag < keep)
			keep = t->tiers.durable_tag;
		if (t->tiers.thread_started)
			pthread_mutex_unlock(&t->tiers.mu);
	}
	if (keep)
		undolog_drop(ft->dir, keep, UINT64_MAX);
}

/* ------------------------------------------------------------------ one system call */

/* The bytes an iovec array of tid's describes (writev, pwritev). */
static uint64_t iov_bytes(pid_t tid, uint64_t addr, uint64_t cnt)
{
	struct iovec v[64];
	uint64_t total = 0;
	for (uint64_t at = 0; at < cnt && at < 1024;) {
		size_t n = cnt - at < 64 ? (size_t)(cnt - at) : 64;
		if (proc_mem_read(tid, addr + at * sizeof *v, v, n * sizeof *v) != 0)
			return UINT64_MAX; /* unreadable: the call fails with EFAULT, or we keep what may be */
		for (size_t k = 0; k < n; k++)
			total += v[k].iov_len;
		at += n;
	}
	return total;
}

/* The regular file fd of tid is (0), or -1: nothing of the file system's (a pipe, a socket, a
 * terminal), or a block device, whose changed blocks are recorded as a change that cannot be undone. */
static int fd_file(struct tree *t, pid_t tid, int fd, struct fchange_target *f)
{
	if (fchange_fd_target(tid, fd, f) == 0)
		return 0;
	if (S_ISBLK(f->st.st_mode))
		fchange_cannot(t, f->path, "a block device written");
	return -1;
}

/* Data written to fd at off (UINT64_MAX: at its position, or its end when O_APPEND), len bytes. */
static void data_write(struct tree *t, pid_t tid, int fd, uint64_t off, uint64_t len)
{
	struct fchange_target f;
	if (fd_file(t, tid, fd, &f) != 0)
		return;
	uint64_t pos;
	int flags;
	if (fchange_fd_pos(tid, fd, &pos, &flags) != 0) {
		fchange_cannot(t, f.path, "its position cannot be read");
		return;
	}
	if (flags & O_APPEND)
		off = (uint64_t)f.st.st_size; /* even pwrite appends (Linux) */
	else if (off == UINT64_MAX)
		off = pos;
	fchange_bytes(t, &f, off, len);
}

static uint64_t user_u64(pid_t tid, uint64_t addr)
{
	uint64_t v;
	return addr && proc_mem_read(tid, addr, &v, sizeof v) == 0 ? v : UINT64_MAX;
}

/* A path that may be made: recorded as made if nothing is there now. */
static void may_create(struct tree *t, pid_t tid, int dirfd, uint64_t addr, int dir, const struct stat *of)
{
	struct fchange_target f;
	if (fchange_path_target(tid, dirfd, addr, 0, &f) == 0 && !f.st.st_ino)
		fchange_created(t, &f, dir, of);
}

static void may_remove(struct tree *t, pid_t tid, int dirfd, uint64_t addr)
{
	struct fchange_target f;
	if (fchange_path_target(tid, dirfd, addr, 0, &f) == 0)
		fchange_removed(t, &f);
}

static void attrs_of_path(struct tree *t, pid_t tid, int dirfd, uint64_t addr, int follow)
{
	struct fchange_target f;
	if (fchange_path_target(tid, dirfd, addr, follow, &f) == 0 && f.st.st_ino)
		fchange_attrs(t, &f);
}

static void attrs_of_fd(struct tree *t, pid_t tid, int fd)
{
	struct fchange_target f;
	if (fchange_fd_target(tid, fd, &f) == 0)
		fchange_attrs(t, &f);
}

static void opened(struct tree *t, pid_t tid, int dirfd, uint64_t addr, uint64_t flags)
{
	if ((flags & O_TMPFILE) == O_TMPFILE)
		return; /* no name: nothing to put back */
	struct fchange_target f;
	if (fchange_path_target(tid, dirfd, addr, 1, &f) != 0)
		return;
	if (!f.st.st_ino && (flags & O_CREAT))
		fchange_created(t, &f, 0, NULL);
	else if (f.st.st_ino && S_ISREG(f.st.st_mode) && (flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY)
		fchange_bytes(t, &f, 0, (uint64_t)f.st.st_size);
}

static void renamed(struct tree *t, pid_t tid, int olddir, uint64_t old, int newdir, uint64_t new, uint64_t flags)
{
	struct fchange_target from, to;
	if (fchange_path_target(tid, olddir, old, 0, &from) != 0 || !from.st.st_ino ||
	    fchange_path_target(tid, newdir, new, 0, &to) != 0)
		return; /* nothing to rename: the call fails */
	if (!(flags & RENAME_EXCHANGE))
		fchange_removed(t, &to); /* what it replaces */
	fchange_renamed(t, &from, to.path, !!(flags & RENAME_EXCHANGE));
}

static void mapped(struct tree *t, pid_t tid, int fd)
{
	struct fchange_target f;
	if (fd >= 0 && fd_file(t, tid, fd, &f) == 0)
		filetrack_mapped(t, f.path);
}

/* ------------------------------------------------------------------ fd 1 and 2 (filefilter.h) */

/* Process m's writes to fd 1 and 2 sent to us from now on: the tightening filter injected into
 * it (all its threads), while thread tid is at the seccomp stop of the call whose registers are
 * r; the call is then made again (it meets the filter again, and is let go).  0, or -1. */
static int tighten(struct sup *m, pid_t tid, struct user_regs_struct *r)
{
	struct sock_filter prog[FILEFILTER_TIGHTEN_LEN];
	int n = filefilter_tighten_prog(prog);
	struct injector j = { 0 };
	if (n <= 0 || !m->gate || injector_open(&j, tid, m->gate, 4096) != 0)
		return -1;
	struct sock_fprog fp = { .len = (unsigned short)n, .filter = (struct sock_filter *)(uintptr_t)(j.scratch + 64) };
	long rc = -1;
	if (inject_write(&j.in, j.scratch, &fp, sizeof fp) == 0 &&
	    inject_write(&j.in, j.scratch + 64, prog, (size_t)n * sizeof prog[0]) == 0)
		rc = inject_syscall(&j.in, __NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, (long)j.scratch, 0, 0, 0);
	injector_close(&j);
	/* at the stop's registers again: back over the syscall instruction, to make the call anew */
	struct user_regs_struct again = *r;
	again.rip -= 2;
	again.rax = again.orig_rax;
	if (ptrace(PTRACE_SETREGS, tid, 0, &again) != 0)
		return -1;
	return rc == 0 ? 0 : -1;
}

/* A call that may make fd 1 or 2 of m something else: if it may become a file of the file system
 * (or be freed, for anything to take), m is tightened. */
static void stdio_call(struct tree *t, struct sup *m, pid_t tid, struct user_regs_struct *r)
{
	long nr = (long)r->orig_rax;
	int a0 = (int)r->rdi, a1 = (int)r->rsi;
	int needed;
	if (nr == __NR_dup2 || nr == __NR_dup3) {
		char p[64];
		struct stat st;
		snprintf(p, sizeof p, "/proc/%d/fd/%d", (int)tid, a0);
		if (stat(p, &st) != 0 || a0 == a1)
			return; /* the call fails, or changes nothing */
		needed = S_ISREG(st.st_mode) || S_ISBLK(st.st_mode) || (nr == __NR_dup3 && (r->rdx & O_CLOEXEC));
	} else if (nr == __NR_fcntl && a1 == F_SETFL) {
		char p[64];
		struct stat st;
		snprintf(p, sizeof p, "/proc/%d/fd/%d", (int)tid, a0);
		needed = stat(p, &st) == 0 && (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)); /* O_APPEND may go */
	} else if (nr == __NR_fcntl) {
		needed = r->rdx & FD_CLOEXEC; /* F_SETFD: freed at the next exec */
	} else if (nr == __NR_close_range) {
		needed = (unsigned)a0 <= 2 && (unsigned)a1 >= 1;
	} else {
		needed = 1; /* close(1) or close(2) */
	}
	if (!needed || m->stdio_tight)
		return;
	if (tighten(m, tid, r) == 0) {
		m->stdio_tight = 1;
		t->files.tightened++;
		return;
	}
	/* no gate (a static program) or the filter refused: what it writes there is not seen */
	fchange_cannot(t, "", "output redirected by a process whose writes to it cannot be followed");
}

static void dispatch(struct tree *t, pid_t tid, const struct user_regs_struct *r)
{
	int a0 = (int)r->rdi, a2 = (int)r->rdx;
	uint64_t a1 = r->rsi, a2u = r->rdx, a3 = r->r10, a4 = r->r8;
	switch ((long)r->orig_rax) {
	case __NR_write: data_write(t, tid, a0, UINT64_MAX, a2u); break;
	case __NR_writev: data_write(t, tid, a0, UINT64_MAX, iov_bytes(tid, a1, a2u)); break;
	case __NR_pwrite64: data_write(t, tid, a0, a3, a2u); break;
	case __NR_pwritev: data_write(t, tid, a0, a3, iov_bytes(tid, a1, a2u)); break;
	case __NR_pwritev2: data_write(t, tid, a0, (int64_t)a3 == -1 ? UINT64_MAX : a3, iov_bytes(tid, a1, a2u)); break;
	case __NR_sendfile: data_write(t, tid, a0, UINT64_MAX, a3); break;
	case __NR_splice:
	case __NR_copy_file_range: data_write(t, tid, a2, a3 ? user_u64(tid, a3) : UINT64_MAX, a4); break;
	case __NR_ftruncate:
	case __NR_fallocate: {
		struct fchange_target f;
		if (fd_file(t, tid, a0, &f) != 0)
			break;
		uint64_t from = (long)r->orig_rax == __NR_ftruncate ? a1 : (a1 & ~(uint64_t)1) ? a2u : UINT64_MAX;
		fchange_bytes(t, &f, from, UINT64_MAX); /* fallocate mode 0/KEEP_SIZE: only its size */
		break;
	}
	case __NR_truncate: {
		struct fchange_target f;
		if (fchange_path_target(tid, AT_FDCWD, r->rdi, 1, &f) == 0 && S_ISREG(f.st.st_mode))
			fchange_bytes(t, &f, a1, UINT64_MAX);
		break;
	}
	case __NR_open: opened(t, tid, AT_FDCWD, r->rdi, a1); break;
	case __NR_creat: opened(t, tid, AT_FDCWD, r->rdi, O_CREAT | O_WRONLY | O_TRUNC); break;
	case __NR_openat: opened(t, tid, a0, a1, a2u); break;
	case __NR_openat2: opened(t, tid, a0, a1, user_u64(tid, a2u)); break;
	case __NR_mkdir: may_create(t, tid, AT_FDCWD, r->rdi, 1, NULL); break;
	case __NR_mkdirat: may_create(t, tid, a0, a1, 1, NULL); break;
	case __NR_mknod: may_create(t, tid, AT_FDCWD, r->rdi, 0, NULL); break;
	case __NR_mknodat: may_create(t, tid, a0, a1, 0, NULL); break;
	case __NR_symlink: may_create(t, tid, AT_FDCWD, a1, 0, NULL); break;
	case __NR_symlinkat: may_create(t, tid, (int)a1, a2u, 0, NULL); break;
	case __NR_link:
	case __NR_linkat: {
		int linkat = (long)r->orig_rax == __NR_linkat;
		struct fchange_target old;
		if (fchange_path_target(tid, linkat ? a0 : AT_FDCWD, linkat ? a1 : r->rdi, 0, &old) == 0 && old.st.st_ino) {
			fchange_attrs(t, &old); /* its link count and change time */
			may_create(t, tid, linkat ? a2 : AT_FDCWD, linkat ? a3 : a1, 0, &old.st);
		}
		break;
	}
	case __NR_unlink:
	case __NR_rmdir: may_remove(t, tid, AT_FDCWD, r->rdi); break;
	case __NR_unlinkat: may_remove(t, tid, a0, a1); break;
	case __NR_rename: renamed(t, tid, AT_FDCWD, r->rdi, AT_FDCWD, a1, 0); break;
	case __NR_renameat: renamed(t, tid, a0, a1, a2, a3, 0); break;
	case __NR_renameat2: renamed(t, tid, a0, a1, a2, a3, a4); break;
	case __NR_chmod:
	case __NR_chown:
	case __NR_utime:
	case __NR_utimes: attrs_of_path(t, tid, AT_FDCWD, r->rdi, 1); break;
	case __NR_lchown: attrs_of_path(t, tid, AT_FDCWD, r->rdi, 0); break;
	case __NR_fchmod:
	case __NR_fchown: attrs_of_fd(t, tid, a0); break;
	case __NR_fchmodat:
	case __NR_fchmodat2:
	case __NR_futimesat: attrs_of_path(t, tid, a0, a1, 1); break;
	case __NR_fchownat: attrs_of_path(t, tid, a0, a1, !(a4 & AT_SYMLINK_NOFOLLOW)); break;
	case __NR_utimensat:
		if (a1)
			attrs_of_path(t, tid, a0, a1, !(a3 & AT_SYMLINK_NOFOLLOW));
		else
			attrs_of_fd(t, tid, a0);
		break;
	case __NR_mmap: mapped(t, tid, (int)r->r8); break;
	case __NR_io_uring_setup: fchange_cannot(t, "", "io_uring: the file changes it makes are not seen"); break;
	case __NR_setxattr: case __NR_lsetxattr: case __NR_removexattr: case __NR_lremovexattr: {
		struct fchange_target f;
		if (fchange_path_target(tid, AT_FDCWD, r->rdi, 0, &f) == 0)
			fchange_cannot(t, f.path, "extended attributes changed");
		break;
	}
	case __NR_fsetxattr:
	case __NR_fremovexattr: fchange_cannot(t, "", "extended attributes changed"); break;
	default: break;
	}
}

void filetrack_stop(struct tree *t, struct sup *m, pid_t tid)
{
	struct file_track *ft = &t->files;
	struct user_regs_struct r;
	if (!ft->on || ft->fd < 0 || ptrace(PTRACE_GETREGS, tid, 0, &r) != 0)
		return;
	double t0 = stopclock_now();
	ft->traps++;
	pthread_mutex_lock(&ft->mu); /* flush_base holds still while the call is recorded */
	if (filefilter_stdio_call((long)r.orig_rax))
		stdio_call(t, m, tid, &r);
	else
		dispatch(t, tid, &r);
	pthread_mutex_unlock(&ft->mu);
	/* undo before data: a change on a disk runs only once what undoes it is on the disk too */
	if (ft->unflushed && !ft->failed && outlives_power_cut(t))
		flush_journal(t);
	ft->unflushed = 0;
	ft->seconds += stopclock_now() - t0;
	for (size_t i = 0; i < ft->ndie_at; i++)
		if ((long)r.orig_rax == ft->die_at[i])
			kill(0, SIGKILL); /* recorded, never run: as `kill -9 -- -PGID` at this instant would */
	if (ft->failed) {
		/* a change that cannot be recorded must not run: the program ends here, its last
		 * checkpoint resumable with the files as they were */
		sup_disable(m, "the file-undo journal cannot be written");
		kill(m->pid, SIGKILL);
	}
}

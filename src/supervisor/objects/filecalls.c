/* filecalls.c -- what one system call of the program's is about to change, recorded (filecalls.h). */
#include "filecalls.h"
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include "filechange.h"
#include "filefilter.h"
#include "filetrack.h"
#include "inject.h"
#include "procfs.h"

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE 2
#endif
#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452
#endif


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
		fchange_mapped(t, f.path);
}

/* ------------------------------------------------------------------ fd 1 and 2 (filefilter.h) */

/* Process m's writes to fd 1 and 2 sent to us from now on: the tightening filter injected into
 * it (all its threads), while thread tid is at the seccomp stop of the call whose registers are
 * r; the call is then made again (it meets the filter again, and is let go).  0, or -1. */
static int tighten(struct sup *m, pid_t tid, const struct user_regs_struct *r)
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
 * (or be freed, for anything to take) while the launch filter lets that fd's writes through, m is
 * tightened.  (An fd whose writes the launch filter sends already needs nothing: a shell that
 * restores a stderr file of the run's after `2>/dev/null` would otherwise have its stdout pipe's
 * every write stopped from then on, and every program it starts.) */
static void stdio_call(struct tree *t, struct sup *m, pid_t tid, const struct user_regs_struct *r)
{
	long nr = (long)r->orig_rax;
	int a0 = (int)r->rdi, a1 = (int)r->rsi;
	unsigned targets = nr == __NR_dup2 || nr == __NR_dup3 ? (a1 == 1 ? 1u : a1 == 2 ? 2u : 0u)
			   : nr == __NR_close_range ? ((unsigned)a0 <= 1 && (unsigned)a1 >= 1 ? 1u : 0u) |
							((unsigned)a0 <= 2 && (unsigned)a1 >= 2 ? 2u : 0u)
			   : a0 == 1 ? 1u : a0 == 2 ? 2u : 0u;
	unsigned passed = (t->files.launch_filter & FILTER_PASS_FD1 ? 1u : 0u) | (t->files.launch_filter & FILTER_PASS_FD2 ? 2u : 0u);
	if (!(targets & passed))
		return; /* its writes there are sent to us already */
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

void filecalls_record(struct tree *t, struct sup *m, pid_t tid, const struct user_regs_struct *r)
{
	if (filefilter_stdio_call((long)r->orig_rax))
		stdio_call(t, m, tid, r);
	else
		dispatch(t, tid, r);
}

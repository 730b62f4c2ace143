/* filefilter.c -- the launch filter and the tightening filter (filefilter.h). */
#include "filefilter.h"
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452
#endif

/* Sent to us whatever their arguments. */
static const int always[] = {
	__NR_write, __NR_writev, __NR_pwrite64, __NR_pwritev, __NR_pwritev2, __NR_sendfile, __NR_splice,
	__NR_copy_file_range, __NR_truncate, __NR_ftruncate, __NR_fallocate, __NR_creat, __NR_openat2,
	__NR_rename, __NR_renameat, __NR_renameat2, __NR_unlink, __NR_unlinkat, __NR_rmdir, __NR_mkdir,
	__NR_mkdirat, __NR_mknod, __NR_mknodat, __NR_link, __NR_linkat, __NR_symlink, __NR_symlinkat,
	__NR_chmod, __NR_fchmod, __NR_fchmodat, __NR_fchmodat2, __NR_chown, __NR_fchown, __NR_lchown,
	__NR_fchownat, __NR_utime, __NR_utimes, __NR_futimesat, __NR_utimensat, __NR_setxattr,
	__NR_lsetxattr, __NR_fsetxattr, __NR_removexattr, __NR_lremovexattr, __NR_fremovexattr,
	__NR_io_uring_setup,
};
#define NALWAYS (int)(sizeof always / sizeof always[0])

#define ARG_LO(i) (uint32_t)(offsetof(struct seccomp_data, args) + 8 * (i)) /* x86-64: the low half first */

/* ------------------------------------------------------------------ a small assembler with labels */

enum { NEXT = 0, L_ALLOW = 1, L_TRACE, L_STDIO_WRITE, L_DUP, L_CLOSE, L_CLOSE_RANGE, L_FCNTL, L_FCNTL_CMD, L_AFTER_OPEN,
       L_AFTER_OPENAT, L_AFTER_MADVISE, NLABELS };

struct prog {
	struct sock_filter f[192];
	uint8_t jt[192], jf[192]; /* labels of the conditional jumps (NEXT: the next instruction) */
	int at[NLABELS];
	int n;
};

static void stmt(struct prog *p, uint16_t code, uint32_t k)
{
	p->f[p->n] = (struct sock_filter)BPF_STMT(code, k);
	p->jt[p->n] = p->jf[p->n] = NEXT;
	p->n++;
}

static void load(struct prog *p, uint32_t off) { stmt(p, BPF_LD | BPF_W | BPF_ABS, off); }

static void jump(struct prog *p, uint16_t op, uint32_t k, int jt, int jf)
{
	p->f[p->n] = (struct sock_filter)BPF_JUMP(BPF_JMP | op | BPF_K, k, 0, 0);
	p->jt[p->n] = (uint8_t)jt, p->jf[p->n] = (uint8_t)jf;
	p->n++;
}

static void label(struct prog *p, int l) { p->at[l] = p->n; }

static int rel(const struct prog *p, int from, int l) { return l == NEXT ? 0 : p->at[l] - (from + 1); }

/* Resolve the labels; -1 if a jump does not reach. */
static int resolve(struct prog *p)
{
	for (int i = 0; i < p->n; i++) {
		if (BPF_CLASS(p->f[i].code) != BPF_JMP || BPF_OP(p->f[i].code) == BPF_JA)
			continue;
		int t = rel(p, i, p->jt[i]), f = rel(p, i, p->jf[i]);
		if (t < 0 || t > 255 || f < 0 || f > 255)
			return -1;
		p->f[i].jt = (uint8_t)t, p->f[i].jf = (uint8_t)f;
	}
	return 0;
}

static void head(struct prog *p)
{
	load(p, offsetof(struct seccomp_data, arch));
	jump(p, BPF_JEQ, AUDIT_ARCH_X86_64, NEXT, L_ALLOW);
	load(p, offsetof(struct seccomp_data, nr));
}

/* Argument arg (an fd: its low 32 bits) is 1 or 2: to yes, else to no. */
static void fd_1_or_2(struct prog *p, int arg, int yes, int no)
{
	load(p, ARG_LO(arg));
	jump(p, BPF_JEQ, 1, yes, NEXT);
	jump(p, BPF_JEQ, 2, yes, no);
}

static void tail(struct prog *p)
{
	label(p, L_ALLOW);
	stmt(p, BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	label(p, L_TRACE);
	stmt(p, BPF_RET | BPF_K, SECCOMP_RET_TRACE);
}

/* ------------------------------------------------------------------ the filters */

int filefilter_stdio_call(long nr)
{
	return nr == __NR_dup2 || nr == __NR_dup3 || nr == __NR_close || nr == __NR_close_range || nr == __NR_fcntl;
}

static int build_launch(struct prog *p, int filter)
{
	int stdio_exception = filter & (FILTER_PASS_FD1 | FILTER_PASS_FD2);
	p->n = 0;
	head(p);
	if (stdio_exception) {
		jump(p, BPF_JEQ, __NR_write, L_STDIO_WRITE, NEXT);
		jump(p, BPF_JEQ, __NR_writev, L_STDIO_WRITE, NEXT);
		jump(p, BPF_JEQ, __NR_dup2, L_DUP, NEXT);
		jump(p, BPF_JEQ, __NR_dup3, L_DUP, NEXT);
		jump(p, BPF_JEQ, __NR_close, L_CLOSE, NEXT);
		jump(p, BPF_JEQ, __NR_close_range, L_CLOSE_RANGE, NEXT);
		jump(p, BPF_JEQ, __NR_fcntl, L_FCNTL, NEXT);
	}
	for (int k = 0; k < NALWAYS; k++)
		jump(p, BPF_JEQ, (uint32_t)always[k], L_TRACE, NEXT);
	if (filter & FILTER_SENDS) {
		jump(p, BPF_JEQ, __NR_sendto, L_TRACE, NEXT);
		jump(p, BPF_JEQ, __NR_sendmsg, L_TRACE, NEXT);
		jump(p, BPF_JEQ, __NR_shutdown, L_TRACE, NEXT);
	}
	/* open and openat: only when they may write, create or truncate */
	const int opens[2][3] = { { __NR_open, 1, L_AFTER_OPEN }, { __NR_openat, 2, L_AFTER_OPENAT } };
	for (int k = 0; k < 2; k++) {
		jump(p, BPF_JEQ, (uint32_t)opens[k][0], NEXT, opens[k][2]);
		load(p, ARG_LO(opens[k][1]));
		jump(p, BPF_JSET, O_WRONLY | O_RDWR | O_CREAT | O_TRUNC, L_TRACE, L_ALLOW);
		label(p, opens[k][2]);
	}
	/* madvise: only MADV_DONTFORK and MADV_WIPEONFORK, which a copy-on-write view would not see
	 * through (snapshot.h) */
	jump(p, BPF_JEQ, __NR_madvise, NEXT, L_AFTER_MADVISE);
	load(p, ARG_LO(2));
	jump(p, BPF_JEQ, MADV_DONTFORK, L_TRACE, NEXT);
	jump(p, BPF_JEQ, MADV_WIPEONFORK, L_TRACE, L_ALLOW);
	label(p, L_AFTER_MADVISE);
	/* mmap: only a shared writable mapping */
	jump(p, BPF_JEQ, __NR_mmap, NEXT, L_ALLOW);
	load(p, ARG_LO(3));
	jump(p, BPF_JSET, MAP_SHARED, NEXT, L_ALLOW);
	load(p, ARG_LO(2));
	jump(p, BPF_JSET, PROT_WRITE, L_TRACE, L_ALLOW);
	if (stdio_exception) {
		/* write(v) to fd 1 or 2 (the kernel reads the fd as 32 bits) */
		label(p, L_STDIO_WRITE);
		load(p, ARG_LO(0));
		jump(p, BPF_JEQ, 1, filter & FILTER_PASS_FD1 ? L_ALLOW : L_TRACE, NEXT);
		jump(p, BPF_JEQ, 2, filter & FILTER_PASS_FD2 ? L_ALLOW : L_TRACE, L_TRACE);
		/* dup2/dup3 onto 1 or 2 */
		label(p, L_DUP);
		fd_1_or_2(p, 1, L_TRACE, L_ALLOW);
		label(p, L_CLOSE);
		fd_1_or_2(p, 0, L_TRACE, L_ALLOW);
		/* close_range(first, ...): from 2 or below (its last is at least first) */
		label(p, L_CLOSE_RANGE);
		load(p, ARG_LO(0));
		jump(p, BPF_JGT, 2, L_ALLOW, L_TRACE);
		/* fcntl(1 or 2, F_SETFD or F_SETFL, ...) */
		label(p, L_FCNTL);
		fd_1_or_2(p, 0, L_FCNTL_CMD, L_ALLOW);
		label(p, L_FCNTL_CMD);
		load(p, ARG_LO(1));
		jump(p, BPF_JEQ, F_SETFD, L_TRACE, NEXT);
		jump(p, BPF_JEQ, F_SETFL, L_TRACE, L_ALLOW);
	}
	tail(p); /* a classic BPF program ends with its returns */
	if (resolve(p) != 0)
		return -1;
	return p->n;
}

int filefilter_install(int filter)
{
	static struct prog p;
	if (build_launch(&p, filter) < 0)
		return -EINVAL;
	struct sock_fprog prog = { .len = (unsigned short)p.n, .filter = p.f };
	if (geteuid() != 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -errno;
	return syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == 0 ? 0 : -errno;
}

int filefilter_tighten_prog(struct sock_filter *f)
{
	static struct prog p;
	p.n = 0;
	head(&p);
	jump(&p, BPF_JEQ, __NR_write, L_STDIO_WRITE, NEXT);
	jump(&p, BPF_JEQ, __NR_writev, L_STDIO_WRITE, L_ALLOW);
	label(&p, L_STDIO_WRITE);
	fd_1_or_2(&p, 0, L_TRACE, L_ALLOW);
	tail(&p);
	if (resolve(&p) != 0 || p.n > FILEFILTER_TIGHTEN_LEN)
		return -1;
	for (int i = 0; i < p.n; i++)
		f[i] = p.f[i];
	return p.n;
}

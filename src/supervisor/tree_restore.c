/* tree_restore.c -- a resume of a checkpoint of several processes (tree.h, docs/run-resume.md
 * "Process trees"): the first process is relaunched as always; before anything is restored, the
 * pipes and socketpairs between the processes are made again in it, with the bytes that were in
 * flight, and every other process is forked again by its parent (an injected clone(), the id
 * asked of the namespace's init; an orphan by the first process with CLONE_PARENT, so that it is
 * the init's child again) and made to execute its image's program with the shim, in resume mode;
 * a child that had ended and was not waited for is made to end again the same way.  So
 * each one is the child of the process that was its parent, holds every pipe of the tree, and
 * stops in its shim like the first process; resume.c then restores them one by one and lets
 * them all go at once.
 *
 * Invariants: a process whose id or parent cannot be given back is a refusal (every process is
 * then killed); the pipes are made at fd numbers above every fd of the checkpoint, so no restore
 * of an fd closes or replaces one before each process has taken its ends (restore.c).
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>
#include "fdkind.h"
#include "inject.h"
#include "run.h"
#include "sharedmem.h"
#include "tree.h"
#include "tree_image.h"

#define FAIL(...) do { snprintf(why, whylen, __VA_ARGS__); return -1; } while (0)
#define SCRATCH (1u << 20) /* strings of an exec: argv and environment */

/* An injector with a scratch mapping of its own in the process. */
struct hand {
	struct inject in;
	uint64_t scratch;
};

static int hand_open(struct hand *h, pid_t pid, uint64_t gate)
{
	if (inject_open(&h->in, pid, gate) != 0)
		return -1;
	long a = inject_syscall(&h->in, SYS_mmap, 0, SCRATCH, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a < 0 && a > -4096) {
		inject_close(&h->in);
		return -1;
	}
	h->scratch = (uint64_t)a;
	return 0;
}

static void hand_close(struct hand *h)
{
	inject_syscall(&h->in, SYS_munmap, (long)h->scratch, SCRATCH, 0, 0, 0, 0);
	ptrace(PTRACE_SETREGS, h->in.pid, 0, &h->in.base); /* back in its shim's stop */
	inject_close(&h->in);
}

static int premake_socketpairs(struct tree *t, struct hand *root, long *next, char *why, size_t whylen);

/* Send n bytes from the socket the process holds at fd (a copy taken with pidfd_getfd). */
static int put_from(pid_t pid, int fd, const void *bytes, uint32_t n)
{
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	int mine = pidfd >= 0 ? (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0) : -1;
	ssize_t put = mine >= 0 ? send(mine, bytes, n, MSG_DONTWAIT | MSG_NOSIGNAL) : -1;
	if (mine >= 0)
		close(mine);
	if (pidfd >= 0)
		close(pidfd);
	return put == (ssize_t)n ? 0 : -1;
}

/* The queued messages of a datagram or seqpacket end (tree_image.h: each a u32 length and its
 * bytes), sent again one by one from its peer, held by pid at fd. */
static int put_messages(pid_t pid, int fd, const uint8_t *bytes, uint32_t n)
{
	for (uint32_t at = 0; at < n;) {
		uint32_t l;
		memcpy(&l, bytes + at, 4);
		if (put_from(pid, fd, bytes + at + 4, l) != 0)
			return -1;
		at += 4 + l;
	}
	return 0;
}

static int sock_type(const struct tree_sock *s)
{
	return s->flags & TREE_SOCK_DGRAM ? SOCK_DGRAM : s->flags & TREE_SOCK_SEQPACKET ? SOCK_SEQPACKET : SOCK_STREAM;
}

/* A named pipe of the checkpoint opened in the first process, both ends without waiting (the
 * reader first, so the writer finds it): fds[0] reads, fds[1] writes.  Gone since the cut (the
 * program removed it later), it is made again: the program had it then, and may remove it again. */
static int open_fifo(struct hand *root, const char *path, uint32_t mode, int32_t fds[2])
{
	size_t n = strlen(path) + 1;
	if (n > SCRATCH || inject_write(&root->in, root->scratch, path, n) != 0)
		return -1;
	long rd = inject_syscall(&root->in, SYS_openat, AT_FDCWD, (long)root->scratch, O_RDONLY | O_NONBLOCK, 0, 0, 0);
	if (rd == -ENOENT && inject_syscall(&root->in, SYS_mknodat, AT_FDCWD, (long)root->scratch, S_IFIFO | (mode & 07777), 0,
					    0, 0) == 0)
		rd = inject_syscall(&root->in, SYS_openat, AT_FDCWD, (long)root->scratch, O_RDONLY | O_NONBLOCK, 0, 0, 0);
	long wr = rd >= 0 ? inject_syscall(&root->in, SYS_openat, AT_FDCWD, (long)root->scratch, O_WRONLY | O_NONBLOCK, 0, 0, 0)
			  : -1;
	if (rd < 0 || wr < 0)
		return -1;
	fds[0] = (int32_t)rd, fds[1] = (int32_t)wr;
	return 0;
}

/* The pipes of the checkpoint, made in the first process at fd numbers above every fd any
 * process of it had, each with its bytes in flight again; then its socketpairs and its shared
 * memory (sharedmem.h), above them. */
static int premake_pipes(struct tree *t, struct hand *root, char *why, size_t whylen)
{
	int top = 2;
	for (uint32_t i = 0; i < t->view->nprocs; i++)
		for (uint32_t k = 0; t->imgs[i].h && k < t->imgs[i].h->nfds; k++)
			if (t->imgs[i].fds[k].fd > top)
				top = t->imgs[i].fds[k].fd;
	t->premade = calloc(t->view->npipes + 1u, sizeof *t->premade);
	if (!t->premade)
		FAIL("out of memory");
	long next = top + 1;
	for (uint32_t i = 0; i < t->view->npipes; i++) {
		const struct tree_pipe *p = t->view->pipes[i];
		int32_t fds[2];
		if (t->view->pipe_paths[i]) {
			if (open_fifo(root, t->view->pipe_paths[i], p->mode, fds) != 0)
				FAIL("cannot open the named pipe %s again", t->view->pipe_paths[i]);
		} else if (inject_syscall(&root->in, SYS_pipe2, (long)root->scratch, 0, 0, 0, 0, 0) != 0 ||
			   proc_mem_read(root->in.pid, root->scratch, fds, sizeof fds) != 0) {
			FAIL("cannot make the program's pipes again");
		}
		int32_t hi[2];
		for (int e = 0; e < 2; e++) {
			hi[e] = (int32_t)inject_syscall(&root->in, SYS_fcntl, fds[e], F_DUPFD, next, 0, 0, 0);
			inject_syscall(&root->in, SYS_close, fds[e], 0, 0, 0, 0, 0);
			if (hi[e] < next)
				FAIL("cannot make the program's pipes again (fd numbers)");
			next = hi[e] + 1;
		}
		t->premade[t->npremade++] = (struct premade){ .type = t->view->pipe_paths[i] ? IMG_FD_FIFO : IMG_FD_PIPE,
							      .object = p->ino, .rfd = hi[0], .wfd = hi[1] };
		if (p->capacity > 65536)
			inject_syscall(&root->in, SYS_fcntl, hi[0], F_SETPIPE_SZ, p->capacity, 0, 0, 0);
		if (p->bytes) {
			char path[64];
			snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)root->in.pid, hi[1]);
			int w = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
			ssize_t put = w >= 0 ? write(w, t->view->bytes[i], p->bytes) : -1;
			if (w >= 0)
				close(w);
			if (put != (ssize_t)p->bytes)
				FAIL("cannot put %u bytes back into a pipe of the program", p->bytes);
		}
	}
	if (premake_socketpairs(t, root, &next, why, whylen) != 0)
		return -1;
	return shm_premake(t, &root->in, root->scratch, &next, why, whylen);
}

/* A listening socket of the checkpoint, or one made and not connected, made in the first process:
 * bound to its name again (the socket file the killed run left at its path is removed first; a
 * file of another kind there is a refusal), or unnamed if the program had removed its path, and a
 * listener listening with its backlog (socketpairs.h).  An unconnected one without a name is
 * only made. */
static int premake_named(struct tree *t, struct hand *root, const struct tree_sock *s, const uint8_t *name,
			 long *next, char *why, size_t whylen)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int listener = (s->flags & TREE_SOCK_LISTENER) != 0, bind_it = listener || s->bytes;
	if (s->bytes)
		memcpy(a.sun_path, name, s->bytes);
	const char *shown = !s->bytes ? "(unnamed)" : name[0] ? (const char *)name : "(an abstract name)";
	int gone = (s->flags & TREE_SOCK_NAME_GONE) != 0;
	struct stat st;
	if (s->bytes && name[0] && !gone && lstat((const char *)name, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			FAIL("%s, where the program listened, is now a file of another kind", shown);
		if (unlink((const char *)name) != 0)
			FAIL("cannot remove the old socket %s: %s", shown, strerror(errno));
	}
	/* unnamed: an address of the family alone makes the kernel pick an abstract name */
	socklen_t alen = gone || !s->bytes ? (socklen_t)sizeof a.sun_family
					   : (socklen_t)(offsetof(struct sockaddr_un, sun_path) + s->bytes - (name[0] ? 1 : 0));
	long fd = inject_syscall(&root->in, SYS_socket, AF_UNIX, sock_type(s), 0, 0, 0, 0);
	if (fd < 0 || inject_write(&root->in, root->scratch, &a, sizeof a) != 0)
		FAIL("cannot make the program's socket %s again", shown);
	long rc = bind_it ? inject_syscall(&root->in, SYS_bind, fd, (long)root->scratch, alen, 0, 0, 0) : 0;
	if (rc == 0 && listener)
		rc = inject_syscall(&root->in, SYS_listen, fd, (long)s->peer, 0, 0, 0, 0);
	long hi = rc == 0 ? inject_syscall(&root->in, SYS_fcntl, fd, F_DUPFD, *next, 0, 0, 0) : -1;
	inject_syscall(&root->in, SYS_close, fd, 0, 0, 0, 0, 0);
	if (rc != 0)
		FAIL("cannot bind or listen on %s again: %s", shown, strerror((int)-rc));
	if (hi < *next)
		FAIL("cannot make the program's socket %s again (fd numbers)", shown);
	*next = hi + 1;
	t->premade[t->npremade++] = (struct premade){ .type = IMG_FD_SOCKET, .object = s->ino, .rfd = (int)hi, .wfd = (int)hi };
	return 0;
}

/* The socketpairs of the checkpoint, made in the first process like its pipes; the bytes queued
 * at each end are sent again from its peer, so they wait at that end, in order. */
static int premake_socketpairs(struct tree *t, struct hand *root, long *next, char *why, size_t whylen)
{
	struct premade *more = realloc(t->premade, ((size_t)t->npremade + t->view->nsocks + 1) * sizeof *more);
	if (!more)
		FAIL("out of memory");
	t->premade = more;
	for (uint32_t i = 0; i < t->view->nsocks; i++) {
		const struct tree_sock *s = t->view->socks[i];
		if (fd_premade(t, IMG_FD_SOCKET, s->ino))
			continue; /* made with its peer */
		if (s->flags & (TREE_SOCK_LISTENER | TREE_SOCK_UNCONNECTED)) {
			if (premake_named(t, root, s, t->view->sock_bytes[i], next, why, whylen) != 0)
				return -1;
			continue;
		}
		int32_t fds[2], hi[2];
		if (inject_syscall(&root->in, SYS_socketpair, AF_UNIX, sock_type(s), 0, (long)root->scratch, 0, 0) != 0 ||
		    proc_mem_read(root->in.pid, root->scratch, fds, sizeof fds) != 0)
			FAIL("cannot make the program's socketpairs again");
		for (int e = 0; e < 2; e++) {
			hi[e] = (int32_t)inject_syscall(&root->in, SYS_fcntl, fds[e], F_DUPFD, *next, 0, 0, 0);
			inject_syscall(&root->in, SYS_close, fds[e], 0, 0, 0, 0, 0);
			if (hi[e] < *next)
				FAIL("cannot make the program's socketpairs again (fd numbers)");
			*next = hi[e] + 1;
		}
		t->premade[t->npremade++] = (struct premade){ .type = IMG_FD_SOCKET, .object = s->ino, .rfd = hi[0], .wfd = hi[0] };
		if (s->peer) {
			t->premade[t->npremade++] = (struct premade){ .type = IMG_FD_SOCKET, .object = s->peer, .rfd = hi[1], .wfd = hi[1] };
			continue;
		}
		/* its peer was closed: the queued bytes come from the other end, which is closed then */
		if (s->bytes && put_from(root->in.pid, hi[1], t->view->sock_bytes[i], s->bytes) != 0)
			FAIL("cannot queue %u bytes again at a socket of the program", s->bytes);
		inject_syscall(&root->in, SYS_close, hi[1], 0, 0, 0, 0, 0);
	}
	for (uint32_t i = 0; i < t->view->nsocks; i++) {
		const struct tree_sock *s = t->view->socks[i];
		if (!s->bytes || !s->peer || (s->flags & TREE_SOCK_LISTENER))
			continue;
		const struct premade *pm = fd_premade(t, IMG_FD_SOCKET, s->peer);
		int peer_fd = pm ? pm->rfd : -1;
		int put = peer_fd < 0 ? -1
			  : sock_type(s) == SOCK_STREAM ? put_from(root->in.pid, peer_fd, t->view->sock_bytes[i], s->bytes)
							: put_messages(root->in.pid, peer_fd, t->view->sock_bytes[i], s->bytes);
		if (put != 0)
			FAIL("cannot queue %u bytes again at a socketpair of the program", s->bytes);
	}
	return 0;
}

/* Put argv (argc strings) and the environment (base, then extra, NULL-terminated) into the
 * scratch mapping: the addresses of the two arrays. */
static int put_strings(struct hand *h, const struct img *im, const char *const *extra, uint64_t *argv_at,
		       uint64_t *env_at, uint64_t *exe_at, uint64_t *cwd_at)
{
	size_t n = 0;
	uint32_t count = im->h->argc + im->h->envc;
	const char *p = img_s(im, im->h->args_str);
	for (uint32_t i = 0; i < count; i++)
		n += strlen(p + n) + 1;
	const char *exe = img_s(im, im->h->exe_str), *cwd = img_s(im, im->h->launch_cwd_str);
	size_t nextra = 0, extra_bytes = 0;
	while (extra[nextra])
		extra_bytes += strlen(extra[nextra++]) + 1;
	size_t words = (size_t)count + nextra + 2;
	size_t total = words * 8 + n + extra_bytes + strlen(exe) + strlen(cwd) + 2;
	if (total > SCRATCH)
		return -1;
	uint8_t *buf = calloc(1, total);
	if (!buf)
		return -1;
	uint64_t *vec = (uint64_t *)buf, at = words * 8, k = 0;
	memcpy(buf + at, p, n);
	for (uint32_t i = 0; i < count; i++) {
		if (i == im->h->argc)
			vec[k++] = 0; /* argv's end */
		vec[k++] = h->scratch + at;
		at += strlen((char *)buf + at) + 1;
	}
	if (im->h->argc == count)
		vec[k++] = 0;
	for (size_t e = 0; e < nextra; e++) {
		size_t l = strlen(extra[e]) + 1;
		memcpy(buf + at, extra[e], l);
		vec[k++] = h->scratch + at;
		at += l;
	}
	vec[k++] = 0;
	*exe_at = h->scratch + at;
	at += (size_t)sprintf((char *)buf + at, "%s", exe) + 1;
	*cwd_at = h->scratch + at;
	at += (size_t)sprintf((char *)buf + at, "%s", cwd) + 1;
	*argv_at = h->scratch;
	*env_at = h->scratch + ((uint64_t)im->h->argc + 1) * 8;
	int rc = inject_write(&h->in, h->scratch, buf, at);
	free(buf);
	return rc;
}

/* The child process stopped at its first stop executes its image's program (with the shim, in
 * resume mode); it is left stopped in its shim.  0, or -1 with why. */
static int exec_image(struct tree *t, pid_t child, uint64_t gate, const struct img *im, struct shim_hello *hello,
		      int *uffd, char *why, size_t whylen)
{
	struct hand h;
	if (hand_open(&h, child, gate) != 0)
		FAIL("cannot control the forked process");
	const char *extra[] = { t->channel.env, "PROSPER_SHIM_RESUME=1", NULL };
	uint64_t argv_at, env_at, exe_at, cwd_at;
	if (put_strings(&h, im, extra, &argv_at, &env_at, &exe_at, &cwd_at) != 0) {
		hand_close(&h);
		FAIL("cannot give the forked process its arguments");
	}
	if (inject_syscall(&h.in, SYS_chdir, (long)cwd_at, 0, 0, 0, 0, 0) != 0) {
		hand_close(&h);
		FAIL("cannot enter %s", img_s(im, im->h->launch_cwd_str));
	}
	struct user_regs_struct r = h.in.base;
	r.rip = gate, r.rax = SYS_execve, r.orig_rax = (unsigned long)-1;
	r.rdi = exe_at, r.rsi = argv_at, r.rdx = env_at;
	inject_close(&h.in);
	int st;
	if (ptrace(PTRACE_SETREGS, child, 0, &r) != 0 || ptrace(PTRACE_CONT, child, 0, 0) != 0 ||
	    waitpid(child, &st, __WALL) != child || !WIFSTOPPED(st) || (st >> 16) != PTRACE_EVENT_EXEC)
		FAIL("cannot execute %s again", img_s(im, im->h->exe_str));
	ptrace(PTRACE_CONT, child, 0, 0);
	int rc = launch_wait_hello(&t->channel, child, hello, uffd);
	if (rc != 0 || !hello->resume)
		FAIL("%s did not reach the restorer (%s)", img_s(im, im->h->exe_str), rc ? strerror(-rc) : "not in resume mode");
	while (waitpid(child, &st, __WALL) == child && WIFSTOPPED(st) && WSTOPSIG(st) != SIGSTOP)
		ptrace(PTRACE_CONT, child, 0, (void *)(long)WSTOPSIG(st));
	if (!WIFSTOPPED(st))
		FAIL("%s ended before the restore", img_s(im, im->h->exe_str));
	return 0;
}

/* The child process stopped at its first stop ends again as it had ended at the cut: its wait
 * status, for its parent to collect (a signal's death with the default action, no core dump).
 * 0, or -1 with why. */
static int exit_again(pid_t child, uint64_t gate, int32_t own, uint32_t status, char *why, size_t whylen)
{
	struct hand h;
	if (hand_open(&h, child, gate) != 0)
		FAIL("process %d: cannot control it to end it again", (int)own);
	int sig = (int)(status & 0x7f);
	struct user_regs_struct r = h.in.base;
	r.rip = gate, r.orig_rax = (unsigned long)-1;
	if (sig) {
		struct { uint64_t handler, flags, restorer, mask; } dfl = { 0 }; /* SIG_DFL */
		uint64_t none = 0;
		if (inject_write(&h.in, h.scratch, &dfl, sizeof dfl) != 0 ||
		    inject_syscall(&h.in, SYS_rt_sigaction, sig, (long)h.scratch, 0, 8, 0, 0) != 0 ||
		    inject_write(&h.in, h.scratch, &none, sizeof none) != 0 ||
		    inject_syscall(&h.in, SYS_rt_sigprocmask, SIG_SETMASK, (long)h.scratch, 0, 8, 0, 0) != 0 ||
		    inject_syscall(&h.in, SYS_prctl, PR_SET_DUMPABLE, 0, 0, 0, 0, 0) != 0) {
			hand_close(&h);
			FAIL("process %d: cannot give signal %d its default action again", (int)own, sig);
		}
		r.rax = SYS_kill, r.rdi = (unsigned long)own, r.rsi = (unsigned long)sig;
	} else {
		r.rax = SYS_exit_group, r.rdi = (status >> 8) & 0xff;
	}
	inject_close(&h.in); /* its scratch goes with it */
	if (ptrace(PTRACE_SETREGS, child, 0, &r) != 0 || ptrace(PTRACE_CONT, child, 0, 0) != 0)
		FAIL("process %d: cannot end it again", (int)own);
	int st;
	while (waitpid(child, &st, __WALL) == child && WIFSTOPPED(st))
		ptrace(PTRACE_CONT, child, 0, (void *)(long)((st >> 16) == 0 && WSTOPSIG(st) == sig ? sig : 0));
	if (!(WIFEXITED(st) || WIFSIGNALED(st)) || ((uint32_t)st & 0xff7f) != (status & 0xff7f))
		FAIL("process %d: it did not end as at the checkpoint (status %#x, not %#x)", (int)own, (unsigned)st, status & 0xffff);
	return 0;
}

/* The launch record of a process of the tree, from its image (copies: the blob is reused). */
static int take_record(struct sup *m, const struct img *im)
{
	char **args = calloc(im->h->argc + 1u, sizeof *args), **env = calloc(im->h->envc + 1u, sizeof *env);
	if (!args || !env)
		return -1;
	const char *p = img_s(im, im->h->args_str);
	for (uint32_t i = 0; i < im->h->argc + im->h->envc; i++, p += strlen(p) + 1) {
		char **slot = i < im->h->argc ? &args[i] : &env[i - im->h->argc];
		if (!(*slot = strdup(p)))
			return -1;
	}
	m->exec_mem = (struct exec_mem){ .argv = args, .envp = env, .own_from = 0 };
	m->argv = args, m->argc = (int)im->h->argc, m->envp = env, m->envc = (int)im->h->envc;
	snprintf(m->exe, sizeof m->exe, "%s", img_s(im, im->h->exe_str));
	snprintf(m->launch_cwd, sizeof m->launch_cwd, "%s", img_s(im, im->h->launch_cwd_str));
	m->tid_offset = im->h->tid_offset;
	return 0;
}

/* The first process's stdio that is the checkpointed file (the run's output, `>> out`): opened
 * again now, cut to its size and position, so every process forked after shares that one open
 * file -- one offset, as they shared it at the cut (restore.c then leaves it). */
static int reopen_shared_stdio(struct tree *t, struct hand *root, char *why, size_t whylen)
{
	const struct img *im = &t->imgs[0];
	for (uint32_t i = 0; i < im->h->nfds; i++) {
		const struct img_fd *f = &im->fds[i];
		const char *path = img_s(im, f->path);
		if (!fd_stdio_reopened_here(f, path))
			continue;
		size_t n = strlen(path) + 1;
		if (truncate(path, (off_t)f->size) != 0 || n > SCRATCH || inject_write(&root->in, root->scratch, path, n) != 0)
			FAIL("cannot cut %s back to its checkpointed size", path);
		long fd = inject_syscall(&root->in, SYS_openat, AT_FDCWD, (long)root->scratch,
					 (long)(f->flags & (O_ACCMODE | O_APPEND | O_NONBLOCK | O_LARGEFILE)), 0, 0, 0);
		if (fd < 0 || inject_syscall(&root->in, SYS_dup3, fd, f->fd, 0, 0, 0, 0) != f->fd ||
		    inject_syscall(&root->in, SYS_lseek, f->fd, (long)f->pos, SEEK_SET, 0, 0, 0) != (long)f->pos)
			FAIL("fd %d: cannot reopen %s", f->fd, path);
		inject_syscall(&root->in, SYS_close, fd, 0, 0, 0, 0, 0);
		t->stdio_shared |= 1u << f->fd;
	}
	return 0;
}

/* The record of process e of the checkpoint, forked again as child (with its launch record and
 * metadata log when it has an image im); NULL with why (the child killed). */
static struct sup *member(struct tree *t, struct sup *s, pid_t child, const struct tree_proc *e, const struct img *im,
			  char *why, size_t whylen)
{
	struct sup *m = tree_proc_new(t, &s->cfg);
	char name[40];
	snprintf(name, sizeof name, "%s.%d", META_REGION_NAME, (int)e->pid);
	if (!m || (im && (!(m->meta = metalog_new_named(name)) || take_record(m, im) != 0))) {
		kill(child, SIGKILL);
		snprintf(why, whylen, "out of memory");
		return NULL;
	}
	m->pid = child, m->thr[0].tid = child, m->nthr = 1;
	m->own_pid = pidns_own_id(child);
	snprintf(m->region_prefix, sizeof m->region_prefix, "p%d.", (int)e->pid);
	if (m->own_pid != e->pid) {
		snprintf(why, whylen, "process %d: its id is not free in the namespace (it got %d)", (int)e->pid, (int)m->own_pid);
		return NULL;
	}
	return m;
}

/* The terminal's foreground group at the cut was one of the program's own (a job-control shell
 * had given it the terminal): it is so again, if the resume has that terminal (/dev/tty). */
static void give_terminal(struct tree *t, int32_t pgid)
{
	pid_t leader = 0;
	for (int i = 0; i < t->nprocs && !leader; i++)
		if (t->procs[i]->own_pid == pgid && !t->procs[i]->exited)
			leader = t->procs[i]->pid;
	int tty = leader ? open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC) : -1;
	if (tty < 0)
		return; /* no leader of that group came back, or no terminal: nothing to give */
	sigset_t ttou, old;
	sigemptyset(&ttou);
	sigaddset(&ttou, SIGTTOU); /* we may be in the background ourselves */
	sigprocmask(SIG_BLOCK, &ttou, &old);
	if (tcsetpgrp(tty, leader) != 0)
		fprintf(stderr, "%s: warning: cannot give the terminal back to process group %d: %s\n", sup_command(),
			(int)pgid, strerror(errno));
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(tty);
}

int tree_relaunch(struct sup *s, char *why, size_t whylen)
{
	struct tree *t = s->tree;
	s->own_pid = t->view->procs[0]->pid;
	struct hand root;
	if (hand_open(&root, s->pid, s->gate) != 0)
		FAIL("cannot control the relaunched program");
	int rc = reopen_shared_stdio(t, &root, why, whylen);
	if (!rc)
		rc = premake_pipes(t, &root, why, whylen);
	for (uint32_t i = 1; i < t->view->nprocs && !rc; i++) {
		const struct tree_proc *e = t->view->procs[i];
		const struct img *im = &t->imgs[i];
		/* an orphan (parent 0) is forked by the first process as a sibling: a child of the
		 * namespace's init, as it had become */
		struct sup *parent = e->parent == 0 ? s : NULL;
		for (int k = 0; k < t->nprocs && !parent; k++)
			if (t->procs[k]->own_pid == e->parent)
				parent = t->procs[k];
		struct hand ph, *hp = parent == s ? &root : &ph;
		if (!parent || (hp == &ph && hand_open(&ph, parent->pid, parent->gate) != 0)) {
			snprintf(why, whylen, "process %d: its parent %d cannot fork it again", (int)e->pid, (int)e->parent);
			rc = -1;
			break;
		}
		pidns_next(&t->ns, e->pid);
		hp->in.cloned = 0;
		long r = inject_syscall(&hp->in, SYS_clone, SIGCHLD | (e->parent == 0 ? CLONE_PARENT : 0), 0, 0, 0, 0, 0);
		pid_t child = hp->in.cloned;
		if (hp == &ph)
			hand_close(&ph);
		int st;
		if (r < 0 || child <= 0 || waitpid(child, &st, __WALL) != child || !WIFSTOPPED(st)) {
			snprintf(why, whylen, "process %d: its parent could not fork it again (%s)", (int)e->pid,
				 r < 0 ? strerror((int)-r) : "no child");
			rc = -1;
			break;
		}
		struct sup *m = member(t, s, child, e, e->exited ? NULL : im, why, whylen);
		if (!m) {
			rc = -1;
			break;
		}
		if (e->exited) { /* a zombie: forked again and ended again, for its parent to wait for */
			rc = exit_again(child, parent->gate, e->pid, e->exited & 0xffffu, why, whylen);
			m->exited = m->memory_dropped = 1, m->exit_status = (int)(e->exited & 0xffffu);
			continue;
		}
		metalog_attach_stub(m->meta, t->pool, t->view->blobs[i], e->blob_len);
		m->resume_img = im;
		m->resume_uffd = -1;
		/* its session and process group again (before its exec, as a shell does): a leader
		 * leads again; a member of a group other than its parent's (a pipeline's, joined by a
		 * job-control shell) joins it, its leader being made before it or not at all */
		const struct tree_proc *pe = NULL;
		for (uint32_t j = 0; j < i && !pe; j++)
			if (t->view->procs[j]->pid == e->parent)
				pe = t->view->procs[j];
		int lead_session = e->sid == e->pid, own_group = e->pgid && (!pe || e->pgid != pe->pgid);
		if (lead_session || own_group) {
			struct inject ci;
			if (inject_open(&ci, child, parent->gate) == 0) {
				if (lead_session)
					inject_syscall(&ci, SYS_setsid, 0, 0, 0, 0, 0, 0);
				else
					inject_syscall(&ci, SYS_setpgid, 0, e->pgid == e->pid ? 0 : e->pgid, 0, 0, 0, 0);
				ptrace(PTRACE_SETREGS, child, 0, &ci.base);
				inject_close(&ci);
			}
		}
		rc = exec_image(t, child, parent->gate, im, &m->resume_hello, &m->resume_uffd, why, whylen);
		if (!rc)
			sup_take_hello(m, &m->resume_hello);
	}
	if (!rc && t->view->fg_pgid)
		give_terminal(t, t->view->fg_pgid);
	hand_close(&root);
	return rc;
}

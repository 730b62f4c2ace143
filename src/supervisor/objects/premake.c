/* premake.c -- the objects a resumed tree's processes share, made in the first process before
 * the others are forked (tree_restore.c): its pipes and FIFOs with the bytes that were in flight,
 * its unix sockets (socketpairs with their queued bytes, listeners bound and listening again),
 * its shared memory (sharedmem.c).  Each is made at fd numbers above every fd of the checkpoint
 * and recorded as a struct premade that the fds' kinds take (fdkind.h). */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>
#include "fdkind.h"
#include "inject.h"
#include "sharedmem.h"
#include "premake.h"
#include "sup.h"
#include "tree_image.h"
#include "why.h"


static int premake_socketpairs(struct tree *t, struct injector *root, long *next, char *why, size_t whylen);

/* Send n bytes from the socket the process holds at fd (a copy taken with pidfd_getfd). */
static int put_from(pid_t pid, int fd, const void *bytes, uint32_t n)
{
	int mine = proc_fd_copy(pid, fd);
	ssize_t put = mine >= 0 ? send(mine, bytes, n, MSG_DONTWAIT | MSG_NOSIGNAL) : -1;
	if (mine >= 0)
		close(mine);
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
static int open_fifo(struct injector *root, const char *path, uint32_t mode, int32_t fds[2])
{
	if (!injector_str(root, path))
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
int tree_premake(struct tree *t, struct injector *root, char *why, size_t whylen)
{
	int top = 2;
	for (uint32_t i = 0; i < t->resume.view->nprocs; i++)
		for (uint32_t k = 0; t->resume.imgs[i].h && k < t->resume.imgs[i].h->nfds; k++)
			if (t->resume.imgs[i].fds[k].fd > top)
				top = t->resume.imgs[i].fds[k].fd;
	t->resume.premade = calloc(t->resume.view->npipes + 1u, sizeof *t->resume.premade);
	if (!t->resume.premade)
		WHY_FAIL("out of memory");
	long next = top + 1;
	for (uint32_t i = 0; i < t->resume.view->npipes; i++) {
		const struct tree_pipe *p = t->resume.view->pipes[i];
		int32_t fds[2];
		if (t->resume.view->pipe_paths[i]) {
			if (open_fifo(root, t->resume.view->pipe_paths[i], p->mode, fds) != 0)
				WHY_FAIL("cannot open the named pipe %s again", t->resume.view->pipe_paths[i]);
		} else if (inject_syscall(&root->in, SYS_pipe2, (long)root->scratch, 0, 0, 0, 0, 0) != 0 ||
			   proc_mem_read(root->in.pid, root->scratch, fds, sizeof fds) != 0) {
			WHY_FAIL("cannot make the program's pipes again");
		}
		int32_t hi[2];
		for (int e = 0; e < 2; e++) {
			hi[e] = (int32_t)inject_syscall(&root->in, SYS_fcntl, fds[e], F_DUPFD, next, 0, 0, 0);
			inject_syscall(&root->in, SYS_close, fds[e], 0, 0, 0, 0, 0);
			if (hi[e] < next)
				WHY_FAIL("cannot make the program's pipes again (fd numbers)");
			next = hi[e] + 1;
		}
		t->resume.premade[t->resume.npremade++] = (struct premade){ .type = t->resume.view->pipe_paths[i] ? IMG_FD_FIFO : IMG_FD_PIPE,
							      .object = p->ino, .rfd = hi[0], .wfd = hi[1] };
		if (p->capacity > 65536)
			inject_syscall(&root->in, SYS_fcntl, hi[0], F_SETPIPE_SZ, p->capacity, 0, 0, 0);
		if (p->bytes) {
			char path[64];
			snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)root->in.pid, hi[1]);
			int w = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
			ssize_t put = w >= 0 ? write(w, t->resume.view->bytes[i], p->bytes) : -1;
			if (w >= 0)
				close(w);
			if (put != (ssize_t)p->bytes)
				WHY_FAIL("cannot put %u bytes back into a pipe of the program", p->bytes);
		}
	}
	if (premake_socketpairs(t, root, &next, why, whylen) != 0)
		return -1;
	if (shm_premake(t, root, &next, why, whylen) != 0)
		return -1;
	struct fd_premake p = { .t = t, .root = root, .next = next, .why = why, .whylen = whylen };
	return fd_premake_all(&p); /* the kinds that make their own (fdkind.h) */
}

/* A listening socket of the checkpoint, or one made and not connected, made in the first process:
 * bound to its name again (the socket file the killed run left at its path is removed first; a
 * file of another kind there is a refusal), or unnamed if the program had removed its path, and a
 * listener listening with its backlog (socketpairs.h).  An unconnected one without a name is
 * only made. */
static int premake_named(struct tree *t, struct injector *root, const struct tree_sock *s, const uint8_t *name,
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
			WHY_FAIL("%s, where the program listened, is now a file of another kind", shown);
		if (unlink((const char *)name) != 0)
			WHY_FAIL("cannot remove the old socket %s: %s", shown, strerror(errno));
	}
	/* unnamed: an address of the family alone makes the kernel pick an abstract name */
	socklen_t alen = gone || !s->bytes ? (socklen_t)sizeof a.sun_family
					   : (socklen_t)(offsetof(struct sockaddr_un, sun_path) + s->bytes - (name[0] ? 1 : 0));
	long fd = inject_syscall(&root->in, SYS_socket, AF_UNIX, sock_type(s), 0, 0, 0, 0);
	if (fd < 0 || inject_write(&root->in, root->scratch, &a, sizeof a) != 0)
		WHY_FAIL("cannot make the program's socket %s again", shown);
	long rc = bind_it ? inject_syscall(&root->in, SYS_bind, fd, (long)root->scratch, alen, 0, 0, 0) : 0;
	if (rc == 0 && listener)
		rc = inject_syscall(&root->in, SYS_listen, fd, (long)s->peer, 0, 0, 0, 0);
	long hi = rc == 0 ? inject_syscall(&root->in, SYS_fcntl, fd, F_DUPFD, *next, 0, 0, 0) : -1;
	inject_syscall(&root->in, SYS_close, fd, 0, 0, 0, 0, 0);
	if (rc != 0)
		WHY_FAIL("cannot bind or listen on %s again: %s", shown, strerror((int)-rc));
	if (hi < *next)
		WHY_FAIL("cannot make the program's socket %s again (fd numbers)", shown);
	*next = hi + 1;
	t->resume.premade[t->resume.npremade++] = (struct premade){ .type = IMG_FD_SOCKET, .object = s->ino, .rfd = (int)hi, .wfd = (int)hi };
	return 0;
}

/* The socketpairs of the checkpoint, made in the first process like its pipes; the bytes queued
 * at each end are sent again from its peer, so they wait at that end, in order. */
static int premake_socketpairs(struct tree *t, struct injector *root, long *next, char *why, size_t whylen)
{
	struct premade *more = realloc(t->resume.premade, ((size_t)t->resume.npremade + t->resume.view->nsocks + 1) * sizeof *more);
	if (!more)
		WHY_FAIL("out of memory");
	t->resume.premade = more;
	for (uint32_t i = 0; i < t->resume.view->nsocks; i++) {
		const struct tree_sock *s = t->resume.view->socks[i];
		if (fd_premade(t, IMG_FD_SOCKET, s->ino))
			continue; /* made with its peer */
		if (s->flags & (TREE_SOCK_LISTENER | TREE_SOCK_UNCONNECTED)) {
			if (premake_named(t, root, s, t->resume.view->sock_bytes[i], next, why, whylen) != 0)
				return -1;
			continue;
		}
		int32_t fds[2], hi[2];
		if (inject_syscall(&root->in, SYS_socketpair, AF_UNIX, sock_type(s), 0, (long)root->scratch, 0, 0) != 0 ||
		    proc_mem_read(root->in.pid, root->scratch, fds, sizeof fds) != 0)
			WHY_FAIL("cannot make the program's socketpairs again");
		for (int e = 0; e < 2; e++) {
			hi[e] = (int32_t)inject_syscall(&root->in, SYS_fcntl, fds[e], F_DUPFD, *next, 0, 0, 0);
			inject_syscall(&root->in, SYS_close, fds[e], 0, 0, 0, 0, 0);
			if (hi[e] < *next)
				WHY_FAIL("cannot make the program's socketpairs again (fd numbers)");
			*next = hi[e] + 1;
		}
		t->resume.premade[t->resume.npremade++] = (struct premade){ .type = IMG_FD_SOCKET, .object = s->ino, .rfd = hi[0], .wfd = hi[0] };
		if (s->peer) {
			t->resume.premade[t->resume.npremade++] = (struct premade){ .type = IMG_FD_SOCKET, .object = s->peer, .rfd = hi[1], .wfd = hi[1] };
			continue;
		}
		/* its peer was closed: the queued bytes come from the other end, which is closed then */
		if (s->bytes && put_from(root->in.pid, hi[1], t->resume.view->sock_bytes[i], s->bytes) != 0)
			WHY_FAIL("cannot queue %u bytes again at a socket of the program", s->bytes);
		inject_syscall(&root->in, SYS_close, hi[1], 0, 0, 0, 0, 0);
	}
	for (uint32_t i = 0; i < t->resume.view->nsocks; i++) {
		const struct tree_sock *s = t->resume.view->socks[i];
		if (!s->bytes || !s->peer || (s->flags & TREE_SOCK_LISTENER))
			continue;
		const struct premade *pm = fd_premade(t, IMG_FD_SOCKET, s->peer);
		int peer_fd = pm ? pm->rfd : -1;
		int put = peer_fd < 0 ? -1
			  : sock_type(s) == SOCK_STREAM ? put_from(root->in.pid, peer_fd, t->resume.view->sock_bytes[i], s->bytes)
							: put_messages(root->in.pid, peer_fd, t->resume.view->sock_bytes[i], s->bytes);
		if (put != 0)
			WHY_FAIL("cannot queue %u bytes again at a socketpair of the program", s->bytes);
	}
	return 0;
}

/* outhold.c -- output held until its checkpoint commits (outhold.h). */
#include "outhold.h"
#include "procfs.h"
#include "socketpairs.h"
#include "tcppair.h"
#include "stopclock.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define OUT_MAGIC 0x31484f50u /* "POH1" */
#define MAX_TARGETS 1024      /* [1], [2]: our stdout and stderr; then connections held at once */
#define CLASSES 4096          /* sockets whose peer was looked up: a cache by inode */

enum target_kind { T_NONE = 0, T_PIPE, T_TTY, T_SOCKET, T_PLAIN };

struct target {
	int kind;
	dev_t dev;
	ino_t ino;
	int wfd;    /* ours, non-blocking where it can be (a description of its own), or the fd itself */
	int broken; /* the reader is gone: nothing more is held for it */
	int saved;  /* interposed: the run's own fd n, kept here (our fd n is the pipe's writer), or -1 */
	int rfd;    /* interposed: the pipe's reader, or -1 */
	int pipe_size; /* a pipe's capacity (F_GETPIPE_SZ) */
	/* a connection of the program's to a peer outside it (kind T_SOCKET, index 3 on): */
	uint64_t sock_ino; /* its inode; wfd is our copy of it, closed once all it holds is out */
	uint64_t last_end; /* the stream offset after its last held byte */
	int shut_how;      /* a shutdown(how) held behind its bytes: how + 1, or 0 */
};

/* A run of the stream's bytes written to one target: up to stream offset end. */
struct seg {
	uint64_t end;
	uint32_t target;
	uint32_t pad;
};

/* <seq>.out: this header, nsegs segs, then the bytes [from, from + bytes) of the stream. */
struct out_file {
	uint32_t magic, version;
	uint64_t seq, from, bytes;
	uint32_t nsegs, pad;
};

struct outhold {
	struct target t[MAX_TARGETS]; /* [1], [2]: our stdout and stderr; [3..): connections */
	struct { uint64_t ino; int outside; } cls[CLASSES]; /* written by the loop only */
	pthread_mutex_t mu;
	pthread_cond_t more;   /* to the releaser: more is committed, or quit */
	pthread_cond_t taken;  /* to the writers: the releaser took some */
	pthread_t th, reader_th;
	int started, reader_started;
	int quit;              /* to the releaser: release what is committed, then end */
	int reader_quit;       /* to the reader: end, even while waiting for room (not quit: the
				* releaser must not end before the last drain, or its bytes are lost) */
	int holding;           /* outhold_start has run: the mark is the file's, checkpoints cover the stream */
	int wake[2];           /* to the reader: quit */
	uint8_t *buf;          /* the stream's bytes from base on */
	size_t cap;
	uint64_t base, produced, released, commit_mark;
	struct seg *segs;      /* segs[first..nsegs): those ending after released */
	size_t first, nsegs, segs_cap;
	uint64_t staged_seq, staged_mark; /* the cut captured and not committed yet */
	volatile uint64_t *mark; /* <dir>/released, mapped; local_mark before outhold_start */
	uint64_t local_mark;
	const struct tree *tree; /* its enabled is read: checkpointing stopped releases all */
	int warned_full;
	char dir[4200];
};

static int grow(struct outhold *h, size_t more);

/* ------------------------------------------------------------------ which fds are held */

static int kind_of(int fd, struct stat *st)
{
	if (fstat(fd, st) != 0)
		return T_NONE;
	if (S_ISFIFO(st->st_mode))
		return T_PIPE;
	if (S_ISSOCK(st->st_mode))
		return T_SOCKET;
	if (S_ISCHR(st->st_mode) && isatty(fd))
		return T_TTY;
	return T_NONE; /* a file is cut back instead; /dev/null and other devices need nothing */
}

int outhold_holds_own(const struct tree *t, int n)
{
	struct stat st;
	int k = kind_of(n, &st);
	/* an interposed pipe's writes need no stop: only terminals and sockets are held call by call */
	return t->files.on && t->files.external_sync && (k == T_TTY || k == T_SOCKET);
}

/* ------------------------------------------------------------------ writing to a target */

static size_t chunk_of(const struct target *g)
{
	return g->kind == T_TTY ? 2048 : 65536; /* a tty: one pass of its writer */
}

/* One release write of at most chunk_of(g) bytes (to a pipe: PIPE_BUF unless it is empty); the
 * mark is stored first (outhold.h).  The bytes written, or -1 with the target broken (its reader
 * gone).  Waits for room. */
static ssize_t release_write(struct outhold *h, struct target *g, uint64_t at, const uint8_t *p, size_t n)
{
	for (;;) {
		struct pollfd pf = { g->wfd, POLLOUT, 0 };
		if (poll(&pf, 1, -1) < 0 && errno != EINTR)
			return -1;
		if (pf.revents & (POLLERR | POLLNVAL)) {
			g->broken = 1;
			*h->mark = at + n; /* nothing of it can be shown any more: dropped */
			return -1;
		}
		if (g->kind == T_PIPE && n > PIPE_BUF) {
			/* POLLOUT promises room for one page: more goes in whole only into an empty pipe
			 * of at least that size (we are its only writer) */
			int queued = -1;
			if (ioctl(g->wfd, FIONREAD, &queued) != 0 || queued != 0 || (size_t)g->pipe_size < n)
				n = PIPE_BUF;
		}
		*h->mark = at + n;
		ssize_t w = g->kind == T_SOCKET ? send(g->wfd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL) : write(g->wfd, p, n);
		if (w >= 0) {
			if ((size_t)w < n)
				*h->mark = at + (uint64_t)w;
			return w;
		}
		*h->mark = at;
		if (errno == EAGAIN || errno == EINTR)
			continue;
		g->broken = 1;
		*h->mark = at + n;
		return -1;
	}
}

static void add_seg(struct outhold *h, int k)
{
	if (h->nsegs > h->first && h->segs[h->nsegs - 1].target == (uint32_t)k)
		h->segs[h->nsegs - 1].end = h->produced;
	else
		h->segs[h->nsegs++] = (struct seg){ .end = h->produced, .target = (uint32_t)k };
}

static void drop_released(struct outhold *h)
{
	while (h->first < h->nsegs && h->segs[h->first].end <= h->released)
		h->first++;
	if (h->first == h->nsegs)
		h->first = h->nsegs = 0;
	uint64_t gone = h->released - h->base;
	if (gone >= 65536 && gone * 2 >= h->produced - h->base) {
		memmove(h->buf, h->buf + gone, (size_t)(h->produced - h->released));
		h->base = h->released;
	}
}

/* An interposed pipe whose outside reader is gone: the program's writes to it fail from now on
 * (EPIPE), as they would have. */
static void close_interposed(struct target *g)
{
	if (g->rfd >= 0) {
		close(g->rfd);
		g->rfd = -1;
	}
}

static void *releaser(void *arg)
{
	struct outhold *h = arg;
	sigset_t pipe_sig;
	sigemptyset(&pipe_sig);
	sigaddset(&pipe_sig, SIGPIPE); /* a reader gone is EPIPE here, not the end of the supervisor */
	pthread_sigmask(SIG_BLOCK, &pipe_sig, NULL);
	static uint8_t chunk[65536];
	pthread_mutex_lock(&h->mu);
	for (;;) {
		if (h->released >= h->commit_mark) {
			if (h->quit)
				break;
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 50 * 1000 * 1000;
			ts.tv_sec += ts.tv_nsec / 1000000000, ts.tv_nsec %= 1000000000;
			pthread_cond_timedwait(&h->more, &h->mu, &ts);
			if (!h->holding || !__atomic_load_n(&h->tree->enabled, __ATOMIC_RELAXED))
				h->commit_mark = h->produced; /* no checkpoint covers it (not yet, or disable.h) */
			continue;
		}
		const struct seg *s = &h->segs[h->first];
		struct target *g = &h->t[s->target];
		uint64_t at = h->released, upto = s->end < h->commit_mark ? s->end : h->commit_mark;
		size_t n = (size_t)(upto - at);
		if (n > chunk_of(g))
			n = chunk_of(g);
		memcpy(chunk, h->buf + (at - h->base), n);
		pthread_mutex_unlock(&h->mu);
		ssize_t w = g->broken ? -1 : release_write(h, g, at, chunk, n);
		pthread_mutex_lock(&h->mu);
		if (w < 0) { /* drop the target's bytes up to the end of this run of them */
			*h->mark = upto;
			h->released = upto;
			close_interposed(g);
		} else {
			h->released = at + (uint64_t)w;
		}
		if (g->sock_ino && h->released >= g->last_end) {
			/* all it held is out: a shutdown held behind it now, and our copy closed (the
			 * program's own close, if it made one, takes effect here: its end after its bytes) */
			if (g->shut_how)
				shutdown(g->wfd, g->shut_how - 1);
			close(g->wfd);
			*g = (struct target){ .wfd = -1, .saved = -1, .rfd = -1 };
		}
		drop_released(h);
		pthread_cond_broadcast(&h->taken);
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

/* ------------------------------------------------------------------ the files of the hold */

static int out_path(const char *dir, uint64_t seq, char *p, size_t cap)
{
	int n = snprintf(p, cap, "%s/%020" PRIu64 ".out", dir, seq);
	return n > 0 && (size_t)n < cap ? 0 : -1;
}

/* Remove the .out files of cuts outside [keep_from, keep_to]. */
static void drop_files(const char *dir, uint64_t keep_from, uint64_t keep_to)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char *end, p[4400];
		unsigned long long v = strtoull(e->d_name, &end, 10);
		if (end == e->d_name || strcmp(end, ".out") || (v >= keep_from && v <= keep_to))
			continue;
		if (out_path(dir, v, p, sizeof p) == 0)
			unlink(p);
	}
	if (d)
		closedir(d);
}

void outhold_remove_all(const char *dir)
{
	char p[4400];
	drop_files(dir, UINT64_MAX, 0);
	snprintf(p, sizeof p, "%s/released", dir);
	unlink(p);
}

static int write_all(int fd, const void *p, size_t n)
{
	for (const uint8_t *c = p; n;) {
		ssize_t w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		c += w, n -= (size_t)w;
	}
	return 0;
}

/* Read what the interposed pipes hold now (h->mu held). */
static void drain_locked(struct outhold *h)
{
	for (int k = 1; k <= 2; k++) {
		struct target *g = &h->t[k];
		while (g->rfd >= 0) {
			if (grow(h, 65536) != 0)
				break;
			ssize_t r = read(g->rfd, h->buf + (h->produced - h->base), 65536);
			if (r <= 0)
				break;
			h->produced += (uint64_t)r;
			((struct tree *)h->tree)->files.held_bytes += (uint64_t)r; /* under h->mu, like every count of it */
			add_seg(h, k);
		}
	}
}

int outhold_waiting(const struct tree *t)
{
	struct outhold *h = t->files.out;
	if (!h || !h->holding)
		return 0;
	pthread_mutex_lock(&h->mu);
	int waiting = 0;
	/* a pipe's bytes count once its reader took them; the newest segments are the waiting ones */
	for (size_t k = h->nsegs; k > h->first && h->segs[k - 1].end > h->staged_mark; k--) {
		int kind = h->t[h->segs[k - 1].target].kind;
		waiting |= kind == T_SOCKET || kind == T_TTY ? OUTHOLD_WAITS_URGENT : OUTHOLD_WAITS;
	}
	if (h->produced - h->staged_mark > OUTHOLD_BACKLOG) /* the hold's memory and the cut's .out file */
		waiting |= OUTHOLD_WAITS_URGENT;
	pthread_mutex_unlock(&h->mu);
	return waiting;
}

int outhold_cut(struct tree *t, uint64_t seq)
{
	struct outhold *h = t->files.out;
	if (!h || !h->holding)
		return 0;
	char p[4400];
	if (out_path(h->dir, seq, p, sizeof p) != 0)
		return -ENAMETOOLONG;
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	pthread_mutex_lock(&h->mu);
	drain_locked(h); /* everyone is stopped: the pipes hold all that was written before the cut */
	h->staged_seq = seq, h->staged_mark = h->produced;
	struct out_file f = { .magic = OUT_MAGIC, .version = 1, .seq = seq, .from = h->released,
			      .bytes = h->produced - h->released, .nsegs = (uint32_t)(h->nsegs - h->first) };
	int rc = write_all(fd, &f, sizeof f) || write_all(fd, h->segs + h->first, f.nsegs * sizeof(struct seg)) ||
		 write_all(fd, h->buf + (h->released - h->base), (size_t)f.bytes);
	pthread_mutex_unlock(&h->mu);
	rc = close(fd) != 0 || rc ? -EIO : 0;
	return rc;
}

void outhold_committed(struct tree *t, uint64_t seq)
{
	struct outhold *h = t->files.out;
	if (!h || !h->holding)
		return;
	pthread_mutex_lock(&h->mu);
	if (h->staged_seq == seq && h->staged_mark > h->released && getenv("PROSPER_TEST_DIE_HOLDING"))
		kill(0, SIGKILL); /* crash-point test hook (outhold.h): committed, nothing of it shown */
	if (h->staged_seq == seq && h->staged_mark > h->commit_mark)
		h->commit_mark = h->staged_mark;
	pthread_cond_signal(&h->more);
	pthread_mutex_unlock(&h->mu);
	drop_files(h->dir, seq, UINT64_MAX);
}

void outhold_finish(struct tree *t)
{
	struct outhold *h = t->files.out;
	if (!h)
		return;
	if (h->reader_started) {
		if (write(h->wake[1], "q", 1) < 0) {
			/* the pipe is ours and empty: it cannot fail */
		}
		pthread_mutex_lock(&h->mu);
		h->reader_quit = 1; /* a reader waiting for room goes */
		pthread_cond_broadcast(&h->taken);
		pthread_mutex_unlock(&h->mu);
		pthread_join(h->reader_th, NULL);
		h->reader_started = 0;
	}
	pthread_mutex_lock(&h->mu);
	drain_locked(h);
	h->commit_mark = h->produced;
	h->quit = 1;
	pthread_cond_signal(&h->more);
	pthread_mutex_unlock(&h->mu);
	if (h->started)
		pthread_join(h->th, NULL);
	h->started = 0;
	for (int k = 1; k <= 2; k++) /* our own messages from now on go straight out */
		if (h->t[k].saved >= 0) {
			dup2(h->t[k].saved, k);
			close(h->t[k].saved);
			h->t[k].saved = -1;
			close_interposed(&h->t[k]);
		}
}

/* ------------------------------------------------------------------ holding a write */

static int grow(struct outhold *h, size_t more)
{
	size_t used = (size_t)(h->produced - h->base);
	if (used + more > h->cap) {
		size_t cap = h->cap ? h->cap : 65536;
		while (cap < used + more)
			cap *= 2;
		uint8_t *b = realloc(h->buf, cap);
		if (!b)
			return -1;
		h->buf = b, h->cap = cap;
	}
	if (h->nsegs == h->segs_cap) {
		if (h->first) { /* room at the front */
			memmove(h->segs, h->segs + h->first, (h->nsegs - h->first) * sizeof *h->segs);
			h->nsegs -= h->first, h->first = 0;
		} else {
			size_t c = h->segs_cap ? h->segs_cap * 2 : 256;
			struct seg *s = realloc(h->segs, c * sizeof *s);
			if (!s)
				return -1;
			h->segs = s, h->segs_cap = c;
		}
	}
	return 0;
}

/* The program's bytes at the iovecs rv (cnt of them, total bytes at most n; local: in our memory)
 * appended for target k. */
static int append(struct outhold *h, pid_t tid, int k, const struct iovec *rv, int cnt, size_t n, int local)
{
	if (grow(h, n) != 0)
		return -1;
	uint8_t *to = h->buf + (h->produced - h->base);
	size_t done = 0;
	for (int i = 0; i < cnt && done < n; i++) {
		size_t l = rv[i].iov_len < n - done ? rv[i].iov_len : n - done;
		if (local)
			memcpy(to + done, rv[i].iov_base, l);
		else if (l && proc_mem_read(tid, (uint64_t)(uintptr_t)rv[i].iov_base, to + done, l) != 0)
			return -1;
		done += l;
	}
	h->produced += n;
	add_seg(h, k);
	h->t[k].last_end = h->produced;
	return 0;
}

/* Does process pid hold the socket "socket:[ino]" (want)? */
static int holds(pid_t pid, const char *want)
{
	char dir[64];
	snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
	DIR *d = opendir(dir);
	struct dirent *e;
	int found = 0;
	while (d && !found && (e = readdir(d))) {
		char p[600], link[64];
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		ssize_t l = readlink(p, link, sizeof link - 1);
		found = l > 0 && (link[l] = 0, !strcmp(link, want));
	}
	if (d)
		closedir(d);
	return found;
}

/* Is the connection s (our copy of the program's socket of inode ino) one to a peer outside the
 * program?  A stream connection -- TCP, or unix -- whose peer is on another machine, or on this
 * one held by no process of the program's (nor by us: the shim's hello channel): 1; else 0; -1
 * when it cannot be told yet (not connected, or its peer waits in a listener's accept queue, to
 * be accepted by the program or by another): not held now, asked again at the next write. */
static int peer_outside(const struct tree *t, int s, uint64_t ino)
{
	int domain = 0, type = 0;
	socklen_t dl = sizeof domain, tl = sizeof type;
	if (getsockopt(s, SOL_SOCKET, SO_DOMAIN, &domain, &dl) != 0 || getsockopt(s, SOL_SOCKET, SO_TYPE, &type, &tl) != 0 ||
	    type != SOCK_STREAM)
		return 0; /* datagrams keep their bounds: not held */
	uint64_t peer = 0;
	int rc = domain == AF_UNIX ? socketpairs_peer_of(ino, &peer) : tcp_peer_of(s, &peer);
	if (rc == -ENOENT && domain != AF_UNIX)
		return 1; /* on another machine */
	if (rc == -EPROTONOSUPPORT)
		return 0; /* MPTCP: its peer cannot be looked up by address (not held) */
	if (rc != 0 || peer == 0)
		return -1;
	char want[48];
	snprintf(want, sizeof want, "socket:[%" PRIu64 "]", peer);
	if (holds(getpid(), want))
		return 0;
	for (int i = 0; i < t->nprocs; i++)
		if (!t->procs[i]->exited && holds(t->procs[i]->pid, want))
			return 0; /* a pair of the program's own: inside the checkpoint */
	return 1;
}

#define TARGET_SOCKET (-1)

/* The target of fd of thread tid (of process pid), held call by call: 1 or 2 (our stdio),
 * TARGET_SOCKET (a connection to the outside: its inode in *sock; socket_slot gives its target),
 * or 0 (not held). */
static int target_of_call(struct outhold *h, const struct tree *t, pid_t pid, pid_t tid, int fd, struct stat *sock)
{
	char p[64];
	struct stat st;
	snprintf(p, sizeof p, "/proc/%d/fd/%d", (int)tid, fd);
	if (stat(p, &st) != 0)
		return 0;
	for (int k = 1; k <= 2; k++)
		if (h->t[k].kind && h->t[k].saved < 0 && !h->t[k].broken && st.st_dev == h->t[k].dev && st.st_ino == h->t[k].ino)
			return k;
	/* /dev/tty is the controlling terminal: ours, when our stdout or stderr is it */
	if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(5, 0))
		for (int k = 1; k <= 2; k++)
			if (h->t[k].kind == T_TTY && !h->t[k].broken)
				return k;
	if (!S_ISSOCK(st.st_mode))
		return 0;
	size_t c = st.st_ino % CLASSES; /* the cache is the loop's alone */
	if (h->cls[c].ino != st.st_ino) {
		int s = proc_fd_copy(pid, fd);
		if (s < 0)
			return 0;
		int outside = peer_outside(t, s, st.st_ino);
		close(s);
		if (outside < 0)
			return 0;
		h->cls[c].ino = st.st_ino, h->cls[c].outside = outside;
	}
	*sock = st;
	return h->cls[c].outside ? TARGET_SOCKET : 0;
}

/* The target of the connection sock (fd of process pid): the one holding its bytes, or a new one
 * with a copy of it; 0 if none is free.  h->mu held (the releaser frees targets under it); it is
 * let go while the copy is taken. */
static int socket_slot(struct outhold *h, pid_t pid, int fd, const struct stat *sock)
{
	for (int tries = 0; tries < 2; tries++) {
		int free_slot = 0;
		for (int k = 3; k < MAX_TARGETS; k++) {
			if (h->t[k].sock_ino == sock->st_ino)
				return h->t[k].broken ? 0 : k;
			if (!h->t[k].sock_ino && !free_slot)
				free_slot = k;
		}
		if (!free_slot) {
			if (!h->warned_full++)
				fprintf(stderr, "%s: warning: more than %d connections hold output at once: the others' is not held\n",
					sup_command(), MAX_TARGETS - 3);
			return 0;
		}
		if (tries == 0) {
			pthread_mutex_unlock(&h->mu);
			int s = proc_fd_copy(pid, fd);
			pthread_mutex_lock(&h->mu);
			if (s < 0)
				return 0;
			fcntl(s, F_SETFD, FD_CLOEXEC);
			/* the loop alone makes targets: the free one is still free */
			h->t[free_slot] = (struct target){ .kind = T_SOCKET, .ino = sock->st_ino, .dev = sock->st_dev, .wfd = s,
							   .saved = -1, .rfd = -1, .sock_ino = sock->st_ino, .last_end = h->produced };
			return free_slot;
		}
	}
	return 0;
}

/* sendfile(out, in, offset, count) to a held target: its bytes read here from the program's in fd
 * (a copy: it shares the offset), into buf.  The count read, or -1 (the call then runs). */
static ssize_t sendfile_bytes(pid_t pid, pid_t tid, const struct user_regs_struct *r, uint8_t *buf, size_t n)
{
	int in = proc_fd_copy(pid, (int)r->rsi);
	if (in < 0)
		return -1;
	ssize_t got;
	if (r->rdx) { /* from *offset, which moves on; the file's own offset stays */
		int64_t off;
		if (proc_mem_read(tid, r->rdx, &off, sizeof off) != 0 || (got = pread(in, buf, n, off)) < 0) {
			close(in);
			return -1;
		}
		off += got;
		if (proc_mem_write(tid, r->rdx, &off, sizeof off) != 0)
			got = -1;
	} else {
		got = read(in, buf, n);
	}
	close(in);
	return got;
}

int outhold_write(struct tree *t, pid_t pid, pid_t tid, const struct user_regs_struct *r)
{
	struct outhold *h = t->files.out;
	long nr = (long)r->orig_rax;
	if (!h || !h->holding ||
	    (nr != __NR_write && nr != __NR_writev && nr != __NR_sendto && nr != __NR_sendmsg && nr != __NR_sendfile && nr != __NR_shutdown))
		return 0;
	struct stat sock = { 0 };
	int k = target_of_call(h, t, pid, tid, (int)r->rdi, &sock);
	if (!k)
		return 0;
	static struct iovec rv[IOV_MAX];
	static uint8_t file_bytes[65536];
	int cnt = 1, local = 0;
	long result;
	size_t n = 0;
	if (nr == __NR_shutdown) {
		int behind = 0;
		pthread_mutex_lock(&h->mu);
		for (int j = 3; k == TARGET_SOCKET && j < MAX_TARGETS && !behind; j++)
			if (h->t[j].sock_ino == sock.st_ino && h->t[j].last_end > h->released) {
				behind = 1; /* bytes of it still held: it goes out after them */
				h->t[j].shut_how = (int)r->rsi + 1;
			}
		pthread_mutex_unlock(&h->mu);
		if (!behind)
			return 0; /* nothing held before it: it runs now */
		result = 0;
		goto skip;
	}
	if (nr == __NR_write || nr == __NR_sendto) {
		if (nr == __NR_sendto && (r->r8 || (r->r10 & MSG_OOB)))
			return 0; /* to an address, or urgent data: not held */
		rv[0] = (struct iovec){ (void *)(uintptr_t)r->rsi, (size_t)r->rdx };
	} else if (nr == __NR_sendfile) {
		rv[0] = (struct iovec){ file_bytes, 0 }; /* read below, once its target is sure */
		local = 1;
	} else {
		uint64_t iov = r->rsi, iovcnt = r->rdx;
		if (nr == __NR_sendmsg) {
			struct msghdr mh;
			if (proc_mem_read(tid, r->rsi, &mh, sizeof mh) != 0 || mh.msg_name || mh.msg_controllen || (r->rdx & MSG_OOB))
				return 0; /* to an address, with fds or credentials, urgent: not held */
			iov = (uint64_t)(uintptr_t)mh.msg_iov, iovcnt = mh.msg_iovlen;
		}
		cnt = (int)iovcnt;
		if (iovcnt > IOV_MAX || (cnt > 0 && proc_mem_read(tid, iov, rv, (size_t)cnt * sizeof rv[0]) != 0))
			return 0; /* the call fails by itself */
	}
	for (int i = 0; i < cnt; i++) {
		if ((ssize_t)rv[i].iov_len < 0)
			return 0; /* EINVAL by itself */
		n += rv[i].iov_len;
	}
	if (n == 0 && !local)
		return 0;
	if (n > OUTHOLD_MAX_WRITE)
		n = OUTHOLD_MAX_WRITE;
	pthread_mutex_lock(&h->mu);
	if (h->commit_mark - h->released > OUTHOLD_BACKLOG) {
		/* the reader is slow: the program waits for it, as its writes would */
		double t0 = stopclock_now();
		t->files.hold_waits++;
		while (h->commit_mark - h->released > OUTHOLD_BACKLOG)
			pthread_cond_wait(&h->taken, &h->mu);
		t->files.hold_wait_seconds += stopclock_now() - t0;
	}
	if (k == TARGET_SOCKET && !(k = socket_slot(h, pid, (int)r->rdi, &sock))) {
		pthread_mutex_unlock(&h->mu);
		return 0; /* none free, or its peer is gone: the call runs as it is */
	}
	if (nr == __NR_sendfile) { /* the file's bytes taken now: the call does not run after this */
		ssize_t got = h->t[k].broken ? -1
			      : sendfile_bytes(pid, tid, r, file_bytes, r->r10 < sizeof file_bytes ? (size_t)r->r10 : sizeof file_bytes);
		if (got < 0) {
			pthread_mutex_unlock(&h->mu);
			return 0;
		}
		rv[0].iov_len = n = (size_t)got;
	}
	int rc = h->t[k].broken ? -1 : n ? append(h, tid, k, rv, cnt, n, local) : 0;
	if (rc == 0 && !t->enabled) { /* no checkpoint will cover it: out at once, in order */
		h->commit_mark = h->produced;
		pthread_cond_signal(&h->more);
	}
	pthread_mutex_unlock(&h->mu);
	if (rc != 0)
		return 0; /* unreadable: the call runs and fails (EFAULT) by itself */
	result = (long)n;
	t->files.held_writes++;
	t->files.held_bytes += n;
skip:;
	struct user_regs_struct skip = *r;
	skip.orig_rax = (unsigned long)-1; /* the kernel skips the call ... */
	skip.rax = (unsigned long)result;  /* ... and this is its result */
	if (ptrace(PTRACE_SETREGS, tid, 0, &skip) != 0) {
		fprintf(stderr, "%s: warning: a held write of thread %d could not be skipped: %m\n", sup_command(), (int)tid);
		return 0;
	}
	return 1;
}

/* ------------------------------------------------------------------ interposed pipes */

static void *reader(void *arg)
{
	struct outhold *h = arg;
	for (;;) {
		struct pollfd pf[3] = { { h->wake[0], POLLIN, 0 }, { h->t[1].rfd, POLLIN, 0 }, { h->t[2].rfd, POLLIN, 0 } };
		if (poll(pf, 3, -1) < 0 && errno != EINTR)
			break;
		if (pf[0].revents)
			break;
		pthread_mutex_lock(&h->mu);
		while (h->commit_mark - h->released > OUTHOLD_BACKLOG && !h->reader_quit)
			pthread_cond_wait(&h->taken, &h->mu); /* the outside reader is slow: the program waits, as it would */
		drain_locked(h);
		if (!h->holding || !__atomic_load_n(&h->tree->enabled, __ATOMIC_RELAXED)) {
			h->commit_mark = h->produced; /* no checkpoint covers it (not yet, or disable.h) */
			pthread_cond_signal(&h->more);
		}
		pthread_mutex_unlock(&h->mu);
	}
	return NULL;
}

static struct outhold *at_exit_hold; /* released by a refusal's exit too */

static void release_at_exit(void)
{
	if (at_exit_hold)
		outhold_finish((struct tree *)at_exit_hold->tree);
}

static struct outhold *hold_new(const struct tree *t)
{
	struct outhold *h = calloc(1, sizeof *h);
	if (!h)
		return NULL;
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->more, NULL);
	pthread_cond_init(&h->taken, NULL);
	h->mark = &h->local_mark;
	h->tree = t;
	h->wake[0] = h->wake[1] = -1;
	for (int k = 0; k < MAX_TARGETS; k++)
		h->t[k] = (struct target){ .wfd = -1, .saved = -1, .rfd = -1 };
	return h;
}

static int open_target(struct target *g, int n)
{
	struct stat st;
	g->kind = kind_of(n, &st);
	g->dev = st.st_dev, g->ino = st.st_ino;
	g->wfd = -1;
	if (!g->kind)
		return 0;
	if (g->kind != T_SOCKET) {
		/* a description of our own, non-blocking: the shell's stays as it is */
		char p[64];
		snprintf(p, sizeof p, "/proc/self/fd/%d", n);
		g->wfd = open(p, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	}
	if (g->wfd < 0)
		g->wfd = fcntl(n, F_DUPFD_CLOEXEC, 10); /* written after poll says there is room */
	if (g->kind == T_PIPE)
		g->pipe_size = fcntl(g->wfd, F_GETPIPE_SZ);
	return g->wfd < 0 ? -1 : 0;
}

int outhold_interpose(struct tree *t)
{
	struct stat st1, st2;
	int is_pipe1 = kind_of(1, &st1) == T_PIPE, is_pipe2 = kind_of(2, &st2) == T_PIPE;
	if (!t->files.external_sync || (!is_pipe1 && !is_pipe2))
		return 0;
	struct outhold *h = hold_new(t);
	if (!h || pipe2(h->wake, O_CLOEXEC) != 0)
		return -1;
	int same = is_pipe1 && is_pipe2 && st1.st_dev == st2.st_dev && st1.st_ino == st2.st_ino;
	for (int k = 1; k <= 2; k++) {
		if (!(k == 1 ? is_pipe1 : is_pipe2))
			continue;
		struct target *g = &h->t[k];
		g->saved = fcntl(k, F_DUPFD_CLOEXEC, 10);
		if (g->saved < 0 || open_target(g, g->saved) != 0)
			return -1;
		if (k == 2 && same) { /* 2>&1: one pipe for both, their order kept */
			if (dup2(1, 2) < 0)
				return -1;
			continue;
		}
		int p[2];
		if (pipe2(p, O_CLOEXEC) != 0)
			return -1;
		fcntl(p[0], F_SETFL, O_NONBLOCK);
		fcntl(p[1], F_SETPIPE_SZ, 1 << 20); /* the program seldom waits for the reader thread */
		if (dup2(p[1], k) < 0) /* without O_CLOEXEC: the program inherits it as it did the run's */
			return -1;
		close(p[1]);
		g->rfd = p[0];
	}
	t->files.out = h;
	at_exit_hold = h;
	atexit(release_at_exit);
	if (pthread_create(&h->reader_th, NULL, reader, h) != 0)
		return -1;
	h->reader_started = 1;
	if (pthread_create(&h->th, NULL, releaser, h) != 0)
		return -1;
	h->started = 1;
	return 0;
}

/* ------------------------------------------------------------------ start */

/* The stream renumbered to go on at offset at (h->mu held). */
static void renumber(struct outhold *h, uint64_t at)
{
	uint64_t d = at - h->released;
	h->base += d, h->produced += d, h->released += d, h->commit_mark += d;
	for (size_t i = h->first; i < h->nsegs; i++)
		h->segs[i].end += d;
}

/* The bytes the killed run held at cut seq and had not released, written to the run's own fd 1/2
 * now; the stream goes on after them.  h->mu held, the releaser idle.  0, or -1 with why. */
static int release_checkpoint(struct tree *t, struct outhold *h, uint64_t seq, char *why, size_t whylen)
{
	char p[4400];
	uint64_t mark = *h->mark;
	renumber(h, mark);
	if (out_path(h->dir, seq, p, sizeof p) != 0)
		return 0;
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0; /* the run held nothing (its output was not a pipe or terminal, or holding was off) */
	struct out_file f;
	struct stat st;
	int ok = pread(fd, &f, sizeof f, 0) == (ssize_t)sizeof f && f.magic == OUT_MAGIC && f.version == 1 && f.seq == seq &&
		 fstat(fd, &st) == 0 && f.nsegs <= (1u << 24) && f.bytes <= (1ull << 36) &&
		 (uint64_t)st.st_size == sizeof f + f.nsegs * sizeof(struct seg) + f.bytes;
	struct seg *segs = ok ? malloc(f.nsegs * sizeof *segs + 1) : NULL;
	uint8_t *data = ok ? malloc(f.bytes + 1) : NULL;
	ok = ok && segs && data && pread(fd, segs, f.nsegs * sizeof *segs, sizeof f) == (ssize_t)(f.nsegs * sizeof *segs) &&
	     pread(fd, data, f.bytes, (off_t)(sizeof f + f.nsegs * sizeof *segs)) == (ssize_t)f.bytes;
	close(fd);
	if (!ok) {
		free(segs), free(data);
		/* after a power cut (its readers are gone with it) or a damaged file: said, not refused */
		fprintf(stderr, "%s: warning: the output held at the checkpoint (%s) cannot be read; it is not shown\n", sup_command(), p);
		return 0;
	}
	uint64_t from = mark > f.from ? mark : f.from, end = f.from + f.bytes;
	if (from > end) {
		/* the killed run showed output no checkpoint it committed covers: checkpointing had
		 * stopped, or the program ended by a signal (all it wrote is shown then) -- the resumed
		 * program writes it again */
		fprintf(stderr, "%s: warning: %" PRIu64 " bytes of output were shown after this checkpoint (checkpointing had "
			"stopped, or the program ended by a signal); the resumed program shows them again\n", sup_command(), mark - end);
		free(segs), free(data);
		*h->mark = end;
		renumber(h, end);
		return 0;
	}
	struct target plain[3];
	for (int k = 1; k <= 2; k++) {
		plain[k] = h->t[k];
		if (!plain[k].kind) { /* this resume's stdio is a file (or a device): written to as it is */
			plain[k].wfd = fcntl(k, F_DUPFD_CLOEXEC, 10);
			plain[k].kind = T_PLAIN;
		}
	}
	uint64_t at = from;
	for (uint32_t i = 0; i < f.nsegs && at < end; i++) {
		if (segs[i].target != 1 && segs[i].target != 2) {
			/* a connection's: it ended with the killed run (its peer saw it reset, no reply) */
			if (segs[i].end > at)
				at = segs[i].end < end ? segs[i].end : end;
			*h->mark = at > *h->mark ? at : *h->mark;
			continue;
		}
		struct target *g = &plain[segs[i].target];
		while (at < segs[i].end && at < end) {
			size_t n = (size_t)(segs[i].end - at);
			if (n > chunk_of(g))
				n = chunk_of(g);
			ssize_t w = g->broken || g->wfd < 0 ? -1 : release_write(h, g, at, data + (at - f.from), n);
			if (w < 0) {
				*h->mark = segs[i].end;
				at = segs[i].end;
				break;
			}
			at += (uint64_t)w;
			t->files.released_at_resume += (uint64_t)w;
		}
	}
	for (int k = 1; k <= 2; k++)
		if (plain[k].kind == T_PLAIN && plain[k].wfd >= 0)
			close(plain[k].wfd);
	*h->mark = end;
	renumber(h, end); /* what we said meanwhile follows */
	free(segs), free(data);
	return 0;
}

int outhold_start(struct tree *t, const char *dir, uint64_t seq, char *why, size_t whylen)
{
	struct outhold *h = t->files.out;
	if (!h && !(h = hold_new(t))) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	snprintf(h->dir, sizeof h->dir, "%s", dir);
	char p[4400];
	snprintf(p, sizeof p, "%s/released", dir);
	if (!seq)
		outhold_remove_all(dir);
	int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	void *m = fd >= 0 && ftruncate(fd, sizeof(uint64_t)) == 0
			  ? mmap(NULL, sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
	if (fd >= 0)
		close(fd);
	if (m == MAP_FAILED) {
		snprintf(why, whylen, "cannot keep the released output's mark in %s: %s", p, strerror(errno));
		return -1;
	}
	int hold = t->files.on && t->files.external_sync;
	for (int k = 1; k <= 2; k++)
		if (hold && h->t[k].saved < 0 && outhold_holds_own(t, k) && open_target(&h->t[k], k) != 0) {
			snprintf(why, whylen, "cannot write to fd %d: %s", k, strerror(errno));
			return -1;
		}
	/* Until now what we said went out at once: wait for the releaser to be idle, and switch to
	 * holding with the lock held (the reader cannot add meanwhile). */
	pthread_mutex_lock(&h->mu);
	while (h->started && h->released < h->commit_mark)
		pthread_cond_wait(&h->taken, &h->mu);
	if (!seq)
		*(volatile uint64_t *)m = h->released;
	h->mark = m;
	int rc = 0;
	if (seq) {
		drop_files(dir, seq, seq); /* later cuts never committed */
		rc = release_checkpoint(t, h, seq, why, whylen);
	}
	h->holding = hold && !rc;
	pthread_mutex_unlock(&h->mu);
	if (rc)
		return -1;
	if (!hold) {
		drop_files(dir, UINT64_MAX, 0);
		if (h != t->files.out) {
			munmap(m, sizeof(uint64_t));
			free(h);
		}
		return 0; /* nothing of ours to hold */
	}
	if (!h->started) {
		if (pthread_create(&h->th, NULL, releaser, h) != 0) {
			snprintf(why, whylen, "cannot start the output releaser");
			return -1;
		}
		h->started = 1;
	}
	t->files.out = h;
	return 0;
}

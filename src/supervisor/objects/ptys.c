/* ptys.c -- pseudo-terminals the program made for itself (ptys.h). */
#include "ptys.h"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "procfs.h"
#include "sup.h"
#include "tree_fds.h"

#define PTY_SLAVE_MAJOR 136
#define OPOST_BIT 0000001 /* c_oflag's OPOST (asm/termbits.h) */
/* The most a master can hold: its line discipline's buffer and the kernel's flip buffers (64 KiB) */
#define PTY_DRAIN_MAX (96u << 10)

const char *pty_unkept_why(int unkept)
{
	static const char *const why[PTY_NUNKEPT] = {
		[PTY_KEPT] = "kept",
		[PTY_CTTY] = "it is the controlling terminal of a process of the program",
		[PTY_INPUT] = "input written into it was not read yet",
		[PTY_PACKET] = "it is in packet mode and bytes waited at it",
		[PTY_NO_SLAVE] = "bytes waited at it and the program held no slave to keep them through",
		[PTY_UNREAD] = "the checkpoint could not read it",
	};
	return unkept >= 0 && unkept < PTY_NUNKEPT ? why[unkept] : "unknown";
}

int pty_is_master_path(const char *path)
{
	return !strcmp(path, "/dev/ptmx") || !strcmp(path, "/dev/pts/ptmx");
}

int pty_slave_index(const char *path)
{
	unsigned n;
	int end = 0;
	return sscanf(path, "/dev/pts/%u%n", &n, &end) == 1 && !path[end] && n < (1u << 20) ? (int)n : -1;
}

/* N of the terminal whose master process pid holds at fd (its fdinfo's tty-index), or -1. */
static int master_index(pid_t pid, int fd)
{
	char path[64], line[128];
	snprintf(path, sizeof path, "/proc/%d/fdinfo/%d", (int)pid, fd);
	FILE *f = fopen(path, "re");
	int index = -1;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "tty-index: %d", &index) == 1)
			break;
	if (f)
		fclose(f);
	return index;
}

/* The slave terminal a process of the program has as its controlling terminal: N, or -1. */
static int ctty_index(pid_t pid)
{
	int nr = proc_tty_nr(pid);
	return nr > 0 && (int)major((dev_t)nr) == PTY_SLAVE_MAJOR ? (int)minor((dev_t)nr) : -1;
}

/* Every byte that waits at master m read out into p->data: 0, or -EAGAIN (more than
 * PTY_DATA_MAX: what was read is in p->data all the same, to be written back), or -errno.
 * poll() first, since the fd may be a blocking one; it also moves what the kernel still holds
 * in its flip buffers into the queue. */
static int drain(int m, struct pty_cut *p)
{
	p->data = malloc(PTY_DRAIN_MAX);
	if (!p->data)
		return -ENOMEM;
	p->len = 0;
	for (;;) {
		struct pollfd pf = { .fd = m, .events = POLLIN };
		if (poll(&pf, 1, 0) != 1 || !(pf.revents & POLLIN) || p->len == PTY_DRAIN_MAX)
			break;
		ssize_t got = read(m, p->data + p->len, PTY_DRAIN_MAX - p->len);
		if (got <= 0) /* EIO: every slave closed; EAGAIN: nothing after all */
			break;
		p->len += (uint32_t)got;
	}
	return p->len > PTY_DATA_MAX ? -EAGAIN : 0;
}

/* p->data written back into slave s, output processing off, s's flags as they were after.
 * 0 or -errno: bytes the program would then miss, so the cut fails. */
static int put_back(int s, const struct pty_cut *p)
{
	struct pty_termios raw = p->tio;
	raw.oflag &= ~(uint32_t)OPOST_BIT;
	int fl = fcntl(s, F_GETFL);
	if (fl < 0 || fcntl(s, F_SETFL, fl | O_NONBLOCK) != 0)
		return -errno;
	int rc = (p->tio.oflag & OPOST_BIT) && ioctl(s, TCSETS, &raw) != 0 ? -errno : 0;
	for (uint32_t done = 0, waits = 0; !rc && done < p->len;) {
		ssize_t put = write(s, p->data + done, p->len - done);
		if (put > 0) {
			done += (uint32_t)put;
		} else if (put < 0 && errno == EAGAIN && waits++ < 100) {
			struct pollfd pf = { .fd = s, .events = POLLOUT };
			poll(&pf, 1, 10);
		} else {
			rc = put < 0 ? -errno : -EIO;
		}
	}
	if ((p->tio.oflag & OPOST_BIT) && ioctl(s, TCSETS, &p->tio) != 0 && !rc)
		rc = -errno;
	if (fcntl(s, F_SETFL, fl) != 0 && !rc)
		rc = -errno;
	return rc;
}

/* p's settings read from master copy m; its bytes kept through the slave's copy when one is
 * held.  0, -EAGAIN, or -errno when bytes read out could not be given back (the cut fails); a
 * terminal that cannot be read is not kept (p->unkept), never a failed cut. */
static int read_one(struct pty_cut *p, int m, const int *cttys, int ncttys)
{
	int locked = 0, packet = 0, inq = 0, waiting = 0;
	struct winsize ws;
	if (ioctl(m, TCGETS, &p->tio) != 0 || ioctl(m, TIOCGWINSZ, &ws) != 0 || ioctl(m, TIOCGPTLCK, &locked) != 0 ||
	    ioctl(m, TIOCGPKT, &packet) != 0 || ioctl(m, FIONREAD, &waiting) != 0) {
		p->unkept = PTY_UNREAD;
		return 0;
	}
	p->ws = (struct pty_winsize){ ws.ws_row, ws.ws_col, ws.ws_xpixel, ws.ws_ypixel };
	p->locked = !!locked, p->packet = !!packet;
	for (int i = 0; i < ncttys; i++)
		if (cttys[i] == p->index)
			p->unkept = PTY_CTTY;
	int s = p->slave_pid ? proc_fd_copy(p->slave_pid, p->slave_fd) : -1;
	if (s < 0) {
		if (waiting && !p->unkept)
			p->unkept = p->slave_pid ? PTY_UNREAD : PTY_NO_SLAVE;
		return 0;
	}
	if (ioctl(s, FIONREAD, &inq) != 0 || inq) {
		p->unkept = PTY_INPUT;
	} else if (p->packet && waiting) {
		p->unkept = PTY_PACKET;
	}
	int rc = 0;
	if (!p->packet) {
		int drained = drain(m, p);
		rc = p->len ? put_back(s, p) : 0;
		if (rc)
			fprintf(stderr, "prosper: the checkpoint could not give back %u bytes of terminal /dev/pts/%d: %s\n",
				p->len, p->index, strerror(-rc));
		else
			rc = drained;
	}
	close(s);
	return rc;
}

static void forget(struct tree *t)
{
	for (int i = 0; i < t->cut.nptys; i++)
		free(t->cut.ptys[i].data);
	t->cut.nptys = 0;
}

void ptys_release(struct tree *t)
{
	forget(t);
	free(t->cut.ptys);
	t->cut.ptys = NULL, t->cut.ptys_cap = 0;
}

static struct pty_cut *find(struct tree *t, int index)
{
	for (int i = 0; i < t->cut.nptys; i++)
		if (t->cut.ptys[i].index == index)
			return &t->cut.ptys[i];
	return NULL;
}

int ptys_scan(struct tree *t)
{
	forget(t);
	/* the masters first: a slave is the program's own only when its master is */
	for (int i = 0; i < t->nprocs; i++) {
		int nf;
		const struct fd_info *fds = t->procs[i]->exited ? NULL : tree_proc_fds(t->procs[i], &nf);
		for (int j = 0; fds && j < nf; j++) {
			int index = pty_is_master_path(fds[j].path) ? master_index(t->procs[i]->pid, fds[j].fd) : -1;
			if (index < 0 || find(t, index))
				continue;
			if (t->cut.nptys == t->cut.ptys_cap) {
				int cap = t->cut.ptys_cap ? 2 * t->cut.ptys_cap : 8;
				struct pty_cut *more = realloc(t->cut.ptys, (size_t)cap * sizeof *more);
				if (!more)
					return -ENOMEM;
				t->cut.ptys = more, t->cut.ptys_cap = cap;
			}
			t->cut.ptys[t->cut.nptys++] = (struct pty_cut){ .index = index, .master_pid = t->procs[i]->pid,
									.master_fd = fds[j].fd };
		}
	}
	if (!t->cut.nptys)
		return 0;
	int cttys[64], ncttys = 0;
	for (int i = 0; i < t->nprocs; i++) {
		int nf;
		const struct fd_info *fds = t->procs[i]->exited ? NULL : tree_proc_fds(t->procs[i], &nf);
		for (int j = 0; fds && j < nf; j++) {
			struct pty_cut *p = find(t, pty_slave_index(fds[j].path));
			if (p && !p->slave_pid)
				p->slave_pid = t->procs[i]->pid, p->slave_fd = fds[j].fd;
		}
		int c = t->procs[i]->exited ? -1 : ctty_index(t->procs[i]->pid);
		if (c >= 0 && ncttys < (int)(sizeof cttys / sizeof cttys[0]))
			cttys[ncttys++] = c;
	}
	int rc = 0;
	for (int i = 0; i < t->cut.nptys; i++) {
		struct pty_cut *p = &t->cut.ptys[i];
		int m = proc_fd_copy(p->master_pid, p->master_fd);
		int r = m >= 0 ? read_one(p, m, cttys, ncttys) : m;
		if (m >= 0)
			close(m);
		if (r && (!rc || rc == -EAGAIN)) /* every terminal's bytes go back, whatever the others */
			rc = r;
	}
	return rc;
}

const struct pty_cut *ptys_of_fd(const struct tree *t, pid_t pid, int fd, const char *path, int *master)
{
	*master = pty_is_master_path(path);
	int index = *master ? master_index(pid, fd) : pty_slave_index(path);
	for (int i = 0; index >= 0 && i < t->cut.nptys; i++)
		if (t->cut.ptys[i].index == index)
			return &t->cut.ptys[i];
	return NULL;
}

/* test_fdkind.c -- the table of fd kinds (fdkind.h): a real fd of every kind, held by this test
 * process, is claimed by its kind and recorded with the kind's fields; the records decode and
 * pass the resume's check; every damaged form of a record is refused (by img_decode or by its
 * kind's check), never taken. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/inotify.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <netinet/tcp.h>
#include "fdkind.h"
#include "tree_image.h"
#include "sharedmem.h"
#include "ptys.h"
#include "socketpairs.h"
#include "sup.h"

static int failures;
#define MUST(c) do { if (!(c)) { fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); exit(1); } } while (0)
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); failures++; } } while (0)

/* An eventfd's id, as /proc shows it. */
static uint64_t eventfd_id(int fd)
{
	char p[64], line[128];
	unsigned long long id = ~0ull;
	snprintf(p, sizeof p, "/proc/self/fdinfo/%d", fd);
	FILE *f = fopen(p, "re");
	MUST(f);
	while (fgets(line, sizeof line, f))
		sscanf(line, "eventfd-id: %llu", &id);
	fclose(f);
	MUST(id != ~0ull);
	return id;
}

static uint64_t ino_of(int fd)
{
	struct stat st;
	MUST(fstat(fd, &st) == 0);
	return (uint64_t)st.st_ino;
}

/* A blob of one process holding the n records (their strings in *strings, which is consumed). */
static struct img_buf blob_of(const struct img_fd *fds, uint32_t n, struct img_buf *strings)
{
	struct img_hdr h = { .magic = IMG_MAGIC, .version = IMG_VERSION, .nfds = n, .argc = 1 };
	h.exe_str = img_str(strings, "/bin/true");
	h.args_str = img_str(strings, "true");
	h.cwd_str = h.launch_cwd_str = h.kernel_str = IMG_NONE;
	h.strings_bytes = (uint32_t)strings->len;
	h.total_bytes = (uint32_t)(sizeof h + n * sizeof *fds + strings->len);
	struct img_buf b = { 0 };
	MUST(img_buf_put(&b, &h, sizeof h) == 0 && img_buf_put(&b, fds, n * sizeof *fds) == 0 &&
	     img_buf_put(&b, strings->p, strings->len) == 0);
	free(strings->p);
	*strings = (struct img_buf){ 0 };
	return b;
}

/* The refusal fd_check gives one record e (strings: its string table, copied). */
static enum refusal check_one(struct img_fd e, const struct img_buf *strings, const char **decode_why)
{
	struct img_buf s = { 0 };
	MUST(img_buf_put(&s, strings->p, strings->len) == 0);
	struct img_buf b = blob_of(&e, 1, &s);
	struct img im;
	char why[300] = "";
	enum refusal r;
	*decode_why = NULL;
	if (img_decode(b.p, b.len, &im, decode_why) != 0)
		r = REFUSAL_COUNT; /* refused before any kind saw it */
	else
		r = fd_check(&im, NULL, why, sizeof why);
	if (r && r != REFUSAL_COUNT && !why[0])
		CHECK(!"a refusal without its reason");
	free(b.p);
	return r;
}

int main(void)
{
	char dir[] = "/tmp/prosper-fdkind-XXXXXX";
	MUST(mkdtemp(dir));
	char file[300], fifo[300], shm[300];
	snprintf(file, sizeof file, "%s/data", dir);
	snprintf(fifo, sizeof fifo, "%s/q.fifo", dir);
	snprintf(shm, sizeof shm, "/dev/shm/prosper-fdkind-%d", (int)getpid());

	/* one fd of every kind */
	int f_file = open(file, O_RDWR | O_CREAT | O_EXCL, 0600);
	MUST(f_file >= 0 && write(f_file, "0123456789", 10) == 10);
	int f_dev = open("/dev/null", O_WRONLY);
	int f_dir = open(dir, O_RDONLY | O_DIRECTORY);
	int f_pipe[2];
	MUST(pipe(f_pipe) == 0);
	MUST(mkfifo(fifo, 0600) == 0);
	int f_fifo = open(fifo, O_RDWR | O_NONBLOCK);
	int f_sock[2];
	MUST(socketpair(AF_UNIX, SOCK_STREAM, 0, f_sock) == 0);
	int f_ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 0x1234 };
	MUST(f_ep >= 0 && epoll_ctl(f_ep, EPOLL_CTL_ADD, f_pipe[0], &ev) == 0);
	int f_event = eventfd(5, EFD_SEMAPHORE);
	int f_event_dup = dup(f_event);
	int f_inotify = inotify_init1(0);
	char spaced[320];
	snprintf(spaced, sizeof spaced, "%s/a b", dir);
	MUST(mkdir(spaced, 0700) == 0 && f_inotify >= 0 && inotify_add_watch(f_inotify, dir, IN_CREATE) == 1 &&
	     inotify_add_watch(f_inotify, spaced, IN_DELETE | IN_ONESHOT) == 2);
	char inotify_rec[700]; /* in wd order; opening a handle needs root: else the unresolved record */
	if (geteuid() == 0)
		snprintf(inotify_rec, sizeof inotify_rec, "2 1 100 %zu %s 2 80000200 %zu %s", strlen(dir), dir, strlen(spaced),
			 spaced);
	else
		snprintf(inotify_rec, sizeof inotify_rec, "?");
	sigset_t usr;
	sigemptyset(&usr);
	sigaddset(&usr, SIGUSR1);
	sigaddset(&usr, SIGUSR2);
	int f_signal = signalfd(-1, &usr, SFD_NONBLOCK);
	/* a one-shot timer that expired unread (its record is exact), and a periodic one armed */
	int f_timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
	struct itimerspec once = { { 0, 0 }, { 0, 1 } }, periodic = { { 2, 500 }, { 100, 0 } };
	MUST(f_timer >= 0 && timerfd_settime(f_timer, 0, &once, NULL) == 0);
	struct timespec pause = { 0, 2000000 };
	nanosleep(&pause, NULL);
	int f_timer_armed = timerfd_create(CLOCK_BOOTTIME, 0);
	MUST(f_timer_armed >= 0 && timerfd_settime(f_timer_armed, 0, &periodic, NULL) == 0);
	uint8_t ring_params[120] = { 0 }; /* struct io_uring_params, zeroed: the kernel fills it */
	int f_ring = (int)syscall(SYS_io_uring_setup, 4, ring_params);
	MUST(f_ring >= 0);
	/* TCP and UDP: a listener, a connection to it, a UDP socket bound and connected (IPv6) */
	int one = 1;
	struct sockaddr_in lo = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t lolen = sizeof lo;
	int f_listen = socket(AF_INET, SOCK_STREAM, 0);
	MUST(f_listen >= 0 && setsockopt(f_listen, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0 &&
	     bind(f_listen, (struct sockaddr *)&lo, sizeof lo) == 0 && listen(f_listen, 7) == 0 &&
	     getsockname(f_listen, (struct sockaddr *)&lo, &lolen) == 0);
	int f_conn = socket(AF_INET, SOCK_STREAM, 0);
	MUST(f_conn >= 0 && setsockopt(f_conn, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0 &&
	     connect(f_conn, (struct sockaddr *)&lo, sizeof lo) == 0);
	struct sockaddr_in6 lo6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT }, peer6 = lo6;
	socklen_t lo6len = sizeof lo6;
	peer6.sin6_port = htons(9);
	int f_udp = socket(AF_INET6, SOCK_DGRAM, 0);
	MUST(f_udp >= 0 && setsockopt(f_udp, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) == 0 &&
	     bind(f_udp, (struct sockaddr *)&lo6, sizeof lo6) == 0 && connect(f_udp, (struct sockaddr *)&peer6, sizeof peer6) == 0 &&
	     getsockname(f_udp, (struct sockaddr *)&lo6, &lo6len) == 0);
	/* a connection that ended, its fd still open: the server closed, the client shut its side */
	int f_ended = socket(AF_INET, SOCK_STREAM, 0);
	MUST(f_ended >= 0 && connect(f_ended, (struct sockaddr *)&lo, sizeof lo) == 0);
	int f_fin = socket(AF_INET, SOCK_STREAM, 0); /* its server wrote "hi" and closed: CLOSE_WAIT */
	MUST(f_fin >= 0 && connect(f_fin, (struct sockaddr *)&lo, sizeof lo) == 0);
	int serving = accept(f_listen, NULL, NULL); /* f_conn's other end, kept open */
	int served = accept(f_listen, NULL, NULL);  /* f_ended's, closed */
	int answered = accept(f_listen, NULL, NULL); /* f_fin's */
	MUST(answered >= 0 && write(answered, "hi", 2) == 2 && close(answered) == 0);
	struct sockaddr_in conn_at;
	socklen_t conn_len = sizeof conn_at;
	MUST(getsockname(f_conn, (struct sockaddr *)&conn_at, &conn_len) == 0);
	char eof;
	MUST(serving >= 0 && served >= 0 && close(served) == 0 && read(f_ended, &eof, 1) == 0 &&
	     shutdown(f_ended, SHUT_WR) == 0);
	struct timespec settle = { 0, 20000000 }; /* the last ACK over loopback */
	nanosleep(&settle, NULL);
	char listen_rec[96], udp_rec[96], conn_rec[96];
	/* the connecting end counts its SYN among the bytes acknowledged (fd_inet.c: pair_peer) */
	snprintf(conn_rec, sizeof conn_rec, "2 1 6 C 0 8 127.0.0.1 %u 127.0.0.1 %u 1 0 -", ntohs(conn_at.sin_port),
		 ntohs(lo.sin_port));
	snprintf(listen_rec, sizeof listen_rec, "2 1 6 L 7 1 127.0.0.1 %u - 0", ntohs(lo.sin_port));
	snprintf(udp_rec, sizeof udp_rec, "10 2 17 B 0 4 ::1 %u ::1 9", ntohs(lo6.sin6_port));
	int f_shm = open(shm, O_RDWR | O_CREAT | O_EXCL, 0600);
	MUST(f_dev >= 0 && f_dir >= 0 && f_fifo >= 0 && f_event >= 0 && f_event_dup >= 0 && f_inotify >= 0 && f_signal >= 0 && f_shm >= 0 && ftruncate(f_shm, 4096) == 0 &&
	     unlink(shm) == 0);

	/* a pseudo-terminal of its own: bytes its slave wrote wait at the master (ONLCR made "\n"
	 * "\r\n" on the way: a cut must give them back as they are) */
	int f_ptm = posix_openpt(O_RDWR | O_NOCTTY);
	MUST(f_ptm >= 0 && grantpt(f_ptm) == 0 && unlockpt(f_ptm) == 0);
	int pty_index = -1;
	MUST(ioctl(f_ptm, TIOCGPTN, &pty_index) == 0);
	int f_pts = open(ptsname(f_ptm), O_RDWR | O_NOCTTY);
	struct winsize pty_ws = { .ws_row = 33, .ws_col = 101 };
	MUST(f_pts >= 0 && ioctl(f_pts, TIOCSWINSZ, &pty_ws) == 0 && write(f_pts, "ab\ncd", 5) == 5);
	struct pty_termios pty_tio;
	MUST(ioctl(f_ptm, TCGETS, &pty_tio) == 0);
	char pty_rec[256];
	{
		int k = snprintf(pty_rec, sizeof pty_rec, "M 0 0 %x %x %x %x %u ", pty_tio.iflag, pty_tio.oflag, pty_tio.cflag,
				 pty_tio.lflag, pty_tio.line);
		for (size_t i = 0; i < sizeof pty_tio.cc; i++)
			k += snprintf(pty_rec + k, sizeof pty_rec - (size_t)k, "%02x", pty_tio.cc[i]);
		snprintf(pty_rec + k, sizeof pty_rec - (size_t)k, " 33 101 0 0 61620d0a6364");
	}

	/* a process of a tree that keeps the socketpair (socketpairs.h) and inherited no pipe */
	struct tree t = { 0 };
	snprintf(t.pool_path, sizeof t.pool_path, "%s/no-pool", dir);
	struct sock_end kept = { .ino = ino_of(f_sock[0]) };
	t.cut.socks = &kept, t.cut.nsocks = 1;
	uint64_t pair_end = ino_of(f_conn); /* the cut found f_conn's peer (serving) is the program's */
	t.cut.tcp_kept = &pair_end, t.cut.ntcp_kept = 1;
	struct sup s = { .tree = &t, .pid = getpid() };
	s.track.uffd = -1;
	s.cut.fds = calloc(MAX_FDS, sizeof *s.cut.fds);
	MUST(s.cut.fds);
	shm_begin(&t);
	int n = 0;
	MUST(proc_fds(getpid(), s.cut.fds, MAX_FDS, &n) == 0);
	struct sup *procs[] = { &s };
	t.procs = procs, t.nprocs = 1;
	CHECK(ptys_scan(&t) == 0 && t.cut.nptys == 1 && t.cut.ptys[0].index == pty_index && t.cut.ptys[0].len == 6 &&
	      !t.cut.ptys[0].unkept);

	struct { int fd; uint32_t type; uint64_t object; const char *payload; } want[] = {
		{ f_file, IMG_FD_FILE, 0, NULL },
		{ f_dev, IMG_FD_DEVICE, 0, NULL },
		{ f_dir, IMG_FD_DIR, 0, NULL },
		{ f_pipe[0], IMG_FD_PIPE, ino_of(f_pipe[0]), NULL },
		{ f_pipe[1], IMG_FD_PIPE, ino_of(f_pipe[1]), NULL },
		{ f_fifo, IMG_FD_FIFO, ino_of(f_fifo), NULL },
		{ f_sock[0], IMG_FD_SOCKET, ino_of(f_sock[0]), NULL },
		{ f_sock[1], IMG_FD_UNIX_GONE, ino_of(f_sock[1]), NULL }, /* an end the cut did not keep: comes back ended */
		{ f_ep, IMG_FD_EPOLL, 0, NULL },
		{ f_event, IMG_FD_EVENTFD, 0, "5 1" },       /* object: its id + 1, below */
		{ f_event_dup, IMG_FD_EVENTFD, 0, "5 1" },
		{ f_inotify, IMG_FD_INOTIFY, 0, inotify_rec },
		{ f_signal, IMG_FD_SIGNALFD, 0, "a00" },       /* SIGUSR1 and SIGUSR2: bits 9 and 11 */
		{ f_shm, IMG_FD_SHM, ino_of(f_shm), NULL },
		{ f_timer, IMG_FD_TIMERFD, 0, "1 0 1 0 0 0 0" }, /* monotonic, one expiration unread, disarmed */
		{ f_timer_armed, IMG_FD_TIMERFD, 0, NULL },       /* its time left: checked below */
		{ f_listen, IMG_FD_INET, ino_of(f_listen), listen_rec }, /* its backlog and SO_REUSEADDR */
		{ f_conn, IMG_FD_INET, ino_of(f_conn), conn_rec }, /* read whole: both addresses, its stream */
		{ f_fin, IMG_FD_INET, ino_of(f_fin), "2 1 6 F 0 0 - 0 - 0 6869" }, /* its unread bytes, then the end */
		{ f_udp, IMG_FD_INET, ino_of(f_udp), udp_rec },           /* IPV6_V6ONLY, its peer */
		{ f_ended, IMG_FD_INET, ino_of(f_ended), "2 1 6 E 0 0 - 0 - 0" }, /* not bound again */
		{ f_ptm, IMG_FD_PTY, 2 * ((uint64_t)pty_index + 1), pty_rec }, /* its settings and bytes */
		{ f_pts, IMG_FD_PTY, 2 * ((uint64_t)pty_index + 1) + 1, "S" },
		{ f_ring, IMG_FD_IOURING, 0, NULL },              /* not kept: its resume refused */
	};
	char watch[64];
	snprintf(watch, sizeof watch, " %d:19:1234", f_pipe[0]); /* the kernel adds EPOLLERR and EPOLLHUP */
	want[8].payload = watch;
	want[9].object = want[10].object = eventfd_id(f_event) + 1; /* one counter at two numbers */
	const int nwant = (int)(sizeof want / sizeof want[0]);

	struct img_buf strings = { 0 };
	struct img_fd recs[sizeof want / sizeof want[0]];
	for (int w = 0; w < nwant; w++) {
		const struct fd_info *fi = NULL;
		for (int i = 0; i < n && !fi; i++)
			if (s.cut.fds[i].fd == want[w].fd)
				fi = &s.cut.fds[i];
		MUST(fi);
		struct img_fd *e = &recs[w];
		CHECK(fd_record(&s, fi, e, &strings) == 0);
		const struct fd_kind *k = fd_kind_of(e->type);
		if (e->type != want[w].type || e->object != want[w].object) {
			fprintf(stderr, "FAIL fd %d (%s): recorded as %s, object %llu; want type %u, object %llu\n", fi->fd, fi->path,
				k ? k->name : "?", (unsigned long long)e->object, want[w].type, (unsigned long long)want[w].object);
			failures++;
		}
		const char *payload = e->payload == IMG_NONE ? NULL : (const char *)strings.p + e->payload;
		if (want[w].fd == f_timer_armed)
			continue;
		if (!payload != !want[w].payload || (payload && strcmp(payload, want[w].payload)))
			fprintf(stderr, "FAIL fd %d: payload \"%s\", want \"%s\"\n", fi->fd, payload ? payload : "(none)",
				want[w].payload ? want[w].payload : "(none)"), failures++;
		CHECK(e->fd == fi->fd && e->pos == fi->pos && e->flags == fi->flags);
		CHECK(!strcmp((const char *)strings.p + e->path, fi->path));
	}
	CHECK(recs[0].size == 10); /* a file open for writing: its size */
	{ /* the cut gave the terminal's bytes back as they were */
		char back[16] = { 0 };
		CHECK(read(f_ptm, back, sizeof back) == 6 && !memcmp(back, "ab\r\ncd", 6));
	}
	/* a connection whose peer is not the program's: its stream is not read, it comes back reset */
	t.cut.ntcp_kept = 0;
	for (int i = 0; i < n; i++)
		if (s.cut.fds[i].fd == f_conn) {
			struct img_fd alone;
			CHECK(fd_record(&s, &s.cut.fds[i], &alone, &strings) == 0 && alone.payload != IMG_NONE &&
			      !strcmp((const char *)strings.p + alone.payload, "2 1 6 C 0 8 - 0 - 0"));
		}
	{ /* what no record keeps: an inotify instance's queued events (32 bytes: "new" padded), once
	   * made and until read; other kinds have none to wait for */
		const struct fd_info *fi_inotify = NULL, *fi_file = NULL;
		for (int i = 0; i < n; i++)
			if (s.cut.fds[i].fd == f_inotify)
				fi_inotify = &s.cut.fds[i];
			else if (s.cut.fds[i].fd == f_file)
				fi_file = &s.cut.fds[i];
		MUST(fi_inotify && fi_file);
		const char *kind = NULL;
		char made[400], evs[256];
		snprintf(made, sizeof made, "%s/new", dir);
		CHECK(fd_unread(&s, fi_inotify, &kind) == 0 && kind && !strcmp(kind, "inotify"));
		CHECK(fd_unread(&s, fi_file, &kind) == -1);
		int f_new = open(made, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
		MUST(f_new >= 0);
		close(f_new);
		CHECK(fd_unread(&s, fi_inotify, &kind) == 32);
		CHECK(read(f_inotify, evs, sizeof evs) == 32 && fd_unread(&s, fi_inotify, &kind) == 0);
		unlink(made);
	}
	CHECK(fd_kind_of(IMG_FD_NTYPES) == NULL && fd_kind_of(0) == NULL);
	for (int k = 0; k < fd_nkinds; k++) /* one row per type, every row a claim */
		CHECK(fd_kinds[k]->claims && fd_kind_of(fd_kinds[k]->type) == fd_kinds[k] && fd_kinds[k]->name);

	/* the program is gone: its addresses are free again (the check binds them) */
	close(f_conn), close(f_listen), close(f_udp), close(f_ended), close(serving), close(f_fin);

	/* the records as a checkpoint holds them: they decode, and a resume's check takes them */
	struct img_buf all_strings = { 0 };
	MUST(img_buf_put(&all_strings, strings.p, strings.len) == 0);
	/* (all but the last, the io_uring: its record is refused, below) */
	struct img_buf b = blob_of(recs, (uint32_t)nwant - 1, &all_strings);
	struct img im;
	const char *dw;
	char why[300];
	CHECK(img_decode(b.p, b.len, &im, &dw) == 0);
	/* the memory object must be in the checkpoint's tree blob: kept, taken; not kept (too large), refused */
	static struct tree_view tv;
	struct tree_shm kept_shm = { .ino = ino_of(f_shm) };
	tv.nshms = 1, tv.shms[0] = &kept_shm;
	CHECK(fd_check(&im, &tv, why, sizeof why) == 0);
	CHECK(fd_check(&im, NULL, why, sizeof why) == REFUSE_FD_GONE && strstr(why, "not kept"));
	free(b.p);

	/* damaged forms */
	struct img_fd bad;
	bad = recs[0], bad.type = 0; /* no kind */
	CHECK(check_one(bad, &strings, &dw) == REFUSAL_COUNT);
	bad = recs[0], bad.type = IMG_FD_NTYPES; /* a kind of a later version */
	CHECK(check_one(bad, &strings, &dw) == REFUSAL_COUNT);
	bad = recs[8], bad.payload = (uint32_t)strings.len + 1000; /* payload past the strings */
	CHECK(check_one(bad, &strings, &dw) == REFUSAL_COUNT);
	bad = recs[0], bad.path = (uint32_t)strings.len + 100; /* path past the strings */
	CHECK(check_one(bad, &strings, &dw) == REFUSAL_COUNT);
	CHECK(check_one(recs[8], &strings, &dw) == 0);
	bad = recs[8], bad.payload = recs[8].path; /* epoll watches that are not watches */
	CHECK(check_one(bad, &strings, &dw) == REFUSE_POOL_CORRUPT);
	bad = recs[8], bad.payload = IMG_NONE; /* an epoll instance without its record */
	CHECK(check_one(bad, &strings, &dw) == REFUSE_POOL_CORRUPT);
	uint32_t cut = img_str(&strings, " 3:1");  /* a watch cut short */
	bad = recs[8], bad.payload = cut;
	CHECK(check_one(bad, &strings, &dw) == REFUSE_POOL_CORRUPT);
	uint32_t neg = img_str(&strings, " -4:1:0"); /* no such fd number */
	bad = recs[8], bad.payload = neg;
	CHECK(check_one(bad, &strings, &dw) == REFUSE_POOL_CORRUPT);
	bad = recs[3], bad.object = 0; /* a pipe that names no pipe */
	CHECK(check_one(bad, &strings, &dw) == REFUSE_POOL_CORRUPT);
	/* an eventfd's damaged records, and a mode this kernel did not tell */
	CHECK(check_one(recs[9], &strings, &dw) == 0);
	uint32_t garbage = img_str(&strings, "5"), unknown = img_str(&strings, "5 -1"), extra = img_str(&strings, "5 1 0"),
		 mode = img_str(&strings, "5 2");
	bad = recs[9], bad.payload = garbage;
	CHECK(check_one(bad, &strings, &dw) == REFUSE_POOL_CORRUPT);
	bad = recs[9], bad.payload = extra;
	CHECK(check_one(bad, &strings, &dw) == REFUSE_POOL_CORRUPT);
	bad = recs[9], bad.payload = mode;
	CHECK(check_one(bad, &strings, &dw) == REFUSE_POOL_CORRUPT);
	bad = recs[9], bad.object = 0;
	CHECK(check_one(bad, &strings, &dw) == REFUSE_POOL_CORRUPT);
	bad = recs[9], bad.payload = unknown;
	CHECK(check_one(bad, &strings, &dw) == REFUSE_FD_UNSUPPORTED);

	/* a signalfd's damaged records */
	int sig = 0;
	while (want[sig].fd != f_signal)
		sig++;
	CHECK(recs[sig].type == IMG_FD_SIGNALFD && check_one(recs[sig], &strings, &dw) == 0);
	const char *bad_masks[] = { "", "xyz", "-1", " a00", "a00 1" };
	for (size_t k = 0; k < sizeof bad_masks / sizeof bad_masks[0]; k++) {
		bad = recs[sig], bad.payload = img_str(&strings, bad_masks[k]);
		CHECK(check_one(bad, &strings, &dw) == REFUSE_POOL_CORRUPT);
	}
	bad = recs[sig], bad.payload = IMG_NONE;
	CHECK(check_one(bad, &strings, &dw) == REFUSE_POOL_CORRUPT);

	/* a timerfd's records: the armed one's time left is at most what was set, its interval and
	 * clock exact; damaged forms refused */
	int tim = 0, armed = 0;
	while (want[tim].fd != f_timer)
		tim++;
	while (want[armed].fd != f_timer_armed)
		armed++;
	CHECK(recs[tim].type == IMG_FD_TIMERFD && check_one(recs[tim], &strings, &dw) == 0);
	CHECK(recs[armed].type == IMG_FD_TIMERFD && check_one(recs[armed], &strings, &dw) == 0);
	long long vsec = -1, vnsec = -1;
	int n_armed = 0;
	CHECK(sscanf((const char *)strings.p + recs[armed].payload, "7 0 0 %lld %lld 2 500%n", &vsec, &vnsec, &n_armed) == 2 &&
	      n_armed > 0 && !((const char *)strings.p + recs[armed].payload)[n_armed]);
	CHECK(vsec >= 98 && vsec <= 100 && vnsec >= 0 && vnsec < 1000000000);
	const char *bad_timers[] = { "", "1 0 1 0 0 0", "1 0 1 0 0 0 0 0", "3 0 0 0 0 0 0", "1 4 0 0 0 0 0",
				     "1 0 0 0 1000000000 0 0", "1 0 0 0 0 0 1000000000", "1 0 0 -1 0 0 0", " 1 0 0 0 0 0 0",
				     "1  0 0 0 0 0 0", "1 0 0 0 0 0 0 ", "1 0 x 0 0 0 0" };
	for (size_t k = 0; k < sizeof bad_timers / sizeof bad_timers[0]; k++) {
		bad = recs[tim], bad.payload = img_str(&strings, bad_timers[k]);
		if (check_one(bad, &strings, &dw) != REFUSE_POOL_CORRUPT)
			fprintf(stderr, "FAIL timerfd record \"%s\" taken\n", bad_timers[k]), failures++;
	}
	bad = recs[tim], bad.payload = IMG_NONE;
	CHECK(check_one(bad, &strings, &dw) == REFUSE_POOL_CORRUPT);

	/* an inotify instance's records: damaged forms refused, a path gone refused as gone, one the
	 * cut could not name refused as not kept */
	int ino = 0;
	while (want[ino].fd != f_inotify)
		ino++;
	CHECK(recs[ino].type == IMG_FD_INOTIFY && check_one(recs[ino], &strings, &dw) == 0);
	const char *good_inotify[] = { "0", "1 1 100 1 /", "2 3 2 1 / 9 4000001 4 /tmp" };
	for (size_t k = 0; k < sizeof good_inotify / sizeof good_inotify[0]; k++) {
		bad = recs[ino], bad.payload = img_str(&strings, good_inotify[k]);
		if (check_one(bad, &strings, &dw) != 0)
			fprintf(stderr, "FAIL inotify record \"%s\" refused\n", good_inotify[k]), failures++;
	}
	const char *bad_inotify[] = { "", "x", "-1", "1", "2 1 100 1 /", "1 0 100 1 /", "2 2 100 1 / 1 100 1 /",
				      "2 1 100 1 / 1 100 1 /", "1 1 0 1 /", "1 1 8000 1 /", "1 1 10000000 1 /",
				      "1 1 100 0 ", "1 1 100 5 /", "1 1 100 1 x", "1 1 100 1 / ", " 1 1 100 1 /",
				      "1  1 100 1 /", "1 1 100 1  /", "1 -1 100 1 /", "1 1 100 -1 /", "??", "1 1 100 2 /" };
	for (size_t k = 0; k < sizeof bad_inotify / sizeof bad_inotify[0]; k++) {
		bad = recs[ino], bad.payload = img_str(&strings, bad_inotify[k]);
		if (check_one(bad, &strings, &dw) != REFUSE_POOL_CORRUPT)
			fprintf(stderr, "FAIL inotify record \"%s\" taken\n", bad_inotify[k]), failures++;
	}
	bad = recs[ino], bad.payload = IMG_NONE;
	CHECK(check_one(bad, &strings, &dw) == REFUSE_POOL_CORRUPT);
	bad = recs[ino], bad.payload = img_str(&strings, "1 1 100 14 /nowhere/at/al");
	CHECK(check_one(bad, &strings, &dw) == REFUSE_FD_GONE);
	bad = recs[ino], bad.payload = img_str(&strings, "?");
	CHECK(check_one(bad, &strings, &dw) == REFUSE_FD_UNSUPPORTED);

	int ring = 0;
	while (want[ring].fd != f_ring)
		ring++;
	CHECK(ring == nwant - 1 && check_one(recs[ring], &strings, &dw) == REFUSE_FD_UNSUPPORTED);

	/* a pseudo-terminal's records: damaged forms refused, one the cut did not keep refused */
	int ptm = 0, pts = 0;
	while (want[ptm].fd != f_ptm)
		ptm++;
	while (want[pts].fd != f_pts)
		pts++;
	CHECK(check_one(recs[ptm], &strings, &dw) == 0 && check_one(recs[pts], &strings, &dw) == 0);
	const char *cc0 = "00000000000000000000000000000000000000";
	char good_pty[4][160], bad_pty[22][160];
	snprintf(good_pty[0], 160, "M 0 0 0 0 0 0 0 %s 0 0 0 0 -", cc0);
	snprintf(good_pty[1], 160, "M 1 1 ffffffff 5 bf 8a3b 255 %s 65535 1 2 3 00ff", cc0);
	snprintf(good_pty[2], 160, "M 0 0 0 0 0 0 0 %s 0 0 0 0 ?1", cc0);
	snprintf(good_pty[3], 160, "M 0 0 0 0 0 0 0 %s 0 0 0 0 ?5", cc0);
	const char *bad_forms[] = { "M 0 0 0 0 0 0 0 %s 0 0 0 0", "M 0 0 0 0 0 0 0 %s 0 0 0 0 ", "M  0 0 0 0 0 0 0 %s 0 0 0 0 -",
				    "M 2 0 0 0 0 0 0 %s 0 0 0 0 -", "M 0 0 -1 0 0 0 0 %s 0 0 0 0 -", "M 0 0 0 0 0 0 256 %s 0 0 0 0 -",
				    "M 0 0 0 0 0 0 0 %s 65536 0 0 0 -", "M 0 0 0 0 0 0 0 %s0 0 0 0 0 -", "M 0 0 0 0 0 0 0 %s 0 0 0 0 abc",
				    "M 0 0 0 0 0 0 0 %s 0 0 0 0 AB", "M 0 0 0 0 0 0 0 %s 0 0 0 0 ?0", "M 0 0 0 0 0 0 0 %s 0 0 0 0 ?6",
				    "M 0 0 0 0 0 0 0 %s 0 0 0 0 ?+1", "M 0 0 0 0 0 0 0 %s 0 0 0 0 - ", "S 0 0 0 0 0 0 0 %s 0 0 0 0 -",
				    "M 0 0 0 0 0 0 0 %s 0 0 0 0 -x", "M 0 0 00 0 0 0 0 %s 0 0 0 0 -", "M 0 0 0 0 0 0 0 %sz 0 0 0 0 -",
				    "M 0 0 0 0 0 0 0 %s 0 0 0 0 0g", "M 0 0 0 0 0 0 0 %s 0 0 0 +1 -", "", "%s" };
	for (size_t k = 0; k < sizeof bad_forms / sizeof bad_forms[0]; k++)
		snprintf(bad_pty[k], 160, bad_forms[k], cc0);
	snprintf(bad_pty[7], 160, "M 0 0 0 0 0 0 0 %.36s 0 0 0 0 -", cc0); /* 18 control characters */
	for (size_t k = 0; k < 4; k++) {
		bad = recs[ptm], bad.payload = img_str(&strings, good_pty[k]);
		if (check_one(bad, &strings, &dw) != (k < 2 ? 0 : REFUSE_FD_UNSUPPORTED))
			fprintf(stderr, "FAIL terminal record \"%s\" not taken as it should\n", good_pty[k]), failures++;
	}
	for (size_t k = 0; k < sizeof bad_forms / sizeof bad_forms[0]; k++) {
		bad = recs[ptm], bad.payload = img_str(&strings, bad_pty[k]);
		if (check_one(bad, &strings, &dw) != REFUSE_POOL_CORRUPT)
			fprintf(stderr, "FAIL terminal record \"%s\" taken\n", bad_pty[k]), failures++;
	}
	bad = recs[ptm], bad.payload = IMG_NONE;
	CHECK(check_one(bad, &strings, &dw) == REFUSE_POOL_CORRUPT);
	bad = recs[pts], bad.payload = img_str(&strings, "S ");
	CHECK(check_one(bad, &strings, &dw) == REFUSE_POOL_CORRUPT);
	bad = recs[pts], bad.object = 1;
	CHECK(check_one(bad, &strings, &dw) == REFUSE_POOL_CORRUPT);
	/* one the cut could not keep: a controlling terminal, input not read, ... */
	CHECK(write(f_ptm, "typed\n", 6) == 6);
	CHECK(ptys_scan(&t) == 0 && t.cut.nptys == 1 && t.cut.ptys[0].unkept == PTY_INPUT);
	close(f_ptm), close(f_pts);
	ptys_release(&t);

	/* TCP and UDP records: damaged forms refused; a listener's port held by another socket (ours,
	 * still listening) refused as unavailable, taken once it is free */
	int lst = 0, conn = 0, udp = 0;
	while (want[lst].fd != f_listen)
		lst++;
	while (want[conn].fd != f_conn)
		conn++;
	while (want[udp].fd != f_udp)
		udp++;
	CHECK(check_one(recs[conn], &strings, &dw) == 0 && check_one(recs[udp], &strings, &dw) == 0);
	int ended = 0;
	while (want[ended].fd != f_ended)
		ended++;
	CHECK(check_one(recs[ended], &strings, &dw) == 0);
	CHECK(check_one(recs[lst], &strings, &dw) == 0);
	int holder = socket(AF_INET, SOCK_STREAM, 0); /* another process's server on that port */
	MUST(holder >= 0 && setsockopt(holder, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0 &&
	     bind(holder, (struct sockaddr *)&lo, sizeof lo) == 0 && listen(holder, 1) == 0);
	CHECK(check_one(recs[lst], &strings, &dw) == REFUSE_ADDRESS_UNAVAILABLE);
	const char *bad_inet[] = { "", "2 1 6 L 7 1 127.0.0.1 80 - 0 x", "3 1 6 L 7 1 127.0.0.1 80 - 0",
				   "2 3 6 L 7 1 127.0.0.1 80 - 0", "2 2 6 L 7 1 127.0.0.1 80 - 0", "2 2 17 L 0 0 127.0.0.1 80 - 0",
				   "2 1 6 L 7 16 127.0.0.1 80 - 0", "2 1 6 L 7 1 127.0.0.1 65536 - 0", "2 1 6 L -1 1 127.0.0.1 80 - 0",
				   "2 1 6 L 7 1 ::1 80 - 0", "2 1 6 L 7 1 localhost 80 - 0", "2 1 6 X 7 1 127.0.0.1 80 - 0",
				   "2 1 6 C 0 0 127.0.0.1 0 127.0.0.1 80", "2 2 17 B 0 0 127.0.0.1 80 - 9", "2 2 17 E 0 0 - 0 - 0",
				   /* connections read whole, and finished ones: their streams */
				   "2 1 6 C 0 0 127.0.0.1 5 127.0.0.1 80 1 0", "2 1 6 C 0 0 127.0.0.1 5 127.0.0.1 80 1 0 ",
				   "2 1 6 C 0 0 127.0.0.1 5 127.0.0.1 80 1 0 abc", "2 1 6 C 0 0 127.0.0.1 5 127.0.0.1 80 1 0 AB",
				   "2 1 6 C 0 0 127.0.0.1 5 127.0.0.1 80 1 0  ab", "2 1 6 C 0 0 127.0.0.1 5 127.0.0.1 80 x 0 -",
				   "2 1 6 C 0 0 - 0 - 0 1 0 -", "2 1 6 C 0 0 127.0.0.1 0 127.0.0.1 80 1 0 -",
				   "2 1 6 C 7 0 127.0.0.1 5 127.0.0.1 80 1 0 -", "2 2 17 C 0 0 127.0.0.1 5 127.0.0.1 80 1 0 -",
				   "2 1 6 C 0 0 127.0.0.1 5 127.0.0.1 80 1 0 -x", "2 1 6 F 0 0 - 0 - 0", "2 1 6 F 0 0 - 0 - 0 ",
				   "2 1 6 F 0 0 - 0 - 0 6", "2 1 6 F 0 0 - 0 - 0 1 0 -", "2 2 17 F 0 0 - 0 - 0 -",
				   "2 1 6 E 0 0 - 0 - 0 -" };
	for (size_t k = 0; k < sizeof bad_inet / sizeof bad_inet[0]; k++) {
		bad = recs[lst], bad.payload = img_str(&strings, bad_inet[k]);
		if (check_one(bad, &strings, &dw) != REFUSE_POOL_CORRUPT)
			fprintf(stderr, "FAIL socket record \"%s\" taken\n", bad_inet[k]), failures++;
	}
	bad = recs[conn], bad.object = 0;
	CHECK(check_one(bad, &strings, &dw) == REFUSE_POOL_CORRUPT);
	const char *good_inet[] = { "2 1 6 C 0 8 127.0.0.1 5 127.0.0.1 80 18446744073709551615 0 -",
				    "10 1 262 C 0 0 ::1 5 ::1 80 1 0 00ff", "2 1 6 F 0 0 - 0 - 0 -", "2 1 6 C 0 8 - 0 - 0" };
	for (size_t k = 0; k < sizeof good_inet / sizeof good_inet[0]; k++) {
		bad = recs[conn], bad.payload = img_str(&strings, good_inet[k]);
		if (check_one(bad, &strings, &dw) != 0)
			fprintf(stderr, "FAIL socket record \"%s\" refused\n", good_inet[k]), failures++;
	}
	int fin = 0;
	while (want[fin].fd != f_fin)
		fin++;
	CHECK(check_one(recs[fin], &strings, &dw) == 0);
	close(holder);
	CHECK(check_one(recs[lst], &strings, &dw) == 0);
	/* the killed run's own connections left on the port: a server without SO_REUSEADDR closed an
	 * accepted connection first (TIME_WAIT on its port, which even SO_REUSEADDR cannot bind past);
	 * they are cleared (tcpghosts.h: CAP_NET_ADMIN), else the port is unavailable */
	{
		struct sockaddr_in at = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t atlen = sizeof at;
		int srv = socket(AF_INET, SOCK_STREAM, 0), cli = socket(AF_INET, SOCK_STREAM, 0);
		MUST(srv >= 0 && cli >= 0 && bind(srv, (struct sockaddr *)&at, sizeof at) == 0 && listen(srv, 1) == 0 &&
		     getsockname(srv, (struct sockaddr *)&at, &atlen) == 0 && connect(cli, (struct sockaddr *)&at, sizeof at) == 0);
		int acc = accept(srv, NULL, NULL);
		MUST(acc >= 0 && close(acc) == 0);
		char eof, ghost_rec[64];
		MUST(read(cli, &eof, 1) == 0 && close(cli) == 0 && close(srv) == 0);
		int probe = socket(AF_INET, SOCK_STREAM, 0);
		MUST(probe >= 0 && setsockopt(probe, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0);
		CHECK(bind(probe, (struct sockaddr *)&at, sizeof at) != 0 && errno == EADDRINUSE); /* held by it */
		close(probe);
		snprintf(ghost_rec, sizeof ghost_rec, "2 1 6 L 1 0 127.0.0.1 %u - 0", ntohs(at.sin_port));
		bad = recs[lst], bad.payload = img_str(&strings, ghost_rec);
		CHECK(check_one(bad, &strings, &dw) == (geteuid() == 0 ? 0 : REFUSE_ADDRESS_UNAVAILABLE));
	}

	/* the world changed: a file written is shorter, a file is gone */
	MUST(ftruncate(f_file, 4) == 0);
	CHECK(check_one(recs[0], &strings, &dw) == REFUSE_FD_SHORTER);
	MUST(unlink(file) == 0);
	CHECK(check_one(recs[0], &strings, &dw) == REFUSE_FD_GONE);
	CHECK(check_one(recs[2], &strings, &dw) == 0); /* the directory is still there */

	unlink(fifo);
	rmdir(spaced);
	rmdir(dir);
	free(strings.p);
	free(s.cut.fds);
	if (failures) {
		fprintf(stderr, "%d failures\n", failures);
		return 1;
	}
	printf("fdkind: %d kinds, %d records checked, damaged forms refused\n", fd_nkinds, nwant);
	return 0;
}

/* cut_costs -- what the kernel charges, per page, for each way a checkpoint's cut could treat
 * the memory a program wrote (docs/run-resume.md, "When the written memory is read").
 *
 * For each size, a private anonymous mapping of that many MiB is written whole (every page
 * present, as a dense writer's are) and these are timed, each as the median of REPS runs:
 *   - reprotect_ns_per_page: UFFDIO_WRITEPROTECT of the whole mapping on an asynchronous
 *     userfaultfd (WP_ASYNC, the tracker's): what a cut pays today to track the next interval.
 *   - first_write_ns_per_page: the program's first write to each page after that (a fault the
 *     kernel resolves itself, marking the page written): what tracking costs the program.
 *   - switch_ns_per_page: the mapping moved from that userfaultfd to a synchronous one and
 *     write-protected there (UFFDIO_UNREGISTER, UFFDIO_REGISTER, UFFDIO_WRITEPROTECT): what a
 *     cut would pay to hold writes until their page is copied (copy-before-write), since a
 *     mapping belongs to one userfaultfd and the mode is the userfaultfd's; and moving it back.
 *   - read_gbps_1 / read_gbps_2: process_vm_readv of the whole mapping into a buffer, by one
 *     thread and by two threads each reading half (the copy a stop does today).
 *   - read_scattered_gbps_1 / _2: the same for every other page, one iovec pair per page and
 *     1024 pairs per call, as a stop reads pages written here and there.
 *   - fork_ms: fork() of this process, which holds the mapping and the read's buffer (the
 *     kernel's copy-on-write view: page tables copied),
 *     the child exiting at once.
 * Once: fault_round_trip_ns: a thread writes a page write-protected on the synchronous
 * userfaultfd; a handler thread reads the fault, copies the page (4 KiB) and lifts the
 * protection; time from the write to its return (median).  soft_dirty: whether the kernel keeps
 * soft-dirty bits (CONFIG_MEM_SOFT_DIRTY), the other tracker that could sit beside a
 * synchronous userfaultfd.
 * Output: one JSON object.  Usage: cut_costs [REPS] [MiB...]  (default 5; 32 256 1024) */
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "prosper/internal/uffd_abi.h"

#define PAGE 4096ul

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof *v, cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static int new_uffd(int async)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		die("userfaultfd");
	struct uffdio_api api = { .api = UFFD_API,
				  .features = async ? UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED : 0 };
	if (ioctl(fd, UFFDIO_API, &api))
		die("UFFDIO_API");
	return fd;
}

static void reg(int fd, char *p, size_t len)
{
	struct uffdio_register r = { .range = { (uintptr_t)p, len }, .mode = UFFDIO_REGISTER_MODE_WP };
	if (ioctl(fd, UFFDIO_REGISTER, &r))
		die("UFFDIO_REGISTER");
}

static void unreg(int fd, char *p, size_t len)
{
	struct uffdio_range r = { (uintptr_t)p, len };
	if (ioctl(fd, UFFDIO_UNREGISTER, &r))
		die("UFFDIO_UNREGISTER");
}

static void wp(int fd, char *p, size_t len, int on)
{
	struct uffdio_writeprotect w = { .range = { (uintptr_t)p, len }, .mode = on ? UFFDIO_WRITEPROTECT_MODE_WP : 0 };
	if (ioctl(fd, UFFDIO_WRITEPROTECT, &w))
		die("UFFDIO_WRITEPROTECT");
}

static void write_all(char *p, size_t len)
{
	for (size_t o = 0; o < len; o += PAGE)
		p[o]++;
}

struct reader {
	char *from, *to;
	size_t len;
	int scattered; /* every other page, one pair per page, 1024 pairs per call (as a stop reads) */
};

static void *read_part(void *arg)
{
	struct reader *r = arg;
	if (r->scattered) {
		static __thread struct iovec l[1024], rm[1024];
		size_t k = 0;
		for (size_t o = 0; o < r->len; o += 2 * PAGE) {
			l[k] = (struct iovec){ r->to + o, PAGE };
			rm[k] = (struct iovec){ r->from + o, PAGE };
			if (++k == 1024 || o + 2 * PAGE >= r->len) {
				if (process_vm_readv(getpid(), l, k, rm, k, 0) != (ssize_t)(k * PAGE))
					die("process_vm_readv");
				k = 0;
			}
		}
		return NULL;
	}
	for (size_t o = 0; o < r->len;) {
		size_t n = r->len - o < (64ul << 20) ? r->len - o : (64ul << 20);
		struct iovec l = { r->to + o, n }, rm = { r->from + o, n };
		ssize_t got = process_vm_readv(getpid(), &l, 1, &rm, 1, 0);
		if (got <= 0)
			die("process_vm_readv");
		o += (size_t)got;
	}
	return NULL;
}

/* GB/s of the bytes read: all of len, or half of it scattered. */
static double timed_read(char *p, char *buf, size_t len, int threads, int scattered)
{
	pthread_t t[2];
	struct reader r[2];
	size_t half = len / threads / (2 * PAGE) * (2 * PAGE);
	double t0 = now();
	for (int i = 0; i < threads; i++) {
		r[i] = (struct reader){ p + i * half, buf + i * half, i == threads - 1 ? len - i * half : half, scattered };
		if (pthread_create(&t[i], NULL, read_part, &r[i]))
			die("pthread_create");
	}
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	return (scattered ? len / 2 : len) / (now() - t0) / 1e9;
}

/* ---------------------------------------------------------------- the synchronous fault */

struct fault_server {
	int uffd;
	char *copy_to;
	volatile int quit;
};

static void *serve(void *arg)
{
	struct fault_server *s = arg;
	struct pollfd pfd = { s->uffd, POLLIN, 0 };
	while (!s->quit) {
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		struct uffd_msg m;
		if (read(s->uffd, &m, sizeof m) != sizeof m || m.event != UFFD_EVENT_PAGEFAULT)
			continue;
		char *page = (char *)(uintptr_t)(m.arg.pagefault.address & ~(PAGE - 1));
		memcpy(s->copy_to, page, PAGE); /* the copy before the write */
		wp(s->uffd, page, PAGE, 0);
	}
	return NULL;
}

static double fault_round_trip_ns(int reps)
{
	size_t n = 2000, len = n * PAGE;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		die("mmap");
	write_all(p, len);
	int fd = new_uffd(0);
	reg(fd, p, len);
	static char sink[PAGE];
	struct fault_server s = { fd, sink, 0 };
	pthread_t t;
	if (pthread_create(&t, NULL, serve, &s))
		die("pthread_create");
	double *v = malloc(sizeof(double) * reps * n);
	int k = 0;
	for (int r = 0; r < reps; r++) {
		wp(fd, p, len, 1);
		for (size_t i = 0; i < n; i++) {
			double t0 = now();
			p[i * PAGE]++;
			v[k++] = (now() - t0) * 1e9;
		}
	}
	s.quit = 1;
	pthread_join(t, NULL);
	double m = median(v, k);
	free(v);
	close(fd);
	munmap(p, len);
	return m;
}

static int soft_dirty_kept(void)
{
	char *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		die("mmap");
	p[0] = 1;
	int cr = open("/proc/self/clear_refs", O_WRONLY), pm = open("/proc/self/pagemap", O_RDONLY);
	uint64_t e = 0;
	int ok = cr >= 0 && pm >= 0 && write(cr, "4", 1) == 1;
	p[0] = 2;
	ok = ok && pread(pm, &e, sizeof e, (off_t)((uintptr_t)p / PAGE * 8)) == sizeof e;
	close(cr), close(pm);
	munmap(p, PAGE);
	return ok && ((e >> 55) & 1);
}

int main(int argc, char **argv)
{
	static const long defaults[] = { 32, 256, 1024 };
	int nsizes = argc > 2 ? argc - 2 : 3;
	char *end = NULL;
	long reps = argc > 1 ? strtol(argv[1], &end, 10) : 5;
	int bad = argc > 1 && (*end || reps < 1 || reps > 1000);
	for (int i = 2; i < argc && !bad; i++) {
		long mib = strtol(argv[i], &end, 10);
		bad = *end || mib < 1 || mib > (1l << 20);
	}
	if (bad) {
		fprintf(stderr, "usage: cut_costs [REPS [MiB...]]   (REPS 1..1000, default 5; MiB >= 1, default 32 256 1024)\n");
		return 2;
	}
	printf("{\"reps\": %ld, \"soft_dirty\": %s, \"fault_round_trip_ns\": %.0f, \"sizes\": [", reps,
	       soft_dirty_kept() ? "true" : "false", fault_round_trip_ns(reps));
	for (int si = 0; si < nsizes; si++) {
		long mib = argc > 2 ? atol(argv[si + 2]) : defaults[si];
		size_t len = (size_t)mib << 20, pages = len / PAGE;
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (p == MAP_FAILED || buf == MAP_FAILED)
			die("mmap");
		madvise(p, len, MADV_NOHUGEPAGE); /* 4 KiB pages, as a program's heap mostly is */
		write_all(p, len);
		int a = new_uffd(1), b = new_uffd(0);
		reg(a, p, len);
		enum { REPROTECT, FIRST_WRITE, SWITCH, BACK, READ1, READ2, SCATTERED1, SCATTERED2, FORK, NMEASURES };
		double *v = malloc(sizeof(double) * NMEASURES * (size_t)reps);
		if (!v)
			die("malloc");
#define AT(what, r) v[(what) * reps + (r)]
		for (int r = 0; r < reps; r++) {
			write_all(p, len); /* every page written: the tracker's protection lifted */
			double t0 = now();
			wp(a, p, len, 1);
			AT(REPROTECT, r) = (now() - t0) * 1e9 / pages;
			t0 = now();
			write_all(p, len); /* each page's first write faults; the kernel lifts the protection */
			AT(FIRST_WRITE, r) = (now() - t0) * 1e9 / pages;
			t0 = now();
			unreg(a, p, len);
			reg(b, p, len);
			wp(b, p, len, 1);
			AT(SWITCH, r) = (now() - t0) * 1e9 / pages;
			t0 = now();
			unreg(b, p, len);
			reg(a, p, len);
			wp(a, p, len, 1);
			AT(BACK, r) = (now() - t0) * 1e9 / pages;
			write_all(p, len);
			for (int k = 0; k < 4; k++) { /* the order changes every round: the first read of a
						       * round may pay for the next */
				int which = (k + r) % 4;
				AT(READ1 + which, r) = timed_read(p, buf, len, 1 + which % 2, which / 2);
			}
			t0 = now();
			pid_t c = fork();
			if (c == 0)
				_exit(0);
			AT(FORK, r) = (now() - t0) * 1e3;
			waitpid(c, NULL, 0);
		}
#undef AT
		printf("%s{\"mib\": %ld, \"reprotect_ns_per_page\": %.1f, \"first_write_ns_per_page\": %.1f, "
		       "\"switch_ns_per_page\": %.1f, \"switch_back_ns_per_page\": %.1f, \"read_gbps_1\": %.2f, "
		       "\"read_gbps_2\": %.2f, \"read_scattered_gbps_1\": %.2f, \"read_scattered_gbps_2\": %.2f, "
		       "\"fork_ms\": %.2f}",
		       si ? ", " : "", mib, median(v + REPROTECT * reps, reps), median(v + FIRST_WRITE * reps, reps),
		       median(v + SWITCH * reps, reps), median(v + BACK * reps, reps), median(v + READ1 * reps, reps),
		       median(v + READ2 * reps, reps), median(v + SCATTERED1 * reps, reps),
		       median(v + SCATTERED2 * reps, reps), median(v + FORK * reps, reps));
		fflush(stdout);
		free(v);
		close(a), close(b);
		munmap(p, len), munmap(buf, len);
	}
	printf("]}\n");
	return 0;
}

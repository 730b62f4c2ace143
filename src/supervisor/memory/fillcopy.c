/* fillcopy.c -- UFFDIO_COPY fill of a resume's fresh anonymous mappings, on every core, before the
 * program runs or in the background while it runs (fillcopy.h). */
#include "fillcopy.h"
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include "prosper/internal/uffd_abi.h"
#include "procfs.h"
#include "stopclock.h"
#include "sup.h"

/* A chunk is at most this long: small enough that the threads end together, large enough that
 * taking one costs nothing beside its copy. */
#define CHUNK (4ull << 20)
#define MAX_FILL_THREADS 4
#define PAGE 4096ull

struct fill_range {
	uint64_t start, end;
	uint32_t region, vma;
};

struct copy_chunk {
	uint32_t range;
	uint64_t off, len;
};

struct fillcopy {
	struct sup *s;
	int uffd;
	int lazy;
	struct fill_range *ranges; /* by address, as the image's mappings */
	size_t nranges;
	struct copy_chunk *chunks;
	size_t nchunks;
	atomic_size_t next;
	atomic_uchar *failed;            /* per range */
	atomic_int first_errno;          /* lazy: the first copy the kernel refused */
	atomic_uint_fast64_t first_addr;
	atomic_uint_fast64_t bytes, faults;
	atomic_int complete;             /* lazy: every page put in place; a fault now is a page the
	                                  * program discarded since (or a hole): zeros */
	atomic_int stop;                 /* lazy: the server drains the queue and ends */
	int wake_fd;                     /* an eventfd: tells the server to look at stop */
	int pagemap_fd;                  /* the program's /proc/PID/pagemap (protect_holes) */
	atomic_size_t chunks_done;
	atomic_int holes_done;
	double t_filled;                 /* when the holes' pass ended: the fill's end */
	pthread_t copiers[MAX_FILL_THREADS], server;
	useconds_t chunk_delay_us;
	pthread_t caller;                /* the supervisor's thread: it never waits in a copy */       /* test hook: each background chunk waits this long first */
	int ncopiers, server_started;
	double t0;
};

static const uint8_t zero_page[PAGE] __attribute__((aligned(4096)));

static void note_failure(struct fillcopy *f, uint32_t range, uint64_t addr, int err)
{
	atomic_store(&f->failed[range], 1);
	int none = 0;
	if (atomic_compare_exchange_strong(&f->first_errno, &none, err ? err : EIO))
		atomic_store(&f->first_addr, addr);
}

/* Put [off, end) of range r in place from the pool.  Lazy, a page already there is left as it is
 * (the server or the program got there first) and the pages are write-protected; holes (never
 * written: zeros) are put in place only when `holes` is set (a fault waits for them).  0, or an
 * errno the kernel or the pool gave. */
static int copy_range(struct fillcopy *f, const struct fill_range *r, uint64_t off, uint64_t end, int holes,
		      uint64_t *bytes)
{
	uint64_t mode = f->lazy ? UFFDIO_COPY_MODE_WP : 0;
	while (off < end) {
		const void *src;
		uint64_t n;
		if (prosper_pool_region_view(f->s->tree->pool, r->region, off, end - off, &src, &n) != 0)
			return EIO;
		if (!src && !holes) {
			off += n;
			continue;
		}
		if (!src) { /* a hole, one page at a time from the zero page */
			src = zero_page;
			n = PAGE - (off & (PAGE - 1));
			if (n > end - off)
				n = end - off;
		}
		struct uffdio_copy cp = { .dst = r->start + off, .src = (uint64_t)(uintptr_t)src, .len = n, .mode = mode };
		if (ioctl(f->uffd, UFFDIO_COPY, &cp) == 0) {
			*bytes += n;
			off += n;
			continue;
		}
		int e = errno;
		uint64_t done = cp.copy > 0 ? (uint64_t)cp.copy : 0;
		*bytes += done;
		off += done;
		if (e == EAGAIN)
			continue; /* a partial copy: the rest again */
		if (e == EEXIST && f->lazy) {
			off = (off & ~(PAGE - 1)) + PAGE; /* that page is in place: never written twice */
			continue;
		}
		return e;
	}
	return 0;
}

/* Write-protect the pages of the ranges that are neither present nor swapped: the holes (never
 * written: zeros), once every chunk is in place.  PAGEMAP_SCAN's category match and protection
 * are one step per page table under its lock, so a page the server or the program puts in place
 * meanwhile is either already present (left as it is: it may have been written since) or
 * arrives over the marker, protected.  Without it the tracker would count every hole as written
 * at the first capture (an unprotected empty page of a write-protect-registered mapping is one)
 * and read it through the server: a GiB of zeros for a sparse GiB mapping. */
static void protect_holes(struct fillcopy *f)
{
	struct prosper_page_region vec[256];
	for (size_t r = 0; r < f->nranges; r++) {
		for (uint64_t at = f->ranges[r].start, end = f->ranges[r].end; at < end;) {
			struct prosper_pm_scan_arg arg = {
				.size = sizeof arg, .flags = PROSPER_PM_SCAN_WP_MATCHING, .start = at, .end = end,
				.vec = (uint64_t)(uintptr_t)vec, .vec_len = 256,
				.category_inverted = PROSPER_PAGE_IS_PRESENT | PROSPER_PAGE_IS_SWAPPED,
				.category_mask = PROSPER_PAGE_IS_PRESENT | PROSPER_PAGE_IS_SWAPPED,
				.return_mask = PROSPER_PAGE_IS_PRESENT,
			};
			if (ioctl(f->pagemap_fd, PROSPER_PAGEMAP_SCAN, &arg) < 0 || arg.walk_end <= at)
				break; /* the first capture then reads the rest as written: zeros, more bytes */
			at = arg.walk_end;
		}
	}
	f->t_filled = stopclock_now();
	atomic_store(&f->holes_done, 1);
}

static void *copier(void *arg)
{
	struct fillcopy *f = arg;
	uint64_t bytes = 0;
	int background = !pthread_equal(pthread_self(), f->caller);
	if (background)
		pthread_setname_np(pthread_self(), "prosper-fill");
	for (size_t k; (k = atomic_fetch_add(&f->next, 1)) < f->nchunks;) {
		const struct copy_chunk *c = &f->chunks[k];
		if (f->chunk_delay_us)
			usleep(f->chunk_delay_us);
		const struct fill_range *r = &f->ranges[c->range];
		if (atomic_load(&f->failed[c->range]))
			continue;
		int e = copy_range(f, r, c->off, c->off + c->len, 0, &bytes);
		if (e)
			note_failure(f, c->range, r->start + c->off, e);
		if (atomic_fetch_add(&f->chunks_done, 1) + 1 == f->nchunks && f->lazy)
			protect_holes(f); /* the last chunk in place: what is still missing is holes */
	}
	atomic_fetch_add(&f->bytes, bytes);
	return NULL;
}

static const struct fill_range *range_of(const struct fillcopy *f, uint64_t addr, uint32_t *idx)
{
	size_t lo = 0, hi = f->nranges;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (addr < f->ranges[mid].start)
			hi = mid;
		else if (addr >= f->ranges[mid].end)
			lo = mid + 1;
		else
			return *idx = (uint32_t)mid, &f->ranges[mid];
	}
	return NULL;
}

/* A thread of the program waits on the page at addr: put it in place, or wake it if it is. */
static void serve(struct fillcopy *f, uint64_t addr)
{
	uint64_t page = addr & ~(PAGE - 1), bytes = 0;
	uint32_t idx = 0;
	const struct fill_range *r = range_of(f, page, &idx);
	int e = 0;
	if (r && atomic_load(&f->complete)) {
		struct uffdio_copy cp = { .dst = page, .src = (uint64_t)(uintptr_t)zero_page, .len = PAGE,
					  .mode = UFFDIO_COPY_MODE_WP };
		if (ioctl(f->uffd, UFFDIO_COPY, &cp) == 0)
			bytes = PAGE;
		else if (errno != EEXIST)
			e = errno;
	} else if (r) {
		e = copy_range(f, r, page - r->start, page - r->start + PAGE, 1, &bytes);
	}
	if (e)
		note_failure(f, idx, page, e);
	if (!bytes) { /* someone else put it in place (or it cannot be): the waiter must not wait on */
		struct uffdio_range w = { page, PAGE };
		ioctl(f->uffd, UFFDIO_WAKE, &w);
	}
	atomic_fetch_add(&f->bytes, bytes);
	atomic_fetch_add(&f->faults, 1);
}

static void *server(void *arg)
{
	struct fillcopy *f = arg;
	pthread_setname_np(pthread_self(), "prosper-fill");
	struct pollfd p[2] = { { .fd = f->uffd, .events = POLLIN }, { .fd = f->wake_fd, .events = POLLIN } };
	for (;;) {
		/* read before looking at the queue: once stop is seen, the queue holds every fault that
		 * saw the missing mode (the kernel queues them under the lock that re-registering takes) */
		int stopping = atomic_load(&f->stop);
		struct uffd_msg msg[16];
		ssize_t n = read(f->uffd, msg, sizeof msg);
		if (n > 0) {
			for (size_t i = 0; i < (size_t)n / sizeof msg[0]; i++)
				if (msg[i].event == UFFD_EVENT_PAGEFAULT)
					serve(f, msg[i].arg.pagefault.address);
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			break; /* the program is gone */
		if (stopping)
			break;
		poll(p, 2, -1);
	}
	return NULL;
}

/* The mappings to fill, registered in `mode`, cut into chunks.  NULL if none. */
static struct fillcopy *prepare(struct sup *s, int uffd, const struct img *im, const uint8_t *eligible, uint8_t *done,
				int lazy)
{
	uint32_t nv = im->h->nvmas;
	size_t cap = 0, nr = 0;
	for (uint32_t i = 0; i < nv; i++)
		if (eligible[i])
			cap += (im->vmas[i].end - im->vmas[i].start + CHUNK - 1) / CHUNK, nr++;
	struct fillcopy *f = calloc(1, sizeof *f);
	if (!f)
		return NULL;
	*f = (struct fillcopy){ .s = s, .uffd = uffd, .lazy = lazy, .t0 = stopclock_now(), .caller = pthread_self(),
				.ranges = calloc(nr + 1, sizeof *f->ranges), .chunks = calloc(cap + 1, sizeof *f->chunks),
				.failed = calloc(nr + 1, sizeof *f->failed) };
	if (!f->ranges || !f->chunks || !f->failed)
		goto none;
	uint64_t mode = UFFDIO_REGISTER_MODE_MISSING | (lazy ? UFFDIO_REGISTER_MODE_WP : 0);
	for (uint32_t i = 0; i < nv; i++) {
		const struct img_vma *v = &im->vmas[i];
		struct uffdio_register reg = { .range = { v->start, v->end - v->start }, .mode = mode };
		if (!eligible[i] || ioctl(uffd, UFFDIO_REGISTER, &reg) != 0)
			continue;
		uint32_t r = (uint32_t)f->nranges++;
		f->ranges[r] = (struct fill_range){ v->start, v->end, v->region, i };
		for (uint64_t off = 0, len = v->end - v->start; off < len; off += CHUNK)
			f->chunks[f->nchunks++] = (struct copy_chunk){ r, off, len - off < CHUNK ? len - off : CHUNK };
		done[i] = 1;
	}
	if (f->nranges)
		return f;
none:
	free(f->ranges), free(f->chunks), free((void *)f->failed), free(f);
	return NULL;
}

static void release(struct fillcopy *f)
{
	free(f->ranges), free(f->chunks), free((void *)f->failed), free(f);
}

static int helpers_wanted(const struct fillcopy *f, int besides)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	int n = cores < 1 ? 1 : cores > MAX_FILL_THREADS ? MAX_FILL_THREADS : (int)cores;
	n -= besides;
	if ((size_t)n > f->nchunks)
		n = (int)f->nchunks;
	return n < 0 ? 0 : n;
}

static void count_bytes(struct fillcopy *f)
{
	f->s->tree->stats.resume.restored_bytes += atomic_load(&f->bytes);
	f->s->tree->stats.resume.restore_copied_bytes += atomic_load(&f->bytes);
}

int fillcopy_run(struct sup *s, int uffd, const struct img *im, const uint8_t *eligible, uint8_t *done)
{
	struct fillcopy *f = prepare(s, uffd, im, eligible, done, 0);
	if (!f)
		return 0;
	for (int t = helpers_wanted(f, 1); t > 0; t--) /* this thread is one of them */
		if (pthread_create(&f->copiers[f->ncopiers], NULL, copier, f) == 0)
			f->ncopiers++;
	copier(f);
	for (int t = 0; t < f->ncopiers; t++)
		pthread_join(f->copiers[t], NULL);
	int rc = 0;
	for (size_t r = 0; r < f->nranges; r++) {
		struct uffdio_range whole = { f->ranges[r].start, f->ranges[r].end - f->ranges[r].start };
		if (ioctl(uffd, UFFDIO_UNREGISTER, &whole) != 0)
			rc = -1; /* its holes would wait for a reader forever: no resume */
		if (atomic_load(&f->failed[r]))
			done[f->ranges[r].vma] = 0; /* written whole by the caller */
	}
	count_bytes(f);
	release(f);
	return rc;
}

struct fillcopy *fillcopy_start(struct sup *s, int uffd, const struct img *im, const uint8_t *eligible, uint8_t *done)
{
	struct fillcopy *f = prepare(s, uffd, im, eligible, done, 1);
	if (!f)
		return NULL;
	/* test hook: a background fill long enough for a kill to land in it (tests/e2e) */
	const char *delay = getenv("PROSPER_TEST_FILL_DELAY_US");
	f->chunk_delay_us = delay ? (useconds_t)strtoul(delay, NULL, 10) : 0;
	/* Not protected here (the tracker's re-arm after an eager fill walks every page): the ranges are
	 * empty, every page arrives protected, and the holes are protected once the chunks are in
	 * place (protect_holes), in the background. */
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/pagemap", (int)s->pid);
	int ok = (f->pagemap_fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0;
	ok = ok && (f->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) >= 0;
	if (ok && pthread_create(&f->server, NULL, server, f) != 0) {
		close(f->wake_fd);
		ok = 0;
	}
	if (!ok) {
		if (f->pagemap_fd >= 0)
			close(f->pagemap_fd);
		for (size_t r = 0; r < f->nranges; r++) {
			struct uffdio_range whole = { f->ranges[r].start, f->ranges[r].end - f->ranges[r].start };
			ioctl(uffd, UFFDIO_UNREGISTER, &whole);
			done[f->ranges[r].vma] = 0;
		}
		release(f);
		return NULL;
	}
	f->server_started = 1;
	return f;
}

void fillcopy_go(struct fillcopy *f)
{
	if (!f || f->ncopiers)
		return;
	for (int t = helpers_wanted(f, 0); t > 0; t--)
		if (pthread_create(&f->copiers[f->ncopiers], NULL, copier, f) == 0)
			f->ncopiers++;
}

int fillcopy_pending(const struct fillcopy *f, uint64_t start)
{
	uint32_t idx;
	return f && range_of(f, start, &idx) != NULL;
}

int fillcopy_copying(const struct fillcopy *f)
{
	return f && f->lazy && !atomic_load(&f->complete) && !atomic_load(&f->holes_done);
}

int fillcopy_complete(struct fillcopy *f, char *why, size_t whylen)
{
	if (!atomic_load(&f->complete)) {
		copier(f); /* what no copier has taken yet, here */
		for (int t = 0; t < f->ncopiers; t++)
			pthread_join(f->copiers[t], NULL);
		f->ncopiers = 0;
		if (!atomic_load(&f->holes_done))
			protect_holes(f); /* a chunk of a failed range was skipped uncounted */
		atomic_store(&f->complete, 1);
		f->s->tree->stats.resume.restore_memory_seconds = f->t_filled - f->t0;
	}
	int e = atomic_load(&f->first_errno);
	if (e)
		snprintf(why, whylen, "the memory at 0x%llx could not be put back from the pool (%s)",
			 (unsigned long long)atomic_load(&f->first_addr), strerror(e));
	return e ? -1 : 0;
}

void fillcopy_end(struct fillcopy *f, pid_t stopped)
{
	char why[200];
	fillcopy_complete(f, why, sizeof why);
	/* The missing mode dropped.  Registering again for write-protect alone would not do it (the
	 * kernel keeps a range registered with more modes as it is), and unregistering clears the
	 * pages' protection: so with the program stopped, after a capture has taken what was written
	 * (every tracked page protected, clean), each anonymous mapping now in the ranges is
	 * unregistered, registered for write-protect, and protected whole -- the state the capture
	 * left.  The map is read again: the program may have unmapped, moved or replaced parts of
	 * them since its memory was complete. */
	static struct vma now[MAX_VMAS];
	int n = 0;
	if (stopped > 0 && proc_maps(stopped, now, MAX_VMAS, &n) == 0) {
		for (int k = 0; k < n; k++) {
			const struct vma *v = &now[k];
			int anonymous = !v->path[0] || !strcmp(v->path, "[heap]") || !strcmp(v->path, "[stack]");
			uint32_t idx;
			if (!anonymous || strncmp(v->perms + 3, "p", 1))
				continue;
			for (uint64_t a = v->start; a < v->end;) {
				const struct fill_range *r = range_of(f, a, &idx);
				if (!r) {
					a += PAGE;
					continue;
				}
				uint64_t end = r->end < v->end ? r->end : v->end;
				struct uffdio_range part = { a, end - a };
				struct uffdio_register reg = { .range = part, .mode = UFFDIO_REGISTER_MODE_WP };
				struct uffdio_writeprotect wp = { .range = part, .mode = UFFDIO_WRITEPROTECT_MODE_WP };
				ioctl(f->uffd, UFFDIO_UNREGISTER, &part);
				ioctl(f->uffd, UFFDIO_REGISTER, &reg);
				ioctl(f->uffd, UFFDIO_WRITEPROTECT, &wp);
				a = end;
			}
		}
	}
	atomic_store(&f->stop, 1);
	uint64_t one = 1;
	ssize_t told = write(f->wake_fd, &one, sizeof one); /* an eventfd's counter: cannot fail here */
	(void)told;
	pthread_join(f->server, NULL);
	close(f->wake_fd);
	close(f->pagemap_fd);
	count_bytes(f);
	f->s->tree->stats.resume.restore_fill_faults += atomic_load(&f->faults);
	release(f);
}

/* track.c -- the page and full trackers over a child's address space (see include/prosper/track.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include "prosper/track.h"
#include "prosper/internal/uffd_abi.h"

#define PAGE 4096ull

static int fail(struct prosper_track *t, const char *what)
{
	int e = errno;
	snprintf(t->err, sizeof t->err, "%s: %s", what, strerror(e));
	return -e;
}

int prosper_track_open(struct prosper_track *t, int kind, pid_t pid, int uffd)
{
	memset(t, 0, sizeof *t);
	t->kind = kind;
	t->pid = pid;
	t->uffd = uffd;
	t->pagemap_fd = -1;
	if (kind == PROSPER_TRACK_PAGE && uffd < 0) {
		errno = EINVAL;
		return fail(t, "page tracker needs the child's userfaultfd");
	}
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/pagemap", (int)pid);
	t->pagemap_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (t->pagemap_fd < 0)
		return fail(t, "open pagemap");
	return 0;
}

void prosper_track_close(struct prosper_track *t)
{
	if (t->uffd >= 0)
		close(t->uffd);
	if (t->pagemap_fd >= 0)
		close(t->pagemap_fd);
	t->uffd = t->pagemap_fd = -1;
}

int prosper_track_add(struct prosper_track *t, uint64_t start, uint64_t end)
{
	if (t->kind != PROSPER_TRACK_PAGE)
		return 0;
	struct uffdio_register reg = { .range = { .start = start, .len = end - start }, .mode = UFFDIO_REGISTER_MODE_WP };
	if (ioctl(t->uffd, UFFDIO_REGISTER, &reg) != 0)
		return fail(t, "UFFDIO_REGISTER");
	return prosper_track_rearm(t, start, end);
}

/* PAGEMAP_SCAN over [start, end) for pages in `category`, coalesced into ranges; `flags` may ask
 * the kernel to re-protect what it returns. */
static long scan(struct prosper_track *t, uint64_t start, uint64_t end, uint64_t flags, uint64_t anyof,
		 uint64_t mask, struct prosper_range *out, size_t max)
{
	struct prosper_page_region vec[256];
	long n = 0;
	uint64_t at = start;
	while (at < end) {
		struct prosper_pm_scan_arg arg = {
			.size = sizeof arg,
			.flags = flags,
			.start = at,
			.end = end,
			.vec = (uint64_t)(uintptr_t)vec,
			.vec_len = 256,
			.category_mask = mask,
			.category_anyof_mask = anyof,
			.return_mask = mask | anyof,
		};
		long got = ioctl(t->pagemap_fd, PROSPER_PAGEMAP_SCAN, &arg);
		if (got < 0)
			return fail(t, "PAGEMAP_SCAN");
		for (long i = 0; i < got; i++) {
			/* coalesce with the previous range; out of room, the last range grows over the clean
			 * pages up to this one: a superset is sound (more bytes are read and compared), and
			 * failing is no option once the kernel has re-protected what it returned */
			if (n && (out[n - 1].end == vec[i].start || (size_t)n == max)) {
				out[n - 1].end = vec[i].end;
				continue;
			}
			if (max == 0) {
				errno = ENOSPC;
				return fail(t, "no room for a dirty range");
			}
			out[n++] = (struct prosper_range){ vec[i].start, vec[i].end };
		}
		if (arg.walk_end <= at)
			break;
		at = arg.walk_end;
	}
	return n;
}

static int write_protect(struct prosper_track *t, uint64_t start, uint64_t end, uint64_t mode)
{
	if (t->kind != PROSPER_TRACK_PAGE)
		return 0;
	struct uffdio_writeprotect wp = { .range = { .start = start, .len = end - start }, .mode = mode };
	return ioctl(t->uffd, UFFDIO_WRITEPROTECT, &wp) != 0 ? fail(t, "UFFDIO_WRITEPROTECT") : 0;
}

int prosper_track_unprotect(struct prosper_track *t, uint64_t start, uint64_t end)
{
	return write_protect(t, start, end, 0);
}

int prosper_track_rearm(struct prosper_track *t, uint64_t start, uint64_t end)
{
	return write_protect(t, start, end, UFFDIO_WRITEPROTECT_MODE_WP);
}

long prosper_track_collect(struct prosper_track *t, uint64_t start, uint64_t end, struct prosper_range *out,
			   size_t max)
{
	if (t->kind == PROSPER_TRACK_FULL) {
		if (max < 1)
			return 0;
		out[0].start = start;
		out[0].end = end;
		return 1;
	}
	return scan(t, start, end, PROSPER_PM_SCAN_WP_MATCHING | PROSPER_PM_SCAN_CHECK_WPASYNC, 0,
		    PROSPER_PAGE_IS_WRITTEN, out, max);
}

long prosper_track_collect_live(struct prosper_track *t, uint64_t start, uint64_t end, struct prosper_range *out,
				size_t max)
{
	if (t->kind == PROSPER_TRACK_FULL)
		return prosper_track_collect(t, start, end, out, max);
	return scan(t, start, end, PROSPER_PM_SCAN_WP_MATCHING, 0, PROSPER_PAGE_IS_WRITTEN, out, max);
}

long prosper_track_collect_stack(struct prosper_track *t, uint64_t start, uint64_t end, struct prosper_range *out,
				 size_t max)
{
	uint64_t first_end = (start & ~(PAGE - 1)) + PAGE;
	if (t->kind == PROSPER_TRACK_FULL || first_end >= end)
		return t->kind == PROSPER_TRACK_FULL ? prosper_track_collect(t, start, end, out, max)
						     : scan(t, start, end, 0, 0, PROSPER_PAGE_IS_WRITTEN, out, max);
	long k = scan(t, start, first_end, 0, 0, PROSPER_PAGE_IS_WRITTEN, out, max);
	if (k < 0)
		return k;
	long rest = scan(t, first_end, end, PROSPER_PM_SCAN_WP_MATCHING | PROSPER_PM_SCAN_CHECK_WPASYNC, 0,
			 PROSPER_PAGE_IS_WRITTEN, out + k, max - (size_t)k);
	if (rest < 0)
		return rest;
	if (k && rest && out[k - 1].end == out[k].start) { /* one range across the first page's end */
		out[k - 1].end = out[k].end;
		memmove(&out[k], &out[k + 1], (size_t)(rest - 1) * sizeof *out);
		rest--;
	}
	return k + rest;
}

long prosper_track_present(struct prosper_track *t, uint64_t start, uint64_t end, struct prosper_range *out,
			   size_t max)
{
	return scan(t, start, end, 0, PROSPER_PAGE_IS_PRESENT | PROSPER_PAGE_IS_SWAPPED, 0, out, max);
}

long prosper_track_resident(struct prosper_track *t, uint64_t start, uint64_t end, struct prosper_range *out,
			    size_t max)
{
	return scan(t, start, end, 0, PROSPER_PAGE_IS_PRESENT, 0, out, max);
}

/* 1 if some page of [start, end) is in the categories `mask` (after inverting those in `inverted`),
 * else 0; changes nothing (no WP_MATCHING), stops at the first page. */
static int any_page(struct prosper_track *t, uint64_t start, uint64_t end, uint64_t inverted, uint64_t mask)
{
	struct prosper_page_region vec[1];
	struct prosper_pm_scan_arg arg = {
		.size = sizeof arg,
		.start = start,
		.end = end,
		.vec = (uint64_t)(uintptr_t)vec,
		.vec_len = 1,
		.max_pages = 1,
		.category_inverted = inverted,
		.category_mask = mask,
		.return_mask = mask,
	};
	long got = ioctl(t->pagemap_fd, PROSPER_PAGEMAP_SCAN, &arg);
	if (got < 0)
		return fail(t, "PAGEMAP_SCAN");
	return got > 0;
}

int prosper_track_covers(struct prosper_track *t, uint64_t start, uint64_t end)
{
	if (t->kind != PROSPER_TRACK_PAGE)
		return 1;
	/* covered unless some page is NOT in a write-protect-registered mapping */
	int rc = any_page(t, start, end, PROSPER_PAGE_IS_WPALLOWED, PROSPER_PAGE_IS_WPALLOWED);
	return rc < 0 ? rc : !rc;
}

int prosper_track_has_private_pages(struct prosper_track *t, uint64_t start, uint64_t end)
{
	/* present pages that are not the file's: anonymous, or copies made by a write */
	return any_page(t, start, end, PROSPER_PAGE_IS_FILE, PROSPER_PAGE_IS_FILE | PROSPER_PAGE_IS_PRESENT);
}

uint64_t prosper_track_diff(const uint8_t *old, const uint8_t *cur, uint64_t len, uint32_t g,
			    void (*emit)(void *ctx, uint64_t off, uint64_t len), void *ctx)
{
	uint64_t total = 0, run = 0;
	int in = 0;
	/* Unchanged 64-byte lines are skipped whole (most of a dirty page usually is); within a
	 * changed line, granules are compared one by one. */
	uint64_t step = g < 64 ? 64 : g;
	for (uint64_t o = 0; o < len; o += step) {
		uint64_t n = len - o < step ? len - o : step;
		if (memcmp(old + o, cur + o, n) == 0) {
			if (in) {
				in = 0;
				emit(ctx, run, o - run);
				total += o - run;
			}
			continue;
		}
		for (uint64_t q = o; q < o + n; q += g) {
			uint64_t m = o + n - q < g ? o + n - q : g;
			int changed = memcmp(old + q, cur + q, m) != 0;
			if (changed && !in) {
				in = 1;
				run = q;
			} else if (!changed && in) {
				in = 0;
				emit(ctx, run, q - run);
				total += q - run;
			}
		}
	}
	if (in) {
		emit(ctx, run, len - run);
		total += len - run;
	}
	return total;
}

/* pages.c -- CRPM_TRACK_PAGES: the page-granularity baseline of the evaluation (libcrpm §2.2.1:
 * incremental checkpointing with page protection), buffered mode only.
 *
 * The working copy is written freely; the kernel write-protects it asynchronously (userfaultfd
 * WP_ASYNC: a write to a protected page just marks it written, no fault reaches us), and a
 * checkpoint asks PAGEMAP_SCAN for the pages written since the last one, re-protecting them in
 * the same call (src/track).  Whole pages are saved: that is what this baseline measures.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "prosper/internal/uffd_abi.h"
#include "prosper/internal/crpm_internal.h"
#include "prosper/track.h"

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

int crpm_pages_open(struct crpm_container *c)
{
	if (c->mode != CRPM_MODE_BUFFERED)
		return crpm_fail(-EINVAL, "page tracking is a baseline of buffered mode only");
	int uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	if (uffd < 0)
		return crpm_fail(-errno, "userfaultfd: %s", strerror(errno));
	struct uffdio_api api = {.api = UFFD_API, .features = UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED};
	if (ioctl(uffd, UFFDIO_API, &api)) {
		close(uffd);
		return crpm_fail(-errno, "userfaultfd without asynchronous write-protection: %s", strerror(errno));
	}
	struct prosper_track *t = calloc(1, sizeof *t);
	if (!t || prosper_track_open(t, PROSPER_TRACK_PAGE, getpid(), uffd)) {
		int rc = crpm_fail(-EIO, "page tracker: %s", t ? t->err : "out of memory");
		free(t);
		return rc;
	}
	c->pages = t;
	return 0;
}

int crpm_pages_add(struct crpm_container *c, uint64_t from, uint64_t to)
{
	struct prosper_track *t = c->pages;
	if (t && from < to && prosper_track_add(t, (uint64_t)(uintptr_t)c->base + from, (uint64_t)(uintptr_t)c->base + to))
		return crpm_fail(-EIO, "page tracker: %s", t->err);
	return 0;
}

int crpm_pages_save(struct crpm_container *c, int (*save)(struct crpm_container *, uint64_t, uint64_t))
{
	struct prosper_track *t = c->pages;
	/* The scan re-protects what it reports; a scan that ran out of room would have re-protected
	 * pages it could not report.  So scan windows of WINDOW pages with room for WINDOW ranges:
	 * it can never run out. */
	enum { WINDOW = 2048 };
	static __thread struct prosper_range r[WINDOW];
	uint64_t b = (uint64_t)(uintptr_t)c->base, end = b + c->length;
	for (uint64_t from = b; from < end; from += (uint64_t)WINDOW * 4096) {
		uint64_t to = from + (uint64_t)WINDOW * 4096 < end ? from + (uint64_t)WINDOW * 4096 : end;
		long n = prosper_track_collect(t, from, to, r, WINDOW);
		if (n < 0)
			return crpm_fail(-EIO, "page tracker: %s", t->err);
		for (long i = 0; i < n; i++) {
			int rc = save(c, r[i].start - b, r[i].end - r[i].start);
			if (rc)
				return rc;
		}
	}
	return 0;
}

void crpm_pages_close(struct crpm_container *c)
{
	if (c->pages) {
		prosper_track_close(c->pages);
		free(c->pages);
		c->pages = NULL;
	}
}

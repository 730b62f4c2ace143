/* test_track.c -- the page tracker on this process's own memory: a live collection over several
 * mappings (as a stop collects a run of them in one scan) reports and re-arms the written pages
 * of the tracked ones only, the untracked one in between skipped; a replaced mapping is found
 * untracked. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "prosper/internal/uffd_abi.h"
#include "prosper/track.h"

#define PAGE 4096ul
static int failures;
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); failures++; } } while (0)

int main(void)
{
	int uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | 1 /* UFFD_USER_MODE_ONLY */);
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED };
	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) != 0) {
		printf("track: skipped (no userfaultfd write-protect here: %s)\n", strerror(errno));
		return 77;
	}
	/* three mappings side by side: tracked, untracked, tracked (different protections keep them apart) */
	uint8_t *m = mmap(NULL, 12 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED || mprotect(m + 4 * PAGE, 4 * PAGE, PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
		return perror("mmap"), 1;
	uint64_t a = (uint64_t)(uintptr_t)m, b = a + 4 * PAGE, c = a + 8 * PAGE, end = a + 12 * PAGE;
	struct prosper_track t;
	if (prosper_track_open(&t, PROSPER_TRACK_PAGE, getpid(), uffd) != 0)
		return fprintf(stderr, "%s\n", t.err), 1;
	CHECK(prosper_track_add(&t, a, b) == 0 && prosper_track_add(&t, c, end) == 0);
	struct prosper_range r[8];
	long n;
	CHECK(prosper_track_covers(&t, a, b) == 1 && prosper_track_covers(&t, c, end) == 1);
	CHECK(prosper_track_covers(&t, a, end) == 0 && prosper_track_covers(&t, b, c) == 0);
	/* every page counts as written at the first collection: consume that */
	CHECK(prosper_track_collect_live(&t, a, end, r, 8) >= 0);
	m[1 * PAGE] = 1;      /* tracked */
	m[5 * PAGE] = 1;      /* untracked */
	m[9 * PAGE] = 1;      /* tracked */
	m[10 * PAGE + 7] = 1; /* tracked, next page: one range with the one before */
	n = prosper_track_collect_live(&t, a, end, r, 8);
	CHECK(n == 2 && r[0].start == a + PAGE && r[0].end == a + 2 * PAGE && r[1].start == a + 9 * PAGE &&
	      r[1].end == a + 11 * PAGE);
	/* re-armed: nothing until the next write */
	CHECK(prosper_track_collect_live(&t, a, end, r, 8) == 0);
	/* past max ranges the last one grows over the rest: a superset */
	m[0] = m[2 * PAGE] = m[8 * PAGE] = 2;
	n = prosper_track_collect_live(&t, a, end, r, 1);
	CHECK(n == 1 && r[0].start == a && r[0].end == c + PAGE);
	/* a tracked mapping replaced by a new one at the same place is untracked again */
	CHECK(mmap(m + 8 * PAGE, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
	      m + 8 * PAGE);
	CHECK(prosper_track_covers(&t, a, b) == 1 && prosper_track_covers(&t, c, end) == 0);
	prosper_track_close(&t);
	if (failures)
		return 1;
	printf("track: ok\n");
	return 0;
}

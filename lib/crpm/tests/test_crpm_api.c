/* test_crpm_api.c -- the container API in every mode and tracking: what a checkpoint saves,
 * what reopening recovers, the allocator, roots, protected DRAM variables, growth.
 *
 * This program is not instrumented, so CRPM_TRACK_AUTO finds writes by write faults; the
 * HOOKS runs annotate every write by hand, as instrumented code would through the hooks. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "prosper/crpm.h"
#include "prosper/internal/crpm_internal.h" /* crpm_rollback, crpm_checkpoint_commit */

static int failures;
#define CHECK(cond)                                                                     \
	do {                                                                            \
		if (!(cond)) {                                                          \
			fprintf(stderr, "%s:%d: %s failed (%s)\n", __FILE__, __LINE__, #cond, \
				crpm_errormsg());                                      \
			failures++;                                                     \
		}                                                                       \
	} while (0)

static char path[256];
static int mode, tracking;

static crpm_t *open_ctr(int truncate)
{
	crpm_option_t o;
	crpm_init_option(&o);
	o.truncate = truncate;
	o.capacity = 64ull << 20;
	o.mode = mode;
	o.tracking = tracking;
	crpm_t *c = crpm_open(path, &o);
	if (!c)
		fprintf(stderr, "open %s: %s\n", path, crpm_errormsg());
	return c;
}

/* put -- write bytes as instrumented code would (the hook is crpm_annotate here). */
static void put(void *dst, int byte, size_t n)
{
	if (tracking == CRPM_TRACK_HOOKS)
		crpm_annotate(dst, n);
	memset(dst, byte, n);
}

static int all(const void *p, int byte, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i] != (unsigned char)byte)
			return 0;
	return 1;
}

static void test_basic(void)
{
	crpm_t *c = open_ctr(1);
	CHECK(c != NULL);
	if (!c)
		return;
	CHECK(crpm_get_root(c, 0) == NULL);
	CHECK(crpm_epoch(c) == 1);
	char *a = crpm_malloc(c, 1000);
	CHECK(a && (uintptr_t)a % 16 == 0 && (uintptr_t)a >= CRPM_DEFAULT_BASE);
	put(a, 0x11, 1000);
	crpm_set_root(c, 0, a);
	long counter = 7;
	CHECK(crpm_protect(c, 0, &counter, sizeof counter) == 0);
	CHECK(crpm_checkpoint(c, 1) == 0);
	CHECK(crpm_epoch(c) == 2);
	/* Changes after the checkpoint are lost by close + reopen. */
	put(a + 10, 0x22, 20);
	counter = 99;
	char *lost = crpm_malloc(c, 64);
	crpm_set_root(c, 1, lost);
	CHECK(crpm_close(c) == 0);

	counter = 0;
	c = open_ctr(0);
	CHECK(c != NULL);
	if (!c)
		return;
	CHECK(crpm_epoch(c) == 2);
	char *b = crpm_get_root(c, 0);
	CHECK(b == a); /* same address: pointers stay valid */
	CHECK(b && all(b, 0x11, 1000));
	CHECK(crpm_get_root(c, 1) == NULL);
	CHECK(crpm_protect(c, 0, &counter, sizeof counter) == 0);
	CHECK(counter == 7);
	/* The allocation lost with the epoch is handed out again. */
	char *again = crpm_malloc(c, 64);
	CHECK(again == lost);
	counter = 8;
	put(b, 0x33, 1);
	CHECK(crpm_checkpoint(c, 1) == 0);
	CHECK(crpm_close(c) == 0);

	counter = 0;
	c = open_ctr(0);
	CHECK(c && crpm_protect(c, 0, &counter, sizeof counter) == 0 && counter == 8);
	b = c ? crpm_get_root(c, 0) : NULL;
	CHECK(b && b[0] == 0x33 && all(b + 1, 0x11, 999));
	if (c)
		crpm_close(c);
}

static void test_allocator_and_growth(void)
{
	crpm_t *c = open_ctr(1);
	CHECK(c != NULL);
	if (!c)
		return;
	enum { N = 2000 };
	static char *p[N];
	/* Mixed sizes past several segments: the container grows. */
	for (int i = 0; i < N; i++) {
		size_t n = 16 + (size_t)(i * 37) % 9000;
		p[i] = crpm_malloc(c, n);
		CHECK(p[i] != NULL);
		if (p[i])
			put(p[i], i & 0xFF, n);
	}
	for (int i = 0; i < N; i += 2)
		crpm_free(c, p[i]);
	for (int i = 0; i < N; i += 2) { /* freed sizes come back without overlapping live ones */
		size_t n = 16 + (size_t)(i * 37) % 9000;
		p[i] = crpm_malloc(c, n);
		CHECK(p[i] != NULL);
		if (p[i])
			put(p[i], i & 0xFF, n);
	}
	char **table = crpm_malloc(c, sizeof p);
	CHECK(table != NULL);
	if (tracking == CRPM_TRACK_HOOKS)
		crpm_annotate(table, sizeof p);
	memcpy(table, p, sizeof p);
	crpm_set_root(c, 3, table);
	struct crpm_stats st;
	crpm_get_stats(c, &st);
	CHECK(st.mapped_bytes > (4u << 20));
	CHECK(crpm_checkpoint(c, 1) == 0);
	crpm_close(c);

	c = open_ctr(0);
	CHECK(c != NULL);
	if (!c)
		return;
	table = crpm_get_root(c, 3);
	CHECK(table != NULL);
	for (int i = 0; table && i < N; i++) {
		size_t n = 16 + (size_t)(i * 37) % 9000;
		CHECK(table[i] == p[i] && all(table[i], i & 0xFF, n));
	}
	/* Too big for the capacity: NULL with a reason. */
	CHECK(crpm_malloc(c, 100ull << 20) == NULL);
	crpm_close(c);
}

/* Writing a checkpointed segment and not checkpointing: reopening restores it (default mode
 * restores main from the copy-on-write backup; buffered mode never changed the pool). */
static void test_rollback_many_epochs(void)
{
	crpm_t *c = open_ctr(1);
	CHECK(c != NULL);
	if (!c)
		return;
	unsigned char *a = crpm_malloc(c, 3u << 20); /* spans two segments */
	CHECK(a != NULL);
	crpm_set_root(c, 0, a);
	for (int e = 0; e < 6; e++) {
		put(a + (size_t)e * 4096, e + 1, 4096);
		put(a + (3u << 20) - 1 - e, e + 1, 1);
		CHECK(crpm_checkpoint(c, 1) == 0);
	}
	put(a, 0xEE, 3u << 20);
	crpm_close(c);
	c = open_ctr(0);
	CHECK(c != NULL);
	if (!c)
		return;
	a = crpm_get_root(c, 0);
	for (int e = 0; a && e < 6; e++) {
		CHECK(all(a + (size_t)e * 4096, e + 1, 4096));
		CHECK(a[(3u << 20) - 1 - e] == e + 1);
	}
	CHECK(a && all(a + 6 * 4096, 0, 4096));
	struct crpm_stats st;
	crpm_get_stats(c, &st);
	crpm_close(c);
}

/* Coordinated checkpoints need epoch e back right after e+1 was committed (pool rollback). */
static void test_rollback_one_epoch(void)
{
	crpm_t *c = open_ctr(1);
	CHECK(c != NULL);
	if (!c)
		return;
	unsigned char *a = crpm_malloc(c, 3u << 20);
	crpm_set_root(c, 0, a);
	put(a, 1, 3u << 20);
	CHECK(crpm_checkpoint(c, 1) == 0);
	uint64_t e = crpm_epoch(c);
	put(a + 100, 2, 2u << 20);                 /* two segments copied on write */
	unsigned char *b = crpm_malloc(c, 6u << 20); /* and the container grows */
	crpm_set_root(c, 1, b);
	put(b, 3, 6u << 20);
	/* An MPI rank ahead of the others: committed, waiting at the barrier, not prepared ahead. */
	CHECK(crpm_checkpoint_commit(c) == 0);
	crpm_close(c);
	CHECK(crpm_rollback(path, e) == 0);
	c = open_ctr(0);
	CHECK(c != NULL);
	if (!c)
		return;
	CHECK(crpm_epoch(c) == e);
	a = crpm_get_root(c, 0);
	CHECK(crpm_get_root(c, 1) == NULL && a && all(a, 1, 3u << 20));
	crpm_close(c);
	CHECK(crpm_rollback(path, e - 1) != 0); /* only one epoch back */
	c = open_ctr(0);
	CHECK(c != NULL);
	if (!c)
		return;
	a = crpm_get_root(c, 0);
	put(a, 4, 10);
	CHECK(crpm_checkpoint(c, 1) == 0 && crpm_epoch(c) == e + 1);
	crpm_close(c);
}

static void test_refusals(void)
{
	crpm_option_t o;
	crpm_init_option(&o);
	o.create = 0;
	char missing[300];
	snprintf(missing, sizeof missing, "%s.missing", path);
	CHECK(crpm_open(missing, &o) == NULL);
	CHECK(strlen(crpm_errormsg()) > 0);
	/* Opened in the other mode: refused with a reason. */
	crpm_t *c = open_ctr(1);
	CHECK(c != NULL);
	if (c)
		crpm_close(c);
	crpm_init_option(&o);
	o.mode = mode == CRPM_MODE_DEFAULT ? CRPM_MODE_BUFFERED : CRPM_MODE_DEFAULT;
	CHECK(crpm_open(path, &o) == NULL);
	CHECK(strstr(crpm_errormsg(), "mode") != NULL);
	/* Two handles on one address: refused. */
	c = open_ctr(0);
	CHECK(c != NULL);
	crpm_init_option(&o);
	o.mode = mode;
	char other[300];
	snprintf(other, sizeof other, "%s.other", path);
	o.truncate = 1;
	CHECK(crpm_open(other, &o) == NULL);
	o.fixed_base_address = CRPM_DEFAULT_BASE + (64ull << 30);
	crpm_t *d = crpm_open(other, &o);
	CHECK(d != NULL);
	if (d)
		crpm_close(d);
	if (c)
		crpm_close(c);
	unlink(other);
}

int main(void)
{
	const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	for (mode = CRPM_MODE_DEFAULT; mode <= CRPM_MODE_BUFFERED; mode++) {
		for (tracking = CRPM_TRACK_AUTO; tracking <= CRPM_TRACK_PAGES; tracking++) {
			snprintf(path, sizeof path, "%s/test-crpm-api-%d.crpm", dir, (int)getpid());
			if (tracking == CRPM_TRACK_PAGES && mode == CRPM_MODE_DEFAULT) {
				crpm_option_t o; /* the page baseline cannot copy before a write */
				crpm_init_option(&o);
				o.tracking = CRPM_TRACK_PAGES;
				o.truncate = 1;
				CHECK(crpm_open(path, &o) == NULL);
				unlink(path);
				continue;
			}
			int before = failures;
			test_basic();
			test_allocator_and_growth();
			test_rollback_many_epochs();
			test_rollback_one_epoch();
			test_refusals();
			printf("%s mode, tracking %d: %s\n", mode ? "buffered" : "default", tracking,
			       failures == before ? "ok" : "FAILED");
			unlink(path);
		}
	}
	return failures ? 1 : 0;
}

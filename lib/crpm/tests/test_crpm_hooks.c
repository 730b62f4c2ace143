/* test_crpm_hooks.c -- built with bin/prosper-cc: the store hooks alone find the writes.
 *
 * Checks that the compiler emitted the hooks and the library answers them: plain stores,
 * 16-byte stores, memcpy/memset calls (wrapped at link time) reach the container without a
 * single write fault, and a checkpoint saves exactly the blocks written (256 B per block), in
 * both modes; reopening recovers them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "prosper/crpm.h"

static int failures;
#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: %s failed (%s)\n", __FILE__, __LINE__, #cond, crpm_errormsg()); \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

struct rec {
	long a;
	__int128 wide;
	char text[600];
};

/* noinline: the stores must be real stores through a pointer, not folded away. */
__attribute__((noinline)) static void fill(struct rec *r, long v, size_t n)
{
	r->a = v;
	r->wide = (__int128)v << 64 | (unsigned long)v;
	memset(r->text, (int)v, n); /* a call: the wrapper notes it */
}

static void run(const char *path, int mode)
{
	crpm_option_t o;
	crpm_init_option(&o);
	o.truncate = 1;
	o.capacity = 32u << 20;
	o.mode = mode;
	crpm_t *c = crpm_open(path, &o);
	CHECK(c != NULL);
	if (!c)
		return;
	struct rec *r = crpm_malloc(c, sizeof *r);
	struct rec *far = crpm_malloc(c, 5u << 20); /* another segment */
	crpm_set_root(c, 0, r);
	crpm_set_root(c, 1, far);
	CHECK(crpm_checkpoint(c, 1) == 0);
	struct crpm_stats before, after;
	crpm_get_stats(c, &before);

	fill(r, 42, sizeof r->text);
	char src[300];
	memset(src, 'x', sizeof src);
	volatile size_t n = sizeof src; /* keep memcpy a call */
	memcpy((char *)far + (4u << 20), src, n);
	CHECK(crpm_checkpoint(c, 1) == 0);
	crpm_get_stats(c, &after);
	CHECK(after.write_faults == before.write_faults); /* the hooks came first, every time */
	uint64_t bytes = after.checkpoint_bytes - before.checkpoint_bytes;
	/* struct rec: 16 + 600 bytes from a 16-byte aligned start: 3 or 4 blocks; memcpy of 300
	 * bytes at a block boundary: 2 blocks. */
	CHECK(bytes >= 5 * 256 && bytes <= 6 * 256);

	/* One 8-byte store: exactly one block. */
	crpm_get_stats(c, &before);
	far->a = 7;
	CHECK(crpm_checkpoint(c, 1) == 0);
	crpm_get_stats(c, &after);
	CHECK(after.checkpoint_bytes - before.checkpoint_bytes == 256);
	far->a = 8; /* not checkpointed */
	crpm_close(c);

	o.truncate = 0;
	c = crpm_open(path, &o);
	CHECK(c != NULL);
	if (!c)
		return;
	r = crpm_get_root(c, 0);
	far = crpm_get_root(c, 1);
	CHECK(r->a == 42 && r->wide == ((__int128)42 << 64 | 42) && r->text[599] == 42);
	CHECK(far->a == 7 && ((char *)far)[(4u << 20) + 299] == 'x');
	crpm_close(c);
	unlink(path);
}

int main(void)
{
	char path[256];
	const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(path, sizeof path, "%s/test-crpm-hooks-%d.crpm", dir, (int)getpid());
	run(path, CRPM_MODE_DEFAULT);
	run(path, CRPM_MODE_BUFFERED);
	printf("%s\n", failures ? "FAILED" : "store hooks: ok in both modes");
	return failures ? 1 : 0;
}

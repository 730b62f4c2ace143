/* test_crpm_steal.c -- the backup-stealing window (docs/crpm.md), at the container level.
 *
 * A default-mode container with 3 backup segments and 8 data segments.  Epoch e writes segment
 * 0 (the counter) and the data segments e % 7 + 1 and (e + 3) % 7 + 1 wholly with the byte e: so
 * nearly every copy-on-write must steal the backup of a segment written in an earlier epoch --
 * the case where a crash between rebinding the backup and the copy must not bring the victim
 * segment back from stale bytes.  A victim process runs epochs and is SIGKILLed at random; the
 * reopened container must hold, for k committed epochs, in every data segment the byte of the
 * last epoch < k that wrote it (0 if none).  Also run in-process to check steals happened.
 *
 *   test_crpm_steal [N]      N kills (default 12, PROSPER_LONG: 200)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "prosper/crpm.h"

#define SEG (2u << 20)
#define NDATA 7

static crpm_t *open_ctr(const char *path, int truncate)
{
	crpm_option_t o;
	crpm_init_option(&o);
	o.capacity = (NDATA + 2) * SEG;
	o.backup_segments = 3;
	o.truncate = truncate;
	return crpm_open(path, &o);
}

struct root {
	uint64_t epochs;
	unsigned char *data; /* NDATA segments, segment aligned */
};

static unsigned char *seg_of(struct root *r, int k) { return r->data + (size_t)k * SEG; }

/* setup: the root and a segment-aligned data area (the allocator starts at 4 KiB). */
static struct root *setup(crpm_t *c)
{
	struct root *r = crpm_get_root(c, 0);
	if (r)
		return r;
	r = crpm_malloc(c, sizeof *r); /* a 32-byte chunk at 4096 */
	/* A pad chunk so that the data starts on a segment boundary: 4128 + 16 + (SEG - 4160) +
	 * 16 = SEG.  Checked below: an epoch must touch exactly 3 segments. */
	unsigned char *pad = crpm_malloc(c, SEG - 4160);
	unsigned char *d = crpm_malloc(c, (size_t)NDATA * SEG);
	(void)pad;
	if (!d || (uintptr_t)d % SEG) {
		fprintf(stderr, "data not segment aligned: %p\n", (void *)d);
		return NULL;
	}
	r->epochs = 0;
	r->data = d;
	crpm_set_root(c, 0, r);
	return crpm_checkpoint(c, 1) ? NULL : r;
}

static void one_epoch(crpm_t *c, struct root *r)
{
	uint64_t e = r->epochs;
	memset(seg_of(r, (int)(e % NDATA)) + 64, (int)(e & 0xFF) | 1, SEG - 128);
	memset(seg_of(r, (int)((e + 3) % NDATA)) + 64, (int)(e & 0xFF) | 1, SEG - 128);
	r->epochs = e + 1;
	if (crpm_checkpoint(c, 1)) {
		fprintf(stderr, "checkpoint: %s\n", crpm_errormsg());
		exit(1);
	}
}

static int verify(crpm_t *c, char *why, size_t n)
{
	struct root *r = crpm_get_root(c, 0);
	if (!r)
		return 0;
	uint64_t k = r->epochs;
	for (int s = 0; s < NDATA; s++) {
		int want = 0;
		for (uint64_t e = 0; e < k; e++)
			if (e % NDATA == (uint64_t)s || (e + 3) % NDATA == (uint64_t)s)
				want = (int)(e & 0xFF) | 1;
		const unsigned char *p = seg_of(r, s) + 64;
		for (size_t i = 0; i < SEG - 128; i++)
			if (p[i] != want) {
				snprintf(why, n, "%llu epochs: segment %d byte %zu is %d, not %d", (unsigned long long)k, s, i,
					 p[i], want);
				return -1;
			}
	}
	return (int)k;
}

int main(int argc, char **argv)
{
	const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	char path[256], why[256];
	snprintf(path, sizeof path, "%s/test-crpm-steal-%d.crpm", dir, (int)getpid());
	if (argc == 3 && !strcmp(argv[1], "victim")) {
		crpm_t *c = open_ctr(argv[2], 0);
		struct root *r = c ? setup(c) : NULL;
		if (!r)
			return 1;
		for (;;)
			one_epoch(c, r);
	}
	/* In-process: steals do happen, and a reopen sees the last checkpoint. */
	crpm_t *c = open_ctr(path, 1);
	struct root *r = c ? setup(c) : NULL;
	if (!r)
		return 1;
	for (int i = 0; i < 30; i++)
		one_epoch(c, r);
	struct crpm_stats st;
	crpm_get_stats(c, &st);
	crpm_close(c);
	c = open_ctr(path, 0);
	if (!c || verify(c, why, sizeof why) != 30 || st.backup_steals < 20) {
		fprintf(stderr, "in-process: %s (steals %llu)\n", c ? why : crpm_errormsg(), (unsigned long long)st.backup_steals);
		return 1;
	}
	crpm_close(c);
	printf("in-process: 30 epochs, %llu steals, recovered exactly\n", (unsigned long long)st.backup_steals);
	int kills = argc > 1 ? atoi(argv[1]) : getenv("PROSPER_LONG") ? 200 : 12;
	srand((unsigned)time(NULL) ^ (unsigned)getpid());
	int last = 30;
	for (int i = 0; i < kills; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			execl("/proc/self/exe", argv[0], "victim", path, (char *)NULL);
			_exit(127);
		}
		struct timespec d = {0, 1000000 + rand() % 40000000};
		nanosleep(&d, NULL);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		c = open_ctr(path, 0);
		int k = c ? verify(c, why, sizeof why) : -1;
		if (c)
			crpm_close(c);
		if (k < last) {
			fprintf(stderr, "kill %d: %s\n", i, c ? (k < 0 ? why : "went back in time") : crpm_errormsg());
			return 1;
		}
		last = k;
	}
	printf("%d kills while every copy-on-write steals a backup: each recovered exactly (%d epochs)\n", kills, last);
	unlink(path);
	return 0;
}

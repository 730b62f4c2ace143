/* tiers.c -- the fast pool in memory and its durable copy on a disk (tiers.h). */
#include "tiers.h"
#include <errno.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>
#include "fastpool.h"
#include "sup.h"
#include "stopclock.h"

static const char *fs_name(long magic)
{
	switch ((unsigned long)magic) {
	case TMPFS_MAGIC: return "tmpfs";
	case RAMFS_MAGIC: return "ramfs";
	case EXT4_SUPER_MAGIC: return "ext4";
	case XFS_SUPER_MAGIC: return "xfs";
	case BTRFS_SUPER_MAGIC: return "btrfs";
	case 0x2FC12FC1: return "zfs"; /* not in linux/magic.h */
	case F2FS_SUPER_MAGIC: return "f2fs";
	case NFS_SUPER_MAGIC: return "nfs";
	case OVERLAYFS_SUPER_MAGIC: return "overlay";
	}
	return "disk";
}

/* The directory of path (the pool may not exist yet). */
static void dir_of(const char *path, char *out, size_t cap)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		snprintf(out, cap, ".");
	else if (slash == path)
		snprintf(out, cap, "/");
	else
		snprintf(out, cap, "%.*s", (int)(slash - path), path);
}

static int fast_name(prosper_pool *p, char *out, size_t cap, int make)
{
	uint8_t u[16];
	prosper_pool_uuid(p, u);
	return fastpool_path(u, out, cap, make);
}

int tiers_fast_path_of(prosper_pool *p, char *out, size_t cap)
{
	struct stat st;
	return fast_name(p, out, cap, 0) == 0 && lstat(out, &st) == 0;
}

int tiers_choose(struct tiers *t, const char *path, double every_s, char *why, size_t whylen)
{
	char dir[4096];
	struct statfs sf;
	dir_of(path, dir, sizeof dir);
	if (statfs(dir, &sf) != 0) {
		snprintf(why, whylen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	snprintf(t->fs, sizeof t->fs, "%s", fs_name(sf.f_type));
	t->every_s = every_s < 0 ? 1.0 : every_s;
	if (prosper_fs_is_memory((long)sf.f_type))
		t->kind = TIER_MEMORY;
	else
		t->kind = t->every_s > 0 ? TIER_TWO : TIER_DISK;
	if (t->kind == TIER_TWO) {
		char fd_[4096];
		if (fastpool_dir(fd_, sizeof fd_, 1) != 0) {
			snprintf(why, whylen, "%s is not a private directory of yours for the fast pool (set PROSPER_FAST_DIR, "
				 "or --durable-every 0)", fd_);
			return -1;
		}
	}
	return 0;
}

/* The granularity the opened pool got decides PMEM after the fact. */
static void note_pmem(struct tiers *t, prosper_pool *p)
{
	if (t->kind != TIER_MEMORY && prosper_pool_granularity(p) != PROSPER_GRAN_PAGE)
		t->kind = TIER_PMEM;
}

/* copy_into -- dst made to hold src's committed epoch, one epoch of dst. */
static int copy_into(prosper_pool *dst, prosper_pool *src, uint64_t since, struct prosper_pool_copy_stats *st)
{
	int rc = prosper_pool_copy_stage(dst, src, since, st);
	size_t len = 0;
	const void *blob = prosper_pool_blob(src, &len);
	return rc ? rc : prosper_pool_commit(dst, blob, len);
}

int tiers_start_run(struct tiers *t, prosper_pool **work, const struct prosper_pool_config *cfg, char *why,
		    size_t whylen)
{
	note_pmem(t, *work);
	if (t->kind != TIER_TWO)
		return 0;
	if (fast_name(*work, t->fast_path, sizeof t->fast_path, 1) != 0) {
		snprintf(why, whylen, "no private directory for the fast pool");
		return -1;
	}
	unlink(t->fast_path); /* a name drawn just now: anything there is not ours to keep */
	prosper_pool *fast = NULL;
	if (prosper_pool_create(t->fast_path, cfg, &fast) != 0) {
		snprintf(why, whylen, "%s: %s", t->fast_path, prosper_pool_errormsg());
		return -1;
	}
	t->durable = *work;
	*work = fast;
	t->last_copy = 0; /* the first checkpoint is copied at once */
	return 0;
}

int tiers_start_resume(struct tiers *t, prosper_pool **work, const struct prosper_pool_config *cfg, char *why,
		       size_t whylen)
{
	note_pmem(t, *work);
	char path[4096];
	prosper_pool *fast = NULL;
	if (tiers_fast_path_of(*work, path, sizeof path) && prosper_pool_open(path, &fast) != 0) {
		/* T1 says it would be the newer state, but it is not one: keep it for a look, go on
		 * from the durable checkpoint, and say so. */
		char aside[4200];
		snprintf(aside, sizeof aside, "%s.unusable", path);
		fprintf(stderr, "%s: the fast pool %s is not usable (%s): resuming from the durable checkpoint; "
			"it is kept as %s\n", sup_command(), path, prosper_pool_errormsg(), aside);
		rename(path, aside);
		fast = NULL;
	}
	if (fast && t->kind != TIER_TWO) {
		/* one pool from now on: the newer state goes into it first */
		if (copy_into(*work, fast, 0, NULL) != 0) {
			snprintf(why, whylen, "copying %s into the pool: %s", path, prosper_pool_errormsg());
			prosper_pool_close(&fast);
			return -1;
		}
		prosper_pool_close(&fast);
		unlink(path);
		return 0;
	}
	if (t->kind != TIER_TWO || (!fast && prosper_pool_epoch(*work) == 0))
		return 0; /* nothing committed anywhere: the caller says so */
	if (!fast) {
		/* after a power cut (or the supervisor's clean end): the fast pool made from the durable one */
		if (fast_name(*work, path, sizeof path, 1) != 0 || prosper_pool_create(path, cfg, &fast) != 0 ||
		    copy_into(fast, *work, 0, NULL) != 0) {
			snprintf(why, whylen, "%s: %s", path, prosper_pool_errormsg());
			if (fast) {
				prosper_pool_close(&fast);
				unlink(path);
			}
			return -1;
		}
		t->made_fast = 1;
	}
	snprintf(t->fast_path, sizeof t->fast_path, "%s", path);
	t->durable = *work;
	t->durable_epoch = prosper_pool_epoch(t->durable);
	*work = fast;
	t->since = 0;             /* this handle has copied nothing yet: compare everything once */
	t->last_copy = stopclock_now();     /* the durable pool holds this very state already, or an older one */
	return 0;
}

/* commit_staged -- the staged copy committed into the durable pool, its statistics kept. */
static void commit_staged(struct tiers *t)
{
	char why[4400] = "";
	int rc = t->before_copy ? t->before_copy(t->before_copy_arg, t->pending_tag) : 0;
	if (rc)
		snprintf(why, sizeof why, "cannot flush the file-undo journal: %s", strerror(-rc));
	else if ((rc = prosper_pool_commit(t->durable, t->blob, t->blob_len)) != 0)
		snprintf(why, sizeof why, "%s", prosper_pool_errormsg());
	double dt = stopclock_now() - t->pending_t0;
	if (t->thread_started)
		pthread_mutex_lock(&t->mu);
	if (rc) {
		t->failed = 1;
		fprintf(stderr, "%s: the durable copy into the pool failed (%s): checkpoints go on in memory only (%s), "
			"they survive the program but not a power cut\n", sup_command(), why, t->fast_path);
	} else {
		t->durable_epoch = prosper_pool_epoch(t->durable);
		t->durable_tag = t->pending_tag;
		t->copies++;
		t->copy_written += t->pending_written;
		t->copy_compared += t->pending_compared;
		t->copy_seconds += dt;
		if (dt > t->copy_max_seconds)
			t->copy_max_seconds = dt;
	}
	t->pending = 0;
	if (t->thread_started) {
		pthread_cond_broadcast(&t->cv);
		pthread_mutex_unlock(&t->mu);
	}
}

/* The durable thread: commit what the commit thread staged, one copy at a time. */
static void *durable_main(void *arg)
{
	struct tiers *t = arg;
	for (;;) {
		pthread_mutex_lock(&t->mu);
		while (!t->pending && !t->quit)
			pthread_cond_wait(&t->cv, &t->mu);
		int work = t->pending;
		pthread_mutex_unlock(&t->mu);
		if (!work)
			return NULL;
		commit_staged(t);
	}
}

/* no_pending -- 1 when no commit of a copy is in flight (waiting for it if wait is set). */
static int no_pending(struct tiers *t, int wait)
{
	if (!t->thread_started)
		return 1;
	pthread_mutex_lock(&t->mu);
	while (wait && t->pending)
		pthread_cond_wait(&t->cv, &t->mu);
	int idle = !t->pending;
	pthread_mutex_unlock(&t->mu);
	return idle;
}

void tiers_after_commit(struct tiers *t, prosper_pool *work, int force)
{
	if (t->kind != TIER_TWO || !t->durable)
		return;
	double t0 = stopclock_now();
	if (!force && t->last_copy && t0 - t->last_copy < t->every_s)
		return;
	if (!no_pending(t, force) || t->failed)
		return; /* the last copy is still being committed: try at the next checkpoint */
	if (t->since == prosper_pool_epoch(work))
		return; /* it holds this one already */
	struct prosper_pool_copy_stats st;
	size_t len = 0;
	const void *blob = prosper_pool_blob(work, &len);
	void *copy = len ? malloc(len) : NULL;
	if ((len && !copy) || prosper_pool_copy_stage(t->durable, work, t->since, &st) != 0) {
		t->failed = 1;
		fprintf(stderr, "%s: the durable copy into the pool failed (%s): checkpoints go on in memory only (%s), "
			"they survive the program but not a power cut\n", sup_command(),
			copy || !len ? prosper_pool_errormsg() : "out of memory", t->fast_path);
		free(copy);
		return;
	}
	if (len)
		memcpy(copy, blob, len);
	double staged = stopclock_now() - t0;
	if (staged > t->stage_max_seconds)
		t->stage_max_seconds = staged;
	t->since = prosper_pool_epoch(work);
	t->last_copy = t0;
	if (!t->thread_started) {
		pthread_mutex_init(&t->mu, NULL);
		pthread_cond_init(&t->cv, NULL);
		t->thread_started = pthread_create(&t->thread, NULL, durable_main, t) == 0;
	}
	free(t->blob); /* the previous copy's, committed */
	t->blob = copy;
	t->blob_len = len;
	t->pending_t0 = t0;
	t->pending_tag = t->tag;
	t->pending_written = st.written_bytes;
	t->pending_compared = st.compared_bytes;
	if (!t->thread_started) {
		t->pending = 1;
		commit_staged(t); /* no thread: here, as before */
		return;
	}
	pthread_mutex_lock(&t->mu);
	t->pending = 1;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
	if (force)
		no_pending(t, 1);
}

void tiers_refused(struct tiers *t, prosper_pool **work)
{
	if (!t->made_fast || !*work)
		return;
	prosper_pool_close(work);
	unlink(t->fast_path);
	*work = t->durable;
	t->durable = NULL;
	t->made_fast = 0;
}

int tiers_finish(struct tiers *t, prosper_pool **work)
{
	int rc = 0;
	if (t->kind == TIER_TWO && t->durable && *work)
		tiers_after_commit(t, *work, 1);
	if (t->thread_started) {
		pthread_mutex_lock(&t->mu);
		t->quit = 1;
		pthread_cond_broadcast(&t->cv);
		pthread_mutex_unlock(&t->mu);
		pthread_join(t->thread, NULL);
		t->thread_started = 0;
	}
	free(t->blob);
	t->blob = NULL;
	if (*work)
		rc = prosper_pool_close(work);
	if (t->kind == TIER_TWO && t->durable && !t->failed)
		unlink(t->fast_path); /* T3: everything it held is in the durable pool */
	int rc2 = t->durable ? prosper_pool_close(&t->durable) : 0;
	return rc ? rc : rc2;
}

void tiers_describe(const struct tiers *t, const char *path, double interval_ms, char *out, size_t cap)
{
	switch (t->kind) {
	case TIER_MEMORY:
		snprintf(out, cap, "checkpoints every %g ms into %s (%s: they survive the program, not a power cut)",
			 interval_ms, path, t->fs);
		break;
	case TIER_PMEM:
		snprintf(out, cap, "checkpoints every %g ms into %s (persistent memory: every one durable)", interval_ms,
			 path);
		break;
	case TIER_DISK:
		snprintf(out, cap, "checkpoints every %g ms into %s (%s), every one durable (--durable-every 0)",
			 interval_ms, path, t->fs);
		break;
	default:
		snprintf(out, cap, "checkpoints every %g ms in memory (%s), durable every %g s in %s (%s)", interval_ms,
			 t->fast_path, t->every_s, path, t->fs);
	}
}

/* ckpt_commit.c -- the commit half of a process's checkpoint (capture.c has the stop's half): the
 * staged bytes written into the pool through the diff filter while the program runs, the state a
 * committed epoch leaves, the soundness oracle (--verify), and the tracker's start. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "prosper/stackckpt.h"
#include "sup.h"
#include "ckpt_commit.h"
#include "nvm.h"
#include "snapshot.h"

struct diff_ctx {
	struct sup *s;
	uint32_t region;
	uint64_t base;  /* region offset of the compared bytes */
	const uint8_t *cur;
	int rc;
};

static void write_changed(void *vctx, uint64_t off, uint64_t len)
{
	struct diff_ctx *d = vctx;
	if (!d->rc)
		d->rc = prosper_pool_write(d->s->tree->pool, d->region, d->base + off, d->cur + off, len);
}

static void count_only(void *ctx, uint64_t off, uint64_t len) { (void)ctx, (void)off, (void)len; }

/* The stack's sub-page diff pays for itself only when few granules change; when a checkpoint
 * finds nearly all compared bytes changed (a Stream-like frame), the next ones write the
 * tracker's pages whole without comparing, and probe again after DENSE_HOLD checkpoints.
 * 96 %: whole pages then cost at most 1/0.96 = 1.04x the changed bytes. */
#define DENSE_PERCENT 96
#define DENSE_HOLD 8

/* Chunk c, its bytes at cur, into the pool. */
static int write_chunk(struct sup *s, const struct chunk *c, const uint8_t *cur, struct ckpt_stats *cs)
{
	int mode = c->stack ? s->cfg.stack_mode : s->cfg.heap_mode;
	uint32_t g = c->stack ? s->cfg.stack_gran : s->cfg.heap_gran;
	int compare = !c->whole && ((mode == TRACK_MODE_DIFF && !(c->stack && s->stack_dense_left)) || (c->stack && s->cfg.stats_exact));
	if (compare) {
		if (c->len > s->cut.old_cap) {
			free(s->cut.old);
			s->cut.old_cap = c->len;
			s->cut.old = malloc(s->cut.old_cap);
			if (!s->cut.old) {
				s->cut.old_cap = 0;
				return -ENOMEM;
			}
		}
		int rc = prosper_pool_region_read(s->tree->pool, c->region, c->off, s->cut.old, c->len);
		if (rc)
			return rc;
	}
	uint64_t written = c->len;
	int rc = 0;
	if (c->stack && !c->whole && s->cfg.stats_exact)
		cs->stack_exact += prosper_track_diff(s->cut.old, cur, c->len, 8, count_only, NULL);
	int dense_skip = c->stack && s->stack_dense_left > 0;
	if (c->whole || mode != TRACK_MODE_DIFF || dense_skip) {
		rc = prosper_pool_write(s->tree->pool, c->region, c->off, cur, c->len);
	} else {
		struct diff_ctx d = { s, c->region, c->off, cur, 0 };
		written = prosper_track_diff(s->cut.old, cur, c->len, g, write_changed, &d);
		rc = d.rc;
	}
	if (rc)
		return rc;
	if (c->whole) {
		cs->new_bytes += written;
	} else if (c->stack) {
		cs->stack += written;
		cs->stack_pages += c->len;
	} else {
		cs->other += written;
		cs->other_pages += c->len;
	}
	return 0;
}

/* The program finished while this commit runs: nothing will resume from it (loop.c). */
static int cancelled(struct sup *s, char *why, size_t whylen)
{
	if (!__atomic_load_n(&s->tree->cut.cancel, __ATOMIC_ACQUIRE))
		return 0;
	snprintf(why, whylen, "the program finished: its last checkpoint is not committed");
	return -ECANCELED;
}

/* The chunks still in s's copy-on-write view, a window at a time (snapshot.h); the view ended. */
static int write_from_view(struct sup *s, struct ckpt_stats *cs, char *why, size_t whylen)
{
	struct view_window w;
	snapshot_window_begin(s, &w);
	long n = 0;
	int rc = 0;
	while (!rc && !(rc = cancelled(s, why, whylen)) && (n = snapshot_next_window(s, &w, why, whylen)) > 0)
		for (long k = 0; k < n && !rc; k++)
			if ((rc = write_chunk(s, &w.parts[k], w.data + w.parts[k].at, cs)) != 0)
				snprintf(why, whylen, "%s", prosper_pool_errormsg());
	snapshot_window_end(&w);
	snapshot_drop(s);
	return rc ? rc : n < 0 ? (int)n : 0;
}

int sup_write_batch(struct sup *s, struct ckpt_stats *cs, char *why, size_t whylen)
{
	struct batch *bt = &s->cut.batch;
	size_t read = s->cut.view ? bt->read_from : bt->nchunks; /* the rest is in the view */
	for (size_t i = 0; i < read; i++) {
		if (!bt->chunks[i].len)
			continue; /* pre-copied for a mapping gone at the stop (stage.h) */
		int rc = write_chunk(s, &bt->chunks[i], bt->data + bt->chunks[i].at, cs);
		if (rc) {
			snprintf(why, whylen, "%s", prosper_pool_errormsg());
			return rc;
		}
	}
	int rc = s->cut.view ? write_from_view(s, cs, why, whylen) : 0;
	if (!rc && (rc = sup_nvm_commit(s)) != 0)
		snprintf(why, whylen, "%s", prosper_pool_errormsg());
	return rc;
}

void sup_committed(struct sup *s, const struct ckpt_stats *cs)
{
	/* adapt the stack's granularity to the density just seen */
	if (s->cfg.stack_mode == TRACK_MODE_DIFF) {
		if (s->stack_dense_left > 0)
			s->stack_dense_left--, s->tree->stats.bytes.stack_dense_checkpoints++;
		else if (cs->stack_pages && cs->stack * 100 >= cs->stack_pages * DENSE_PERCENT)
			s->stack_dense_left = DENSE_HOLD;
	}
	metalog_committed(s->meta);
}

/* The soundness oracle: after the commit, with the child still stopped, every saved mapping read
 * back from the pool equals the child's memory (the stack from SP-128 up). */
int sup_verify(struct sup *s)
{
	size_t cap = 0;
	uint8_t *img = NULL, *live = NULL;
	int rc = 0;
	for (int i = 0; i < s->nvmas && !rc; i++) {
		struct vma *v = &s->vmas[i];
		uint64_t from = v->sp ? prosper_stack_active_from(v->sp, v->start, v->end, 8) - v->start : 0;
		size_t len = v->end - v->start - from;
		if (len > cap) {
			free(img);
			free(live);
			cap = len;
			img = malloc(cap);
			live = malloc(cap);
			if (!img || !live) {
				rc = -ENOMEM;
				break;
			}
		}
		if (prosper_pool_region_read(s->tree->pool, (uint32_t)v->region, from, img, len) ||
		    proc_mem_read(s->pid, v->start + from, live, len) != 0) {
			rc = -EIO;
			break;
		}
		uint64_t differ = 0, first = 0, last = 0;
		for (size_t b = 0; b < len; b++)
			if (img[b] != live[b]) {
				if (!differ++)
					first = b;
				last = b;
			}
		if (differ) /* where the oracle disagreed: what a bug report needs */
			fprintf(stderr, "%s: verify: checkpoint %llu: %llu bytes differ in %llx-%llx %s (sp %llx), "
				"first at %llx, last at %llx\n", sup_command(), (unsigned long long)s->tree->stats.checkpoints + 1,
				(unsigned long long)differ, (unsigned long long)v->start, (unsigned long long)v->end,
				v->path[0] ? v->path : "[anonymous]", (unsigned long long)v->sp,
				(unsigned long long)(v->start + from + first), (unsigned long long)(v->start + from + last));
		s->tree->stats.bytes.mismatches += differ;
		s->tree->stats.bytes.verified_bytes += len;
	}
	free(img);
	free(live);
	return rc;
}

/* ------------------------------------------------------------------ tracking */

int sup_start_tracking(struct sup *s, int uffd)
{
	int all_full = s->cfg.stack_mode == TRACK_MODE_FULL && s->cfg.heap_mode == TRACK_MODE_FULL;
	if (all_full && uffd >= 0) {
		close(uffd);
		uffd = -1;
	}
	return prosper_track_open(&s->track, all_full ? PROSPER_TRACK_FULL : PROSPER_TRACK_PAGE, s->pid, uffd);
}

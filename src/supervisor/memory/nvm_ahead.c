/* nvm_ahead.c -- which NVM segments a fault opens besides its own (nvm.c, nvm_ahead.h).
 *
 * Opening ahead.  A fault costs the program two stops of the thread and the supervisor's
 * round trips (a few hundred microseconds here, docs/run-resume.md), far more than the
 * copy-on-write of one segment, so a program that wrote all over its NVM memory with a fault per
 * segment and interval ran many times slower than with DRAM.  A fault therefore opens the segments the program is about to write, predicted by
 * two rules:
 *   repeat   the first fault of an interval in a region opens every segment of that region the
 *            previous interval CHANGED (the commit found changed blocks in it; not merely opened,
 *            so a segment opened ahead and left alone drops out after one interval).  Those
 *            segments all have a backup already and their stale blocks are exactly that
 *            interval's changes, so one prosper_pool_direct_prepare_ahead copies them and needs
 *            two fences in all; a segment new in the previous epoch has no backup yet and is
 *            prepared on its own.  A writer that rewrites the same memory every interval (all of
 *            it, or a hot part) then takes one fault per interval and region.
 *   next     a fault at the segment just after one open in this interval (the program writes
 *            forward) opens the next 2, 4, 8 ... NEXT_MAX segments not open yet, doubling while
 *            the faults stay sequential (a file system's read-ahead, for writes).  A writer
 *            sweeping its memory takes a few faults per NEXT_MAX segments, and a sweep that
 *            fills the interval becomes a repeat set in the next one.  Without it, a dense
 *            writer slowed down by faults covers only a few dozen segments per interval and the
 *            repeat rule, always a sweep behind, would never catch up.
 * What opening ahead costs when the prediction is wrong: a copy of the segment's stale blocks
 * and a compare at the commit (tens of microseconds per segment), never a correctness issue.  The
 * repeat set of a writer whose segments do not repeat (a window sliding over its memory) is
 * judged at each commit.  When fewer than 1/POOR_PART of a region's repeat set was changed again
 * and at least that many segments were changed elsewhere (the program moved on), the set is poor;
 * after POOR_LIMIT poor intervals in a row the next SKIP_BASE first faults (doubling to 64 while
 * the probes that follow stay poor) open no repeat set; the next rule still applies.  When the
 * program wrote little anywhere (an idle interval: short, or the program starved on a loaded
 * machine) the interval proves nothing: the repeat set keeps its segments besides the ones
 * changed, up to IDLE_LIMIT idle intervals in a row (then it counts as poor, so a region written
 * densely once and barely after does not reopen everything forever).  Without this, a dense
 * writer on a loaded machine was sent back to a fault per segment for many intervals.  The
 * repeat set needs no cap: it is at most what the last interval (and the idle ones just before
 * it) changed.  After a resume there is no history, and the first interval faults segment by
 * segment (with the next rule).
 * Whole-region opening (every segment at the first fault) was tried before and removed: it
 * copied and compared all of a large region each interval however little was written.
 * Opening ahead is safe for the same reason a fault is: each segment is opened only after its own
 * copy-on-write is durable (N1), only once the previous commit has finished (N2), and it is
 * write-protected at the stop and block-compared at the commit like any written segment.  The
 * stats count segments opened ahead (nvm_ahead_segments) and how many of them the commits found
 * changed (nvm_ahead_changed).
 *
 */
#include "nvm_ahead.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "sup.h"

#define NEXT_MAX 64u    /* segments opened at most by one sequential fault (4 MiB) */
#define POOR_PART 4u    /* a repeat set is poor when fewer than 1/POOR_PART of it was changed */
#define POOR_LIMIT 2u   /* consecutive poor intervals before repeat sets are skipped */
#define SKIP_BASE 8u    /* first faults skipped then (doubling while probes stay poor, to 64) */
#define IDLE_LIMIT 2u   /* idle intervals in a row that keep the repeat set */

/* ahead_judge -- after the commit of an interval of r: REPEAT segments of its repeat set were
 * opened, HITS of them changed again, OTHER segments changed besides.  Returns 1 when the next
 * repeat set is this interval's changes, 0 when it keeps the last one as well (an idle interval:
 * the program wrote little anywhere -- a short or starved interval proves nothing -- at most
 * IDLE_LIMIT times in a row).  A poor set (the program moved on and wrote elsewhere) counts toward
 * skipping repeat sets for a while. */
int nvm_ahead_judge(struct nvm_region *r, uint32_t repeat, uint32_t hits, uint32_t other)
{
	if (!repeat) {
		/* no repeat set opened: nothing to judge; an interval that wrote nothing keeps it */
		if (!other && r->ahead_idle < IDLE_LIMIT) {
			r->ahead_idle++;
			return 0;
		}
		r->ahead_idle = 0;
		return 1;
	}
	if (hits * POOR_PART >= repeat) {
		r->ahead_poor = r->ahead_idle = 0;
		return 1;
	}
	if (other * POOR_PART < repeat && r->ahead_idle < IDLE_LIMIT) {
		r->ahead_idle++;
		return 0;
	}
	r->ahead_idle = 0;
	if (++r->ahead_poor >= POOR_LIMIT) {
		uint32_t sh = r->ahead_poor - POOR_LIMIT;
		r->ahead_skip = SKIP_BASE << (sh < 3 ? sh : 3);
	}
	return 1;
}

/* ahead_plan -- the segments the fault at k opens besides k: marks them in r->ahead with the rule
 * that chose them (only segments not open yet); returns how many. */
static uint32_t ahead_plan(struct sup *s, struct nvm_region *r, uint32_t k)
{
	uint32_t nsegs = (uint32_t)(r->len / s->nvm_seg), n = 0;
	if (!r->any_written) {
		/* the first fault of the interval in r: what the previous interval changed */
		r->ahead_next = 0;
		if (r->ahead_skip) {
			r->ahead_skip--;
			return 0;
		}
		for (uint32_t j = 0; j < nsegs; j++)
			if (r->changed[j] && j != k) {
				r->ahead[j] = AHEAD_REPEAT;
				n++;
			}
		return n;
	}
	if (k == 0 || !r->written[k - 1]) {
		r->ahead_next = 0; /* not the next segment after open ones */
		return 0;
	}
	r->ahead_next = r->ahead_next ? (2 * r->ahead_next < NEXT_MAX ? 2 * r->ahead_next : NEXT_MAX) : 2;
	for (uint32_t j = k + 1; j < nsegs && j <= k + r->ahead_next; j++)
		if (!r->written[j]) {
			r->ahead[j] = AHEAD_NEXT;
			n++;
		}
	return n;
}

/* prepare_set -- copy-on-write of what the fault at k opens: k and the segments ahead_plan
 * chose, returned in *set (ascending, *n of them, to free).  One batched prepare for the
 * segments that have a backup, a prepare each for the others (new in the previous epoch); a
 * segment other than k that cannot be prepared is left out and unmarked (it faults later like any
 * other).  On return every segment in the set is prepared and durable (N1).  0, or -1 when k
 * itself could not be prepared. */
int nvm_prepare_set(struct sup *s, struct nvm_region *r, uint32_t k, uint32_t **set, uint32_t *n,
		       char *why, size_t whylen)
{
	uint32_t nsegs = (uint32_t)(r->len / s->nvm_seg), m = ahead_plan(s, r, k) + 1, c = 0;
	uint32_t *v = malloc((size_t)m * sizeof *v);
	for (uint32_t j = 0; j < nsegs && c < m; j++)
		if (j == k || (r->ahead[j] && !r->written[j])) {
			if (v)
				v[c] = j;
			c++;
		}
	int rc = !v ? -ENOMEM : c > 1 ? prosper_pool_direct_prepare_ahead(s->tree->pool, r->id, v, c) : 0;
	if (!rc)
		rc = prosper_pool_direct_prepare(s->tree->pool, r->id, k);
	if (rc) {
		for (uint32_t j = 0; j < nsegs; j++)
			if (!r->written[j])
				r->ahead[j] = AHEAD_NONE;
		free(v);
		snprintf(why, whylen, "copy-on-write of NVM segment %u at %#llx failed: %s", k,
			 (unsigned long long)(r->start + (uint64_t)k * s->nvm_seg), rc == -ENOMEM ? "out of memory" :
			 prosper_pool_errormsg());
		return -1;
	}
	uint32_t w = 0;
	for (uint32_t i = 0; i < c; i++) {
		if (v[i] == k || prosper_pool_direct_prepare(s->tree->pool, r->id, v[i]) == 0)
			v[w++] = v[i];
		else
			r->ahead[v[i]] = AHEAD_NONE;
	}
	*set = v;
	*n = w;
	return 0;
}

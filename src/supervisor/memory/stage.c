/* stage.c -- the bytes of one checkpoint, read from a process into its batch (stage.h). */
#include "stage.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <time.h>
#include "prosper/stackckpt.h"
#include "procfs.h"
#include "readers.h"

static int grow(void **p, size_t *cap, size_t need, size_t each, size_t first)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : first;
	while (c < need)
		c *= 2;
	void *q = realloc(*p, c * each);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif
#define PAGE 4096ull
#define STAGE_FIRST (1ull << 20) /* the batch's first size */

/* The batch's bytes: one anonymous mapping, grown with mremap (its pages move with it, never
 * copied, so those in place stay in place).  In a stop it doubles; `exact` (stage_ahead) grows it
 * to need, rounded to a page. */
static int data_reserve(struct batch *bt, size_t need, int exact)
{
	if (need <= bt->cap)
		return 0;
	size_t c = bt->cap ? bt->cap : STAGE_FIRST;
	if (exact)
		c = (need + PAGE - 1) & ~(PAGE - 1);
	while (c < need)
		c *= 2;
	void *p = bt->data ? mremap(bt->data, bt->cap, c, MREMAP_MAYMOVE)
			   : mmap(NULL, c, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	bt->data = p;
	bt->cap = c;
	return 0;
}

uint8_t *stage_window(struct sup *s, size_t need)
{
	return data_reserve(&s->cut.batch, need, 0) == 0 ? s->cut.batch.data : NULL;
}

void stage_free(struct batch *bt)
{
	if (bt->data)
		munmap(bt->data, bt->cap);
	bt->data = NULL;
	bt->cap = bt->ready = bt->filled = 0;
}

/* A stack is live from SP - 128 up (whole 8-byte words); a tracker's pages below are not read. */
static uint64_t live_from(const struct vma *v, uint64_t a)
{
	uint64_t lo = prosper_stack_active_from(v->sp, v->start, v->end, 8);
	return lo > a ? lo : a;
}

int stage(struct sup *s, struct vma *v, uint64_t a, uint64_t b, int whole)
{
	int stack = v->sp != 0;
	if (stack && !whole)
		a = live_from(v, a);
	if (a >= b)
		return 0;
	struct batch *bt = &s->cut.batch;
	uint64_t len = b - a;
	if (grow((void **)&bt->chunks, &bt->chunks_cap, bt->nchunks + 1, sizeof *bt->chunks, 256) ||
	    data_reserve(bt, bt->len + len, 0))
		return -ENOMEM;
	bt->chunks[bt->nchunks++] = (struct chunk){ .region = (uint32_t)v->region, .whole = (uint8_t)whole,
						    .stack = (uint8_t)stack, .off = a - v->start, .addr = a, .len = len,
						    .at = bt->len };
	bt->len += len;
	return 0;
}

static int add_reread(struct batch *bt, size_t at, uint64_t addr, uint64_t len)
{
	if (grow((void **)&bt->rereads, &bt->rereads_cap, bt->nrereads + 1, sizeof *bt->rereads, 256))
		return -ENOMEM;
	bt->rereads[bt->nrereads++] = (struct reread){ at, addr, len };
	return 0;
}

int stage_range(struct sup *s, struct vma *v, uint64_t a, uint64_t b)
{
	if (v->sp)
		a = live_from(v, a);
	struct batch *bt = &s->cut.batch;
	while (a < b) {
		const struct chunk *c = NULL;
		for (; v->pre_cur < v->pre_n; v->pre_cur++) {
			c = &bt->chunks[v->pre_first + v->pre_cur];
			if (c->len && c->addr + c->len > a)
				break;
		}
		if (v->pre_cur == v->pre_n)
			return stage(s, v, a, b, 0);
		if (c->addr > a) { /* a gap before the next pre-copied chunk */
			uint64_t e = c->addr < b ? c->addr : b;
			int rc = stage(s, v, a, e, 0);
			if (rc)
				return rc;
			a = e;
			continue;
		}
		uint64_t e = c->addr + c->len < b ? c->addr + c->len : b;
		int rc = add_reread(bt, c->at + (a - c->addr), a, e - a);
		if (rc)
			return rc;
		s->tree->stats.precopy.reread_bytes += e - a;
		v->pre_again += e - a;
		a = e;
	}
	return 0;
}

/* `stopped`: the process does not run meanwhile, so the read is shared out between the cores
 * (readers.h); a pass beside the running program reads on this thread alone. */
int read_staged(struct sup *s, pid_t from, uint64_t *bytes, int stopped, int chunks, char *why, size_t whylen)
{
	/* every range staged and not read yet, in one list: a random write pattern names thousands
	 * of separate pages per interval, and proc_mem_readv moves many per system call */
	static struct iov_pairs rl;
	struct batch *bt = &s->cut.batch;
	uint64_t total = 0;
	int rc = 0;
	rl.n = 0;
	for (size_t i = bt->read_from; chunks && i < bt->nchunks && !rc; i++) {
		const struct chunk *c = &bt->chunks[i];
		if (c->len)
			rc = iov_pairs_add(&rl, bt->data + c->at, (void *)(uintptr_t)c->addr, c->len), total += c->len;
	}
	for (size_t i = 0; i < bt->nrereads && !rc; i++) {
		const struct reread *r = &bt->rereads[i];
		rc = iov_pairs_add(&rl, bt->data + r->at, (void *)(uintptr_t)r->addr, r->len), total += r->len;
	}
	uint64_t bad = 0;
	int got = 0;
	if (!rc && rl.n && !stopped) {
		got = proc_mem_readv(from, rl.local, rl.remote, rl.n, &bad);
	} else if (!rc && rl.n) {
		/* faults of ours in the read: fresh pages of the batch (stage_ahead); the helpers are
		 * threads of this process, so RUSAGE_SELF counts theirs */
		struct rusage before, after;
		getrusage(RUSAGE_SELF, &before);
		got = readers_readv(from, rl.local, rl.remote, rl.n, total, &bad);
		getrusage(RUSAGE_SELF, &after);
		s->tree->stats.stop.reads_shared += got > 1;
		s->tree->stats.stop.read_faults += (uint64_t)(after.ru_minflt - before.ru_minflt) +
						   (uint64_t)(after.ru_majflt - before.ru_majflt);
	}
	if (got < 0) {
		snprintf(why, whylen, "cannot read the program's memory at %#llx (pid %d%s): %s", (unsigned long long)bad,
			 (int)s->pid, from != s->pid ? ", from its copy-on-write view" : "", strerror(errno));
		rc = -EIO;
	}
	*bytes += total;
	if (chunks) {
		bt->read_from = bt->nchunks;
		bt->filled = bt->len;
	}
	bt->nrereads = 0;
	return rc;
}

void stage_note_could(struct sup *s)
{
	uint64_t could = 0;
	for (int i = 0; i < s->nvmas; i++)
		could += s->vmas[i].end - s->vmas[i].start;
	s->cut.batch.could = could;
}

uint64_t stage_unread_bytes(const struct sup *s)
{
	const struct batch *bt = &s->cut.batch;
	uint64_t n = 0;
	for (size_t i = bt->read_from; i < bt->nchunks; i++)
		n += bt->chunks[i].len;
	for (size_t i = 0; i < bt->nrereads; i++)
		n += bt->rereads[i].len;
	return n;
}

int stage_read(struct sup *s, char *why, size_t whylen)
{
	stage_note_could(s);
	return read_staged(s, s->pid, &s->tree->stats.stop.read_bytes, 1, 1, why, whylen);
}

/* How far ahead: twice the largest cut yet, at least `floor` (a program's first large cut comes
 * before any larger one), never more than the saved mappings hold; at most AHEAD_STEP faulted in
 * per commit (64 MiB at once took 36-38 ms here: a checkpoint late by that much). */
#define AHEAD_STEP (16ull << 20)

size_t stage_ahead(struct sup *s, uint64_t floor)
{
	struct batch *bt = &s->cut.batch;
	if (bt->filled > bt->most)
		bt->most = bt->filled;
	uint64_t in_place = bt->filled & ~(PAGE - 1); /* the stop's read wrote them */
	if (in_place > bt->ready)
		bt->ready = in_place;
	uint64_t want = 2 * bt->most > floor ? 2 * bt->most : floor;
	if (want > bt->could)
		want = bt->could;
	if (want < STAGE_FIRST)
		want = STAGE_FIRST; /* the first cut's too: what a small program's checkpoints read */
	want &= ~(PAGE - 1);
	if (want > bt->ready + AHEAD_STEP)
		want = bt->ready + AHEAD_STEP;
	if (want <= bt->ready || data_reserve(bt, want, 1) != 0)
		return bt->ready;
	uint8_t *from = bt->data + bt->ready;
	size_t n = want - bt->ready;
	if (madvise(from, n, MADV_POPULATE_WRITE) != 0) /* an older kernel: one write per page */
		for (size_t i = 0; i < n; i += PAGE)
			((volatile uint8_t *)from)[i] = 0;
	s->tree->stats.stop.staging_ahead_bytes += n;
	bt->ready = want;
	return bt->ready;
}

void stage_forget(struct sup *s)
{
	struct batch *bt = &s->cut.batch;
	bt->nchunks = bt->len = bt->filled = bt->read_from = bt->nrereads = bt->npre = 0;
	bt->pre_stale = 0;
	for (int i = 0; i < s->nvmas; i++)
		s->vmas[i].pre_armed = 0;
}

void stage_begin_cut(struct sup *s)
{
	if (!s->cut.batch.npre)
		stage_forget(s);
}

static struct vma *by_region(struct sup *s, uint32_t region)
{
	for (int i = 0; i < s->nvmas; i++)
		if ((uint32_t)s->vmas[i].region == region)
			return &s->vmas[i];
	return NULL;
}

int stage_keep_precopied(struct sup *s)
{
	struct batch *bt = &s->cut.batch;
	for (int i = 0; i < s->nvmas; i++) {
		struct vma *v = &s->vmas[i];
		v->pre_first = v->pre_n = v->pre_cur = 0;
		v->pre_bytes = v->pre_again = 0;
	}
	/* a pass stages each mapping's chunks together, in address order */
	for (size_t i = 0, j; i < bt->npre; i = j) {
		for (j = i; j < bt->npre && bt->chunks[j].region == bt->chunks[i].region; j++)
			;
		struct vma *v = by_region(s, bt->chunks[i].region);
		int gone = !v || v->added_gen == s->tree->cut.gen; /* removed, or replaced at this stop */
		for (size_t k = i; k < j; k++) {
			struct chunk *c = &bt->chunks[k];
			uint64_t keep = gone || c->addr >= v->end ? 0 : c->addr + c->len > v->end ? v->end - c->addr : c->len;
			s->tree->stats.precopy.dropped_bytes += c->len - keep;
			c->len = keep;
			if (!gone)
				v->pre_bytes += keep;
			if (c->len && bt->pre_stale && add_reread(bt, c->at, c->addr, c->len) != 0)
				return -ENOMEM;
		}
		if (!gone) {
			v->pre_first = i;
			v->pre_n = j - i;
		}
	}
	bt->npre = 0;
	bt->pre_stale = 0;
	return 0;
}

/* A mapping whose pre-copied bytes were mostly written again before the stop (a hash table
 * updated at random, an array swept every few ms) costs a pass twice the work for nothing: it
 * is left to the stop for PRE_SKIP_HOLD passes, then tried again. */
#define PRE_SKIP_PERCENT 50
#define PRE_SKIP_HOLD 8

void stage_judge_precopy(struct sup *s)
{
	if (s->cfg.copy_mode != COPY_PRECOPY)
		return;
	for (int i = 0; i < s->nvmas; i++) {
		struct vma *v = &s->vmas[i];
		if (v->pre_bytes && v->pre_again * 100 > v->pre_bytes * PRE_SKIP_PERCENT) {
			v->pre_skip = PRE_SKIP_HOLD;
			s->tree->stats.precopy.skips++;
		}
	}
}

/* crashsim.c -- crash-point, power-failure, nested-recovery and mutation testing of the pool
 * protocol (see include/prosper/crashsim.h for the model).
 *
 * Notes (modelling assumptions):
 *   - Persistence happens only through the persist layer; the simulator sees every flush,
 *     drain and commit-word store, and nothing else can make bytes durable.  Any byte the CPU
 *     wrote but did not make durable may or may not have reached the media (cache eviction).
 *   - Cache-line model: 64-byte lines, 8-byte atomic stores, so a line in flight is kept,
 *     dropped, or torn at 8-byte boundaries.
 *   - Page model (msync on an ordinary file): a page in flight is kept, dropped, or torn at
 *     512-byte sectors; a sector is written entirely or not at all (sector-atomic device).
 *   - Intermediate values between two persist points of the same line are not modelled.
 *   - The workload is deterministic in the seed, so crash point c of a run is reached again by
 *     re-running the workload with the crash armed at c.
 *
 * The engine (media, crash images, exploration) drives any struct prosper_crash_workload; the
 * pool's own workload (regions of every mode, a model of their bytes) is defined here too.
 */
#include <errno.h>
#include <setjmp.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "prosper/crashsim.h"
#include "prosper/pool.h"
#include "pool_internal.h"

/* ---------------------------------------------------------------- random numbers */

static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

static uint64_t rng_below(uint64_t *s, uint64_t n) { return n ? rng_next(s) % n : 0; }

uint64_t prosper_crashsim_random(uint64_t *s) { return rng_next(s); }
uint64_t prosper_crashsim_random_below(uint64_t *s, uint64_t n) { return rng_below(s, n); }

/* ---------------------------------------------------------------- simulated media */

struct sim {
	uint8_t *m;            /* what the CPU sees: the pool's base, a shared mapping of fd */
	int fd;                /* memory file holding m (a workload may map it again) */
	uint8_t *d;            /* what is durable */
	size_t size;
	int gran;
	uint32_t *pending;     /* cache-line model: lines flushed since the last drain */
	uint8_t *is_pending;
	size_t npending;
	uint64_t points;       /* persist events so far */
	uint64_t crash_at;     /* longjmp at this event (0: never) */
	uint64_t fail_at;      /* flush number that returns -EIO (0: never) */
	uint64_t flushes;
	int crash_site;
	jmp_buf *env;
	uint64_t *per_site;    /* counts per site, or NULL */
	struct prosper_persist_hooks hooks;
	struct prosper_persist pp;
};

enum { LINE = 64, PAGE = 4096, SECTOR = 512, WORD = 8 };

static void sim_point(struct sim *s, int site)
{
	s->points++;
	if (s->per_site)
		s->per_site[site]++;
	if (s->crash_at && s->points == s->crash_at) {
		s->crash_site = site;
		longjmp(*s->env, 1);
	}
}

static int sim_on_flush(void *ctx, int site, const void *addr, size_t len)
{
	struct sim *s = ctx;
	sim_point(s, site);
	s->flushes++;
	if (s->fail_at && s->flushes == s->fail_at)
		return -EIO;
	size_t from = (size_t)((const uint8_t *)addr - s->m), to = from + len;
	if (s->gran == PROSPER_GRAN_PAGE) {
		/* msync: synchronous, whole pages */
		size_t a = from / PAGE * PAGE, b = (to + PAGE - 1) / PAGE * PAGE;
		if (b > s->size)
			b = s->size;
		memcpy(s->d + a, s->m + a, b - a);
		return 0;
	}
	for (size_t l = from / LINE; l < (to + LINE - 1) / LINE; l++) {
		if (!s->is_pending[l]) {
			s->is_pending[l] = 1;
			s->pending[s->npending++] = (uint32_t)l;
		}
	}
	return 0;
}

static void sim_on_drain(void *ctx, int site)
{
	struct sim *s = ctx;
	sim_point(s, site);
	for (size_t i = 0; i < s->npending; i++) {
		size_t l = s->pending[i];
		memcpy(s->d + l * LINE, s->m + l * LINE, LINE);
		s->is_pending[l] = 0;
	}
	s->npending = 0;
}

static void sim_on_store64(void *ctx, int site, const void *addr)
{
	sim_point(ctx, site);
}

static int sim_init(struct sim *s, size_t size, int gran, uint64_t skip_mask)
{
	memset(s, 0, sizeof *s);
	s->size = size;
	s->gran = gran;
	s->fd = memfd_create("prosper-crashsim", MFD_CLOEXEC);
	if (s->fd < 0 || ftruncate(s->fd, (off_t)size))
		return -errno;
	s->m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
	if (s->m == MAP_FAILED) {
		s->m = NULL;
		return -errno;
	}
	s->d = malloc(size);
	s->pending = malloc(size / LINE * sizeof *s->pending);
	s->is_pending = calloc(size / LINE, 1);
	if (!s->m || !s->d || !s->pending || !s->is_pending)
		return -ENOMEM;
	s->hooks = (struct prosper_persist_hooks){ sim_on_flush, sim_on_drain, sim_on_store64, s };
	s->pp = (struct prosper_persist){ .granularity = gran, .simulated = 1, .hooks = &s->hooks,
					  .skip_sites = skip_mask };
	return 0;
}

/* sim_reset -- media holds `image` (both views equal, nothing in flight), counters zero. */
static void sim_reset(struct sim *s, const uint8_t *image)
{
	memcpy(s->m, image, s->size);
	memcpy(s->d, image, s->size);
	memset(s->is_pending, 0, s->size / LINE);
	s->npending = 0;
	s->points = s->flushes = 0;
	s->crash_at = s->fail_at = 0;
	s->pp.error = 0;
}

static void sim_free(struct sim *s)
{
	if (s->m)
		munmap(s->m, s->size);
	if (s->fd >= 0)
		close(s->fd);
	free(s->d);
	free(s->pending);
	free(s->is_pending);
}

/* inflight -- units (lines or pages) whose CPU view differs from the durable one. */
static size_t inflight(const struct sim *s, uint32_t *units)
{
	size_t unit = s->gran == PROSPER_GRAN_PAGE ? PAGE : LINE, n = 0;
	for (size_t u = 0; u < s->size / unit; u++)
		if (memcmp(s->m + u * unit, s->d + u * unit, unit) != 0)
			units[n++] = (uint32_t)u;
	return n;
}

enum choice { KEEP_OLD = 0, TAKE_NEW = 1, TEAR = 2 };

/* build_image -- durable image plus, per in-flight unit, old / new / torn. */
static void build_image(const struct sim *s, const uint32_t *units, size_t n, const uint8_t *choice,
			uint64_t *rng, uint8_t *out)
{
	size_t unit = s->gran == PROSPER_GRAN_PAGE ? PAGE : LINE;
	size_t piece = s->gran == PROSPER_GRAN_PAGE ? SECTOR : WORD;
	memcpy(out, s->d, s->size);
	for (size_t i = 0; i < n; i++) {
		size_t off = (size_t)units[i] * unit;
		if (choice[i] == TAKE_NEW) {
			memcpy(out + off, s->m + off, unit);
		} else if (choice[i] == TEAR) {
			for (size_t p = 0; p < unit; p += piece)
				if (rng_next(rng) & 1)
					memcpy(out + off + p, s->m + off + p, piece);
		}
	}
}

/* ---------------------------------------------------------------- reference model */

#define MAXR 6
#define MAXEPOCHS 64

struct mreg {
	char name[PROSPER_REGION_NAME_MAX];
	uint32_t id, mode;
	uint64_t len;
	uint8_t *data;
};

struct model {
	struct mreg r[MAXR];
	int n;
	uint8_t blob[200];
	size_t blob_len;
};

static void model_free(struct model *m)
{
	for (int i = 0; i < m->n; i++)
		free(m->r[i].data);
	m->n = 0;
}

static void model_copy(struct model *dst, const struct model *src)
{
	*dst = *src;
	for (int i = 0; i < src->n; i++) {
		dst->r[i].data = malloc(src->r[i].len ? src->r[i].len : 1);
		memcpy(dst->r[i].data, src->r[i].data, src->r[i].len);
	}
}

static void model_resize(struct mreg *r, uint64_t len)
{
	r->data = realloc(r->data, len ? len : 1);
	if (len > r->len)
		memset(r->data + r->len, 0, len - r->len);
	r->len = len;
}

/* check_pool -- the pool's committed state equals the model, byte for byte. */
static int check_pool(prosper_pool *p, const struct model *want, char *why, size_t whylen)
{
	if (prosper_pool_region_count(p) != want->n) {
		snprintf(why, whylen, "epoch %llu: %d regions, expected %d", (unsigned long long)prosper_pool_epoch(p),
			 prosper_pool_region_count(p), want->n);
		return -1;
	}
	for (int i = 0; i < want->n; i++) {
		const struct mreg *r = &want->r[i];
		int idx = prosper_pool_region_find(p, r->name);
		struct prosper_region_info info;
		if (idx < 0 || prosper_pool_region_get(p, idx, &info) || info.id != r->id || info.mode != r->mode ||
		    info.length != r->len) {
			snprintf(why, whylen, "epoch %llu: region %s missing or its size/mode differs",
				 (unsigned long long)prosper_pool_epoch(p), r->name);
			return -1;
		}
		uint8_t *buf = malloc(r->len ? r->len : 1);
		prosper_pool_region_read(p, r->id, 0, buf, r->len);
		for (uint64_t b = 0; b < r->len; b++) {
			if (buf[b] != r->data[b]) {
				snprintf(why, whylen, "epoch %llu: region %s differs at byte %llu",
					 (unsigned long long)prosper_pool_epoch(p), r->name, (unsigned long long)b);
				free(buf);
				return -1;
			}
		}
		free(buf);
	}
	size_t bl;
	const void *blob = prosper_pool_blob(p, &bl);
	if (bl != want->blob_len || (bl && memcmp(blob, want->blob, bl))) {
		snprintf(why, whylen, "epoch %llu: blob differs", (unsigned long long)prosper_pool_epoch(p));
		return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------- workload */

struct workload {
	uint64_t seed;
	int epochs;
	struct prosper_pool_config cfg;
	size_t size;
	prosper_pool *pool;
	struct model cur;             /* the caller's working state */
	struct model snap[MAXEPOCHS]; /* committed states, by epoch */
	int nsnap;
	struct prosper_crash_progress *pr;
	/* a continued epoch (wl_cont): the reference it replaced */
	struct model cont_saved;
	uint64_t cont_e;
	int cont_nsnap, cont_active;
};

/* wl_release -- free the pool handle without touching the media; references stay. */
static void wl_release(void *ctx)
{
	struct workload *w = ctx;
	if (w->pool)
		prosper_pool_abandon(&w->pool);
}

static void wl_reset(void *ctx)
{
	struct workload *w = ctx;
	wl_release(w);
	model_free(&w->cur);
	w->cur.blob_len = 0;
	for (int i = 0; i < w->nsnap; i++)
		model_free(&w->snap[i]);
	w->nsnap = 0;
}

static void fill_random(uint8_t *p, size_t n, uint64_t *rng)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rng_next(rng);
}

/* Redo regions stay small: their logs take twice their length in slots of their own. */
static uint64_t max_len(uint32_t mode, uint32_t seg) { return (mode == PROSPER_REGION_REDO ? 2ull : 4ull) * seg; }

static int wl_add(prosper_pool *p, struct model *m, const char *name, uint32_t mode, uint64_t len)
{
	struct mreg r = { 0 };
	snprintf(r.name, sizeof r.name, "%s", name);
	r.mode = mode;
	uint32_t kind = mode == PROSPER_REGION_REDO ? PROSPER_KIND_STACK : PROSPER_KIND_ANON;
	int id = prosper_pool_region_add(p, r.name, kind, r.mode, 0x10000 * (m->n + 1), len, 3);
	if (id == -EEXIST)
		return 0;
	if (id < 0)
		return id;
	r.id = (uint32_t)id;
	model_resize(&r, len);
	m->r[m->n++] = r;
	return 0;
}

/* One random operation on pool + model.  Returns a negative pool error (model unchanged). */
static int wl_op(prosper_pool *p, struct model *m, uint64_t *rng, uint32_t seg)
{
	uint64_t kind = rng_below(rng, 16);
	if (m->n == 0 || (kind == 0 && m->n < MAXR)) {
		char name[PROSPER_REGION_NAME_MAX];
		snprintf(name, sizeof name, "r%llu", (unsigned long long)rng_below(rng, 1000000));
		static const uint32_t modes[3] = { PROSPER_REGION_DIRECT, PROSPER_REGION_REDO, PROSPER_REGION_BUFFERED };
		uint32_t mode = modes[rng_below(rng, 3)];
		return wl_add(p, m, name, mode, 1 + rng_below(rng, max_len(mode, seg) * 3 / 4));
	}
	struct mreg *r = &m->r[rng_below(rng, (uint64_t)m->n)];
	if (kind == 1) {
		uint64_t len = rng_below(rng, max_len(r->mode, seg));
		int rc = prosper_pool_region_resize(p, r->id, len);
		if (rc)
			return rc;
		model_resize(r, len);
		return 0;
	}
	if (kind == 2 && rng_below(rng, 3) == 0) {
		int rc = prosper_pool_region_remove(p, r->id);
		if (rc)
			return rc;
		free(r->data);
		*r = m->r[--m->n];
		return 0;
	}
	if (r->len == 0)
		return 0;
	/* a write: small and sparse, or long and crossing blocks/segments */
	uint64_t off = rng_below(rng, r->len);
	uint64_t maxlen = r->len - off;
	uint64_t len = 1 + rng_below(rng, rng_below(rng, 4) == 0 ? maxlen : (maxlen < 24 ? maxlen : 24));
	/* On the stack: a simulated crash longjmps out of the pool calls below. */
	uint8_t buf[4 * 4096];
	if (len > sizeof buf)
		len = sizeof buf;
	fill_random(buf, len, rng);
	int rc = 0;
	if (r->mode == PROSPER_REGION_BUFFERED || r->mode == PROSPER_REGION_REDO) {
		rc = prosper_pool_write(p, r->id, off, buf, len);
	} else {
		for (uint64_t k = off / seg; !rc && k <= (off + len - 1) / seg; k++)
			rc = prosper_pool_direct_prepare(p, r->id, (uint32_t)k);
		for (uint64_t done = 0; !rc && done < len;) {
			uint64_t o = off + done;
			uint64_t n = seg - o % seg < len - done ? seg - o % seg : len - done;
			uint8_t *dst = prosper_pool_direct_addr(p, r->id, (uint32_t)(o / seg), NULL);
			memcpy(dst + o % seg, buf + done, n);
			done += n;
		}
		if (!rc)
			rc = prosper_pool_direct_dirty(p, r->id, off, len);
	}
	if (!rc)
		memcpy(r->data + off, buf, len);
	return rc;
}

/* wl_run -- the full workload on the simulated media; returns normally only if no crash. */
static void wl_run(void *ctx, uint8_t *base, int fd, struct prosper_persist *pp, struct prosper_crash_progress *pr)
{
	struct workload *w = ctx;
	(void)fd;
	w->pr = pr;
	uint64_t rng = w->seed * 0x9E3779B97F4A7C15ull + 1;
	int rc = prosper_pool_create_mem(base, w->size, &w->cfg, pp, &w->pool);
	if (rc) {
		pr->failed = 1;
		return;
	}
	pr->create_done = 1;
	model_copy(&w->snap[0], &w->cur);
	w->nsnap = 1;
	for (int e = 1; e <= w->epochs && e < MAXEPOCHS; e++) {
		int ops = 1 + (int)rng_below(&rng, 6);
		/* Every workload has a stack from the first epoch on (more may come and go). */
		if (e == 1 && (rc = wl_add(w->pool, &w->cur, "stack", PROSPER_REGION_REDO,
					   w->cfg.seg_size + 1 + rng_below(&rng, w->cfg.seg_size / 2))) != 0) {
			pr->failed = rc == -EIO ? 1 : 2;
			return;
		}
		for (int i = 0; i < ops; i++) {
			rc = wl_op(w->pool, &w->cur, &rng, w->cfg.seg_size);
			if (rc == -EIO) {
				pr->failed = 1;
				return;
			}
			if (rc == -ENOSPC)
				continue;
			if (rc) {
				pr->failed = 2; /* not expected: a bug */
				return;
			}
		}
		w->cur.blob_len = rng_below(&rng, sizeof w->cur.blob + 1);
		fill_random(w->cur.blob, w->cur.blob_len, &rng);
		/* the reference of the epoch being committed exists before the commit starts */
		model_copy(&w->snap[e], &w->cur);
		w->nsnap = e + 1;
		pr->hi = (uint64_t)e;
		rc = prosper_pool_commit(w->pool, w->cur.blob, w->cur.blob_len);
		if (rc) {
			/* hi stays: a failed commit may or may not have become durable */
			pr->failed = rc == -EIO ? 1 : 2;
			return;
		}
		pr->lo = (uint64_t)e;
	}
}

static int wl_check(void *ctx, prosper_pool *p, uint8_t *base, int fd, char *why, size_t whylen)
{
	struct workload *w = ctx;
	(void)base, (void)fd;
	uint64_t e = prosper_pool_epoch(p);
	if (e >= (uint64_t)w->nsnap) {
		snprintf(why, whylen, "recovered epoch %llu, which was never committed", (unsigned long long)e);
		return -1;
	}
	return check_pool(p, &w->snap[e], why, whylen);
}

/* wl_cont -- a few more operations and a commit on a recovered pool (epoch e); the reference
 * of e+1 is the model they change, installed first. */
static int wl_cont(void *ctx, prosper_pool *p, uint8_t *base, int fd, uint64_t e, uint64_t *rng, char *why,
		   size_t whylen)
{
	struct workload *w = ctx;
	(void)base, (void)fd;
	w->pool = p;
	if (e + 1 >= MAXEPOCHS)
		return 0;
	w->cont_saved = w->snap[e + 1];
	w->cont_e = e;
	w->cont_nsnap = w->nsnap;
	w->cont_active = 1;
	model_copy(&w->snap[e + 1], &w->snap[e]);
	if (w->nsnap < (int)e + 2)
		w->nsnap = (int)e + 2;
	struct model *m = &w->snap[e + 1];
	for (int i = 0; i < 4; i++)
		if (wl_op(p, m, rng, w->cfg.seg_size) == -EIO)
			break;
	m->blob_len = 3;
	memcpy(m->blob, "abc", 3);
	if (prosper_pool_commit(p, m->blob, m->blob_len) != 0) {
		snprintf(why, whylen, "commit after recovery failed: %s", prosper_pool_errormsg());
		return -1;
	}
	return 0;
}

static void wl_cont_forget(void *ctx)
{
	struct workload *w = ctx;
	if (!w->cont_active)
		return;
	model_free(&w->snap[w->cont_e + 1]);
	w->snap[w->cont_e + 1] = w->cont_saved;
	w->nsnap = w->cont_nsnap;
	w->cont_active = 0;
}

/* ---------------------------------------------------------------- checking crash images */

struct run {
	const struct prosper_crashsim_config *cfg;
	struct prosper_crashsim_result *res;
	const struct prosper_crash_workload *wl;
	struct prosper_crash_progress pr; /* of the run being explored */
	struct sim rec;        /* media for recovering an image (and crashing inside it) */
	uint8_t *img;
	uint64_t rng;
	uint64_t skip_mask;
	uint64_t deeper_count;
	uint32_t *units;       /* scratch for in-flight checks after recovery */
	uint64_t point;        /* crash point being explored, for the report */
	int site;
};

static void fail(struct run *r, const char *fmt, const char *why)
{
	r->res->inconsistent++;
	if (!r->res->first_failure[0]) {
		char msg[400];
		snprintf(msg, sizeof msg, fmt, why);
		snprintf(r->res->first_failure, sizeof r->res->first_failure, "crash point %llu (%s): %s",
			 (unsigned long long)r->point, prosper_persist_site_name(r->site), msg);
	}
}

/* recover_and_check -- open the image on r->rec (armed to crash at crash_at, 0 = never).
 * Returns 1 if it crashed, 0 if recovered (checked against lo..hi), -1 if inconsistent. */
static int recover_and_check(struct run *r, const uint8_t *image, uint64_t lo, uint64_t hi, int may_be_empty,
			     uint64_t crash_at, prosper_pool **keep)
{
	jmp_buf env;
	sim_reset(&r->rec, image);
	r->rec.env = &env;
	r->rec.crash_at = crash_at;
	prosper_pool *p = NULL;
	if (setjmp(env)) {
		pool_loading_abandon();
		return 1;
	}
	int rc = prosper_pool_open_mem(r->rec.m, r->rec.size, &r->rec.pp, &p);
	r->rec.crash_at = 0;
	char why[400];
	if (may_be_empty) {
		/* The crash came before create finished: no pool, or an empty epoch 0. */
		if (rc == 0 && (prosper_pool_epoch(p) != 0 || prosper_pool_region_count(p) != 0))
			fail(r, "%s", "a pool whose creation was interrupted is not empty");
		if (rc == 0)
			prosper_pool_abandon(&p);
		return 0;
	}
	if (rc) {
		snprintf(why, sizeof why, "recovery refused: %s", prosper_pool_errormsg());
		fail(r, "%s", why);
		return -1;
	}
	/* Recovery's repairs must all be durable when open returns (pmemcheck's question). */
	size_t left = inflight(&r->rec, r->units);
	if (left) {
		snprintf(why, sizeof why, "recovery returned with %zu units not durable", left);
		fail(r, "%s", why);
		prosper_pool_abandon(&p);
		return -1;
	}
	uint64_t e = prosper_pool_epoch(p);
	if (e < lo || e > hi) {
		snprintf(why, sizeof why, "recovered epoch %llu, expected %llu..%llu", (unsigned long long)e,
			 (unsigned long long)lo, (unsigned long long)hi);
		fail(r, "%s", why);
		prosper_pool_abandon(&p);
		return -1;
	}
	if (r->wl->check(r->wl->ctx, p, r->rec.m, r->rec.fd, why, sizeof why)) {
		fail(r, "%s", why);
		prosper_pool_abandon(&p);
		return -1;
	}
	if (keep)
		*keep = p;
	else
		prosper_pool_abandon(&p);
	return 0;
}

/* one random choice vector for n units */
static void random_choice(uint8_t *c, size_t n, uint64_t *rng)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t x = rng_below(rng, 5);
		c[i] = x < 2 ? KEEP_OLD : x < 4 ? TAKE_NEW : TEAR;
	}
}

/* nested -- crash inside the recovery of `image` at each of its persist points; recover the
 * resulting images again.  Every recovery is checked. */
static void nested(struct run *r, const uint8_t *image, uint64_t lo, uint64_t hi)
{
	uint8_t *copy = malloc(r->rec.size), *img2 = malloc(r->rec.size);
	uint32_t *units = malloc(r->rec.size / LINE * sizeof *units);
	uint8_t *choice = malloc(r->rec.size / LINE);
	memcpy(copy, image, r->rec.size);
	for (uint64_t j = 1; j < 10000; j++) {
		int c = recover_and_check(r, copy, lo, hi, 0, j, NULL);
		if (c != 1)
			break; /* recovery finished before point j */
		size_t n = inflight(&r->rec, units);
		random_choice(choice, n, &r->rng);
		build_image(&r->rec, units, n, choice, &r->rng, img2);
		r->res->states++;
		r->res->nested_states++;
		if (recover_and_check(r, img2, lo, hi, 0, 0, NULL) < 0 && r->cfg->stop_at_first)
			break;
	}
	free(copy);
	free(img2);
	free(units);
	free(choice);
}

/* continued -- recover, run one more epoch on the recovered pool, crash it at a random point,
 * recover again: the repairs and the in-DRAM view after recovery must be right too. */
static void continued(struct run *r, const uint8_t *image, uint64_t lo, uint64_t hi)
{
	const struct prosper_crash_workload *wl = r->wl;
	prosper_pool *p = NULL;
	if (!wl->cont || recover_and_check(r, image, lo, hi, 0, 0, &p) != 0 || !p)
		return;
	uint64_t e = prosper_pool_epoch(p);
	uint8_t *after = malloc(r->rec.size);
	uint32_t *units = malloc(r->rec.size / LINE * sizeof *units);
	uint8_t *choice = malloc(r->rec.size / LINE);
	jmp_buf env;
	r->rec.env = &env;
	r->rec.crash_at = r->rec.points + 1 + rng_below(&r->rng, 40);
	volatile int crashed = 0;
	char why[400];
	if (setjmp(env))
		crashed = 1;
	else if (wl->cont(wl->ctx, p, r->rec.m, r->rec.fd, e, &r->rng, why, sizeof why))
		fail(r, "%s", why);
	r->rec.crash_at = 0;
	wl->release(wl->ctx);
	size_t n = inflight(&r->rec, units);
	random_choice(choice, n, &r->rng);
	build_image(&r->rec, units, n, choice, &r->rng, after);
	r->res->states++;
	r->res->continued_states++;
	recover_and_check(r, after, crashed ? e : e + 1, e + 1, 0, 0, NULL);
	if (wl->cont_forget)
		wl->cont_forget(wl->ctx);
	free(after);
	free(units);
	free(choice);
}

/* deeper -- every 8th recovered image is also crashed inside its recovery, and every 8th
 * (another one) continued for one more epoch. */
static void deeper(struct run *r, int rc, int may_be_empty, uint64_t lo, uint64_t hi)
{
	if (rc != 0 || may_be_empty)
		return;
	r->deeper_count++;
	if (r->deeper_count % 8 == 3)
		nested(r, r->img, lo, hi);
	else if (r->deeper_count % 8 == 7)
		continued(r, r->img, lo, hi);
}

/* explore -- all crash images of one crash point. */
static void explore(struct run *r, struct sim *s, uint64_t budget)
{
	uint64_t lo = r->pr.lo, hi = r->pr.hi;
	int may_be_empty = !r->pr.create_done;
	uint32_t *units = malloc(s->size / LINE * sizeof *units);
	uint8_t *choice = malloc(s->size / LINE);
	size_t n = inflight(s, units);
	if (n > r->res->max_inflight)
		r->res->max_inflight = n;
	uint64_t made = 0;
	/* Exhaustive keep/drop subsets when they fit the budget. */
	int exhaustive = n < 20 && (1ull << n) <= budget;
	uint64_t total = exhaustive ? (1ull << n) : budget;
	for (uint64_t k = 0; k < total; k++) {
		if (exhaustive) {
			for (size_t i = 0; i < n; i++)
				choice[i] = (k >> i) & 1 ? TAKE_NEW : KEEP_OLD;
		} else if (k == 0 || k == 1) {
			/* accumulative (a prefix durable) and reverse (a suffix durable) */
			size_t cut = (size_t)rng_below(&r->rng, n + 1);
			for (size_t i = 0; i < n; i++)
				choice[i] = (k == 0 ? i < cut : i >= cut) ? TAKE_NEW : KEEP_OLD;
		} else {
			random_choice(choice, n, &r->rng);
		}
		build_image(s, units, n, choice, &r->rng, r->img);
		r->res->states++;
		made++;
		int rc = recover_and_check(r, r->img, lo, hi, may_be_empty, 0, NULL);
		if (rc < 0 && r->cfg->stop_at_first)
			break;
		deeper(r, rc, may_be_empty, lo, hi);
		if (r->cfg->stop_at_first && r->res->inconsistent)
			break;
	}
	/* Torn variants of the exhaustive case. */
	if (exhaustive && n) {
		for (uint64_t k = made; k < budget && !(r->cfg->stop_at_first && r->res->inconsistent); k++) {
			for (size_t i = 0; i < n; i++)
				choice[i] = (uint8_t)rng_below(&r->rng, 3);
			build_image(s, units, n, choice, &r->rng, r->img);
			r->res->states++;
			int rc = recover_and_check(r, r->img, lo, hi, may_be_empty, 0, NULL);
			deeper(r, rc, may_be_empty, lo, hi);
		}
	}
	free(units);
	free(choice);
}

void prosper_crashsim_config_default(struct prosper_crashsim_config *c)
{
	memset(c, 0, sizeof *c);
	c->states = 100000;
	c->seed = 1;
	c->granularity = PROSPER_GRAN_CACHE_LINE;
	c->epochs = 14;
	c->skip_site = -1;
}

int prosper_crashsim_run(const struct prosper_crashsim_config *c, struct prosper_crashsim_result *res)
{
	struct workload w;
	memset(&w, 0, sizeof w);
	w.seed = c->seed;
	w.epochs = c->epochs < MAXEPOCHS - 2 ? c->epochs : MAXEPOCHS - 2;
	prosper_pool_config_default(&w.cfg);
	w.cfg.seg_size = 4096;
	w.cfg.block_size = 256;
	w.cfg.capacity = 36 * 4096;
	w.cfg.max_regions = 8;
	w.cfg.max_backups = 3;
	w.cfg.meta_bytes = 2048;
	int64_t sz = prosper_pool_size_for(&w.cfg);
	if (sz < 0)
		return (int)sz;
	w.size = (size_t)sz;
	struct prosper_crash_workload wl = {
		.ctx = &w, .media_bytes = w.size, .run = wl_run, .release = wl_release, .reset = wl_reset,
		.check = wl_check, .cont = wl_cont, .cont_forget = wl_cont_forget, .io_errors = 1,
	};
	return prosper_crashsim_run_workload(c, &wl, res);
}

/* run_once -- the workload on media s from garbage, crashing at persist point crash_at and
 * failing flush fail_at (0: never); 1 if it was cut short by a crash. */
static int run_once(const struct prosper_crash_workload *wl, struct sim *s, const uint8_t *garbage, uint64_t crash_at,
		    uint64_t fail_at, struct prosper_crash_progress *pr)
{
	jmp_buf env;
	sim_reset(s, garbage);
	s->env = &env;
	s->crash_at = crash_at;
	s->fail_at = fail_at;
	memset(pr, 0, sizeof *pr);
	if (setjmp(env)) {
		pool_loading_abandon(); /* a pool whose create or open was cut short, if any */
		wl->release(wl->ctx);
		return 1;
	}
	wl->run(wl->ctx, s->m, s->fd, &s->pp, pr);
	wl->release(wl->ctx);
	return 0;
}

int prosper_crashsim_run_workload(const struct prosper_crashsim_config *c, const struct prosper_crash_workload *wl,
				  struct prosper_crashsim_result *res)
{
	memset(res, 0, sizeof *res);
	size_t size = wl->media_bytes;
	struct run r = { .cfg = c, .res = res, .wl = wl, .rng = c->seed ^ 0xC0FFEEull };
	uint64_t skip = c->skip_site >= 0 ? 1ull << c->skip_site : 0;
	struct sim s;
	uint8_t *garbage = malloc(size);
	r.img = malloc(size);
	r.units = malloc(size / LINE * sizeof *r.units);
	if (sim_init(&s, size, c->granularity, skip) || sim_init(&r.rec, size, c->granularity, skip) || !garbage ||
	    !r.img || !r.units)
		return -ENOMEM;
	/* Media starts as garbage: nothing may rely on a fresh file reading zero. */
	uint64_t g = c->seed + 77;
	fill_random(garbage, size, &g);
	int saved_mutation = pool_mutation;
	pool_mutation = c->mutation;

	/* Dry run: how many persist points, per site. */
	s.per_site = res->points_per_site;
	run_once(wl, &s, garbage, 0, 0, &r.pr);
	s.per_site = NULL;
	uint64_t points = s.points;
	res->epochs = r.pr.lo;
	if (r.pr.failed == 2 && !c->mutation && c->skip_site < 0) {
		snprintf(res->first_failure, sizeof res->first_failure, "workload failed: %s",
			 r.pr.why ? r.pr.why : prosper_pool_errormsg());
		res->inconsistent++;
	}
	wl->reset(wl->ctx);

	for (uint64_t cp = 1; cp <= points; cp++) {
		/* spread what is left of the budget over the points that are left */
		uint64_t left = c->states > res->states ? c->states - res->states : 0;
		uint64_t per_point = (left + (points - cp)) / (points - cp + 1);
		if (per_point < 1)
			per_point = 1;
		int crashed = run_once(wl, &s, garbage, cp, 0, &r.pr);
		if (crashed) { /* always: the run is deterministic */
			res->crash_points++;
			r.point = cp;
			r.site = s.crash_site;
			explore(&r, &s, per_point);
		}
		wl->reset(wl->ctx);
		if (c->stop_at_first && res->inconsistent)
			break;
	}

	/* I/O errors: a flush that fails must leave the committed epoch intact. */
	for (uint64_t f = 1; wl->io_errors && !(c->stop_at_first && res->inconsistent); f++) {
		int crashed = run_once(wl, &s, garbage, 0, f, &r.pr);
		if (crashed || !r.pr.failed) { /* every flush done: no more failure points */
			wl->reset(wl->ctx);
			break;
		}
		if (r.pr.failed == 2 && !c->mutation && c->skip_site < 0) {
			res->inconsistent++;
			if (!res->first_failure[0])
				snprintf(res->first_failure, sizeof res->first_failure, "I/O error at flush %llu led to: %s",
					 (unsigned long long)f, prosper_pool_errormsg());
		}
		/* after the error the process gives up: what is durable is D */
		memcpy(r.img, s.d, size);
		res->states++;
		recover_and_check(&r, r.img, r.pr.lo, r.pr.hi, !r.pr.create_done, 0, NULL);
		wl->reset(wl->ctx);
		if (f > 4 * points + 100)
			break;
	}
	pool_mutation = saved_mutation;
	sim_free(&s);
	sim_free(&r.rec);
	free(garbage);
	free(r.img);
	free(r.units);
	return 0;
}

/* ---------------------------------------------------------------- mutants */

static const int mutant_sites[] = {
	PSITE_CREATE, PSITE_SEG_INIT, PSITE_SEG_CATCHUP, PSITE_DATA, PSITE_DIRECT_DATA, PSITE_STATE, PSITE_META,
	PSITE_COMMIT_A, PSITE_COMMIT_B, PSITE_COW_COPY, PSITE_COW_STATE, PSITE_BIND, PSITE_RECOVER_COPY,
	PSITE_RECOVER_STATE, PSITE_RECOVER_COMMIT, PSITE_REDO_LOG, PSITE_REDO_APPLY, PSITE_RECOVER_REDO,
};
#define NSITES ((int)(sizeof mutant_sites / sizeof mutant_sites[0]))

int prosper_crashsim_mutant_count(void)
{
	return NSITES + (MUT_COUNT - 1);
}

const char *prosper_crashsim_mutant(int i, struct prosper_crashsim_config *c)
{
	static char name[64];
	c->skip_site = -1;
	c->mutation = 0;
	if (i < NSITES) {
		c->skip_site = mutant_sites[i];
		snprintf(name, sizeof name, "no_persist_%s", prosper_persist_site_name(mutant_sites[i]));
	} else {
		c->mutation = i - NSITES + 1;
		snprintf(name, sizeof name, "%s", pool_mutation_name(c->mutation));
	}
	return name;
}

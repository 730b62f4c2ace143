/* engine.c -- the crash simulator's engine: simulated media behind the persist layer, crash
 * images at every persist point, recovery and checking, nested crashes, continued epochs, I/O
 * errors (include/prosper/internal/crashsim.h for the model).
 *
 * Notes (modelling assumptions):
 *   - Persistence happens only through the persist layer; the simulator sees every flush,
 *     drain and commit-word store, and nothing else can make bytes durable.  Any byte the CPU
 *     wrote but did not make durable may or may not have reached the media (cache eviction).
 *   - Cache-line model: 64-byte lines, 8-byte atomic stores, so a line in flight is kept,
 *     dropped, or torn at 8-byte boundaries.
 *   - Page model (a pool file on a disk): a flush only starts a page's write-back and the drain
 *     (fdatasync) makes every flushed page durable, like clwb and sfence for lines; until then
 *     a page in flight is kept, dropped, or torn at 512-byte sectors; a sector is written
 *     entirely or not at all (sector-atomic device).
 *   - Intermediate values between two persist points of the same line are not modelled.
 *   - The workload is deterministic in the seed, so crash point c of a run is reached again by
 *     re-running the workload with the crash armed at c.
 *
 * The engine drives any struct prosper_crash_workload: the pool's own (pool_workload.c) and
 * crpm's containers (crpm_workload.c).  It is test machinery: linked by `prosper crashtest` and
 * the tests, never by an installed library.
 */
#include <errno.h>
#include <setjmp.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "crashsim_internal.h"

/* ---------------------------------------------------------------- random numbers */

uint64_t prosper_crashsim_random(uint64_t *s) { return crashsim_rng_next(s); }
uint64_t prosper_crashsim_random_below(uint64_t *s, uint64_t n) { return crashsim_rng_below(s, n); }

void crashsim_fill_random(uint8_t *p, size_t n, uint64_t *rng)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)crashsim_rng_next(rng);
}

/* ---------------------------------------------------------------- simulated media */

struct sim {
	uint8_t *m;            /* what the CPU sees: the pool's base, a shared mapping of fd */
	int fd;                /* memory file holding m (a workload may map it again) */
	uint8_t *d;            /* what is durable */
	size_t size;
	int gran;
	uint32_t *pending;     /* units (lines or pages) flushed since the last drain */
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

/* sim_unit -- what one flush covers and one crash keeps, drops or tears: a line or a page. */
static size_t sim_unit(const struct sim *s) { return s->gran == PROSPER_GRAN_PAGE ? PAGE : LINE; }

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
	size_t unit = sim_unit(s);
	for (size_t u = from / unit; u < (to + unit - 1) / unit && u < s->size / unit; u++) {
		if (!s->is_pending[u]) {
			s->is_pending[u] = 1;
			s->pending[s->npending++] = (uint32_t)u;
		}
	}
	return 0;
}

static void sim_on_drain(void *ctx, int site)
{
	struct sim *s = ctx;
	sim_point(s, site);
	size_t unit = sim_unit(s);
	for (size_t i = 0; i < s->npending; i++) {
		size_t u = s->pending[i];
		memcpy(s->d + u * unit, s->m + u * unit, unit);
		s->is_pending[u] = 0;
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
	size_t unit = sim_unit(s), n = 0;
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
	size_t unit = sim_unit(s);
	size_t piece = s->gran == PROSPER_GRAN_PAGE ? SECTOR : WORD;
	memcpy(out, s->d, s->size);
	for (size_t i = 0; i < n; i++) {
		size_t off = (size_t)units[i] * unit;
		if (choice[i] == TAKE_NEW) {
			memcpy(out + off, s->m + off, unit);
		} else if (choice[i] == TEAR) {
			for (size_t p = 0; p < unit; p += piece)
				if (crashsim_rng_next(rng) & 1)
					memcpy(out + off + p, s->m + off + p, piece);
		}
	}
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
		uint64_t x = crashsim_rng_below(rng, 5);
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
	r->rec.crash_at = r->rec.points + 1 + crashsim_rng_below(&r->rng, 40);
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
			size_t cut = (size_t)crashsim_rng_below(&r->rng, n + 1);
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
				choice[i] = (uint8_t)crashsim_rng_below(&r->rng, 3);
			build_image(s, units, n, choice, &r->rng, r->img);
			r->res->states++;
			int rc = recover_and_check(r, r->img, lo, hi, may_be_empty, 0, NULL);
			deeper(r, rc, may_be_empty, lo, hi);
		}
	}
	free(units);
	free(choice);
}

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
	crashsim_fill_random(garbage, size, &g);
	int saved_mutation = pool_mutation;
	pool_mutation = c->mutation; /* 0 for other workloads: they name their own mutations */

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


/* crashsim_crpm.c -- crpm's own call sequences under the crash simulator (include/prosper/internal/crpm_crashsim.h).
 *
 * Invariants the check relies on
 *   W1 The run is deterministic in the seed (allocator, rng, no addresses from outside), so
 *      every run reaches the same states; the reference of epoch 1 (a container just
 *      formatted) is taken by the simulator's first, uncrashed run, because the commit that
 *      creates it happens inside crpm_open_pool.
 *   W2 The reference of epoch e is installed before the checkpoint that commits e starts, and
 *      is replaced only when e is committed again after a rollback.
 *   W3 Writes to objects are announced with crpm_annotate first (an instrumented program's
 *      hook): with CRPM_TRACK_HOOKS nothing else finds them; with CRPM_TRACK_PROTECT the
 *      first one to a segment faults anyway and the checkpoint compares.
 * The container maps at its fixed address, so only one is open at a time: the run's is
 * released before its crash images are checked (`release`).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "prosper/internal/crpm_crashsim.h"
#include "prosper/internal/crpm_internal.h"

#define MAXE 64     /* epochs */
#define MAXOBJ 48
#define SEG (16u << 10)     /* small segments keep the media small: 64 blocks of 256 B */
#define NSEGS 8u

struct obj {
	uint8_t *p;
	uint32_t n;
};

struct ref {
	uint8_t *bytes;     /* NULL: no container (epoch 0) */
	uint64_t len;
	struct obj objs[MAXOBJ];
	int nobj;
};

struct cw {
	struct crpm_crashsim_config cfg;
	crpm_option_t opt;
	struct prosper_pool_config pcfg;
	size_t size;
	prosper_pool *pool;       /* before a container holds it */
	crpm_t *c;
	struct ref ref[MAXE];
	int nref;
	uint64_t rolled_back;     /* the last epoch rolled back (each only once) */
	struct ref first;         /* epoch 1, from the first run (W1) */
	char why[300];            /* why the run failed */
	struct obj objs[MAXOBJ];  /* live objects of the epoch being built */
	int nobj;
	uint64_t rng;
	/* a continued epoch: the reference it replaced */
	struct ref cont_saved;
	uint64_t cont_e;
	int cont_nref, cont_active;
};

/* the simulator's random numbers: the same workload for the same seed (W1) */
static inline uint64_t rnd(uint64_t *s) { return prosper_crashsim_random(s); }
static inline uint64_t below(uint64_t *s, uint64_t n) { return prosper_crashsim_random_below(s, n); }

static void ref_free(struct ref *r)
{
	free(r->bytes);
	memset(r, 0, sizeof *r);
}

/* ref_take -- the container's bytes and the live objects as the reference r. */
static void ref_take(struct cw *w, struct ref *r)
{
	ref_free(r);
	r->len = w->c->length;
	r->bytes = malloc(r->len);
	memcpy(r->bytes, w->c->base, r->len);
	memcpy(r->objs, w->objs, sizeof w->objs);
	r->nobj = w->nobj;
}

static void ref_copy(struct ref *dst, const struct ref *src)
{
	ref_free(dst);
	*dst = *src;
	if (src->bytes) {
		dst->bytes = malloc(src->len);
		memcpy(dst->bytes, src->bytes, src->len);
	}
}

/* same -- the open container c equals reference r byte for byte. */
static int same(const crpm_t *c, const struct ref *r, char *why, size_t whylen)
{
	if (!r->bytes) {
		snprintf(why, whylen, "epoch %llu: a container where none was committed",
			 (unsigned long long)crpm_epoch(c));
		return -1;
	}
	if (c->length != r->len) {
		snprintf(why, whylen, "epoch %llu: container of %llu bytes, committed %llu", (unsigned long long)crpm_epoch(c),
			 (unsigned long long)c->length, (unsigned long long)r->len);
		return -1;
	}
	for (uint64_t i = 0; i < r->len; i++)
		if (c->base[i] != r->bytes[i]) {
			snprintf(why, whylen, "epoch %llu: container differs at byte %llu (%s)", (unsigned long long)crpm_epoch(c),
				 (unsigned long long)i, i < CRPM_HDR_BYTES ? "roots, allocator lists" : "heap");
			return -1;
		}
	return 0;
}

static void fill(uint8_t *p, uint32_t n, uint64_t *rng)
{
	crpm_annotate(p, n);
	for (uint32_t i = 0; i < n; i++)
		p[i] = (uint8_t)rnd(rng);
}

/* one_op -- a random crpm call on the open container (a crash may longjmp out of it). */
static void one_op(struct cw *w, uint64_t *rng)
{
	/* Few backups: mostly large allocations, so that writes spread over more segments. */
	uint64_t k = below(rng, 10), allocs = w->cfg.backups ? 7 : 4;
	if (k < allocs && w->nobj < MAXOBJ) {
		uint64_t band = w->cfg.backups ? 9 : below(rng, 10);
		uint32_t n = (uint32_t)(band < 6 ? 8 + below(rng, 200) : band < 9 ? 200 + below(rng, 1300) : 1500 + below(rng, 4500));
		uint8_t *p = crpm_malloc(w->c, n);
		if (!p)
			return; /* full */
		fill(p, n, rng);
		w->objs[w->nobj++] = (struct obj){ p, n };
	} else if (k < allocs + 2 && w->nobj) {
		int i = (int)below(rng, (uint64_t)w->nobj);
		crpm_free(w->c, w->objs[i].p);
		w->objs[i] = w->objs[--w->nobj];
	} else if (k < allocs + 5 && w->nobj) {
		struct obj *o = &w->objs[below(rng, (uint64_t)w->nobj)];
		uint32_t off = (uint32_t)below(rng, o->n);
		fill(o->p + off, 1 + (uint32_t)below(rng, o->n - off), rng);
	} else {
		void *p = w->nobj && below(rng, 4) ? w->objs[below(rng, (uint64_t)w->nobj)].p : NULL;
		crpm_set_root(w->c, (unsigned)below(rng, 4), p);
	}
}

/* rolls_back_after -- is epoch e rolled back right after its commit (every fourth, once)? */
static int rolls_back_after(const struct cw *w, uint64_t e)
{
	return w->cfg.rollbacks && e % 4 == 0 && e > w->rolled_back;
}

/* epoch -- operations, the reference of the next epoch (W2), the checkpoint; before a rollback
 * only its commit, as an MPI rank does before its barrier. */
static int epoch(struct cw *w, uint64_t *rng, struct prosper_crash_progress *pr, char *why, size_t whylen)
{
	uint64_t e = crpm_epoch(w->c) + 1;
	int then_roll_back = pr && rolls_back_after(w, e);
	/* A run with few backups writes at most 3 segments an epoch (the header's, an object
	 * spanning two): one operation. */
	int ops = w->cfg.backups ? 1 : 1 + (int)below(rng, 6);
	for (int i = 0; i < ops; i++)
		one_op(w, rng);
	if (e >= MAXE) {
		snprintf(why, whylen, "more than %d epochs", MAXE);
		return -1;
	}
	ref_take(w, &w->ref[e]);
	w->nref = (int)e + 1;
	if (pr)
		pr->hi = e;
	if (then_roll_back ? crpm_checkpoint_commit(w->c) : crpm_checkpoint(w->c, 1)) {
		snprintf(why, whylen, "checkpoint of epoch %llu: %s", (unsigned long long)e, crpm_errormsg());
		return -1;
	}
	if (pr)
		pr->lo = e;
	return 0;
}

/* roll_back -- what crpm_mpi_open does on a rank one epoch ahead: close, roll back, reopen. */
static int roll_back(struct cw *w, uint8_t *base, int fd, struct prosper_persist *pp,
		     struct prosper_crash_progress *pr, char *why, size_t whylen)
{
	uint64_t e = crpm_epoch(w->c);
	w->rolled_back = e;
	crpm_close(w->c);
	w->c = NULL;
	pr->lo = e - 1;
	int rc = prosper_pool_rollback_mem(base, w->size, pp, e - 1);
	if (rc) {
		snprintf(why, whylen, "rollback to epoch %llu: %s", (unsigned long long)(e - 1), prosper_pool_errormsg());
		return -1;
	}
	pr->hi = e - 1;
	w->nref = (int)e; /* epoch e is gone; it will be committed again, differently */
	if ((rc = prosper_pool_open_mem(base, w->size, pp, &w->pool)) != 0) {
		snprintf(why, whylen, "reopening after the rollback: %s", prosper_pool_errormsg());
		return -1;
	}
	if (crpm_open_pool(w->pool, fd, &w->opt, &w->c)) {
		snprintf(why, whylen, "reopening after the rollback: %s", crpm_errormsg());
		return -1;
	}
	w->pool = NULL;
	const struct ref *r = &w->ref[e - 1];
	memcpy(w->objs, r->objs, sizeof w->objs);
	w->nobj = r->nobj;
	return same(w->c, r, why, whylen);
}

static void cw_run(void *ctx, uint8_t *base, int fd, struct prosper_persist *pp, struct prosper_crash_progress *pr)
{
	struct cw *w = ctx;
	uint64_t rng = w->cfg.sim.seed * 0x9E3779B97F4A7C15ull + 5;
	crpm_mutation = w->cfg.mutation;
	if (prosper_pool_create_mem(base, w->size, &w->pcfg, pp, &w->pool)) {
		pr->failed = 2;
		return;
	}
	pr->why = w->why;
	snprintf(w->why, sizeof w->why, "no reason");
	pr->create_done = 1;
	w->rolled_back = 0;
	ref_free(&w->ref[0]); /* epoch 0: an empty pool, no container */
	w->nobj = 0;
	pr->hi = 1;
	ref_copy(&w->ref[1], &w->first);
	w->nref = 2;
	if (crpm_open_pool(w->pool, fd, &w->opt, &w->c)) {
		snprintf(w->why, sizeof w->why, "creating the container: %s", crpm_errormsg());
		pr->failed = 2;
		return;
	}
	w->pool = NULL;
	pr->lo = 1;
	if (!w->first.bytes)
		ref_take(w, &w->first);
	ref_copy(&w->ref[1], &w->first);
	while (crpm_epoch(w->c) < (uint64_t)w->cfg.sim.epochs) {
		int rc = epoch(w, &rng, pr, w->why, sizeof w->why);
		if (!rc && rolls_back_after(w, crpm_epoch(w->c)))
			rc = roll_back(w, base, fd, pp, pr, w->why, sizeof w->why);
		if (rc) {
			pr->failed = 2;
			return;
		}
	}
}

static void cw_release(void *ctx)
{
	struct cw *w = ctx;
	if (w->c) { /* it holds w->pool, or w->pool is NULL */
		w->pool = crpm_detach(w->c);
		w->c = NULL;
	}
	if (w->pool)
		prosper_pool_abandon(&w->pool);
	crpm_mutation = CRPM_MUT_NONE;
}

static void cw_reset(void *ctx)
{
	struct cw *w = ctx;
	cw_release(w);
	for (int i = 0; i < MAXE; i++)
		ref_free(&w->ref[i]);
	w->nref = 0;
}

static int cw_check(void *ctx, prosper_pool *p, uint8_t *base, int fd, char *why, size_t whylen)
{
	struct cw *w = ctx;
	(void)base;
	uint64_t e = prosper_pool_epoch(p);
	if (e >= (uint64_t)w->nref) {
		snprintf(why, whylen, "recovered epoch %llu, which was never committed", (unsigned long long)e);
		return -1;
	}
	if (!w->ref[e].bytes) {
		if (prosper_pool_region_find(p, "crpm") >= 0) {
			snprintf(why, whylen, "epoch %llu holds a container, none was committed", (unsigned long long)e);
			return -1;
		}
		return 0;
	}
	crpm_t *c;
	if (crpm_open_pool(p, fd, &w->opt, &c)) {
		snprintf(why, whylen, "epoch %llu: the container does not open: %s", (unsigned long long)e, crpm_errormsg());
		return -1;
	}
	int rc = same(c, &w->ref[e], why, whylen);
	crpm_detach(c);
	return rc;
}

/* cw_cont -- one more epoch on the recovered container, as a restarted program would do. */
static int cw_cont(void *ctx, prosper_pool *p, uint8_t *base, int fd, uint64_t e, uint64_t *rng, char *why,
		   size_t whylen)
{
	struct cw *w = ctx;
	(void)base;
	w->pool = p;
	if (e + 2 >= MAXE)
		return 0;
	w->cont_saved = w->ref[e + 1];
	w->ref[e + 1] = (struct ref){ 0 };
	w->cont_e = e;
	w->cont_nref = w->nref;
	if (w->nref < (int)e + 2)
		w->nref = (int)e + 2;
	w->cont_active = 1;
	if (!w->ref[e].bytes) /* no container yet: a restarted program creates it (epoch 1) */
		ref_copy(&w->ref[e + 1], &w->first);
	if (crpm_open_pool(p, fd, &w->opt, &w->c)) {
		snprintf(why, whylen, "epoch %llu: the container does not open: %s", (unsigned long long)e, crpm_errormsg());
		return -1;
	}
	w->pool = NULL;
	if (!w->ref[e].bytes)
		return 0;
	memcpy(w->objs, w->ref[e].objs, sizeof w->objs);
	w->nobj = w->ref[e].nobj;
	return epoch(w, rng, NULL, why, whylen);
}

static void cw_cont_forget(void *ctx)
{
	struct cw *w = ctx;
	if (!w->cont_active)
		return;
	ref_free(&w->ref[w->cont_e + 1]);
	w->ref[w->cont_e + 1] = w->cont_saved;
	w->nref = w->cont_nref;
	w->cont_active = 0;
}

void crpm_crashsim_config_default(struct crpm_crashsim_config *c)
{
	memset(c, 0, sizeof *c);
	prosper_crashsim_config_default(&c->sim);
	c->sim.epochs = 12;
	c->mode = CRPM_MODE_DEFAULT;
	c->tracking = CRPM_TRACK_HOOKS;
	c->rollbacks = 1;
}

int crpm_crashsim_run(const struct crpm_crashsim_config *c, struct prosper_crashsim_result *r)
{
	struct cw *w = calloc(1, sizeof *w);
	if (!w)
		return -ENOMEM;
	w->cfg = *c;
	if (w->cfg.sim.epochs > MAXE - 2)
		w->cfg.sim.epochs = MAXE - 2;
	crpm_init_option(&w->opt);
	w->opt.create = 1;
	w->opt.capacity = NSEGS * SEG;
	w->opt.mode = c->mode;
	w->opt.tracking = c->tracking;
	w->opt.backup_segments = c->mode == CRPM_MODE_DEFAULT ? c->backups : 0;
	crpm_pool_config(&w->opt, SEG, &w->pcfg);
	w->pcfg.meta_bytes = 4096;
	int64_t sz = prosper_pool_size_for(&w->pcfg);
	if (sz < 0) {
		free(w);
		return (int)sz;
	}
	w->size = (size_t)sz;
	struct prosper_crash_workload wl = {
		.ctx = w, .media_bytes = w->size, .run = cw_run, .release = cw_release, .reset = cw_reset,
		.check = cw_check, .cont = cw_cont, .cont_forget = cw_cont_forget,
		.io_errors = 0, /* a failed copy-on-write aborts the program (track.c): nothing to check */
	};
	int rc = prosper_crashsim_run_workload(&w->cfg.sim, &wl, r);
	cw_reset(w);
	ref_free(&w->first);
	free(w);
	return rc;
}

static const struct variant {
	const char *name;
	int mode, tracking;
	uint32_t backups;
} variants[] = {
	{ "default/hooks", CRPM_MODE_DEFAULT, CRPM_TRACK_HOOKS, 0 },
	{ "default/protect", CRPM_MODE_DEFAULT, CRPM_TRACK_PROTECT, 0 },
	{ "default/steal", CRPM_MODE_DEFAULT, CRPM_TRACK_HOOKS, 3 },
	{ "buffered/hooks", CRPM_MODE_BUFFERED, CRPM_TRACK_HOOKS, 0 },
	{ "buffered/protect", CRPM_MODE_BUFFERED, CRPM_TRACK_PROTECT, 0 },
};
#define NVARIANTS (int)(sizeof variants / sizeof variants[0])

int crpm_crashsim_variant_count(void) { return NVARIANTS; }

const char *crpm_crashsim_variant(int i, struct crpm_crashsim_config *c)
{
	const struct variant *v = &variants[i % NVARIANTS];
	c->mode = v->mode;
	c->tracking = v->tracking;
	c->backups = v->backups;
	if (v->backups)
		c->sim.epochs = 24; /* one operation an epoch: enough to write more segments than backups */
	return v->name;
}

/* crpm's mutants x the hook-tracked variants without a backup limit they apply to, then the
 * pool's copy-on-write persists removed (default/hooks). */
static const struct mutant {
	int mutation, skip_site, variant;
} mutants[] = {
	{ CRPM_MUT_BLOCKS_UNSAVED, -1, 0 }, { CRPM_MUT_BLOCKS_UNSAVED, -1, 3 }, { CRPM_MUT_HEAP_UNNOTED, -1, 0 },
	{ CRPM_MUT_HEAP_UNNOTED, -1, 3 },   { CRPM_MUT_AHEAD_EARLY, -1, 0 },    { 0, PSITE_COW_COPY, 0 },
	{ 0, PSITE_COW_STATE, 0 },
};

int crpm_crashsim_mutant_count(void) { return (int)(sizeof mutants / sizeof mutants[0]); }

const char *crpm_crashsim_mutant(int i, struct crpm_crashsim_config *c, const char **variant)
{
	static const char *const names[CRPM_MUT_COUNT] = { "none", "crpm_blocks_unsaved", "crpm_heap_unnoted",
							   "crpm_ahead_before_barrier" };
	static char name[64];
	const struct mutant *m = &mutants[i];
	*variant = crpm_crashsim_variant(m->variant, c);
	c->mutation = m->mutation;
	c->sim.skip_site = m->skip_site;
	/* The rollback compares the container itself: crash images must catch the mutants,
	 * except the one that breaks the rollback. */
	c->rollbacks = m->mutation == CRPM_MUT_AHEAD_EARLY;
	if (m->skip_site >= 0)
		snprintf(name, sizeof name, "no_persist_%s", prosper_persist_site_name(m->skip_site));
	else
		snprintf(name, sizeof name, "%s", names[m->mutation]);
	return name;
}

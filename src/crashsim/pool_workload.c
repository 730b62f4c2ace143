/* pool_workload.c -- the pool's own workload for the crash simulator: regions of every mode
 * added, grown, shrunk, removed; buffered writes; direct copy-on-write with backup stealing; redo
 * regions (always a stack from the first epoch) whose logs are written, sealed and applied;
 * commits with blobs -- checked against a model of every committed epoch's bytes.
 *
 * Copy variant (config.copy): the same operations build epochs of a SOURCE pool in ordinary
 * memory, and each epoch of the simulated pool is a copy of the source's latest committed epoch
 * (prosper_pool_copy_stage + commit, one to three source epochs apart, the later ones comparing
 * only what changed since the last copy) -- the durable replica's protocol, crashed at every
 * persist point of the replica.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "crashsim_internal.h"

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
	int copy;                     /* the copy variant: ops go to src, the media gets copies */
	prosper_pool *src;
	uint8_t *src_mem;
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
	if (w->src)
		prosper_pool_abandon(&w->src);
	free(w->src_mem);
	w->src_mem = NULL;
	model_free(&w->cur);
	w->cur.blob_len = 0;
	for (int i = 0; i < w->nsnap; i++)
		model_free(&w->snap[i]);
	w->nsnap = 0;
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
	uint64_t kind = crashsim_rng_below(rng, 16);
	if (m->n == 0 || (kind == 0 && m->n < MAXR)) {
		char name[PROSPER_REGION_NAME_MAX];
		snprintf(name, sizeof name, "r%llu", (unsigned long long)crashsim_rng_below(rng, 1000000));
		static const uint32_t modes[3] = { PROSPER_REGION_DIRECT, PROSPER_REGION_REDO, PROSPER_REGION_BUFFERED };
		uint32_t mode = modes[crashsim_rng_below(rng, 3)];
		return wl_add(p, m, name, mode, 1 + crashsim_rng_below(rng, max_len(mode, seg) * 3 / 4));
	}
	struct mreg *r = &m->r[crashsim_rng_below(rng, (uint64_t)m->n)];
	if (kind == 1) {
		uint64_t len = crashsim_rng_below(rng, max_len(r->mode, seg));
		int rc = prosper_pool_region_resize(p, r->id, len);
		if (rc)
			return rc;
		model_resize(r, len);
		return 0;
	}
	if (kind == 2 && crashsim_rng_below(rng, 3) == 0) {
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
	uint64_t off = crashsim_rng_below(rng, r->len);
	uint64_t maxlen = r->len - off;
	uint64_t len = 1 + crashsim_rng_below(rng, crashsim_rng_below(rng, 4) == 0 ? maxlen : (maxlen < 24 ? maxlen : 24));
	/* On the stack: a simulated crash longjmps out of the pool calls below. */
	uint8_t buf[4 * 4096];
	if (len > sizeof buf)
		len = sizeof buf;
	crashsim_fill_random(buf, len, rng);
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

/* copy_source_new -- the copy variant's source: a pool of the same geometry in ordinary memory
 * (no persistence observed: it is not what is crashed). */
static int copy_source_new(struct workload *w)
{
	w->src_mem = calloc(1, w->size);
	if (!w->src_mem)
		return -ENOMEM;
	struct prosper_persist pp = { .granularity = PROSPER_GRAN_BYTE, .simulated = 1 };
	return prosper_pool_create_mem(w->src_mem, w->size, &w->cfg, &pp, &w->src);
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
	if (w->copy && (rc = copy_source_new(w)) != 0) {
		pr->failed = 2;
		return;
	}
	uint64_t since = 0; /* the source epoch the media's last copy holds (0: none yet) */
	for (int e = 1, rounds = 0; e <= w->epochs && e < MAXEPOCHS; rounds++) {
		prosper_pool *ops_pool = w->copy ? w->src : w->pool;
		int ops = 1 + (int)crashsim_rng_below(&rng, 6);
		/* Every workload has a stack from the first epoch on (more may come and go). */
		if (rounds == 0 && (rc = wl_add(ops_pool, &w->cur, "stack", PROSPER_REGION_REDO,
					   w->cfg.seg_size + 1 + crashsim_rng_below(&rng, w->cfg.seg_size / 2))) != 0) {
			pr->failed = rc == -EIO ? 1 : 2;
			return;
		}
		for (int i = 0; i < ops; i++) {
			rc = wl_op(ops_pool, &w->cur, &rng, w->cfg.seg_size);
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
		w->cur.blob_len = crashsim_rng_below(&rng, sizeof w->cur.blob + 1);
		crashsim_fill_random(w->cur.blob, w->cur.blob_len, &rng);
		if (w->copy) {
			if (prosper_pool_commit(w->src, w->cur.blob, w->cur.blob_len) != 0) {
				pr->failed = 2; /* the source is ordinary memory: no error expected */
				return;
			}
			if (crashsim_rng_below(&rng, 3) != 0)
				continue; /* the next copy is one to three source epochs away */
		}
		/* the reference of the epoch being committed exists before the commit starts */
		model_copy(&w->snap[e], &w->cur);
		w->nsnap = e + 1;
		pr->hi = (uint64_t)e;
		if (w->copy && (rc = prosper_pool_copy_stage(w->pool, w->src, since, NULL)) != 0) {
			/* no room for the old and the new regions of a copy at once: stop, like an I/O error */
			pr->failed = rc == -EIO || rc == -ENOSPC ? 1 : 2;
			return;
		}
		rc = prosper_pool_commit(w->pool, w->cur.blob, w->cur.blob_len);
		if (rc) {
			/* hi stays: a failed commit may or may not have become durable */
			pr->failed = rc == -EIO ? 1 : 2;
			return;
		}
		since = w->copy ? prosper_pool_epoch(w->src) : 0;
		pr->lo = (uint64_t)e;
		e++;
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
	w.copy = c->copy;
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

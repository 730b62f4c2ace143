/* test_metalog.c -- the process metadata survives every simulated crash in both modes.
 *
 * A scripted process (registers, threads, VMAs added, removed and changed, fds opened, closed
 * and moved, mapped files, cwd) is checkpointed epoch by epoch through metalog_stage() into a
 * pool on the crash simulator's media (include/prosper/internal/crashsim.h).  Every recovered crash
 * image must describe exactly the process of the epoch it names: in log mode the blob is
 * rebuilt from the metadata region by metalog_load(), in rewrite mode it is the blob itself.
 * Continued runs resume from the recovered pool the way `prosper resume` does
 * (metalog_attach) and crash again.  Mutants: the pool's redo protocol broken, and a log that
 * forgets a removed VMA, must be caught.  Damaged regions (random bytes and words changed) are
 * refused or decode to a blob img_decode accepts, never read out of bounds (ASan in make test).
 * A tree run checkpoints two processes into one pool, each with its own metadata region, under
 * one commit of a tree blob naming both (src/supervisor/cut/tree.h): every recovered epoch must hold
 * both processes of that same epoch.
 * PROSPER_LONG=1 explores more states.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "metalog.h"
#include "tree_image.h"
#include "metalog_script.h"
#include "prosper/internal/crashsim.h"

/* ---------------------------------------------------------------- the crash workload */

static uint8_t *last_region; /* the metadata region at the end of a log-mode run */
static size_t last_region_len;

struct mwl {
	int mode, epochs;
	int procs;                       /* 2: a tree of two processes, one commit */
	struct pstate st2[MAXE + 2];     /* the second process at each epoch */
	struct img_buf ref2[MAXE + 2];
	struct metalog *m2, *cont_m2;
	struct pstate cont_saved_state2;
	struct img_buf cont_saved2, tree;
	uint64_t seed;
	struct prosper_pool_config cfg;
	prosper_pool *pool;
	struct metalog *m, *cont_m;
	struct pstate st[MAXE + 2];      /* the process at each epoch */
	struct img_buf ref[MAXE + 2];    /* its whole blob (the reference) */
	int nref;
	struct pstate cont_saved_state;  /* a continued epoch replaces one reference for a while */
	struct img_buf cont_saved;
	uint64_t cont_e;
	int cont_active, cont_nref;
	struct metalog_stats stats;
};

/* checkpoint -- stage and commit epoch e of w->st[e] with metalog m (and, in a tree run, of
 * w->st2[e] with m2: one tree blob, one commit). */
static int checkpoint(struct mwl *w, prosper_pool *pool, struct metalog *m, struct metalog *m2, int e)
{
	const void *out, *out2;
	size_t len, len2;
	int rc = metalog_stage(m, w->mode, pool, w->ref[e].p, w->ref[e].len, &out, &len, &w->stats);
	if (!rc && w->procs == 2) {
		rc = metalog_stage(m2, w->mode, pool, w->ref2[e].p, w->ref2[e].len, &out2, &len2, &w->stats);
		if (!rc && (tree_begin(&w->tree) || tree_add_proc(&w->tree, &(struct tree_proc){ .pid = 2 }, out, len) ||
			    tree_add_proc(&w->tree, &(struct tree_proc){ .pid = 7, .parent = 2 }, out2, len2)))
			rc = -ENOMEM;
		tree_end(&w->tree);
		out = w->tree.p, len = w->tree.len;
	}
	if (!rc)
		rc = prosper_pool_commit(pool, out, len);
	if (!rc) {
		metalog_committed(m);
		if (w->procs == 2)
			metalog_committed(m2);
	}
	return rc;
}

static void mwl_run(void *ctx, uint8_t *base, int fd, struct prosper_persist *pp, struct prosper_crash_progress *pr)
{
	(void)fd;
	struct mwl *w = ctx;
	uint64_t rng = w->seed * 0x9E3779B97F4A7C15ull + 11;
	pr->create_done = 0;
	int rc = prosper_pool_create_mem(base, prosper_pool_size_for(&w->cfg), &w->cfg, pp, &w->pool);
	if (rc) {
		pr->failed = rc == -EIO ? 1 : 2;
		return;
	}
	pr->create_done = 1;
	pr->lo = pr->hi = 0;
	w->m = metalog_new();
	w->m2 = metalog_new_named("metadata.7");
	memset(&w->st[0], 0, sizeof w->st[0]);
	memset(&w->st2[0], 0, sizeof w->st2[0]);
	w->nref = 1;
	for (int e = 1; e <= w->epochs; e++) {
		w->st[e] = w->st[e - 1];
		next_state(&w->st[e], &rng);
		blob_of(&w->st[e], &w->ref[e]);
		w->st2[e] = w->st2[e - 1];
		next_state(&w->st2[e], &rng);
		blob_of(&w->st2[e], &w->ref2[e]);
		w->nref = e + 1;
		pr->hi = (uint64_t)e; /* staging writes only the log: epoch e-1 stays whole until the commit */
		if ((rc = checkpoint(w, w->pool, w->m, w->m2, e)) != 0) {
			pr->failed = rc == -EIO ? 1 : 2;
			if (pr->failed == 2)
				fprintf(stderr, "epoch %d: %s (%d)\n", e, prosper_pool_errormsg(), rc);
			return;
		}
		pr->lo = (uint64_t)e;
	}
	/* a run that was not crashed leaves its region for the damage test */
	int i = prosper_pool_region_find(w->pool, META_REGION_NAME);
	struct prosper_region_info info;
	if (w->mode == META_LOG && i >= 0 && !prosper_pool_region_get(w->pool, i, &info)) {
		uint8_t *r = malloc(info.length);
		if (r && !prosper_pool_region_read(w->pool, info.id, 0, r, info.length)) {
			free(last_region);
			last_region = r, last_region_len = info.length;
		} else {
			free(r);
		}
	}
}

static void mwl_release(void *ctx)
{
	struct mwl *w = ctx;
	if (w->pool)
		prosper_pool_abandon(&w->pool);
	metalog_delete(&w->cont_m);
	metalog_delete(&w->cont_m2);
}

static void mwl_reset(void *ctx)
{
	struct mwl *w = ctx;
	mwl_release(w);
	metalog_delete(&w->m);
	metalog_delete(&w->m2);
	w->nref = 0;
}

static int mwl_check(void *ctx, prosper_pool *pool, uint8_t *base, int fd, char *why, size_t whylen)
{
	(void)base, (void)fd;
	struct mwl *w = ctx;
	uint64_t e = prosper_pool_epoch(pool);
	size_t len = 0;
	const void *blob = prosper_pool_blob(pool, &len);
	if (e == 0)
		return len == 0 ? 0 : (snprintf(why, whylen, "epoch 0 holds a blob"), -1);
	if (e >= (uint64_t)w->nref)
		return snprintf(why, whylen, "epoch %llu was never staged", (unsigned long long)e), -1;
	if (w->procs == 2) {
		/* both processes of the tree blob are of epoch e: one commit for the two */
		struct tree_view v;
		const char *r;
		void *copy = malloc(len ? len : 1);
		if (len)
			memcpy(copy, blob, len);
		int rc = tree_decode(copy, len, &v, &r) != 0 ? (snprintf(why, whylen, "epoch %llu: %s", (unsigned long long)e, r), -1) : 0;
		for (uint32_t i = 0; i < 2 && !rc; i++) {
			const void *b = v.blobs[i];
			size_t bl = v.procs[i]->blob_len;
			void *rebuilt = NULL;
			if (metalog_is_stub(b, bl) && metalog_load(pool, b, bl, &rebuilt, &bl, &r) != 0) {
				rc = -1, snprintf(why, whylen, "epoch %llu process %u: %s", (unsigned long long)e, i, r);
				break;
			}
			char d[200];
			const struct img_buf *ref = i ? &w->ref2[e] : &w->ref[e];
			if (same_process(rebuilt ? rebuilt : b, bl, ref->p, ref->len, d, sizeof d))
				rc = -1, snprintf(why, whylen, "epoch %llu process %u: %s", (unsigned long long)e, i, d);
			free(rebuilt);
		}
		free(copy);
		return rc;
	}
	void *rebuilt = NULL;
	const char *r;
	if (metalog_is_stub(blob, len)) {
		if (metalog_load(pool, blob, len, &rebuilt, &len, &r) != 0)
			return snprintf(why, whylen, "epoch %llu: %s", (unsigned long long)e, r), -1;
		blob = rebuilt;
	} else if (w->mode == META_LOG) {
		free(rebuilt);
		return snprintf(why, whylen, "epoch %llu: log mode committed no stub", (unsigned long long)e), -1;
	}
	char d[200];
	int rc = same_process(blob, len, w->ref[e].p, w->ref[e].len, d, sizeof d);
	if (rc)
		snprintf(why, whylen, "epoch %llu: %s", (unsigned long long)e, d);
	free(rebuilt);
	return rc;
}

/* mwl_cont -- `prosper resume`: a new supervisor attaches to the pool recovered at epoch e
 * and commits epoch e+1, one more step of the process it finds there. */
static int mwl_cont(void *ctx, prosper_pool *pool, uint8_t *base, int fd, uint64_t e, uint64_t *rng, char *why,
		    size_t whylen)
{
	(void)base, (void)fd;
	struct mwl *w = ctx;
	uint64_t n = e + 1;
	w->pool = pool;
	if (n > MAXE || e >= (uint64_t)w->nref)
		return 0;
	w->cont_e = n;
	w->cont_active = 1;
	w->cont_saved_state = w->st[n];
	w->cont_saved = w->ref[n];
	w->cont_saved_state2 = w->st2[n];
	w->cont_saved2 = w->ref2[n];
	w->cont_nref = w->nref;
	w->ref[n] = (struct img_buf){ 0 };
	w->st[n] = w->st[e];
	next_state(&w->st[n], rng);
	blob_of(&w->st[n], &w->ref[n]);
	w->ref2[n] = (struct img_buf){ 0 };
	w->st2[n] = w->st2[e];
	next_state(&w->st2[n], rng);
	blob_of(&w->st2[n], &w->ref2[n]);
	if ((uint64_t)w->nref < n + 1)
		w->nref = (int)n + 1;
	/* the new supervisor's metalogs: freed by release (a crash longjmps out of the checkpoint) */
	w->cont_m = metalog_new();
	w->cont_m2 = metalog_new_named("metadata.7");
	size_t len = 0;
	const void *blob = prosper_pool_blob(pool, &len);
	struct tree_view v;
	const char *r;
	void *copy = malloc(len ? len : 1);
	if (len)
		memcpy(copy, blob, len);
	if (w->procs == 2 && e > 0 && tree_decode(copy, len, &v, &r) == 0) {
		metalog_attach_stub(w->cont_m, pool, v.blobs[0], v.procs[0]->blob_len);
		metalog_attach_stub(w->cont_m2, pool, v.blobs[1], v.procs[1]->blob_len);
	} else {
		metalog_attach(w->cont_m, pool);
	}
	free(copy);
	int rc = checkpoint(w, pool, w->cont_m, w->cont_m2, (int)n);
	if (rc)
		return snprintf(why, whylen, "a checkpoint after recovery failed: %s", prosper_pool_errormsg()), -1;
	return 0;
}

static void mwl_cont_forget(void *ctx)
{
	struct mwl *w = ctx;
	if (!w->cont_active)
		return;
	free(w->ref[w->cont_e].p);
	w->ref[w->cont_e] = w->cont_saved;
	w->st[w->cont_e] = w->cont_saved_state;
	free(w->ref2[w->cont_e].p);
	w->ref2[w->cont_e] = w->cont_saved2;
	w->st2[w->cont_e] = w->cont_saved_state2;
	w->nref = w->cont_nref;
	w->cont_active = 0;
}

static struct mwl W;

static void free_refs(void)
{
	for (int e = 0; e < MAXE + 2; e++)
		free(W.ref[e].p), free(W.ref2[e].p);
	free(W.tree.p);
	free(last_region);
}

static int run(int mode, int gran, uint64_t states, const struct prosper_crashsim_config *mut, int quiet,
	       struct prosper_crashsim_result *res)
{
	W.mode = mode;
	W.epochs = 16;
	W.seed = 5;
	prosper_pool_config_default(&W.cfg);
	W.cfg.seg_size = 4096;
	W.cfg.block_size = 256;
	W.cfg.capacity = 64 * 4096;
	W.cfg.max_regions = 4;
	W.cfg.meta_bytes = 12288; /* rewrite mode: the whole blob */
	struct prosper_crash_workload wl = {
		.ctx = &W, .media_bytes = (size_t)prosper_pool_size_for(&W.cfg), .run = mwl_run, .release = mwl_release,
		.reset = mwl_reset, .check = mwl_check, .cont = mwl_cont, .cont_forget = mwl_cont_forget, .io_errors = 1,
	};
	struct prosper_crashsim_config c;
	if (mut)
		c = *mut;
	else
		prosper_crashsim_config_default(&c);
	c.states = states;
	c.granularity = gran;
	c.seed = 5;
	int rc = prosper_crashsim_run_workload(&c, &wl, res);
	if (!quiet)
		printf("metalog %s%s %s: %llu states at %llu crash points (%llu nested, %llu continued), %llu epochs, "
		       "%llu inconsistent%s%s\n",
		       mode == META_LOG ? "log" : "rewrite", W.procs == 2 ? " (tree of 2)" : "", gran == PROSPER_GRAN_PAGE ? "page" : "cache-line",
		       (unsigned long long)res->states, (unsigned long long)res->crash_points,
		       (unsigned long long)res->nested_states, (unsigned long long)res->continued_states,
		       (unsigned long long)res->epochs, (unsigned long long)res->inconsistent,
		       res->first_failure[0] ? ": " : "", res->first_failure);
	return rc;
}

int main(void)
{
	int fails = 0;
	atexit(free_refs);
	uint64_t states = getenv("PROSPER_LONG") ? 60000 : 4000;
	struct prosper_crashsim_result res;
	/* both modes, both failure models: nothing inconsistent, and the script did what it should */
	for (int mode = META_REWRITE; mode <= META_LOG; mode++) {
		for (int g = 0; g < 2; g++) {
			W.stats = (struct metalog_stats){ 0 };
			if (run(mode, g ? PROSPER_GRAN_PAGE : PROSPER_GRAN_CACHE_LINE, states, NULL, 0, &res) || res.inconsistent ||
			    res.epochs != 16 || res.crash_points < 50 || res.continued_states == 0)
				fails++, printf("FAIL: mode %d granularity %d\n", mode, g);
		}
		if (mode == META_LOG && (W.stats.vma_add == 0 || W.stats.vma_remove == 0 || W.stats.vma_change == 0 ||
					 W.stats.rebuilds < 2 || W.stats.records <= W.stats.rebuilds))
			fails++, printf("FAIL: the script did not exercise adds, removes, changes and rebuilds\n");
	}
	/* a tree of two processes, each with its own metadata region, one commit */
	W.procs = 2;
	for (int mode = META_REWRITE; mode <= META_LOG; mode++)
		for (int g = 0; g < 2; g++)
			if (run(mode, g ? PROSPER_GRAN_PAGE : PROSPER_GRAN_CACHE_LINE, states, NULL, 0, &res) || res.inconsistent ||
			    res.epochs != 16 || res.crash_points < 50 || res.continued_states == 0)
				fails++, printf("FAIL: tree, mode %d granularity %d\n", mode, g);
	W.procs = 1;
	/* mutants: the log mode rests on the pool's redo protocol, so breaking it must show; and a
	 * log that forgets a removed VMA must show without any crash */
	static const char *must[] = { "no_persist_redo_log", "no_persist_redo_apply", "no_persist_recover_redo",
				      "redo_apply_before_commit", "redo_log_after_commit", "redo_no_reapply",
				      "redo_next_log_before_apply" };
	int caught_must = 0;
	for (int i = 0; i < prosper_crashsim_mutant_count(); i++) {
		struct prosper_crashsim_config c;
		prosper_crashsim_config_default(&c);
		const char *name = prosper_crashsim_mutant(i, &c);
		int relevant = 0;
		for (size_t k = 0; k < sizeof must / sizeof must[0]; k++)
			relevant |= !strcmp(name, must[k]);
		if (!relevant)
			continue;
		c.stop_at_first = 1;
		int caught = 0;
		for (int g = 0; g < 2 && !caught; g++)
			caught = run(META_LOG, g ? PROSPER_GRAN_PAGE : PROSPER_GRAN_CACHE_LINE, states, &c, 1, &res) == 0 &&
				 res.inconsistent > 0;
		printf("mutant %-24s %s\n", name, caught ? "caught" : "MISSED");
		caught_must += caught;
		fails += !caught;
	}
	if (caught_must != (int)(sizeof must / sizeof must[0]))
		fails++, printf("FAIL: %d of %zu redo mutants found in the catalogue and caught\n", caught_must,
				sizeof must / sizeof must[0]);
	/* damaged regions: refused, or a blob that decodes; never a crash */
	if (!last_region) {
		fails++, printf("FAIL: no region was kept for the damage test\n");
	} else {
		uint64_t rng = 99;
		int refused = 0, accepted = 0, n = getenv("PROSPER_LONG") ? 100000 : 5000;
		uint8_t *copy = malloc(last_region_len);
		for (int it = 0; it < n; it++) {
			memcpy(copy, last_region, last_region_len);
			for (int k = 1 + (int)(rnd(&rng) % 4); k > 0; k--) {
				size_t at = rnd(&rng) % last_region_len;
				if (rnd(&rng) % 2 && at + 4 <= last_region_len)
					memcpy(copy + at, &(uint32_t){ (uint32_t)rnd(&rng) }, 4);
				else
					copy[at] ^= (uint8_t)(1u << (rnd(&rng) % 8));
			}
			void *blob = NULL;
			size_t len = 0;
			struct img im;
			const char *w;
			int rc = metalog_decode(copy, last_region_len, &blob, &len);
			if (rc == 0 && img_decode(blob, len, &im, &w) != 0)
				fails++, printf("FAIL: a damaged region decoded to a blob img_decode refuses\n");
			refused += rc != 0, accepted += rc == 0;
			free(blob);
		}
		void *blob = NULL;
		size_t len = 0;
		if (metalog_decode(last_region, last_region_len, &blob, &len) != 0)
			fails++, printf("FAIL: the undamaged region does not decode\n");
		free(blob);
		printf("damaged regions: %d refused, %d decoded (damage in bytes no check covers)\n", refused, accepted);
		if (!refused)
			fails++, printf("FAIL: no damage was refused\n");
		free(copy);
		free(last_region);
		last_region = NULL;
	}
	metalog_mutation = 1;
	struct prosper_crashsim_config c;
	prosper_crashsim_config_default(&c);
	c.stop_at_first = 1;
	int caught = run(META_LOG, PROSPER_GRAN_CACHE_LINE, 200, &c, 1, &res) == 0 && res.inconsistent > 0;
	metalog_mutation = 0;
	printf("mutant %-24s %s%s%s\n", "metalog_remove_unlogged", caught ? "caught" : "MISSED", caught ? ": " : "",
	       caught ? res.first_failure : "");
	fails += !caught;
	printf("%s\n", fails ? "FAILED" : "ok");
	return fails != 0;
}

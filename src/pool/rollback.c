/* rollback.c -- go back from the committed epoch e+1 to e (coordinated checkpoints, libcrpm
 * §3.6: a process that committed one epoch more than another must return to the common one).
 *
 * Why epoch e is still there right after e+1 was committed, as long as nothing was written
 * since (the caller's protocol guarantees it: crpm's MPI checkpoint waits in a barrier after
 * its commit, so no process starts epoch e+2 while another may still need e):
 *   - metadata slot e & 1 and state array e & 1 are only rewritten by the commit of e+2;
 *   - direct segments written in e+1 were marked BACK in array e & 1 by their copy-on-write,
 *     and their backups hold e's bytes (a backup is rebound only by a copy-on-write of e+2);
 *   - buffered segments: e+1 wrote the copies e does not read.
 * So epoch e is recovered by naming it in the commit words and running recovery.
 *
 * Order: word B := e, persist; word A := e, persist.  A crash between leaves A = e+1 = B + 1,
 * the ordinary state after a commit: e+1 is committed, and the caller's protocol asks for the
 * rollback again.  The metadata slot of e is validated first; a pool with redo regions is
 * refused (their image was already updated in place by e+1's apply).
 */
#include <errno.h>
#include "pool_internal.h"

static int roll_back(prosper_pool *p, uint64_t epoch);

int prosper_pool_rollback(const char *path, uint64_t epoch)
{
	prosper_pool *p;
	int rc = prosper_pool_open(path, &p);
	return rc ? rc : roll_back(p, epoch);
}

int prosper_pool_rollback_mem(void *base, size_t size, const struct prosper_persist *pp, uint64_t epoch)
{
	prosper_pool *p;
	int rc = prosper_pool_open_mem(base, size, pp, &p);
	return rc ? rc : roll_back(p, epoch);
}

/* roll_back -- on the opened pool p, which it closes. */
static int roll_back(prosper_pool *p, uint64_t epoch)
{
	int rc = 0;
	pool_loading_set(p); /* a simulated crash below jumps out; the simulator frees p */
	if (p->epoch != epoch + 1 || epoch == 0) {
		rc = pool_err(-EINVAL, "cannot roll back to epoch %llu: epoch %llu is committed",
			      (unsigned long long)epoch, (unsigned long long)p->epoch);
		goto out;
	}
	for (uint32_t i = 0; i < p->nregions; i++)
		if (p->regions[i].info.mode == PROSPER_REGION_REDO) {
			rc = pool_err(-EINVAL, "cannot roll back a pool with redo regions");
			goto out;
		}
	rc = meta_validate(&p->sb, meta_slot(p, (int)(epoch & 1)), epoch);
	if (rc) {
		rc = pool_err(-ESTALE, "epoch %llu is no longer in the pool", (unsigned long long)epoch);
		goto out;
	}
	uint64_t w = commit_word_encode(&p->sb, epoch);
	prosper_persist_store64(&p->pp, PSITE_COMMIT_B, commit_word(p, 1), w);
	prosper_persist_range(&p->pp, PSITE_COMMIT_B, commit_word(p, 1), 8);
	if (!p->pp.error) {
		prosper_persist_store64(&p->pp, PSITE_COMMIT_A, commit_word(p, 0), w);
		prosper_persist_range(&p->pp, PSITE_COMMIT_A, commit_word(p, 0), 8);
	}
	if (p->pp.error)
		rc = pool_err(p->pp.error, "persisting the commit words of the rollback failed");
out:
	pool_loading_set(NULL);
	prosper_pool_close(&p);
	return rc;
}

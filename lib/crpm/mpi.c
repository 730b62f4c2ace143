/* mpi.c -- coordinated checkpoints of MPI programs (libcrpm §3.6), libprosper-crpm-mpi.
 *
 * Each rank has its own container (PATH.RANK).  A checkpoint is: every rank commits its own
 * epoch, then all wait for each other (an allreduce of the results, which is also a barrier).
 * Invariant M1: while any rank may still be before its commit of epoch e+1, no rank has
 * written anything after its own commit of e+1 -- it is waiting in the allreduce.  So at any
 * crash the ranks' committed epochs differ by at most one, and a rank one ahead can still roll
 * back to the common epoch (prosper_pool_rollback: nothing was written since its commit).
 *
 * Invariant M2: a rank prepares ahead (crpm_prepare_ahead, which overwrites the backups holding
 * epoch e) only after the barrier, when no rank can need e any more.
 *
 * Restart (crpm_mpi_open): every rank opens (recovers) its container; the minimum and maximum
 * committed epochs are agreed with allreduces; ranks at min+1 close, roll back one epoch and
 * reopen; a spread of two or more is refused on every rank (it cannot arise under M1).
 */
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include "prosper/internal/crpm_internal.h"

struct crpm_mpi {
	MPI_Comm comm;
};

static int all_ok(MPI_Comm comm, int ok)
{
	int all = 0;
	MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
	return all;
}

crpm_t *crpm_mpi_open(const char *path, const crpm_option_t *opt, MPI_Comm comm)
{
	int rank = 0;
	MPI_Comm_rank(comm, &rank);
	char mine[4096];
	snprintf(mine, sizeof mine, "%s.%d", path, rank);
	crpm_t *c = crpm_open(mine, opt);
	char reason[256];
	snprintf(reason, sizeof reason, "%s", c ? "" : crpm_errormsg());
	if (!all_ok(comm, c != NULL)) {
		if (c)
			crpm_close(c);
		return crpm_fail_null("%s", c ? "another rank could not open its container" : reason);
	}
	unsigned long long e = crpm_epoch(c), lo = 0, hi = 0;
	MPI_Allreduce(&e, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, comm);
	MPI_Allreduce(&e, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm);
	if (hi - lo >= 2) {
		crpm_close(c);
		return crpm_fail_null("ranks' checkpoints are %llu epochs apart (%llu..%llu): no common state",
				      hi - lo, lo, hi);
	}
	int ok = 1;
	if (e == lo + 1) {
		crpm_option_t o;
		if (opt)
			o = *opt;
		else
			crpm_init_option(&o);
		o.truncate = 0;
		crpm_close(c);
		c = NULL;
		if (crpm_rollback(mine, lo) == 0)
			c = crpm_open(mine, &o);
		if (!c) {
			snprintf(reason, sizeof reason, "%s", crpm_errormsg());
			ok = 0;
		} else if (o.verbose) {
			fprintf(stderr, "crpm: rank %d rolled back from epoch %llu to %llu\n", rank, e, lo);
		}
	}
	if (!all_ok(comm, ok)) {
		if (c)
			crpm_close(c);
		return crpm_fail_null("%s", ok ? "another rank could not roll back" : reason);
	}
	struct crpm_mpi *m = malloc(sizeof *m);
	if (!m || MPI_Comm_dup(comm, &m->comm) != MPI_SUCCESS) {
		free(m);
		crpm_close(c);
		return crpm_fail_null("out of memory");
	}
	c->mpi = m;
	return c;
}

int crpm_mpi_checkpoint(crpm_t *c)
{
	if (!c || !c->mpi)
		return crpm_fail(-EINVAL, "not a container opened with crpm_mpi_open");
	struct crpm_mpi *m = c->mpi;
	int rc = crpm_checkpoint_commit(c);
	int worst = 0;
	/* The barrier of M1: nobody returns (and writes) before every rank has committed.  The
	 * copy-on-write ahead overwrites the backups that a rollback to the previous epoch needs,
	 * so it waits for the barrier too (M2). */
	MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MIN, m->comm);
	if (!rc && worst)
		return crpm_fail(worst, "a checkpoint failed on another rank");
	return rc ? rc : crpm_checkpoint_ahead(c);
}

int crpm_mpi_close(crpm_t *c)
{
	if (!c || !c->mpi)
		return crpm_fail(-EINVAL, "not a container opened with crpm_mpi_open");
	struct crpm_mpi *m = c->mpi;
	MPI_Barrier(m->comm);
	MPI_Comm_free(&m->comm);
	free(m);
	c->mpi = NULL;
	return crpm_close(c);
}

/* stencil_mpi.c -- an MPI mini-app for libcrpm's parallel evaluation (§5.2.2, Fig 8): a 3-D
 * 7-point Jacobi sweep on a z-slab per rank with halo exchange, checkpointed every 5
 * iterations with crpm_mpi_checkpoint, or not at all.
 *
 *   stencil_mpi --n N --iters I [--every K] [--mode none|buffered|default] [--dir DIR]
 *
 * Each rank owns an N x N x N block (two arrays of doubles: current and next).  With a mode,
 * both arrays and the iteration counter live in the rank's container, so a restarted run
 * continues where its last checkpoint was.  Rank 0 prints one JSON line: wall seconds of the
 * iterations (the slowest rank), checkpoints, checkpointed bytes per rank, and a checksum that
 * must not depend on the mode.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "prosper/crpm.h"

struct state {
	uint64_t iter;
	uint64_t cur; /* 0 or 1: which array holds the current values */
	double v[];   /* two arrays of (n + 2) planes of n * n: one halo plane on each side */
};

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	long n = 64, iters = 100, every = 5;
	const char *mode = "buffered", *dir = "/dev/shm";
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--n")) n = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--iters")) iters = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--every")) every = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--mode")) mode = argv[i + 1];
		else if (!strcmp(argv[i], "--dir")) dir = argv[i + 1];
	}
	size_t plane = (size_t)(n * n), per = plane * (size_t)(n + 2);
	size_t bytes = sizeof(struct state) + 2 * per * sizeof(double);
	int persistent = strcmp(mode, "none") != 0;
	crpm_t *c = NULL;
	struct state *s;
	char path[4096];
	if (persistent) {
		crpm_option_t o;
		crpm_init_option(&o);
		o.truncate = 1;
		o.capacity = bytes + (8u << 20);
		o.mode = strcmp(mode, "default") ? CRPM_MODE_BUFFERED : CRPM_MODE_DEFAULT;
		snprintf(path, sizeof path, "%s/stencil-%d", dir, (int)getppid());
		c = crpm_mpi_open(path, &o, MPI_COMM_WORLD);
		if (!c) {
			fprintf(stderr, "rank %d: %s\n", rank, crpm_errormsg());
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		s = crpm_malloc(c, bytes);
		crpm_set_root(c, 0, s);
	} else {
		s = malloc(bytes);
	}
	memset(s, 0, bytes);
	for (size_t i = 0; i < per; i++)
		s->v[i] = (double)((i * 2654435761u + (size_t)rank * 97) % 1000) / 1000.0;
	if (c)
		crpm_mpi_checkpoint(c);
	uint64_t ckpt_bytes0 = 0;
	if (c) {
		struct crpm_stats st;
		crpm_get_stats(c, &st);
		ckpt_bytes0 = st.checkpoint_bytes;
	}
	long checkpoints = 0;
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime();
	for (long it = 0; it < iters; it++) {
		double *a = s->v + s->cur * per, *b = s->v + (1 - s->cur) * per;
		int up = rank + 1 < size ? rank + 1 : MPI_PROC_NULL, down = rank > 0 ? rank - 1 : MPI_PROC_NULL;
		/* halo planes: 0 and n + 1 */
		MPI_Sendrecv(a + plane * (size_t)n, (int)plane, MPI_DOUBLE, up, 0, a, (int)plane, MPI_DOUBLE, down, 0,
			     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		MPI_Sendrecv(a + plane, (int)plane, MPI_DOUBLE, down, 1, a + plane * (size_t)(n + 1), (int)plane, MPI_DOUBLE,
			     up, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		for (long z = 1; z <= n; z++)
			for (long y = 0; y < n; y++)
				for (long x = 0; x < n; x++) {
					size_t i = (size_t)z * plane + (size_t)(y * n + x);
					double sum = a[i - plane] + a[i + plane];
					sum += y > 0 ? a[i - (size_t)n] : 0.0;
					sum += y + 1 < n ? a[i + (size_t)n] : 0.0;
					sum += x > 0 ? a[i - 1] : 0.0;
					sum += x + 1 < n ? a[i + 1] : 0.0;
					b[i] = (a[i] + sum) / 7.0;
				}
		s->cur = 1 - s->cur;
		s->iter++;
		if (c && (it + 1) % every == 0) {
			if (crpm_mpi_checkpoint(c))
				MPI_Abort(MPI_COMM_WORLD, 1);
			checkpoints++;
		}
	}
	double t = MPI_Wtime() - t0, tmax;
	MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	double local = 0, sum;
	double *a = s->v + s->cur * per;
	for (size_t i = plane; i < plane * (size_t)(n + 1); i++)
		local += a[i];
	MPI_Reduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
	uint64_t cb = 0;
	if (c) {
		struct crpm_stats st;
		crpm_get_stats(c, &st);
		cb = st.checkpoint_bytes - ckpt_bytes0;
	}
	if (!rank)
		printf("{\"mode\": \"%s\", \"ranks\": %d, \"n\": %ld, \"iters\": %ld, \"every\": %ld, \"seconds\": %.4f, "
		       "\"checkpoints\": %ld, \"ckpt_mib_per_rank\": %.2f, \"state_mib_per_rank\": %.2f, \"checksum\": %.10e}\n",
		       mode, size, n, iters, every, tmax, checkpoints, (double)cb / 1048576.0, (double)bytes / 1048576.0, sum);
	if (c) {
		crpm_mpi_close(c);
		char mine[4200];
		snprintf(mine, sizeof mine, "%s.%d", path, rank);
		unlink(mine);
	} else {
		free(s);
	}
	MPI_Finalize();
	return 0;
}

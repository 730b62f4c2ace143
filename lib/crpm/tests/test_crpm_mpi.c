/* test_crpm_mpi.c -- coordinated checkpoints and restart of 4 MPI ranks (mpi_restart.sh).
 *
 *   test_crpm_mpi DIR run ITERS [KILL_RANK KILL_ITER]
 *   test_crpm_mpi DIR check EXPECTED_ITERS
 *
 * Each rank holds a vector of N words in its container.  An iteration exchanges the end words
 * with both ring neighbours (MPI_Sendrecv) and mixes every word with its neighbours and the
 * iteration number, then crpm_mpi_checkpoint.  `run` continues from the recovered state for
 * ITERS more iterations; KILL_RANK raises SIGKILL right before its checkpoint of KILL_ITER,
 * after the others had time to commit theirs -- so they restart one epoch ahead and must roll
 * back.  `check` recovers (crpm_mpi_open), demands that every rank holds the same iteration
 * count, equal to EXPECTED_ITERS, and that its vector equals a replay of that many iterations
 * in DRAM, word for word.
 */
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "prosper/crpm.h"

#define N (96 * 1024) /* 768 KiB per rank */

struct state {
	uint64_t iter;
	uint64_t v[N];
};

static int rank, size;

static uint64_t mix(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t z = a * 0x9E3779B97F4A7C15ull ^ (b + 0xBF58476D1CE4E5B9ull) ^ (c << 7);
	return z ^ (z >> 29);
}

static void init(uint64_t *v)
{
	for (uint64_t i = 0; i < N; i++)
		v[i] = mix((uint64_t)rank, i, 0);
}

/* iterate -- one step; writes only words whose index is a multiple of 1 + (it % 61), so the
 * written blocks differ from epoch to epoch. */
static void iterate(uint64_t *v, uint64_t it)
{
	uint64_t left_end, right_end, mine_first = v[0], mine_last = v[N - 1];
	int l = (rank + size - 1) % size, r = (rank + 1) % size;
	MPI_Sendrecv(&mine_first, 1, MPI_UINT64_T, l, 0, &right_end, 1, MPI_UINT64_T, r, 0, MPI_COMM_WORLD,
		     MPI_STATUS_IGNORE);
	MPI_Sendrecv(&mine_last, 1, MPI_UINT64_T, r, 1, &left_end, 1, MPI_UINT64_T, l, 1, MPI_COMM_WORLD,
		     MPI_STATUS_IGNORE);
	uint64_t stride = 1 + it % 61;
	for (uint64_t i = 0; i < N; i += stride) {
		uint64_t a = i ? v[i - 1] : left_end, b = i + 1 < N ? v[i + 1] : right_end;
		v[i] = mix(v[i], a ^ b, it);
	}
}

static crpm_t *open_ctr(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/mpi.crpm", dir);
	crpm_option_t o;
	crpm_init_option(&o);
	o.capacity = 16u << 20;
	o.verbose = 1;
	crpm_t *c = crpm_mpi_open(path, &o, MPI_COMM_WORLD);
	if (!c) {
		fprintf(stderr, "rank %d: %s\n", rank, crpm_errormsg());
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	return c;
}

static struct state *state_of(crpm_t *c)
{
	struct state *s = crpm_get_root(c, 0);
	if (!s) {
		s = crpm_malloc(c, sizeof *s);
		s->iter = 0;
		init(s->v);
		crpm_set_root(c, 0, s);
		if (crpm_mpi_checkpoint(c))
			MPI_Abort(MPI_COMM_WORLD, 1);
	}
	return s;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc < 4) {
		if (!rank)
			fprintf(stderr, "usage: %s DIR run ITERS [KILL_RANK KILL_ITER] | DIR check ITERS\n", argv[0]);
		MPI_Finalize();
		return 2;
	}
	crpm_t *c = open_ctr(argv[1]);
	struct state *s = state_of(c);
	uint64_t n = strtoull(argv[3], NULL, 10);
	int rc = 0;
	if (!strcmp(argv[2], "run")) {
		int kill_rank = argc > 5 ? atoi(argv[4]) : -1;
		uint64_t kill_iter = argc > 5 ? strtoull(argv[5], NULL, 10) : 0;
		for (uint64_t k = 0; k < n; k++) {
			iterate(s->v, s->iter);
			s->iter++;
			if (rank == kill_rank && s->iter == kill_iter) {
				usleep(300000); /* the others commit kill_iter and wait for us */
				raise(SIGKILL);
			}
			if (crpm_mpi_checkpoint(c))
				MPI_Abort(MPI_COMM_WORLD, 1);
		}
	} else {
		unsigned long long it = s->iter, lo, hi;
		MPI_Allreduce(&it, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
		MPI_Allreduce(&it, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
		uint64_t *model = malloc(sizeof(uint64_t) * N);
		init(model);
		for (uint64_t k = 0; k < lo; k++)
			iterate(model, k);
		int bad = lo != hi || lo != n || memcmp(model, s->v, sizeof(uint64_t) * N) != 0, any = 0;
		MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
		if (bad)
			fprintf(stderr, "rank %d: holds iteration %llu (ranks %llu..%llu, expected %llu)%s\n", rank, it, lo,
				hi, (unsigned long long)n, lo == hi ? ", vector differs from the replay" : "");
		if (!rank && !any)
			printf("4 ranks recovered iteration %llu, every vector equal to its replay\n", lo);
		rc = any;
		free(model);
	}
	crpm_mpi_close(c);
	MPI_Finalize();
	return rc;
}

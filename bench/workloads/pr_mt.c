/* pr_mt -- the PageRank of pr.c computed by THREADS threads (default 3): each thread owns a
 * static slice of the vertices and the iterations meet at a barrier, so the result is exactly
 * pr's, whatever the scheduling.  usage: pr_mt [SCALE] [THREADS] */
#include <pthread.h>
#include "graph.h"

struct shared {
	const struct csr *in;
	const uint32_t *outdeg;
	double *rank, *next;
	pthread_barrier_t bar;
	int threads;
};

struct slice {
	struct shared *sh;
	uint32_t lo, hi;
};

static void *worker(void *arg)
{
	struct slice *sl = arg;
	struct shared *sh = sl->sh;
	const double base = 0.15 / sh->in->n;
	for (int it = 0; it < 20; it++) {
		const double *rank = it % 2 ? sh->next : sh->rank;
		double *next = it % 2 ? sh->rank : sh->next;
		for (uint32_t v = sl->lo; v < sl->hi; v++) {
			double sum = 0;
			for (uint64_t e = sh->in->off[v]; e < sh->in->off[v + 1]; e++) {
				uint32_t u = sh->in->dst[e];
				sum += rank[u] / (sh->outdeg[u] ? sh->outdeg[u] : 1);
			}
			next[v] = base + 0.85 * sum;
		}
		pthread_barrier_wait(&sh->bar);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int scale = arg_scale(argc, argv, 18);
	int threads = argc > 2 ? atoi(argv[2]) : 3;
	if (threads < 1 || threads > 64) {
		fprintf(stderr, "usage: pr_mt [SCALE] [THREADS 1..64]\n");
		return 2;
	}
	struct csr in = rmat(scale, 16, 1);
	uint32_t *outdeg = calloc(in.n, 4);
	for (uint64_t e = 0; e < in.m; e++)
		outdeg[in.dst[e]]++;
	struct shared sh = { .in = &in, .outdeg = outdeg, .rank = malloc(in.n * sizeof(double)),
			     .next = malloc(in.n * sizeof(double)), .threads = threads };
	for (uint32_t v = 0; v < in.n; v++)
		sh.rank[v] = 1.0 / in.n;
	pthread_barrier_init(&sh.bar, NULL, (unsigned)threads);
	pthread_t tid[64];
	struct slice sl[64];
	for (int t = 0; t < threads; t++) {
		sl[t] = (struct slice){ &sh, (uint32_t)((uint64_t)in.n * t / threads), (uint32_t)((uint64_t)in.n * (t + 1) / threads) };
		if (t)
			pthread_create(&tid[t], NULL, worker, &sl[t]);
	}
	worker(&sl[0]);
	for (int t = 1; t < threads; t++)
		pthread_join(tid[t], NULL);
	uint64_t sum = 0; /* 20 iterations: the ranks are back in sh.rank */
	for (uint32_t v = 0; v < in.n; v++)
		sum = (sum ^ (uint64_t)(sh.rank[v] * 1e12)) * 0x100000001B3ull;
	printf("checksum 0x%016llx\n", (unsigned long long)sum);
	return 0;
}

/* pr -- GAPBS-style PageRank (pull direction, damping 0.85, 20 iterations by default) on an RMAT
 * graph of edge factor 16.  Prints a checksum of the ranks quantized to 1e-12.
 * usage: pr [SCALE [ITERATIONS]] */
#include "graph.h"

static double __attribute__((noinline)) iterate(const struct csr *in, const uint32_t *outdeg, double *rank,
						 double *next)
{
	const double base = 0.15 / in->n;
	double contrib_sum = 0, err = 0;
	for (uint32_t v = 0; v < in->n; v++) {
		double sum = 0;
		for (uint64_t e = in->off[v]; e < in->off[v + 1]; e++) {
			uint32_t u = in->dst[e];
			sum += rank[u] / (outdeg[u] ? outdeg[u] : 1);
		}
		next[v] = base + 0.85 * sum;
		contrib_sum += sum;
		err += next[v] > rank[v] ? next[v] - rank[v] : rank[v] - next[v];
	}
	return err + contrib_sum * 0;
}

int main(int argc, char **argv)
{
	int scale = arg_scale(argc, argv, 18), iterations = arg_rounds(argc, argv, 20);
	struct csr in = rmat(scale, 16, 1);
	uint32_t *outdeg = calloc(in.n, 4);
	for (uint64_t e = 0; e < in.m; e++)
		outdeg[in.dst[e]]++;
	double *rank = malloc(in.n * sizeof *rank), *next = malloc(in.n * sizeof *next);
	for (uint32_t v = 0; v < in.n; v++)
		rank[v] = 1.0 / in.n;
	double err = 0;
	for (int it = 0; it < iterations; it++) {
		err = iterate(&in, outdeg, rank, next);
		double *t = rank; rank = next; next = t;
	}
	uint64_t sum = 0;
	for (uint32_t v = 0; v < in.n; v++)
		sum = (sum ^ (uint64_t)(rank[v] * 1e12)) * 0x100000001B3ull;
	printf("checksum 0x%016llx\n", (unsigned long long)sum);
	return err < 0;
}

/* graph.h -- a Kronecker (RMAT) graph generator in CSR form, as Graph500/GAPBS generate them:
 * 2^scale vertices, edgefactor*2^scale edges, a=0.57 b=0.19 c=0.19, vertex ids scrambled.
 * Deterministic (xorshift64*), no libm. */
#ifndef PROSPER_GRAPH_H
#define PROSPER_GRAPH_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct csr {
	uint32_t n;
	uint64_t m;
	uint64_t *off;  /* n + 1 */
	uint32_t *dst;  /* m */
	uint8_t *w;     /* m weights 1..255 (SSSP) */
};

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static inline uint64_t g_next(void)
{
	g_rng ^= g_rng >> 12;
	g_rng ^= g_rng << 25;
	g_rng ^= g_rng >> 27;
	return g_rng * 0x2545F4914F6CDD1Dull;
}

static inline uint32_t scramble(uint32_t v, int scale)
{
	uint64_t x = (uint64_t)v * 0x9E3779B1u + 0x7F4A7C15u;
	return (uint32_t)(x & ((1ull << scale) - 1));
}

/* rmat -- edges; `reverse` builds in-edge lists (pull PageRank) instead of out-edges. */
static struct csr rmat(int scale, int edgefactor, int reverse)
{
	struct csr g;
	g.n = 1u << scale;
	g.m = (uint64_t)edgefactor << scale;
	uint32_t *src = malloc(g.m * 4), *dst = malloc(g.m * 4);
	for (uint64_t e = 0; e < g.m; e++) {
		uint32_t u = 0, v = 0;
		for (int b = 0; b < scale; b++) {
			uint32_t r = (uint32_t)(g_next() >> 40) % 100;
			int ub = r >= 57 + 19, vb = (r >= 57 && r < 76) || r >= 95;
			u = (u << 1) | (uint32_t)ub;
			v = (v << 1) | (uint32_t)vb;
		}
		u = scramble(u, scale);
		v = scramble(v, scale);
		src[e] = reverse ? v : u;
		dst[e] = reverse ? u : v;
	}
	g.off = calloc(g.n + 1, 8);
	for (uint64_t e = 0; e < g.m; e++)
		g.off[src[e] + 1]++;
	for (uint32_t i = 0; i < g.n; i++)
		g.off[i + 1] += g.off[i];
	uint64_t *fill = malloc((size_t)g.n * 8);
	for (uint32_t i = 0; i < g.n; i++)
		fill[i] = g.off[i];
	g.dst = malloc(g.m * 4);
	g.w = malloc(g.m);
	for (uint64_t e = 0; e < g.m; e++) {
		g.dst[fill[src[e]]] = dst[e];
		g.w[fill[src[e]]++] = (uint8_t)(1 + g_next() % 255);
	}
	free(fill);
	free(src);
	free(dst);
	return g;
}

static inline int arg_scale(int argc, char **argv, int dflt)
{
	if (argc < 2)
		return dflt;
	int s = atoi(argv[1]);
	if (s < 4 || s > 26) {
		fprintf(stderr, "usage: %s [SCALE 4..26]\n", argv[0]);
		exit(2);
	}
	return s;
}

/* argv[2], a count of rounds of the program's work (1..1e6), or dflt when absent: the benchmarks
 * lengthen a run by it without changing the graph. */
static inline int arg_rounds(int argc, char **argv, int dflt)
{
	if (argc < 3)
		return dflt;
	int n = atoi(argv[2]);
	if (n < 1 || n > 1000000 || argc > 3) {
		fprintf(stderr, "usage: %s [SCALE 4..26 [ROUNDS 1..1000000]]\n", argv[0]);
		exit(2);
	}
	return n;
}
#endif

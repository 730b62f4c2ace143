/* sssp -- Graph500-style single-source shortest paths (Dijkstra, binary heap) on an RMAT graph
 * of edge factor 16 with weights 1..255, from 8 sources by default.  Prints a checksum of the distances.
 * usage: sssp [SCALE [SOURCES]] */
#include "graph.h"

struct heap { uint64_t *key; uint32_t *v; uint32_t n; };

static void __attribute__((noinline)) push(struct heap *h, uint64_t k, uint32_t v)
{
	uint32_t i = h->n++;
	while (i) {
		uint32_t p = (i - 1) / 2;
		if (h->key[p] <= k)
			break;
		h->key[i] = h->key[p];
		h->v[i] = h->v[p];
		i = p;
	}
	h->key[i] = k;
	h->v[i] = v;
}

static void __attribute__((noinline)) pop(struct heap *h, uint64_t *k, uint32_t *v)
{
	*k = h->key[0];
	*v = h->v[0];
	uint64_t lk = h->key[--h->n];
	uint32_t lv = h->v[h->n], i = 0;
	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->key[c + 1] < h->key[c])
			c++;
		if (h->key[c] >= lk)
			break;
		h->key[i] = h->key[c];
		h->v[i] = h->v[c];
		i = c;
	}
	h->key[i] = lk;
	h->v[i] = lv;
}

int main(int argc, char **argv)
{
	int scale = arg_scale(argc, argv, 18), sources = arg_rounds(argc, argv, 8);
	struct csr g = rmat(scale, 16, 0);
	uint64_t *dist = malloc((size_t)g.n * 8);
	struct heap h = { malloc(g.m * 8 + 8), malloc(g.m * 4 + 4), 0 };
	uint64_t sum = 0;
	for (int s = 0; s < sources; s++) {
		uint32_t src = (uint32_t)(g_next() % g.n);
		for (uint32_t v = 0; v < g.n; v++)
			dist[v] = UINT64_MAX;
		dist[src] = 0;
		h.n = 0;
		push(&h, 0, src);
		while (h.n) {
			uint64_t d;
			uint32_t u;
			pop(&h, &d, &u);
			if (d > dist[u])
				continue;
			for (uint64_t e = g.off[u]; e < g.off[u + 1]; e++) {
				uint64_t nd = d + g.w[e];
				if (nd < dist[g.dst[e]]) {
					dist[g.dst[e]] = nd;
					push(&h, nd, g.dst[e]);
				}
			}
		}
		for (uint32_t v = 0; v < g.n; v++)
			sum = (sum ^ (dist[v] == UINT64_MAX ? 0xFFFF : dist[v])) * 0x100000001B3ull;
	}
	printf("checksum 0x%016llx\n", (unsigned long long)sum);
	return 0;
}

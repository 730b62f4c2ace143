/* kv -- a YCSB-style key-value workload: an open-addressing hash map of 8-byte keys and values,
 * a load phase of RECORDS inserts, then OPS operations (50 % reads, 50 % updates, workload A) on
 * keys drawn from a Zipfian distribution (theta 0.99, YCSB's generator) scrambled with FNV.
 * Prints a checksum of the values read.  usage: kv [OPS] [RECORDS] */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t rng = 88172645463325252ull;
static inline uint64_t next(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }
static inline double uniform(void) { return (next() >> 11) * (1.0 / 9007199254740992.0); }

static uint64_t fnv(uint64_t x)
{
	uint64_t h = 0xCBF29CE484222325ull;
	for (int i = 0; i < 8; i++) {
		h ^= (x >> (8 * i)) & 0xFF;
		h *= 0x100000001B3ull;
	}
	return h;
}

struct zipf { uint64_t n; double theta, alpha, zetan, eta; };

static void zipf_init(struct zipf *z, uint64_t n, double theta)
{
	double zeta2 = 1 + pow(0.5, theta), zetan = 0;
	for (uint64_t i = 1; i <= n; i++)
		zetan += 1.0 / pow((double)i, theta);
	z->n = n;
	z->theta = theta;
	z->alpha = 1.0 / (1.0 - theta);
	z->zetan = zetan;
	z->eta = (1 - pow(2.0 / n, 1 - theta)) / (1 - zeta2 / zetan);
}

static uint64_t zipf_next(const struct zipf *z)
{
	double u = uniform(), uz = u * z->zetan;
	if (uz < 1.0)
		return 0;
	if (uz < 1.0 + pow(0.5, z->theta))
		return 1;
	return (uint64_t)(z->n * pow(z->eta * u - z->eta + 1, z->alpha));
}

struct map { uint64_t *key, *val; uint64_t mask; };

static uint64_t *__attribute__((noinline)) slot(struct map *m, uint64_t k)
{
	uint64_t i = fnv(k) & m->mask;
	while (m->key[i] && m->key[i] != k)
		i = (i + 1) & m->mask;
	return &m->key[i];
}

static void __attribute__((noinline)) put(struct map *m, uint64_t k, uint64_t v)
{
	uint64_t *s = slot(m, k);
	*s = k;
	m->val[s - m->key] = v;
}

static uint64_t __attribute__((noinline)) get(struct map *m, uint64_t k)
{
	uint64_t *s = slot(m, k);
	return *s ? m->val[s - m->key] : 0;
}

int main(int argc, char **argv)
{
	long ops = argc > 1 ? atol(argv[1]) : 10000000, records = argc > 2 ? atol(argv[2]) : 1000000;
	if (ops <= 0 || records <= 0) {
		fprintf(stderr, "usage: kv [OPS>0] [RECORDS>0]\n");
		return 2;
	}
	struct map m;
	uint64_t cap = 1;
	while (cap < 2 * (uint64_t)records)
		cap <<= 1;
	m.key = calloc(cap, 8);
	m.val = calloc(cap, 8);
	m.mask = cap - 1;
	for (long r = 0; r < records; r++)
		put(&m, fnv((uint64_t)r) | 1, (uint64_t)r);
	struct zipf z;
	zipf_init(&z, (uint64_t)records, 0.99);
	uint64_t sum = 0;
	for (long i = 0; i < ops; i++) {
		uint64_t k = fnv(zipf_next(&z) % (uint64_t)records) | 1;
		if (next() & 1)
			sum = (sum ^ get(&m, k)) * 0x100000001B3ull;
		else
			put(&m, k, (uint64_t)i);
	}
	printf("checksum 0x%016llx\n", (unsigned long long)sum);
	return 0;
}

/* pool_bench -- committed GB/s of dirty blocks into a /dev/shm pool, beside memcpy of the same
 * bytes (the physical limit), under forced CACHE_LINE and PAGE granularity.
 * A benchmark, not a test: it prints what it measured.
 *
 * usage: pool_bench [--mib N] [--epochs N] [--json]
 * Steady state: both copies of every segment are initialized by two warm-up epochs, then each
 * measured epoch writes the dirty pattern and commits.  Patterns: dense (every byte), and
 * sparse (one 256 B block per 4 KiB page).
 * Then the fixed cost of a commit where the supervisor meets it: 4 KiB written and committed,
 * again and again, in a pool of `prosper run`'s default shape (8 GiB, 64 KiB segments), which
 * has 131072 slots -- a commit's bookkeeping must not grow with them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "prosper/pool.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct result { const char *gran, *pattern; double dirty_mib, pool_gbs, memcpy_gbs; };

static int run(const char *gran, int sparse, size_t bytes, int epochs, struct result *out)
{
	char path[128];
	snprintf(path, sizeof path, "/dev/shm/prosper-pool-bench-%d.pool", (int)getpid());
	unlink(path);
	setenv("PMEM2_FORCE_GRANULARITY", gran, 1);
	struct prosper_pool_config cfg;
	prosper_pool_config_default(&cfg);
	cfg.capacity = 2 * bytes + (4u << 20);
	prosper_pool *p;
	if (prosper_pool_create(path, &cfg, &p)) {
		fprintf(stderr, "pool_bench: %s\n", prosper_pool_errormsg());
		return -1;
	}
	uint8_t *mem = malloc(bytes), *dst = malloc(bytes);
	memset(mem, 1, bytes);
	memset(dst, 0, bytes);
	int id = prosper_pool_region_add(p, "heap", PROSPER_KIND_HEAP, PROSPER_REGION_BUFFERED, 0, bytes, 3);
	for (int w = 0; w < 2; w++) {
		prosper_pool_write(p, id, 0, mem, bytes);
		prosper_pool_commit(p, NULL, 0);
	}
	size_t step = sparse ? 4096 : bytes, chunk = sparse ? 256 : bytes;
	double dirty = 0, t_pool = 0, t_copy = 0;
	for (int e = 0; e < epochs; e++) {
		for (size_t o = 0; o < bytes; o += step)
			mem[o] = (uint8_t)(e + 2);
		double t0 = now();
		for (size_t o = 0; o < bytes; o += step)
			prosper_pool_write(p, id, o, mem + o, chunk);
		if (prosper_pool_commit(p, NULL, 0)) {
			fprintf(stderr, "pool_bench: %s\n", prosper_pool_errormsg());
			return -1;
		}
		double t1 = now();
		for (size_t o = 0; o < bytes; o += step)
			memcpy(dst + o, mem + o, chunk);
		double t2 = now();
		t_pool += t1 - t0;
		t_copy += t2 - t1;
		dirty += (double)(bytes / step) * chunk;
	}
	out->gran = gran;
	out->pattern = sparse ? "sparse" : "dense";
	out->dirty_mib = dirty / epochs / (1 << 20);
	out->pool_gbs = dirty / t_pool / 1e9;
	out->memcpy_gbs = dirty / t_copy / 1e9;
	if (dst[0] == 0xAB) /* keep the copy observable */
		puts("");
	prosper_pool_close(&p);
	unlink(path);
	free(mem);
	free(dst);
	return 0;
}

/* Microseconds per commit of 4 KiB in an 8 GiB pool of 64 KiB segments (best of 3 x n). */
static double small_commit_us(int n)
{
	char path[128];
	snprintf(path, sizeof path, "/dev/shm/prosper-pool-bench-small-%d.pool", (int)getpid());
	unlink(path);
	unsetenv("PMEM2_FORCE_GRANULARITY");
	struct prosper_pool_config cfg;
	prosper_pool_config_default(&cfg);
	cfg.capacity = 8ull << 30;
	cfg.seg_size = 64u << 10;
	prosper_pool *p;
	if (prosper_pool_create(path, &cfg, &p)) {
		fprintf(stderr, "pool_bench: %s\n", prosper_pool_errormsg());
		return -1;
	}
	int id = prosper_pool_region_add(p, "r", PROSPER_KIND_HEAP, PROSPER_REGION_BUFFERED, 0, 1u << 20, 3);
	static uint8_t page[4096];
	double best = 1e9;
	for (int rep = 0; rep < 3; rep++) {
		double t0 = now();
		for (int i = 0; i < n; i++) {
			page[0] = (uint8_t)i;
			if (prosper_pool_write(p, id, (uint64_t)(i % 256) * 4096, page, sizeof page) ||
			    prosper_pool_commit(p, NULL, 0)) {
				fprintf(stderr, "pool_bench: %s\n", prosper_pool_errormsg());
				best = -1;
				goto out;
			}
		}
		double dt = (now() - t0) / n;
		best = dt < best ? dt : best;
	}
out:
	prosper_pool_close(&p);
	unlink(path);
	return best < 0 ? -1 : best * 1e6;
}

int main(int argc, char **argv)
{
	size_t mib = 128;
	int epochs = 8, json = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mib") && i + 1 < argc) mib = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--epochs") && i + 1 < argc) epochs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--json")) json = 1;
		else { fprintf(stderr, "usage: pool_bench [--mib N] [--epochs N] [--json]\n"); return 2; }
	}
	const char *grans[] = { "CACHE_LINE", "PAGE" };
	struct result res[4];
	int n = 0;
	for (int g = 0; g < 2; g++)
		for (int s = 0; s < 2; s++)
			if (run(grans[g], s, mib << 20, epochs, &res[n++]))
				return 1;
	double small = small_commit_us(3000);
	if (small < 0)
		return 1;
	if (json) {
		printf("{\"mib\": %zu, \"epochs\": %d, \"small_commit_us\": %.2f, \"results\": [", mib, epochs, small);
		for (int i = 0; i < n; i++)
			printf("%s{\"granularity\": \"%s\", \"pattern\": \"%s\", \"dirty_mib_per_epoch\": %.2f, "
			       "\"commit_gbs\": %.3f, \"memcpy_gbs\": %.3f, \"ratio\": %.3f}", i ? ", " : "",
			       res[i].gran, res[i].pattern, res[i].dirty_mib, res[i].pool_gbs, res[i].memcpy_gbs,
			       res[i].pool_gbs / res[i].memcpy_gbs);
		printf("]}\n");
	} else {
		printf("%-11s %-7s %12s %12s %12s %8s\n", "granularity", "pattern", "dirty MiB/ep", "commit GB/s",
		       "memcpy GB/s", "ratio");
		for (int i = 0; i < n; i++)
			printf("%-11s %-7s %12.2f %12.3f %12.3f %8.3f\n", res[i].gran, res[i].pattern, res[i].dirty_mib,
			       res[i].pool_gbs, res[i].memcpy_gbs, res[i].pool_gbs / res[i].memcpy_gbs);
		printf("a commit of 4 KiB in an 8 GiB pool of 64 KiB segments: %.2f us\n", small);
	}
	return 0;
}

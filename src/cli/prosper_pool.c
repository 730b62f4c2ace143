/* prosper_pool.c -- the C side of `prosper inspect`, `prosper crashtest` (crashtest.c) and the
 * pool demo.
 *
 * usage: prosper-pool inspect [--json] POOL
 *        prosper-pool crashtest [--workload pool|crpm|all] [--states N] [--seed S]
 *                               [--granularity cache_line|page|both] [--no-mutants] [--json]
 *        prosper-pool life POOL --generations N [--size S]   (demo workload, see below)
 *        prosper-pool life-verify POOL [--size S]
 * Exit codes: 0 ok, 1 failure (inconsistency found, mutant missed), 2 usage or refused input.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "prosper/crc32c.h"
#include "prosper/pool.h"
#include <sys/stat.h>
#include "cli_util.h"
#include "fastpool.h"

/* ------------------------------------------------------------------ inspect */

static int cmd_inspect(int argc, char **argv)
{
	int json = 0;
	const char *path = NULL;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (argv[i][0] == '-' && argv[i][1])
			return die("inspect", "unknown option (usage: prosper inspect [--json] POOL)");
		else if (!path)
			path = argv[i];
		else
			return die("inspect", "one pool at a time");
	}
	if (!path)
		return die("inspect", "no pool given (usage: prosper inspect [--json] POOL)");
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	if (!mem)
		return die("inspect", "out of memory");
	int rc = prosper_pool_inspect_file(path, json, mem);
	fclose(mem);
	if (rc != 0) {
		free(text);
		return die("inspect", prosper_pool_errormsg());
	}
	/* a pool on a disk may have a fast pool holding newer checkpoints (docs/durability.md) */
	uint8_t uuid[16];
	uint64_t epoch = 0, fast_epoch = 0;
	char fast[4096];
	struct stat st;
	int has_fast = prosper_pool_peek(path, uuid, &epoch) == 0 && fastpool_path(uuid, fast, sizeof fast, 0) == 0 &&
		       lstat(fast, &st) == 0 && prosper_pool_peek(fast, uuid, &fast_epoch) == 0;
	if (json) {
		while (len && (text[len - 1] == '\n' || text[len - 1] == '}'))
			text[--len] = 0; /* the object, reopened for one more key */
		fputs(text, stdout);
		if (has_fast) {
			fputs(", \"fast_pool\": {\"path\": \"", stdout);
			for (const char *c = fast; *c; c++)
				printf(*c == '"' || *c == '\\' ? "\\%c" : (unsigned char)*c < 0x20 ? "\\u%04x" : "%c", *c);
			printf("\", \"epoch\": %" PRIu64 "}}\n", fast_epoch);
		} else {
			puts(", \"fast_pool\": null}");
		}
	} else {
		fputs(text, stdout);
		if (has_fast)
			printf("  the latest checkpoints are in the fast pool %s (epoch %" PRIu64 "); this pool holds the "
			       "latest durable one\n", fast, fast_epoch);
	}
	free(text);
	return 0;
}

/* ------------------------------------------------------------------ demo workload: Life */
/* A deterministic computation whose state is a memory region: Conway's Life on a torus.
 * `life` runs generations and commits one epoch per generation; kill it at any instant.
 * `life-verify` recovers the pool and recomputes the committed generation from scratch. */

static void life_seed(uint8_t *g, int n)
{
	uint64_t x = 0x9E3779B97F4A7C15ull;
	for (int i = 0; i < n * n; i++) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		g[i] = (x >> 40) % 3 == 0;
	}
}

static void life_step(const uint8_t *g, uint8_t *out, int n)
{
	for (int y = 0; y < n; y++)
		for (int x = 0; x < n; x++) {
			int c = 0;
			for (int dy = -1; dy <= 1; dy++)
				for (int dx = -1; dx <= 1; dx++)
					if (dx || dy)
						c += g[((y + dy + n) % n) * n + (x + dx + n) % n];
			out[y * n + x] = c == 3 || (c == 2 && g[y * n + x]);
		}
}

/* The region holds [u64 generation][grid]; the blob holds the generation too. */
static int cmd_life(int argc, char **argv, int verify)
{
	const char *cmd = verify ? "life-verify" : "life";
	const char *path = NULL;
	uint64_t gens = 100, size = 512;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--generations") && i + 1 < argc) {
			if (parse_u64(argv[++i], &gens)) return die(cmd, "--generations takes a whole number");
		} else if (!strcmp(argv[i], "--size") && i + 1 < argc) {
			if (parse_u64(argv[++i], &size) || size < 8 || size > 4096) return die(cmd, "--size is 8..4096");
		} else if (!path && argv[i][0] != '-')
			path = argv[i];
		else
			return die(cmd, "usage: prosper-pool life|life-verify POOL [--generations N] [--size S]");
	}
	if (!path)
		return die(cmd, "no pool given");
	int n = (int)size;
	size_t bytes = 8 + (size_t)n * n;
	uint8_t *cur = calloc(1, bytes), *next = calloc(1, bytes);
	prosper_pool *p = NULL;
	int rc = prosper_pool_open(path, &p);
	if (rc == -ENOENT && !verify) {
		struct prosper_pool_config cfg;
		prosper_pool_config_default(&cfg);
		cfg.capacity = 4 * ((bytes + (2u << 20)) & ~((2ull << 20) - 1)) + (4u << 20);
		rc = prosper_pool_create(path, &cfg, &p);
	}
	if (rc)
		return die(cmd, prosper_pool_errormsg());
	int idx = prosper_pool_region_find(p, "grid");
	struct prosper_region_info info;
	uint64_t gen = 0;
	if (idx >= 0) {
		prosper_pool_region_get(p, idx, &info);
		if (info.length != bytes)
			return die(cmd, "pool holds a grid of another size");
		prosper_pool_region_read(p, info.id, 0, cur, bytes);
		memcpy(&gen, cur, 8);
	} else if (verify) {
		return die(cmd, "pool holds no grid");
	} else {
		life_seed(cur + 8, n);
		int id = prosper_pool_region_add(p, "grid", PROSPER_KIND_HEAP, PROSPER_REGION_BUFFERED, (uintptr_t)cur, bytes, 3);
		if (id < 0 || prosper_pool_write(p, (uint32_t)id, 0, cur, bytes) || prosper_pool_commit(p, &gen, 8))
			return die(cmd, prosper_pool_errormsg());
		idx = prosper_pool_region_find(p, "grid");
		prosper_pool_region_get(p, idx, &info);
	}
	if (verify) {
		/* Recompute generation `gen` from the seed and compare byte for byte. */
		uint8_t *ref = calloc(1, bytes), *tmp = calloc(1, bytes);
		life_seed(ref + 8, n);
		for (uint64_t g = 0; g < gen; g++) {
			life_step(ref + 8, tmp + 8, n);
			uint8_t *t = ref; ref = tmp; tmp = t;
		}
		memcpy(ref, &gen, 8);
		size_t bl;
		const void *blob = prosper_pool_blob(p, &bl);
		uint64_t bgen = 0;
		if (bl == 8)
			memcpy(&bgen, blob, 8);
		int same = memcmp(ref, cur, bytes) == 0 && bgen == gen;
		printf("{\"epoch\": %" PRIu64 ", \"generation\": %" PRIu64 ", \"identical\": %s, \"crc32c\": \"%08x\"}\n",
		       prosper_pool_epoch(p), gen, same ? "true" : "false", prosper_crc32c(0, cur, bytes));
		prosper_pool_close(&p);
		return same ? 0 : 1;
	}
	while (gen < gens) {
		life_step(cur + 8, next + 8, n);
		gen++;
		memcpy(next, &gen, 8);
		/* Only the bytes that changed go to the pool (the diff tracker's job in `prosper run`). */
		for (size_t o = 0; o < bytes;) {
			if (cur[o] == next[o]) { o++; continue; }
			size_t e = o + 1;
			while (e < bytes && cur[e] != next[e]) e++;
			if (prosper_pool_write(p, info.id, o, next + o, e - o))
				return die(cmd, prosper_pool_errormsg());
			o = e;
		}
		if (prosper_pool_commit(p, &gen, 8))
			return die(cmd, prosper_pool_errormsg());
		uint8_t *t = cur; cur = next; next = t;
		printf("generation %" PRIu64 " committed as epoch %" PRIu64 "\n", gen, prosper_pool_epoch(p));
		fflush(stdout);
	}
	return prosper_pool_close(&p) ? die(cmd, "closing the pool failed") : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return die("pool", "usage: prosper-pool inspect|crashtest|life|life-verify ...");
	const char *c = argv[1];
	if (!strcmp(c, "inspect")) return cmd_inspect(argc - 2, argv + 2);
	if (!strcmp(c, "crashtest")) return cmd_crashtest(argc - 2, argv + 2);
	if (!strcmp(c, "life")) return cmd_life(argc - 2, argv + 2, 0);
	if (!strcmp(c, "life-verify")) return cmd_life(argc - 2, argv + 2, 1);
	return die("pool", "unknown command");
}

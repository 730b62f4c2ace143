/* gen_corpus DIR -- write a few small valid pools (regions, direct segments, redo stacks with
 * their logs, blobs) as seeds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "prosper/pool.h"

int main(int argc, char **argv)
{
	if (argc != 2) { fprintf(stderr, "usage: gen_corpus DIR\n"); return 2; }
	for (int k = 0; k < 3; k++) {
		struct prosper_pool_config cfg;
		prosper_pool_config_default(&cfg);
		cfg.seg_size = 4096; cfg.block_size = 256; cfg.capacity = 8 * 4096; cfg.max_regions = 4;
		cfg.meta_bytes = 1024; cfg.max_backups = 1;
		size_t size = (size_t)prosper_pool_size_for(&cfg);
		uint8_t *buf = calloc(1, size);
		struct prosper_persist pp = { .granularity = PROSPER_GRAN_CACHE_LINE, .simulated = 1 };
		prosper_pool *p;
		if (prosper_pool_create_mem(buf, size, &cfg, &pp, &p)) return 1;
		int a = prosper_pool_region_add(p, "heap", PROSPER_KIND_HEAP, PROSPER_REGION_BUFFERED, 0x1000, 5000 + k, 3);
		int d = prosper_pool_region_add(p, "nvm", PROSPER_KIND_CRPM, PROSPER_REGION_DIRECT, 0x9000, 4096, 3);
		int s = prosper_pool_region_add(p, "stack", PROSPER_KIND_STACK, PROSPER_REGION_REDO, 0x7000, 1000, 3);
		for (int e = 0; e <= k; e++) {
			char bytes[100];
			memset(bytes, 'a' + e, sizeof bytes);
			prosper_pool_write(p, a, 100 * e, bytes, sizeof bytes);
			prosper_pool_direct_prepare(p, d, 0);
			memcpy(prosper_pool_direct_addr(p, d, 0, NULL), bytes, 10);
			prosper_pool_direct_dirty(p, d, 0, 10);
			prosper_pool_write(p, s, 8 * e + 1, bytes, 9);
			prosper_pool_commit(p, bytes, 16);
		}
		if (k == 2) /* leave a copy-on-write and the next redo log in progress */
			prosper_pool_direct_prepare(p, d, 0);
		if (k == 2)
			prosper_pool_write(p, s, 500, "next", 4);
		char path[512];
		snprintf(path, sizeof path, "%s/pool%d", argv[1], k);
		FILE *f = fopen(path, "wb");
		if (!f || fwrite(buf, 1, size, f) != size) return 1;
		fclose(f);
		prosper_pool_abandon(&p);
		free(buf);
	}
	return 0;
}

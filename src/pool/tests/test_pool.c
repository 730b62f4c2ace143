/* test_pool.c -- the pool API on real files: create/open/commit/recover, regions that grow and
 * shrink, direct mode with stealing, refusals with reasons, and inspect. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "prosper/pool.h"

static int fails, passes;
#define CHECK(c) do { if (c) passes++; else { fails++; printf("FAIL %s:%d: %s (%s)\n", __FILE__, __LINE__, #c, prosper_pool_errormsg()); } } while (0)

static char dir[] = "/tmp/prosper-test-pool-XXXXXX";

static void path_of(char *buf, const char *name) { snprintf(buf, 256, "%s/%s", dir, name); }

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++) { seed = seed * 1103515245u + 12345u; p[i] = (uint8_t)(seed >> 16); }
}

static void test_buffered_roundtrip(void)
{
	char path[256];
	path_of(path, "a.pool");
	struct prosper_pool_config cfg;
	prosper_pool_config_default(&cfg);
	cfg.capacity = 32ull << 20;
	prosper_pool *p = NULL;
	CHECK(prosper_pool_create(path, &cfg, &p) == 0);
	CHECK(prosper_pool_create(path, &cfg, &p) == -EEXIST); /* never overwrite */
	CHECK(prosper_pool_epoch(p) == 0);
	size_t n = 5u << 20; /* 3 segments, the last partial */
	uint8_t *mem = malloc(n), *back = malloc(n);
	fill(mem, n, 1);
	int id = prosper_pool_region_add(p, "heap", PROSPER_KIND_HEAP, PROSPER_REGION_BUFFERED, 0x555500000000, n, 3);
	CHECK(id >= 0);
	CHECK(prosper_pool_write(p, id, 0, mem, n) == 0);
	CHECK(prosper_pool_commit(p, "regs", 4) == 0);
	/* epoch 2: sparse changes, and the region grows */
	for (size_t off = 100; off < n; off += 70000) { mem[off] ^= 0xFF; CHECK(prosper_pool_write(p, id, off, mem + off, 1) == 0); }
	CHECK(prosper_pool_region_resize(p, id, n + 4096) == 0);
	mem = realloc(mem, n + 4096);
	memset(mem + n, 0, 4096);
	mem[n + 10] = 42;
	CHECK(prosper_pool_write(p, id, n + 10, mem + n + 10, 1) == 0);
	n += 4096;
	CHECK(prosper_pool_commit(p, "regs2", 5) == 0);
	/* staged but never committed: must not appear after reopen */
	uint8_t junk[300];
	memset(junk, 0xEE, sizeof junk);
	CHECK(prosper_pool_write(p, id, 5000, junk, sizeof junk) == 0);
	CHECK(prosper_pool_close(&p) == 0 && p == NULL);

	CHECK(prosper_pool_open(path, &p) == 0);
	CHECK(prosper_pool_epoch(p) == 2);
	CHECK(prosper_pool_region_count(p) == 1);
	struct prosper_region_info info;
	CHECK(prosper_pool_region_get(p, 0, &info) == 0 && info.length == n && !strcmp(info.name, "heap") &&
	      info.vaddr == 0x555500000000ull);
	back = realloc(back, n);
	CHECK(prosper_pool_region_read(p, id, 0, back, n) == 0);
	CHECK(memcmp(back, mem, n) == 0);
	size_t bl;
	const void *blob = prosper_pool_blob(p, &bl);
	CHECK(bl == 5 && !memcmp(blob, "regs2", 5));
	/* after reopen, a checkpoint of one byte must still produce a full, right image */
	mem[7] = 7;
	CHECK(prosper_pool_write(p, id, 7, mem + 7, 1) == 0);
	CHECK(prosper_pool_commit(p, NULL, 0) == 0);
	CHECK(prosper_pool_close(&p) == 0);
	CHECK(prosper_pool_open(path, &p) == 0);
	CHECK(prosper_pool_region_read(p, id, 0, back, n) == 0 && memcmp(back, mem, n) == 0);
	/* shrink and remove */
	CHECK(prosper_pool_region_resize(p, id, 1000) == 0);
	int id2 = prosper_pool_region_add(p, "stack", PROSPER_KIND_STACK, PROSPER_REGION_BUFFERED, 0x7ff000000000, 8192, 3);
	CHECK(id2 >= 0 && id2 != id);
	CHECK(prosper_pool_commit(p, NULL, 0) == 0);
	CHECK(prosper_pool_region_read(p, id2, 0, back, 8192) == 0);
	int zero = 1;
	for (int i = 0; i < 8192; i++) zero &= back[i] == 0;
	CHECK(zero); /* a new region reads as zero */
	CHECK(prosper_pool_region_remove(p, id) == 0);
	CHECK(prosper_pool_commit(p, NULL, 0) == 0);
	CHECK(prosper_pool_region_count(p) == 1);
	CHECK(prosper_pool_close(&p) == 0);
	free(mem);
	free(back);
}

static void test_direct_and_steal(void)
{
	char path[256];
	path_of(path, "d.pool");
	struct prosper_pool_config cfg;
	prosper_pool_config_default(&cfg);
	cfg.capacity = 16ull << 20;
	cfg.max_backups = 1;
	prosper_pool *p = NULL;
	CHECK(prosper_pool_create(path, &cfg, &p) == 0);
	int id = prosper_pool_region_add(p, "crpm", PROSPER_KIND_CRPM, PROSPER_REGION_DIRECT, 0x10000000000, 4u << 20, 3);
	CHECK(id >= 0);
	CHECK(prosper_pool_commit(p, NULL, 0) == 0);
	uint64_t len;
	uint8_t *s0 = prosper_pool_direct_addr(p, id, 0, &len), *s1 = prosper_pool_direct_addr(p, id, 1, NULL);
	CHECK(s0 && s1 && len == (2u << 20));
	CHECK(prosper_pool_direct_dirty(p, id, 0, 1) == -EINVAL); /* not prepared */
	CHECK(prosper_pool_direct_prepare(p, id, 0) == 0);
	memset(s0, 1, 4096);
	CHECK(prosper_pool_direct_dirty(p, id, 0, 4096) == 0);
	CHECK(prosper_pool_commit(p, NULL, 0) == 0);
	/* epoch 3: segment 1 needs a backup; the only one is stolen from segment 0 */
	CHECK(prosper_pool_direct_prepare(p, id, 1) == 0);
	memset(s1, 2, 100);
	CHECK(prosper_pool_direct_dirty(p, id, 2u << 20, 100) == 0);
	/* with both segments modified in one epoch and one backup, the second must be refused */
	CHECK(prosper_pool_direct_prepare(p, id, 0) == -ENOSPC);
	struct prosper_pool_stats st;
	prosper_pool_stats_get(p, &st);
	CHECK(st.steals == 1);
	/* crash now (no commit): recovery restores segment 1 from its backup */
	memset(s1 + 200, 9, 100);
	CHECK(prosper_pool_close(&p) == 0);
	CHECK(prosper_pool_open(path, &p) == 0);
	CHECK(prosper_pool_epoch(p) == 2);
	prosper_pool_stats_get(p, &st);
	CHECK(st.recovered_segments == 1);
	s0 = prosper_pool_direct_addr(p, id, 0, NULL);
	s1 = prosper_pool_direct_addr(p, id, 1, NULL);
	CHECK(s0[0] == 1 && s0[4095] == 1 && s0[4096] == 0 && s1[0] == 0 && s1[250] == 0);
	CHECK(prosper_pool_close(&p) == 0);
}

static void test_refusals(void)
{
	char path[256];
	prosper_pool *p = NULL;
	path_of(path, "missing.pool");
	CHECK(prosper_pool_open(path, &p) == -ENOENT);
	path_of(path, "empty.pool");
	close(open(path, O_CREAT | O_WRONLY, 0600));
	CHECK(prosper_pool_open(path, &p) < 0 && strstr(prosper_pool_errormsg(), "empty"));
	path_of(path, "garbage.pool");
	int fd = open(path, O_CREAT | O_WRONLY, 0600);
	uint8_t junk[65536];
	fill(junk, sizeof junk, 3);
	CHECK(write(fd, junk, sizeof junk) == (ssize_t)sizeof junk);
	close(fd);
	CHECK(prosper_pool_open(path, &p) == -EBADMSG && strstr(prosper_pool_errormsg(), "magic"));
	/* a valid pool, truncated */
	path_of(path, "t.pool");
	struct prosper_pool_config cfg;
	prosper_pool_config_default(&cfg);
	cfg.capacity = 8ull << 20;
	CHECK(prosper_pool_create(path, &cfg, &p) == 0);
	CHECK(prosper_pool_close(&p) == 0);
	CHECK(truncate(path, 1 << 20) == 0);
	CHECK(prosper_pool_open(path, &p) < 0 && strstr(prosper_pool_errormsg(), "truncated"));
	/* a flipped bit in the superblock */
	path_of(path, "f.pool");
	CHECK(prosper_pool_create(path, &cfg, &p) == 0);
	CHECK(prosper_pool_close(&p) == 0);
	fd = open(path, O_RDWR);
	uint8_t b;
	CHECK(pread(fd, &b, 1, 60) == 1);
	b ^= 4;
	CHECK(pwrite(fd, &b, 1, 60) == 1);
	close(fd);
	CHECK(prosper_pool_open(path, &p) == -EBADMSG && strstr(prosper_pool_errormsg(), "checksum"));
	/* symlinks are not followed */
	char link[256];
	path_of(link, "link.pool");
	path_of(path, "t.pool");
	CHECK(symlink(path, link) == 0);
	CHECK(prosper_pool_open(link, &p) == -ELOOP);
	/* bad configs */
	cfg.seg_size = 3000;
	path_of(path, "bad.pool");
	CHECK(prosper_pool_create(path, &cfg, &p) == -EINVAL);
	CHECK(access(path, F_OK) != 0); /* nothing left behind */
}

/* Every single-bit flip in the metadata area (superblock .. bindings) of a pool must either be
 * refused with a reason or leave recovery with exactly the committed epoch and its bytes:
 * corruption is never turned silently into a different state. */
static void test_corruption_sweep(void)
{
	struct prosper_pool_config cfg;
	prosper_pool_config_default(&cfg);
	cfg.seg_size = 4096; cfg.block_size = 256; cfg.capacity = 12 * 4096; cfg.max_regions = 4;
	cfg.meta_bytes = 1024; cfg.max_backups = 2;
	size_t size = (size_t)prosper_pool_size_for(&cfg);
	uint8_t *img = calloc(1, size), *work = malloc(size);
	struct prosper_persist pp = { .granularity = PROSPER_GRAN_CACHE_LINE, .simulated = 1 };
	prosper_pool *p;
	CHECK(prosper_pool_create_mem(img, size, &cfg, &pp, &p) == 0);
	int a = prosper_pool_region_add(p, "heap", PROSPER_KIND_HEAP, PROSPER_REGION_BUFFERED, 0x1000, 9000, 3);
	int d = prosper_pool_region_add(p, "nvm", PROSPER_KIND_CRPM, PROSPER_REGION_DIRECT, 0x9000, 6000, 3);
	uint8_t bytes[9000];
	for (int e = 0; e < 3; e++) {
		fill(bytes, sizeof bytes, 10 + e);
		CHECK(prosper_pool_write(p, a, 0, bytes, 3000 * (e + 1)) == 0);
		CHECK(prosper_pool_direct_prepare(p, d, e % 2) == 0);
		memcpy(prosper_pool_direct_addr(p, d, e % 2, NULL), bytes, 100);
		CHECK(prosper_pool_direct_dirty(p, d, 4096 * (e % 2), 100) == 0);
		CHECK(prosper_pool_commit(p, bytes, 32) == 0);
	}
	CHECK(prosper_pool_direct_prepare(p, d, 0) == 0); /* a copy-on-write in progress */
	uint8_t ref_a[9000], ref_d[6000], got[9000];
	CHECK(prosper_pool_region_read(p, a, 0, ref_a, 9000) == 0);
	CHECK(prosper_pool_region_read(p, d, 0, ref_d, 6000) == 0);
	uint64_t epoch = prosper_pool_epoch(p);
	prosper_pool_abandon(&p);
	size_t meta_end = size - 12 * 4096; /* data_off: the data slots follow the metadata */
	unsigned refused = 0, same = 0, wrong = 0, seed = 99;
	for (size_t off = 0; off < meta_end; off++) {
		seed = seed * 1103515245u + 12345u;
		memcpy(work, img, size);
		work[off] ^= (uint8_t)(1u << ((seed >> 16) & 7));
		prosper_pool *q = NULL;
		if (prosper_pool_open_mem(work, size, &pp, &q) != 0) {
			refused++;
			continue;
		}
		int ok = prosper_pool_epoch(q) == epoch && prosper_pool_region_count(q) == 2 &&
			 prosper_pool_region_read(q, a, 0, got, 9000) == 0 && !memcmp(got, ref_a, 9000) &&
			 prosper_pool_region_read(q, d, 0, got, 6000) == 0 && !memcmp(got, ref_d, 6000);
		if (ok) same++; else { wrong++; if (wrong < 4) printf("bit flip at %zu recovered a different state\n", off); }
		prosper_pool_abandon(&q);
	}
	printf("corruption sweep: %zu bytes flipped: %u refused, %u recovered identical, %u wrong\n",
	       meta_end, refused, same, wrong);
	CHECK(wrong == 0);
	CHECK(refused > 0 && same > 0);
	free(img);
	free(work);
}

int main(void)
{
	if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
	test_buffered_roundtrip();
	test_direct_and_steal();
	test_refusals();
	test_corruption_sweep();
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0) fails++;
	printf("%d passed, %d failed\n", passes, fails);
	return fails != 0;
}

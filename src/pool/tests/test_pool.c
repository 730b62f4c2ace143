/* test_pool.c -- the pool API on real files: create/open/commit/recover, regions that grow and
 * shrink, direct mode with stealing, redo mode (Prosper's two-step stack commit) against a
 * reference model, refusals with reasons, and inspect. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "prosper/crc32c.h"
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
	cfg.seg_size = 4096; cfg.block_size = 256; cfg.capacity = 16 * 4096; cfg.max_regions = 4;
	cfg.meta_bytes = 1024; cfg.max_backups = 2;
	size_t size = (size_t)prosper_pool_size_for(&cfg);
	uint8_t *img = calloc(1, size), *work = malloc(size);
	struct prosper_persist pp = { .granularity = PROSPER_GRAN_CACHE_LINE, .simulated = 1 };
	prosper_pool *p;
	CHECK(prosper_pool_create_mem(img, size, &cfg, &pp, &p) == 0);
	int a = prosper_pool_region_add(p, "heap", PROSPER_KIND_HEAP, PROSPER_REGION_BUFFERED, 0x1000, 9000, 3);
	int d = prosper_pool_region_add(p, "nvm", PROSPER_KIND_CRPM, PROSPER_REGION_DIRECT, 0x9000, 6000, 3);
	int s = prosper_pool_region_add(p, "stack", PROSPER_KIND_STACK, PROSPER_REGION_REDO, 0x7000, 5000, 3);
	CHECK(a >= 0 && d >= 0 && s >= 0);
	uint8_t bytes[9000];
	for (int e = 0; e < 3; e++) {
		fill(bytes, sizeof bytes, 10 + e);
		CHECK(prosper_pool_write(p, a, 0, bytes, 3000 * (e + 1)) == 0);
		CHECK(prosper_pool_direct_prepare(p, d, e % 2) == 0);
		memcpy(prosper_pool_direct_addr(p, d, e % 2, NULL), bytes, 100);
		CHECK(prosper_pool_direct_dirty(p, d, 4096 * (e % 2), 100) == 0);
		CHECK(prosper_pool_write(p, s, 1000 * e + 3, bytes, 777) == 0);
		CHECK(prosper_pool_commit(p, bytes, 32) == 0);
	}
	CHECK(prosper_pool_direct_prepare(p, d, 0) == 0); /* a copy-on-write in progress */
	CHECK(prosper_pool_write(p, s, 0, bytes, 100) == 0); /* the next epoch's log begun */
	uint8_t ref_a[9000], ref_d[6000], ref_s[5000], got[9000];
	CHECK(prosper_pool_region_read(p, a, 0, ref_a, 9000) == 0);
	CHECK(prosper_pool_region_read(p, d, 0, ref_d, 6000) == 0);
	CHECK(prosper_pool_region_read(p, s, 0, ref_s, 5000) == 0);
	uint64_t epoch = prosper_pool_epoch(p);
	prosper_pool_abandon(&p);
	size_t meta_end = size - 16 * 4096; /* data_off: the data slots follow the metadata */
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
		int ok = prosper_pool_epoch(q) == epoch && prosper_pool_region_count(q) == 3 &&
			 prosper_pool_region_read(q, a, 0, got, 9000) == 0 && !memcmp(got, ref_a, 9000) &&
			 prosper_pool_region_read(q, d, 0, got, 6000) == 0 && !memcmp(got, ref_d, 6000) &&
			 prosper_pool_region_read(q, s, 0, got, 5000) == 0 && !memcmp(got, ref_s, 5000);
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

/* ---------------------------------------------------------------- redo regions */

/* The reference model of a redo region: its committed bytes and the epoch being built. */
struct ref {
	uint8_t *committed, *building;
	uint64_t committed_len, len;
};

static void ref_resize(struct ref *m, uint64_t len)
{
	m->building = realloc(m->building, len ? len : 1);
	if (len > m->len)
		memset(m->building + m->len, 0, len - m->len);
	m->len = len;
}

static void ref_commit(struct ref *m)
{
	m->committed = realloc(m->committed, m->len ? m->len : 1);
	memcpy(m->committed, m->building, m->len);
	m->committed_len = m->len;
}

/* region_read of the whole region equals the model's committed bytes, byte for byte */
static int same_as_ref(prosper_pool *p, int id, const struct ref *m)
{
	struct prosper_region_info info;
	int idx = -1;
	for (int i = 0; i < prosper_pool_region_count(p); i++)
		if (prosper_pool_region_get(p, i, &info) == 0 && info.id == (uint32_t)id)
			idx = i;
	if (idx < 0 || info.length != m->committed_len || info.mode != PROSPER_REGION_REDO)
		return 0;
	uint8_t *got = malloc(m->committed_len ? m->committed_len : 1);
	int ok = prosper_pool_region_read(p, (uint32_t)id, 0, got, m->committed_len) == 0 &&
		 memcmp(got, m->committed, m->committed_len) == 0;
	free(got);
	return ok;
}

/* random_epoch -- disjoint, non-adjacent records at odd offsets and lengths, written in random
 * order (as a stack scan would coalesce them); the model sees the same bytes. */
static void random_epoch(prosper_pool *p, int id, struct ref *m, unsigned *seed, int *bad)
{
	uint64_t at = 0;
	uint8_t buf[70000];
	while (m->len > 0) {
		*seed = *seed * 1103515245u + 12345u;
		at += 1 + (*seed >> 8) % 30000;           /* gap of at least one byte */
		*seed = *seed * 1103515245u + 12345u;
		uint64_t n = 1 + (*seed >> 8) % ((*seed >> 4 & 7) == 0 ? 65000 : 300);
		if (at >= m->len)
			break;
		if (n > m->len - at)
			n = m->len - at;
		fill(buf, n, *seed);
		*bad += prosper_pool_write(p, (uint32_t)id, at, buf, n) != 0;
		memcpy(m->building + at, buf, n);
		at += n;
	}
}

static void test_redo_roundtrip(void)
{
	char path[256];
	path_of(path, "redo.pool");
	struct prosper_pool_config cfg;
	prosper_pool_config_default(&cfg);
	cfg.capacity = 64ull << 20;
	prosper_pool *p = NULL;
	CHECK(prosper_pool_create(path, &cfg, &p) == 0);
	struct ref m = { 0 };
	uint64_t len = (3u << 20) + 123; /* two segments, the last partial */
	int id = prosper_pool_region_add(p, "stack", PROSPER_KIND_STACK, PROSPER_REGION_REDO, 0x7ffd00000000, len, 3);
	CHECK(id >= 0);
	ref_resize(&m, len);
	ref_commit(&m);
	CHECK(same_as_ref(p, id, &m)); /* a region added in this epoch reads as zero */
	unsigned seed = 5;
	int bad = 0, reopened = 0, image_untouched = 1;
	for (int e = 1; e <= 40; e++) {
		/* the stack grows and shrinks between epochs */
		if (e % 7 == 3) {
			uint64_t nl = e % 2 ? len / 3 + 17 : len + (1u << 20) + 4099;
			CHECK(prosper_pool_region_resize(p, (uint32_t)id, nl) == 0);
			ref_resize(&m, nl);
			len = nl;
		}
		random_epoch(p, id, &m, &seed, &bad);
		if (e % 5 == 0) {
			/* a shrink after the writes, then a growth: bytes that come back read as zero */
			CHECK(prosper_pool_region_resize(p, (uint32_t)id, len / 2 + 1) == 0);
			ref_resize(&m, len / 2 + 1);
			CHECK(prosper_pool_region_resize(p, (uint32_t)id, len) == 0);
			ref_resize(&m, len);
		}
		/* step 1 changes nothing in the image: reads still give the committed epoch
		 * (with no resize staged: staged segments read as zero until committed) */
		if (e % 7 != 3 && e % 5 != 0) {
			uint8_t *now = malloc(len);
			CHECK(prosper_pool_region_read(p, (uint32_t)id, 0, now, len) == 0);
			image_untouched &= memcmp(now, m.committed, len) == 0;
			free(now);
		}
		CHECK(prosper_pool_commit(p, &e, sizeof e) == 0);
		ref_commit(&m);
		CHECK(same_as_ref(p, id, &m));
		if (e == 39) {
			struct prosper_pool_stats st;
			prosper_pool_stats_get(p, &st);
			CHECK(st.redo_records > 0 && st.redo_bytes > st.redo_records * 16);
		}
		if (e % 4 == 0) {
			/* Reopen.  Without a write since the commit, the log area still holds the
			 * committed epoch's log, and open applies it again; after a write it holds the
			 * start of the next epoch's log, which is ignored (the apply was durable).
			 * Either way uncommitted records vanish. */
			int wrote = e % 8 == 0;
			if (wrote) {
				uint8_t junk[100];
				memset(junk, 0xEE, sizeof junk);
				CHECK(prosper_pool_write(p, (uint32_t)id, 1, junk, sizeof junk) == 0);
			}
			CHECK(prosper_pool_close(&p) == 0);
			CHECK(prosper_pool_open(path, &p) == 0);
			struct prosper_pool_stats st;
			prosper_pool_stats_get(p, &st);
			CHECK(prosper_pool_epoch(p) == (uint64_t)e && st.redo_replays == (uint64_t)!wrote);
			CHECK(same_as_ref(p, id, &m));
			memcpy(m.building, m.committed, m.len);
			reopened++;
		}
	}
	CHECK(bad == 0);
	CHECK(image_untouched);
	CHECK(reopened == 10);
	/* a buffered region beside it is unaffected; then the stack goes away */
	int h = prosper_pool_region_add(p, "heap", PROSPER_KIND_HEAP, PROSPER_REGION_BUFFERED, 0x1000, 5000, 3);
	CHECK(h >= 0 && prosper_pool_write(p, (uint32_t)h, 10, "abc", 3) == 0);
	CHECK(prosper_pool_commit(p, NULL, 0) == 0);
	CHECK(prosper_pool_region_remove(p, (uint32_t)id) == 0);
	CHECK(prosper_pool_write(p, (uint32_t)id, 0, "x", 1) == -ENOENT);
	CHECK(prosper_pool_commit(p, NULL, 0) == 0);
	CHECK(prosper_pool_close(&p) == 0);
	CHECK(prosper_pool_open(path, &p) == 0);
	CHECK(prosper_pool_region_count(p) == 1 && prosper_pool_region_find(p, "stack") == -ENOENT);
	char got[3];
	CHECK(prosper_pool_region_read(p, (uint32_t)h, 10, got, 3) == 0 && !memcmp(got, "abc", 3));
	/* the slots of the stack and its log are free again: a new stack fits and reads zero */
	int id2 = prosper_pool_region_add(p, "stack", PROSPER_KIND_STACK, PROSPER_REGION_REDO, 0x7ffd00000000, 8192, 3);
	CHECK(id2 >= 0);
	CHECK(prosper_pool_commit(p, NULL, 0) == 0);
	struct ref z = { 0 };
	ref_resize(&z, 8192);
	ref_commit(&z);
	CHECK(same_as_ref(p, id2, &z));
	CHECK(prosper_pool_close(&p) == 0);
	free(m.committed); free(m.building); free(z.committed); free(z.building);
}

/* A log that cannot hold a write refuses it whole and leaves the epoch being built intact;
 * records of 8-byte granules with gaps (what Prosper's tracker produces) always fit. */
static void test_redo_enospc(void)
{
	struct prosper_pool_config cfg;
	prosper_pool_config_default(&cfg);
	cfg.seg_size = 4096; cfg.block_size = 256; cfg.capacity = 40 * 4096; cfg.max_regions = 4;
	size_t size = (size_t)prosper_pool_size_for(&cfg);
	uint8_t *img = calloc(1, size);
	struct prosper_persist pp = { .granularity = PROSPER_GRAN_CACHE_LINE, .simulated = 1 };
	prosper_pool *p;
	CHECK(prosper_pool_create_mem(img, size, &cfg, &pp, &p) == 0);
	uint64_t len = 3 * 4096;
	int id = prosper_pool_region_add(p, "stack", PROSPER_KIND_STACK, PROSPER_REGION_REDO, 0, len, 3);
	CHECK(id >= 0);
	struct ref m = { 0 };
	ref_resize(&m, len);
	ref_commit(&m);
	/* granules of 8 bytes at a 16-byte stride over the whole stack: the worst case that fits */
	uint8_t g[8];
	int bad = 0;
	for (uint64_t off = 0; off + 8 <= len; off += 16) {
		fill(g, 8, (unsigned)off);
		bad += prosper_pool_write(p, (uint32_t)id, off, g, 8) != 0;
		memcpy(m.building + off, g, 8);
	}
	CHECK(bad == 0);
	CHECK(prosper_pool_commit(p, NULL, 0) == 0);
	ref_commit(&m);
	CHECK(same_as_ref(p, id, &m));
	/* single bytes at a 2-byte stride take 24 log bytes per 2 image bytes: the log fills up */
	int accepted = 0, rc = 0;
	for (uint64_t off = 1; off < len && rc == 0; off += 2) {
		uint8_t b = (uint8_t)(off * 7 + 1);
		rc = prosper_pool_write(p, (uint32_t)id, off, &b, 1);
		if (rc == 0) {
			m.building[off] = b;
			accepted++;
		}
	}
	CHECK(rc == -ENOSPC && strstr(prosper_pool_errormsg(), "redo log of region stack is full"));
	CHECK(accepted > 100 && accepted < (int)(len / 2));
	/* a bigger write is refused as a whole too, and a growth that needs a record as well */
	CHECK(prosper_pool_write(p, (uint32_t)id, 0, m.building, 4000) == -ENOSPC);
	/* the epoch still commits with what was accepted */
	CHECK(prosper_pool_commit(p, NULL, 0) == 0);
	ref_commit(&m);
	CHECK(same_as_ref(p, id, &m));
	/* A fresh region's log grows as an epoch's writes need: 1, 2, then 5 slots for overlapping
	 * writes.  A write that does not fit even the worst case (7 slots here) is refused as a whole,
	 * also when the log had to grow first -- never taken in part. */
	int id2 = prosper_pool_region_add(p, "stack2", PROSPER_KIND_STACK, PROSPER_REGION_REDO, 0x10000, len, 3);
	CHECK(id2 >= 0);
	CHECK(prosper_pool_commit(p, NULL, 0) == 0);
	struct ref m2 = { 0 };
	ref_resize(&m2, len);
	ref_commit(&m2);
	uint8_t *w = malloc(len);
	const uint64_t lens[] = { 4000, 4000, 12000, len };
	for (int k = 0; k < 4; k++) {
		fill(w, lens[k], 40u + (unsigned)k);
		rc = prosper_pool_write(p, (uint32_t)id2, 0, w, lens[k]);
		CHECK(k < 3 ? rc == 0 : rc == -ENOSPC);
		if (rc == 0)
			memcpy(m2.building, w, lens[k]);
	}
	CHECK(strstr(prosper_pool_errormsg(), "redo log of region stack2 is full"));
	CHECK(prosper_pool_commit(p, NULL, 0) == 0);
	ref_commit(&m2);
	ref_commit(&m);
	CHECK(same_as_ref(p, id2, &m2));
	free(w);
	free(m2.committed); free(m2.building);
	/* the next epoch has the whole log again */
	CHECK(prosper_pool_write(p, (uint32_t)id, 0, m.building, len) == 0);
	prosper_pool_abandon(&p);
	CHECK(prosper_pool_open_mem(img, size, &pp, &p) == 0);
	CHECK(same_as_ref(p, id, &m));
	prosper_pool_abandon(&p);
	free(img);
	free(m.committed); free(m.building);
}

/* Crash between the two steps, observed through the persist hooks: a copy of the media taken
 * just before commit word A recovers the old epoch (the sealed log is ignored); one taken just
 * after it (before the apply) recovers the new one by applying the log again. */
struct snap { uint8_t *base, *before, *after; size_t size; };

static void snap_store(void *ctx, int site, const void *addr)
{
	struct snap *s = ctx;
	if (site == PSITE_COMMIT_A && !s->after) {
		s->after = malloc(s->size);
		memcpy(s->after, s->base, s->size);
	}
}

static void snap_drain(void *ctx, int site)
{
	struct snap *s = ctx;
	if (site == PSITE_META && !s->before) {
		s->before = malloc(s->size);
		memcpy(s->before, s->base, s->size);
	}
}

static void test_redo_between_steps(void)
{
	struct prosper_pool_config cfg;
	prosper_pool_config_default(&cfg);
	cfg.seg_size = 4096; cfg.block_size = 256; cfg.capacity = 16 * 4096; cfg.max_regions = 4;
	size_t size = (size_t)prosper_pool_size_for(&cfg);
	uint8_t *img = calloc(1, size);
	struct prosper_persist pp = { .granularity = PROSPER_GRAN_CACHE_LINE, .simulated = 1 };
	prosper_pool *p;
	CHECK(prosper_pool_create_mem(img, size, &cfg, &pp, &p) == 0);
	int id = prosper_pool_region_add(p, "stack", PROSPER_KIND_STACK, PROSPER_REGION_REDO, 0, 5000, 3);
	uint8_t old[5000], new[5000], got[5000];
	fill(old, sizeof old, 1);
	CHECK(prosper_pool_write(p, (uint32_t)id, 0, old, sizeof old) == 0);
	CHECK(prosper_pool_commit(p, NULL, 0) == 0);
	prosper_pool_abandon(&p);
	struct snap s = { .base = img, .size = size };
	struct prosper_persist_hooks hooks = { .on_drain = snap_drain, .on_store64 = snap_store, .ctx = &s };
	struct prosper_persist hooked = pp;
	hooked.hooks = &hooks;
	CHECK(prosper_pool_open_mem(img, size, &hooked, &p) == 0);
	memcpy(new, old, sizeof new);
	fill(new + 4001, 7, 2);
	fill(new + 17, 300, 3);
	CHECK(prosper_pool_write(p, (uint32_t)id, 4001, new + 4001, 7) == 0);
	CHECK(prosper_pool_write(p, (uint32_t)id, 17, new + 17, 300) == 0);
	CHECK(prosper_pool_commit(p, NULL, 0) == 0);
	prosper_pool_abandon(&p);
	CHECK(s.before && s.after);
	struct prosper_pool_stats st;
	CHECK(prosper_pool_open_mem(s.before, size, &pp, &p) == 0);
	prosper_pool_stats_get(p, &st);
	CHECK(prosper_pool_epoch(p) == 1 && st.redo_replays == 0);
	CHECK(prosper_pool_region_read(p, (uint32_t)id, 0, got, sizeof got) == 0 && !memcmp(got, old, sizeof old));
	prosper_pool_abandon(&p);
	CHECK(prosper_pool_open_mem(s.after, size, &pp, &p) == 0);
	prosper_pool_stats_get(p, &st);
	CHECK(prosper_pool_epoch(p) == 2 && st.redo_replays == 1);
	CHECK(prosper_pool_region_read(p, (uint32_t)id, 0, got, sizeof got) == 0 && !memcmp(got, new, sizeof new));
	prosper_pool_abandon(&p);
	/* opening twice applies the same log twice: idempotent */
	CHECK(prosper_pool_open_mem(s.after, size, &pp, &p) == 0);
	CHECK(prosper_pool_region_read(p, (uint32_t)id, 0, got, sizeof got) == 0 && !memcmp(got, new, sizeof new));
	prosper_pool_abandon(&p);
	free(s.before); free(s.after); free(img);
}

/* A pool of layout version 1 (region records without a redo log) is refused with a reason. */
static void test_old_layout_refused(void)
{
	char path[256];
	path_of(path, "v1.pool");
	struct prosper_pool_config cfg;
	prosper_pool_config_default(&cfg);
	cfg.capacity = 8ull << 20;
	prosper_pool *p = NULL;
	CHECK(prosper_pool_create(path, &cfg, &p) == 0);
	CHECK(prosper_pool_close(&p) == 0);
	int fd = open(path, O_RDWR);
	uint8_t sb[256];
	CHECK(pread(fd, sb, sizeof sb, 0) == (ssize_t)sizeof sb);
	uint32_t v1 = 1, crc;
	memcpy(sb + 12, &v1, 4);                 /* layout_version */
	crc = prosper_crc32c(0, sb, 252);        /* a well-formed old superblock */
	memcpy(sb + 252, &crc, 4);
	CHECK(pwrite(fd, sb, sizeof sb, 0) == (ssize_t)sizeof sb);
	close(fd);
	CHECK(prosper_pool_open(path, &p) == -EPROTO && strstr(prosper_pool_errormsg(), "layout version 1"));
	FILE *devnull = fopen("/dev/null", "w");
	CHECK(prosper_pool_inspect_file(path, 0, devnull) == -EPROTO);
	fclose(devnull);
}

/* inspect names the mode and what the log holds */
static void test_redo_inspect(void)
{
	char path[256], out[256];
	path_of(path, "i.pool");
	path_of(out, "i.txt");
	struct prosper_pool_config cfg;
	prosper_pool_config_default(&cfg);
	cfg.capacity = 16ull << 20;
	prosper_pool *p = NULL;
	CHECK(prosper_pool_create(path, &cfg, &p) == 0);
	int id = prosper_pool_region_add(p, "stack", PROSPER_KIND_STACK, PROSPER_REGION_REDO, 0x7ff0000, 10000, 3);
	CHECK(prosper_pool_write(p, (uint32_t)id, 8, "12345678", 8) == 0);
	CHECK(prosper_pool_write(p, (uint32_t)id, 800, "abc", 3) == 0);
	CHECK(prosper_pool_commit(p, NULL, 0) == 0);
	CHECK(prosper_pool_close(&p) == 0);
	char text[4096];
	for (int json = 0; json < 2; json++) {
		FILE *f = fopen(out, "w+");
		CHECK(prosper_pool_inspect_file(path, json, f) == 0);
		rewind(f);
		size_t n = fread(text, 1, sizeof text - 1, f);
		text[n] = 0;
		fclose(f);
		if (json)
			CHECK(strstr(text, "\"mode\": \"redo\"") && strstr(text, "\"state\": \"committed\", \"epoch\": 1, \"records\": 3"));
		else
			CHECK(strstr(text, " redo ") && strstr(text, "the committed epoch's (applied again at open), epoch 1, 3 records"));
	}
}

static uint64_t disk_bytes(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (uint64_t)st.st_blocks * 512 : 0;
}

/* A new pool file `name` in the test directory (its path into path[256]) of 64 KiB segments. */
static prosper_pool *file_pool(char *path, const char *name, uint64_t capacity)
{
	path_of(path, name);
	struct prosper_pool_config cfg;
	prosper_pool_config_default(&cfg);
	cfg.capacity = capacity;
	cfg.seg_size = 64 << 10;
	prosper_pool *p = NULL;
	CHECK(prosper_pool_create(path, &cfg, &p) == 0);
	return p;
}

/* A pool file on a disk writes with pwrite and gives a freed slot's space back once it stayed
 * free 100 commits; a slot used again after that reads as zeros where nothing was written, and
 * the bytes of every epoch read back. */
static void test_file_space_given_back(void)
{
	char path[256];
	prosper_pool *p = file_pool(path, "punch.pool", 64ull << 20);
	size_t n = 8 << 20;
	uint8_t *mem = malloc(n), *back = malloc(n);
	fill(mem, n, 7);
	int big = prosper_pool_region_add(p, "big", PROSPER_KIND_HEAP, PROSPER_REGION_BUFFERED, 0x100000, n, 3);
	CHECK(big >= 0 && prosper_pool_write(p, (uint32_t)big, 0, mem, n) == 0);
	CHECK(prosper_pool_commit(p, NULL, 0) == 0);
	uint64_t full = disk_bytes(path);
	CHECK(full >= n);
	CHECK(prosper_pool_region_remove(p, (uint32_t)big) == 0);
	CHECK(prosper_pool_commit(p, NULL, 0) == 0);   /* freed: the previous epoch still reads it */
	for (int i = 0; i < 99; i++)                   /* and space freed for a moment is kept for reuse */
		CHECK(prosper_pool_commit(p, NULL, 0) == 0);
	CHECK(disk_bytes(path) >= n);
	CHECK(prosper_pool_commit(p, NULL, 0) == 0);   /* 100 commits later: given back */
	struct prosper_pool_stats st;
	prosper_pool_stats_get(p, &st);
	CHECK(st.punched_bytes >= n && disk_bytes(path) + n / 2 <= full);
	/* the slots again: zeros where nothing was written, the written bytes where they were */
	int again = prosper_pool_region_add(p, "again", PROSPER_KIND_HEAP, PROSPER_REGION_BUFFERED, 0x100000, n, 3);
	CHECK(again >= 0 && prosper_pool_write(p, (uint32_t)again, 4096, mem, 300) == 0);
	CHECK(prosper_pool_commit(p, NULL, 0) == 0);
	CHECK(prosper_pool_close(&p) == 0 && prosper_pool_open(path, &p) == 0);
	CHECK(prosper_pool_region_read(p, (uint32_t)again, 0, back, n) == 0);
	memset(mem + 300, 0, n - 300);
	CHECK(memcmp(back + 4096, mem, 300) == 0);
	int zeros = 1;
	for (size_t i = 0; i < n; i++)
		zeros &= (i >= 4096 && i < 4096 + 300) || back[i] == 0;
	CHECK(zeros);
	CHECK(prosper_pool_close(&p) == 0);
	free(mem);
	free(back);
}

/* A large buffered region of which a few bytes are written reserves file space for the segments
 * written, not for the whole region (two copies of each segment), also after a reopen; every
 * byte reads back, the rest as zeros. */
static void test_sparse_region_reserves_what_it_writes(void)
{
	char path[256];
	prosper_pool *p = file_pool(path, "sparse.pool", 4ull << 30);
	uint64_t empty = disk_bytes(path), n = 1ull << 30;
	const uint64_t at[] = { 0, 700ull << 20, n - 300 };
	uint8_t mem[300], back[300];
	fill(mem, sizeof mem, 11);
	int big = prosper_pool_region_add(p, "big", PROSPER_KIND_ANON, PROSPER_REGION_BUFFERED, 0x100000, n, 3);
	CHECK(big >= 0);
	for (int i = 0; i < 2; i++)
		CHECK(prosper_pool_write(p, (uint32_t)big, at[i], mem, sizeof mem) == 0);
	CHECK(prosper_pool_commit(p, NULL, 0) == 0);
	CHECK(disk_bytes(path) < empty + (4u << 20)); /* not 2 GiB */
	CHECK(prosper_pool_close(&p) == 0 && prosper_pool_open(path, &p) == 0);
	CHECK(prosper_pool_write(p, (uint32_t)big, at[2], mem, sizeof mem) == 0);
	CHECK(prosper_pool_write(p, (uint32_t)big, at[0], mem + 1, 10) == 0);
	CHECK(prosper_pool_commit(p, NULL, 0) == 0);
	CHECK(disk_bytes(path) < empty + (4u << 20));
	uint8_t first[300];
	memcpy(first, mem, sizeof first);
	memcpy(first, mem + 1, 10);
	for (int i = 0; i < 3; i++) {
		CHECK(prosper_pool_region_read(p, (uint32_t)big, at[i], back, sizeof back) == 0);
		CHECK(memcmp(back, i == 0 ? first : mem, sizeof back) == 0);
	}
	CHECK(prosper_pool_region_read(p, (uint32_t)big, 300ull << 20, back, sizeof back) == 0);
	int zeros = 1;
	for (size_t i = 0; i < sizeof back; i++)
		zeros &= back[i] == 0;
	CHECK(zeros);
	CHECK(prosper_pool_close(&p) == 0);
	unlink(path);
}

/* Reads [0, n) of region id and checks it holds `data` at each of the offsets `at` (len bytes)
 * and zeros everywhere else. */
static int reads_as(prosper_pool *p, int id, uint64_t n, const uint64_t *at, int nat, const uint8_t *data, size_t len)
{
	uint8_t *back = malloc(n);
	int ok = back && prosper_pool_region_read(p, (uint32_t)id, 0, back, n) == 0;
	for (int i = 0; ok && i < nat; i++) {
		ok = memcmp(back + at[i], data, len) == 0;
		memset(back + at[i], 0, len);
	}
	for (uint64_t i = 0; ok && i < n; i++)
		ok = back[i] == 0;
	free(back);
	return ok;
}

/* A thread's stack is a redo region of 8 MiB with a log of 16 MiB, of which a few KiB are
 * written: the file holds what is written, not 24 MiB per thread -- also when a region is
 * removed and another takes its slots, and after a reopen; every byte reads back, the rest as
 * zeros. */
static void test_redo_region_reserves_what_it_writes(void)
{
	char path[256];
	prosper_pool *p = file_pool(path, "stacks.pool", 1ull << 30);
	uint64_t empty = disk_bytes(path), n = 8ull << 20;
	uint8_t mem[300];
	fill(mem, sizeof mem, 5);
	const uint64_t top[] = { n - 4096 }, low[] = { 4096, n - 4096 };
	int a = prosper_pool_region_add(p, "thread.a", PROSPER_KIND_STACK, PROSPER_REGION_REDO, 0x7f0000000000, n, 3);
	CHECK(a >= 0 && prosper_pool_write(p, (uint32_t)a, top[0], mem, sizeof mem) == 0);
	CHECK(prosper_pool_commit(p, NULL, 0) == 0);
	CHECK(disk_bytes(path) < empty + (1u << 20)); /* not 24 MiB */
	CHECK(reads_as(p, a, n, top, 1, mem, sizeof mem));
	/* a thread ends, another starts in its slots */
	CHECK(prosper_pool_region_remove(p, (uint32_t)a) == 0);
	CHECK(prosper_pool_commit(p, NULL, 0) == 0);
	CHECK(prosper_pool_commit(p, NULL, 0) == 0);
	int b = prosper_pool_region_add(p, "thread.b", PROSPER_KIND_STACK, PROSPER_REGION_REDO, 0x7f0000000000, n, 3);
	CHECK(b >= 0 && prosper_pool_write(p, (uint32_t)b, low[0], mem, sizeof mem) == 0);
	CHECK(prosper_pool_commit(p, NULL, 0) == 0);
	CHECK(disk_bytes(path) < empty + (1u << 20));
	CHECK(reads_as(p, b, n, low, 1, mem, sizeof mem)); /* the old thread's bytes read as zeros */
	/* the last epoch added b: reopening applies its log again, ZERO record included */
	CHECK(prosper_pool_close(&p) == 0 && prosper_pool_open(path, &p) == 0);
	CHECK(reads_as(p, b, n, low, 1, mem, sizeof mem));
	CHECK(prosper_pool_write(p, (uint32_t)b, low[1], mem, sizeof mem) == 0);
	CHECK(prosper_pool_commit(p, NULL, 0) == 0);
	CHECK(prosper_pool_close(&p) == 0 && prosper_pool_open(path, &p) == 0);
	CHECK(reads_as(p, b, n, low, 2, mem, sizeof mem));
	CHECK(prosper_pool_close(&p) == 0);
	unlink(path);
}

/* A creator killed while it built a pool leaves the file under its temporary name; the next
 * creation of that name removes it when no process holds its lock, and leaves a living creator's
 * (whatever process ids say: a creator in another pid namespace may have ours). */
static void test_a_killed_creation_is_cleaned_up(void)
{
	char path[256], dead[300], live[300];
	path_of(path, "made.pool");
	snprintf(dead, sizeof dead, "%s/.made.pool.creating-%d", dir, (int)getpid());
	snprintf(live, sizeof live, "%s/.made.pool.creating-00000000deadbeef", dir);
	int held = -1;
	for (int i = 0; i < 2; i++) {
		int fd = open(i ? live : dead, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
		CHECK(fd >= 0 && ftruncate(fd, 1 << 20) == 0);
		if (i)
			held = fd; /* a living creator: it holds the lock, in a process of its own */
		else
			close(fd);
	}
	int ready[2];
	CHECK(pipe(ready) == 0);
	pid_t holder = fork();
	if (holder == 0) {
		char c = flock(held, LOCK_EX) == 0;
		if (write(ready[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	char ok = 0;
	CHECK(read(ready[0], &ok, 1) == 1 && ok);
	close(held);
	struct prosper_pool_config cfg;
	prosper_pool_config_default(&cfg);
	prosper_pool *p = NULL;
	CHECK(prosper_pool_create(path, &cfg, &p) == 0);
	CHECK(access(dead, F_OK) != 0 && errno == ENOENT);
	CHECK(access(live, F_OK) == 0);
	CHECK(access(path, F_OK) == 0);
	/* the new pool is not left locked by its creation: a user of it can lock it */
	int other = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(other >= 0 && flock(other, LOCK_EX | LOCK_NB) == 0);
	close(other);
	CHECK(prosper_pool_close(&p) == 0);
	kill(holder, SIGKILL);
	waitpid(holder, NULL, 0);
	close(ready[0]), close(ready[1]);
	unlink(live);
	unlink(path);
}

int main(void)
{
	if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
	test_buffered_roundtrip();
	test_direct_and_steal();
	test_redo_roundtrip();
	test_redo_enospc();
	test_redo_between_steps();
	test_old_layout_refused();
	test_redo_inspect();
	test_refusals();
	test_corruption_sweep();
	test_file_space_given_back();
	test_sparse_region_reserves_what_it_writes();
	test_redo_region_reserves_what_it_writes();
	test_a_killed_creation_is_cleaned_up();
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0) fails++;
	printf("%d passed, %d failed\n", passes, fails);
	return fails != 0;
}

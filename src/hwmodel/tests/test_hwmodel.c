/* test_hwmodel.c -- the tracker model: counters known by construction, and the property that
 * after a flush the bitmap equals what an unbounded table produces, for random store streams
 * and many configurations. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "prosper/hwmodel.h"

static int fails, passes;
#define CHECK(c) do { if (c) passes++; else { fails++; printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); } } while (0)

/* The bitmap lives in this array; the model addresses it at BITMAP_BASE. */
#define BITMAP_BASE 0x100000ull
static uint32_t bitmap[1 << 16];

static uint32_t load32(void *ctx, uint64_t a) { (void)ctx; return bitmap[(a - BITMAP_BASE) / 4]; }
static void store32(void *ctx, uint64_t a, uint32_t v) { (void)ctx; bitmap[(a - BITMAP_BASE) / 4] = v; }
static const struct prosper_hw_bitmap_ops ops = { load32, store32, 0 };

static void setup(struct prosper_hw *hw, uint32_t table, uint32_t hwm, uint32_t lwm, uint32_t gran,
		  uint64_t start, uint64_t len)
{
	struct prosper_hw_config c;
	prosper_hw_config_default(&c);
	c.table_entries = table;
	c.hwm = hwm;
	c.lwm = lwm;
	c.log_gran = gran;
	memset(bitmap, 0, sizeof bitmap);
	if (prosper_hw_init(hw, &c, &ops) != 0)
		abort();
	prosper_hw_set_range(hw, start, start + len - 1);
	prosper_hw_set_dirtymap(hw, BITMAP_BASE);
	prosper_hw_set_gran(hw, gran);
}

static int bit(uint64_t i) { return (bitmap[i / 32] >> (i % 32)) & 1; }

static void test_by_construction(void)
{
	struct prosper_hw hw;
	const uint64_t S = 0x7ff000000000ull;
	setup(&hw, 16, 24, 8, 3, S, 1 << 20);
	prosper_hw_store(&hw, S, 8);
	CHECK(hw.c.stores_tracked == 1 && hw.c.granules_marked == 1 && hw.c.misses == 1);
	CHECK(hw.c.bitmap_loads == 0 && hw.c.bitmap_stores == 0); /* accumulate-and-apply: no load on allocation */
	prosper_hw_flush(&hw);
	CHECK(hw.track_min == S && bitmap[0] == 1 && hw.c.bitmap_loads == 1 && hw.c.bitmap_stores == 1);
	CHECK(prosper_hw_sync(&hw));
	/* a store crossing granules marks all of them; one crossing a cache line too */
	prosper_hw_store(&hw, S + 4, 16);  /* bytes 4..19: granules 0, 1, 2 */
	prosper_hw_store(&hw, S + 60, 8);  /* bytes 60..67: granules 7 and 8, across a 64 B line */
	prosper_hw_flush(&hw);
	CHECK(bitmap[0] == (1u | 2u | 4u | 0x80u | 0x100u));
	CHECK(hw.track_min == S + 4);
	/* marking an already-set bit again: load, no store */
	uint64_t stores = hw.c.bitmap_stores;
	prosper_hw_store(&hw, S, 1);
	prosper_hw_flush(&hw);
	CHECK(hw.c.bitmap_stores == stores && hw.c.redundant_stores == 1);
	/* nothing tracked since the last flush: track_min says so */
	prosper_hw_flush(&hw);
	CHECK(hw.track_min == UINT64_MAX);
	/* outside the range, or tracking off: ignored */
	uint64_t tracked = hw.c.stores_tracked;
	prosper_hw_store(&hw, S - 8, 8);
	prosper_hw_store(&hw, S + (1 << 20), 8);
	prosper_hw_set_gran(&hw, 0);
	prosper_hw_store(&hw, S + 64, 8);
	CHECK(hw.c.stores_tracked == tracked);
	/* a store straddling the range start is clipped, not dropped */
	prosper_hw_set_gran(&hw, 3);
	prosper_hw_store(&hw, S - 4, 16);
	CHECK(hw.c.stores_tracked == tracked + 1);

	/* HWM: the 24th distinct bit of a word writes the entry out */
	setup(&hw, 16, 24, 8, 3, S, 1 << 20);
	for (int i = 0; i < 24; i++)
		prosper_hw_store(&hw, S + 8 * i, 8);
	CHECK(hw.c.hwm_writeouts == 1 && hw.c.bitmap_stores == 1 && bitmap[0] == 0xFFFFFFu);
	prosper_hw_flush(&hw);
	CHECK(hw.c.flush_writeouts == 0);

	/* LWM: 17 words with one bit each; the 17th miss evicts all 16 (count 1 <= 8) */
	setup(&hw, 16, 24, 8, 3, S, 1 << 20);
	for (int i = 0; i < 17; i++)
		prosper_hw_store(&hw, S + 256 * i, 8);  /* 256 B = 32 granules: one word apart */
	CHECK(hw.c.lwm_evictions == 16 && hw.c.random_evictions == 0 && hw.c.bitmap_loads == 16);
	/* no entry at or below LWM: one random victim */
	setup(&hw, 16, 24, 0, 3, S, 1 << 20);
	for (int i = 0; i < 17; i++)
		prosper_hw_store(&hw, S + 256 * i, 8);
	CHECK(hw.c.lwm_evictions == 0 && hw.c.random_evictions == 1 && hw.c.bitmap_loads == 1);
	prosper_hw_flush(&hw);
	int all = 1;
	for (int i = 0; i < 17; i++)
		all &= bit(32 * i);
	CHECK(all);

	/* 128 B granules: one bit per 128 B, bitmap 64x smaller than the 8 B one */
	setup(&hw, 16, 24, 8, 7, S, 1 << 20);
	prosper_hw_store(&hw, S + 130, 200); /* bytes 130..329: granules 1 and 2 */
	prosper_hw_flush(&hw);
	CHECK(bitmap[0] == 6u);
	CHECK(prosper_hw_bitmap_bytes(1 << 20, 3) == 16384 && prosper_hw_bitmap_bytes(1 << 20, 7) == 1024);

	struct prosper_hw_config bad;
	prosper_hw_config_default(&bad);
	bad.table_entries = 65;
	CHECK(prosper_hw_init(&hw, &bad, &ops) == -1);
	prosper_hw_config_default(&bad);
	bad.log_gran = 8;
	CHECK(prosper_hw_init(&hw, &bad, &ops) == -1);
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Property: for random streams, the flushed bitmap equals the unbounded reference. */
static void test_property(void)
{
	static uint8_t ref[1 << 21]; /* one byte per granule */
	uint64_t s = 12345;
	int streams = 0, bad = 0;
	uint32_t tables[] = { 1, 2, 4, 16, 64 };
	for (uint32_t ti = 0; ti < 5; ti++)
		for (uint32_t gran = 3; gran <= 7; gran++)
			for (int rep = 0; rep < 40; rep++) {
				uint32_t hwm = 1 + rnd(&s) % 32, lwm = rnd(&s) % 33;
				uint64_t start = 0x7ff000000000ull + 8 * (rnd(&s) % 64), len = 4096 + rnd(&s) % 65536;
				struct prosper_hw hw;
				setup(&hw, tables[ti], hwm, lwm, gran, start, len);
				uint64_t ngran = (len + (1ull << gran) - 1) >> gran;
				memset(ref, 0, ngran);
				int nstores = 200 + rnd(&s) % 2000;
				int flush_mid = rnd(&s) % 2;
				for (int k = 0; k < nstores; k++) {
					/* biased to the range, some outside, unaligned, sizes 1..64 */
					uint64_t a = start - 64 + rnd(&s) % (len + 128);
					uint64_t size = 1 + rnd(&s) % 64;
					prosper_hw_store(&hw, a, size);
					for (uint64_t x = a; x < a + size; x++)
						if (x >= start && x < start + len)
							ref[(x - start) >> gran] = 1;
					if (flush_mid && k == nstores / 2)
						prosper_hw_flush(&hw);
				}
				prosper_hw_flush(&hw);
				int ok = prosper_hw_sync(&hw);
				for (uint64_t g = 0; g < ngran; g++)
					ok &= bit(g) == ref[g];
				for (uint64_t g = ngran; g < (ngran + 31) / 32 * 32; g++)
					ok &= bit(g) == 0;
				streams++;
				if (!ok && bad++ < 3)
					printf("mismatch: table %u hwm %u lwm %u gran %u\n", tables[ti], hwm, lwm, 1u << gran);
			}
	printf("property: %d random streams, %d mismatches\n", streams, bad);
	CHECK(bad == 0 && streams == 1000);
}

int main(void)
{
	test_by_construction();
	test_property();
	printf("%d passed, %d failed\n", passes, fails);
	return fails != 0;
}

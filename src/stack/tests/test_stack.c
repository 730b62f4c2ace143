/* test_stack.c -- SP-aware inspection against a brute-force reference; the redo-record log:
 * round trip, every single-bit corruption rejected, bounds, idempotent apply. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "prosper/stackckpt.h"

static int fails, passes;
#define CHECK(c) do { if (c) passes++; else { fails++; printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); } } while (0)

static uint64_t rnd(uint64_t *s) { *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17; return *s; }

struct runs { uint64_t off[4096], len[4096]; int n; };
static void collect(void *ctx, uint64_t off, uint64_t len)
{
	struct runs *r = ctx;
	r->off[r->n] = off;
	r->len[r->n] = len;
	r->n++;
}

static void test_inspect_reference(void)
{
	uint64_t s = 777;
	static uint64_t bm[256], orig[256];
	static uint8_t want[256 * 64 * 128];
	int cases = 0, bad = 0;
	for (int t = 0; t < 3000; t++) {
		uint32_t gran = 3 + rnd(&s) % 5;
		uint64_t nwords = 1 + rnd(&s) % 64;
		uint64_t base = 0x7ff000000000ull;
		uint64_t len = nwords * 64 * (1ull << gran) - rnd(&s) % (1ull << gran); /* last granule partial sometimes */
		for (uint64_t w = 0; w < nwords; w++) {
			uint64_t k = rnd(&s) % 4;
			bm[w] = k == 0 ? 0 : k == 1 ? ~0ull : rnd(&s) & rnd(&s);
		}
		memcpy(orig, bm, nwords * 8);
		uint64_t lo = base + rnd(&s) % (len + 1);
		if (rnd(&s) % 8 == 0)
			lo = base - 100; /* SP below the region: whole region active */
		uint64_t tmin = rnd(&s) % 3 == 0 ? UINT64_MAX : base + rnd(&s) % (len + 1);
		/* reference: bytes of set granules within [max(lo, base), base+len) */
		uint64_t lo_off = lo < base ? 0 : lo - base;
		memset(want, 0, len);
		for (uint64_t b = 0; b < len; b++)
			if ((orig[(b >> gran) / 64] >> ((b >> gran) % 64)) & 1 && b >= lo_off)
				want[b] = 1;
		struct runs got = { .n = 0 };
		struct prosper_stack_inspect_stats st;
		memset(&st, 0, sizeof st);
		prosper_stack_inspect(bm, nwords, base, len, gran, lo, tmin, collect, &got, &st);
		/* the emitted runs are exactly the maximal runs of `want` */
		int ok = 1;
		uint64_t b = 0, k = 0, bytes = 0;
		while (b < len) {
			if (!want[b]) { b++; continue; }
			uint64_t e = b;
			while (e < len && want[e]) e++;
			ok &= k < (uint64_t)got.n && got.off[k] == b && got.len[k] == e - b;
			bytes += e - b;
			k++;
			b = e;
		}
		ok &= k == (uint64_t)got.n && st.bytes == bytes && st.runs == k;
		/* words from the active word up are clear; dead words from track_min up are clear;
		 * words below both are untouched */
		uint64_t fw = (lo_off >> gran) / 64;
		uint64_t dw = tmin != UINT64_MAX && tmin >= base && tmin - base < lo_off ? ((tmin - base) >> gran) / 64 : fw;
		for (uint64_t w = 0; w < nwords; w++)
			ok &= w >= dw || w >= fw ? bm[w] == 0 : bm[w] == orig[w];
		cases++;
		if (!ok && bad++ < 3)
			printf("inspect mismatch: gran %u nwords %llu lo_off %llu\n", 1u << gran,
			       (unsigned long long)nwords, (unsigned long long)lo_off);
	}
	printf("inspect: %d random cases, %d mismatches\n", cases, bad);
	CHECK(bad == 0);

	/* a run across a word boundary is ONE run (the artifact split runs at byte boundaries) */
	uint64_t two[2] = { 1ull << 63, 1ull };
	struct runs r = { .n = 0 };
	prosper_stack_inspect(two, 2, 0, 128 * 8, 3, 0, UINT64_MAX, collect, &r, NULL);
	CHECK(r.n == 1 && r.off[0] == 63 * 8 && r.len[0] == 16);
	/* the granule holding SP - 128 is copied from that byte on, not from its start */
	uint64_t one[1] = { 1ull << 2 };
	r.n = 0;
	prosper_stack_inspect(one, 1, 0, 64 * 8, 3, 20, UINT64_MAX, collect, &r, NULL);
	CHECK(r.n == 1 && r.off[0] == 20 && r.len[0] == 4);
}

static void test_log(void)
{
	uint8_t buf[4096], image[1000], image2[1000];
	prosper_stacklog_init(buf, sizeof buf, 42);
	uint8_t p1[13], p2[200];
	memset(p1, 0xAB, sizeof p1);
	for (int i = 0; i < 200; i++) p2[i] = (uint8_t)i;
	CHECK(prosper_stacklog_append(buf, sizeof buf, 5, p1, sizeof p1) == 0);
	CHECK(prosper_stacklog_append(buf, sizeof buf, 700, p2, sizeof p2) == 0);
	CHECK(prosper_stacklog_append(buf, sizeof buf, 0, p2, 4000) == PROSPER_STACKLOG_ENOSPC);
	prosper_stacklog_seal(buf);
	uint64_t e = 0;
	CHECK(prosper_stacklog_check(buf, sizeof buf, &e) == 0 && e == 42);
	CHECK(prosper_stacklog_records(buf) == 2 && prosper_stacklog_bytes(buf) == 64 + 16 + 16 + 16 + 200);
	memset(image, 0, sizeof image);
	CHECK(prosper_stacklog_apply(buf, image, sizeof image) == 0);
	memcpy(image2, image, sizeof image);
	CHECK(prosper_stacklog_apply(buf, image, sizeof image) == 0 && !memcmp(image, image2, sizeof image)); /* idempotent */
	CHECK(image[4] == 0 && image[5] == 0xAB && image[17] == 0xAB && image[18] == 0 && image[700] == 0 && image[899] == 199);
	/* a record beyond the image: refused, nothing written */
	memset(image, 0, sizeof image);
	CHECK(prosper_stacklog_apply(buf, image, 800) == PROSPER_STACKLOG_ERANGE);
	int untouched = 1;
	for (int i = 0; i < 1000; i++) untouched &= image[i] == 0;
	CHECK(untouched);
	/* every single-bit flip of the sealed log is rejected */
	uint64_t used = prosper_stacklog_bytes(buf);
	int rejected = 0;
	for (uint64_t bit = 0; bit < used * 8; bit++) {
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		rejected += prosper_stacklog_check(buf, sizeof buf, NULL) != 0;
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	CHECK(rejected == (int)(used * 8));
	CHECK(prosper_stacklog_check(buf, used - 8, NULL) != 0); /* does not fit its area */
	/* an unsealed log is not valid */
	prosper_stacklog_init(buf, sizeof buf, 43);
	prosper_stacklog_append(buf, sizeof buf, 0, p1, 3);
	CHECK(prosper_stacklog_check(buf, sizeof buf, NULL) != 0);
}

/* ZERO records, the record iterator and the accessors a pool needs. */
static void test_log_zero_and_iterate(void)
{
	uint8_t buf[1024], image[256];
	uint8_t p1[9];
	memset(p1, 0x5A, sizeof p1);
	prosper_stacklog_init(buf, sizeof buf, 7);
	CHECK(prosper_stacklog_append(buf, sizeof buf, 10, p1, sizeof p1) == 0);
	CHECK(prosper_stacklog_append_zero(buf, sizeof buf, 12, 100) == 0);   /* later record wins */
	CHECK(prosper_stacklog_append(buf, sizeof buf, 200, p1, 3) == 0);
	CHECK(prosper_stacklog_bytes(buf) == 64 + prosper_stacklog_record_bytes(9) + 16 + prosper_stacklog_record_bytes(3));
	prosper_stacklog_seal(buf);
	uint64_t e;
	CHECK(prosper_stacklog_check(buf, sizeof buf, &e) == 0 && e == 7 && prosper_stacklog_epoch(buf) == 7);
	uint32_t crc = prosper_stacklog_crc(buf);
	CHECK(crc != 0);
	memset(image, 0xFF, sizeof image);
	CHECK(prosper_stacklog_apply(buf, image, sizeof image) == 0);
	CHECK(image[9] == 0xFF && image[10] == 0x5A && image[11] == 0x5A && image[12] == 0 && image[111] == 0 &&
	      image[112] == 0xFF && image[200] == 0x5A && image[202] == 0x5A && image[203] == 0xFF);
	struct prosper_stacklog_rec r;
	uint64_t cur = 0;
	int n = 0;
	while (prosper_stacklog_next(buf, &cur, &r)) {
		if (n == 0) CHECK(r.offset == 10 && r.length == 9 && !r.zero && !memcmp(r.payload, p1, 9));
		if (n == 1) CHECK(r.offset == 12 && r.length == 100 && r.zero && r.payload == NULL);
		if (n == 2) CHECK(r.offset == 200 && r.length == 3 && !r.zero);
		n++;
	}
	CHECK(n == 3);
	/* a ZERO record is range-checked like any other */
	CHECK(prosper_stacklog_apply(buf, image, 150) == PROSPER_STACKLOG_ERANGE);
	/* unknown flag bits are refused even with a matching checksum */
	buf[64 + 12] |= 2;
	prosper_stacklog_seal(buf);
	CHECK(prosper_stacklog_check(buf, sizeof buf, NULL) != 0);
	/* a version-1 log is not read as version 2 */
	prosper_stacklog_init(buf, sizeof buf, 8);
	buf[8] = 1;
	prosper_stacklog_seal(buf);
	CHECK(prosper_stacklog_check(buf, sizeof buf, NULL) != 0);
	/* ENOSPC leaves the log unchanged */
	prosper_stacklog_init(buf, 100, 9);
	CHECK(prosper_stacklog_append_zero(buf, 100, 0, 1000) == 0);
	CHECK(prosper_stacklog_append(buf, 100, 0, p1, 9) == PROSPER_STACKLOG_ENOSPC);
	CHECK(prosper_stacklog_records(buf) == 1 && prosper_stacklog_bytes(buf) == 80);
}

int main(void)
{
	test_inspect_reference();
	test_log();
	test_log_zero_and_iterate();
	printf("%d passed, %d failed\n", passes, fails);
	return fails != 0;
}

/* test_filecover.c -- the ranges the current journal file holds (filecover.h), against a model
 * of one bit per byte: the gaps of a range are exactly its bytes not covered, in order and
 * disjoint; covering then makes them covered; a reset forgets; files are kept apart; more ranges
 * than are kept only make more gaps, never fewer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "filecover.h"

static int failures;
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); failures++; } } while (0)

#define SPAN 4096

static unsigned rnd(unsigned *s) { *s = *s * 1103515245u + 12345u; return *s >> 8; }

/* The gaps of [off, end) must be exactly the uncovered bytes of the model there (or, when the
 * call gave up splitting, the whole range). */
static void check_gaps(struct fcover **c, uint64_t ino, const unsigned char *model, uint64_t off, uint64_t end)
{
	struct frange g[FCOVER_MAX_GAPS];
	size_t n = fcover_gaps(c, 1, ino, off, end, g);
	if (n == 1 && g[0].off == off && g[0].end == end)
		return; /* the whole range: never wrong (it may hold covered bytes) */
	unsigned char in_gap[SPAN] = { 0 };
	for (size_t i = 0; i < n; i++) {
		CHECK(g[i].off < g[i].end && g[i].off >= off && g[i].end <= end);
		CHECK(i == 0 || g[i].off > g[i - 1].end); /* ordered, separate */
		for (uint64_t b = g[i].off; b < g[i].end && b < SPAN; b++)
			in_gap[b] = 1;
	}
	for (uint64_t b = off; b < end; b++)
		if (in_gap[b] != !model[b]) {
			fprintf(stderr, "FAIL byte %llu: gap %d, covered %d\n", (unsigned long long)b, in_gap[b], model[b]);
			failures++;
			return;
		}
}

int main(void)
{
	struct fcover *c = NULL;
	unsigned seed = 1;
	for (int round = 0; round < 200; round++) {
		static unsigned char model[2][SPAN];
		memset(model, 0, sizeof model);
		fcover_reset(&c);
		for (int op = 0; op < 300; op++) {
			uint64_t ino = rnd(&seed) % 2;
			uint64_t off = rnd(&seed) % SPAN, len = 1 + rnd(&seed) % (op % 3 ? 64 : 700);
			uint64_t end = off + len > SPAN ? SPAN : off + len;
			check_gaps(&c, ino, model[ino], off, end);
			fcover_add(&c, 1, ino, off, end);
			memset(&model[ino][off], 1, end - off);
			check_gaps(&c, ino, model[ino], 0, SPAN); /* and everywhere else */
		}
	}
	/* a reset forgets; another device is another file */
	fcover_reset(&c);
	struct frange g[FCOVER_MAX_GAPS];
	fcover_add(&c, 1, 5, 0, 100);
	CHECK(fcover_gaps(&c, 1, 5, 10, 20, g) == 0);
	CHECK(fcover_gaps(&c, 2, 5, 10, 20, g) == 1 && g[0].off == 10 && g[0].end == 20);
	CHECK(fcover_gaps(&c, 1, 5, 90, 120, g) == 1 && g[0].off == 100 && g[0].end == 120);
	fcover_reset(&c);
	CHECK(fcover_gaps(&c, 1, 5, 10, 20, g) == 1);
	/* touching ranges merge: one range, no gap between */
	fcover_add(&c, 1, 6, 0, 10);
	fcover_add(&c, 1, 6, 10, 20);
	CHECK(fcover_gaps(&c, 1, 6, 0, 20, g) == 0);
	/* many separate ranges: past what is kept, ranges are recorded again (gaps), never lost */
	fcover_reset(&c);
	for (uint64_t i = 0; i < 10000; i++)
		fcover_add(&c, 1, 7, i * 4, i * 4 + 2);
	CHECK(fcover_gaps(&c, 1, 7, 0, 2, g) == 0);           /* an early one is kept */
	size_t n = fcover_gaps(&c, 1, 7, 39990, 39992, g);    /* a late one may not be: then a gap */
	CHECK(n <= 1);
	fcover_reset(&c);
	free(c);
	if (failures)
		return 1;
	printf("filecover: gaps match the byte model over 60000 ranges\n");
	return 0;
}

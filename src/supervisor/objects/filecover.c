/* filecover.c -- ranges of files already in the current journal file (filecover.h). */
#include "filecover.h"
#include <stdlib.h>
#include <string.h>

#define MAX_FILES 256    /* files followed per interval; beyond, new ones are not covered */
#define MAX_RANGES 4096  /* separate ranges per file; beyond, new ones are not covered */

struct file_ranges {
	uint64_t dev, ino;
	struct frange *r; /* sorted, disjoint, not touching */
	size_t n, cap;
};

struct fcover {
	struct file_ranges f[MAX_FILES];
	size_t n;
};

static struct file_ranges *find(struct fcover *c, uint64_t dev, uint64_t ino)
{
	for (size_t i = 0; c && i < c->n; i++)
		if (c->f[i].dev == dev && c->f[i].ino == ino)
			return &c->f[i];
	return NULL;
}

size_t fcover_gaps(struct fcover **c, uint64_t dev, uint64_t ino, uint64_t off, uint64_t end, struct frange *gaps)
{
	if (off >= end)
		return 0;
	const struct file_ranges *f = find(*c, dev, ino);
	size_t n = 0;
	uint64_t at = off;
	for (size_t i = 0; f && i < f->n && at < end; i++) {
		const struct frange *r = &f->r[i];
		if (r->end <= at)
			continue;
		if (r->off >= end)
			break;
		if (r->off > at) {
			if (n == FCOVER_MAX_GAPS)
				return gaps[0] = (struct frange){ off, end }, 1;
			gaps[n++] = (struct frange){ at, r->off };
		}
		at = r->end;
	}
	if (at < end) {
		if (n == FCOVER_MAX_GAPS)
			return gaps[0] = (struct frange){ off, end }, 1;
		gaps[n++] = (struct frange){ at, end };
	}
	return n;
}

void fcover_add(struct fcover **c, uint64_t dev, uint64_t ino, uint64_t off, uint64_t end)
{
	if (off >= end)
		return;
	if (!*c && !(*c = calloc(1, sizeof **c)))
		return; /* not covered: recorded again, never left out */
	struct file_ranges *f = find(*c, dev, ino);
	if (!f) {
		if ((*c)->n == MAX_FILES)
			return;
		f = &(*c)->f[(*c)->n++];
		memset(f, 0, sizeof *f);
		f->dev = dev, f->ino = ino;
	}
	/* the ranges [lo, hi) that touch [off, end) merge with it into one */
	size_t lo = 0;
	while (lo < f->n && f->r[lo].end < off)
		lo++;
	size_t hi = lo;
	while (hi < f->n && f->r[hi].off <= end) {
		if (f->r[hi].off < off)
			off = f->r[hi].off;
		if (f->r[hi].end > end)
			end = f->r[hi].end;
		hi++;
	}
	if (hi == lo) { /* a new range at lo */
		if (f->n == f->cap) {
			if (f->cap == MAX_RANGES)
				return;
			size_t cap = f->cap ? f->cap * 2 : 16;
			struct frange *g = realloc(f->r, cap * sizeof *g);
			if (!g)
				return;
			f->r = g, f->cap = cap;
		}
		memmove(&f->r[lo + 1], &f->r[lo], (f->n - lo) * sizeof *f->r);
		f->n++;
	} else if (hi - lo > 1) {
		memmove(&f->r[lo + 1], &f->r[hi], (f->n - hi) * sizeof *f->r);
		f->n -= hi - lo - 1;
	}
	f->r[lo] = (struct frange){ off, end };
}

void fcover_reset(struct fcover **c)
{
	if (!*c)
		return;
	for (size_t i = 0; i < (*c)->n; i++)
		free((*c)->f[i].r);
	(*c)->n = 0;
}

/* metalog_table.c -- the slot tables of the metadata region (metalog_table.h). */
#include "metalog_table.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "metalog.h"

void table_free(struct table *t)
{
	free(t->cur);
	free(t->nxt);
	free(t->used);
}


int keys_reserve(struct keyslot **p, size_t *alloc, size_t n)
{
	if (n <= *alloc)
		return 0;
	size_t a = n < 64 ? 64 : 2 * n;
	struct keyslot *q = realloc(*p, a * sizeof *q);
	if (!q)
		return -ENOMEM;
	*p = q;
	*alloc = a;
	return 0;
}

static int by_key(const void *a, const void *b)
{
	uint64_t x = ((const struct keyslot *)a)->key, y = ((const struct keyslot *)b)->key;
	return x < y ? -1 : x > y;
}

void sort_keys(struct table *t)
{
	if (t->nnxt) /* t->nxt may still be NULL */
		qsort(t->nxt, t->nnxt, sizeof *t->nxt, by_key);
}

int table_assign(struct table *t, int fresh, uint32_t cap, uint8_t *slots, size_t slot_bytes,
			int is_vma, uint64_t *added, uint64_t *removed)
{
	if (t->used_alloc < cap) {
		uint8_t *u = realloc(t->used, cap);
		if (!u)
			return -ENOMEM;
		t->used = u;
		t->used_alloc = cap;
	}
	memset(t->used, 0, cap);
	size_t ncur = fresh ? 0 : t->ncur, i = 0, j = 0;
	while (i < ncur || j < t->nnxt) {
		if (j == t->nnxt || (i < ncur && t->cur[i].key < t->nxt[j].key)) {
			if (!(metalog_mutation == 1 && is_vma))
				memset(slots + (size_t)t->cur[i].slot * slot_bytes, 0, slot_bytes);
			(*removed)++;
			i++;
		} else if (i == ncur || t->nxt[j].key < t->cur[i].key) {
			t->nxt[j].added = 1;
			t->nxt[j++].slot = UINT32_MAX;
			(*added)++;
		} else {
			t->nxt[j].added = 0;
			t->nxt[j].slot = t->cur[i].slot;
			t->used[t->cur[i].slot] = 1;
			i++, j++;
		}
	}
	uint32_t f = 0;
	for (j = 0; j < t->nnxt; j++) {
		if (t->nxt[j].slot != UINT32_MAX)
			continue;
		while (f < cap && t->used[f])
			f++;
		if (f == cap)
			return -ENOSPC;
		t->nxt[j].slot = f;
		t->used[f] = 1;
	}
	return 0;
}

void table_commit(struct table *t)
{
	struct keyslot *k = t->cur;
	size_t a = t->cur_alloc;
	t->cur = t->nxt, t->cur_alloc = t->nxt_alloc, t->ncur = t->nnxt;
	t->nxt = k, t->nxt_alloc = a, t->nnxt = 0;
}

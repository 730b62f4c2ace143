/* metalog_table.h -- the slot tables of the metadata region (metalog.h), as metalog.c stages them:
 * each entry keeps its slot while its key lives (a VMA's start, an fd's number, a file's path), so
 * that a change is one record.  Private to metalog.c and metalog_table.c. */
#ifndef PROSPER_SUP_METALOG_TABLE_H
#define PROSPER_SUP_METALOG_TABLE_H
#include <stddef.h>
#include <stdint.h>

/* A table's committed keys, sorted, with their slots (an entry of the blob while staging). */
struct keyslot {
	uint64_t key;
	uint32_t slot, src;
	uint32_t path;   /* the entry's path, interned */
	uint32_t payload; /* its second string (an fd's payload), interned; IMG_NONE if none */
	uint32_t added;  /* took a free slot (no committed entry had its key) */
};

struct table {
	struct keyslot *cur, *nxt;
	size_t ncur, nnxt, cur_alloc, nxt_alloc;
	uint8_t *used;
	size_t used_alloc;
};

void table_free(struct table *t);
/* Room for n keys in *p (of *alloc).  0 or -ENOMEM. */
int keys_reserve(struct keyslot **p, size_t *alloc, size_t n);
/* t->nxt sorted by key. */
void sort_keys(struct table *t);
/* table_assign -- a slot for each new entry (t->nxt, sorted by key): an entry whose key the
 * committed table holds keeps its slot (a change, if its bytes differ), the others take free
 * slots (an add).  Slots whose key is gone are zeroed in `slots` (a remove).  -ENOSPC when cap
 * slots do not suffice.  is_vma: the table the protocol mutation 1 applies to. */
int table_assign(struct table *t, int fresh, uint32_t cap, uint8_t *slots, size_t slot_bytes, int is_vma,
		 uint64_t *added, uint64_t *removed);
/* The staged keys become the committed ones. */
void table_commit(struct table *t);

#endif

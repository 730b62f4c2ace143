/* nvm_ahead.h -- which NVM segments a fault opens besides its own (nvm_ahead.c). */
#ifndef PROSPER_SUP_NVM_AHEAD_H
#define PROSPER_SUP_NVM_AHEAD_H
#include <stddef.h>
#include <stdint.h>

struct sup;
struct nvm_region;

/* Why a segment is open in this interval (nvm_region.ahead): its own fault, or a rule. */
enum { AHEAD_NONE, AHEAD_REPEAT, AHEAD_NEXT };

/* After the commit of an interval of r: 1 when the next repeat set is this interval's changes,
 * 0 when it keeps the last one as well (see nvm_ahead.c). */
int nvm_ahead_judge(struct nvm_region *r, uint32_t repeat, uint32_t hits, uint32_t other);
/* The copy-on-write of what the fault at segment k of r opens, the set returned in *set (to free);
 * 0, or -1 with why when k itself could not be prepared. */
int nvm_prepare_set(struct sup *s, struct nvm_region *r, uint32_t k, uint32_t **set, uint32_t *n, char *why,
		    size_t whylen);

#endif

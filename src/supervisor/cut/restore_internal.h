/* restore_internal.h -- what the parts of one process's restore share (restore.c drives it;
 * restore_map.c rebuilds the map and fills the memory).  Private to them. */
#ifndef PROSPER_SUP_RESTORE_INTERNAL_H
#define PROSPER_SUP_RESTORE_INTERNAL_H
#include <stddef.h>
#include <stdint.h>
#include "inject.h"
#include "sup.h"
#include "why.h"

#define SCRATCH_BYTES (64u << 10)


struct rctx {
	struct injector j; /* the relaunched process; SCRATCH_BYTES of its memory ours during the restore */
	uint8_t *anon_new; /* per checkpoint mapping: mapped anonymous just now (reads as zeros) */
	int uffd;          /* the program's userfaultfd (fillcopy.h), or -1 */
	int lazy;          /* fill the anonymous mappings while the program runs (fillcopy.h) */
	char *why;
	size_t whylen;
};

static inline long sys(struct rctx *r, long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
	return inject_syscall(&r->j.in, nr, a1, a2, a3, a4, a5, a6);
}

/* The map of the checkpoint made in the relaunched process: kernel mappings checked, the rest
 * unmapped, mapped, grown (fresh: its map now, nf entries).  0 or -1 with r->why. */
int restore_rebuild_map(struct sup *s, struct rctx *r, const struct img *im, struct vma *fresh, int nf);
/* The memory of every saved mapping from the pool (restore_map.c).  0 or -1 with r->why. */
int restore_fill_memory(struct sup *s, struct rctx *r, const struct img *im);

#endif

/* ckpt_commit.h -- the commit half of a process's checkpoint, the oracle, the tracker's start (ckpt_commit.c). */
#ifndef PROSPER_SUP_CKPT_COMMIT_H
#define PROSPER_SUP_CKPT_COMMIT_H
#include "sup.h"

/* The commit of one process's part (tree_commit makes the epoch of all): its staged bytes into
 * the pool (the diff filter on the way; a copy-on-write view's read a window at a time, the view
 * ended), *cs counting them; 0 or a negative errno with why.  Then, once the epoch is committed,
 * sup_committed. */
int sup_write_batch(struct sup *s, struct ckpt_stats *cs, char *why, size_t whylen);
void sup_committed(struct sup *s, const struct ckpt_stats *cs);
/* Open the tracker on the program with the shim's userfaultfd (closed and unused when every
 * mapping is tracked whole); 0, or -1 with s->track.err. */
int sup_start_tracking(struct sup *s, int uffd);
/* The soundness oracle, after sup_commit() with the child still stopped. */
int sup_verify(struct sup *s);

#endif

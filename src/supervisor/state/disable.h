/* disable.h -- checkpointing stopped for good while the program runs on (disable.c).
 *
 * Below every part that can meet a reason to stop (the loop, exec, the thread table, the tree, a
 * resume's fill): it touches only the tree's state and stderr, and calls none of them.
 */
#ifndef PROSPER_SUP_DISABLE_H
#define PROSPER_SUP_DISABLE_H
#include "sup.h"

/* sup_disable stops checkpointing (once, with a message on stderr): the last checkpoint stays
 * resumable, the program runs on; why is copied, a later call keeps the first. */
void sup_disable(struct sup *s, const char *why);
/* Checkpointing stops after a failed capture or commit (rc < 0), with the reason the failing step
 * gave (why.h; NULL or empty: the errno alone). */
void sup_checkpoint_failed(struct sup *s, int rc, const char *why);

#endif

/* capture.h -- one checkpoint of a process, its stop's half (capture.c). */
#ifndef PROSPER_SUP_CAPTURE_H
#define PROSPER_SUP_CAPTURE_H
#include "sup.h"

/* capture.c: a checkpoint of one process in two halves.  sup_capture() runs while the child is
 * stopped: map (mapfollow.c), tracker, the dirty bytes copied into s->cut.batch, the blob (blob.c); the
 * pool is only asked to add, resize or remove regions.  sup_write_batch() (ckpt_commit.c) runs
 * while the child goes on: the diff filter,
 * the pool writes; tree_commit (tree.h) then commits the epoch.  The next sup_capture() waits.
 * Both return 0 or a negative errno; sup_capture says why when it can (why.h). */
int sup_capture(struct sup *s, char *why, size_t whylen);

#endif

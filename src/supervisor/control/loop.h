/* loop.h -- the stop (cut) loop (loop.c). */
#ifndef PROSPER_SUP_LOOP_H
#define PROSPER_SUP_LOOP_H
#include "sup.h"

/* loop.c: the stop (cut) loop.  sup_supervise returns the program's wait status when it ended,
 * or -1 if it was lost.  A checkpoint error stops checkpointing (disable.h), never the program. */
int sup_supervise(struct sup *s, int sigfd);

#endif

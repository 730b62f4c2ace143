/* resume.h -- a resume's lazy fill, completed or ended (resume.c). */
#ifndef PROSPER_SUP_RESUME_H
#define PROSPER_SUP_RESUME_H
#include "sup.h"

/* A lazy fill of m's memory (fillcopy.h) completed, due before any system call, ptrace
 * stop or checkpoint of m; nothing if none is under way.  If a page could not be put back while
 * the program lives, the program is killed (it must not run on with memory that is not its
 * checkpoint's), checkpointing stops and the resume exits 2 with the reason.  sup_fill_end: its
 * end, with m stopped after a capture (stopped = 1) or gone (0). */
void sup_fill_complete(struct sup *m);
void sup_fill_end(struct sup *m, int stopped);

#endif

/* exec.h -- the program exec'd: its new image followed (exec.c). */
#ifndef PROSPER_SUP_EXEC_H
#define PROSPER_SUP_EXEC_H
#include "sup.h"

/* exec.c: the program exec'd (its PTRACE_EVENT_EXEC stop): the new image is followed -- the next
 * checkpoint is of it -- or checkpointing stops with the reason.  The program goes on either way. */
struct worker;
void sup_exec(struct sup *s, struct worker *w);
/* Will the image process pid runs now (at its exec stop) load the shim: a dynamically linked
 * x86-64 ELF program?  0, or -1 with a one-line why. */
int sup_image_loads_shim(pid_t pid, char *why, size_t whylen);

#endif

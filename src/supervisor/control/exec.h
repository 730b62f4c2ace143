/* exec.h -- the program exec'd: its new image followed (exec.c). */
#ifndef PROSPER_SUP_EXEC_H
#define PROSPER_SUP_EXEC_H
#include "sup.h"

/* exec.c: the program exec'd (its PTRACE_EVENT_EXEC stop): the new image is followed -- the next
 * checkpoint is of it -- or checkpointing stops with the reason.  The program goes on either way. */
struct worker;
void sup_exec(struct sup *s, struct worker *w);
/* The program's first image, statically linked, at its exec stop: no shim will take the
 * supervisor's variables (launch.h) out of its environment, so the vectors it starts from are
 * given the user's environment instead, as the shim leaves it (shim.c strip_environment).  0, or
 * -1 with why. */
int sup_give_user_environment(pid_t pid, char *why, size_t whylen);

#endif

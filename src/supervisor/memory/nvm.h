/* nvm.h -- NVM-resident memory of a supervised program (nvm.c). */
#ifndef PROSPER_SUP_NVM_H
#define PROSPER_SUP_NVM_H
#include "sup.h"

/* nvm.c (see there).  sup_nvm_claims: is this signal-delivery stop an NVM request at the gate
 * (SIGTRAP) or a first write to a clean NVM segment (SIGSEGV)?  sup_nvm_serve handles it and
 * continues the thread without the signal; the caller must have waited for the commit under way
 * (the pool is not thread-safe, and N2).  -1 with why: the NVM memory cannot stay consistent.
 * sup_nvm_stop (at a stop, in sup_capture) re-protects what was written; sup_nvm_commit (in
 * sup_commit) names its changed blocks; sup_nvm_restore maps the committed regions again. */
struct inject;
int sup_nvm_claims(struct sup *s, pid_t tid, int sig);
int sup_nvm_serve(struct sup *s, pid_t tid, int sig, char *why, size_t whylen);
int sup_nvm_stop(struct sup *s);
int sup_nvm_commit(struct sup *s);
int sup_nvm_restore(struct sup *s, struct inject *in, uint64_t path_addr, char *why, size_t whylen);
struct nvm_region *sup_nvm_find(struct sup *s, uint64_t addr);

#endif

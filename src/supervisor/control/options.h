/* options.h -- the command line of `prosper run` and `prosper resume` (options.c). */
#ifndef PROSPER_SUP_OPTIONS_H
#define PROSPER_SUP_OPTIONS_H
#include <stddef.h>
#include <stdint.h>
#include "sup.h"

struct opts {
	struct sup_config cfg;       /* what the supervisor keeps */
	int fresh;                   /* run: discard a checkpoint the pool holds */
	const char *pool;            /* --pool, or NULL */
	uint64_t capacity_mib;
	char **prog;                 /* run: PROGRAM [ARGS...] */
	int nprog;
};

/* Parse argv (argv[1] is "run" or "resume"); --help prints the usage and exits 0.  0, or the
 * exit code of a refusal already printed. */
int options_parse(int argc, char **argv, struct opts *o);

/* The pool when --pool is not given: run: ./<program>.prosper; resume: the only *.prosper in the
 * working directory.  0, or the exit code of a refusal already printed. */
int options_default_pool(const struct opts *o, char *out, size_t cap);

#endif

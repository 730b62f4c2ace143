/* metalog_script.h -- the scripted process of test_metalog.c (metalog_script.c). */
#ifndef PROSPER_TEST_METALOG_SCRIPT_H
#define PROSPER_TEST_METALOG_SCRIPT_H
#include <stddef.h>
#include <stdint.h>
#include <sys/user.h>
#include "image.h"

#define MAXE 24
#define MAXV 90
#define MAXF 10
#define MAXT 3
#define XB 64


struct pvma {
	uint64_t start, end, offset;
	uint32_t region;
	int path; /* -1: anonymous */
	char perms[8];
};

struct pfd {
	int32_t fd;
	uint32_t flags, type;
	uint64_t pos, size;
	int path;
	int payload;  /* a second string (an epoll instance's watches), -1: none */
};

struct pstate {
	struct user_regs_struct regs;
	uint8_t xstate[XB];
	int nthreads;
	struct img_thread thr[MAXT];
	uint8_t txs[MAXT][XB];
	int nvmas, nfds, nfiles, cwd;
	struct pvma vmas[MAXV];
	struct pfd fds[MAXF];
	int files[MAXF];
};

void blob_of(const struct pstate *ps, struct img_buf *out);
void next_state(struct pstate *ps, uint64_t *rng);
uint64_t rnd(uint64_t *s);
/* a and b describe the same process (else -1 with why). */
int same_process(const void *ab, size_t al, const void *bb, size_t bl, char *why, size_t whylen);

#endif

/* crashsim.h -- crash-point and power-failure simulation of the pool protocol.
 *
 * A deterministic workload (regions added, grown, shrunk, removed; buffered writes; direct
 * copy-on-write with backup stealing; redo regions -- always a stack from the first epoch --
 * whose logs are written, sealed and applied; commits with blobs) runs on an in-memory pool whose
 * persist layer is simulated.  The simulator keeps two images: what the CPU sees (M) and what
 * is durable (D).  Cache-line model: a flush queues lines, a drain makes queued lines durable.
 * Page model (a pool file on a disk): a flush starts the write-back of whole pages, a drain
 * (fdatasync) makes the started pages durable.
 * The copy variant (config.copy) runs the same operations on a source pool in ordinary memory
 * and makes each epoch of the simulated pool a copy of the source's (prosper_pool_copy_stage):
 * the durable replica of docs/durability.md.
 *
 * At persist point c (every flush, drain and commit-word store, c = 1..K) the run stops and
 * crash images are built from D plus any subset of the in-flight units (lines or pages whose
 * M and D differ): each kept, dropped, or torn (8-byte words for lines, 512-byte sectors for
 * pages).  Small in-flight sets are enumerated exhaustively, large ones sampled, plus the
 * accumulative and reverse-accumulative orders.  Each image is recovered and must equal the
 * reference image of the epoch before or after the interrupted commit, byte for byte.  Some
 * images are also crashed inside recovery (two deep), and some are continued: one more epoch
 * on the recovered pool, crashed at a random point, recovered and checked again.
 */
#ifndef PROSPER_CRASHSIM_H
#define PROSPER_CRASHSIM_H
#include <stdint.h>
#include "prosper/persist.h"

#ifdef __cplusplus
extern "C" {
#endif

struct prosper_crashsim_config {
	uint64_t states;        /* crash states to explore at least (spread over crash points) */
	uint64_t seed;
	int granularity;        /* PROSPER_GRAN_CACHE_LINE or PROSPER_GRAN_PAGE */
	int epochs;             /* epochs in the workload */
	int mutation;           /* 0, or a protocol mutation (crashsim_mutation_*) */
	int skip_site;          /* -1, or a persist site whose operations are removed */
	int stop_at_first;      /* stop at the first inconsistency (mutation runs) */
	int copy;               /* 1: the copy variant (the simulated pool is a replica) */
};

struct prosper_crashsim_result {
	uint64_t states;            /* crash images recovered and checked (all kinds) */
	uint64_t inconsistent;      /* images whose recovery failed or differed from a committed epoch */
	uint64_t crash_points;      /* persist points crashed at */
	uint64_t nested_states;     /* images crashed again inside recovery */
	uint64_t continued_states;  /* images continued for one more epoch and crashed again */
	uint64_t max_inflight;      /* most units in flight at one crash point */
	uint64_t epochs;            /* epochs committed by the full workload */
	uint64_t points_per_site[PSITE_COUNT];
	char first_failure[512];
};

void prosper_crashsim_config_default(struct prosper_crashsim_config *c);
int prosper_crashsim_run(const struct prosper_crashsim_config *c, struct prosper_crashsim_result *r);

/* ---- other workloads (crpm containers: lib/crpm/crashsim_crpm.c) ----
 * The simulator drives any code that persists through a pool on its media.  The media is a
 * shared mapping of a memory file, so a workload may map parts of it a second time (crpm maps
 * its segments at the container's address).  The simulator crashes the run at a persist point,
 * recovers each crash image with prosper_pool_open_mem (crashing inside it too) and asks the
 * workload whether the recovered pool holds exactly one of the epochs the crash may leave. */
struct prosper_pool;

struct prosper_crash_progress {
	uint64_t lo, hi;  /* a crash now must recover an epoch in [lo, hi] */
	int create_done;  /* the pool exists (before: no pool or an empty one) */
	int failed;       /* 1: an I/O error stopped the run; 2: an unexpected error (a bug) */
	const char *why;  /* with failed == 2: the reason, if not the pool's last error */
};

struct prosper_crash_workload {
	void *ctx;
	size_t media_bytes;
	/* The whole workload on media of media_bytes at base (a MAP_SHARED mapping of fd) observed
	 * through pp.  A crash longjmps out of a persist call; pr is kept current throughout. */
	void (*run)(void *ctx, uint8_t *base, int fd, struct prosper_persist *pp, struct prosper_crash_progress *pr);
	/* Free the run's handles (pool, mappings of the media) without touching the media; the
	 * references of its epochs stay.  Called after a crash, before its images are checked. */
	void (*release)(void *ctx);
	/* Forget the run entirely (after its images were checked, or its end). */
	void (*reset)(void *ctx);
	/* pool was recovered from a crash image at base/fd and names an epoch in [lo, hi]: 0 if it
	 * holds exactly what the run committed as that epoch, else -1 and a reason. */
	int (*check)(void *ctx, struct prosper_pool *pool, uint8_t *base, int fd, char *why, size_t whylen);
	/* Optional: one more epoch on the recovered pool (committed as epoch e; cont owns it from
	 * now on, release frees it) whose reference is installed before its commit; a crash
	 * longjmps out.  Returns 0, or -1 with a reason if it failed without a crash.  cont_forget
	 * drops that reference again, after the images of the continued run were checked. */
	int (*cont)(void *ctx, struct prosper_pool *pool, uint8_t *base, int fd, uint64_t e, uint64_t *rng, char *why,
		    size_t whylen);
	void (*cont_forget)(void *ctx);
	int io_errors;    /* also inject a failing flush at every flush (the workload copes with -EIO) */
};

/* The simulator's random numbers (xorshift64*), for workloads that must be deterministic too:
 * the next number of the sequence *state, and one below n (0 if n is 0). */
uint64_t prosper_crashsim_random(uint64_t *state);
uint64_t prosper_crashsim_random_below(uint64_t *state, uint64_t n);

int prosper_crashsim_run_workload(const struct prosper_crashsim_config *c, const struct prosper_crash_workload *w,
				  struct prosper_crashsim_result *r);

/* Mutation catalogue: each entry is a persist site removed or a protocol step changed. */
int prosper_crashsim_mutant_count(void);
/* Describe mutant i: fills the config fields and returns a name. */
const char *prosper_crashsim_mutant(int i, struct prosper_crashsim_config *c);

#ifdef __cplusplus
}
#endif
#endif

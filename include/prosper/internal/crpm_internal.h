/* crpm_internal.h -- the in-DRAM view of a container, shared by the files of lib/crpm and the
 * crash simulator's crpm workload (src/crashsim/crpm_workload.c).
 *
 * A container is ONE pool region (kind CRPM, mode DIRECT or BUFFERED) named "crpm".  Its bytes
 * appear at [base, base + length) of the process; the reservation [base, base + capacity) is
 * PROT_NONE beyond length.  Default mode maps each segment's main slot of the pool file there
 * (MAP_SHARED|MAP_FIXED), so the working copy is the pool; buffered mode keeps anonymous DRAM
 * there and writes dirty blocks into the pool at a checkpoint.
 *
 * Bytes [0, CRPM_HDR_BYTES) of the region are struct crpm_hdr (roots, allocator state); the
 * heap follows.  Everything below is DRAM bookkeeping of the epoch being built.
 *
 * Segment states (seg_state[k], one byte per segment, atomics):
 *   SEG_CLEAN    not written in this epoch; write-protected unless tracking is HOOKS
 *   SEG_HOOKED   prepared by a store hook or an annotation: dirty[] names every written block
 *   SEG_FAULTED  prepared by a write fault: an uninstrumented store may have written any
 *                block, so the checkpoint compares it with its committed copy
 * A segment leaves SEG_CLEAN only under ctr->lock, after its copy-on-write (default mode) is
 * durable and before it is unprotected; the checkpoint returns every segment to SEG_CLEAN.
 */
#ifndef PROSPER_CRPM_INTERNAL_H
#define PROSPER_CRPM_INTERNAL_H
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "prosper/crpm.h"
#include "prosper/pool.h"

#define CRPM_MAGIC 0x314D5052435250ull /* "PRCRPM1" */
#define CRPM_VERSION 1
#define CRPM_HDR_BYTES 4096
#define CRPM_ALIGN 16
#define CRPM_SMALL_MAX 1024                     /* sizes up to this have exact free lists */
#define CRPM_NCLASS (CRPM_SMALL_MAX / CRPM_ALIGN) /* class i holds chunks of (i+1)*16 bytes */
#define CRPM_MAX_PROTECT 16
#define CRPM_SEGMENT_SIZE (2u << 20) /* of the pools crpm_open creates */

enum { SEG_CLEAN = 0, SEG_HOOKED = 1, SEG_FAULTED = 2 };

/* In the container at offset 0.  Offsets are from base; 0 means none. */
struct crpm_hdr {
	uint64_t magic;
	uint32_t version;
	uint32_t mode;
	uint64_t base;
	uint64_t capacity;
	uint64_t heap_top;                 /* offset of the first byte never handed out */
	uint64_t roots[CRPM_MAX_ROOTS];    /* pointers */
	uint64_t free_small[CRPM_NCLASS];  /* heads of exact-size free lists */
	uint64_t free_large;               /* first-fit list of chunks > CRPM_SMALL_MAX */
	uint64_t allocated_bytes;          /* chunk bytes in use (statistics, tests) */
	struct {
		uint64_t off;              /* copy of the DRAM variable inside the container */
		uint64_t len;
	} protect[CRPM_MAX_PROTECT];
};

/* Chunk header, 16 bytes before every pointer crpm_malloc returns. */
struct crpm_chunk {
	uint64_t size;  /* whole chunk, header included, multiple of 16 */
	uint64_t next;  /* free: offset of the next free chunk; in use: CRPM_CHUNK_USED */
};
#define CRPM_CHUNK_USED 0x55534544ull

struct crpm_container {
	prosper_pool *pool;
	uint32_t region;           /* region id in the pool */
	int mode;                  /* enum crpm_mode */
	int tracking;              /* enum crpm_tracking */
	int fd;                    /* the pool file, for mapping default-mode segments */
	uint8_t *base;
	uint64_t capacity;         /* reserved bytes */
	uint64_t length;           /* region bytes (whole segments) */
	uint32_t seg_size, block_size, seg_shift, block_shift;
	uint32_t nsegs_max;
	uint8_t *seg_state;        /* per segment of the reservation, SEG_* */
	uint64_t *dirty;           /* one bit per block of the reservation */
	uint8_t *scratch;          /* one segment: committed bytes for comparisons */
	uint32_t *ahead;           /* default mode: segments the last commit wrote, to prepare ahead */
	uint32_t nahead;
	pthread_mutex_t lock;      /* pool calls, copy-on-write; never held while writing the container */
	pthread_mutex_t heap_lock; /* the allocator; taken before lock, never inside it */
	void *protect_ptr[CRPM_MAX_PROTECT];
	/* the collective checkpoint */
	pthread_mutex_t bar_lock;
	pthread_cond_t bar_cond;
	unsigned bar_waiting;
	uint64_t bar_generation;
	int bar_result;
	/* statistics */
	uint64_t ckpt_bytes;       /* block bytes written by checkpoints */
	uint64_t faults;
	uint64_t checkpoints;
	int registered;            /* in the address filter of track.c */
	void *mpi;                 /* coordinated checkpoints (mpi.c): the communicator */
	void *pages;               /* CRPM_TRACK_PAGES (pages.c): the page tracker */
};

static inline struct crpm_hdr *crpm_hdr(const struct crpm_container *c) { return (struct crpm_hdr *)c->base; }

/* errors (error.c) */
void *crpm_fail_null(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int crpm_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* tracking (track.c) */
int crpm_track_register(struct crpm_container *c);
void crpm_track_unregister(struct crpm_container *c);
/* Make [addr, addr + len) of c writable in this epoch and record it as written.  Called by
 * the hooks, by annotations and by the library itself before it writes the container. */
int crpm_note_write(struct crpm_container *c, void *addr, size_t len);
/* Write-protect every segment (start of an epoch) -- no effect with CRPM_TRACK_HOOKS. */
int crpm_protect_all(struct crpm_container *c);

/* the page-granularity baseline (pages.c) */
int crpm_pages_open(struct crpm_container *c);
int crpm_pages_add(struct crpm_container *c, uint64_t from, uint64_t to);
int crpm_pages_save(struct crpm_container *c, int (*save)(struct crpm_container *, uint64_t, uint64_t));
void crpm_pages_close(struct crpm_container *c);

/* mapping (map.c) */
int crpm_map_reserve(struct crpm_container *c);
int crpm_map_grow(struct crpm_container *c, uint64_t new_length);
int crpm_map_existing(struct crpm_container *c, uint64_t length);
void crpm_map_release(struct crpm_container *c);

/* heap (heap.c) */
void crpm_heap_format(struct crpm_container *c);

/* Coordinated restart (mpi.c): make the container at path hold epoch e again, its committed
 * epoch being e+1 and nothing written since (prosper_pool_rollback).  0 or negative errno. */
int crpm_rollback(const char *path, uint64_t epoch);

/* Containers on a pool the caller opened (the crash simulator's in-memory pools): fd is the
 * pool's media (default mode maps segments of it; it is duplicated).  *out is set as soon as
 * the container exists, so a simulated crash inside can still free it.  The container owns the
 * pool until crpm_close, or crpm_detach, which frees the container and hands the pool back.
 * On failure (negative, *out NULL) the pool stays the caller's. */
int crpm_open_pool(prosper_pool *pool, int fd, const crpm_option_t *opt, crpm_t **out);
prosper_pool *crpm_detach(crpm_t *c);
/* The configuration of a new container's pool with segments of seg_size bytes. */
void crpm_pool_config(const crpm_option_t *o, uint32_t seg_size, struct prosper_pool_config *cfg);

/* Protocol mutations, for the crash simulator's mutation tests only (src/crashsim/crpm_workload.c):
 * only the testable build of crpm (PROSPER_TESTABLE) has crpm_mutation; elsewhere
 * CRPM_MUTANT(m) is 0 and the mutated branches are compiled out. */
enum crpm_mutation {
	CRPM_MUT_NONE = 0,
	CRPM_MUT_BLOCKS_UNSAVED, /* a checkpoint commits without handing its dirty blocks to the pool */
	CRPM_MUT_HEAP_UNNOTED,   /* the allocator writes its metadata without noting the write */
	CRPM_MUT_AHEAD_EARLY,    /* copy-on-write ahead right after the commit, before the MPI barrier */
	CRPM_MUT_COUNT
};
#ifdef PROSPER_TESTABLE
extern int crpm_mutation;
#define CRPM_MUTANT(m) (crpm_mutation == (m))
#else
#define CRPM_MUTANT(m) 0
#endif

/* the checkpoint itself, under c->lock with every writer stopped (checkpoint.c) */
int crpm_commit(struct crpm_container *c);
/* Then, also under c->lock: copy-on-write ahead of the segments that commit wrote (libcrpm's
 * batched copy-on-write at checkpoint: two fences for all of them instead of two each at
 * their first write in the next epoch).  At most CRPM_AHEAD_MAX segments; none with a backup
 * limit (pool.h).  After it, rolling back to the epoch before the commit is no longer possible:
 * the backups hold the committed epoch. */
#define CRPM_AHEAD_MAX 256
int crpm_prepare_ahead(struct crpm_container *c);

/* A checkpoint in its two steps (crpm_checkpoint takes both): MPI ranks commit, wait until
 * every rank has committed, and only then prepare ahead (container.c). */
int crpm_checkpoint_commit(struct crpm_container *c);
int crpm_checkpoint_ahead(struct crpm_container *c);
#endif

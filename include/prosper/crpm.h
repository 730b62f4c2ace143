/* crpm.h -- libcrpm-style checkpoint containers (papers/libcrpm-dac2022.txt) on the persistent
 * pool (pool.h).
 *
 * A container is a heap at a fixed virtual address whose state survives crashes.  The program
 * allocates its state objects in it (crpm_malloc), finds them again after a restart through
 * root pointers (crpm_set_root / crpm_get_root) and calls crpm_checkpoint at epoch boundaries.
 * Opening an existing container recovers the state of its last checkpoint, at the same
 * address, so pointers stored inside stay valid.
 *
 * Modes
 *   CRPM_MODE_DEFAULT   the working state IS the pool (its main segments, mapped at the
 *                       container's address); a 2 MiB segment is copied on write to a backup
 *                       before its first write in an epoch; a checkpoint flushes the dirty
 *                       256 B blocks and commits.
 *   CRPM_MODE_BUFFERED  the working state is in DRAM; a checkpoint writes the dirty blocks into
 *                       the copy of the pool the committed epoch does not read, then commits.
 *
 * How writes are found (docs/crpm.md)
 *   Programs built with bin/prosper-cc / bin/prosper-c++ call a hook before every store
 *   (clang's SanitizerCoverage trace-stores); memcpy/memset/memmove calls are wrapped.  Every
 *   other program works too: segments of the container are write-protected at the start of an
 *   epoch, the first write to one faults (SIGSEGV, handled here), and at the checkpoint the
 *   written blocks are found by comparing the segment with its checkpointed copy.  A system
 *   call that writes into a write-protected segment fails with EFAULT: call crpm_annotate on
 *   the buffer first.
 *
 * Invariants
 *   C1 After crpm_open, the container holds exactly the state of the last crpm_checkpoint that
 *      returned 0 (or of one that was interrupted after its commit word), never a mixture.
 *   C2 The allocator's metadata and the roots live in the container, so they are
 *      checkpointed and recovered with the data they describe.
 *   C3 A container always maps at the address it was created at.
 *
 * Errors: functions that fail return NULL or a negative errno value; crpm_errormsg() gives a
 * one-line reason for the last failure of the calling thread.
 */
#ifndef PROSPER_CRPM_H
#define PROSPER_CRPM_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct crpm_container crpm_t;

enum crpm_mode {
	CRPM_MODE_DEFAULT = 0,
	CRPM_MODE_BUFFERED = 1,
};

enum crpm_tracking {
	CRPM_TRACK_AUTO = 0,    /* store hooks when the program has them, write protection always */
	CRPM_TRACK_HOOKS = 1,   /* store hooks and annotations only: every write must be instrumented */
	CRPM_TRACK_PROTECT = 2, /* write protection only: hooks are ignored (uninstrumented speed) */
	CRPM_TRACK_PAGES = 3,   /* baseline for benchmarks, buffered mode: whole written pages
				 * (userfaultfd asynchronous write-protection + PAGEMAP_SCAN) */
};

#define CRPM_MAX_ROOTS 64
#define CRPM_DEFAULT_BASE 0x200000000000ull /* 32 TiB: far from the heap, the libraries and the stack, and clear of the shadow and heap of AddressSanitizer */

typedef struct crpm_option {
	int create;                  /* create the container if it does not exist */
	int truncate;                /* remove an existing container first */
	int verbose;                 /* print what open/recovery did on stderr */
	uint64_t capacity;           /* bytes the container may grow to (default 1 GiB) */
	uint64_t fixed_base_address; /* where a new container maps (default CRPM_DEFAULT_BASE) */
	int mode;                    /* enum crpm_mode of a new container; checked on open */
	int tracking;                /* enum crpm_tracking */
	uint32_t backup_segments;    /* default mode, new container: backup segments at most (0: as
				      * many as needed); more segments written in one epoch than
				      * this is a fatal error.  Fewer backups = more stealing. */
} crpm_option_t;

void crpm_init_option(crpm_option_t *opt);

/* Open (and recover) or create the container at path.  NULL on error (crpm_errormsg()). */
crpm_t *crpm_open(const char *path, const crpm_option_t *opt);
/* Unmap and close.  Changes since the last checkpoint are not saved. */
int crpm_close(crpm_t *ctr);

void *crpm_malloc(crpm_t *ctr, size_t size);  /* 16-byte aligned; NULL when full */
void crpm_free(crpm_t *ctr, void *ptr);
void crpm_set_root(crpm_t *ctr, unsigned idx, void *ptr);
void *crpm_get_root(crpm_t *ctr, unsigned idx);

/* Collective: each of nr_threads threads calls it; all return after one checkpoint of
 * everything written before any of them entered.  0 or a negative errno value. */
int crpm_checkpoint(crpm_t *ctr, unsigned nr_threads);

/* [addr, addr + len) is about to be written by code that is not instrumented (a system call,
 * an uninstrumented library).  No effect outside containers. */
void crpm_annotate(void *addr, size_t len);

/* Mirror the DRAM variable [ptr, ptr + len) into the container under index idx: its value is
 * saved at every checkpoint and restored into ptr now if a checkpoint holds one.  0 or
 * negative errno. */
int crpm_protect(crpm_t *ctr, unsigned idx, void *ptr, size_t len);

const char *crpm_errormsg(void);

/* Epoch number of the last committed checkpoint (a new container starts at 1). */
uint64_t crpm_epoch(const crpm_t *ctr);

struct crpm_stats {
	uint64_t checkpoints;      /* by this handle */
	uint64_t checkpoint_bytes; /* dirty-block bytes handed to the pool by those checkpoints */
	uint64_t cow_bytes;        /* bytes copied to backups by copy-on-write (default mode) */
	uint64_t write_faults;     /* segments first written by an uninstrumented store */
	uint64_t allocated_bytes;  /* heap chunks in use, headers included */
	uint64_t mapped_bytes;     /* current size of the container */
	uint64_t persist_fences;   /* drains issued by all pools of this process */
	uint64_t backup_steals;    /* backups taken from a segment not written in the epoch */
};
void crpm_get_stats(const crpm_t *ctr, struct crpm_stats *out);

#if defined(MPI_VERSION) || defined(OMPI_MPI_H)
/* Coordinated checkpoints (link with -lprosper-crpm-mpi): every rank of comm opens its own
 * container (path gets ".RANK" appended); on open all ranks restart from the smallest
 * committed epoch among them (a rank one epoch ahead rolls back; a larger gap is refused). */
crpm_t *crpm_mpi_open(const char *path, const crpm_option_t *opt, MPI_Comm comm);
int crpm_mpi_checkpoint(crpm_t *ctr);
int crpm_mpi_close(crpm_t *ctr);
#endif

#ifdef __cplusplus
}
#endif
#endif

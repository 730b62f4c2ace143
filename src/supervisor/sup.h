/* sup.h -- the supervisor's state, shared by its parts:
 *   main.c     options, launch, the stop/checkpoint loop, statistics   (prosper run / resume)
 *   capture.c  one checkpoint: registers, map, dirty memory, fds -> one pool epoch
 *   restore.c  rebuild a relaunched process from the committed epoch
 *   image.c    the epoch blob;  procfs.c  /proc readers;  inject.c  syscalls run by the child
 *   metalog.c  the epoch's metadata as a redo log of changes (--metadata log) or the blob whole
 *   nvm.c      NVM-resident memory (prosper_nvm_alloc): direct pool regions mapped into the child
 */
#ifndef PROSPER_SUP_H
#define PROSPER_SUP_H
#include <stdint.h>
#include <sys/types.h>
#include "image.h"
#include "metalog.h"
#include "procfs.h"
#include "prosper/pool.h"
#include "prosper/track.h"

#define MAX_VMAS 4096
#define MAX_FDS 1024
#define MAX_RANGES 65536
#define MAX_FILES 1024
#define SUP_SEG_SIZE (64u << 10) /* pool segments: most mappings are small, keep their slots small */

enum tracker_mode { TRACK_MODE_PAGE = 1, TRACK_MODE_DIFF = 2, TRACK_MODE_FULL = 3 };

/* One range of child memory read at a stop, to be written into its region at the commit. */
struct chunk {
	uint32_t region;
	uint8_t whole;   /* part of a new mapping: written as it is, never compared */
	uint8_t stack;
	uint64_t off, len;   /* in the region */
	uint64_t addr;       /* in the child */
	size_t at;           /* in batch.data */
};

/* One checkpoint between its stop and its commit. */
struct batch {
	struct chunk *chunks;
	size_t nchunks, chunks_cap;
	uint8_t *data;
	size_t len, cap;
	struct img_buf blob;
};

/* Bytes of one checkpoint (and, summed, of a run). */
struct ckpt_stats {
	uint64_t stack, stack_pages, stack_exact; /* written; named by the tracker; changed 8-byte words */
	uint64_t other, other_pages;
	uint64_t new_bytes;                       /* mappings seen for the first time */
	uint64_t stack_dense_checkpoints;         /* stack written as whole pages (adaptive) */
	uint64_t dense_regions;                   /* times a mapping was switched to whole copies */
	uint64_t mismatches, verified_bytes;      /* soundness oracle */
};

/* A thread of the program.  thr[0] is the main thread (tid == pid). */
#define MAX_THREADS 512
struct thr {
	pid_t tid;
	int stopped;    /* in a stop of ours: PTRACE_INTERRUPT, or the first stop of a new thread */
	int listening;  /* group-stopped (SIGSTOP & co.): left with PTRACE_LISTEN */
	/* captured at the stop */
	struct user_regs_struct regs;
	uint64_t sigmask, robust_head, robust_len;
	size_t xlen;
	uint8_t xstate[4096 * 4];
};

/* An NVM-resident allocation: a direct pool region mapped at [start, start + len) (nvm.c). */
struct nvm_region {
	uint32_t id;
	uint64_t start, len;       /* len: whole segments */
	uint8_t *written;          /* per segment: writable in the epoch being built */
	uint8_t *committing;       /* per segment: written in the epoch the commit is making durable */
	uint8_t *changed;          /* per segment: the last commit found changed blocks in it */
	uint8_t *ahead;            /* per segment: opened ahead of a fault in this interval, and by which rule */
	int any_written, any_committing;
	uint32_t ahead_next;       /* segments the last sequential fault opened after it (0: none) */
	uint32_t ahead_skip;       /* first faults left at which the repeat set is not opened */
	uint32_t ahead_poor;       /* consecutive intervals whose repeat set was mostly not written again */
	uint32_t ahead_idle;       /* consecutive intervals that wrote too little to judge it */
};

struct known_file {
	char path[VMA_PATH_MAX];
	struct file_id id;
};

struct sup {
	pid_t pid;
	prosper_pool *pool;
	struct prosper_track track;
	int verify;
	int enabled;                 /* checkpointing still on */
	int stack_mode, heap_mode;   /* enum tracker_mode */
	uint32_t stack_gran, heap_gran;
	uint64_t commit_delay_us;    /* test hook: widen the window between data and commit */
	int meta_mode;               /* enum meta_mode: the metadata as a log of changes or whole */
	struct metalog *meta;
	struct metalog_stats meta_st;
	uint64_t meta_first_bytes;   /* meta_st.bytes after the first checkpoint (a full layout in log mode) */
	double commit_total;         /* seconds in sup_commit, summed */
	int stats_exact;             /* also count the stack's changed 8-byte words (costs a compare) */
	uint64_t sp;                 /* the main thread's, at this stop */
	struct thr *thr;             /* the program's threads */
	int nthr;
	struct batch batch;          /* the checkpoint being committed */
	uint32_t stack_dense_left;   /* checkpoints left that write stack pages whole (adaptive) */
	uint8_t *old;                /* committed bytes, for the diff filter */
	size_t old_cap;
	struct vma *vmas;            /* mappings whose contents are saved, with their regions */
	int nvmas;
	struct vma *now;             /* scratch: the map at this stop */
	struct fd_info *fds;         /* scratch: the fds at this stop */
	struct prosper_range *ranges;
	/* the launch record, written into every epoch */
	char exe[VMA_PATH_MAX];
	char launch_cwd[VMA_PATH_MAX];
	char *const *argv;
	int argc;
	char *const *envp;
	int envc;
	struct known_file *files;
	int nfiles;
	uint32_t tid_offset;
	uint64_t start_brk;
	/* warnings given once */
	uint64_t warned_fds[MAX_FDS / 64];
	int warned_shared;
	/* statistics */
	uint64_t checkpoints, late;       /* late: ticks that found the previous commit still running */
	struct ckpt_stats st;
	double stop_total, stop_max, restore_seconds, restore_memory_seconds;
	double thread_capture_seconds;   /* registers, xstate, mask, robust list of every thread */
	uint64_t thread_captures;        /* threads captured, summed over checkpoints */
	uint64_t restored_bytes;
	const char *disabled_reason;
	/* NVM-resident memory (nvm.c) */
	char pool_path[4096];         /* absolute: the program opens it to map its NVM regions */
	uint64_t gate, nvm_gate, nvm_path_addr; /* the shim's syscall gate, NVM gate, path buffer */
	uint64_t nvm_seg, nvm_next;   /* segment size; the next free NVM address */
	struct nvm_region *nvm;
	int nnvm, nvm_cap;
	uint8_t *nvm_zeros;           /* a segment of zeros: the committed copy of a new segment */
	struct inject *nvm_proc;      /* the program's /proc/PID/mem, opened at the first NVM call */
	uint64_t nvm_faults, nvm_dirty_bytes;
	uint64_t nvm_ahead_segments, nvm_ahead_changed; /* made writable ahead of a fault; of them, changed */
	double nvm_fault_seconds;     /* serving write faults (copy-on-write, mprotect), summed */
};

/* capture.c: a checkpoint in two halves.  sup_capture() runs while the child is stopped: map,
 * tracker, the dirty bytes copied into s->batch, the blob; the pool is only asked to add, resize
 * or remove regions.  sup_commit() runs while the child goes on: the diff filter, the pool writes,
 * the commit.  The next sup_capture() waits for it.  Both return 0 or a negative errno
 * (s->track.err or the pool's message says more). */
int sup_capture(struct sup *s);
int sup_commit(struct sup *s);
/* The soundness oracle, after sup_commit() with the child still stopped. */
int sup_verify(struct sup *s);
/* The identity of a mapped file, computed once per path; NULL if it cannot be read. */
const struct known_file *sup_known_file(struct sup *s, const char *path);

/* restore.c: rebuild the stopped, freshly launched child (stopped in the shim at SIGSTOP) from
 * the committed epoch im.  0, or negative with a one-line reason in why. */
struct shim_hello;
int sup_restore(struct sup *s, const struct img *im, const struct shim_hello *hello, char *why, size_t whylen);
/* The checks that need no child: files, kernel, CPU.  0 or -1 with why. */
int sup_restore_check(struct sup *s, const struct img *im, char *why, size_t whylen);

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

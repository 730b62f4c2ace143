/* persist.h -- the ONE place where bytes become durable: flush, drain, and the commit word.
 *
 * Invariants
 *   - Every write that must survive a crash reaches the media through prosper_persist_flush()
 *     followed by prosper_persist_drain().  Nothing else in Prosper flushes, fences or msyncs.
 *   - A flush names its call site (enum prosper_persist_site).  The crash simulator counts
 *     persist points per site, crashes at any of them, and mutation tests disable a site to
 *     prove the tests notice its absence.
 *   - The commit word is written with one aligned 8-byte store (prosper_persist_store64):
 *     x86-64 makes an aligned 8-byte store atomic with respect to power failure.
 *
 * Granularity (what the mapping gave us; see libpmem2's store granularity):
 *   BYTE        eADR platform: stores are durable once globally visible; drain = sfence.
 *   CACHE_LINE  PMEM/DAX: flush = clwb (clflushopt) per line, drain = sfence.
 *   PAGE        ordinary file (a disk, or tmpfs).  With the pool's file descriptor (has_file):
 *               flush = sync_file_range(SYNC_FILE_RANGE_WRITE) of the pages, which only STARTS
 *               their write-back; drain = fdatasync(file): every page written so far is durable
 *               (and the device's write cache flushed) when it returns.  So an epoch costs one
 *               device flush per ordering point, not one synchronous msync per range.  Without
 *               a file (memory given by the caller): flush = msync(MS_SYNC), drain = nothing.
 *               A file on tmpfs or ramfs (file_in_memory): its page cache is all there is, so
 *               flush and drain do nothing (it survives the process, never a power cut).
 *               Errors (EIO, ENOSPC) are returned and kept in `error`, never abort().
 * PMEM2_FORCE_GRANULARITY=CACHE_LINE on a /dev/shm file emulates PMEM: it survives process
 * crashes, not power loss.
 */
#ifndef PROSPER_PERSIST_H
#define PROSPER_PERSIST_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum prosper_granularity {
	PROSPER_GRAN_BYTE = 0,
	PROSPER_GRAN_CACHE_LINE = 1,
	PROSPER_GRAN_PAGE = 2,
};

/* Call sites of persist operations.  Append only; names appear in crash-test reports. */
enum prosper_persist_site {
	PSITE_CREATE = 0,      /* whole new pool: superblock, first meta, commit words */
	PSITE_SEG_INIT,        /* zero-fill of a segment copy that held no data */
	PSITE_SEG_CATCHUP,     /* stale blocks copied valid copy -> target copy */
	PSITE_DATA,            /* dirty bytes written into the target copy */
	PSITE_DIRECT_DATA,     /* dirty blocks of working (direct-mode) segments */
	PSITE_STATE,           /* inactive segment-state array */
	PSITE_META,            /* inactive metadata slot (regions, segments, blob) */
	PSITE_COMMIT_A,        /* first commit word */
	PSITE_COMMIT_B,        /* second commit word */
	PSITE_COW_COPY,        /* direct mode: main -> backup copy before the first write */
	PSITE_COW_STATE,       /* direct mode: committed state MAIN -> BACK in place */
	PSITE_BIND,            /* direct mode: backup binding rewritten */
	PSITE_STEAL_MARK,      /* direct mode: victim re-marked MAIN before its backup is taken */
	PSITE_RECOVER_COPY,    /* recovery: backup -> main for BACK segments */
	PSITE_RECOVER_STATE,   /* recovery: BACK -> MAIN in place after the copy */
	PSITE_RECOVER_COMMIT,  /* recovery: the lagging commit word repaired */
	PSITE_FALLOC,          /* (not a persist; reserved) */
	PSITE_REDO_LOG,        /* redo mode: the sealed log of the epoch, before the commit word */
	PSITE_REDO_APPLY,      /* redo mode: the records applied to the image, after the commit word */
	PSITE_RECOVER_REDO,    /* recovery: the committed epoch's log applied again */
	PSITE_ASL_LOG,         /* asl: a semantic log entry appended (before its commit word) */
	PSITE_ASL_COMMIT,      /* asl: the commit word of an entry */
	PSITE_ASL_SNAP_DATA,   /* asl: snapshot pages copied out of the heap */
	PSITE_ASL_SNAP_MARK,   /* asl: snapshot header and its completion mark */
	PSITE_COUNT
};

const char *prosper_persist_site_name(int site);

/* Hooks let the crash simulator observe (and cut short) every persist operation.
 * on_flush/on_drain run BEFORE the operation takes effect; on_store64 AFTER the store. */
struct prosper_persist_hooks {
	int (*on_flush)(void *ctx, int site, const void *addr, size_t len); /* <0: inject this error */
	void (*on_drain)(void *ctx, int site);
	void (*on_store64)(void *ctx, int site, const void *addr);
	void *ctx;
};

struct prosper_persist {
	int granularity;                           /* enum prosper_granularity */
	int simulated;                             /* 1: memory only (crash simulator), no instructions */
	const struct prosper_persist_hooks *hooks; /* NULL in production */
	uint64_t skip_sites;                       /* mutation testing: bit s set = site s does nothing */
	int error;                                 /* first I/O error (negative errno), sticky */
	int has_file;                              /* PAGE: file_fd/file_base name the pool file */
	int file_fd;                               /* the pool file, mapped at file_base */
	const void *file_base;
	int file_unsynced;                         /* a flush started since the last fdatasync */
	int file_in_memory;                        /* the file is on tmpfs/ramfs: the page cache IS the
						    * medium, a flush or drain has nothing to do */
};

/* prosper_persist_flush -- start making [addr, addr+len) durable.  Returns 0 or -errno. */
int prosper_persist_flush(struct prosper_persist *pp, int site, const void *addr, size_t len);
/* prosper_persist_drain -- wait until every flush issued before is durable. */
void prosper_persist_drain(struct prosper_persist *pp, int site);
/* flush + drain */
int prosper_persist_range(struct prosper_persist *pp, int site, const void *addr, size_t len);
/* prosper_persist_store64 -- one aligned 8-byte store (never split by the compiler). */
void prosper_persist_store64(struct prosper_persist *pp, int site, uint64_t *dst, uint64_t v);

const char *prosper_granularity_name(int g);

/* Is a file system of this statfs(2) f_type memory (tmpfs, ramfs)?  Its page cache is all there
 * is: a file there survives the process, never a power cut (file_in_memory above). */
int prosper_fs_is_memory(long f_type);

/* Drains (ordering points: sfence, or the end of a page-granularity persist) executed by every
 * pool of this process so far; simulated persistence is not counted.  For benchmarks (fences
 * per epoch, libcrpm Table 1b). */
uint64_t prosper_persist_drain_count(void);
/* fdatasync calls of page-granularity drains by every pool of this process so far, and the
 * seconds they took (the device flush latency a disk pool pays). */
void prosper_persist_sync_stats(uint64_t *count, double *seconds);

#ifdef __cplusplus
}
#endif
#endif

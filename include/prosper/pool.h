/* pool.h -- the persistent pool: the "NVM" every part of Prosper checkpoints into.
 *
 * Design (docs/pool-format.md has the byte layout and the proof obligations):
 *   A pool mirrors REGIONS (named address ranges of a process or library heap).  A region is
 *   cut into SEGMENTS (seg_size, default 2 MiB) of BLOCKS (256 B).  Each segment lives in
 *   data SLOTS of the pool file.  Everything a pool holds belongs to an EPOCH; the committed
 *   epoch is named by a checksummed 8-byte commit word, written twice (copy A, then copy B).
 *
 *   Buffered regions (libcrpm's buffered mode; process images): the working copy is in the
 *     caller's DRAM.  Each segment has two slots; the segment-state array of the committed
 *     epoch says which one is valid.  A checkpoint writes the other one, so the committed
 *     copy is never touched before the commit word moves.
 *   Direct regions (libcrpm's default mode; crpm containers, NVM allocations): the working
 *     copy IS the main slot.  Before the first write to a segment in an epoch the caller
 *     calls prosper_pool_direct_prepare(), which binds a backup slot holding the committed
 *     contents (stealing an idle one if none is free) and marks the segment BACK in place.
 *   Redo regions (Prosper's two-step stack commit, HPCA 2024 §III-B; process stacks): ONE
 *     persistent image (the main slots) and a redo log in a contiguous run of data slots,
 *     ceil((2 * length + 128) / seg_size) of them.  prosper_pool_write appends records
 *     (offset, length, bytes) to the log and leaves the image alone; the commit seals the log
 *     (tagged with the new epoch, checksummed, its checksum in the epoch's metadata) and
 *     persists it before the commit word, then applies the records to the image and persists
 *     them before it returns.  Recovery applies the committed epoch's log again (idempotent)
 *     and ignores any other log.  Writes of one epoch must not overlap (the caller coalesces
 *     adjacent ranges); a write the log cannot hold is refused with -ENOSPC and the epoch
 *     being built stays as it was.  The log code is the one in stackckpt.h.
 *
 * Layout version 2 (region records name the redo log).  A pool of layout version 1 is refused
 * with a reason (docs/pool-format.md).
 *
 * Invariants
 *   I1 Nothing a checkpoint writes before the commit word changes what recovery of the
 *      committed epoch reads.
 *   I2 Recovery is idempotent: crashing inside it and recovering again gives the same epoch.
 *   I3 Every metadata structure is checksummed (CRC-32C); an entry updated in place is a
 *      self-checksummed aligned 8-byte word, so a torn or flipped one is detected.
 *   I4 A pool that fails validation is refused with a reason; it is never "repaired" into a
 *      different state.
 *
 * Errors: functions return 0 (or a non-negative value) or a negative errno-style code, and
 * prosper_pool_errormsg() returns a one-line reason for the last error of this thread.
 * Not thread-safe: one thread (or caller-side locking) per pool.
 */
#ifndef PROSPER_POOL_H
#define PROSPER_POOL_H
#include <stddef.h>
#include <stdint.h>
#include "prosper/persist.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct prosper_pool prosper_pool;

enum prosper_region_mode {
	PROSPER_REGION_BUFFERED = 1, /* working copy in the caller's memory */
	PROSPER_REGION_DIRECT = 2,   /* working copy in the pool (main slots) */
	PROSPER_REGION_REDO = 3,     /* one image in the pool, updated through a redo log */
};

enum prosper_region_kind {
	PROSPER_KIND_OTHER = 0,
	PROSPER_KIND_STACK = 1,
	PROSPER_KIND_HEAP = 2,
	PROSPER_KIND_DATA = 3,  /* .data/.bss of an executable or library */
	PROSPER_KIND_ANON = 4,  /* anonymous mmap */
	PROSPER_KIND_CRPM = 5,  /* a crpm container heap */
	PROSPER_KIND_NVM = 6,   /* NVM-resident memory of a supervised program (prosper_nvm_alloc) */
};

#define PROSPER_REGION_NAME_MAX 48

struct prosper_region_info {
	uint32_t id;          /* stable across epochs */
	uint32_t kind;        /* enum prosper_region_kind */
	uint32_t mode;        /* enum prosper_region_mode */
	uint32_t prot;        /* PROT_* of the mapping it mirrors (informational) */
	uint64_t vaddr;       /* address it mirrors (informational for the pool) */
	uint64_t length;      /* bytes */
	char name[PROSPER_REGION_NAME_MAX];
};

struct prosper_pool_config {
	uint64_t capacity;      /* data bytes the pool may hold (both copies count); default 256 MiB */
	uint32_t seg_size;      /* default 2 MiB; power of two, >= 4 KiB, multiple of block_size */
	uint32_t block_size;    /* default 256; power of two, 64..seg_size */
	uint32_t max_regions;   /* default 256 */
	uint32_t max_backups;   /* direct mode: backup slots at most; 0 = no limit (until full) */
	uint32_t meta_bytes;    /* size of one metadata slot; 0 = derived from capacity and blob_bytes */
	uint32_t blob_bytes;    /* with meta_bytes 0: the slot's room for the epoch blob beyond the
	                         * region and segment tables at their largest; 0 = 256 KiB */
	int granularity;        /* -1: ask the mapping (libpmem2); else force for in-memory pools */
};

void prosper_pool_config_default(struct prosper_pool_config *cfg);

/* File pools.  create: O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600, space reserved with
 * posix_fallocate as slots are first used.  open: validates, then runs recovery. */
int prosper_pool_create(const char *path, const struct prosper_pool_config *cfg, prosper_pool **out);
int prosper_pool_open(const char *path, prosper_pool **out);
int prosper_pool_close(prosper_pool **pool);

/* In-memory pools over a caller buffer (crash simulator, fuzzing).  The buffer must stay
 * valid until close; pp describes how persistence is performed/observed. */
int prosper_pool_create_mem(void *base, size_t size, const struct prosper_pool_config *cfg,
			    const struct prosper_persist *pp, prosper_pool **out);
int prosper_pool_open_mem(void *base, size_t size, const struct prosper_persist *pp, prosper_pool **out);
/* Bytes a pool with this config occupies. */
int64_t prosper_pool_size_for(const struct prosper_pool_config *cfg);
/* Free a pool object without touching its media (after a simulated crash). */
void prosper_pool_abandon(prosper_pool **pool);

const char *prosper_pool_errormsg(void);

/* ---- what the committed epoch holds ---- */
uint64_t prosper_pool_epoch(const prosper_pool *pool);
int prosper_pool_granularity(const prosper_pool *pool);
/* The pool's identity, drawn at creation (16 random bytes; every checksum is salted with it). */
void prosper_pool_uuid(const prosper_pool *pool, uint8_t out[16]);
/* Data bytes the pool can hold (its slots; both copies of a buffered segment count). */
uint64_t prosper_pool_capacity(const prosper_pool *pool);
/* Segment and block size of the pool, in bytes. */
void prosper_pool_geometry(const prosper_pool *pool, uint32_t *seg_size, uint32_t *block_size);
int prosper_pool_region_count(const prosper_pool *pool);
/* i-th region of the epoch being built (== committed one until staged changes). */
int prosper_pool_region_get(const prosper_pool *pool, int i, struct prosper_region_info *out);
int prosper_pool_region_find(const prosper_pool *pool, const char *name); /* index or -ENOENT */
/* Copy committed bytes of region id [off, off+len) into dst (recovery into caller memory). */
int prosper_pool_region_read(prosper_pool *pool, uint32_t id, uint64_t off, void *dst, uint64_t len);
/* A read-only view of committed bytes of region id from off: *ptr points into the pool mapping
 * (NULL: those bytes were never written and read as zeros) and is valid for *n bytes (> 0, at
 * most len, up to a segment boundary) until the next write or commit.  For copying a large
 * region out without an intermediate buffer (resume). */
int prosper_pool_region_view(prosper_pool *pool, uint32_t id, uint64_t off, uint64_t len, const void **ptr,
			     uint64_t *n);
/* The opaque per-epoch blob (registers, fds, ...) of the committed epoch. */
const void *prosper_pool_blob(const prosper_pool *pool, size_t *len);
/* The largest blob an epoch with the regions staged now could commit: the metadata slot less its
 * region and segment tables (a larger blob is -ENOSPC at commit). */
uint64_t prosper_pool_blob_room(const prosper_pool *pool);

/* ---- building the next epoch (takes effect at prosper_pool_commit) ---- */
int prosper_pool_region_add(prosper_pool *pool, const char *name, uint32_t kind, uint32_t mode,
			    uint64_t vaddr, uint64_t length, uint32_t prot); /* returns id */
int prosper_pool_region_resize(prosper_pool *pool, uint32_t id, uint64_t new_length);
int prosper_pool_region_remove(prosper_pool *pool, uint32_t id);
/* Buffered and redo regions: len bytes at src are the new contents of [off, off+len).
 * Redo: appended to the region's log (see above); -ENOSPC if the log cannot hold it. */
int prosper_pool_write(prosper_pool *pool, uint32_t id, uint64_t off, const void *src, uint64_t len);
/* Commit everything staged as epoch+1, with this blob.  Returns 0 or negative.  An error
 * before the commit word leaves the committed epoch unchanged; an I/O error while persisting
 * the commit words may leave either epoch committed.  After any error the handle only accepts
 * close; reopening tells which epoch is committed. */
int prosper_pool_commit(prosper_pool *pool, const void *blob, size_t blob_len);

/* Make epoch e committed again in the pool file at path, whose committed epoch is e+1, so
 * that the next open recovers e.  Valid only if nothing was written to the pool since e+1
 * was committed -- a copy-on-write, also ahead, is a write (coordinated checkpoints: crpm's MPI
 * barrier comes first); refused for pools with redo regions or when e's metadata is gone.  0 or negative errno (src/pool/rollback.c). */
int prosper_pool_rollback(const char *path, uint64_t epoch);
/* The same on an in-memory pool (crash simulator). */
int prosper_pool_rollback_mem(void *base, size_t size, const struct prosper_persist *pp, uint64_t epoch);

/* ---- one pool's committed epoch copied into another (the durable replica, src/pool/copy.c) ---- */
struct prosper_pool_copy_stats {
	uint64_t compared_bytes;   /* committed bytes of src compared with dst's */
	uint64_t written_bytes;    /* of those, the ones that differed and were written into dst */
	uint64_t regions_added, regions_removed;
};
/* Stage, as dst's epoch being built, what makes it hold src's committed epoch: the same
 * regions under the same ids, and the blocks that differ.  Only segments src changed after its
 * epoch `since` are compared (0: all; pass the src epoch of dst's last copy through this src
 * handle).  Then commit dst with src's blob -- one failure-atomic epoch of dst.  Both pools
 * need the same segment and block size.  0 or negative errno; after an error dst's handle is
 * only to be closed (its committed epoch is untouched). */
int prosper_pool_copy_stage(prosper_pool *dst, prosper_pool *src, uint64_t since, struct prosper_pool_copy_stats *st);

/* ---- direct regions (libcrpm default mode primitives) ---- */
/* Address of segment seg's working copy in the pool mapping, and its length. */
void *prosper_pool_direct_addr(prosper_pool *pool, uint32_t id, uint32_t seg, uint64_t *len);
/* Offset of that working copy from the start of the pool media (the pool file): it never
 * moves while the segment exists, so a caller may map it a second time at an address of its
 * choosing (crpm containers map their segments contiguously at a fixed address). */
int64_t prosper_pool_direct_offset(prosper_pool *pool, uint32_t id, uint32_t seg);
/* Must be called before the first write to segment seg in the current epoch. */
int prosper_pool_direct_prepare(prosper_pool *pool, uint32_t id, uint32_t seg);
/* Copy-on-write ahead, batched with two drains for all: segments segs[0..n) that have a backup
 * and are not prepared yet are prepared now (right after a commit, for the segments the epoch
 * wrote).  Does nothing in pools with max_backups set. */
int prosper_pool_direct_prepare_ahead(prosper_pool *pool, uint32_t id, const uint32_t *segs, uint32_t n);
/* Record that [off, off+len) of a direct region was written this epoch. */
int prosper_pool_direct_dirty(prosper_pool *pool, uint32_t id, uint64_t off, uint64_t len);

/* ---- statistics ---- */
struct prosper_pool_stats {
	uint64_t commits;
	uint64_t data_bytes;        /* dirty bytes written by checkpoints */
	uint64_t catchup_bytes;     /* stale blocks copied between the two copies */
	uint64_t init_bytes;        /* zero-fill of fresh copies */
	uint64_t cow_bytes;         /* direct mode copy-on-write */
	uint64_t steals;
	uint64_t recovered_segments;
	uint64_t redo_bytes;        /* redo-log bytes sealed by commits (headers, records, payload) */
	uint64_t redo_records;      /* redo records sealed by commits */
	uint64_t redo_replays;      /* committed redo logs applied again by recovery */
	uint64_t punched_bytes;     /* file space of freed slots given back (holes punched) */
};
void prosper_pool_stats_get(const prosper_pool *pool, struct prosper_pool_stats *out);

/* ---- inspection (prosper inspect) ---- */
/* Write a human or JSON description of the pool file at path to out.  Returns 0, or a negative
 * code with prosper_pool_errormsg() set (the file is not a valid pool). */
int prosper_pool_inspect_file(const char *path, int json, void *FILE_out);
/* Read a pool file's uuid and committed epoch without opening it (no recovery, no writes).
 * 0, or a negative code with prosper_pool_errormsg() set. */
int prosper_pool_peek(const char *path, uint8_t uuid[16], uint64_t *epoch);

#ifdef __cplusplus
}
#endif
#endif

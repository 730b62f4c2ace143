/* pool_internal.h -- the in-DRAM view of a pool shared by the files of src/pool.
 *
 * The files are layers, listed from the top: each calls only files listed below it, so their
 * calls have no cycle (the unit test pool_layers, scripts/check_layers --order on this list).
 *   copy.c      one pool made to hold another's committed epoch (the durable replica)
 *   rollback.c  one epoch back (MPI restart)
 *   inspect.c   `prosper inspect`, metadata only
 *   pool.c      create/open/close, queries
 *   region.c    staged region changes: add, resize, remove
 *   recover.c   recovery at open
 *   commit.c    buffered writes and the commit of an epoch
 *   direct.c    direct regions: copy-on-write into backups, stealing
 *   redo.c      redo regions' logs (Prosper's two-step stack commit)
 *   slots.c     slot allocator, segment bitmaps, region lookup, flushing runs of blocks in a slot
 *   pool_file.c the pool file: create, map, reserve
 *   validate.c  superblock and metadata checks
 *   persist.c   the one door to durability (flush, drain, commit word; include/prosper/persist.h)
 *   codec.c     on-media words encoded/decoded
 *   error.c     the thread-local error message
 *   mutation.c  protocol mutations: the testable build only (pool_testing.h); it calls nothing,
 *               every file reads its switch through POOL_MUTANT
 */
#ifndef PROSPER_POOL_INTERNAL_H
#define PROSPER_POOL_INTERNAL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "prosper/pool.h"
#include "prosper/stackckpt.h"
#include "prosper/internal/pool_testing.h"
#include "layout.h"

/* One segment of a region.  The bitmaps have one bit per block. */
struct seg {
	uint32_t main_slot;
	uint32_t back_slot;   /* buffered: second copy; direct: bound backup or POOL_SLOT_NONE */
	uint8_t state;        /* value in the committed state array */
	uint8_t next_state;   /* value it will have in the epoch being built */
	bool touched;         /* written (buffered) / prepared (direct) in the epoch being built */
	uint64_t *stale;      /* blocks where the other copy (buffered) or the backup (direct)
			       * differs from the valid data; NULL = all blocks */
	uint64_t *dirty;      /* blocks written in the epoch being built */
	uint64_t written_epoch; /* DRAM only: the last epoch that changed its committed bytes, as
				 * far as this handle saw (0: before it was opened) -- what a copy
				 * into another pool needs to look at (copy.c) */
};

struct region {
	struct prosper_region_info info;
	uint32_t nsegs;
	struct seg *segs;
	bool removed;         /* staged removal */
	/* Redo mode (redo.c): the log is a contiguous run of data slots.  It holds the committed
	 * epoch's log (already applied) until the first write of the epoch being built starts a
	 * new one in its place (log_begun). */
	uint32_t log_slot;    /* first slot of the run, POOL_SLOT_NONE if none */
	uint32_t log_slots;
	bool log_begun;       /* the log holds the epoch being built */
	uint32_t log_crc;     /* checksum of the log as sealed by the last commit */
};

enum slot_use { SLOT_FREE = 0, SLOT_USED = 1, SLOT_RELEASED = 2 /* free after next commit */ };
/* A freed slot's file space is given back (a hole punched) once it stayed free PUNCH_AFTER
 * commits: never at the commit that freed it (the epoch before may still be rolled back to), and
 * not for a program that frees and takes space again every interval (each hole, and each
 * reservation of it again, is a journal update the next fdatasync waits for). */
enum { PUNCH_NONE = 0, PUNCH_AFTER = 100, PUNCH_DONE = 255 };

struct prosper_pool {
	uint8_t *base;
	size_t size;
	int fd;                       /* -1 for in-memory pools */
	void *pmem2_map;              /* struct pmem2_map * for file pools */
	struct prosper_persist pp;
	struct pool_sb sb;            /* validated copy */
	uint64_t epoch;               /* committed */
	uint32_t next_region_id;
	bool broken;                  /* a failed commit: only close is allowed */

	struct region *regions;
	uint32_t nregions, cap_regions;

	uint8_t *slot_use;            /* enum slot_use per slot */
	uint8_t *slot_reserved;       /* file space reserved (posix_fallocate done) */
	uint8_t *slot_zero;           /* known to read as zeros: a hole of a file this handle created
				       * or punched, reserved just now and not written since (DRAM only) */
	uint8_t *slot_punch;          /* a free slot: commits since it was freed (1..PUNCH_AFTER), or
				       * PUNCH_NONE / PUNCH_DONE (its file space given back, slots.c) */
	uint32_t *pending;            /* the slots a commit looks at: released, or counting towards a
				       * punch (slots_after_commit) -- not all nslots of them */
	uint32_t npending;
	uint8_t *slot_pending;        /* slot i is in pending */
	bool created_here;            /* this handle created the file: unreserved slots are holes */
	uint32_t *bound_to;           /* slot -> main slot it backs up, or POOL_SLOT_NONE */
	uint32_t free_from;           /* no slot below it is free (slot_freed keeps it so): the first-fit
				       * search starts here, not at 0 (a region of 80 000 segments
				       * was quadratic) */
	uint32_t nbackups;            /* slots currently bound as backups */

	void *blob;                   /* committed blob (copy) */
	size_t blob_len;
	struct prosper_pool_stats stats;
};

/* FOR_EACH_SEG -- every segment s of every region r that is not being removed.  The counts
 * are tested first: an empty table may be a null pointer, and null + 0 is undefined in C. */
#define FOR_EACH_SEG(p, r, s)                                                              \
	for (struct region *r = (p)->regions; (p)->nregions && r < (p)->regions + (p)->nregions; r++) \
		for (struct seg *s = r->segs; !r->removed && r->nsegs && s < r->segs + r->nsegs; s++)

/* FOR_EACH_REDO -- every redo region that is not being removed. */
#define FOR_EACH_REDO(p, r)                                                                \
	for (struct region *r = (p)->regions; (p)->nregions && r < (p)->regions + (p)->nregions; r++) \
		if (!r->removed && r->info.mode == PROSPER_REGION_REDO)

/* errors (error.c) */
int pool_err(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* addresses in the mapping, from the superblock's offsets (layout.h) */
static inline uint8_t *slot_addr(const struct prosper_pool *p, uint32_t slot)
{
	return p->base + p->sb.data_off + (uint64_t)slot * p->sb.seg_size;
}
static inline uint64_t *commit_word(const struct prosper_pool *p, int i)
{
	return (uint64_t *)(p->base + p->sb.commit_off[i]);
}
static inline uint64_t *state_entry(const struct prosper_pool *p, int parity, uint32_t slot)
{
	return (uint64_t *)(p->base + p->sb.state_off) + (uint64_t)parity * p->sb.nslots + slot;
}
static inline uint64_t *bind_entry(const struct prosper_pool *p, uint32_t slot)
{
	return (uint64_t *)(p->base + p->sb.bind_off) + slot;
}
static inline uint8_t *meta_slot(const struct prosper_pool *p, int parity)
{
	return p->base + p->sb.meta_off + (uint64_t)parity * p->sb.meta_bytes;
}
static inline uint32_t blocks_per_seg(const struct prosper_pool *p)
{
	return p->sb.seg_size / p->sb.block_size;
}
static inline size_t bitmap_words(const struct prosper_pool *p)
{
	return (blocks_per_seg(p) + 63) / 64;
}

uint64_t commit_word_encode(const struct pool_sb *sb, uint64_t epoch);
int commit_word_decode(const struct pool_sb *sb, uint64_t w, uint64_t *epoch);
uint64_t state_encode(const struct pool_sb *sb, int parity, uint32_t slot, uint8_t value);
int state_decode(const struct pool_sb *sb, int parity, uint32_t slot, uint64_t w, uint8_t *value);
uint64_t bind_encode(const struct pool_sb *sb, uint32_t slot, uint32_t main_slot);
int bind_decode(const struct pool_sb *sb, uint32_t slot, uint64_t w, uint32_t *main_slot);
uint32_t meta_crc(const struct pool_sb *sb, const uint8_t *meta, uint32_t bytes);
uint32_t sb_crc(const struct pool_sb *sb);

/* validation shared by open and inspect (validate.c) */
int sb_validate(const struct pool_sb *sb, size_t file_size);
/* Find the committed epoch: both commit words, the metadata slot it names. */
int find_committed(const struct pool_sb *sb, const uint8_t *base, uint64_t *epoch, int *valid_words);
int meta_validate(const struct pool_sb *sb, const uint8_t *meta, uint64_t epoch);

/* slots (slots.c).  A slot's file space is reserved (posix_fallocate) before anything is written
 * to it, so that a full file system is an error of the write, never a SIGBUS of a store through
 * the mapping: at allocation (slot_alloc), or -- for a buffered segment's two copies, most of which
 * a large sparse mapping never writes -- at the segment's first write (slot_alloc_as(.., 0), then
 * slot_reserve in buffered_touch); for a redo region's image and log, when the record that will
 * write them is appended (redo.c). */
int slot_alloc(struct prosper_pool *p, uint32_t *slot);
int slot_alloc_as(struct prosper_pool *p, uint32_t *slot, int reserve_now);
int slot_reserve(struct prosper_pool *p, uint32_t slot);
/* Take n consecutive free slots (first-fit); from > 0 asks for exactly [from, from + n).  Their
 * space is not reserved: slot_reserve before each is written. */
int slot_alloc_run(struct prosper_pool *p, uint32_t n, uint32_t from, uint32_t *first);
void slot_release(struct prosper_pool *p, uint32_t slot);
/* Slot i has just become free (slot_use FREE and bound to nothing): the search may start there. */
void slot_freed(struct prosper_pool *p, uint32_t i);
/* At a commit, after it is durable: the slots this commit freed become free, and the file space of
 * slots free for PUNCH_AFTER commits is given back (a hole). */
void slots_after_commit(struct prosper_pool *p);
/* The per-slot tables of p (slot_use, bound_to, ...), all slots free. */
int pool_alloc_tables(struct prosper_pool *p);
int seg_bitmaps_alloc(struct prosper_pool *p, struct seg *s);
void region_free_segs(struct region *r, uint32_t from);
struct region *region_by_id(struct prosper_pool *p, uint32_t id);
/* The index among live regions of the one named name, or -1; the pool's last error stays as it
 * was (an existence check is not an error). */
int region_index(const struct prosper_pool *p, const char *name);
/* Regions not being removed. */
uint32_t regions_live(const struct prosper_pool *p);

/* media_copy -- n bytes into the pool mapping at dst (slots.c).  A pool file on a disk is written
 * with pwrite: a store through the mapping would fault on every page write-back has made clean
 * again (each epoch, at a drain) and on every page of a hole; the page cache is the same either
 * way.  An I/O error is kept in pp.error like a flush's. */
void media_copy(struct prosper_pool *p, uint8_t *dst, const void *src, size_t n);

/* flush every run of set bits of bm (blocks) within a slot (slots.c) */
void flush_runs(struct prosper_pool *p, int site, uint8_t *slot, const uint64_t *bm);

/* redo mode (redo.c) */
static inline uint8_t *redo_log(const struct prosper_pool *p, const struct region *r)
{
	return slot_addr(p, r->log_slot);
}
static inline uint64_t redo_log_cap(const struct prosper_pool *p, const struct region *r)
{
	return (uint64_t)r->log_slots * p->sb.seg_size;
}
static inline uint32_t redo_log_slots_for(const struct pool_sb *sb, uint64_t length)
{
	uint64_t need = 2 * length + 2 * PROSPER_STACKLOG_HEADER;
	return (uint32_t)((need + sb->seg_size - 1) / sb->seg_size);
}
int redo_log_fit(struct prosper_pool *p, struct region *r, uint64_t length);
void redo_log_release(struct prosper_pool *p, struct region *r);
int redo_write(struct prosper_pool *p, struct region *r, uint64_t off, const void *src, uint64_t len);
int redo_zero(struct prosper_pool *p, struct region *r, uint64_t off, uint64_t len);
/* Seal the log of the epoch being built (an empty one if nothing was written); no flush. */
void redo_seal(struct prosper_pool *p, struct region *r);
/* Step 2: copy the records of the region's (checked) log into its image, then flush the
 * blocks that changed (the caller drains). */
/* 0, or the error of reserving a slot's space it writes (only where recovery meets a hole). */
int redo_apply_copy(struct prosper_pool *p, struct region *r);
void redo_apply_flush(struct prosper_pool *p, struct region *r, int site);
/* Does the log area hold the committed epoch's log?  1 yes (apply it again), 0 no (ignore
 * it), -1 a valid log of the committed epoch whose checksum is not the one the metadata names
 * (corruption: refuse). */
int redo_log_is_committed(const struct prosper_pool *p, const struct region *r);

/* recovery (recover.c) */
int pool_load(struct prosper_pool *p);

/* create/open/close (pool.c).  The pool being created/opened/rolled back, for
 * pool_loading_abandon (pool_testing.h): pool_loading_set(p) before, (NULL) after. */
void pool_loading_set(struct prosper_pool *p);

/* bitmaps */
static inline void bm_set(uint64_t *bm, uint32_t i) { bm[i / 64] |= 1ull << (i % 64); }
static inline bool bm_test(const uint64_t *bm, uint32_t i) { return bm == NULL || (bm[i / 64] >> (i % 64)) & 1; }
#endif

/* Protocol mutations (include/prosper/internal/pool_testing.h) exist only in the testable build
 * of the pool (PROSPER_TESTABLE, src/pool/mutation.c); elsewhere POOL_MUTANT(m) is 0 and the
 * compiler removes every mutated branch. */
#ifdef PROSPER_TESTABLE
#define POOL_MUTANT(m) (pool_mutation == (m))
#else
#define POOL_MUTANT(m) 0
#endif

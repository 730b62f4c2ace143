/* hwmodel.h -- the Prosper hardware dirty tracker (HPCA 2024 §III), as a functional model.
 *
 * Pure C, no libc: the Valgrind tool and the simulator link the same code (this is Prosper's
 * cg_sim).  The model knows addresses and sizes only; where the bitmap lives and what its
 * traffic costs is the caller's business (load32/store32 callbacks).
 *
 * Registers ("MSRs"): track_start..track_end (inclusive, as the authors' artifact),
 * dirtymap_addr, log_gran (3..7 = 8..128 B granules; 0 = tracking off), track_min (published
 * at flush: the lowest tracked store address since the previous flush).
 *
 * Bit order (one, everywhere): granule i of the tracked range is bit i of the bitmap; bitmap
 * word w (32-bit) is at dirtymap_addr + 4*w and holds granules 32w..32w+31, granule 32w+j in
 * bit j.  Read as little-endian 64-bit words, bit i of the 64-bit view is granule i too.
 *
 * Invariants
 *   - Every granule that a tracked store touches is marked, including stores that cross a
 *     granule or cache-line boundary (the authors' gem5 code marked only the first granule
 *     and dropped line-crossing stores).
 *   - After prosper_hw_flush() the bitmap in memory is the OR of what it held and every
 *     granule touched since the previous flush: exactly what an unbounded table would produce.
 *   - Outstanding-operation counters are kept per kind and never reset by stores, so
 *     prosper_hw_sync() (TRACK_SYNC) cannot lie.
 *
 * Table policy: 16 entries <bitmap word address, 32-bit accumulated value, bit count>.
 * Hit: OR the bit in.  Miss: allocate with only that bit (accumulate-and-apply: no load).
 * An entry whose count reaches HWM is written out and freed.  A miss on a full table evicts
 * every entry with count <= LWM; if none qualifies, one pseudo-random victim.  A write-out is
 * load + OR + store, the store skipped when the word does not change ("redundant").
 */
#ifndef PROSPER_HWMODEL_H
#define PROSPER_HWMODEL_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PROSPER_HW_MAX_ENTRIES 64

struct prosper_hw_config {
	uint32_t table_entries; /* 1..64, default 16 */
	uint32_t hwm;           /* 1..32, default 24 */
	uint32_t lwm;           /* 0..32, default 8 */
	uint32_t log_gran;      /* 3..7, default 3 (8 B) */
	uint64_t seed;          /* random-victim generator; default 0xACE1 */
};

struct prosper_hw_bitmap_ops {
	uint32_t (*load32)(void *ctx, uint64_t addr);
	void (*store32)(void *ctx, uint64_t addr, uint32_t value);
	void *ctx;
};

struct prosper_hw_counters {
	uint64_t stores_seen;       /* every store offered to the model */
	uint64_t stores_tracked;    /* stores overlapping the tracked range while tracking is on */
	uint64_t granules_marked;   /* granule updates applied to the table */
	uint64_t hits, misses;      /* table lookups per granule */
	uint64_t hwm_writeouts;     /* entries written out on reaching HWM */
	uint64_t lwm_evictions;     /* entries evicted at or below LWM on a full table */
	uint64_t random_evictions;  /* full table, nothing at or below LWM */
	uint64_t flush_writeouts;   /* entries written out by a flush */
	uint64_t bitmap_loads, bitmap_stores, redundant_stores;
	uint64_t flushes;
};

struct prosper_hw_entry {
	uint64_t word_addr;
	uint32_t bits;
	uint32_t count;         /* bits set; 0 = free entry */
};

struct prosper_hw {
	struct prosper_hw_config cfg;
	struct prosper_hw_bitmap_ops ops;
	uint64_t track_start, track_end, dirtymap_addr, track_min;
	uint32_t log_gran;      /* the register: 0 = off */
	uint64_t min_seen;      /* lowest tracked address since the last flush (UINT64_MAX: none) */
	uint64_t rng;
	uint64_t issued_loads, issued_stores, completed_loads, completed_stores;
	struct prosper_hw_entry table[PROSPER_HW_MAX_ENTRIES];
	struct prosper_hw_counters c;
};

void prosper_hw_config_default(struct prosper_hw_config *cfg);
/* 0, or -1 if the config is out of range.  Tracking starts off (log_gran register 0). */
int prosper_hw_init(struct prosper_hw *hw, const struct prosper_hw_config *cfg,
		    const struct prosper_hw_bitmap_ops *ops);
/* The registers.  Setting the range or the bitmap does not flush: the OS flushes first. */
void prosper_hw_set_range(struct prosper_hw *hw, uint64_t start, uint64_t end_inclusive);
void prosper_hw_set_dirtymap(struct prosper_hw *hw, uint64_t addr);
void prosper_hw_set_gran(struct prosper_hw *hw, uint32_t log_gran); /* 0 = off, else 3..7 */
/* A store of `size` bytes at `addr` retired. */
void prosper_hw_store(struct prosper_hw *hw, uint64_t addr, uint64_t size);
/* Flush step 1: publish track_min (UINT64_MAX if nothing was tracked), reset the minimum,
 * write out every entry, clear the table. */
void prosper_hw_flush(struct prosper_hw *hw);
/* TRACK_SYNC: 1 when every issued bitmap load and store has completed. */
int prosper_hw_sync(const struct prosper_hw *hw);
/* Bytes of bitmap needed for a range of `bytes` at granularity 2^log_gran (whole 64-bit words). */
uint64_t prosper_hw_bitmap_bytes(uint64_t bytes, uint32_t log_gran);

#ifdef __cplusplus
}
#endif
#endif

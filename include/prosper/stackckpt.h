/* stackckpt.h -- Prosper's OS component for stacks (HPCA 2024 §III-B): SP-aware inspection of
 * the dirty bitmap, and the redo-record log of the two-step commit.
 *
 * Freestanding C (no libc): the supervisor, the Valgrind tool and the simulator share it.
 *
 * Inspection.  The stack's active region is [active_lo, base+len), active_lo = SP - 128 (the
 * red zone), clipped to the region.  Bitmap bit i = granule i = bytes [base + i*G, +G), read as
 * little-endian 64-bit words (the order hwmodel.h defines).  prosper_stack_inspect():
 *   - scans words from active_lo's word to the end, coalescing runs of set bits, also across
 *     word boundaries, and emits each run as (offset from base, length), clipped to
 *     [active_lo, base+len): bytes below SP are dead and never copied;
 *   - clears every word it scanned;
 *   - zeroes, without copying, the words from track_min's word up to active_lo's word (frames
 *     that were written during the interval and popped before its end).
 *
 * Redo-record log (step 1 of the two-step commit; step 2 applies it to the stack image):
 *   log     := header record*
 *   header  := magic u64 ("PSTKLOG1" little-endian) version u32 (2) reserved u32 (0)
 *              epoch u64 nrec u64 used u64 crc u32 reserved u32 (0) pad[16]     (64 bytes)
 *   record  := offset u64 length u32 flags u32 payload zero-pad to 8
 *   flags   := bit 0 ZERO: the record has no payload and stands for `length` zero bytes
 *              (a range that comes back into a region after a shrink); other bits 0.
 *   payload := length bytes, or nothing for a ZERO record
 * `used` counts header and records; `crc` is CRC-32C of the header (crc field zero) and the
 * records.  A log is valid only if magic, version, sizes and crc agree; applying a valid log is
 * idempotent, so recovery may apply the log of the committed epoch again.  Records are applied
 * in log order, so a later record wins where two overlap.
 * Version 2 added ZERO records; a version-1 log is refused (no such log is kept on media).
 *
 * Size: a record takes PROSPER_STACKLOG_RECORD + pad8(length) bytes (16 for a ZERO record).
 * Records of whole 8-byte granules that neither overlap nor touch cover at least 8 bytes of
 * gap each, so records over a range of L bytes take at most 1.5 L + 16 bytes: a log area of
 * 2 L + 128 bytes always holds one interval's records of an L-byte stack (plus a few ZERO
 * records).  Consumers that cannot map the image contiguously read the records with
 * prosper_stacklog_next() and place the bytes themselves.
 */
#ifndef PROSPER_STACKCKPT_H
#define PROSPER_STACKCKPT_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The stack contract: what of a stack is live, written once for the supervisor, the Valgrind
 * tool and the simulator.  The active range is [SP - PROSPER_STACK_RED_ZONE, top): the 128-byte
 * red zone below SP (System V x86-64 ABI) may hold a leaf function's data; below it nothing is
 * live and nothing is saved.  A sub-page copy starts at the active range's granule, a page
 * tracker (Dirtybit) at its page. */
#define PROSPER_STACK_RED_ZONE 128u
#define PROSPER_STACK_PAGE 4096u

/* SP - red zone, clipped to [lo, hi]: the first live byte of a stack in [lo, hi).  Never wraps
 * (an SP within the red zone of address 0 gives lo). */
static inline uint64_t prosper_stack_active_lo(uint64_t sp, uint64_t lo, uint64_t hi)
{
	uint64_t a = sp >= PROSPER_STACK_RED_ZONE ? sp - PROSPER_STACK_RED_ZONE : 0;
	return a < lo ? lo : a > hi ? hi : a;
}

/* The active range's first byte rounded down to a unit (a power of two: a granule, a page),
 * never below lo: where a copy of whole units of [lo, hi) starts. */
static inline uint64_t prosper_stack_active_from(uint64_t sp, uint64_t lo, uint64_t hi, uint64_t unit)
{
	uint64_t a = prosper_stack_active_lo(sp, lo, hi) & ~(unit - 1);
	return a < lo ? lo : a;
}

/* Dirtybit's inspection of a stack in [lo, hi): the pages from the active range's page to the
 * stack's last page (the page-table entries an OS scans), numbered from `origin` (0: absolute page
 * numbers; the stack's base: pages of the stack).  Returns how many; *first gets the first. */
static inline uint64_t prosper_stack_active_pages(uint64_t sp, uint64_t lo, uint64_t hi, uint64_t origin,
						  uint64_t *first)
{
	*first = (prosper_stack_active_lo(sp, lo, hi) - origin) / PROSPER_STACK_PAGE;
	uint64_t last = (hi - 1 - origin) / PROSPER_STACK_PAGE;
	return hi > lo && last >= *first ? last - *first + 1 : 0;
}

/* The granules a store marks in a tracked range [lo, hi] (hi: its last byte): every granule of
 * 1 << log_gran bytes that [addr, addr + size) touches, also when the store crosses a cache line
 * or a granule (the authors' gem5 tracker marked one and dropped split stores), numbered from lo.
 * 0 when the store misses the range; else 1 with *first and *last granules and *from, the first
 * byte of the store inside the range.  The hardware model, the tool's OS-side bookkeeping and its
 * foreign-thread stores all mark with it. */
static inline int prosper_store_granules(uint64_t addr, uint64_t size, uint64_t lo, uint64_t hi, uint32_t log_gran,
					 uint64_t *from, uint64_t *first, uint64_t *last)
{
	if (size == 0)
		return 0;
	uint64_t end = addr + size - 1;
	if (end < addr)
		end = UINT64_MAX; /* wrapped */
	if (end < lo || addr > hi)
		return 0;
	*from = addr < lo ? lo : addr;
	*first = (*from - lo) >> log_gran;
	*last = ((end > hi ? hi : end) - lo) >> log_gran;
	return 1;
}

typedef void (*prosper_stack_emit_fn)(void *ctx, uint64_t offset, uint64_t length);

struct prosper_stack_inspect_stats {
	uint64_t words_scanned;
	uint64_t runs;
	uint64_t granules;      /* set bits in the active region */
	uint64_t bytes;         /* bytes emitted (after clipping) */
	uint64_t words_zeroed;  /* dead-frame words cleared without copying */
};

void prosper_stack_inspect(uint64_t *bitmap, uint64_t nwords, uint64_t base, uint64_t len, uint32_t log_gran,
			   uint64_t active_lo, uint64_t track_min, prosper_stack_emit_fn emit, void *ctx,
			   struct prosper_stack_inspect_stats *stats);

#define PROSPER_STACKLOG_MAGIC 0x31474F4C4B545350ull /* "PSTKLOG1" */
#define PROSPER_STACKLOG_VERSION 2u
#define PROSPER_STACKLOG_HEADER 64u
#define PROSPER_STACKLOG_RECORD 16u  /* record header; the payload follows, padded to 8 */

enum {
	PROSPER_STACKLOG_OK = 0,
	PROSPER_STACKLOG_ENOSPC = -28,
	PROSPER_STACKLOG_EBADMSG = -74,
	PROSPER_STACKLOG_ERANGE = -34,
};

/* Start an empty log for `epoch` in buf[0, cap); cap >= PROSPER_STACKLOG_HEADER. */
void prosper_stacklog_init(void *buf, uint64_t cap, uint64_t epoch);
/* Append a record; ENOSPC if it does not fit (the log is unchanged). */
int prosper_stacklog_append(void *buf, uint64_t cap, uint64_t offset, const void *src, uint32_t len);
/* Append a ZERO record: [offset, offset+len) reads as zero after apply.  ENOSPC as above. */
int prosper_stacklog_append_zero(void *buf, uint64_t cap, uint64_t offset, uint32_t len);
/* Bytes a record with a payload of len bytes takes in the log. */
static inline uint64_t prosper_stacklog_record_bytes(uint32_t len)
{
	return PROSPER_STACKLOG_RECORD + (((uint64_t)len + 7) & ~7ull);
}
/* Compute the checksum: the log is complete. */
void prosper_stacklog_seal(void *buf);
/* 0 if buf holds a sealed, well-formed log within cap (epoch returned), else EBADMSG. */
int prosper_stacklog_check(const void *buf, uint64_t cap, uint64_t *epoch);
/* Apply a checked log to image[0, image_len): ERANGE (nothing written) if a record lies outside. */
int prosper_stacklog_apply(const void *buf, void *image, uint64_t image_len);
uint64_t prosper_stacklog_bytes(const void *buf);
uint64_t prosper_stacklog_records(const void *buf);
/* The epoch the log was started for, and the checksum of a sealed log (it names the log's
 * exact contents: a pool records it in the metadata of the epoch the log belongs to). */
uint64_t prosper_stacklog_epoch(const void *buf);
uint32_t prosper_stacklog_crc(const void *buf);

/* One record of a checked log.  payload is NULL for a ZERO record. */
struct prosper_stacklog_rec {
	uint64_t offset;
	uint32_t length;
	uint32_t zero;           /* 1: length zero bytes, no payload */
	const void *payload;
};
/* Iterate the records of a CHECKED log in order: *cursor = 0 first; returns 1 with *rec
 * filled, or 0 after the last record. */
int prosper_stacklog_next(const void *buf, uint64_t *cursor, struct prosper_stacklog_rec *rec);

#ifdef __cplusplus
}
#endif
#endif

/* redo.c -- redo regions: Prosper's two-step stack commit (HPCA 2024 §III-B, docs/pool-format.md).
 *
 * A redo region has ONE persistent image -- its segments' main slots, always MAIN, like a
 * direct region without backups -- and a LOG: a contiguous run of data slots holding one
 * stack log (include/prosper/stackckpt.h, the same code the Valgrind tool runs).
 *   step 1    prosper_pool_write appends records (offset, length, bytes) to the log for epoch
 *             e+1 and leaves the image alone.  The commit seals the log (tagged e+1,
 *             checksummed), persists it, and writes its checksum into metadata slot
 *             (e+1) & 1 -- all before commit word A.
 *   step 2    after the commit words, prosper_pool_commit applies the records to the image
 *             and persists the ranges it changed.  Only then may the next epoch's first write
 *             start a new log in the same area.
 *   recovery  a log that checks, is tagged with the committed epoch and has the checksum the
 *             committed metadata names is applied again (idempotent).  Anything else in the log
 *             area -- a log of an epoch that never committed, a half-written next log -- is
 *             ignored: its epoch never committed, or the apply it belongs to is durable.
 *
 * Invariants
 *   R1 The image changes only after the commit word of the epoch whose log is applied is
 *      durable.
 *   R2 The committed epoch's log stays intact until its apply is durable (the apply is
 *      drained inside the commit, and a new log is only started by a later write).
 *   R3 Every commit seals the log of every live redo region, also an empty one.  So the log
 *      the committed metadata names was written by the attempt that committed, never left
 *      over from an attempt at the same epoch number that crashed before its commit word.
 *      The checksum in the metadata makes that a checked fact, and salts the log with the
 *      pool's uuid through the metadata's own checksum.
 *   R4 Records are applied in log order, clipped to the region's committed length: bytes
 *      beyond it are no part of the region (a record written before a shrink).  Every byte a
 *      region gains -- all of it when it is added, [old, new) when it grows -- is covered by a
 *      ZERO record appended at that moment, so it reads as zero after the apply even where a
 *      record written before a shrink lies, and new segments need no zero-fill of their own.
 *
 * Size: a log starts at REDO_LOG_FIRST_SLOTS and doubles when a write does not fit, up to
 * ceil((2 * length + 128) / seg_size).  stackckpt.h shows why that always holds one epoch's
 * records of 8-byte granules that neither overlap nor touch; a write that does not fit even
 * then is refused with -ENOSPC and leaves the log as it was.  A shrink of the region keeps the
 * slots the log of the epoch being built already fills; a growth of the log extends the run in
 * place or moves it (the committed epoch's run stays reserved until the commit, like every
 * released slot).  A thread's stack of 8 MiB thus takes 128 slots and one of log, not 385: a
 * program of 400 threads fits a pool of 131072.
 *
 * Space.  A thread's stack is a redo region of 8 MiB of which a few KiB are ever written, and
 * its log is sized for the worst case: 24 MiB of slots per thread.  So neither the log's slots
 * nor the image's are given file space when taken.  A slot gets its space (slot_reserve) when
 * the first record that will write it is appended -- before the commit, so a full file system
 * refuses the write, never the apply after the commit word -- and a ZERO record over a slot
 * known to read as zeros (slot_zero: a hole never written) appends nothing to apply there.
 * Where space is unsure (recovery, after a reopen) the apply reserves before it writes.
 */
#include <errno.h>
#include <string.h>
#include "prosper/stackckpt.h"
#include "pool_internal.h"

/* Records carry at most this many bytes, so a length always fits the record's u32. */
#define REDO_PIECE (1u << 30)
/* The slots a log starts with (64 KiB at the default segment size: a stack's writes of one
 * interval are a few KiB). */
#define REDO_LOG_FIRST_SLOTS 1

static uint32_t slots_of_bytes(const struct prosper_pool *p, uint64_t bytes)
{
	return (uint32_t)((bytes + p->sb.seg_size - 1) / p->sb.seg_size);
}

void redo_log_release(struct prosper_pool *p, struct region *r)
{
	for (uint32_t i = 0; r->log_slot != POOL_SLOT_NONE && i < r->log_slots; i++)
		slot_release(p, r->log_slot + i);
	r->log_slot = POOL_SLOT_NONE;
	r->log_slots = 0;
	r->log_begun = false;
}

/* log_reserve -- file space for bytes [from, to) of the log whose run starts at slot `at`, before
 * they are written. */
static int log_reserve(struct prosper_pool *p, uint32_t at, uint64_t from, uint64_t to)
{
	for (uint64_t k = from / p->sb.seg_size; from < to && k <= (to - 1) / p->sb.seg_size; k++) {
		int rc = slot_reserve(p, at + (uint32_t)k);
		if (rc)
			return rc;
	}
	return 0;
}

/* log_grow -- the log of r, `want` slots long (more than now): extended in place, or moved to a
 * new run with the records of the epoch being built (they are not durable yet: the commit
 * persists the log where the metadata will name it).  The committed epoch's run stays reserved
 * until the commit, like every released slot. */
static int log_grow(struct prosper_pool *p, struct region *r, uint32_t want)
{
	uint32_t first;
	if (slot_alloc_run(p, want - r->log_slots, r->log_slot + r->log_slots, &first) == 0) {
		r->log_slots = want; /* extended in place */
		return 0;
	}
	if (slot_alloc_run(p, want, POOL_SLOT_NONE, &first))
		return pool_err(-ENOSPC, "no run of %u free segments for the redo log of region %s", want, r->info.name);
	uint64_t used = r->log_begun ? prosper_stacklog_bytes(redo_log(p, r)) : 0;
	int rc = log_reserve(p, first, 0, used > PROSPER_STACKLOG_HEADER ? used : PROSPER_STACKLOG_HEADER);
	if (rc) {
		for (uint32_t i = 0; i < want; i++)
			slot_release(p, first + i);
		return rc;
	}
	if (r->log_begun)
		memcpy(slot_addr(p, first), redo_log(p, r), used);
	for (uint32_t i = 0; i < r->log_slots; i++)
		slot_release(p, r->log_slot + i);
	r->log_slot = first;
	r->log_slots = want;
	return 0;
}

int redo_log_fit(struct prosper_pool *p, struct region *r, uint64_t length)
{
	uint32_t most = redo_log_slots_for(&p->sb, length), first;
	if (r->log_slot == POOL_SLOT_NONE) {
		uint32_t want = most < REDO_LOG_FIRST_SLOTS ? most : REDO_LOG_FIRST_SLOTS;
		if (slot_alloc_run(p, want, POOL_SLOT_NONE, &first))
			return pool_err(-ENOSPC, "no run of %u free segments for the redo log of region %s", want,
					r->info.name);
		/* the header's slot now: every commit seals the log (R3) */
		int rc = log_reserve(p, first, 0, PROSPER_STACKLOG_HEADER);
		if (rc) {
			for (uint32_t i = 0; i < want; i++)
				slot_release(p, first + i);
			return rc;
		}
		r->log_slot = first;
		r->log_slots = want;
		return 0;
	}
	/* A log longer than the worst case of the new length shrinks to it, but never below what
	 * the log of the epoch being built holds; a shorter one grows as it is written (append). */
	uint64_t used = r->log_begun ? prosper_stacklog_bytes(redo_log(p, r)) : 0;
	uint32_t keep = most > slots_of_bytes(p, used) ? most : slots_of_bytes(p, used);
	for (uint32_t i = keep; i < r->log_slots; i++)
		slot_release(p, r->log_slot + i);
	if (keep < r->log_slots)
		r->log_slots = keep;
	return 0;
}

/* begin -- the first record of the epoch being built starts a new log over the committed
 * epoch's one, whose apply is durable since the commit returned (R2). */
static void begin(struct prosper_pool *p, struct region *r)
{
	if (!r->log_begun) {
		prosper_stacklog_init(redo_log(p, r), redo_log_cap(p, r), p->epoch + 1);
		r->log_begun = true;
	}
}

static int full(struct prosper_pool *p, struct region *r, uint64_t off, uint64_t len, uint64_t need)
{
	uint64_t used = prosper_stacklog_bytes(redo_log(p, r));
	return pool_err(-ENOSPC,
			"redo log of region %s is full: %llu of %llu bytes used, [%llu, +%llu) needs %llu more "
			"(the log holds twice the region's length; writes of one epoch must not overlap)",
			r->info.name, (unsigned long long)used, (unsigned long long)redo_log_cap(p, r),
			(unsigned long long)off, (unsigned long long)len, (unsigned long long)need);
}

/* image_reserve -- file space for the image's slots a record over [off, off+len) writes at its
 * apply: all of them for data, those not known to read as zeros for a ZERO record. */
static int image_reserve(struct prosper_pool *p, const struct region *r, uint64_t off, uint64_t len, int zero)
{
	uint64_t seg = p->sb.seg_size;
	for (uint64_t k = off / seg; len && k <= (off + len - 1) / seg && k < r->nsegs; k++) {
		uint32_t slot = r->segs[k].main_slot;
		if (zero && p->slot_zero[slot])
			continue;
		int rc = slot_reserve(p, slot);
		if (rc)
			return rc;
	}
	return 0;
}

/* append -- records for [off, off+len) (src NULL: ZERO records), all or none. */
static int append(struct prosper_pool *p, struct region *r, uint64_t off, const uint8_t *src, uint64_t len)
{
	begin(p, r);
	uint8_t *log = redo_log(p, r);
	uint64_t cap = redo_log_cap(p, r), need = 0, used = prosper_stacklog_bytes(log);
	for (uint64_t done = 0; done < len; done += REDO_PIECE) {
		uint32_t n = len - done < REDO_PIECE ? (uint32_t)(len - done) : REDO_PIECE;
		need += src ? prosper_stacklog_record_bytes(n) : PROSPER_STACKLOG_RECORD;
	}
	if (need > cap - used) {
		/* grow: to twice its slots, or what this write needs, up to the worst case */
		uint32_t most = redo_log_slots_for(&p->sb, (uint64_t)r->nsegs * p->sb.seg_size);
		uint32_t want = slots_of_bytes(p, used + need);
		want = want > 2 * r->log_slots ? want : 2 * r->log_slots;
		want = want < most ? want : most;
		if (want <= r->log_slots)
			return full(p, r, off, len, need);
		int rc = log_grow(p, r, want);
		if (rc)
			return rc;
		log = redo_log(p, r);
		cap = redo_log_cap(p, r);
		if (need > cap - used)
			return full(p, r, off, len, need); /* grown to its worst case, and still short */
	}
	int rc = log_reserve(p, r->log_slot, used, used + need);
	if (!rc)
		rc = image_reserve(p, r, off, len, !src);
	if (rc)
		return rc; /* space taken stays with the slots: the log is as it was */
	for (uint64_t done = 0; done < len; done += REDO_PIECE) {
		uint32_t n = len - done < REDO_PIECE ? (uint32_t)(len - done) : REDO_PIECE;
		if (src)
			prosper_stacklog_append(log, cap, off + done, src + done, n);
		else
			prosper_stacklog_append_zero(log, cap, off + done, n);
	}
	return 0;
}

int redo_write(struct prosper_pool *p, struct region *r, uint64_t off, const void *src, uint64_t len)
{
	int rc = append(p, r, off, src, len);
	if (!rc)
		p->stats.data_bytes += len;
	return rc;
}

int redo_zero(struct prosper_pool *p, struct region *r, uint64_t off, uint64_t len)
{
	return append(p, r, off, NULL, len);
}

void redo_seal(struct prosper_pool *p, struct region *r)
{
	begin(p, r);
	uint8_t *log = redo_log(p, r);
	prosper_stacklog_seal(log);
	r->log_crc = prosper_stacklog_crc(log);
	p->stats.redo_bytes += prosper_stacklog_bytes(log);
	p->stats.redo_records += prosper_stacklog_records(log);
}

int redo_apply_copy(struct prosper_pool *p, struct region *r)
{
	const uint8_t *log = redo_log(p, r);
	uint64_t seg = p->sb.seg_size, length = r->info.length, cur = 0;
	uint32_t bs = p->sb.block_size;
	struct prosper_stacklog_rec rec;
	while (prosper_stacklog_next(log, &cur, &rec)) {
		if (rec.offset >= length)
			continue; /* R4: written before a shrink */
		uint64_t len = rec.length < length - rec.offset ? rec.length : length - rec.offset;
		for (uint64_t done = 0; done < len;) {
			uint64_t off = rec.offset + done;
			struct seg *s = &r->segs[off / seg];
			uint64_t o = off % seg, n = seg - o < len - done ? seg - o : len - done;
			done += n;
			if (rec.zero && p->slot_zero[s->main_slot])
				continue; /* a hole never written: zeros already */
			int rc = slot_reserve(p, s->main_slot); /* reserved at the append, but for recovery */
			if (rc)
				return rc;
			p->slot_zero[s->main_slot] = 0;
			uint8_t *dst = slot_addr(p, s->main_slot) + o;
			if (rec.zero)
				memset(dst, 0, n);
			else
				memcpy(dst, (const uint8_t *)rec.payload + done - n, n);
			for (uint64_t b = o / bs; b <= (o + n - 1) / bs; b++)
				bm_set(s->dirty, (uint32_t)b);
		}
	}
	return 0;
}

void redo_apply_flush(struct prosper_pool *p, struct region *r, int site)
{
	for (uint32_t k = 0; k < r->nsegs; k++) {
		struct seg *s = &r->segs[k];
		flush_runs(p, site, slot_addr(p, s->main_slot), s->dirty);
		memset(s->dirty, 0, bitmap_words(p) * 8);
	}
}

int redo_log_is_committed(const struct prosper_pool *p, const struct region *r)
{
	const uint8_t *log = redo_log(p, r);
	uint64_t tag;
	if (prosper_stacklog_check(log, redo_log_cap(p, r), &tag) != 0 || tag != p->epoch)
		return 0;
	return prosper_stacklog_crc(log) == r->log_crc ? 1 : -1;
}

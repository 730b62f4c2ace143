// machine.h -- prosper-sim's timing model: one in-order core, three cache levels, DRAM and NVM.
//
// Notes (the model's assumptions; constants and their sources are in sim/config/timing.conf):
//   - In-order core at core_ghz, `cpi` cycles per instruction when nothing stalls.  The clock
//     is advanced by the trace's instruction deltas; memory adds stalls on top.
//   - Loads stall for the latency of the level that hits (L1/L2/L3 hit cycles, or the memory's
//     read latency plus queueing behind earlier reads of the same memory).  Load-use latency is
//     fully exposed: no overlap, no prefetching.
//   - Stores retire into a store buffer of `store_buffer` entries; an entry is held until its
//     line is in L1 (the fill latency as for a load).  The core stalls only when the buffer is
//     full.  Stores are write-allocate.
//   - Caches (Table II): L1/L2/L3 set-associative with true LRU, 64 B lines, write-back.  Fills go
//     into every level (mostly inclusive, no back-invalidation); a dirty victim is written into
//     the next level, and from L3 to the memory its line belongs to.  One core: no coherence.
//   - Memories: a read channel and a write channel per memory, each a bandwidth pipe (line_bytes
//     per line / GB/s).  Reads take priority over queued writes (read-first scheduling), so they
//     only wait for earlier reads.  Writes enter a write queue of nvm_write_buffer lines (NVM;
//     DRAM uses the same depth); the core stalls when a write finds the queue full.  A write is
//     durable write_ns after it leaves the queue.
//   - clwb writes a dirty line back (keeping it cached) and costs clwb_cycles to issue; sfence
//     waits until every write issued so far is durable.  Only the memory-side effect of a flush
//     is modelled, not its cache-coherence traffic.
//   - Bulk copies by the OS at interval ends (checkpoint copies) stream without polluting the
//     caches: lines are read from the source's read channel and pushed into the destination's
//     write queue; the core waits for the last one (the caller then fences).
//   - Background traffic (the Prosper tracker's bitmap loads/stores) goes through the caches and
//     the memory channels, but does not stall the core: the hardware issues it off the pipeline.
//   - This is a model for comparing mechanisms, calibrated from published constants; it does
//     not claim cycle accuracy.
#pragma once
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <vector>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "config.h"

namespace prosper::sim {

enum Mem : uint8_t { kDram = 0, kNvm = 1 };

// The counters every mechanism reports (`prosper sim` prints them).
struct Stats {
	uint64_t nvm_write_bytes = 0;   // bytes written to NVM media (line write-backs, copies, logs)
	uint64_t flushes = 0;           // clwb instructions
	uint64_t fences = 0;            // sfence instructions
	uint64_t checkpoint_bytes = 0;  // payload copied by checkpoints / commits / log applies
	uint64_t log_bytes = 0;         // log records written (undo, redo, Romulus)
	uint64_t bitmap_loads = 0, bitmap_stores = 0;  // Prosper tracker traffic
	uint64_t checkpoints = 0;       // interval ends handled
	double checkpoint_cycles = 0;   // time the core spent in interval ends (the mechanisms' checkpoints/commits)
	uint64_t consolidations = 0;    // SSP: pages merged
	uint64_t llc_misses = 0;        // lines filled from memory (HSCC counts them per page)
	uint64_t pages_migrated = 0, pages_written_back = 0;  // HSCC: NVM->DRAM, dirty DRAM->NVM
	double scan_cycles = 0, select_cycles = 0, copy_cycles = 0;  // HSCC: OS migration time by step
};

// Cache -- one set-associative level with true LRU.  Lines are numbered (address / line size).
//
// Each set is one block of host memory (three adjacent host cache lines), so that a lookup
// touches two or three adjacent lines rather than one line in each of four arrays:
//   low[16]    the low 32 bits of each way's tag (line + 1; 0 = empty), what a lookup compares,
//   rank[16]   the way's LRU rank: 0 = most recently used ... ways-1 = the victim,
//   flags[16]  kDirty | kNvmFlag,
//   high[16]   the high 32 bits of the tag, read only to confirm a candidate.
// At most 16 ways (kMaxWays), the associativity of every cache in Table II and of common
// hardware; lanes past `ways` look like empty ways (tag 0, never matched: a line's tag is never
// 0) with rank 127, which is never the victim's and never changes.  The ranks of a set are
// always a permutation of 0..ways-1: a hit moves its way to 0 and ages every way that was
// younger by one; the victim is the way of rank ways-1.  A new cache's ranks are ways-1-w, so
// empty ways are filled in order from way 0.  Sixteen ranks are one 16-byte vector and sixteen
// tags four: a hit, an age update and a victim search are a few vector operations each (SSE2
// on x86-64; plain loops elsewhere, same results).
class Cache {
public:
	struct Victim {
		uint64_t line;
		bool valid, dirty;
		Mem mem;
	};
	static constexpr unsigned kMaxWays = 16;
	// Throws ConfigError unless 1 <= ways <= kMaxWays.
	Cache(uint64_t bytes, unsigned ways, unsigned line_bytes);
	// The slot (set * 16 + way) holding `line`, made most recently used; or -1.
	int find(uint64_t line)
	{
		uint64_t set = line & set_mask_, key = line + 1;
		Set &s = sets_[set];
		for (uint32_t c = equal16(s.low, static_cast<uint32_t>(key)); c; c &= c - 1) {
			unsigned w = static_cast<unsigned>(std::countr_zero(c));
			if (s.high[w] == static_cast<uint32_t>(key >> 32)) {
				make_youngest(s, w);
				return static_cast<int>(set * kLanes + w);
			}
		}
		return -1;
	}
	void touch(int slot) { make_youngest(set_of(slot), way_of(slot)); }
	bool dirty(int slot) const { return flag(slot) & kDirty; }
	void set_dirty(int slot, bool d)
	{
		uint8_t &f = flag(slot);
		f = static_cast<uint8_t>((f & ~kDirty) | (d ? kDirty : 0));
	}
	Mem mem(int slot) const { return (flag(slot) & kNvmFlag) ? kNvm : kDram; }
	// insert a line that is not present, as the most recently used; returns what it displaced
	Victim insert(uint64_t line, bool dirty, Mem mem)
	{
		uint64_t set = line & set_mask_, key = line + 1;
		Set &s = sets_[set];
		unsigned w = victim(s);
		uint64_t old = (static_cast<uint64_t>(s.high[w]) << 32) | s.low[w];
		uint8_t f = s.flags[w];
		s.low[w] = static_cast<uint32_t>(key);
		s.high[w] = static_cast<uint32_t>(key >> 32);
		s.flags[w] = static_cast<uint8_t>((dirty ? kDirty : 0) | (mem == kNvm ? kNvmFlag : 0));
		make_youngest(s, w);
		inserted_ = static_cast<int>(set * kLanes + w);
		return Victim{old - 1, old != 0, (f & kDirty) != 0, (f & kNvmFlag) ? kNvm : kDram};
	}
	int inserted_slot() const { return inserted_; }  // where the last insert() put its line

private:
	static constexpr unsigned kLanes = 16;
	static constexpr uint8_t kDirty = 1, kNvmFlag = 2;
	static constexpr int8_t kPadRank = 127;
	struct alignas(64) Set {
		alignas(16) uint32_t low[kLanes];
		alignas(16) int8_t rank[kLanes];
		uint8_t flags[kLanes];
		uint32_t high[kLanes];
	};
	// A slot is set * kLanes + way.
	Set &set_of(int slot) { return sets_[static_cast<unsigned>(slot) / kLanes]; }
	const Set &set_of(int slot) const { return sets_[static_cast<unsigned>(slot) / kLanes]; }
	static unsigned way_of(int slot) { return static_cast<unsigned>(slot) % kLanes; }
	uint8_t &flag(int slot) { return set_of(slot).flags[way_of(slot)]; }
	uint8_t flag(int slot) const { return set_of(slot).flags[way_of(slot)]; }
	// Bit i set where low[i] == key.
	static uint32_t equal16(const uint32_t *low, uint32_t key)
	{
#ifdef __SSE2__
		const __m128i k = _mm_set1_epi32(static_cast<int>(key));
		const __m128i *v = reinterpret_cast<const __m128i *>(low);
		__m128i a = _mm_packs_epi32(_mm_cmpeq_epi32(_mm_load_si128(v), k), _mm_cmpeq_epi32(_mm_load_si128(v + 1), k));
		__m128i b = _mm_packs_epi32(_mm_cmpeq_epi32(_mm_load_si128(v + 2), k), _mm_cmpeq_epi32(_mm_load_si128(v + 3), k));
		return static_cast<uint32_t>(_mm_movemask_epi8(_mm_packs_epi16(a, b)));
#else
		uint32_t m = 0;
		for (unsigned i = 0; i < kLanes; i++)
			m |= static_cast<uint32_t>(low[i] == key) << i;
		return m;
#endif
	}
	// Way w becomes rank 0; every way younger than it ages by one.
	static void make_youngest(Set &s, unsigned w)
	{
		const int8_t r = s.rank[w];
		if (r == 0)
			return;
#ifdef __SSE2__
		__m128i *p = reinterpret_cast<__m128i *>(s.rank);
		__m128i v = _mm_load_si128(p);
		v = _mm_sub_epi8(v, _mm_cmplt_epi8(v, _mm_set1_epi8(r)));  // younger: +1 (the compare gives -1)
		const __m128i self = _mm_cmpeq_epi8(_mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
						    _mm_set1_epi8(static_cast<char>(w)));
		_mm_store_si128(p, _mm_andnot_si128(self, v));
#else
		for (unsigned i = 0; i < kLanes; i++)
			s.rank[i] = static_cast<int8_t>(s.rank[i] < r ? s.rank[i] + 1 : s.rank[i]);
		s.rank[w] = 0;
#endif
	}
	unsigned victim(const Set &s) const
	{
#ifdef __SSE2__
		const __m128i v = _mm_load_si128(reinterpret_cast<const __m128i *>(s.rank));
		uint32_t m = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(static_cast<char>(ways_ - 1)))));
		return static_cast<unsigned>(std::countr_zero(m));
#else
		unsigned w = 0;
		while (s.rank[w] != static_cast<int8_t>(ways_ - 1))
			w++;
		return w;
#endif
	}
	unsigned ways_;
	uint64_t set_mask_;
	int inserted_ = -1;
	std::vector<Set> sets_;
};

class Machine {
public:
	explicit Machine(const Config &cfg);
	double now = 0;  // core cycles
	Stats stats;

	// The core executes `n` instructions with no stalls.
	void run_instructions(uint64_t n) { now += n * cpi_; }
	// A load or store of `size` bytes at `addr`, which lives in `mem`.
	void access(uint64_t addr, uint32_t size, bool store, Mem mem)
	{
		uint64_t first = addr >> line_shift_, last = (addr + size - 1) >> line_shift_;
		for (uint64_t l = first; l <= last; l++)
			access_line(l, store, mem);
	}
	// Off the core's critical path (caches and channels see it; the clock does not move).
	void background_access(uint64_t addr, uint32_t size, bool store, Mem mem)
	{
		double t = now;
		access(addr, size, store, mem);
		now = t;
	}
	// Write the line back if it is dirty anywhere (its only dirty copy: see fill()).
	void clwb(uint64_t addr)
	{
		uint64_t line = addr >> line_shift_;
		stats.flushes++;
		now += clwb_cycles_;
		int s = l1_lookup(line);
		if (s < 0)
			clwb_below_l1(line);
		else if (c1_.dirty(s)) {
			c1_.set_dirty(s, false);
			write_line(c1_.mem(s));
		}
	}
	void clwb_range(uint64_t addr, uint64_t bytes)
	{
		if (!bytes)
			return;
		for (uint64_t l = addr >> line_shift_; l <= (addr + bytes - 1) >> line_shift_; l++)
			clwb(l << line_shift_);
	}
	void sfence()
	{
		stats.fences++;
		now = std::max(now + sfence_cycles_, durable_);
	}
	// OS copy of `bytes` from `from` to `to` memory, not through the caches (see Notes).
	void bulk_copy(uint64_t bytes, Mem from, Mem to);
	// Software work of `cycles`, or of an OS event of `ns` nanoseconds.
	void compute(double cycles) { now += cycles; }
	void os_ns(double ns) { now += ns * ghz_; }
	// A line written straight to a memory's write queue (hardware logs), e.g. Romulus' log.
	void write_line(Mem mem)
	{
		Channel &c = ch_[mem];
		double start = std::max(now, c.write_busy);
		c.write_busy = start + c.write_cycles;
		if (c.write_busy - now > c.queue_cycles)  // queue full: the core waits for a slot
			now = c.write_busy - c.queue_cycles;
		durable_ = std::max(durable_, c.write_busy + c.write_latency);
		if (mem == kNvm)
			stats.nvm_write_bytes += line_bytes_;
	}
	// A clwb of a dirty line of `mem` that the core waits on until the line is durable: what a
	// blocking core pays for each line the Prosper artifact's gemOS "flushes" (ssp_gemos.cc).
	void clwb_dirty_wait(Mem mem)
	{
		stats.flushes++;
		now += clwb_cycles_;
		write_line(mem);
		now = std::max(now, ch_[mem].write_busy + ch_[mem].write_latency);
	}
	double ghz() const { return ghz_; }
	unsigned line_bytes() const { return line_bytes_; }

private:
	struct Channel {
		double read_busy = 0, write_busy = 0;
		double read_cycles, write_cycles;   // occupancy per line
		double read_latency, write_latency; // cycles
		double queue_cycles;                // write-queue depth in cycles of occupancy
	};
	// The hot path (an L1 hit, the store buffer) is inline; a miss goes to fill().
	void access_line(uint64_t line, bool store, Mem mem)
	{
		double latency;
		int slot = l1_lookup(line);
		if (slot >= 0)
			latency = l1_;
		else
			slot = fill(line, mem, latency);
		if (!store) {
			now += latency;
			return;
		}
		c1_.set_dirty(slot, true);
		double &oldest = sb_[sb_head_];
		if (oldest > now)  // store buffer full: wait for its oldest entry
			now = oldest;
		oldest = now + latency;
		if (++sb_head_ == sb_.size())  // no division on the hot path
			sb_head_ = 0;
	}
	// An L1 miss: the line comes from L2, L3 or memory into L1; returns its L1 slot and the
	// access's latency.
	int fill(uint64_t line, Mem mem, double &latency);
	void clwb_below_l1(uint64_t line);
	double read_line(Mem mem);  // stall cycles of a line fill from memory
	// A victim of `level` (1..3), if dirty, goes one level down: into a copy there, or as a new
	// line whose own dirty victim goes further, and from L3 to its memory.
	void writeback(Cache::Victim v, int level)
	{
		for (; v.valid && v.dirty; level++) {
			if (level == 3) {
				write_line(v.mem);
				return;
			}
			Cache &next = level == 1 ? c2_ : c3_;
			int s = next.find(v.line);
			if (s >= 0) {
				next.set_dirty(s, true);
				return;
			}
			v = next.insert(v.line, true, v.mem);
		}
	}

	double ghz_, cpi_;
	unsigned line_bytes_, line_shift_;
	double l1_, l2_, l3_, clwb_cycles_, sfence_cycles_;
	Cache c1_, c2_, c3_;
	Channel ch_[2];
	double durable_ = 0;  // when every write issued so far is durable
	std::vector<double> sb_;  // store buffer: completion time of each entry (ring)
	size_t sb_head_ = 0;
	// L1 fast path: the lines of the last two accesses and their slots (a program's data line
	// and a log line alternate in the logging mechanisms).  memo_line_[0] is the most recent.
	uint64_t memo_line_[2] = {~0ull, ~0ull};
	int memo_slot_[2] = {-1, -1};
	int l1_lookup(uint64_t line)
	{
		if (line == memo_line_[0])
			return memo_slot_[0];  // nothing intervened: LRU order unchanged
		if (line == memo_line_[1]) {
			c1_.touch(memo_slot_[1]);
			remember(line, memo_slot_[1]);
			return memo_slot_[0];
		}
		return l1_find(line);
	}
	int l1_find(uint64_t line);  // l1_lookup past the remembered lines
	void remember(uint64_t line, int slot)
	{
		if (line != memo_line_[0]) {
			memo_line_[1] = memo_line_[0];
			memo_slot_[1] = memo_slot_[0];
		}
		memo_line_[0] = line;
		memo_slot_[0] = slot;
	}
	void forget_slot(int slot)  // an L1 slot was refilled with another line
	{
		for (int i = 0; i < 2; i++)
			if (memo_slot_[i] == slot)
				memo_line_[i] = ~0ull;
	}
};

}  // namespace prosper::sim

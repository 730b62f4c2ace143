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
	uint64_t consolidations = 0;    // SSP: pages merged
	uint64_t llc_misses = 0;        // lines filled from memory (HSCC counts them per page)
	uint64_t pages_migrated = 0, pages_written_back = 0;  // HSCC: NVM->DRAM, dirty DRAM->NVM
	double scan_cycles = 0, select_cycles = 0, copy_cycles = 0;  // HSCC: OS migration time by step
};

// Cache -- one set-associative level with true LRU.  Lines are numbered (address / line size).
// Tags, LRU stamps and flags are separate arrays so that a lookup reads only the low 32 bits of
// the tags (one host cache line per 16-way set; the full tag is read only to confirm a candidate)
// and a victim search only stamps.  The common sizes (8 and 16 ways) compare four ways per
// vector operation (GCC/Clang vector extensions: SSE2 on baseline x86-64).
class Cache {
public:
	struct Victim {
		uint64_t line;
		bool valid, dirty;
		Mem mem;
	};
	Cache(uint64_t bytes, unsigned ways, unsigned line_bytes);
	// index of the way holding `line`, or -1
	int find(uint64_t line)
	{
		uint64_t base = (line & set_mask_) * ways_;
		int w = ways_ == 16 ? match<16>(base, line + 1) : ways_ == 8 ? match<8>(base, line + 1) : match(base, line + 1);
		if (w < 0)
			return -1;
		touch(static_cast<int>(base + w));
		return static_cast<int>(base + w);
	}
	void touch(int slot)
	{
		if (++clock_ == 0)
			renumber();
		stamp_[slot] = clock_;
	}
	bool dirty(int slot) const { return flags_[slot] & kDirty; }
	void set_dirty(int slot, bool d) { flags_[slot] = static_cast<uint8_t>((flags_[slot] & ~kDirty) | (d ? kDirty : 0)); }
	Mem mem(int slot) const { return (flags_[slot] & kNvmFlag) ? kNvm : kDram; }
	// insert a line that is not present; returns what it displaced
	Victim insert(uint64_t line, bool dirty, Mem mem);
	void renumber();
	int inserted_slot() const { return inserted_; }  // where the last insert() put its line

private:
	static constexpr uint8_t kDirty = 1, kNvmFlag = 2;
	using U32x4 = uint32_t __attribute__((vector_size(16)));
	static U32x4 load4(const uint32_t *p)
	{
		U32x4 v;
		std::memcpy(&v, p, sizeof v);
		return v;
	}
	// Bit w set where v[w] == key, for w < W: every way compared, no early exit (no branch
	// to mispredict).
	template <unsigned W>
	static uint32_t equal_mask(const uint32_t *v, uint32_t key)
	{
		static_assert(W % 4 == 0);
		const U32x4 k = {key, key, key, key};
		U32x4 acc = {0, 0, 0, 0};
#pragma GCC unroll 4
		for (unsigned i = 0; i < W; i += 4) {
			const U32x4 bits = {1u << i, 2u << i, 4u << i, 8u << i};
			acc |= reinterpret_cast<U32x4>(load4(v + i) == k) & bits;
		}
		using U64x2 = uint64_t __attribute__((vector_size(16)));
		U64x2 pairs = reinterpret_cast<U64x2>(acc);
		uint64_t both = pairs[0] | pairs[1];
		return static_cast<uint32_t>(both | both >> 32);
	}
	// The way of the set at `base` whose tag is `key` (tags of a set are distinct), or -1:
	// candidates by their low 32 bits, confirmed by the full tag.
	template <unsigned W>
	int match(uint64_t base, uint64_t key) const
	{
		for (uint32_t c = equal_mask<W>(&tag_low_[base], static_cast<uint32_t>(key)); c; c &= c - 1) {
			int w = std::countr_zero(c);
			if (tag_[base + w] == key)
				return w;
		}
		return -1;
	}
	int match(uint64_t base, uint64_t key) const
	{
		for (unsigned w = 0; w < ways_; w++)
			if (tag_[base + w] == key)
				return static_cast<int>(w);
		return -1;
	}
	// The first way holding the smallest stamp (the LRU victim; never-used ways have stamp 0).
	template <unsigned W>
	static unsigned oldest(const uint32_t *st)
	{
		U32x4 m = load4(st);
#pragma GCC unroll 4
		for (unsigned i = 4; i < W; i += 4) {
			U32x4 v = load4(st + i);
			U32x4 less = reinterpret_cast<U32x4>(v < m);
			m = (v & less) | (m & ~less);
		}
		uint32_t a = m[0] < m[1] ? m[0] : m[1], b = m[2] < m[3] ? m[2] : m[3];
		return static_cast<unsigned>(std::countr_zero(equal_mask<W>(st, a < b ? a : b)));
	}
	static unsigned oldest(const uint32_t *st, unsigned ways)
	{
		uint32_t m = st[0];
		for (unsigned w = 1; w < ways; w++)
			m = st[w] < m ? st[w] : m;
		unsigned v = 0;
		while (st[v] != m)
			v++;
		return v;
	}
	unsigned ways_;
	uint64_t set_mask_;
	uint32_t clock_ = 0;
	int inserted_ = -1;
	std::vector<uint64_t> tag_;       // line + 1 (0 = empty)
	std::vector<uint32_t> tag_low_;   // the low 32 bits of tag_, what a lookup compares first
	std::vector<uint32_t> stamp_;     // LRU age; 0 = never used (wraps after 2^32: renumbered)
	std::vector<uint8_t> flags_;      // kDirty | kNvmFlag
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
	void writeback(const Cache::Victim &v, int level);

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

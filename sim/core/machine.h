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
#include <bit>
#include <cstdint>
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
// Tags, LRU stamps and flags are separate arrays so that a lookup reads only tags (one or two
// host cache lines per set) and a victim search only stamps.
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
		const uint64_t *t = &tag_[base];
		int w = ways_ == 16 ? match<16>(t, line + 1) : ways_ == 8 ? match<8>(t, line + 1) : match(t, line + 1, ways_);
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
	// The way whose tag is `key` (tags of a set are distinct), or -1.  Every way is compared,
	// without an early exit: no branch to mispredict, and the common sizes unroll.
	template <unsigned W>
	static int match(const uint64_t *t, uint64_t key)
	{
		uint32_t hits = 0;
#pragma GCC unroll 16
		for (unsigned w = 0; w < W; w++)
			hits |= static_cast<uint32_t>(t[w] == key) << w;
		return hits ? std::countr_zero(hits) : -1;
	}
	static int match(const uint64_t *t, uint64_t key, unsigned ways)
	{
		for (unsigned w = 0; w < ways; w++)
			if (t[w] == key)
				return static_cast<int>(w);
		return -1;
	}
	// The first way holding the smallest stamp (the LRU victim; never-used ways have stamp 0).
	template <unsigned W>
	static unsigned oldest(const uint32_t *st)
	{
		uint32_t m = st[0];
#pragma GCC unroll 16
		for (unsigned w = 1; w < W; w++)
			m = st[w] < m ? st[w] : m;
		uint32_t at = 0;
#pragma GCC unroll 16
		for (unsigned w = 0; w < W; w++)
			at |= static_cast<uint32_t>(st[w] == m) << w;
		return static_cast<unsigned>(std::countr_zero(at));
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
	std::vector<uint64_t> tag_;    // line + 1 (0 = empty)
	std::vector<uint32_t> stamp_;  // LRU age; 0 = never used (wraps after 2^32: renumbered)
	std::vector<uint8_t> flags_;   // kDirty | kNvmFlag
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
	void clwb(uint64_t addr);             // write the line back if it is dirty anywhere
	void clwb_range(uint64_t addr, uint64_t bytes);
	void sfence();
	// OS copy of `bytes` from `from` to `to` memory, not through the caches (see Notes).
	void bulk_copy(uint64_t bytes, Mem from, Mem to);
	// Software work of `cycles`, or of an OS event of `ns` nanoseconds.
	void compute(double cycles) { now += cycles; }
	void os_ns(double ns) { now += ns * ghz_; }
	// A line written straight to a memory's write queue (hardware logs), e.g. Romulus' log.
	void write_line(Mem mem);
	double ghz() const { return ghz_; }
	unsigned line_bytes() const { return line_bytes_; }

private:
	struct Channel {
		double read_busy = 0, write_busy = 0;
		double read_cycles, write_cycles;   // occupancy per line
		double read_latency, write_latency; // cycles
		double queue_cycles;                // write-queue depth in cycles of occupancy
	};
	void access_line(uint64_t line, bool store, Mem mem);
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
		int s = c1_.find(line);
		if (s >= 0)
			remember(line, s);
		return s;
	}
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

// pt_rebuild_list.cc -- Kindle's "rebuild" scheme as its public artifact builds it (gemOS of
// the Kindle repository, process_persistence/gemOS_rebuild): page tables in DRAM, and in NVM a
// virtual->NVM page list searched linearly.  The paper says only that the list is brought up to
// date "by traversing the page table" at every checkpoint; what follows is what that code does,
// and it is why Kindle's rebuild costs 2.4-74x persistent (docs/sim.md, "The page-table study").
//
// The list (every node a 64-byte chunk of NVM, allocated in order from the kernel's chunk
// allocator): a level-one list of one node per 2 MiB of address space, in the order the 2 MiB
// blocks were first listed, each with its own list of page entries {page, NVM frame, flags} in
// the order the pages were listed.  A lookup of a page walks the level-one list from its head
// and, at its block's node, that block's entries from their head; it does not stop at its block
// when the page is missing, so a miss visits every level-one node (and every entry of its block
// if the block is listed).  Entries are never removed: an unmapped page keeps its entry.
//
// At every checkpoint (timer-driven, ptstudy.cc) the scheme charges, in this order:
//   1. update: for every page of every mapped area, a software lookup of its PTE
//      (pte_scan_cycles; the four loads of the walk through the caches when it is present).  A
//      present page already listed is looked up twice (is it listed, then get its entry to
//      compare its flags); one not listed is looked up once (a miss), then appended: a search
//      of the level-one list for its block (or a new block node appended), a node allocation,
//      the entry's store, and each node written flushed as the artifact does it (sfence, clflush
//      of the node's line, sfence).
//   2. resume: the artifact times a full resume at every checkpoint (end_checkpoint calls
//      resume_persistent_processes), which for rebuild builds a fresh set of DRAM tables: for
//      every page of every area a lookup (listed: found, then the PTE written into the fresh
//      tables, missing table pages zeroed; not listed: a miss).  resume_cycles() is the same
//      pass on a fresh Machine.
// An unmap looks every page of its range up once (the artifact's munmap does, and keeps the
// entry).  Map and unmap otherwise cost what they cost every scheme (ptstudy.cc).
//
// Costs (timing.conf): a node visited costs rebuild_list_visit_instructions x cpi plus
// rebuild_list_visit_memrefs x l1_cycles -- the artifact's search loop, built without
// optimisation, is 17 instructions with 11 loads and stores (the node and the loop's stack
// slots), on a core that waits for every cache access (its gem5 runs used TimingSimpleCPU).
// The visits of one pass are charged as L1 hits, except that each listed node's line is loaded
// once per pass through the caches (from NVM when the list outgrows them): a block's entries
// (512 x 64 B) and the level-one nodes stay cache-resident while a pass works through a block.
// The node allocator walks its list of 64-chunk pages from the first, skipping full ones, then
// scans the current page's bitmap to the first free chunk: both charged as node visits, and the
// page's header is flushed on every allocation.  Not modelled: the process context's own log and
// copies (the same in both of Kindle's schemes), the program's code/data/stack segments (traces
// have only the areas of their MAP records), allocation of the resume's table pages (zeroed,
// not searched for).
#include <algorithm>
#include <map>

#include "pt_scheme.h"

namespace prosper::sim {
namespace {

constexpr unsigned kBlockShift = 21;                  // a level-one node covers 2 MiB
constexpr uint64_t kNodeBytes = 64;                   // 40-byte nodes in 64-byte chunks
constexpr uint64_t kChunksPerPage = (1u << kPageShift) / kNodeBytes;
constexpr uint64_t kNodeBase = kListPhysBase + (1ull << 32);     // the list's nodes
constexpr uint64_t kAllocatorBase = kListPhysBase + (1ull << 33); // the allocator's page headers
constexpr uint32_t kFreshFrames = 1u << 22;           // the resume's tables: apart from the live ones

class ListRebuildTables : public PtScheme {
public:
	ListRebuildTables(Machine &m, const Config &cfg, const PageTable &pt)
	    : m_(m), cfg_(cfg), pt_(pt), scan_(cfg.get("pte_scan_cycles")),
	      visit_(cfg.get("rebuild_list_visit_instructions") * cfg.get("cpi") +
		     cfg.get("rebuild_list_visit_memrefs") * cfg.get("l1_cycles"))
	{
	}
	Mem table_mem() const override { return kDram; }
	void apply(const PtOp &op) override { dram_table_op(m_, op); }
	void area(uint64_t start, uint64_t end, bool mapped) override
	{
		if (mapped) {
			add_area(start, end);
			return;
		}
		uint64_t visits = lookups(start, end, nullptr);
		m_.compute(visit_ * static_cast<double>(visits));
		stats.list_visits += visits;
		remove_area(start, end);
	}
	void interval_end() override
	{
		update();
		stats.list_visits += resume_pass(m_, areas_);
		checkpointed_areas_ = areas_;
	}
	double resume_cycles() const override
	{
		Machine r(cfg_);
		resume_pass(r, checkpointed_areas_);
		return r.now;
	}

private:
	struct Entry {
		uint32_t block;  // its block's place in the level-one list
		uint32_t place;  // its place in the block's entries
		uint64_t node;   // its chunk
	};
	struct Block {
		uint32_t place;
		uint32_t entries = 0;
		uint64_t node;
	};
	static uint64_t node_addr(uint64_t node) { return kNodeBase + kNodeBytes * node; }
	uint64_t found_cost(const Entry &e) const { return e.block + 1ull + e.place + 1ull; }
	uint64_t miss_cost(uint64_t va) const
	{
		auto b = blocks_.find(va >> kBlockShift);
		return order_.size() + (b == blocks_.end() ? 0 : b->second.entries);
	}

	// lookups -- the node visits of one lookup of every page of [start, end); each listed
	// entry's line is loaded through `m` if given.  Pages are counted by block, so a vast
	// sparse area costs arithmetic, not a loop over its pages.
	uint64_t lookups(uint64_t start, uint64_t end, Machine *m) const
	{
		constexpr unsigned kPagesPerBlock = kBlockShift - kPageShift;
		uint64_t visits = 0, pages = (end - start) >> kPageShift, listed = 0, listed_in_blocks = 0;
		uint64_t block = ~0ull, block_entries = 0;  // the block of the entries just seen
		for (auto it = entries_.lower_bound(start >> kPageShift);
		     it != entries_.end() && it->first < end >> kPageShift; ++it) {
			visits += found_cost(it->second);
			if (m)
				m->access(node_addr(it->second.node), 8, false, kNvm);
			listed++;
			if (it->first >> kPagesPerBlock != block) {
				block = it->first >> kPagesPerBlock;
				block_entries = blocks_.at(block).entries;
			}
			listed_in_blocks += block_entries;  // taken back below: a listed page is no miss
		}
		// the misses: every level-one node each, plus the entries of a listed block
		visits += (pages - listed) * order_.size();
		for (auto b = blocks_.lower_bound(start >> kBlockShift);
		     b != blocks_.end() && b->first <= (end - 1) >> kBlockShift; ++b) {
			uint64_t lo = std::max(start, b->first << kBlockShift);
			uint64_t hi = std::min(end, (b->first + 1) << kBlockShift);
			visits += ((hi - lo) >> kPageShift) * b->second.entries;
		}
		return visits - listed_in_blocks;
	}

	// update -- step 1 of the header.
	void update()
	{
		uint64_t visits = 0;
		std::array<uint32_t, kPtLevels> frame;
		std::array<uint16_t, kPtLevels> index;
		for (auto &[start, end] : areas_) {
			m_.compute(scan_ * static_cast<double>((end - start) >> kPageShift));
			auto &ptes = pt_.tables(1);
			for (auto t = ptes.lower_bound(start >> (kPageShift + 9));
			     t != ptes.end() && t->first <= (end - 1) >> (kPageShift + 9); ++t) {
				uint64_t base = t->first << (kPageShift + 9);
				for (unsigned i = 0; i < kPtEntries; i++) {
					uint64_t va = base + (static_cast<uint64_t>(i) << kPageShift);
					if (va < start || va >= end || !((t->second.bits[i / 64] >> (i % 64)) & 1))
						continue;
					pt_.walk(va, frame, index);
					for (unsigned l = 0; l < kPtLevels; l++)
						m_.access(entry_addr(frame[l], index[l]), 8, false, kDram);
					stats.pages_walked++;
					auto e = entries_.find(va >> kPageShift);
					if (e != entries_.end()) {
						visits += 2 * found_cost(e->second);
						m_.access(node_addr(e->second.node), 8, false, kNvm);
					} else {
						visits += miss_cost(va);
						visits += append(va);
					}
				}
			}
		}
		m_.compute(visit_ * static_cast<double>(visits));
		stats.list_visits += visits;
	}

	// append -- make_nv_mappings: returns the node visits it made (the stores and flushes
	// are charged here).
	uint64_t append(uint64_t va)
	{
		uint64_t visits = 0;
		m_.compute(scan_);  // it looks the PTE up again
		auto b = blocks_.find(va >> kBlockShift);
		if (b == blocks_.end()) {
			visits += order_.size();
			Block nb;
			nb.place = static_cast<uint32_t>(order_.size());
			visits += allocate(nb.node);
			b = blocks_.emplace(va >> kBlockShift, nb).first;
			order_.push_back(b->first);
			persist_node(nb.node);                 // the block's node
			if (nb.place > 0)                      // the previous tail's link (not flushed)
				m_.access(node_addr(blocks_.at(order_[nb.place - 1]).node), 8, true, kNvm);
			persist(kListPhysBase);                // the list's head
		} else {
			visits += b->second.place + 1ull;
		}
		Entry e{b->second.place, b->second.entries++, 0};
		visits += allocate(e.node);
		persist_node(e.node);                          // the entry
		persist_node(b->second.node);                  // its block's list head
		entries_.emplace(va >> kPageShift, e);
		stats.list_entry_writes++;
		return visits;
	}
	// allocate -- the chunk allocator: its visits; the chunk it hands out in `node`.
	uint64_t allocate(uint64_t &node)
	{
		node = next_node_++;
		uint64_t page = node / kChunksPerPage;
		persist(kAllocatorBase + (page << kPageShift));  // its bitmap, flushed every time
		return page + 1 + node % kChunksPerPage + 1;
	}
	// clflush_multiline of one node as the artifact does it: sfence, store, clflush, sfence.
	void persist_node(uint64_t node) { persist(node_addr(node)); }
	void persist(uint64_t addr)
	{
		m_.sfence();
		m_.access(addr, 8, true, kNvm);
		m_.clwb(addr);
		m_.sfence();
	}

	// resume_pass -- step 2 of the header, on `m`, for the mapped `areas`; returns its visits.
	uint64_t resume_pass(Machine &m, const std::map<uint64_t, uint64_t> &areas) const
	{
		PageTable fresh;
		std::vector<PtOp> ops;
		zero_table(m, kFreshFrames, kDram);  // the new root
		uint64_t visits = 0;
		for (auto &[start, end] : areas) {
			visits += lookups(start, end, &m);
			for (auto it = entries_.lower_bound(start >> kPageShift);
			     it != entries_.end() && it->first < end >> kPageShift; ++it) {
				fresh.touch(it->first << kPageShift, ops);
				for (PtOp op : ops) {
					op.frame += kFreshFrames;
					dram_table_op(m, op);
				}
				ops.clear();
			}
		}
		m.compute(visit_ * static_cast<double>(visits));
		return visits;
	}

	void add_area(uint64_t start, uint64_t end)
	{
		remove_area(start, end);
		areas_[start] = end;
	}
	void remove_area(uint64_t start, uint64_t end)
	{
		auto it = areas_.upper_bound(start);
		if (it != areas_.begin())
			--it;
		while (it != areas_.end() && it->first < end) {
			uint64_t s = it->first, e = it->second;
			if (e <= start) {
				++it;
				continue;
			}
			it = areas_.erase(it);
			if (s < start)
				areas_[s] = start;
			if (e > end)
				areas_[end] = e;
		}
	}

	Machine &m_;
	const Config &cfg_;
	const PageTable &pt_;
	double scan_, visit_;
	std::map<uint64_t, uint64_t> areas_;   // mapped: start -> end
	std::map<uint64_t, uint64_t> checkpointed_areas_;  // as of the last checkpoint
	std::map<uint64_t, Entry> entries_;    // page -> its entry
	std::map<uint64_t, Block> blocks_;     // 2 MiB block -> its node
	std::vector<uint64_t> order_;          // the level-one list: blocks in list order
	uint64_t next_node_ = 0;
};

}  // namespace

std::unique_ptr<PtScheme> make_rebuild_tables(Machine &m, const Config &cfg, const PageTable &pt)
{
	return std::make_unique<ListRebuildTables>(m, cfg, pt);
}

}  // namespace prosper::sim

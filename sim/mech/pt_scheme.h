// pt_scheme.h -- how a page table is kept across a crash (Kindle §III-A): the interface of the
// page-table schemes that sim/core/ptstudy.cc compares.
//
// Contract:
//   - A scheme owns where the simulated process's table pages live and what persisting them
//     costs, on one Machine.  The PageTable model (core/pagetable.h) decides which changes
//     happen; the driver hands every change to apply() in order, and charges what is common to
//     every scheme itself (fault entry, zeroing the data page, TLB invalidations).
//   - apply(op) performs the change's memory traffic (a table page zeroed, an 8-byte entry
//     written) and any persistence it needs right away, so that the clock and stats include it.
//   - interval_end() is called at every checkpoint boundary (not at the trace's end); on return
//     the translation state of that instant is recoverable.
//   - table_mem() is where a hardware walk reads entries after a TLB miss.
//   - area(start, end, mapped) is called for every MAP (mapped) and UNMAP record, before the
//     page table's own changes for it are applied; schemes that keep nothing per area ignore it.
//   - resume_cycles() is what recovery would cost to make the last checkpoint's translations
//     usable again, measured on a fresh Machine; it is not part of the run's cycles.
//   - Same trace and config -> same result.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "core/machine.h"
#include "core/pagetable.h"

namespace prosper::sim {

// Physical addresses of the simulated kernel's objects: far above any user address of a trace,
// so that they share the caches with the program's lines without aliasing them.
constexpr uint64_t kTablePhysBase = 0xffff888000000000ull;
constexpr uint64_t kListPhysBase = 0xffffc90000000000ull;
inline uint64_t table_addr(uint32_t frame) { return kTablePhysBase + (static_cast<uint64_t>(frame) << kPageShift); }
inline uint64_t entry_addr(uint32_t frame, uint16_t index) { return table_addr(frame) + 8ull * index; }

// Counters only some schemes have (zero elsewhere).
struct PtSchemeStats {
	uint64_t list_entry_writes = 0;  // rebuild: v->NVM list entries written
	uint64_t pages_walked = 0;       // rebuild: present pages visited by the per-interval traversals
	uint64_t list_visits = 0;        // rebuild: list and allocator nodes its searches visited
};

class PtScheme {
public:
	virtual ~PtScheme() = default;
	virtual Mem table_mem() const = 0;
	virtual void apply(const PtOp &op) = 0;
	virtual void area(uint64_t /*start*/, uint64_t /*end*/, bool /*mapped*/) {}
	virtual void interval_end() = 0;
	virtual double resume_cycles() const = 0;
	PtSchemeStats stats;
};

// The schemes: page tables in NVM with every entry write flushed (persistent); in DRAM with the
// v->NVM page list kept in NVM per interval, as Kindle's artifact keeps it (rebuild: linked lists
// searched linearly, pt_rebuild_list.cc) or as an indexed array of entries (rebuild-indexed,
// pt_rebuild.cc); in DRAM with nothing kept (volatile, the baseline without persistence).
std::unique_ptr<PtScheme> make_persistent_tables(Machine &m, const Config &cfg);
std::unique_ptr<PtScheme> make_rebuild_tables(Machine &m, const Config &cfg, const PageTable &pt);
std::unique_ptr<PtScheme> make_indexed_rebuild_tables(Machine &m, const Config &cfg, const PageTable &pt);
std::unique_ptr<PtScheme> make_volatile_tables(Machine &m);

// zero_table -- a table page cleared with ordinary stores (the kernel's clear_page), in `mem`.
inline void zero_table(Machine &m, uint32_t frame, Mem mem)
{
	for (uint64_t off = 0; off < (1u << kPageShift); off += m.line_bytes())
		m.access(table_addr(frame) + off, m.line_bytes(), true, mem);
}

// dram_table_op -- a change to page tables kept in DRAM as ordinary kernel data: a new table
// page zeroed, an entry stored.
inline void dram_table_op(Machine &m, const PtOp &op)
{
	if (op.kind == PtOp::kAlloc)
		zero_table(m, op.frame, kDram);
	else if (op.kind == PtOp::kWrite)
		m.access(entry_addr(op.frame, op.index), 8, true, kDram);
}

}  // namespace prosper::sim

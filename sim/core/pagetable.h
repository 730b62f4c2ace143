// pagetable.h -- the page table of one simulated process: a 4-level x86-64 radix tree of 4 KiB
// table pages with 512 8-byte entries each.  It knows which table pages exist and which entries
// change; what a change costs is the page-table scheme's business (sim/mech/pt_scheme.h).
//
// Notes (assumptions):
//   - Levels are numbered 1 (PTE: maps 4 KiB pages) .. 4 (PGD: the root, allocated with the
//     process).  Only 4 KiB pages: no huge pages, no 5-level tables.
//   - A page gets its PTE on first touch (a minor fault), never at mmap time.  Missing table
//     pages on the way down are allocated first, then the entry that links each is written
//     (child zeroed before it becomes reachable), then the PTE.
//   - Unmapping clears every present PTE in the range.  A table page left with no present entry
//     is freed and the entry that linked it is cleared, up to (not including) the root.  (Linux
//     frees table pages only when a whole range they cover is unmapped; the difference is a few
//     writes per freed table.)
//   - Table pages get frame numbers from a LIFO free list, so a freed frame is reused first.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <vector>

namespace prosper::sim {

constexpr unsigned kPtLevels = 4, kPtEntries = 512, kPageShift = 12;

// One change to the tables, in the order the OS makes them.
struct PtOp {
	enum Kind : uint8_t { kAlloc, kWrite, kFree } kind;
	uint8_t level;    // of the table page allocated, freed or written
	uint16_t index;   // kWrite: the entry
	uint32_t frame;   // the table page
	bool set;         // kWrite: the entry becomes present (false: cleared)
	uint64_t va;      // kWrite at level 1: the page mapped or unmapped
};

class PageTable {
public:
	PageTable();
	// touch -- first touch of the page holding `va`: appends the changes to `ops` and returns
	// true; false (no change) if the page is present already.
	bool touch(uint64_t va, std::vector<PtOp> &ops);
	// unmap -- clears [start, end); appends the changes; returns the pages unmapped.
	uint64_t unmap(uint64_t start, uint64_t end, std::vector<PtOp> &ops);
	// walk -- the table pages and entries a hardware walk of `va` reads (root first); false if
	// the page is not present (then nothing is filled).
	bool walk(uint64_t va, std::array<uint32_t, kPtLevels> &frame, std::array<uint16_t, kPtLevels> &index) const;
	bool present(uint64_t va) const;

	struct Table {
		uint32_t frame;
		uint32_t present = 0;                 // entries present
		std::array<uint64_t, kPtEntries / 64> bits{};  // which
	};
	// Tables of `level` by the virtual address bits above what they cover.
	const std::map<uint64_t, Table> &tables(unsigned level) const { return t_[level - 1]; }
	uint64_t pages() const { return pages_; }  // present PTEs
	uint64_t table_pages() const;

private:
	static uint64_t key(uint64_t va, unsigned level) { return va >> (kPageShift + 9 * level); }
	static uint16_t slot(uint64_t va, unsigned level)
	{
		return static_cast<uint16_t>((va >> (kPageShift + 9 * (level - 1))) & (kPtEntries - 1));
	}
	Table &alloc(uint64_t va, unsigned level, std::vector<PtOp> &ops);
	// The one level-4 table, whatever bits above 48 an address has.
	Table &root() { return t_[kPtLevels - 1].begin()->second; }
	uint32_t new_frame();
	std::array<std::map<uint64_t, Table>, kPtLevels> t_;
	std::vector<uint32_t> free_frames_;
	uint32_t next_frame_ = 0;
	uint64_t pages_ = 0;
};

}  // namespace prosper::sim

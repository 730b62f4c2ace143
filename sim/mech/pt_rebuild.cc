// pt_rebuild.cc -- "rebuild-indexed", Kindle's rebuild scheme with its list kept as an indexed
// array (what the scheme costs without the artifact's linear searches, pt_rebuild_list.cc), and
// "volatile", the same DRAM page tables with nothing kept (the baseline without persistence).
//
// rebuild-indexed: the page-table pages live in DRAM and are written like any kernel data.  At every
// checkpoint the OS traverses the process's page table (Kindle §III-A: "modifying the virtual to
// NVM physical page mapping list by traversing the page table") and brings the v->NVM page list
// in NVM up to date; resume rebuilds the tables from that list.
//   - Traversal: a software walk to every present page (one 8-byte load per level, through the
//     caches; consecutive pages share their upper entries and entry lines) and a test of its PTE
//     (pte_scan_cycles): the cost grows with the mapped pages, not with the table pages.
//   - The list is an array of 16-byte entries {virtual page, NVM frame} in NVM; a page mapped
//     since the last checkpoint takes a free slot (LIFO), one unmapped since writes its slot
//     invalid.  Entries are ordinary stores, each dirty line written back (clwb), then sfence,
//     then the list's commit word (store, clwb, sfence).  Pages mapped and unmapped within one
//     interval never reach the list.
//   - Resume: read the whole list from NVM (a streaming copy), then allocate, zero and fill the
//     DRAM tables for every listed page in address order, on a fresh Machine.
#include <array>
#include <map>
#include <set>

#include "pt_scheme.h"

namespace prosper::sim {
namespace {

constexpr uint64_t kListEntryBytes = 16;

class VolatileTables : public PtScheme {
public:
	explicit VolatileTables(Machine &m) : m_(m) {}
	Mem table_mem() const override { return kDram; }
	void apply(const PtOp &op) override { dram_table_op(m_, op); }
	void interval_end() override {}
	double resume_cycles() const override { return 0; }  // nothing was kept: nothing to resume

protected:
	Machine &m_;
};

class IndexedRebuildTables : public VolatileTables {
public:
	IndexedRebuildTables(Machine &m, const Config &cfg, const PageTable &pt)
	    : VolatileTables(m), cfg_(cfg), pt_(pt), scan_cycles_(cfg.get("pte_scan_cycles"))
	{
	}
	void apply(const PtOp &op) override
	{
		dram_table_op(m_, op);
		if (op.kind == PtOp::kWrite && op.level == 1)
			changed_[op.va >> kPageShift] = op.set;
	}
	void interval_end() override
	{
		std::array<uint32_t, kPtLevels> frame;
		std::array<uint16_t, kPtLevels> index;
		for (auto &[key, t] : pt_.tables(1)) {
			uint64_t base = key << (kPageShift + 9);
			bool path = false;
			for (unsigned i = 0; i < kPtEntries; i++) {
				uint64_t va = base + (static_cast<uint64_t>(i) << kPageShift);
				if (!((t.bits[i / 64] >> (i % 64)) & 1))
					continue;
				if (!path)
					path = pt_.walk(va, frame, index);  // the upper levels, once per PTE table
				index[kPtLevels - 1] = static_cast<uint16_t>(i);
				for (unsigned l = 0; l < kPtLevels; l++)
					m_.access(entry_addr(frame[l], index[l]), 8, false, kDram);
				m_.compute(scan_cycles_);
				stats.pages_walked++;
			}
		}
		std::set<uint64_t> lines;
		for (auto [vpn, present] : changed_) {
			auto it = slot_.find(vpn);
			uint64_t slot;
			if (present == (it != slot_.end()))
				continue;  // mapped and unmapped again (or the reverse) within the interval
			if (present) {
				slot = free_slots_.empty() ? next_slot_++ : free_slots_.back();
				if (!free_slots_.empty())
					free_slots_.pop_back();
				slot_[vpn] = slot;
			} else {
				slot = it->second;
				free_slots_.push_back(slot);
				slot_.erase(it);
			}
			uint64_t a = kListPhysBase + kListEntryBytes * (slot + 4);  // slots follow the commit line
			m_.access(a, kListEntryBytes, true, kNvm);
			lines.insert(a / m_.line_bytes());
			stats.list_entry_writes++;
		}
		changed_.clear();
		for (uint64_t l : lines)
			m_.clwb(l * m_.line_bytes());
		m_.sfence();
		m_.access(kListPhysBase, 8, true, kNvm);  // the commit word
		m_.clwb(kListPhysBase);
		m_.sfence();
	}
	double resume_cycles() const override
	{
		Machine r(cfg_);
		r.bulk_copy(kListEntryBytes * next_slot_, kNvm, kDram);
		PageTable fresh;
		std::vector<PtOp> ops;
		for (auto &[vpn, _] : slot_) {  // in address order
			fresh.touch(vpn << kPageShift, ops);
			for (auto &op : ops)
				dram_table_op(r, op);
			ops.clear();
		}
		return r.now;
	}

private:
	const Config &cfg_;
	const PageTable &pt_;
	double scan_cycles_;
	std::map<uint64_t, bool> changed_;     // page -> present, since the last checkpoint
	std::map<uint64_t, uint64_t> slot_;    // the list as of the last checkpoint: page -> slot
	std::vector<uint64_t> free_slots_;
	uint64_t next_slot_ = 0;
};

}  // namespace

std::unique_ptr<PtScheme> make_indexed_rebuild_tables(Machine &m, const Config &cfg, const PageTable &pt)
{
	return std::make_unique<IndexedRebuildTables>(m, cfg, pt);
}
std::unique_ptr<PtScheme> make_volatile_tables(Machine &m) { return std::make_unique<VolatileTables>(m); }

}  // namespace prosper::sim

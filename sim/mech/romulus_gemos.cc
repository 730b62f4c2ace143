// romulus_gemos.cc -- Romulus as the Prosper paper's artifact ran it for Fig 8 (its gem5 `romulus`
// branch and gemOS_romulus), to reproduce what the paper measured; romulus.cc is the same design with
// a write-combined NVM log and a copy loop without those costs.  What that code does:
//   - Per store to the tracked region (the stack), the hardware writes a 16-byte record {virtual
//     address, size} through the L1 data cache into a log in DRAM; the core does not wait for it.
//   - At every checkpoint (interval end) gemOS flushes every present page of the stack from SP's page
//     up and every present page of every other NVM area (after a software lookup of its PTE), then,
//     for each record in order: flushes the record, zeroes it, looks the page up in software (the
//     four page-table levels and its main/back mapping entry), and copies the logged bytes from the
//     main to the back copy with 8-byte loads and stores, flushing each 64-byte chunk (or the 8-byte
//     remainder) after it.  Overlapping records are copied again (no coalescing).
//   - Its flush is ssp_gemos.cc's: sfence, then per line a write-back of one dirty kernel-stack line
//     to DRAM that the blocking core waits for (clwb is handed its loop variable's address), sfence.
// On the heap (the artifact tracks the stack only), the mechanism is an NVM region flushed whole at
// every checkpoint, as gemOS_romulus treats its NVM heaps.
#include <vector>

#include "log_area.h"
#include "gemos.h"
#include "keyset.h"
#include "mechanism.h"

namespace prosper::sim {
namespace {

constexpr uint64_t kDramLog = 0x0000d00000000000ull;      // the hardware's log (DRAM)
constexpr uint64_t kPageTables = 0x0000d10000000000ull;   // the process's page tables, 8 B per entry
constexpr uint64_t kMappings = 0x0000d20000000000ull;     // main/back mapping entries, 16 B per page
constexpr uint64_t kRecord = 16;

class RomulusGemos : public Mechanism {
public:
	explicit RomulusGemos(const Context &c) : c_(c), tracked_(c.region == trace::kStack), pte_cycles_(c.cfg.get("pte_scan_cycles")) {}
	void access(const trace::Event &e) override
	{
		Machine &m = c_.m;
		bool store = e.op == trace::kStore;
		m.access(e.addr, e.size, store, kNvm);
		for (uint64_t p = e.addr >> 12; p <= (e.addr + e.size - 1) >> 12; p++)
			present_.insert(p);
		if (!store || !tracked_)
			return;
		m.background_access(kDramLog + log_.size() * kRecord, kRecord, true, kDram);
		log_.push_back({e.addr, e.size});
		m.stats.log_bytes += kRecord;
	}
	void interval_end(uint64_t sp) override
	{
		Machine &m = c_.m;
		gemos_flush_present_pages(m, present_.keys(), tracked_, sp, pte_cycles_);
		for (size_t i = 0; i < log_.size(); i++) {
			const Record &r = log_[i];
			uint64_t rec = kDramLog + i * kRecord;
			flush(rec, kRecord);
			m.access(rec, kRecord, true, kDram);  // addr = size = 0
			uint64_t page = r.addr >> 12;
			for (int level = 3; level >= 0; level--)  // get_user_pte: one dependent load per level
				m.access(kPageTables + ((r.addr >> (12 + 9 * level)) << 3), 8, false, kDram);
			m.access(kMappings + page * 16, 16, false, kDram);
			copy(r.addr, r.size);
			m.stats.checkpoint_bytes += r.size;
		}
		log_.clear();
	}

private:
	struct Record {
		uint64_t addr;
		uint32_t size;
	};
	// main -> back: 64-byte chunks, then the remainder in 8-byte words, each flushed after its copy
	void copy(uint64_t addr, uint32_t size)
	{
		uint64_t chunks = size / 64, rest = size % 64;
		for (uint64_t i = 0; i < chunks; i++) {
			words(addr + 64 * i, 8);
			flush(kBackArea + addr + 64 * i, 64);
		}
		if (rest) {
			words(addr + 64 * chunks, (rest + 7) / 8);
			flush(kBackArea + addr + 64 * chunks, rest);
		}
	}
	void words(uint64_t from, uint64_t n)
	{
		Machine &m = c_.m;
		for (uint64_t j = 0; j < n; j++) {
			m.access(from + 8 * j, 8, false, kNvm);
			m.access(kBackArea + from + 8 * j, 8, true, kNvm);
		}
	}
	void flush(uint64_t addr, uint64_t bytes) { gemos_flush(c_.m, addr, bytes); }

	const Context &c_;
	bool tracked_;
	double pte_cycles_;
	std::vector<Record> log_;
	KeySet present_;  // present pages; keys() in first-touch order
};

PROSPER_REGISTER_MECHANISM({"romulus-gemos",
			    "Romulus as the Prosper paper's artifact ran it: DRAM log, per-record copy in gemOS",
			    false, [](const Context &c) { return std::make_unique<RomulusGemos>(c); }});

}  // namespace
}  // namespace prosper::sim

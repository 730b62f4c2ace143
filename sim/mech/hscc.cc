// hscc.cc -- HSCC (hardware/software cooperative caching) as Kindle prototyped it: the region
// lives in NVM and the OS uses a small pool of DRAM pages as a cache of hot NVM pages.
//   - Every NVM page has an 8-bit access count (saturating at 255), incremented for each line
//     of an access to that page that misses in the LLC (the machine's llc_misses counter).
//     Accesses to a page cached in DRAM go to its DRAM frame and are not counted.
//   - Every hscc_migration_ms (in instructions at the configured clock, like the intervals) the
//     OS migrates; its time is charged to the core and split into three steps (Stats):
//       scan:   a software walk of the region's PTEs (pte_scan_cycles per NVM page mapped so
//               far) that reads and resets every count, then one TLB flush (tlb_invalidate_ns);
//       select: per candidate, a destination frame from the lists as they stood at the start
//               of the run: free first, then clean, then dirty, each oldest-migrated first
//               (hscc_list_cycles); evicting a clean page remaps it to NVM (one TLB
//               invalidation); a dirty one is first flushed from the caches and copied back
//               (4096 bytes DRAM -> NVM).  Pages migrated in this run are not victims: when
//               the lists run out, the remaining candidates wait for the next run;
//       copy:   flush the NVM page's lines (clwb), copy 4096 bytes NVM -> DRAM, update the
//               PTE and invalidate its TLB entry.
//   - Candidates are the NVM pages whose count reached the fetch threshold (>=), in address
//     order (the order of the page-table walk).
//   - A DRAM frame is a fresh physical address at every migration, so no cache line of an
//     earlier occupant can hit for the new page (caches are physically indexed).
//   - Kindle's fixed thresholds: no dynamic threshold adjustment; counts are per run.
#include <algorithm>
#include <unordered_map>
#include <vector>

#include "mechanism.h"

namespace prosper::sim {
namespace {

constexpr unsigned kPageShift = 12;
constexpr uint64_t kPageBytes = 1ull << kPageShift;
constexpr uint64_t kDramFrameBase = 1ull << 60;  // above every user address a trace can hold
constexpr uint8_t kMaxCount = 255;

class Hscc : public Mechanism {
public:
	Hscc(const Context &c, unsigned threshold)
	    : c_(c), threshold_(threshold),
	      period_(static_cast<uint64_t>(c.cfg.get("hscc_migration_ms") * 1e6 * c.cfg.get("core_ghz") /
					    std::max(c.cfg.get("cpi"), 1e-9))),
	      scan_cycles_(c.cfg.get("pte_scan_cycles")), list_cycles_(c.cfg.get("hscc_list_cycles")),
	      tlb_ns_(c.cfg.get("tlb_invalidate_ns")),
	      slots_(static_cast<size_t>(c.cfg.get("hscc_dram_pages")))
	{
		if (period_ == 0)
			throw ConfigError("timing.conf: hscc_migration_ms must be at least one instruction");
		next_run_ = period_;
	}
	void access(const trace::Event &e) override
	{
		migrate_until(e.instr);
		Machine &m = c_.m;
		bool store = e.op == trace::kStore;
		uint64_t addr = e.addr, end = e.addr + e.size;
		while (addr < end) {  // one piece per page the access spans
			uint64_t page = addr >> kPageShift;
			uint64_t piece_end = std::min(end, (page + 1) << kPageShift);
			uint32_t len = static_cast<uint32_t>(piece_end - addr);
			Page &pg = lookup(page);
			if (pg.slot >= 0) {
				Slot &s = slots_[pg.slot];
				m.access(s.frame + (addr & (kPageBytes - 1)), len, store, kDram);
				s.dirty |= store;
			} else {
				uint64_t before = m.stats.llc_misses;
				m.access(addr, len, store, kNvm);
				uint64_t misses = m.stats.llc_misses - before;
				pg.count = static_cast<uint8_t>(std::min<uint64_t>(kMaxCount, pg.count + misses));
			}
			addr = piece_end;
		}
	}
	void interval_end(uint64_t) override {}  // HSCC keeps no persistent state of its own

private:
	struct Page {
		uint8_t count = 0;
		int slot = -1;  // the DRAM slot caching it, or -1: in NVM
	};
	struct Slot {
		bool used = false, dirty = false;
		uint64_t page = 0, frame = 0, since = 0;  // since: migration number (age)
	};

	Page &lookup(uint64_t page)
	{
		if (page != last_page_) {
			last_ = &pages_[page];  // element references survive rehashing
			last_page_ = page;
		}
		return *last_;
	}
	// migrate_until -- every migration run that came due by instruction `instr`.
	void migrate_until(uint64_t instr)
	{
		while (instr >= next_run_) {
			migrate();
			next_run_ += period_;
		}
	}
	void migrate()
	{
		Machine &m = c_.m;
		Stats &st = m.stats;
		double t = m.now;
		std::vector<uint64_t> candidates;
		m.compute(scan_cycles_ * static_cast<double>(pages_.size()));
		for (auto &[page, pg] : pages_) {
			if (pg.slot < 0 && pg.count >= threshold_)
				candidates.push_back(page);
			pg.count = 0;
		}
		m.os_ns(tlb_ns_);
		st.scan_cycles += m.now - t;
		std::sort(candidates.begin(), candidates.end());

		std::vector<int> order = victim_order();
		size_t next_victim = 0;
		for (uint64_t page : candidates) {
			if (next_victim == order.size())
				break;
			int s = order[next_victim++];
			t = m.now;
			m.compute(list_cycles_);
			evict(s);
			st.select_cycles += m.now - t;

			t = m.now;
			m.clwb_range(page << kPageShift, kPageBytes);
			m.bulk_copy(kPageBytes, kNvm, kDram);
			m.os_ns(tlb_ns_);
			st.copy_cycles += m.now - t;
			st.pages_migrated++;

			Slot &sl = slots_[s];
			sl = Slot{true, false, page, kDramFrameBase + (migrations_ << kPageShift), runs_};
			migrations_++;
			pages_[page].slot = s;
		}
		runs_++;
		last_page_ = ~0ull;  // the lookup memo may point at a page whose slot changed
	}
	// victim_order -- the slots in the order they are given out this run: free, clean, dirty.
	std::vector<int> victim_order() const
	{
		std::vector<int> order;
		for (int pass = 0; pass < 3; pass++) {
			size_t first = order.size();
			for (size_t i = 0; i < slots_.size(); i++) {
				const Slot &s = slots_[i];
				if ((pass == 0 && !s.used) || (pass == 1 && s.used && !s.dirty) || (pass == 2 && s.used && s.dirty))
					order.push_back(static_cast<int>(i));
			}
			std::stable_sort(order.begin() + first, order.end(),
					 [&](int a, int b) { return slots_[a].since < slots_[b].since; });
		}
		return order;
	}
	// evict -- give slot `s` back: its page returns to NVM (written back first if dirty).
	void evict(int s)
	{
		Slot &sl = slots_[s];
		if (!sl.used)
			return;
		Machine &m = c_.m;
		if (sl.dirty) {
			m.clwb_range(sl.frame, kPageBytes);
			m.bulk_copy(kPageBytes, kDram, kNvm);
			m.stats.pages_written_back++;
		}
		m.os_ns(tlb_ns_);
		pages_[sl.page].slot = -1;
		sl.used = false;
	}

	const Context &c_;
	unsigned threshold_;
	uint64_t period_, next_run_;
	double scan_cycles_, list_cycles_, tlb_ns_;
	std::vector<Slot> slots_;
	std::unordered_map<uint64_t, Page> pages_;
	Page *last_ = nullptr;
	uint64_t last_page_ = ~0ull, migrations_ = 0, runs_ = 0;
};

PROSPER_REGISTER_MECHANISM({"hscc-5", "HSCC: NVM, 512-page DRAM cache, fetch threshold 5", false,
			    [](const Context &c) { return std::make_unique<Hscc>(c, 5); }});
PROSPER_REGISTER_MECHANISM({"hscc-25", "HSCC: NVM, 512-page DRAM cache, fetch threshold 25", false,
			    [](const Context &c) { return std::make_unique<Hscc>(c, 25); }});
PROSPER_REGISTER_MECHANISM({"hscc-50", "HSCC: NVM, 512-page DRAM cache, fetch threshold 50", false,
			    [](const Context &c) { return std::make_unique<Hscc>(c, 50); }});

}  // namespace
}  // namespace prosper::sim

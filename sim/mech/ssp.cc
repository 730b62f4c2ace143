// ssp.cc -- SSP (shadow sub-paging) with the region in NVM, as the Prosper authors built it.
// Every virtual page has two physical NVM pages; per cache line a "current" bit says which page
// holds the committed copy and an "updated" bit says the line was written in this interval (its
// new value goes to the other page).  The bits live in the TLB entry.
//   - Store to a line not yet updated in the interval: flip its bit (metadata_update_cycles).
//   - Interval end (commit): clwb every updated line, persist each updated page's bitmaps (one
//     line write per page), sfence; committed lines now live in the other page.
//   - A page whose TLB entry is evicted while its lines are split across both pages is queued
//     for consolidation.  The consolidation thread runs every `period` (10 us / 100 us / 1 ms,
//     in instructions at the configured clock, like the intervals) on the application's core:
//     each run costs a thread wake-up; each queued page costs copying its lines that live in the
//     other page (NVM -> NVM), persisting its metadata (clwb, sfence) and a TLB invalidation.
//   - The TLB is ssp_tlb.h's.
#include <bit>
#include <unordered_map>
#include <vector>

#include "keyset.h"
#include "mechanism.h"
#include "ssp_tlb.h"

namespace prosper::sim {
namespace {

class Ssp : public Mechanism {
public:
	Ssp(const Context &c, double period_ns)
	    : c_(c), period_(static_cast<uint64_t>(period_ns * c.cfg.get("core_ghz") / c.cfg.get("cpi"))),
	      meta_cycles_(c.cfg.get("metadata_update_cycles")), wakeup_ns_(c.cfg.get("thread_wakeup_ns")),
	      tlb_ns_(c.cfg.get("tlb_invalidate_ns")), tlb_(static_cast<size_t>(c.cfg.get("ssp_tlb_entries")))
	{
		next_run_ = period_;
	}
	void access(const trace::Event &e) override
	{
		Machine &m = c_.m;
		consolidate_until(e.instr);
		bool store = e.op == trace::kStore;
		m.access(e.addr, e.size, store, kNvm);
		for (uint64_t p = e.addr >> 12; p <= (e.addr + e.size - 1) >> 12; p++)
			touch_tlb(p);
		if (!store)
			return;
		for (uint64_t l = e.addr >> 6; l <= (e.addr + e.size - 1) >> 6; l++) {
			Page &pg = pages_[l >> 6];
			uint64_t bit = 1ull << (l & 63);
			if (!(pg.updated & bit)) {
				pg.updated |= bit;
				m.compute(meta_cycles_);
				if (!pg.in_interval) {
					pg.in_interval = true;
					touched_.push_back(l >> 6);
				}
			}
		}
	}
	void interval_end(uint64_t) override
	{
		Machine &m = c_.m;
		for (uint64_t p : touched_) {
			Page &pg = pages_[p];
			for (uint64_t b = pg.updated; b; b &= b - 1)
				m.clwb((p << 12) + 64 * std::countr_zero(b));
			m.write_line(kNvm);  // the page's current/updated bitmaps
			m.stats.checkpoint_bytes += 64 * std::popcount(pg.updated);
			pg.current ^= pg.updated;
			pg.updated = 0;
			pg.in_interval = false;
		}
		m.sfence();
		touched_.clear();
	}

private:
	struct Page {
		uint64_t current = 0, updated = 0;  // bit i: line i of the page
		bool in_interval = false, queued = false;
	};
	void touch_tlb(uint64_t page)
	{
		if (page == last_page_)
			return;
		last_page_ = page;
		uint64_t evicted;
		if (tlb_.lookup(page, evicted))
			return;
		if (evicted != SspTlb::kNone) {
			auto it = pages_.find(evicted);
			if (it != pages_.end() && it->second.current && !it->second.queued) {
				it->second.queued = true;
				queue_.push_back(evicted);
			}
		}
	}
	// consolidate_until -- every run of the thread that came due by instruction `now`.
	void consolidate_until(uint64_t instr)
	{
		if (instr < next_run_)
			return;
		Machine &m = c_.m;
		uint64_t runs = (instr - next_run_) / period_ + 1;
		next_run_ += runs * period_;
		m.os_ns(wakeup_ns_ * runs);
		for (uint64_t p : queue_) {
			Page &pg = pages_[p];
			pg.queued = false;
			uint64_t merge = pg.current & ~pg.updated;  // committed lines in the other page
			if (!merge)
				continue;
			m.bulk_copy(64 * std::popcount(merge), kNvm, kNvm);
			pg.current &= ~merge;
			m.write_line(kNvm);
			m.stats.flushes++;
			m.sfence();
			m.os_ns(tlb_ns_);
			m.stats.consolidations++;
		}
		queue_.clear();
		last_page_ = ~0ull;  // the TLB was invalidated
	}

	const Context &c_;
	uint64_t period_, next_run_;
	double meta_cycles_, wakeup_ns_, tlb_ns_;
	std::unordered_map<uint64_t, Page> pages_;
	std::vector<uint64_t> touched_, queue_;
	SspTlb tlb_;
	uint64_t last_page_ = ~0ull;
};

PROSPER_REGISTER_MECHANISM({"ssp-10us", "SSP, consolidation thread every 10 us", false,
			    [](const Context &c) { return std::make_unique<Ssp>(c, 10e3); }});
PROSPER_REGISTER_MECHANISM({"ssp-100us", "SSP, consolidation thread every 100 us", false,
			    [](const Context &c) { return std::make_unique<Ssp>(c, 100e3); }});
PROSPER_REGISTER_MECHANISM({"ssp-1ms", "SSP, consolidation thread every 1 ms", false,
			    [](const Context &c) { return std::make_unique<Ssp>(c, 1e6); }});

}  // namespace
}  // namespace prosper::sim

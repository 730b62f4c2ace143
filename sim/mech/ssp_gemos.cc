// ssp_gemos.cc -- SSP as the Prosper paper's artifact ran it for Figs 8 and 9 (its gem5 `ssp` branch
// and gemOS_ssp_thread, _SH, _dirtybit and prosper_ssp), to reproduce what the paper measured; ssp.cc
// is SSP as its own paper designs it.  Every item below is what that code does (docs/sim.md, "SSP and
// Romulus as the Prosper paper's artifact ran them"):
//
// Which pages are tracked: gemOS sets the hardware's tracked range to the stack for Fig 8
// (gemOS_ssp_thread) and to the heap (the mmap area), or the heap and the stack, for Fig 9's builds;
// the other NVM pages still have records, TLB-walk reads, list entries and flushes.  So `ssp-gemos-*`
// tracks its region, whichever it is, and `nvm-gemos-*` is an NVM region under the same build that is
// not tracked (Fig 8's heap): no line bits, so its merges copy nothing.
//
// Hardware (the core does not wait unless said):
//   - A store to a line of a
//     tracked page whose "updated" bit is clear sets it, flips the line's "current" bit and writes the
//     page's current bitmap (8 B) to its metadata record in NVM.  Neither the hardware nor gemOS ever
//     clears the updated bits, so this happens once per line of the run, not once per interval.
//   - A TLB miss on any NVM page (tracked or not) adds three dependent 8-byte reads of its record (p1,
//     current, updated) to the walk, which the core waits for, and writes evicted = 0.
//   - A TLB eviction of an NVM page writes its current and updated bitmaps and evicted = 1.
//   - At a checkpoint the TLB's bitmaps are written to their records.
// gemOS:
//   - The consolidation ("merge") thread sleeps `ticks` timer ticks between runs: 100, 1000 and 10000
//     for the paper's "10us", "100us" and "1ms".  A tick is 300 APIC counts x divide 16 x an APIC
//     clock of core/16, 25.6 us at 3 GHz (timing.conf gemos_tick_ns), re-armed after its handler, so
//     the three settings merge every 2.56 ms, 25.6 ms and 256 ms of the run plus the merge itself.
//     A run walks the list of every NVM page ever allocated (loads of its list node, a flush of its
//     record) and, for each page evicted from the TLB since it was last walked (evicted == 1), copies
//     every line in its commit bitmap from the shadow page with 8-byte loads and stores, a flush per
//     line, then flushes its two records; the commit bitmap is never reset, so every line written
//     before the last checkpoint is copied again at every merge that finds its page evicted.
//   - Every checkpoint (interval end) flushes every present page of the stack from SP's page up and
//     every present page of every other NVM area (after a software lookup of its PTE), then walks
//     the list: a flush of each record, and the commit record updated and flushed where the updated
//     bitmap gained lines.
//   - Its flush is gemos.h's (sfence, a clwb per line, sfence, with clwb handed its loop variable):
//     each line "flushed" is a write-back of one dirty line of the kernel stack, in DRAM, which the
//     artifact's blocking core (gem5 TimingSimpleCPU) waits for; the data line is not written back.
//     Charged as exactly that (Machine::clwb_dirty_wait(kDram)), and two sfences per call.
// Not modelled: the caches' copy of a line to its shadow page's address on a miss fill (the line
// keeps one address here), the list's allocation at a page's first touch, the walker cache.
// The region lives in NVM.  Each instance walks its own region's pages; in the artifact one thread
// walks the list of both: an instance per region pays its own wake-up.
#include <bit>
#include <unordered_map>
#include <vector>

#include "gemos.h"
#include "mechanism.h"
#include "ssp_tlb.h"

namespace prosper::sim {
namespace {

constexpr uint64_t kRecords = 0x0000c00000000000ull;  // the per-page records (struct ssp_entry, 40 B), NVM
constexpr uint64_t kCommits = 0x0000c10000000000ull;  // the commit records (24 B, padded to 32), NVM
constexpr uint64_t kNodes = 0x0000c20000000000ull;    // the list's nodes (32 B), NVM
constexpr uint64_t kShadows = 0x0000c30000000000ull;  // the shadow page of page i at + i * 4096, NVM
constexpr uint64_t kRecordBytes = 40, kCommitBytes = 32, kNodeBytes = 32;

class SspGemos : public Mechanism {
public:
	SspGemos(const Context &c, unsigned ticks, bool tracked)
	    : c_(c), tracked_(tracked), stack_(c.region == trace::kStack),
	      period_cycles_(ticks * c.cfg.get("gemos_tick_ns") * c.cfg.get("core_ghz")),
	      wakeup_ns_(c.cfg.get("thread_wakeup_ns")), pte_cycles_(c.cfg.get("pte_scan_cycles")),
	      tlb_(static_cast<size_t>(c.cfg.get("ssp_tlb_entries")))
	{
		next_run_ = period_cycles_;
	}
	void access(const trace::Event &e) override
	{
		Machine &m = c_.m;
		while (m.now >= next_run_) {  // every run that came due; each sleeps from its own end
			double start = m.now;
			merge();
			next_run_ += (m.now - start) + period_cycles_;
		}
		bool store = e.op == trace::kStore;
		for (uint64_t p = e.addr >> 12; p <= (e.addr + e.size - 1) >> 12; p++)
			translate(p);
		m.access(e.addr, e.size, store, kNvm);
		if (!store || !tracked_)
			return;
		for (uint64_t l = e.addr >> 6; l <= (e.addr + e.size - 1) >> 6; l++) {
			Page &pg = page(l >> 6);
			uint64_t bit = 1ull << (l & 63);
			if (!(pg.updated & bit)) {
				pg.updated |= bit;
				m.background_access(record(pg) + 16, 8, true, kNvm);  // the current bitmap
			}
		}
	}
	void interval_end(uint64_t sp) override
	{
		Machine &m = c_.m;
		tlb_.for_each([&](uint64_t p) {  // the TLB's bitmaps written to their records
			m.background_access(record(pages_.at(p)) + 16, 16, true, kNvm);
		});
		gemos_flush_present_pages(m, order_, stack_, sp, pte_cycles_);
		for (uint64_t p : order_) {
			Page &pg = pages_.at(p);
			visit(pg);
			if (pg.updated & ~pg.commit) {
				pg.commit |= pg.updated;
				m.access(commit(pg) + 16, 8, true, kNvm);
				flush(commit(pg), 24);
			}
		}
	}

private:
	static constexpr uint64_t kNoPage = ~0ull;
	struct Page {
		uint64_t index;               // allocation order: its place in the list
		uint64_t updated = 0, commit = 0;
		bool evicted = false;         // evicted == 1 in the artifact
	};
	Page &page(uint64_t p)
	{
		auto [it, added] = pages_.try_emplace(p, Page{order_.size()});
		if (added)
			order_.push_back(p);
		return it->second;
	}
	static uint64_t record(const Page &pg) { return kRecords + pg.index * kRecordBytes; }
	static uint64_t commit(const Page &pg) { return kCommits + pg.index * kCommitBytes; }
	void flush(uint64_t addr, uint64_t bytes) { gemos_flush(c_.m, addr, bytes); }
	// list_for_each: the node's next pointer and its two record pointers, then a flush of the record.
	void visit(const Page &pg)
	{
		Machine &m = c_.m;
		m.access(kNodes + pg.index * kNodeBytes, 24, false, kNvm);
		flush(record(pg), kRecordBytes);
	}
	void translate(uint64_t p)
	{
		if (p == last_page_)
			return;
		last_page_ = p;
		Machine &m = c_.m;
		uint64_t evicted;
		if (tlb_.lookup(p, evicted))
			return;  // a page the TLB holds is listed already
		Page &pg = page(p);
		if (evicted != SspTlb::kNone) {  // written back: current, updated, evicted = 1
			Page &old = pages_.at(evicted);
			m.background_access(record(old) + 16, 16, true, kNvm);
			m.background_access(record(old) + 32, 4, true, kNvm);
			old.evicted = true;
		}
		for (uint64_t f = 8; f <= 24; f += 8)  // the walk's three dependent reads
			m.access(record(pg) + f, 8, false, kNvm);
		m.background_access(record(pg) + 32, 4, true, kNvm);  // evicted = 0
		pg.evicted = false;
	}
	void merge()
	{
		Machine &m = c_.m;
		m.os_ns(wakeup_ns_);
		for (uint64_t p : order_) {
			Page &pg = pages_.at(p);
			visit(pg);
			if (!pg.evicted)
				continue;
			for (uint64_t b = pg.commit; b; b &= b - 1) {
				uint64_t line = static_cast<uint64_t>(std::countr_zero(b)) * 64;
				for (uint64_t w = 0; w < 64; w += 8) {
					m.access(kShadows + pg.index * 4096 + line + w, 8, false, kNvm);
					m.access((p << 12) + line + w, 8, true, kNvm);
				}
				m.stats.checkpoint_bytes += 64;
				flush((p << 12) + line, 64);
			}
			m.stats.consolidations++;
			flush(commit(pg), 24);
			m.access(record(pg) + 32, 4, true, kNvm);  // evicted = 2
			flush(record(pg), kRecordBytes);
			pg.evicted = false;
		}
	}

	const Context &c_;
	bool tracked_, stack_;
	double period_cycles_, next_run_, wakeup_ns_, pte_cycles_;
	std::unordered_map<uint64_t, Page> pages_;
	std::vector<uint64_t> order_;  // pages in allocation order: the list
	SspTlb tlb_;
	uint64_t last_page_ = kNoPage;
};

// The paper's "10us", "100us", "1ms": its merge thread's sleep(100 / 1000 / 10000) timer ticks.
PROSPER_REGISTER_MECHANISM({"ssp-gemos-10us",
			    "SSP as the Prosper paper's artifact ran its \"10us\": merge every 100 gemOS ticks (2.56 ms)",
			    false, [](const Context &c) { return std::make_unique<SspGemos>(c, 100, true); }});
PROSPER_REGISTER_MECHANISM({"ssp-gemos-100us",
			    "SSP as the Prosper paper's artifact ran its \"100us\": merge every 1000 ticks (25.6 ms)",
			    false, [](const Context &c) { return std::make_unique<SspGemos>(c, 1000, true); }});
PROSPER_REGISTER_MECHANISM({"ssp-gemos-1ms",
			    "SSP as the Prosper paper's artifact ran its \"1ms\": merge every 10000 ticks (256 ms)",
			    false, [](const Context &c) { return std::make_unique<SspGemos>(c, 10000, true); }});
PROSPER_REGISTER_MECHANISM({"nvm-gemos-10us", "an NVM region under ssp-gemos-10us's build that it does not track",
			    false, [](const Context &c) { return std::make_unique<SspGemos>(c, 100, false); }});
PROSPER_REGISTER_MECHANISM({"nvm-gemos-100us", "an NVM region under ssp-gemos-100us's build that it does not track",
			    false, [](const Context &c) { return std::make_unique<SspGemos>(c, 1000, false); }});
PROSPER_REGISTER_MECHANISM({"nvm-gemos-1ms", "an NVM region under ssp-gemos-1ms's build that it does not track",
			    false, [](const Context &c) { return std::make_unique<SspGemos>(c, 10000, false); }});

}  // namespace
}  // namespace prosper::sim

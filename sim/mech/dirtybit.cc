// dirtybit.cc -- page-level dirty bits, as the Prosper authors' baseline: the region in DRAM;
// at the interval end the OS scans the PTEs (stack: from the page of SP-128 up to the top;
// heap: every page the program has touched), copies each dirty 4 KiB page to an NVM log, fences,
// copies it again into the NVM image, fences, clears the dirty bits and invalidates each page's
// TLB entry.  The first checkpoint of a stack copies its whole active region.  The OS's own work
// around the copy is charged as for Prosper (OsCheckpointCost): the paper's gemOS checkpoints
// both the same way.
#include "keyset.h"
#include "prosper/stackckpt.h"
#include "mechanism.h"

namespace prosper::sim {
namespace {

class Dirtybit : public Mechanism {
public:
	explicit Dirtybit(const Context &c)
	    : c_(c), pte_cycles_(c.cfg.get("pte_scan_cycles")), tlb_ns_(c.cfg.get("tlb_invalidate_ns")), os_(c.cfg)
	{
	}
	void access(const trace::Event &e) override
	{
		bool store = e.op == trace::kStore;
		c_.m.access(e.addr, e.size, store, kDram);
		for (uint64_t p = e.addr >> 12; p <= (e.addr + e.size - 1) >> 12; p++) {
			if (store)
				dirty_.insert(p);
			if (c_.region == trace::kHeap)
				seen_.insert(p);
		}
	}
	void interval_end(uint64_t sp) override
	{
		Machine &m = c_.m;
		uint64_t pages = 0, scanned = 0;
		if (c_.region == trace::kStack && c_.stack.end > c_.stack.start) {
			uint64_t lo;
			scanned = prosper_stack_active_pages(sp, c_.stack.start, c_.stack.end, 0, &lo);
			for (uint64_t p = lo; p < lo + scanned; p++)
				pages += first_ || dirty_.contains(p);
		} else {
			scanned = seen_.size();
			pages = dirty_.size();
		}
		first_ = false;
		m.compute(pte_cycles_ * scanned);
		uint64_t bytes = pages * 4096;
		m.bulk_copy(bytes, kDram, kNvm);  // step 1: into the NVM log
		m.sfence();
		m.bulk_copy(bytes, kNvm, kNvm);   // step 2: into the NVM image
		m.sfence();
		m.os_ns(tlb_ns_ * pages);
		os_.charge(m, bytes);
		m.stats.checkpoint_bytes += bytes;
		dirty_.clear();
	}

private:
	const Context &c_;
	double pte_cycles_, tlb_ns_;
	OsCheckpointCost os_;
	bool first_ = true;
	KeySet dirty_, seen_;
};

PROSPER_REGISTER_MECHANISM({"dirtybit", "DRAM, 4 KiB dirty pages copied to NVM at interval end", false,
			    [](const Context &c) { return std::make_unique<Dirtybit>(c); }});

}  // namespace
}  // namespace prosper::sim

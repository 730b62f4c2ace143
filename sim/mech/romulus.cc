// romulus.cc -- Romulus with a hardware log, as the Prosper authors built the baseline: main
// copy in NVM; per store the hardware appends a 16-byte {address, size} record to an NVM log
// (write-combined: one line write per four records, no core stall beyond the write queue).
// At the interval end: clwb the main lines of every record, sfence, then for every record copy
// main -> back (no coalescing: overlapping records are copied again, as in the authors'
// implementation), clwb the back lines, sfence, and truncate the log (8-byte store, clwb, sfence).
#include <vector>

#include "log_area.h"
#include "mechanism.h"

namespace prosper::sim {
namespace {

class Romulus : public Mechanism {
public:
	explicit Romulus(const Context &c) : c_(c) {}
	void access(const trace::Event &e) override
	{
		Machine &m = c_.m;
		bool store = e.op == trace::kStore;
		m.access(e.addr, e.size, store, kNvm);
		if (!store)
			return;
		log_.push_back({e.addr, e.size});
		m.stats.log_bytes += kLogRecordHeader;
		if (log_.size() % 4 == 0)  // four 16-byte records fill a line of the write-combining buffer
			m.write_line(kNvm);
	}
	void interval_end(uint64_t) override
	{
		Machine &m = c_.m;
		if (log_.size() % 4)
			m.write_line(kNvm);
		for (auto &r : log_)
			m.clwb_range(r.addr, r.size);
		m.sfence();
		for (auto &r : log_) {
			m.access(r.addr, r.size, false, kNvm);
			m.access(kBackArea + r.addr, r.size, true, kNvm);
			m.clwb_range(kBackArea + r.addr, r.size);
			m.stats.checkpoint_bytes += r.size;
		}
		m.sfence();
		m.access(kLogArea - 64, 8, true, kNvm);
		m.clwb(kLogArea - 64);
		m.sfence();
		log_.clear();
	}

private:
	struct Record {
		uint64_t addr;
		uint32_t size;
	};
	const Context &c_;
	std::vector<Record> log_;
};

PROSPER_REGISTER_MECHANISM({"romulus", "NVM main+back, HW {addr,size} log per store, copy main->back at interval end",
			    false, [](const Context &c) { return std::make_unique<Romulus>(c); }});

}  // namespace
}  // namespace prosper::sim

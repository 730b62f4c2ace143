// undo.cc -- undo logging with the region in NVM.  Per store: read the old bytes, append a
// record {address, size, old bytes} to the NVM log, clwb it, sfence (the old value must be
// durable before the store may reach NVM), then store in place.  At the interval end: clwb every
// line written in the interval, sfence, and truncate the log (one 8-byte store, clwb, sfence).
// undo-sp logs only stores that are not wholly below the interval's final SP; the lines of the
// others are still written in place (they live in NVM) but need no commit.
#include "log_area.h"
#include "mechanism.h"

namespace prosper::sim {
namespace {

class Undo : public Mechanism {
public:
	Undo(const Context &c, bool sp_aware) : c_(c), sp_aware_(sp_aware), log_(c.cfg.get("log_record_cycles")) {}
	void access(const trace::Event &e) override
	{
		Machine &m = c_.m;
		if (e.op != trace::kStore) {
			m.access(e.addr, e.size, false, kNvm);
			return;
		}
		if (!(sp_aware_ && dead_at_interval_end(c_, e))) {
			m.access(e.addr, e.size, false, kNvm);  // the old value
			log_.append(m, e.addr, e.size);
			m.sfence();
		}
		m.access(e.addr, e.size, true, kNvm);
	}
	void interval_end(uint64_t) override
	{
		Machine &m = c_.m;
		log_.write_back(m);
		m.access(kLogArea - 64, 8, true, kNvm);  // the log's length word := 0
		m.clwb(kLogArea - 64);
		m.sfence();
		log_.reset();
	}

private:
	const Context &c_;
	bool sp_aware_;
	SoftwareLog log_;
};

PROSPER_REGISTER_MECHANISM({"undo", "NVM, undo log record + fence per store, flush at interval end", false,
			    [](const Context &c) { return std::make_unique<Undo>(c, false); }});
PROSPER_REGISTER_MECHANISM({"undo-sp", "undo, only for stores above the interval's final SP", true,
			    [](const Context &c) { return std::make_unique<Undo>(c, true); }});

}  // namespace
}  // namespace prosper::sim

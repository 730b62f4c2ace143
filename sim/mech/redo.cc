// redo.cc -- redo logging with the region in NVM.  Per store: append a record {address, size,
// new bytes} to the NVM log and clwb it (no fence: the log only has to be durable at commit),
// and store to the cached home location, which must not reach NVM before the commit (modelled
// as staying cached: the model does not force it out).  At the interval end: sfence (log
// durable), a commit word (8-byte store, clwb, sfence), then apply: clwb every home line
// written in the interval, sfence, and reset the log.
// redo-sp logs only stores that are not wholly below the interval's final SP.
#include "log_area.h"
#include "mechanism.h"

namespace prosper::sim {
namespace {

class Redo : public Mechanism {
public:
	Redo(const Context &c, bool sp_aware) : c_(c), sp_aware_(sp_aware), log_(c.cfg.get("log_record_cycles")) {}
	void access(const trace::Event &e) override
	{
		Machine &m = c_.m;
		bool store = e.op == trace::kStore;
		m.access(e.addr, e.size, store, kNvm);
		if (store && !(sp_aware_ && dead_at_interval_end(c_, e)))
			log_.append(m, e.addr, e.size);
	}
	void interval_end(uint64_t) override
	{
		Machine &m = c_.m;
		m.sfence();
		m.access(kLogArea - 64, 8, true, kNvm);  // commit word
		m.clwb(kLogArea - 64);
		m.sfence();
		log_.write_back(m);
		log_.reset();
	}

private:
	const Context &c_;
	bool sp_aware_;
	SoftwareLog log_;
};

PROSPER_REGISTER_MECHANISM({"redo", "NVM, redo log record per store, commit and apply at interval end", false,
			    [](const Context &c) { return std::make_unique<Redo>(c, false); }});
PROSPER_REGISTER_MECHANISM({"redo-sp", "redo, only for stores above the interval's final SP", true,
			    [](const Context &c) { return std::make_unique<Redo>(c, true); }});

}  // namespace
}  // namespace prosper::sim

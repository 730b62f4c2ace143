// flush.cc -- the region in NVM, every store written back at once: clwb of each line it
// touches, then sfence (paper §II, Fig 3: "a clwb instruction after every store").
// flush-sp skips the clwb/sfence for stores that lie wholly below the interval's final SP.
#include "mechanism.h"

namespace prosper::sim {
namespace {

class Flush : public Mechanism {
public:
	Flush(const Context &c, bool sp_aware) : c_(c), sp_aware_(sp_aware) {}
	void access(const trace::Event &e) override
	{
		bool store = e.op == trace::kStore;
		c_.m.access(e.addr, e.size, store, kNvm);
		if (!store || (sp_aware_ && dead_at_interval_end(c_, e)))
			return;
		c_.m.clwb_range(e.addr, e.size);
		c_.m.sfence();
	}
	void interval_end(uint64_t) override {}

private:
	const Context &c_;
	bool sp_aware_;
};

PROSPER_REGISTER_MECHANISM({"flush", "NVM, clwb+sfence after every store", false,
			    [](const Context &c) { return std::make_unique<Flush>(c, false); }});
PROSPER_REGISTER_MECHANISM({"flush-sp", "flush, only for stores above the interval's final SP", true,
			    [](const Context &c) { return std::make_unique<Flush>(c, true); }});

}  // namespace
}  // namespace prosper::sim

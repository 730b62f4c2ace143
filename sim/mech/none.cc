// none.cc -- no persistence: the region lives in DRAM (the baseline every result is
// normalized to) or in NVM (what NVM residency alone costs).
#include "mechanism.h"

namespace prosper::sim {
namespace {

class None : public Mechanism {
public:
	None(const Context &c, Mem mem) : m_(c.m), mem_(mem) {}
	void access(const trace::Event &e) override { m_.access(e.addr, e.size, e.op == trace::kStore, mem_); }
	void interval_end(uint64_t) override {}

private:
	Machine &m_;
	Mem mem_;
};

PROSPER_REGISTER_MECHANISM({"none-dram", "no persistence, region in DRAM (the baseline)", false,
			    [](const Context &c) { return std::make_unique<None>(c, kDram); }});
PROSPER_REGISTER_MECHANISM({"none-nvm", "no persistence, region in NVM", false,
			    [](const Context &c) { return std::make_unique<None>(c, kNvm); }});

}  // namespace
}  // namespace prosper::sim

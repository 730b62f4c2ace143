// mechanism.h -- the one interface every persistence mechanism implements, and the registry.
//
// Contract:
//   - A Mechanism persists one region (the stack or the heap) of one simulated process on one
//     Machine.  It is created per simulation and owns all of its state; it never reads another
//     mechanism's state.  Same trace and config -> same result (no randomness, no wall clock).
//   - access(e) is called for every load and store of its region, in trace order, after the
//     machine's clock has been advanced to e.instr.  It performs the access on the machine (it
//     decides whether the region lives in DRAM or NVM) and every persistence action it takes for
//     that access, so that the clock and Stats include their cost.
//   - interval_end(sp) is called at every interval boundary (every interval_instr instructions;
//     not at the end of the trace), with the SP at that instant.  On return, the region's state
//     at that instant is durable (checkpoint or commit); its cost is charged to the clock.
//   - Region facts come from Context: the traced stack's bounds (if any) and, for SP-aware
//     variants, the SP at the end of each interval (an oracle only a trace can give; the paper's
//     Fig 3 uses it the same way).
//   - A mechanism file registers itself by name with PROSPER_REGISTER_MECHANISM; names are what
//     `prosper sim --stack/--heap` accept.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/machine.h"
#include "trace/trace.h"

namespace prosper::sim {

struct Context {
	Machine &m;
	const Config &cfg;
	uint8_t region;                        // trace::kStack or trace::kHeap
	trace::Range stack;                    // the traced stack (start == end == 0 if none)
	const std::vector<uint64_t> &final_sp; // SP at the end of interval i (last entry: trace end)
	const uint64_t &interval;              // index of the current interval
	uint64_t interval_instr;
};

class Mechanism {
public:
	virtual ~Mechanism() = default;
	virtual void access(const trace::Event &e) = 0;
	virtual void interval_end(uint64_t sp) = 0;
};

using Factory = std::function<std::unique_ptr<Mechanism>(const Context &)>;

struct MechanismInfo {
	std::string name;
	std::string summary;
	bool stack_only;  // needs the SP or the stack's bounds
	Factory make;
};

// Registry; throws std::invalid_argument for an unknown name.
int register_mechanism(MechanismInfo info);
const MechanismInfo &find_mechanism(const std::string &name);
std::vector<std::string> mechanism_names();

// Helpers shared by mechanisms.
// The OS's own work at a checkpoint that copies `bytes` (Dirtybit, Prosper): what the paper's gemOS
// pays beyond the copies the machine streams (timing.conf: os_checkpoint_ns, os_copy_ns_per_byte).
class OsCheckpointCost {
public:
	explicit OsCheckpointCost(const Config &cfg)
	    : fixed_ns_(cfg.get("os_checkpoint_ns")), per_byte_ns_(cfg.get("os_copy_ns_per_byte"))
	{
	}
	void charge(Machine &m, uint64_t bytes) const { m.os_ns(fixed_ns_ + per_byte_ns_ * static_cast<double>(bytes)); }

private:
	double fixed_ns_, per_byte_ns_;
};

// dead(): a store that lies wholly below the SP at the end of its interval.
inline bool dead_at_interval_end(const Context &c, const trace::Event &e)
{
	uint64_t i = c.interval < c.final_sp.size() ? c.interval : c.final_sp.size() - 1;
	return !c.final_sp.empty() && e.addr + e.size <= c.final_sp[i];
}

}  // namespace prosper::sim

#define PROSPER_CONCAT2(a, b) a##b
#define PROSPER_CONCAT(a, b) PROSPER_CONCAT2(a, b)
#define PROSPER_REGISTER_MECHANISM(...) \
	static const int PROSPER_CONCAT(registered_, __LINE__) = ::prosper::sim::register_mechanism(__VA_ARGS__)

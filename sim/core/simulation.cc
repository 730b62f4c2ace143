// simulation.cc -- the driver: decode once per pass, feed every combination batch by batch.
//
// Invariants:
//   - Every combination sees the same events and the same interval boundaries (multiples of
//     interval_instr instructions), so results differ only by mechanism.
//   - Interval ends are handled before the first event at or past the boundary, with the SP of
//     the last event before it.  No checkpoint at the end of the trace (as `prosper hw`).
//   - Accesses to region "other" (globals, libraries) go to DRAM without persistence in every
//     combination.
#include "simulation.h"

#include <chrono>
#include <memory>
#include <stdexcept>

namespace prosper::sim {

namespace {
using Clock = std::chrono::steady_clock;
// Events decoded per batch (32 MB).  Each combination's simulated caches and logs (up to a few
// MB of host memory) are cold in the host's caches again when its turn comes; 1 M events pay that
// once where 64 K paid it sixteen times (undo, redo, Prosper on Random: 8-15 % more events per
// second; results identical).
constexpr size_t kBatch = 1 << 20;

double secs(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

struct Combo {
	Machine m;
	uint64_t interval = 0, next_boundary, last_sp = 0, last_instr = 0;
	std::unique_ptr<Context> stack_ctx, heap_ctx;
	std::unique_ptr<Mechanism> stack, heap;
	Result r;
	Combo(const Config &cfg, uint64_t interval_instr) : m(cfg), next_boundary(interval_instr) {}
};

void check_region_use(const MechanismInfo &info, bool heap)
{
	if (heap && info.stack_only)
		throw std::invalid_argument("mechanism \"" + info.name + "\" works on the stack only");
}
}  // namespace

Report simulate(const Options &opt, const Config &cfg)
{
	Report rep;
	auto t0 = Clock::now();
	rep.interval_instr =
	    static_cast<uint64_t>(opt.interval_ms * 1e6 * cfg.get("core_ghz") / std::max(cfg.get("cpi"), 1e-9));
	if (rep.interval_instr == 0)
		throw std::invalid_argument("the interval must be at least one instruction");

	// Pass 1: the SP at each interval's end, the stack's bounds, and Fig 2's counts.
	std::vector<uint64_t> final_sp;
	trace::Range stack{};
	std::vector<trace::Event> buf(kBatch);
	{
		trace::Reader rd(opt.trace);
		uint64_t next = rep.interval_instr, sp = 0;
		std::vector<uint64_t> ends;  // end addresses of the current interval's stack stores
		auto close_interval = [&] {
			for (uint64_t end : ends)
				rep.stack_stores_beyond_final_sp += end <= sp;
			ends.clear();
			final_sp.push_back(sp);
		};
		while (size_t n = rd.next(buf.data(), buf.size())) {
			for (size_t i = 0; i < n; i++) {
				const trace::Event &e = buf[i];
				while (e.instr >= next) {
					close_interval();
					next += rep.interval_instr;
				}
				sp = e.sp;
				if (e.region == trace::kStack && e.op == trace::kStore) {
					rep.stack_stores++;
					ends.push_back(e.addr + e.size);
				}
			}
			rep.events += n;
		}
		close_interval();  // the trace's end closes the last (partial) interval
		for (auto &r : rd.ranges())
			if (r.region == trace::kStack) {
				stack = r;  // the first stack declared: the main thread's
				break;
			}
		rep.program = rd.program();
		rep.instructions = rd.instructions();
		rep.intervals = final_sp.size() - 1;
	}
	auto t1 = Clock::now();

	// The combinations: the baseline first, then stack x heap.
	std::vector<std::pair<std::string, std::string>> pairs = {{"none-dram", "none-dram"}};
	for (auto &h : opt.heap)
		for (auto &s : opt.stack)
			if (!(s == "none-dram" && h == "none-dram"))
				pairs.emplace_back(s, h);
	std::vector<std::unique_ptr<Combo>> combos;
	for (auto &[s, h] : pairs) {
		const MechanismInfo &si = find_mechanism(s), &hi = find_mechanism(h);
		check_region_use(hi, true);
		auto c = std::make_unique<Combo>(cfg, rep.interval_instr);
		c->stack_ctx.reset(new Context{c->m, cfg, trace::kStack, stack, final_sp, c->interval, rep.interval_instr});
		c->heap_ctx.reset(new Context{c->m, cfg, trace::kHeap, stack, final_sp, c->interval, rep.interval_instr});
		c->stack = si.make(*c->stack_ctx);
		c->heap = hi.make(*c->heap_ctx);
		c->r.stack = s;
		c->r.heap = h;
		combos.push_back(std::move(c));
	}

	// Pass 2: simulate.
	trace::Reader rd(opt.trace);
	double decode = secs(t0, t1);
	for (;;) {
		auto d0 = Clock::now();
		size_t n = rd.next(buf.data(), buf.size());
		decode += secs(d0, Clock::now());
		if (!n)
			break;
		for (auto &cp : combos) {
			Combo &c = *cp;
			auto s0 = Clock::now();
			for (size_t i = 0; i < n; i++) {
				const trace::Event &e = buf[i];
				while (e.instr >= c.next_boundary) {
					c.m.run_instructions(c.next_boundary - c.last_instr);
					c.last_instr = c.next_boundary;
					double t = c.m.now;
					c.stack->interval_end(c.last_sp);
					c.heap->interval_end(c.last_sp);
					c.m.stats.checkpoint_cycles += c.m.now - t;
					c.m.stats.checkpoints++;
					c.interval++;
					c.next_boundary += rep.interval_instr;
				}
				c.m.run_instructions(e.instr - c.last_instr);
				c.last_instr = e.instr;
				if (e.region == trace::kStack)
					c.stack->access(e);
				else if (e.region == trace::kHeap)
					c.heap->access(e);
				else
					c.m.access(e.addr, e.size, e.op == trace::kStore, kDram);
				c.last_sp = e.sp;
			}
			c.r.seconds += secs(s0, Clock::now());
		}
	}
	auto t2 = Clock::now();
	rep.decode_seconds = decode;
	rep.wall_seconds = secs(t0, t2);
	for (auto &cp : combos) {
		Combo &c = *cp;
		c.m.run_instructions(rep.instructions - c.last_instr);
		c.r.cycles = c.m.now;
		c.r.stats = c.m.stats;
		c.r.events_per_second = c.r.seconds > 0 ? rep.events / c.r.seconds : 0;
		rep.results.push_back(c.r);
	}
	double base = rep.results[0].cycles;
	rep.events_per_second = 0;
	for (auto &r : rep.results) {
		r.normalized = base > 0 ? r.cycles / base : 0;
		if (rep.events_per_second == 0 || r.events_per_second < rep.events_per_second)
			rep.events_per_second = r.events_per_second;
	}
	return rep;
}

}  // namespace prosper::sim

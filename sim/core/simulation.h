// simulation.h -- one pass over a trace drives every requested (stack, heap) combination, each
// on its own Machine; the SP-aware oracle (SP at each interval's end) comes from a first,
// decode-only pass.
#pragma once
#include <string>
#include <vector>

#include "mech/mechanism.h"
#include "config.h"

namespace prosper::sim {

struct Options {
	std::string trace;
	std::vector<std::string> stack = {"none-dram"}, heap = {"none-dram"};
	double interval_ms = 10;
};

struct Result {
	std::string stack, heap;
	double cycles = 0, normalized = 0;
	Stats stats;
	double seconds = 0;  // wall time spent in this combination (decoding excluded)
	double events_per_second = 0;
};

struct Report {
	std::string program;
	uint64_t events = 0, instructions = 0, intervals = 0, interval_instr = 0;
	uint64_t stack_stores = 0, stack_stores_beyond_final_sp = 0;  // paper Fig 2
	double decode_seconds = 0, wall_seconds = 0;
	double events_per_second = 0;  // the slowest combination's rate
	std::vector<Result> results;   // results[0] is the baseline none-dram + none-dram
};

// Throws trace::TraceError (bad trace), ConfigError, std::invalid_argument (bad mechanism).
Report simulate(const Options &opt, const Config &cfg);

}  // namespace prosper::sim

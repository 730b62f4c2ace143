// main.cc -- prosper-sim: `prosper-sim TRACE [--stack M,...] [--heap M,...] [--interval-ms N]
// [--config FILE] [--json]`, `prosper-sim --list`, `prosper-sim --import-kindle IN OUT`,
// `prosper-sim --export-kindle TRACE OUT`.
// Exit codes: 0 ok, 1 failure, 2 usage error or refused input (bad trace, config, mechanism).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cli.h"
#include "core/simulation.h"
#include "trace/kindle.h"

using namespace prosper;
using sim::is_pagetable_command;
using sim::pagetable_main;
using sim::json_escape;

static void usage(FILE *f)
{
	std::fprintf(f,
		     "usage: prosper-sim TRACE [--stack MECH[,MECH...]] [--heap MECH[,MECH...]] [--interval-ms MS]\n"
		     "                   [--profile NAME] [--config FILE] [--json]\n"
		     "       prosper-sim --list\n"
		     "       prosper-sim --import-kindle KINDLE_IMAGE OUT_TRACE\n"
		     "       prosper-sim --export-kindle TRACE OUT_KINDLE_IMAGE\n");
}

static void json_result(const sim::Result &r, bool last)
{
	const sim::Stats &s = r.stats;
	std::printf("    {\"stack\": \"%s\", \"heap\": \"%s\", \"cycles\": %.0f, \"normalized\": %.6f, "
		    "\"nvm_write_bytes\": %llu, \"flushes\": %llu, \"fences\": %llu, \"checkpoint_bytes\": %llu, "
		    "\"log_bytes\": %llu, \"bitmap_loads\": %llu, \"bitmap_stores\": %llu, \"checkpoints\": %llu, "
		    "\"consolidations\": %llu, \"llc_misses\": %llu, \"pages_migrated\": %llu, "
		    "\"pages_written_back\": %llu, \"checkpoint_cycles\": %.0f, \"scan_cycles\": %.0f, "
		    "\"select_cycles\": %.0f, \"copy_cycles\": %.0f, "
		    "\"seconds\": %.6f, \"events_per_second\": %.0f}%s\n",
		    r.stack.c_str(), r.heap.c_str(), r.cycles, r.normalized, (unsigned long long)s.nvm_write_bytes,
		    (unsigned long long)s.flushes, (unsigned long long)s.fences, (unsigned long long)s.checkpoint_bytes,
		    (unsigned long long)s.log_bytes, (unsigned long long)s.bitmap_loads, (unsigned long long)s.bitmap_stores,
		    (unsigned long long)s.checkpoints, (unsigned long long)s.consolidations,
		    (unsigned long long)s.llc_misses, (unsigned long long)s.pages_migrated,
		    (unsigned long long)s.pages_written_back, s.checkpoint_cycles, s.scan_cycles, s.select_cycles, s.copy_cycles, r.seconds,
		    r.events_per_second,
		    last ? "" : ",");
}

std::string sim::json_escape(const std::string &s)  // also used by ptmain.cc
{
	std::string o;
	for (char c : s) {
		if (c == '"' || c == '\\')
			o += '\\';
		if (static_cast<unsigned char>(c) < 0x20)
			continue;
		o += c;
	}
	return o;
}

int main(int argc, char **argv)
{
	if (is_pagetable_command(argc, argv))
		return pagetable_main(argc, argv);  // ptmain.cc: --pagetable, --synth
	sim::Options opt;
	sim::Config cfg;
	bool json = false;
	sim::TimingChoice timing;
	try {
		for (int i = 1; i < argc; i++) {
			std::string a = argv[i];
			auto value = [&] { return sim::option_value(argc, argv, i); };
			if (a == "--list") {
				for (auto &n : sim::mechanism_names())
					std::printf("%-15s %s%s\n", n.c_str(), sim::find_mechanism(n).summary.c_str(),
						    sim::find_mechanism(n).stack_only ? " (stack only)" : "");
				return 0;
			} else if (a == "--import-kindle") {
				std::string in = value(), out = value();
				uint64_t n = trace::import_kindle(in, out);
				std::fprintf(stderr, "prosper-sim: %llu Kindle tuples written to %s\n", (unsigned long long)n,
					     out.c_str());
				return 0;
			} else if (a == "--export-kindle") {
				std::string in = value(), out = value();
				trace::KindleExport x = trace::export_kindle(in, out);
				std::fprintf(stderr,
					     "prosper-sim: %llu Kindle tuples (%llu stack and %llu heap areas) written to %s; "
					     "%llu accesses to other memory have no Kindle area and were left out\n",
					     (unsigned long long)x.tuples, (unsigned long long)x.stack_areas,
					     (unsigned long long)x.heap_areas, out.c_str(), (unsigned long long)x.other_skipped);
				return 0;
			} else if (a == "--stack") {
				opt.stack = sim::split_list(value());
			} else if (a == "--heap") {
				opt.heap = sim::split_list(value());
			} else if (sim::common_option(a, value, opt.interval_ms, timing, json)) {
				// --interval-ms, --profile, --config, --json: taken
			} else if (a == "-h" || a == "--help") {
				usage(stdout);
				return 0;
			} else if (!a.empty() && a[0] == '-') {
				throw std::invalid_argument("unknown option " + a);
			} else if (opt.trace.empty()) {
				opt.trace = a;
			} else {
				throw std::invalid_argument("one trace only");
			}
		}
		if (opt.trace.empty())
			throw std::invalid_argument("no trace given");
		if (opt.stack.empty() || opt.heap.empty())
			throw std::invalid_argument("--stack and --heap take at least one mechanism");
		for (auto &n : opt.stack)
			sim::find_mechanism(n);
		for (auto &n : opt.heap)
			sim::find_mechanism(n);
		timing.apply(cfg);
	} catch (const std::exception &e) {
		std::fprintf(stderr, "prosper-sim: %s\n", e.what());
		usage(stderr);
		return 2;
	}

	sim::Report rep;
	try {
		rep = sim::simulate(opt, cfg);
	} catch (const std::exception &e) {
		return sim::fail(e);
	}

	if (json) {
		std::printf("{\"trace\": \"%s\", \"program\": \"%s\", \"profile\": \"%s\", \"events\": %llu, "
			    "\"instructions\": %llu, \"interval_instr\": %llu, \"intervals\": %llu, \"stack_stores\": %llu, "
			    "\"stack_stores_beyond_final_sp\": %llu, \"decode_seconds\": %.6f, \"wall_seconds\": %.6f, "
			    "\"events_per_second\": %.0f, \"results\": [\n",
			    json_escape(opt.trace).c_str(), json_escape(rep.program).c_str(), json_escape(timing.profile).c_str(),
			    (unsigned long long)rep.events, (unsigned long long)rep.instructions,
			    (unsigned long long)rep.interval_instr,
			    (unsigned long long)rep.intervals, (unsigned long long)rep.stack_stores,
			    (unsigned long long)rep.stack_stores_beyond_final_sp, rep.decode_seconds, rep.wall_seconds,
			    rep.events_per_second);
		for (size_t i = 0; i < rep.results.size(); i++)
			json_result(rep.results[i], i + 1 == rep.results.size());
		std::printf("]}\n");
		return 0;
	}
	std::printf("prosper-sim: %s (%s), profile %s: %llu events, %llu instructions, %llu intervals of %llu instructions\n",
		    opt.trace.c_str(), rep.program.c_str(), timing.profile.c_str(), (unsigned long long)rep.events,
		    (unsigned long long)rep.instructions, (unsigned long long)rep.intervals,
		    (unsigned long long)rep.interval_instr);
	std::printf("stack stores below the interval's final SP: %llu of %llu (%.1f%%)\n",
		    (unsigned long long)rep.stack_stores_beyond_final_sp, (unsigned long long)rep.stack_stores,
		    rep.stack_stores ? 100.0 * rep.stack_stores_beyond_final_sp / rep.stack_stores : 0.0);
	std::printf("%-15s %-15s %14s %8s %12s %10s %10s %12s %10s %10s %10s\n", "stack", "heap", "cycles", "norm",
		    "nvm_wr_B", "flushes", "fences", "ckpt_B", "bm_loads", "bm_stores", "Mev/s");
	for (auto &r : rep.results)
		std::printf("%-15s %-15s %14.0f %8.3f %12llu %10llu %10llu %12llu %10llu %10llu %10.1f\n", r.stack.c_str(),
			    r.heap.c_str(), r.cycles, r.normalized, (unsigned long long)r.stats.nvm_write_bytes,
			    (unsigned long long)r.stats.flushes, (unsigned long long)r.stats.fences,
			    (unsigned long long)r.stats.checkpoint_bytes, (unsigned long long)r.stats.bitmap_loads,
			    (unsigned long long)r.stats.bitmap_stores, r.events_per_second / 1e6);
	std::printf("simulator: decode %.2f s, wall %.2f s, slowest combination %.1f M events/s\n", rep.decode_seconds,
		    rep.wall_seconds, rep.events_per_second / 1e6);
	return 0;
}

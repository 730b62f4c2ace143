// ptmain.cc -- the page-table study's command line (main.cc hands over to it):
//   prosper-sim TRACE --pagetable SCHEME[,SCHEME...] [--interval-ms MS] [--config FILE] [--json]
//   prosper-sim --synth SPEC OUT        (synthetic allocation traces, trace/synth.h)
// Exit codes as main.cc: 0 ok, 1 failure, 2 usage error or refused input.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli.h"
#include "core/ptstudy.h"
#include "trace/synth.h"

using namespace prosper;
using sim::json_escape;

namespace {

void usage(FILE *f)
{
	std::fprintf(f, "usage: prosper-sim TRACE --pagetable SCHEME[,SCHEME...] [--interval-ms MS] [--profile NAME]\n"
			"                   [--config FILE] [--json]\n"
			"       prosper-sim --synth seq:SIZE|stride:PAGES:GAP[:PASSES]|allocfree:TOTAL:CHUNK[:PASSES] OUT\n"
			"schemes: persistent, rebuild (Kindle's list, as its artifact keeps it), rebuild-indexed, volatile\n");
}

void print_json(const sim::PtOptions &opt, const sim::PtReport &rep)
{
	std::printf("{\"trace\": \"%s\", \"program\": \"%s\", \"events\": %llu, \"mappings\": %llu, "
		    "\"instructions\": %llu, \"interval_ms\": %g, \"results\": [\n",
		    json_escape(opt.trace).c_str(), json_escape(rep.program).c_str(), (unsigned long long)rep.events,
		    (unsigned long long)rep.mappings, (unsigned long long)rep.instructions, opt.interval_ms);
	for (size_t i = 0; i < rep.results.size(); i++) {
		const sim::PtResult &r = rep.results[i];
		auto levels = [](const uint64_t *v) {
			return "[" + std::to_string(v[1]) + ", " + std::to_string(v[2]) + ", " + std::to_string(v[3]) + ", " +
			       std::to_string(v[4]) + "]";
		};
		std::printf("    {\"scheme\": \"%s\", \"cycles\": %.0f, \"ms\": %.6f, \"resume_ms\": %.6f, \"checkpoints\": %llu, "
			    "\"faults\": %llu, \"pages_unmapped\": %llu, \"tlb_misses\": %llu, \"walks\": %llu, "
			    "\"entry_writes\": %s, \"tables_allocated\": %s, \"tables_freed\": %s, \"max_pages\": %llu, "
			    "\"max_table_pages\": %llu, \"list_entry_writes\": %llu, \"pages_walked\": %llu, \"list_visits\": %llu, "
			    "\"flushes\": %llu, \"fences\": %llu, \"nvm_write_bytes\": %llu}%s\n",
			    r.scheme.c_str(), r.cycles, r.ms, r.resume_ms, (unsigned long long)r.stats.checkpoints,
			    (unsigned long long)r.faults, (unsigned long long)r.pages_unmapped,
			    (unsigned long long)r.tlb_misses, (unsigned long long)r.walks, levels(r.entry_writes).c_str(),
			    levels(r.tables_allocated).c_str(), levels(r.tables_freed).c_str(),
			    (unsigned long long)r.max_pages, (unsigned long long)r.max_table_pages,
			    (unsigned long long)r.list_entry_writes, (unsigned long long)r.pages_walked,
			    (unsigned long long)r.list_visits,
			    (unsigned long long)r.stats.flushes, (unsigned long long)r.stats.fences,
			    (unsigned long long)r.stats.nvm_write_bytes, i + 1 == rep.results.size() ? "" : ",");
	}
	std::printf("]}\n");
}

void print_table(const sim::PtOptions &opt, const sim::PtReport &rep)
{
	std::printf("prosper-sim: %s (%s): %llu accesses, %llu mappings, %llu instructions, %g ms intervals\n",
		    opt.trace.c_str(), rep.program.c_str(), (unsigned long long)rep.events, (unsigned long long)rep.mappings,
		    (unsigned long long)rep.instructions, opt.interval_ms);
	std::printf("%-10s %12s %10s %8s %10s %10s %10s %10s %10s\n", "scheme", "ms", "resume_ms", "ckpts", "faults",
		    "pte_writes", "tables", "flushes", "list_wr");
	for (auto &r : rep.results) {
		uint64_t writes = r.entry_writes[1] + r.entry_writes[2] + r.entry_writes[3] + r.entry_writes[4];
		uint64_t tables = r.tables_allocated[1] + r.tables_allocated[2] + r.tables_allocated[3];
		std::printf("%-10s %12.3f %10.3f %8llu %10llu %10llu %10llu %10llu %10llu\n", r.scheme.c_str(), r.ms,
			    r.resume_ms, (unsigned long long)r.stats.checkpoints, (unsigned long long)r.faults,
			    (unsigned long long)writes, (unsigned long long)tables, (unsigned long long)r.stats.flushes,
			    (unsigned long long)r.list_entry_writes);
	}
}

}  // namespace

bool sim::is_pagetable_command(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (std::string(argv[i]) == "--pagetable" || std::string(argv[i]) == "--synth")
			return true;
	return false;
}

int sim::pagetable_main(int argc, char **argv)
{
	sim::PtOptions opt;
	sim::Config cfg;
	bool json = false, parsed = false;
	sim::TimingChoice timing;
	std::string synth_spec, synth_out;
	try {
		for (int i = 1; i < argc; i++) {
			std::string a = argv[i];
			auto value = [&] { return sim::option_value(argc, argv, i); };
			if (a == "--synth") {
				synth_spec = value();
				synth_out = value();
			} else if (a == "--pagetable") {
				opt.schemes = sim::split_list(value());
			} else if (sim::common_option(a, value, opt.interval_ms, timing, json)) {
				// --interval-ms, --profile, --config, --json: taken
			} else if (!a.empty() && a[0] == '-') {
				throw std::invalid_argument("unknown option " + a + " (with --pagetable or --synth)");
			} else if (opt.trace.empty()) {
				opt.trace = a;
			} else {
				throw std::invalid_argument("one trace only");
			}
		}
		if (!synth_spec.empty()) {
			if (!opt.trace.empty())
				throw std::invalid_argument("--synth takes no trace");
			trace::write_synthetic(synth_spec, synth_out);
			std::fprintf(stderr, "prosper-sim: synthetic trace %s written to %s\n", synth_spec.c_str(),
				     synth_out.c_str());
			return 0;
		}
		if (opt.trace.empty())
			throw std::invalid_argument("no trace given");
		if (opt.schemes.empty())
			throw std::invalid_argument("--pagetable takes at least one scheme");
		timing.apply(cfg);
		parsed = true;
		sim::PtReport rep = sim::simulate_pagetable(opt, cfg);
		if (json)
			print_json(opt, rep);
		else
			print_table(opt, rep);
		return 0;
	} catch (const std::exception &e) {
		int rc = sim::fail(e);
		if (!parsed && dynamic_cast<const std::invalid_argument *>(&e))
			usage(stderr);
		return rc;
	}
}

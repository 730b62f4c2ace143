// ptstudy.h -- the page-table study (Kindle §III-A, Fig 4, Tables III and IV): one pass over a
// trace with MAP/UNMAP records drives every requested page-table scheme, each on its own
// Machine, page table and TLB.
#pragma once
#include <string>
#include <vector>

#include "config.h"
#include "machine.h"

namespace prosper::sim {

struct PtOptions {
	std::string trace;
	std::vector<std::string> schemes = {"persistent", "rebuild"};
	double interval_ms = 10;
};

struct PtResult {
	std::string scheme;
	double cycles = 0, ms = 0, resume_ms = 0;
	uint64_t faults = 0, pages_unmapped = 0, tlb_misses = 0, walks = 0;
	uint64_t entry_writes[5] = {};   // by level 1..4 (index 0 unused)
	uint64_t tables_allocated[5] = {}, tables_freed[5] = {};
	uint64_t max_pages = 0, max_table_pages = 0;
	uint64_t list_entry_writes = 0, pages_walked = 0, list_visits = 0;
	Stats stats;
};

struct PtReport {
	std::string program;
	uint64_t events = 0, mappings = 0, instructions = 0;
	std::vector<PtResult> results;
};

// The scheme names simulate_pagetable accepts.
const std::vector<std::string> &pagetable_schemes();
// Throws trace::TraceError (bad trace), ConfigError, std::invalid_argument (unknown scheme).
PtReport simulate_pagetable(const PtOptions &opt, const Config &cfg);

}  // namespace prosper::sim

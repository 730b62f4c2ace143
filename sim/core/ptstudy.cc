// ptstudy.cc -- the page-table study's driver (ptstudy.h).
//
// Notes (assumptions, beside those of machine.h, pagetable.h and each scheme):
//   - The study's process keeps its anonymous memory (trace regions heap and stack) in NVM, as
//     Kindle's MAP_NVM allocations; only those pages are in the modelled page table.  Accesses to
//     region "other" (the program's file mappings, whose tables exist before the trace and are
//     the same in every scheme) go to DRAM without translation costs.
//   - A TLB of tlb_entries (tlb_ways-way, LRU) caches translations.  A miss on a present page is
//     a hardware walk: one 8-byte load per level, through the caches, from where the scheme keeps
//     its tables.  A miss on an absent page is a minor fault: page_fault_ns, the data page zeroed
//     with ordinary stores, and the page table's changes handed to the scheme.
//   - UNMAP, and MAP over pages already present (MAP_FIXED replaces them), clear the range's PTEs;
//     if any was present, the TLB is flushed whole and tlb_invalidate_ns is charged per page up
//     to tlb_flush_ceiling pages (beyond it a kernel flushes everything at about that cost).
//   - System-call entry and VMA bookkeeping cost the same in every scheme and are not charged.
//   - Checkpoints are timer-driven, as Kindle's: one is taken before the first event at or past
//     the interval in simulated time (cycles, stalls included, not instructions as in
//     simulation.cc: a run of page faults executes few instructions), counted from the end of
//     the last checkpoint -- Kindle's gemOS counts timer ticks and restarts the count when a
//     checkpoint ends, so a checkpoint longer than the interval does not make the next one come
//     at once.  None at the trace's end.
#include "ptstudy.h"

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "mech/pt_scheme.h"
#include "trace/trace.h"

namespace prosper::sim {

namespace {
constexpr size_t kBatch = 1 << 16;

struct Run {
	Machine m;
	PageTable pt;
	Cache tlb;
	std::unique_ptr<PtScheme> scheme;
	std::vector<PtOp> ops;
	double next_checkpoint;
	uint64_t last_instr = 0;
	PtResult r;
	Run(const Config &cfg, double interval_cycles)
	    : m(cfg), tlb(new_tlb(cfg)), next_checkpoint(interval_cycles)
	{
	}
	static Cache new_tlb(const Config &cfg)
	{
		// one "line" per 4 KiB page: the Cache class numbers lines by whatever it is given
		return Cache(static_cast<uint64_t>(cfg.get("tlb_entries")) << kPageShift,
			     static_cast<unsigned>(cfg.get("tlb_ways")), 1u << kPageShift);
	}
};

class Driver {
public:
	Driver(const Config &cfg)
	    : cfg_(cfg), fault_ns_(cfg.get("page_fault_ns")), invlpg_ns_(cfg.get("tlb_invalidate_ns")),
	      ceiling_(cfg.get("tlb_flush_ceiling"))
	{
	}
	void apply_ops(Run &u)
	{
		for (auto &op : u.ops) {
			u.scheme->apply(op);
			if (op.kind == PtOp::kAlloc)
				u.r.tables_allocated[op.level]++;
			else if (op.kind == PtOp::kFree)
				u.r.tables_freed[op.level]++;
			else
				u.r.entry_writes[op.level]++;
		}
		u.ops.clear();
		u.r.max_pages = std::max(u.r.max_pages, u.pt.pages());
		u.r.max_table_pages = std::max(u.r.max_table_pages, u.pt.table_pages());
	}
	void unmap(Run &u, uint64_t start, uint64_t end)
	{
		uint64_t n = u.pt.unmap(start, end, u.ops);
		apply_ops(u);
		if (!n)
			return;
		u.r.pages_unmapped += n;
		u.tlb = Run::new_tlb(cfg_);
		u.m.os_ns(invlpg_ns_ * std::min<double>(static_cast<double>(n), ceiling_));
	}
	// translate -- the TLB lookup of one page, and the walk or fault behind a miss.
	void translate(Run &u, uint64_t page)
	{
		uint64_t vpn = page >> kPageShift;
		if (u.tlb.find(vpn) >= 0)
			return;
		u.r.tlb_misses++;
		std::array<uint32_t, kPtLevels> frame;
		std::array<uint16_t, kPtLevels> index;
		if (u.pt.walk(page, frame, index)) {
			u.r.walks++;
			for (unsigned l = 0; l < kPtLevels; l++)
				u.m.access(entry_addr(frame[l], index[l]), 8, false, u.scheme->table_mem());
		} else {
			u.r.faults++;
			u.m.os_ns(fault_ns_);
			for (uint64_t off = 0; off < (1u << kPageShift); off += u.m.line_bytes())
				u.m.access(page + off, u.m.line_bytes(), true, kNvm);  // clear_page
			u.pt.touch(page, u.ops);
			apply_ops(u);
		}
		u.tlb.insert(vpn, false, kDram);
	}
	void event(Run &u, const trace::Event &e)
	{
		switch (e.op) {
		case trace::kMap:
		case trace::kUnmap:
			u.scheme->area(e.addr, e.sp, e.op == trace::kMap);
			unmap(u, e.addr, e.sp);
			return;
		default:
			break;
		}
		if (e.region == trace::kOther) {
			u.m.access(e.addr, e.size, e.op == trace::kStore, kDram);
			return;
		}
		uint64_t first = e.addr >> kPageShift, last = (e.addr + e.size - 1) >> kPageShift;
		for (uint64_t p = first; p <= last; p++)
			translate(u, p << kPageShift);
		u.m.access(e.addr, e.size, e.op == trace::kStore, kNvm);
	}

private:
	const Config &cfg_;
	double fault_ns_, invlpg_ns_, ceiling_;
};

std::unique_ptr<PtScheme> make_scheme(const std::string &name, Run &u, const Config &cfg)
{
	if (name == "persistent")
		return make_persistent_tables(u.m, cfg);
	if (name == "rebuild")
		return make_rebuild_tables(u.m, cfg, u.pt);
	if (name == "rebuild-indexed")
		return make_indexed_rebuild_tables(u.m, cfg, u.pt);
	if (name == "volatile")
		return make_volatile_tables(u.m);
	throw std::invalid_argument("unknown page-table scheme \"" + name + "\" (persistent, rebuild, rebuild-indexed, volatile)");
}
}  // namespace

const std::vector<std::string> &pagetable_schemes()
{
	static const std::vector<std::string> names = {"persistent", "rebuild", "rebuild-indexed", "volatile"};
	return names;
}

PtReport simulate_pagetable(const PtOptions &opt, const Config &cfg)
{
	PtReport rep;
	double interval_cycles = opt.interval_ms * 1e6 * cfg.get("core_ghz");
	if (!(interval_cycles >= 1))
		throw std::invalid_argument("the interval must be at least one cycle");
	std::vector<std::unique_ptr<Run>> runs;
	for (auto &name : opt.schemes) {
		auto u = std::make_unique<Run>(cfg, interval_cycles);
		u->scheme = make_scheme(name, *u, cfg);
		u->r.scheme = name;
		runs.push_back(std::move(u));
	}
	Driver d(cfg);
	trace::Reader rd(opt.trace);
	rd.deliver_mappings(true);
	std::vector<trace::Event> buf(kBatch);
	while (size_t n = rd.next(buf.data(), buf.size())) {
		for (auto &up : runs) {
			Run &u = *up;
			for (size_t i = 0; i < n; i++) {
				const trace::Event &e = buf[i];
				u.m.run_instructions(e.instr - u.last_instr);
				u.last_instr = e.instr;
				if (u.m.now >= u.next_checkpoint) {
					u.scheme->interval_end();
					u.m.stats.checkpoints++;
					u.next_checkpoint = u.m.now + interval_cycles;  // the tick count restarts
				}
				d.event(u, e);
			}
		}
		rep.events += n;
	}
	rep.program = rd.program();
	rep.instructions = rd.instructions();
	rep.mappings = rd.mappings();
	rep.events -= rep.mappings;
	for (auto &up : runs) {
		Run &u = *up;
		u.m.run_instructions(rep.instructions - u.last_instr);
		u.r.cycles = u.m.now;
		u.r.ms = u.m.now / u.m.ghz() / 1e6;
		u.r.resume_ms = u.scheme->resume_cycles() / u.m.ghz() / 1e6;
		u.r.list_entry_writes = u.scheme->stats.list_entry_writes;
		u.r.pages_walked = u.scheme->stats.pages_walked;
		u.r.list_visits = u.scheme->stats.list_visits;
		u.r.stats = u.m.stats;
		rep.results.push_back(u.r);
	}
	return rep;
}

}  // namespace prosper::sim

// machine.cc -- the timing model (assumptions at the top of machine.h).
#include "machine.h"

#include <algorithm>
#include <bit>
#include <string>

namespace prosper::sim {

Cache::Cache(uint64_t bytes, unsigned ways, unsigned line_bytes) : ways_(ways)
{
	if (ways < 1 || ways > kMaxWays)
		throw ConfigError("timing.conf: a cache must have 1 to " + std::to_string(kMaxWays) + " ways, not " +
				  std::to_string(ways));
	uint64_t sets = std::max<uint64_t>(1, bytes / line_bytes / ways);
	sets = std::bit_floor(sets);  // a power of two, so that the set is a mask of the line
	set_mask_ = sets - 1;
	Set empty{};
	for (unsigned w = 0; w < kLanes; w++)
		empty.rank[w] = w < ways ? static_cast<int8_t>(ways - 1 - w) : kPadRank;
	sets_.assign(sets, empty);
}

static double cycles_per_line(double gbps, unsigned line, double ghz) { return line / gbps * ghz; }

Machine::Machine(const Config &cfg)
    : ghz_(cfg.get("core_ghz")), cpi_(cfg.get("cpi")), line_bytes_(static_cast<unsigned>(cfg.get("line_bytes"))),
      line_shift_(std::countr_zero(line_bytes_)), l1_(cfg.get("l1_cycles")), l2_(cfg.get("l2_cycles")),
      l3_(cfg.get("l3_cycles")), clwb_cycles_(cfg.get("clwb_cycles")), sfence_cycles_(cfg.get("sfence_cycles")),
      c1_(static_cast<uint64_t>(cfg.get("l1_kib")) * 1024, static_cast<unsigned>(cfg.get("l1_ways")), line_bytes_),
      c2_(static_cast<uint64_t>(cfg.get("l2_kib")) * 1024, static_cast<unsigned>(cfg.get("l2_ways")), line_bytes_),
      c3_(static_cast<uint64_t>(cfg.get("l3_kib")) * 1024, static_cast<unsigned>(cfg.get("l3_ways")), line_bytes_)
{
	if (!std::has_single_bit(line_bytes_) || line_bytes_ < 8)
		throw ConfigError("timing.conf: line_bytes must be a power of two >= 8");
	double depth = cfg.get("nvm_write_buffer");
	Channel &d = ch_[kDram], &n = ch_[kNvm];
	d.read_cycles = d.write_cycles = cycles_per_line(cfg.get("dram_gbps"), line_bytes_, ghz_);
	d.read_latency = cfg.get("dram_read_ns") * ghz_;
	d.write_latency = cfg.get("dram_write_ns") * ghz_;
	d.queue_cycles = depth * d.write_cycles;
	n.read_cycles = cycles_per_line(cfg.get("nvm_read_gbps"), line_bytes_, ghz_);
	n.write_cycles = cycles_per_line(cfg.get("nvm_write_gbps"), line_bytes_, ghz_);
	n.read_latency = cfg.get("nvm_read_ns") * ghz_;
	n.write_latency = cfg.get("nvm_write_ns") * ghz_;
	n.queue_cycles = depth * n.write_cycles;
	sb_.assign(std::max<size_t>(1, static_cast<size_t>(cfg.get("store_buffer"))), 0.0);
}

double Machine::read_line(Mem mem)
{
	Channel &c = ch_[mem];
	double start = std::max(now, c.read_busy);
	c.read_busy = start + c.read_cycles;
	return start - now + c.read_latency;
}

int Machine::l1_find(uint64_t line)
{
	int s = c1_.find(line);
	if (s >= 0)
		remember(line, s);
	return s;
}

int Machine::fill(uint64_t line, Mem mem, double &latency)
{
	// The dirty bit moves up with the fill: a line is dirty in at most one level, the highest
	// that holds it (what lets clwb stop at the first level it finds the line in).
	bool dirty = false;
	int s2 = c2_.find(line), s3 = -1;
	if (s2 >= 0) {
		latency = l2_;
		dirty = c2_.dirty(s2);
		c2_.set_dirty(s2, false);
	} else if ((s3 = c3_.find(line)) >= 0) {
		latency = l3_;
		dirty = c3_.dirty(s3);
		c3_.set_dirty(s3, false);
	} else {
		latency = l3_ + read_line(mem);
		stats.llc_misses++;
		writeback(c3_.insert(line, false, mem), 3);
	}
	if (s2 < 0)
		writeback(c2_.insert(line, false, mem), 2);
	Cache::Victim v = c1_.insert(line, dirty, mem);
	int slot = c1_.inserted_slot();
	forget_slot(slot);
	remember(line, slot);
	writeback(v, 1);
	return slot;
}

void Machine::clwb_below_l1(uint64_t line)
{
	Cache *c = &c2_;
	int s = c2_.find(line);
	if (s < 0 && (s = c3_.find(line)) >= 0)
		c = &c3_;
	if (s >= 0 && c->dirty(s)) {
		c->set_dirty(s, false);
		write_line(c->mem(s));
	}
}

void Machine::bulk_copy(uint64_t bytes, Mem from, Mem to)
{
	uint64_t lines = (bytes + line_bytes_ - 1) / line_bytes_;
	Channel &src = ch_[from];
	for (uint64_t i = 0; i < lines; i++) {
		double start = std::max(now, src.read_busy);
		src.read_busy = start + src.read_cycles;
		now = std::max(now, start);  // the copy loop cannot run ahead of its reads' bandwidth
		write_line(to);
	}
	if (lines)
		now = std::max(now, src.read_busy + src.read_latency);
}

}  // namespace prosper::sim

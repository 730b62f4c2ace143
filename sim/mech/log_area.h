// log_area.h -- where software logs live: a per-mechanism NVM area at an address no trace uses
// (above the 47-bit user address space), written sequentially and reset at every commit, so
// that its lines are reused from interval to interval as a real circular log's would be.
#pragma once
#include <cstdint>

#include "core/machine.h"
#include "keyset.h"

namespace prosper::sim {

constexpr uint64_t kLogArea = 0x0000900000000000ull;
constexpr uint64_t kBackArea = 0x0000a00000000000ull;    // Romulus' back copy: addr + this
constexpr uint64_t kBitmapArea = 0x0000b00000000000ull;  // Prosper's dirty bitmap (DRAM)
constexpr uint64_t kLogRecordHeader = 16;                 // {address, size} of a record

inline uint64_t round8(uint64_t n) { return (n + 7) & ~7ull; }

// SoftwareLog -- what undo and redo logging share: records appended to the log area and written
// back (clwb, no fence: each mechanism fences where its protocol needs), the lines of the region
// that the logged stores wrote, and at commit those lines written back and the log reset.
class SoftwareLog {
public:
	explicit SoftwareLog(double record_cycles) : record_cycles_(record_cycles) {}
	// One record {address, size, bytes} for a store of `size` bytes at `addr`.
	void append(Machine &m, uint64_t addr, uint32_t size)
	{
		uint64_t rec = kLogRecordHeader + round8(size);
		m.compute(record_cycles_);
		m.access(kLogArea + used_, static_cast<uint32_t>(rec), true, kNvm);
		m.clwb_range(kLogArea + used_, rec);
		used_ += rec;
		m.stats.log_bytes += rec;
		for (uint64_t l = addr >> 6; l <= (addr + size - 1) >> 6; l++)
			written_.insert(l);
	}
	// The logged stores' lines made durable in place: clwb each, sfence.
	void write_back(Machine &m)
	{
		for (uint64_t l : written_.keys())
			m.clwb(l << 6);
		m.sfence();
		m.stats.checkpoint_bytes += written_.size() * 64;
	}
	void reset()
	{
		written_.clear();
		used_ = 0;
	}

private:
	double record_cycles_;
	uint64_t used_ = 0;
	KeySet written_;
};

}  // namespace prosper::sim

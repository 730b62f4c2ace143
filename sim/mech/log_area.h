// log_area.h -- where software logs live: a per-mechanism NVM area at an address no trace uses
// (above the 47-bit user address space), written sequentially and reset at every commit, so
// that its lines are reused from interval to interval as a real circular log's would be.
#pragma once
#include <cstdint>

namespace prosper::sim {

constexpr uint64_t kLogArea = 0x0000900000000000ull;
constexpr uint64_t kBackArea = 0x0000a00000000000ull;    // Romulus' back copy: addr + this
constexpr uint64_t kBitmapArea = 0x0000b00000000000ull;  // Prosper's dirty bitmap (DRAM)
constexpr uint64_t kLogRecordHeader = 16;                 // {address, size} of a record

inline uint64_t round8(uint64_t n) { return (n + 7) & ~7ull; }

}  // namespace prosper::sim

// synth.h -- synthetic traces of the allocation patterns of Kindle's page-table study (Fig 4,
// Tables III and IV).  They are SYNTHETIC: no program ran; each is a sequence of MAP/UNMAP
// records and one 8-byte access per page, `kSynthInstrPerTouch` instructions apart, written in
// the trace format (docs/trace-format.md) with program "synthetic SPEC".
//
// SPEC (sizes take a K, M or G suffix; plain numbers are bytes):
//   seq:SIZE              Fig 4a: map SIZE, store to each page in address order, unmap it.
//   stride:PAGES:GAP[:PASSES[:REPS]]
//                         Fig 4b: PAGES mappings of one 4 KiB page, GAP apart, each stored to
//                         right after its mmap; then every page read PASSES times (default 0);
//                         then all unmapped; all of it REPS times (default 1) at the same
//                         addresses, as Kindle's programs do (stride:512:4K:0:25,
//                         stride:256:2M:0:25, stride:10:1G:0:100).
//   allocfree:TOTAL:CHUNK[:PASSES]
//                         Tables III/IV: map TOTAL, store to each page; twice: unmap the first
//                         CHUNK, map it again, then read each page of the new CHUNK (PASSES = 0,
//                         Table III) or read every page of TOTAL PASSES times (Table IV); unmap
//                         all.
// Mappings start at 16 TiB (1 TiB-aligned) and stay below 80 TiB, so they share no page-table
// page with anything else.
#pragma once
#include <cstdint>
#include <string>

namespace prosper::trace {

constexpr uint64_t kSynthInstrPerTouch = 16;

// Writes the trace.  Throws std::invalid_argument for a bad SPEC, TraceError if OUT cannot be
// written.
void write_synthetic(const std::string &spec, const std::string &out);

}  // namespace prosper::trace

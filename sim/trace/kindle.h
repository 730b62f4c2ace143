// kindle.h -- Kindle's trace images (28-byte tuples) to and from the Prosper trace format.
//
// A Kindle image is a sequence of little-endian records, the C struct with natural alignment
//   { u32 interval; u32 offset; char op; i32 size; char type[6]; i32 index }   (28 bytes:
//   interval at 0, offset at 4, op at 8, size at 12, type at 16, index at 24; the 3 bytes
//   after op and 2 after type are padding)
// ended by a record with op 'Y' (all other bytes zero).  op is 'R' or 'W'; type names the area
// ("S" a stack, "H" an anonymous heap; zero-padded), index numbers the areas of a type; offset
// is relative to the area's start; interval is the Kindle period (10 ms) of the access.
//
// Import (Kindle -> ours).  Kindle keeps no instruction counts or SP.
//   - Area k of a type gets a 4 GiB window of its own (a u32 offset reaches 4 GiB): stacks at
//     kStackBase + k * 4 GiB, heaps at kHeapBase + k * 4 GiB.  Each is declared by a REGION
//     record before its first access, with size = k + 1 (a stack's "thread id"; heaps: region 2,
//     the same numbering) and the window as its bounds.
//   - Each tuple takes one instruction; Kindle interval i starts at i * 30 M instructions (10 ms
//     at 3 GHz), or right after the previous tuple if that is later.
//   - SP is the first stack window's base: no SP information, so SP-aware results are
//     meaningless on imports.
// Export (ours -> Kindle).  Loads and stores of the stack and heap become tuples; accesses to
// other memory (globals, libraries) have no Kindle area and are counted, not written.
//   - interval = instruction position / 30 M.
//   - A stack access belongs to the declared stack that holds it (the latest declared, if
//     several): index = its size field - 1 (thread id 1, the main thread, is stack 0).
//   - A heap access belongs to the declared heap area that holds it (imports), index = size
//     field - 1.  Traces without heap declarations (the Valgrind tool's) get one area per 4 GiB
//     window of the address space that holds heap accesses: its start is the lowest accessed
//     page in the window, areas numbered in address order after the declared ones.
// Round trips: Kindle -> ours -> Kindle gives back the same bytes for any image whose type
// fields are "S"/"H" zero-padded, whose padding bytes are zero, whose intervals never decrease and hold at most 30 M tuples
// each, and whose end tuple is zero but for its op.  Ours -> Kindle -> ours keeps every stack
// and heap access's op, size, interval and offset within its area, in order.
#pragma once
#include <cstdint>
#include <string>

namespace prosper::trace {

// Returns the number of tuples imported; throws TraceError naming the file and tuple number.
uint64_t import_kindle(const std::string &in, const std::string &out);

struct KindleExport {
	uint64_t tuples = 0;        // accesses written (the end tuple not counted)
	uint64_t other_skipped = 0; // accesses to region "other": no Kindle area
	uint64_t stack_areas = 0, heap_areas = 0;
};
// Throws TraceError (a broken trace, an offset beyond 4 GiB, an unwritable output).
KindleExport export_kindle(const std::string &in, const std::string &out);

}  // namespace prosper::trace

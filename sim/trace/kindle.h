// kindle.h -- import of Kindle's trace images (28-byte tuples) into the Prosper trace format.
//
// A Kindle image is a sequence of packed little-endian records
//   { u32 interval; u32 offset; char op; i32 size; char type[6]; i32 index }   (28 bytes)
// ended by a record with op 'Y'.  op is 'R' or 'W'; type names the area ("S" stack, "H" an
// anonymous heap, numbered by index); offset is relative to the area.  Kindle keeps no
// instruction counts or SP: the import places area k at a fixed base (stack areas at the top of
// a 1 GiB window, heaps below), gives each tuple one instruction, starts each Kindle interval at
// a multiple of 30 M instructions (10 ms at 3 GHz), and sets SP to the stack area's base (no
// SP information: SP-aware results are meaningless on imports).
#pragma once
#include <cstdint>
#include <string>

namespace prosper::trace {

// Returns the number of tuples imported; throws TraceError naming the file and tuple number.
uint64_t import_kindle(const std::string &in, const std::string &out);

}  // namespace prosper::trace

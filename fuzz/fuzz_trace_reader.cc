// fuzz_trace_reader -- the Prosper trace reader (sim/trace) on arbitrary bytes: it must either
// decode or throw TraceError, never crash, hang or read out of bounds.  The first byte picks the
// layer: odd = the bytes are the file (zstd layer included); even = the rest is the decompressed
// stream, compressed here first, so that the header and record checks get the mutations.  Bit 1
// asks for MAP/UNMAP events too (the page-table study's reader), so both delivery paths run.
#include <cstdint>
#include <string>

#include "trace/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	std::string bytes;
	const uint8_t *p = data + 1;
	size_t n = size - 1;
	if (!(data[0] & 1)) {
		bytes = prosper::trace::compress(std::string(reinterpret_cast<const char *>(p), n), 1);
		p = reinterpret_cast<const uint8_t *>(bytes.data());
		n = bytes.size();
	}
	try {
		prosper::trace::Reader r(p, n, "fuzz-input");
		r.deliver_mappings(data[0] & 2);
		prosper::trace::Event ev[64];
		while (r.next(ev, 64)) {
		}
	} catch (const prosper::trace::TraceError &) {
	}
	return 0;
}

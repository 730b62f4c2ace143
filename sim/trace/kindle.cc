// kindle.cc -- Kindle tuple images -> Prosper traces (see kindle.h for the mapping).
#include "kindle.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "trace.h"

namespace prosper::trace {

namespace {
constexpr size_t kTuple = 28;
constexpr uint64_t kStackBase = 0x7f0000000000ull, kStackSize = 1ull << 30;
constexpr uint64_t kHeapBase = 0x100000000000ull, kHeapStride = 1ull << 32;
constexpr uint64_t kInstrPerInterval = 30000000;
}  // namespace

uint64_t import_kindle(const std::string &in, const std::string &out)
{
	FILE *f = std::fopen(in.c_str(), "rb");
	if (!f)
		throw TraceError(in + ": cannot open: " + std::strerror(errno));
	Writer w(out, "kindle:" + in);
	w.region(kStack, 1, kStackBase, kStackBase + kStackSize);
	uint8_t t[kTuple];
	uint64_t n = 0, instr = 0;
	bool ended = false;
	for (;; n++) {
		size_t got = std::fread(t, 1, kTuple, f);
		if (got == 0)
			break;
		if (got != kTuple) {
			std::fclose(f);
			throw TraceError(in + ": record " + std::to_string(n) + ": truncated Kindle tuple");
		}
		uint32_t interval, offset;
		int32_t size, index;
		std::memcpy(&interval, t, 4);
		std::memcpy(&offset, t + 4, 4);
		char op = static_cast<char>(t[8]);
		std::memcpy(&size, t + 9, 4);
		char type = static_cast<char>(t[13]);
		std::memcpy(&index, t + 19, 4);
		auto bad = [&](const std::string &why) {
			std::fclose(f);
			throw TraceError(in + ": record " + std::to_string(n) + ": " + why);
		};
		if (op == 'Y') {
			ended = true;
			break;
		}
		if (op != 'R' && op != 'W')
			bad(std::string("op '") + op + "' is not R, W or Y");
		if (size <= 0 || size > 0xFFFF)
			bad("size " + std::to_string(size));
		if (index < 0)
			bad("negative area index");
		uint64_t start = uint64_t(interval) * kInstrPerInterval;
		instr = std::max(instr + 1, start);
		uint8_t region;
		uint64_t addr;
		if (type == 'S') {
			region = kStack;
			addr = kStackBase + (offset % kStackSize);
		} else {
			region = kHeap;
			addr = kHeapBase + uint64_t(index) * kHeapStride + offset;
		}
		w.access(instr, op == 'W' ? kStore : kLoad, region, static_cast<uint32_t>(size), addr, kStackBase);
	}
	std::fclose(f);
	if (!ended)
		throw TraceError(in + ": record " + std::to_string(n) + ": no end tuple (op 'Y'): truncated");
	w.close();
	return n;
}

}  // namespace prosper::trace

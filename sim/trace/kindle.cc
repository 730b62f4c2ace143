// kindle.cc -- Kindle tuple images <-> Prosper traces (the mapping is documented in kindle.h).
#include "kindle.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <vector>

#include "trace.h"

namespace prosper::trace {

namespace {
constexpr size_t kTuple = 28;
constexpr uint64_t kWindow = 1ull << 32;  // one area per window: a u32 offset's reach
constexpr uint64_t kStackBase = 0x7f0000000000ull, kHeapBase = 0x100000000000ull;
constexpr uint64_t kMaxStacks = (0x800000000000ull - kStackBase) / kWindow;  // stay in user space
constexpr uint64_t kMaxHeaps = (kStackBase - kHeapBase) / kWindow;           // stay below the stacks
constexpr uint64_t kInstrPerInterval = 30000000;  // 10 ms at 3 GHz, CPI 1 (timing.conf)
constexpr uint64_t kPageBytes = 4096;

// The C struct with natural alignment: field offsets in the 28-byte record.
constexpr size_t kAtInterval = 0, kAtOffset = 4, kAtOp = 8, kAtSize = 12, kAtType = 16, kAtIndex = 24;
struct Tuple {
	uint32_t interval = 0, offset = 0;
	char op = 0;
	int32_t size = 0;
	char type[6] = {};
	int32_t index = 0;
};

void decode(const uint8_t *b, Tuple &t)
{
	std::memcpy(&t.interval, b + kAtInterval, 4);
	std::memcpy(&t.offset, b + kAtOffset, 4);
	t.op = static_cast<char>(b[kAtOp]);
	std::memcpy(&t.size, b + kAtSize, 4);
	std::memcpy(t.type, b + kAtType, 6);
	std::memcpy(&t.index, b + kAtIndex, 4);
}

void encode(const Tuple &t, uint8_t *b)
{
	std::memset(b, 0, kTuple);  // the padding
	std::memcpy(b + kAtInterval, &t.interval, 4);
	std::memcpy(b + kAtOffset, &t.offset, 4);
	b[kAtOp] = static_cast<uint8_t>(t.op);
	std::memcpy(b + kAtSize, &t.size, 4);
	std::memcpy(b + kAtType, t.type, 6);
	std::memcpy(b + kAtIndex, &t.index, 4);
}

// File -- a FILE* closed on every path out (errors are exceptions here).
struct File {
	FILE *f;
	File(const std::string &path, const char *mode) : f(std::fopen(path.c_str(), mode)) {}
	~File()
	{
		if (f)
			std::fclose(f);
	}
};

// area_of -- the declared range of `region` holding `addr` (the latest declared), or null.
const Range *area_of(const std::vector<Range> &ranges, uint8_t region, uint64_t addr)
{
	for (auto it = ranges.rbegin(); it != ranges.rend(); ++it)
		if (it->region == region && addr >= it->start && addr < it->end)
			return &*it;
	return nullptr;
}
}  // namespace

uint64_t import_kindle(const std::string &in, const std::string &out)
{
	File f(in, "rb");
	if (!f.f)
		throw TraceError(in + ": cannot open: " + std::strerror(errno));
	Writer w(out, "kindle:" + in);
	std::vector<bool> stack_declared, heap_declared;
	uint8_t b[kTuple];
	uint64_t n = 0, instr = 0;
	for (;; n++) {
		size_t got = std::fread(b, 1, kTuple, f.f);
		auto bad = [&](const std::string &why) {
			throw TraceError(in + ": record " + std::to_string(n) + ": " + why);
		};
		if (got == 0)
			bad("no end tuple (op 'Y'): truncated");
		if (got != kTuple)
			bad("truncated Kindle tuple");
		Tuple t;
		decode(b, t);
		if (t.op == 'Y')
			break;
		if (t.op != 'R' && t.op != 'W')
			bad(std::string("op '") + t.op + "' is not R, W or Y");
		if (t.size <= 0 || t.size > 0xFFFF)
			bad("size " + std::to_string(t.size));
		if (t.index < 0)
			bad("negative area index");
		bool stack = t.type[0] == 'S';
		uint64_t k = static_cast<uint64_t>(t.index);
		if (k >= (stack ? kMaxStacks : kMaxHeaps))
			bad("area index " + std::to_string(k) + " is too large");
		uint64_t base = (stack ? kStackBase : kHeapBase) + k * kWindow;
		std::vector<bool> &declared = stack ? stack_declared : heap_declared;
		if (declared.size() <= k)
			declared.resize(k + 1);
		if (!declared[k]) {
			declared[k] = true;
			w.region(stack ? kStack : kHeap, static_cast<uint32_t>(k + 1), base, base + kWindow);
		}
		instr = std::max(instr + 1, uint64_t(t.interval) * kInstrPerInterval);
		w.access(instr, t.op == 'W' ? kStore : kLoad, stack ? kStack : kHeap, static_cast<uint32_t>(t.size),
			 base + t.offset, kStackBase);
	}
	w.close();
	return n;
}

KindleExport export_kindle(const std::string &in, const std::string &out)
{
	constexpr size_t kBatch = 1 << 16;
	std::vector<Event> ev(kBatch);
	KindleExport rep;

	// Pass 1: heap accesses outside every declared heap area, by 4 GiB window: the lowest page.
	std::map<uint64_t, uint64_t> window_start;  // window number -> area start
	uint64_t declared_heaps = 0;
	{
		Reader rd(in);
		while (size_t n = rd.next(ev.data(), ev.size()))
			for (size_t i = 0; i < n; i++) {
				const Event &e = ev[i];
				if (e.region != kHeap || area_of(rd.ranges(), kHeap, e.addr))
					continue;
				uint64_t page = e.addr & ~(kPageBytes - 1);
				auto [it, fresh] = window_start.emplace(e.addr / kWindow, page);
				if (!fresh)
					it->second = std::min(it->second, page);
			}
		for (const Range &r : rd.ranges())
			if (r.region == kHeap)
				declared_heaps = std::max<uint64_t>(declared_heaps, r.tid);
	}
	std::map<uint64_t, int32_t> window_index;
	for (auto &[win, start] : window_start)
		window_index[win] = static_cast<int32_t>(declared_heaps + window_index.size());

	// Pass 2: the tuples.
	File f(out, "wb");
	if (!f.f)
		throw TraceError(out + ": cannot create: " + std::strerror(errno));
	std::vector<uint8_t> buf;
	std::vector<bool> stacks_seen, heaps_seen;
	auto seen = [](std::vector<bool> &v, size_t k) {
		if (v.size() <= k)
			v.resize(k + 1);
		v[k] = true;
	};
	auto flush = [&] {
		if (!buf.empty() && std::fwrite(buf.data(), 1, buf.size(), f.f) != buf.size())
			throw TraceError(out + ": write failed: " + std::strerror(errno));
		buf.clear();
	};
	Reader rd(in);
	uint64_t access = 0;
	while (size_t n = rd.next(ev.data(), ev.size())) {
		for (size_t i = 0; i < n; i++, access++) {
			const Event &e = ev[i];
			auto bad = [&](const std::string &why) {
				throw TraceError(in + ": access " + std::to_string(access) + ": " + why);
			};
			if (e.region != kStack && e.region != kHeap) {
				rep.other_skipped++;
				continue;
			}
			Tuple t;
			t.op = e.op == kStore ? 'W' : 'R';
			t.size = static_cast<int32_t>(e.size);
			t.type[0] = e.region == kStack ? 'S' : 'H';
			uint64_t interval = e.instr / kInstrPerInterval;
			if (interval > UINT32_MAX)
				bad("interval " + std::to_string(interval) + " does not fit Kindle's u32");
			t.interval = static_cast<uint32_t>(interval);
			uint64_t start = 0;
			if (const Range *r = area_of(rd.ranges(), e.region, e.addr)) {
				start = r->start;
				t.index = r->tid ? static_cast<int32_t>(r->tid - 1) : 0;
			} else if (e.region == kHeap) {
				start = window_start.at(e.addr / kWindow);
				t.index = window_index.at(e.addr / kWindow);
			} else {
				bad("a stack access outside every declared stack");
			}
			if (e.addr - start >= kWindow)
				bad("offset beyond 4 GiB of its area");
			t.offset = static_cast<uint32_t>(e.addr - start);
			seen(e.region == kStack ? stacks_seen : heaps_seen, static_cast<size_t>(t.index));
			uint8_t b[kTuple];
			encode(t, b);
			buf.insert(buf.end(), b, b + kTuple);
			rep.tuples++;
			if (buf.size() >= (1 << 20))
				flush();
		}
	}
	Tuple end;
	end.op = 'Y';
	uint8_t b[kTuple];
	encode(end, b);
	buf.insert(buf.end(), b, b + kTuple);
	flush();
	if (std::fflush(f.f) != 0)
		throw TraceError(out + ": write failed: " + std::strerror(errno));
	rep.stack_areas = static_cast<uint64_t>(std::count(stacks_seen.begin(), stacks_seen.end(), true));
	rep.heap_areas = static_cast<uint64_t>(std::count(heaps_seen.begin(), heaps_seen.end(), true));
	return rep;
}

}  // namespace prosper::trace

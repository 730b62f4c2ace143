// test_kindle.cc -- Kindle tuple images (sim/trace/kindle.h): import, export and both round
// trips, on hand-made images and traces whose tuples are known by construction.  The layout is
// written out here independently of kindle.cc, so that a shifted field fails.
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <vector>

#include "trace/kindle.h"
#include "trace/trace.h"
#include "check.h"

using namespace prosper;
using trace::kHeap;
using trace::kLoad;
using trace::kOther;
using trace::kStack;
using trace::kStore;

constexpr uint64_t kInterval = 30000000;  // instructions per Kindle period (10 ms at 3 GHz)

struct Tuple {
	uint32_t interval, offset;
	char op;
	int32_t size;
	char type;
	int32_t index;
};

// kindle_tuple -- one 28-byte record: u32 interval, u32 offset, char op, i32 size, char type[6], i32 index,
// naturally aligned (padding after op and after type).
static std::string kindle_tuple(uint32_t interval, uint32_t offset, char op, int32_t size, char type, int32_t index)
{
	char t[28] = {};
	std::memcpy(t, &interval, 4);
	std::memcpy(t + 4, &offset, 4);
	t[8] = op;
	std::memcpy(t + 12, &size, 4);
	t[16] = type;
	std::memcpy(t + 24, &index, 4);
	return std::string(t, 28);
}

static std::string read_file(const std::string &f)
{
	std::ifstream in(f, std::ios::binary);
	std::stringstream ss;
	ss << in.rdbuf();
	return ss.str();
}

static std::vector<Tuple> tuples(const std::string &bytes)
{
	std::vector<Tuple> out;
	for (size_t at = 0; at + 28 <= bytes.size(); at += 28) {
		const char *t = bytes.data() + at;
		Tuple x;
		std::memcpy(&x.interval, t, 4);
		std::memcpy(&x.offset, t + 4, 4);
		x.op = t[8];
		std::memcpy(&x.size, t + 12, 4);
		x.type = t[16];
		std::memcpy(&x.index, t + 24, 4);
		out.push_back(x);
	}
	return out;
}

static std::vector<trace::Event> events(const std::string &f, std::vector<trace::Range> *ranges = nullptr)
{
	trace::Reader rd(f);
	std::vector<trace::Event> out(1024);
	size_t n = rd.next(out.data(), out.size());
	out.resize(n);
	if (ranges)
		*ranges = rd.ranges();
	return out;
}

static bool refused(const std::function<void()> &f, const char *needle)
{
	try {
		f();
	} catch (const trace::TraceError &e) {
		return std::strstr(e.what(), needle) != nullptr;
	}
	return false;
}

static void test_import()
{
	std::string img = kindle_tuple(0, 64, 'W', 8, 'S', 0) + kindle_tuple(0, 128, 'R', 4, 'H', 2) +
			  kindle_tuple(1, 64, 'W', 8, 'S', 0);
	write_file(path("k.img"), img + kindle_tuple(0, 0, 'Y', 0, 0, 0));
	CHECK_EQ(trace::import_kindle(path("k.img"), path("k.trace")), 3ull);
	std::vector<trace::Range> ranges;
	std::vector<trace::Event> ev = events(path("k.trace"), &ranges);
	CHECK_EQ(ev.size(), 3ull);
	CHECK(ev[0].op == kStore && ev[0].region == kStack && ev[0].size == 8);
	CHECK(ev[1].op == kLoad && ev[1].region == kHeap && ev[1].size == 4);
	CHECK_EQ(ev[2].instr, kInterval);  // Kindle interval 1 starts at 30 M instructions
	CHECK_EQ(ev[2].addr - ev[0].addr, 0ull);
	// one declared area per (type, index) used, holding its accesses at their offsets
	CHECK_EQ(ranges.size(), 2ull);
	CHECK(ranges[0].region == kStack && ranges[0].tid == 1 && ev[0].addr - ranges[0].start == 64);
	CHECK(ranges[1].region == kHeap && ranges[1].tid == 3 && ev[1].addr - ranges[1].start == 128);
	write_file(path("k-cut.img"), img);  // no 'Y'
	CHECK(refused([] { trace::import_kindle(path("k-cut.img"), path("k2.trace")); }, "record 3"));
	write_file(path("k-half.img"), img + std::string(10, 'W'));
	CHECK(refused([] { trace::import_kindle(path("k-half.img"), path("k2.trace")); }, "record 3: truncated"));
	write_file(path("k-op.img"), img + kindle_tuple(2, 0, 'Q', 8, 'H', 0));
	CHECK(refused([] { trace::import_kindle(path("k-op.img"), path("k2.trace")); }, "record 3: op 'Q'"));
	CHECK(refused([] { trace::import_kindle(path("nonexistent.img"), path("k2.trace")); }, "cannot open"));
}

// Kindle -> ours -> Kindle: the same bytes.
static void test_kindle_round_trip()
{
	std::string img = kindle_tuple(0, 0, 'R', 8, 'S', 0) + kindle_tuple(0, 4096, 'W', 4, 'H', 2) +
			  kindle_tuple(0, 0xFFFFFFF0u, 'W', 16, 'H', 0) + kindle_tuple(1, 24, 'R', 1, 'S', 1) +
			  kindle_tuple(1, 24, 'W', 64, 'H', 2) + kindle_tuple(3, 100, 'R', 2, 'S', 0) +
			  kindle_tuple(3, 7, 'W', 65535, 'H', 5) + kindle_tuple(0, 0, 'Y', 0, 0, 0);
	write_file(path("rt.img"), img);
	CHECK_EQ(trace::import_kindle(path("rt.img"), path("rt.trace")), 7ull);
	trace::KindleExport x = trace::export_kindle(path("rt.trace"), path("rt-back.img"));
	CHECK_EQ(x.tuples, 7ull);
	CHECK_EQ(x.stack_areas, 2ull);
	CHECK_EQ(x.heap_areas, 3ull);
	CHECK(read_file(path("rt-back.img")) == img);
}

// Ours -> Kindle: areas from the declared stacks (index = thread id - 1) and, for the heap, one
// per 4 GiB window starting at its lowest accessed page; other memory left out.  Then
// ours -> Kindle -> ours keeps op, size, interval and offset within the area of every access.
static void test_export_round_trip()
{
	constexpr uint64_t kStack1 = 0x7ffff0000000ull, kStack2 = 0x7fffe0000000ull, kSp = kStack1 + 0x8000;
	constexpr uint64_t kBrk = 0x555500001000ull, kMmap = 0x7f1234560000ull, kLib = 0x400000ull;
	{
		trace::Writer w(path("ours.trace"), "synthetic");
		w.region(kStack, 1, kStack1, kStack1 + 0x10000);
		w.access(5, kStore, kStack, 8, kStack1 + 0x8000, kSp);
		w.access(6, kLoad, kHeap, 4, kBrk + 0x10, kSp);
		w.access(7, kLoad, kOther, 8, kLib, kSp);
		w.region(kStack, 2, kStack2, kStack2 + 0x10000);
		w.access(kInterval + 1, kStore, kStack, 16, kStack2 + 0x40, kSp);
		w.access(kInterval + 2, kStore, kHeap, 8, kMmap + 0x2008, kSp);
		w.access(3 * kInterval, kLoad, kHeap, 2, kBrk + 0x3000, kSp);
		w.access(3 * kInterval + 9, kStore, kHeap, 8, kMmap + 0x1000, kSp);  // the mmap window's lowest page
	}
	trace::KindleExport x = trace::export_kindle(path("ours.trace"), path("ours.img"));
	CHECK_EQ(x.tuples, 6ull);
	CHECK_EQ(x.other_skipped, 1ull);
	CHECK_EQ(x.stack_areas, 2ull);
	CHECK_EQ(x.heap_areas, 2ull);
	std::string img = read_file(path("ours.img"));
	std::vector<Tuple> t = tuples(img);
	CHECK_EQ(t.size(), 7ull);
	CHECK_EQ(img.size(), 7ull * 28);
	struct Want {
		uint32_t interval, offset;
		char op;
		int32_t size;
		char type;
		int32_t index;
	} want[] = {{0, 0x8000, 'W', 8, 'S', 0},      {0, 0x10, 'R', 4, 'H', 0},    {1, 0x40, 'W', 16, 'S', 1},
		    {1, 0x1008, 'W', 8, 'H', 1},      {3, 0x3000, 'R', 2, 'H', 0},  {3, 0, 'W', 8, 'H', 1}};
	for (size_t i = 0; i < 6 && i < t.size(); i++) {
		CHECK_EQ(t[i].interval, want[i].interval);
		CHECK_EQ(t[i].offset, want[i].offset);
		CHECK_EQ(t[i].op, want[i].op);
		CHECK_EQ(t[i].size, want[i].size);
		CHECK_EQ(t[i].type, want[i].type);
		CHECK_EQ(t[i].index, want[i].index);
	}
	CHECK(t.size() == 7 && t[6].op == 'Y');

	// back into our format: the same accesses at the same offsets of their areas
	CHECK_EQ(trace::import_kindle(path("ours.img"), path("again.trace")), 6ull);
	std::vector<trace::Range> ranges;
	std::vector<trace::Event> orig = events(path("ours.trace")), back = events(path("again.trace"), &ranges);
	std::vector<trace::Event> kept;
	for (auto &e : orig)
		if (e.region != kOther)
			kept.push_back(e);
	CHECK_EQ(back.size(), kept.size());
	for (size_t i = 0; i < back.size() && i < kept.size(); i++) {
		CHECK_EQ(back[i].op, kept[i].op);
		CHECK_EQ(back[i].size, kept[i].size);
		CHECK_EQ(back[i].region, kept[i].region);
		CHECK_EQ(back[i].instr / kInterval, kept[i].instr / kInterval);
		const trace::Range *area = nullptr;
		for (auto &r : ranges)
			if (r.region == back[i].region && back[i].addr >= r.start && back[i].addr < r.end)
				area = &r;
		CHECK(area != nullptr);
		if (area)
			CHECK_EQ(back[i].addr - area->start, uint64_t(want[i].offset));
	}
	// and out again: the same image
	trace::export_kindle(path("again.trace"), path("again.img"));
	CHECK(read_file(path("again.img")) == img);
	CHECK(refused([] { trace::export_kindle(path("ours.trace"), path("no-such-dir/x.img")); }, "cannot create"));
	CHECK(refused([] { trace::export_kindle(path("nonexistent.trace"), path("x.img")); }, "cannot open"));
}

int main()
{
	make_tmpdir();
	test_import();
	test_kindle_round_trip();
	test_export_round_trip();
	return finish("test_kindle");
}

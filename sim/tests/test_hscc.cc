// test_hscc.cc -- HSCC (sim/mech/hscc.cc) on hand-made heap traces whose answers are known by
// construction: each first touch of a line is one LLC miss, so a page whose K distinct lines
// are loaded in a migration period has count K; runs happen every 31.25 ms = 93.75 M
// instructions (3 GHz, CPI 1), at the first access at or past the boundary.
#include <functional>

#include "core/simulation.h"
#include "check.h"

using namespace prosper;
using trace::kHeap;
using trace::kLoad;
using trace::kStack;
using trace::kStore;

constexpr uint64_t kHeapLo = 0x555500000000ull, kStackLo = 0x7ffff0000000ull;
constexpr uint64_t kPeriod = 93750000;  // 31.25 ms in instructions

static uint64_t page_addr(uint64_t page) { return kHeapLo + (page << 12); }

// Builder -- heap accesses one instruction apart; `next_period()` jumps to the next run.
struct Builder {
	trace::Writer w;
	uint64_t instr = 1, period = 0;
	explicit Builder(const std::string &file) : w(file, "hscc " + file) { w.region(kStack, 1, kStackLo, kStackLo + 65536); }
	void op(uint8_t o, uint64_t addr) { w.access(instr++, o, kHeap, 8, addr, kStackLo); }
	// loads of `lines` distinct lines of `page` (from line `first`)
	void misses(uint64_t page, int lines, int first = 0)
	{
		for (int i = first; i < first + lines; i++)
			op(kLoad, page_addr(page) + 64 * i);
	}
	void next_period()
	{
		period++;
		instr = std::max(instr, period * kPeriod);
	}
};

static sim::Result simulate(const std::string &file, const std::string &heap, const sim::Config &cfg = sim::Config())
{
	sim::Options o;
	o.trace = file;
	o.stack = {"none-dram"};
	o.heap = {heap};
	return sim::simulate(o, cfg).results.back();
}

static std::string build(const std::string &name, const std::function<void(Builder &)> &fill)
{
	std::string f = path(name);
	Builder b(f);
	fill(b);
	b.w.close();
	return f;
}

// A page migrates iff its count reached the threshold; a cached page is not counted again.
static void test_threshold()
{
	for (unsigned t : {5u, 25u, 50u}) {
		std::string f = build("threshold.trace", [&](Builder &b) {
			b.misses(1, t - 1);  // page 1: one short
			b.misses(2, t);      // page 2: exactly the threshold
			b.next_period();     // run 1: page 2 only
			b.misses(2, 64);     // page 2 is in DRAM now: not counted, not migrated again
			b.misses(1, 1, t);   // page 1's count restarted from 0: 1
			b.misses(3, t);      // page 3 reaches the threshold
			b.next_period();     // run 2: page 3
			b.op(kLoad, page_addr(9));
		});
		const sim::Result r = simulate(f, "hscc-" + std::to_string(t));
		CHECK_EQ(r.stats.pages_migrated, 2ull);
		CHECK_EQ(r.stats.pages_written_back, 0ull);
		std::string g = build("below.trace", [&](Builder &b) {
			b.misses(1, t - 1);
			b.next_period();
			b.op(kLoad, page_addr(9));
		});
		CHECK_EQ(simulate(g, "hscc-" + std::to_string(t)).stats.pages_migrated, 0ull);
	}
}

// Counts are LLC misses, not accesses, and they are reset by every run.
static void test_counts()
{
	std::string f = build("hits.trace", [](Builder &b) {
		for (int i = 0; i < 100; i++)
			b.op(kLoad, page_addr(1));  // one miss, 99 hits
		b.misses(2, 3);
		b.next_period();
		b.misses(2, 3, 10);  // 3 + 3 over two periods: never 5 in one
		b.next_period();
		b.op(kLoad, page_addr(9));
	});
	const sim::Result r = simulate(f, "hscc-5");
	CHECK_EQ(r.stats.pages_migrated, 0ull);
	CHECK(r.stats.scan_cycles > 0);
	CHECK_EQ(r.stats.llc_misses, 1ull + 6 + 1);
	CHECK_EQ(simulate(f, "none-nvm").stats.llc_misses, 1ull + 6 + 1);
}

// 512 DRAM pages: the 513th candidate waits; clean pages are evicted before dirty ones, and a
// dirty one is written back (4096 bytes, the only NVM writes of these load-only NVM pages).
static void test_capacity(bool one_dirty_victim)
{
	std::string f = build("capacity.trace", [&](Builder &b) {
		for (int p = 0; p < 513; p++)
			b.misses(p, 5);
		b.next_period();  // run 1: pages 0..511 fill the cache, 512 waits
		for (int p = 0; p < 10; p++)
			b.op(kStore, page_addr(p));  // pages 0..9 dirty in DRAM
		int fresh = one_dirty_victim ? 503 : 502;  // 502 clean slots
		for (int p = 1000; p < 1000 + fresh; p++)
			b.misses(p, 5);
		b.next_period();  // run 2
		b.op(kLoad, page_addr(9999));
	});
	const sim::Result r = simulate(f, "hscc-5");
	CHECK_EQ(r.stats.pages_migrated, 512ull + (one_dirty_victim ? 503 : 502));
	CHECK_EQ(r.stats.pages_written_back, one_dirty_victim ? 1ull : 0ull);
	CHECK_EQ(r.stats.nvm_write_bytes, one_dirty_victim ? 4096ull : 0ull);
	CHECK(r.stats.copy_cycles > 0 && r.stats.select_cycles > 0);
}

// A dirty victim's write-back is charged to page selection, not to the copy.
static void test_time_split()
{
	sim::Config one;
	one.apply("hscc_dram_pages = 1\n", "test");
	auto trace = [&](const std::string &name, uint8_t o) {
		return build(name, [&](Builder &b) {
			b.misses(1, 5);
			b.next_period();  // page 1 -> DRAM
			b.op(o, page_addr(1));
			b.misses(2, 5);
			b.next_period();  // page 2 evicts page 1
			b.op(kLoad, page_addr(9));
		});
	};
	const sim::Result clean = simulate(trace("clean.trace", kLoad), "hscc-5", one);
	const sim::Result dirty = simulate(trace("dirty.trace", kStore), "hscc-5", one);
	CHECK_EQ(clean.stats.pages_migrated, 2ull);
	CHECK_EQ(dirty.stats.pages_migrated, 2ull);
	CHECK_EQ(dirty.stats.pages_written_back, 1ull);
	CHECK_EQ(dirty.stats.nvm_write_bytes, 4096ull);
	CHECK(dirty.stats.select_cycles > clean.stats.select_cycles);
	CHECK(dirty.stats.copy_cycles == clean.stats.copy_cycles);
}

// A migration period of zero instructions is refused, not looped on.
static void test_zero_period()
{
	sim::Config zero;
	zero.apply("hscc_migration_ms = 0\n", "test");
	std::string f = build("zero.trace", [](Builder &b) { b.misses(1, 5); });
	bool refused = false;
	try {
		simulate(f, "hscc-5", zero);
	} catch (const sim::ConfigError &) {
		refused = true;
	}
	CHECK(refused);
}

int main()
{
	make_tmpdir();
	test_threshold();
	test_counts();
	test_capacity(false);
	test_capacity(true);
	test_time_split();
	test_zero_period();
	return finish("test_hscc");
}

// test_sim.cc -- prosper-sim's unit tests: every mechanism on hand-made traces whose answers are
// known by construction, the config parser, and the trace reader's refusals.
// `test_sim --write-broken DIR` writes the broken traces that tests/test_cli.sh feeds the CLI.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>

#include "core/simulation.h"
#include "check.h"

using namespace prosper;
using trace::kHeap;
using trace::kLoad;
using trace::kStack;
using trace::kStore;

// The synthetic process: a 64 KiB stack at kStackLo with SP in its middle; a heap elsewhere.
constexpr uint64_t kStackLo = 0x7ffff0000000ull, kStackHi = kStackLo + 65536, kSp = kStackLo + 32768;
constexpr uint64_t kHeapLo = 0x555500000000ull;
constexpr uint64_t kInterval = 30000000;  // 10 ms at 3 GHz, cpi 1 (timing.conf)

struct Built {
	std::string file;
};

// make_trace -- a trace whose events `fill` writes; every trace declares the stack.
static std::string make_trace(const std::string &name, const std::function<void(trace::Writer &)> &fill)
{
	std::string f = path(name);
	trace::Writer w(f, "synthetic " + name);
	w.region(kStack, 1, kStackLo, kStackHi);
	fill(w);
	w.close();
	return f;
}

static sim::Result run(const std::string &file, const std::string &stack, const std::string &heap,
			      sim::Report &rep)
{
	sim::Options o;
	o.trace = file;
	o.stack = {stack};
	o.heap = {heap};
	sim::Config cfg;
	rep = sim::simulate(o, cfg);
	return rep.results.back();
}

// N 8-byte stack stores, each on its own line (above SP), one instruction apart; then one load
// past the first interval boundary so that exactly one interval end happens.
static std::string stores_trace(const std::string &name, int n, bool cross_interval)
{
	return make_trace(name, [&](trace::Writer &w) {
		for (int i = 0; i < n; i++)
			w.access(1 + i, kStore, kStack, 8, kSp + 64 * i, kSp);
		if (cross_interval)
			w.access(kInterval + 10, kLoad, kStack, 8, kSp, kSp);
	});
}

static void test_none_cycles()
{
	// Stores only, 200 instructions apart, all to one line: the store buffer hides the first
	// miss (it completes long before 32 more stores arrive), so the run takes its instructions.
	std::string f = make_trace("none.trace", [](trace::Writer &w) {
		for (int i = 1; i <= 1000; i++)
			w.access(200 * i, kStore, kStack, 8, kSp, kSp);
	});
	sim::Report rep;
	const sim::Result &r = run(f, "none-dram", "none-dram", rep);
	CHECK_EQ(static_cast<uint64_t>(r.cycles), 200000ull);
	// One per instruction instead: the 33rd store finds the buffer full behind the miss.
	std::string g = make_trace("none_sb.trace", [](trace::Writer &w) {
		for (int i = 1; i <= 1000; i++)
			w.access(i, kStore, kStack, 8, kSp, kSp);
	});
	CHECK(run(g, "none-dram", "none-dram", rep).cycles > 1000.0);
	CHECK_EQ(rep.events, 1000ull);
	CHECK(r.normalized == 1.0);
	CHECK_EQ(r.stats.nvm_write_bytes, 0ull);
}

static void test_flush()
{
	// flush: every store written back = stores x line size, one clwb and one sfence each.
	std::string f = stores_trace("flush.trace", 500, false);
	sim::Report rep;
	const sim::Result &r = run(f, "flush", "none-dram", rep);
	CHECK_EQ(r.stats.nvm_write_bytes, 500ull * 64);
	CHECK_EQ(r.stats.flushes, 500ull);
	CHECK_EQ(r.stats.fences, 500ull);
	CHECK(r.normalized > 1.0);
	// Repeated stores to one line: each is written back again.
	std::string g = make_trace("flush_same.trace", [](trace::Writer &w) {
		for (int i = 1; i <= 300; i++)
			w.access(i, kStore, kStack, 8, kSp + 8, kSp);
	});
	const sim::Result &r2 = run(g, "flush", "none-dram", rep);
	CHECK_EQ(r2.stats.nvm_write_bytes, 300ull * 64);
}

static void test_sp_awareness()
{
	// 200 stores above the final SP, 300 wholly below it: the SP-aware variants act on 200.
	std::string f = make_trace("sp.trace", [](trace::Writer &w) {
		for (int i = 0; i < 500; i++) {
			uint64_t a = i < 200 ? kSp + 64 * i : kSp - 4096 - 64 * i;
			w.access(1 + i, kStore, kStack, 8, a, kSp - 8192);
		}
		w.access(600, kLoad, kStack, 8, kSp, kSp);  // the final SP of the (only) interval
	});
	sim::Report rep;
	const sim::Result &fl = run(f, "flush-sp", "none-dram", rep);
	CHECK_EQ(fl.stats.flushes, 200ull);
	CHECK_EQ(rep.stack_stores, 500ull);
	CHECK_EQ(rep.stack_stores_beyond_final_sp, 300ull);
	CHECK_EQ(run(f, "flush", "none-dram", rep).stats.flushes, 500ull);
	CHECK_EQ(run(f, "undo-sp", "none-dram", rep).stats.log_bytes, 200ull * 24);
	CHECK_EQ(run(f, "redo-sp", "none-dram", rep).stats.log_bytes, 200ull * 24);
	CHECK_EQ(run(f, "undo", "none-dram", rep).stats.log_bytes, 500ull * 24);
}

static void test_undo_redo()
{
	std::string f = stores_trace("log.trace", 400, true);
	sim::Report rep;
	const sim::Result &u = run(f, "undo", "none-dram", rep);
	CHECK_EQ(u.stats.log_bytes, 400ull * (16 + 8));          // header + 8 bytes of old data each
	CHECK_EQ(u.stats.fences, 400ull + 2);                     // one per record, two at commit
	CHECK_EQ(u.stats.checkpoint_bytes, 400ull * 64);          // every written line flushed at commit
	CHECK_EQ(u.stats.checkpoints, 1ull);
	const sim::Result &r = run(f, "redo", "none-dram", rep);
	CHECK_EQ(r.stats.log_bytes, 400ull * 24);
	CHECK_EQ(r.stats.fences, 3ull);                           // log, commit word, apply
	CHECK_EQ(r.stats.checkpoint_bytes, 400ull * 64);
}

static void test_romulus()
{
	std::string f = stores_trace("romulus.trace", 400, true);
	sim::Report rep;
	const sim::Result &r = run(f, "romulus", "none-dram", rep);
	CHECK_EQ(r.stats.log_bytes, 400ull * 16);
	CHECK_EQ(r.stats.checkpoint_bytes, 400ull * 8);           // main -> back, byte for byte
	// No coalescing: 400 stores to one word copy 400 x 8 bytes.
	std::string g = make_trace("romulus_same.trace", [](trace::Writer &w) {
		for (int i = 0; i < 400; i++)
			w.access(1 + i, kStore, kStack, 8, kSp, kSp);
		w.access(kInterval + 1, kLoad, kStack, 8, kSp, kSp);
	});
	CHECK_EQ(run(g, "romulus", "none-dram", rep).stats.checkpoint_bytes, 400ull * 8);
}

// The Prosper artifact's Romulus (romulus_gemos.cc), counted by hand: 400 stores of 8 bytes, each on
// its own line of the stack above SP (7 pages), one interval end.  gemOS flushes the 7 pages (64
// lines each) and, per record, the record (one line) and the copied 8 bytes (one line): every
// "flush" is one waited write-back of a DRAM line between two fences per call.
static void test_romulus_gemos()
{
	std::string f = stores_trace("romulus_gemos.trace", 400, true);
	sim::Report rep;
	const sim::Result &r = run(f, "romulus-gemos", "none-dram", rep);
	CHECK_EQ(r.stats.log_bytes, 400ull * 16);
	CHECK_EQ(r.stats.checkpoint_bytes, 400ull * 8);
	CHECK_EQ(r.stats.flushes, 7ull * 64 + 400 * 2);
	CHECK_EQ(r.stats.fences, 2ull * (7 + 400 * 2));
	CHECK_EQ(r.stats.nvm_write_bytes, 0ull);  // the flushes write the kernel's line, in DRAM
	CHECK(r.normalized > run(f, "romulus", "none-dram", rep).normalized);
	// On the heap it is not tracked: no log, the present pages flushed whole at the interval end.
	std::string g = make_trace("romulus_gemos_heap.trace", [](trace::Writer &w) {
		for (int i = 0; i < 100; i++)
			w.access(1 + i, kStore, kHeap, 8, kHeapLo + 64 * i, kSp);
		w.access(kInterval + 1, kLoad, kHeap, 8, kHeapLo, kSp);
	});
	const sim::Result &h = run(g, "none-dram", "romulus-gemos", rep);
	CHECK_EQ(h.stats.log_bytes, 0ull);
	CHECK_EQ(h.stats.flushes, 2ull * 64);  // 6400 bytes: two pages
}

// The Prosper artifact's SSP (ssp_gemos.cc), counted by hand.
static void test_ssp_gemos()
{
	// 300 lines of the stack written above SP (pages 0..4), one interval end at 10 ms: the 5 pages
	// flushed (320 lines), the list walked (records of 40 B at 0, 40, .., 160: 1+2+1+2+2 = 8 lines),
	// each page's commit record updated and flushed (5 lines); 10 fences per 5 calls.  The merge
	// thread's runs that came due by then (every 2.56 ms for "10us": 3 in 10 ms) walk the list
	// again, with nothing evicted to copy; "1ms" (256 ms) has none.
	std::string f = make_trace("ssp_gemos.trace", [](trace::Writer &w) {
		for (int i = 0; i < 300; i++)
			w.access(1 + i, kStore, kStack, 8, kSp + 64 * i, kSp);
		w.access(kInterval + 1, kLoad, kStack, 8, kSp, kSp);
	});
	sim::Report rep;
	const sim::Result &slow = run(f, "ssp-gemos-1ms", "none-dram", rep);
	CHECK_EQ(slow.stats.flushes, 320ull + 8 + 5);
	CHECK_EQ(slow.stats.fences, 2ull * (5 + 5 + 5));
	CHECK_EQ(slow.stats.consolidations, 0ull);
	const sim::Result &fast = run(f, "ssp-gemos-10us", "none-dram", rep);
	CHECK_EQ(fast.stats.flushes, 320ull + 8 + 5 + 3 * 8);
	CHECK_EQ(fast.stats.checkpoint_bytes, 0ull);
	CHECK(fast.cycles > slow.cycles);
	// 70 stack pages with one line written each, a checkpoint (their commit bitmaps take it), then
	// 64 other pages read: the 64-entry TLB (16 sets x 4) holds only those, so all 70 were evicted.
	// The first merge ("100us": 25.6 ms) copies every committed line of every evicted page:
	// 70 lines, on the stack as on the heap (Fig 9's builds track the heap).  The same run on a region
	// the build does not track (nvm-gemos: Fig 8's heap) walks the same pages and copies nothing.
	for (uint8_t region : {kStack, kHeap}) {
		const uint64_t base = 0x7ff000000000ull;
		std::string g = make_trace(region == kStack ? "ssp_gemos_merge.trace" : "ssp_gemos_merge_heap.trace",
					   [&](trace::Writer &w) {
			for (uint64_t p = 0; p < 70; p++)
				w.access(1 + p, kStore, region, 8, base + 4096 * p, base);
			for (uint64_t p = 0; p < 64; p++)
				w.access(kInterval + 1 + p, kLoad, region, 8, base + 4096 * (100 + p), base);
			w.access(80000000, kLoad, region, 8, base + 4096 * 100, base);  // 26.7 ms: past the first merge
		});
		for (const char *mech : {"ssp-gemos-100us", "nvm-gemos-100us"}) {
			const sim::Result &m = region == kStack ? run(g, mech, "none-dram", rep) : run(g, "none-dram", mech, rep);
			CHECK_EQ(m.stats.consolidations, 70ull);
			CHECK_EQ(m.stats.checkpoint_bytes, mech[0] == 's' ? 70ull * 64 : 0ull);
		}
	}
}

static void test_ssp()
{
	// 300 distinct lines written (twice each) in one interval: the commit writes back 300 lines.
	std::string f = make_trace("ssp.trace", [](trace::Writer &w) {
		for (int k = 0; k < 2; k++)
			for (int i = 0; i < 300; i++)
				w.access(1 + k * 300 + i, kStore, kHeap, 8, kHeapLo + 64 * i, kSp);
		w.access(kInterval + 1, kLoad, kHeap, 8, kHeapLo, kSp);
	});
	sim::Report rep;
	for (const char *m : {"ssp-10us", "ssp-100us", "ssp-1ms"}) {
		const sim::Result &r = run(f, "none-dram", m, rep);
		CHECK_EQ(r.stats.checkpoint_bytes, 300ull * 64);
		CHECK(r.stats.nvm_write_bytes >= 300ull * 64);
	}
	// A shorter consolidation period costs more (more thread wake-ups), all else equal.
	double c10 = run(f, "none-dram", "ssp-10us", rep).cycles, c1ms = run(f, "none-dram", "ssp-1ms", rep).cycles;
	CHECK(c10 > c1ms);
}

static void test_dirtybit()
{
	// Heap: 37 distinct pages dirtied (several stores each) -> 37 x 4096 bytes, written twice
	// to NVM (log, then image).
	std::string f = make_trace("dirtybit.trace", [](trace::Writer &w) {
		uint64_t t = 1;
		for (int k = 0; k < 3; k++)
			for (int p = 0; p < 37; p++)
				w.access(t++, kStore, kHeap, 8, kHeapLo + 4096ull * p + 512 * k, kSp);
		w.access(kInterval + 1, kLoad, kHeap, 8, kHeapLo, kSp);
	});
	sim::Report rep;
	const sim::Result &r = run(f, "none-dram", "dirtybit", rep);
	CHECK_EQ(r.stats.checkpoint_bytes, 37ull * 4096);
	CHECK_EQ(r.stats.nvm_write_bytes, 2ull * 37 * 4096);
	// Stack: the first checkpoint copies the active region [page(SP-128), top): 9 pages here.
	std::string g = stores_trace("dirtybit_stack.trace", 10, true);
	CHECK_EQ(run(g, "dirtybit", "none-dram", rep).stats.checkpoint_bytes, 9ull * 4096);
}

static void test_prosper()
{
	// Interval 0: anything (the first checkpoint copies [SP-128, top) = 32 KiB + 128 B).
	// Interval 1: 50 stores of 8 B, 64 B apart, above SP, plus 20 below SP-128 (dead):
	// the second checkpoint copies exactly 50 x 8 bytes.
	std::string f = make_trace("prosper.trace", [](trace::Writer &w) {
		w.access(5, kStore, kStack, 8, kSp, kSp);
		uint64_t t = kInterval + 1;
		for (int i = 0; i < 50; i++)
			w.access(t++, kStore, kStack, 8, kSp + 64 * i, kSp);
		for (int i = 0; i < 20; i++)
			w.access(t++, kStore, kStack, 8, kSp - 1024 - 64 * i, kSp);
		w.access(2 * kInterval + 1, kLoad, kStack, 8, kSp, kSp);
	});
	sim::Report rep;
	const sim::Result &r = run(f, "prosper", "none-dram", rep);
	CHECK_EQ(r.stats.checkpoints, 2ull);
	CHECK_EQ(r.stats.checkpoint_bytes, (kStackHi - (kSp - 128)) + 50ull * 8);
	CHECK(r.stats.bitmap_loads > 0);
	// Redo buffer (payload + 16 B per run) and the image: both in NVM.
	CHECK_EQ(r.stats.nvm_write_bytes % 64, 0ull);
	// prosper on the heap is refused.
	bool refused = false;
	try {
		run(f, "none-dram", "prosper", rep);
	} catch (const std::invalid_argument &) {
		refused = true;
	}
	CHECK(refused);
}

static void test_config()
{
	sim::Config c;
	CHECK(c.get("l1_cycles") == 3);
	CHECK(c.get("nvm_write_buffer") == 48);
	c.apply("# comment\n  l1_cycles = 4   # trailing comment\n\nnvm_write_ns=100\n", "t.conf");
	CHECK(c.get("l1_cycles") == 4);
	CHECK(c.get("nvm_write_ns") == 100);
	auto refused = [&](const char *text, const char *needle) {
		try {
			c.apply(text, "bad.conf");
		} catch (const sim::ConfigError &e) {
			if (std::strstr(e.what(), needle))
				return true;
			std::fprintf(stderr, "config error \"%s\" lacks \"%s\"\n", e.what(), needle);
			return false;
		}
		return false;
	};
	CHECK(refused("l1_cycles = 3\nno_such_key = 1\n", "bad.conf:2: unknown key"));
	CHECK(refused("l1_cycles = fast\n", "bad.conf:1: \"fast\" is not a number"));
	CHECK(refused("l1_cycles\n", "bad.conf:1: expected"));
	CHECK(refused("l1_cycles = -1\n", "must not be negative"));
	CHECK(refused("l1_cycles = \n", "expected"));
	// A config changes the answer: slower NVM writes make flush slower.
	std::string f = stores_trace("cfg.trace", 200, false);
	std::string conf = path("slow.conf");
	std::ofstream(conf) << "nvm_write_ns = 2000\n";
	sim::Options o;
	o.trace = f;
	o.stack = {"flush"};
	sim::Config fast, slow;
	slow.load(conf);
	CHECK(sim::simulate(o, slow).results[1].cycles > sim::simulate(o, fast).results[1].cycles);
}

// ---- broken traces ----

static std::string raw_records(int n)
{
	std::string raw = trace::Writer::header("broken");
	trace::Writer::put_record(raw, 0, trace::kRegion, kStack, 1, kStackLo, kStackHi);
	for (int i = 1; i < n; i++)
		trace::Writer::put_record(raw, 1, kStore, kStack, 8, kSp, kSp);
	return raw;
}


static void end_record(std::string &raw, uint64_t n) { trace::Writer::put_record(raw, 0, trace::kEnd, 0, 0, n, 0); }

// write_broken -- one file per way a trace can be wrong; the name says which record fails.
static void write_broken(const std::string &dir)
{
	std::string ok = raw_records(10);
	end_record(ok, 10);
	write_file(dir + "/good.trace", trace::compress(ok));
	std::string z = trace::compress(ok);
	write_file(dir + "/cut-compressed.trace", z.substr(0, z.size() - 7));
	std::string noend = raw_records(10);
	write_file(dir + "/no-end.trace", trace::compress(noend));  // record 10: no END
	std::string badop = raw_records(10);
	badop[trace::Writer::header("broken").size() + 5 * 24 + 4] = 42;  // record 5
	end_record(badop, 10);
	write_file(dir + "/bad-op.trace", trace::compress(badop));
	std::string partial = ok.substr(0, ok.size() - 24 - 7);  // record 9 has 17 of its 24 bytes
	write_file(dir + "/partial-record.trace", trace::compress(partial));
	std::string wrongcount = raw_records(10);
	end_record(wrongcount, 9);
	write_file(dir + "/wrong-count.trace", trace::compress(wrongcount));
	std::string hdr = ok;
	hdr.replace(hdr.find("field addr u64 8"), 16, "field addr u32 8");
	write_file(dir + "/bad-field.trace", trace::compress(hdr));
	write_file(dir + "/not-zstd.trace", "this is not a trace\n");
	write_file(dir + "/empty.trace", "");
}

static void expect_error(const std::string &f, const std::string &needle)
{
	try {
		trace::Reader rd(f);
		trace::Event ev[64];
		while (rd.next(ev, 64)) {
		}
	} catch (const trace::TraceError &e) {
		std::string what = e.what();
		if (what.find(f) == 0 && what.find(needle) != std::string::npos)
			return;
		std::fprintf(stderr, "%s: error \"%s\" lacks \"%s\"\n", f.c_str(), what.c_str(), needle.c_str());
		failures++;
		return;
	}
	std::fprintf(stderr, "%s: accepted, expected an error with \"%s\"\n", f.c_str(), needle.c_str());
	failures++;
}

static void test_reader()
{
	write_broken(tmpdir);
	{
		trace::Reader rd(path("good.trace"));
		trace::Event ev[64];
		size_t n = rd.next(ev, 64);
		CHECK_EQ(n, 9ull);
		CHECK_EQ(rd.next(ev, 64), 0ull);
		CHECK_EQ(ev[8].instr, 9ull);
		CHECK_EQ(rd.ranges().size(), 1ull);
		CHECK_EQ(rd.ranges()[0].start, kStackLo);
		CHECK(rd.program() == "broken");
	}
	expect_error(path("cut-compressed.trace"), "truncated");
	expect_error(path("no-end.trace"), "record 10: truncated");
	expect_error(path("bad-op.trace"), "record 5: unknown op 42");
	expect_error(path("partial-record.trace"), "record 9: truncated: 17 trailing bytes");
	expect_error(path("wrong-count.trace"), "record 10: END says 9");
	expect_error(path("bad-field.trace"), "header: field addr");
	expect_error(path("not-zstd.trace"), "record 0: not a zstd stream");
	expect_error(path("empty.trace"), "header");
	// Round trip through the Writer, including an instruction gap that needs ADVANCE records.
	std::string f = make_trace("gap.trace", [](trace::Writer &w) {
		w.access(10, kLoad, kHeap, 4, kHeapLo, kSp);
		w.access(10 + 9000000000ull, kStore, kHeap, 4, kHeapLo, kSp);
	});
	trace::Reader rd(f);
	trace::Event ev[4];
	CHECK_EQ(rd.next(ev, 4), 2ull);
	CHECK_EQ(ev[1].instr, 9000000010ull);
}

int main(int argc, char **argv)
{
	if (argc == 3 && std::strcmp(argv[1], "--write-broken") == 0) {
		write_broken(argv[2]);
		return 0;
	}
	make_tmpdir();
	test_none_cycles();
	test_flush();
	test_sp_awareness();
	test_undo_redo();
	test_romulus();
	test_ssp();
	test_ssp_gemos();
	test_romulus_gemos();
	test_dirtybit();
	test_prosper();
	test_config();
	test_reader();
	return finish("test_sim");
}

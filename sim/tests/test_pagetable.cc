// test_pagetable.cc -- the page-table study: the radix model's table pages and entry writes on
// patterns whose answers follow from the x86-64 layout (512 entries per level), each scheme's
// flushes and list writes, the MAP/UNMAP trace records (round trip, old consumers, refusals)
// and the synthetic patterns.  `test_pagetable --write-broken DIR` writes the broken traces
// that test_pagetable_cli.sh feeds the CLI.
#include <cstring>
#include <functional>
#include <stdexcept>

#include "core/pagetable.h"
#include "core/ptstudy.h"
#include "trace/synth.h"
#include "trace/trace.h"
#include "check.h"

using namespace prosper;
using sim::PageTable;
using sim::PtOp;

constexpr uint64_t kGiB = 1ull << 30, kPage = 4096;
constexpr uint64_t kFresh = 64 * kGiB;  // 1 GiB-aligned, nothing mapped near it

struct Counts {
	uint64_t alloc[5] = {}, freed[5] = {}, writes[5] = {};
};
static Counts count(const std::vector<PtOp> &ops)
{
	Counts c;
	for (auto &o : ops)
		(o.kind == PtOp::kAlloc ? c.alloc : o.kind == PtOp::kFree ? c.freed : c.writes)[o.level]++;
	return c;
}

static void test_radix_dense()
{
	// N pages in a fresh 1 GiB-aligned range: ceil(N/512) PTE tables + 1 PMD + 1 PUD table, one PTE
	// per page, one PMD entry per PTE table, one PUD entry, one PGD entry.
	for (uint64_t n : {1ull, 511ull, 512ull, 513ull, 1500ull}) {
		PageTable pt;
		std::vector<PtOp> ops;
		for (uint64_t i = 0; i < n; i++)
			CHECK(pt.touch(kFresh + i * kPage + 8, ops));
		Counts c = count(ops);
		uint64_t ptes = (n + 511) / 512;
		CHECK_EQ(c.alloc[1], ptes);
		CHECK_EQ(c.alloc[2], 1ull);
		CHECK_EQ(c.alloc[3], 1ull);
		CHECK_EQ(c.alloc[4], 0ull);  // the root exists with the process
		CHECK_EQ(c.writes[1], n);
		CHECK_EQ(c.writes[2], ptes);
		CHECK_EQ(c.writes[3], 1ull);
		CHECK_EQ(c.writes[4], 1ull);
		CHECK_EQ(pt.pages(), n);
		CHECK_EQ(pt.table_pages(), ptes + 3);
		// Allocation precedes the entry that links it.
		CHECK(ops[0].kind == PtOp::kAlloc && ops[0].level == 3 && ops[1].kind == PtOp::kWrite && ops[1].level == 4);
		ops.clear();
		CHECK(!pt.touch(kFresh, ops));  // present already: no change
		CHECK(ops.empty());
		// Unmapping everything frees every table but the root and clears every entry written.
		CHECK_EQ(pt.unmap(kFresh, kFresh + kGiB, ops), n);
		Counts u = count(ops);
		CHECK_EQ(u.freed[1], ptes);
		CHECK_EQ(u.freed[2], 1ull);
		CHECK_EQ(u.freed[3], 1ull);
		CHECK_EQ(u.writes[1] + u.writes[2] + u.writes[3] + u.writes[4], n + ptes + 2);
		CHECK_EQ(pt.table_pages(), 1ull);
		CHECK_EQ(pt.pages(), 0ull);
	}
}

static void test_radix_strides()
{
	// 16 pages 2 MiB apart: a PTE table each, one PMD; 1 GiB apart: a PTE and a PMD table each.
	PageTable a, b;
	std::vector<PtOp> oa, ob;
	for (uint64_t i = 0; i < 16; i++) {
		a.touch(kFresh + i * (2ull << 20), oa);
		b.touch(kFresh + i * kGiB, ob);
	}
	Counts ca = count(oa), cb = count(ob);
	CHECK_EQ(ca.alloc[1], 16ull);
	CHECK_EQ(ca.alloc[2], 1ull);
	CHECK_EQ(ca.writes[2], 16ull);
	CHECK_EQ(cb.alloc[1], 16ull);
	CHECK_EQ(cb.alloc[2], 16ull);
	CHECK_EQ(cb.writes[3], 16ull);
	// A partial unmap keeps the shared tables; a page's walk names one frame per level.
	std::vector<PtOp> u;
	CHECK_EQ(a.unmap(kFresh, kFresh + (2ull << 20), u), 1ull);
	CHECK_EQ(count(u).freed[1], 1ull);
	CHECK_EQ(count(u).freed[2], 0ull);
	std::array<uint32_t, sim::kPtLevels> frame;
	std::array<uint16_t, sim::kPtLevels> index;
	CHECK(!a.walk(kFresh, frame, index));
	CHECK(a.walk(kFresh + (2ull << 20), frame, index));
	CHECK_EQ(index[3], 0);
	CHECK_EQ(index[2], 1);
	// The freed PTE table's frame is the next one handed out (LIFO).
	uint32_t freed = 0;
	for (auto &o : u)
		if (o.kind == PtOp::kFree)
			freed = o.frame;
	u.clear();
	a.touch(kFresh + 100 * kGiB, u);
	CHECK(u[0].kind == PtOp::kAlloc && u[0].frame == freed);
}

static sim::PtReport run(const std::string &trace, double interval_ms = 10)
{
	sim::PtOptions o;
	o.trace = trace;
	o.schemes = {"persistent", "rebuild-indexed", "volatile", "rebuild"};
	o.interval_ms = interval_ms;
	sim::Config cfg;
	return sim::simulate_pagetable(o, cfg);
}

static uint64_t sum(const uint64_t *v) { return v[1] + v[2] + v[3] + v[4]; }

static void test_schemes()
{
	trace::write_synthetic("allocfree:8M:2M", path("af.trace"));
	sim::PtReport rep = run(path("af.trace"), 0.1);
	const sim::PtResult &p = rep.results[0], &r = rep.results[1], &v = rep.results[2];
	// 2048 pages touched, 512 unmapped and touched again twice; all unmapped at the end.
	CHECK_EQ(p.faults, 2048ull + 2 * 512);
	CHECK_EQ(p.pages_unmapped, 2ull * 512 + 2048);
	CHECK_EQ(rep.mappings, 6ull);
	CHECK_EQ(rep.events, 2048ull + 2 * 512);
	for (auto *x : {&r, &v}) {  // the model's changes do not depend on the scheme
		CHECK_EQ(sum(x->entry_writes), sum(p.entry_writes));
		CHECK_EQ(sum(x->tables_allocated), sum(p.tables_allocated));
	}
	// persistent: each entry write flushed and fenced; each new table page written back whole.
	CHECK_EQ(p.stats.flushes, sum(p.entry_writes) + 64 * sum(p.tables_allocated));
	CHECK_EQ(p.stats.fences, sum(p.entry_writes) + sum(p.tables_allocated));
	CHECK_EQ(p.resume_ms, 0.0);
	// volatile: nothing flushed; rebuild: only its list, at checkpoints.
	CHECK_EQ(v.stats.flushes, 0ull);
	CHECK(r.stats.checkpoints > 0);
	CHECK(r.list_entry_writes > 0 && r.pages_walked > 0 && r.resume_ms > 0);
	CHECK(p.ms > v.ms && r.ms > v.ms);
	// With checkpoints rarer than the run, rebuild is volatile exactly; persistent does not care.
	sim::PtReport rare = run(path("af.trace"), 1e6);
	CHECK_EQ(rare.results[1].stats.checkpoints, 0ull);
	CHECK_EQ(rare.results[1].cycles, rare.results[2].cycles);
	CHECK_EQ(rare.results[0].cycles, p.cycles);
	CHECK(rare.results[1].cycles < r.cycles);
	// A checkpoint before every event: each page mapped is listed once, and each unmapped page
	// once more, except those of the final unmap (no checkpoint follows it).
	trace::write_synthetic("allocfree:2M:1M", path("af2.trace"));
	sim::PtReport each = run(path("af2.trace"), 1e-6);
	CHECK_EQ(each.results[1].faults, 512ull + 2 * 256);
	CHECK_EQ(each.results[1].list_entry_writes, 512ull + 2 * 256 + 2 * 256);
	// Without any checkpoint nothing is listed.
	trace::write_synthetic("seq:4M", path("seq.trace"));
	sim::PtReport s = run(path("seq.trace"), 1e6);
	CHECK_EQ(s.results[0].faults, 1024ull);
	CHECK_EQ(s.results[0].entry_writes[1], 2048ull);  // set, then cleared by the final unmap
	CHECK_EQ(s.results[1].list_entry_writes, 0ull);
}

// Kindle's list (pt_rebuild_list.cc), counted by hand on two pages of one 2 MiB block with a
// checkpoint before every event (MAP, store p0, store p1, UNMAP; none before the MAP, at time 0):
//   c1 (before store p0): nothing present, nothing listed: no visits.
//   c2 (before store p1): p0 missed (an empty list: 0), appended: a block node (0 level-one
//      visits, its allocation 2) and an entry (allocation 3) = 5; the resume: p0 found (block
//      1 + place 1 = 2), p1 missed (1 level-one node + 1 entry = 2) = 4.
//   c3 (before the UNMAP): p0 found twice (4), p1 missed (2) and appended (its block found at 1,
//      allocation 4) = 11; the resume: p0 2, p1 3 = 5.
//   the UNMAP looks both up: 2 + 3.
// 30 visits; 2 entries; 9 nodes flushed (2 + 1 allocator headers, block, head, 2 entries, 2
// block heads), each between two fences.
static void test_kindle_list()
{
	trace::write_synthetic("seq:8K", path("seq8k.trace"));
	sim::PtReport rep = run(path("seq8k.trace"), 1e-6);
	const sim::PtResult &k = rep.results[3], &v = rep.results[2];
	CHECK_EQ(k.stats.checkpoints, 3ull);
	CHECK_EQ(k.list_visits, 30ull);
	CHECK_EQ(k.list_entry_writes, 2ull);
	CHECK_EQ(k.pages_walked, 3ull);
	CHECK_EQ(k.stats.flushes, 9ull);
	CHECK_EQ(k.stats.fences, 18ull);
	CHECK(k.resume_ms > 0);  // the areas of the last checkpoint, though the trace ends unmapped
	CHECK(k.ms > v.ms);
	// Searches cost with the list's length: a longer area, the same checkpoint rate, more
	// visits per listed page.
	trace::write_synthetic("seq:4M", path("seq4m.trace"));
	trace::write_synthetic("seq:16M", path("seq16m.trace"));
	sim::PtReport a = run(path("seq4m.trace"), 0.05), b = run(path("seq16m.trace"), 0.05);
	CHECK(a.results[3].list_entry_writes > 0 && b.results[3].list_entry_writes > 0);
	double per_a = double(a.results[3].list_visits) / double(a.results[3].list_entry_writes);
	double per_b = double(b.results[3].list_visits) / double(b.results[3].list_entry_writes);
	CHECK(per_b > 2 * per_a);
	// An unmap in the middle of an area splits it: the checkpoints after it look up only the
	// pages left, and the unmap itself looks up the pages it removes (their entries stay).
	// Four pages stored one by one, checkpoints before every event but the first (time 0):
	//   before p1's store: p0 appended (5), the resume: p0 2, three misses 2 each       = 13
	//   before p2's: p0 2x2, p1 missed 2 and appended 5; resume 2 + 3 + 3 + 3            = 22
	//   before p3's: 4 + 6, p2 3 + 6; resume 2 + 3 + 4 + 4                               = 32
	//   before the unmap: 4 + 6 + 8, p3 4 + 7; resume 2 + 3 + 4 + 5                      = 43
	//   the unmap of p1, p2: 3 + 4                                                        =  7
	//   before the last store (areas p0 and p3): 4 + 10; resume 2 + 5                     = 21
	{
		trace::Writer w(path("split.trace"), "split");
		w.map(0, trace::kHeap, trace::kProtRead | trace::kProtWrite, kFresh, kFresh + 4 * kPage);
		for (uint64_t i = 0; i < 4; i++)
			w.access(16 * (i + 1), trace::kStore, trace::kHeap, 8, kFresh + i * kPage, 0);
		w.unmap(80, kFresh + kPage, kFresh + 3 * kPage);
		w.access(96, trace::kStore, trace::kHeap, 8, kFresh, 0);
		w.close();
	}
	sim::PtReport split = run(path("split.trace"), 1e-6);
	const sim::PtResult &sk = split.results[3];
	CHECK_EQ(sk.stats.checkpoints, 6ull);
	CHECK_EQ(sk.list_visits, 138ull);
	CHECK_EQ(sk.list_entry_writes, 4ull);
	CHECK_EQ(sk.pages_walked, 12ull);
	// No checkpoint: nothing listed, the unmap's lookups visit nothing; volatile's time exactly.
	sim::PtReport rare = run(path("seq16m.trace"), 1e6);
	CHECK_EQ(rare.results[3].list_visits, 0ull);
	CHECK_EQ(rare.results[3].cycles, rare.results[2].cycles);
}

static void test_trace_records()
{
	// Round trip: MAP/UNMAP reach a consumer that asks for them, in order with the accesses.
	{
		trace::Writer w(path("map.trace"), "maps");
		w.map(5, trace::kHeap, trace::kProtRead | trace::kProtWrite, kFresh, kFresh + 3 * kPage);
		w.access(7, trace::kStore, trace::kHeap, 8, kFresh + 16, 0);
		w.unmap(9, kFresh, kFresh + kPage);
		w.close();
	}
	trace::Event ev[8];
	{
		trace::Reader rd(path("map.trace"));
		rd.deliver_mappings(true);
		CHECK_EQ(rd.next(ev, 8), 3ull);
		CHECK(ev[0].op == trace::kMap && ev[0].addr == kFresh && ev[0].sp == kFresh + 3 * kPage);
		CHECK_EQ(ev[0].size, 3u);
		CHECK_EQ(ev[0].instr, 5ull);
		CHECK(ev[1].op == trace::kStore && ev[1].instr == 7);
		CHECK(ev[2].op == trace::kUnmap && ev[2].sp == kFresh + kPage && ev[2].instr == 9);
		CHECK_EQ(rd.mappings(), 2ull);
	}
	{
		trace::Reader rd(path("map.trace"));  // a consumer of loads and stores only
		CHECK_EQ(rd.next(ev, 8), 1ull);
		CHECK(ev[0].op == trace::kStore && ev[0].instr == 7);
		CHECK_EQ(rd.next(ev, 8), 0ull);
		CHECK_EQ(rd.mappings(), 2ull);
	}
}

// write_broken -- traces whose record 2 is a bad MAP/UNMAP (records 0, 1 are good).
static void write_broken(const std::string &dir)
{
	auto one = [&](const std::string &name, uint8_t op, uint16_t prot, uint64_t start, uint64_t end) {
		std::string raw = trace::Writer::header("broken");
		trace::Writer::put_record(raw, 1, trace::kMap, trace::kHeap, 3, kFresh, kFresh + kPage);
		trace::Writer::put_record(raw, 1, trace::kStore, trace::kHeap, 8, kFresh, 0);
		trace::Writer::put_record(raw, 1, op, trace::kHeap, prot, start, end);
		trace::Writer::put_record(raw, 0, trace::kEnd, 0, 0, 3, 3);
		write_file(dir + "/" + name, trace::compress(raw));
	};
	one("map-good.trace", trace::kUnmap, 0, kFresh, kFresh + kPage);
	one("map-unaligned.trace", trace::kMap, 3, kFresh + 8, kFresh + kPage);
	one("map-empty.trace", trace::kUnmap, 0, kFresh, kFresh);
	one("map-prot.trace", trace::kMap, 9, kFresh, kFresh + kPage);
}

static void expect_error(const std::string &f, const std::string &needle)
{
	std::string what = "accepted";
	try {
		trace::Reader rd(f);
		trace::Event ev[8];
		while (rd.next(ev, 8)) {
		}
	} catch (const trace::TraceError &e) {
		what = e.what();
	}
	if (what.find(f + ": ") != 0 || what.find(needle) == std::string::npos) {
		std::fprintf(stderr, "%s: \"%s\" lacks \"%s\"\n", f.c_str(), what.c_str(), needle.c_str());
		failures++;
	}
}

static void test_refusals()
{
	write_broken(tmpdir);
	expect_error(path("map-unaligned.trace"), "record 2: a mapping not aligned to 4 KiB pages");
	expect_error(path("map-empty.trace"), "record 2: a mapping whose end is not above its start");
	expect_error(path("map-prot.trace"), "record 2: a mapping with protection bits 9");
	for (const char *spec : {"seq", "seq:0", "seq:5000", "seq:12Q", "stride:4:3K", "stride:100000:1G",
				 "allocfree:4M:8M", "walk:1M", "allocfree:4M:2M:9999"}) {
		bool refused = false;
		try {
			trace::write_synthetic(spec, path("x.trace"));
		} catch (const std::invalid_argument &) {
			refused = true;
		}
		if (!refused)
			std::fprintf(stderr, "--synth %s: accepted\n", spec), failures++;
	}
}

int main(int argc, char **argv)
{
	if (argc == 3 && std::strcmp(argv[1], "--write-broken") == 0) {
		write_broken(argv[2]);
		return 0;
	}
	make_tmpdir();
	test_radix_dense();
	test_radix_strides();
	test_schemes();
	test_kindle_list();
	test_trace_records();
	test_refusals();
	return finish("test_pagetable");
}

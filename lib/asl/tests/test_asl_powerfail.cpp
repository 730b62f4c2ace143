// test_asl_powerfail.cpp -- the log's append/commit protocol under simulated power failures.
//
// Every flush and drain of a log goes through the persist layer; its hooks keep a "durable"
// shadow of the log file (lines reach it only when a drain follows their flush).  At every
// persist point the test builds crash images: the durable shadow plus, for each line that
// differs in memory, the line kept, dropped, or torn at 8-byte boundaries (all keep/drop subsets
// when few lines are dirty, random ones otherwise).  Each image is scanned like recovery does,
// and must hold every operation whose commit had completed, with its arguments, and nothing
// that was never committed.  Both kinds of entry are written: entries committed later by their
// commit word, and sealed entries (commit word inside the checksum, one persist).  Mutation
// tests: without the entry flush or without the commit flush, the same checks must fail.
//
// Also: the non-temporal path (real cache-line persistence, fastcopy.hpp) writes exactly the
// bytes the flushed path writes, for both kinds, across the ring's end; and the hardware
// CRC-32C equals the portable one.
#include <cstring>
#include <fcntl.h>
#include <map>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>
#include "check.hpp"
#include "fastcopy.hpp"
#include "log.hpp"
#include "prosper/crc32c.h"

using prosper::asl::detail::Log;

namespace {

constexpr size_t kLine = 64;

struct Op {
	uint64_t lsn = 0, commit = 0;
	uint16_t tag = 0;
	std::string args;
	bool durable_commit = false; // commit() returned
};

struct Sim {
	char *live = nullptr;
	size_t len = 0;
	std::vector<char> durable;
	std::map<size_t, std::vector<char>> pending; // line offset -> content at its flush
	std::vector<Op> *ops = nullptr;
	uint64_t from = 0; // the snapshot position recovery would scan from
	char *check_map = nullptr;
	Log *checker = nullptr;
	Rng rng{12345}; // fixed: the same images every run
	uint64_t points = 0, images = 0, failures = 0;

	void image_check(const std::vector<char> &img)
	{
		images++;
		std::memcpy(check_map, img.data(), len);
		std::vector<Log::Committed> found;
		uint64_t max_commit = 0;
		checker->scan(from, found, max_commit);
		std::map<uint64_t, uint64_t> by_lsn;
		for (auto &c : found)
			by_lsn[c.lsn] = c.commit;
		bool ok = true;
		std::vector<char> args;
		for (const Op &op : *ops) {
			if (op.lsn < from)
				continue;
			auto it = by_lsn.find(op.lsn);
			if (op.durable_commit && (it == by_lsn.end() || it->second != op.commit))
				ok = false; // a committed operation is lost
			if (it != by_lsn.end()) {
				if (op.commit == 0 || it->second != op.commit)
					ok = false; // never committed, or under another id
				uint16_t tag;
				checker->read(op.lsn, tag, args);
				if (tag != op.tag || std::string(args.begin(), args.end()) != op.args)
					ok = false;
				by_lsn.erase(it);
			}
		}
		if (!by_lsn.empty())
			ok = false; // an entry nobody wrote
		if (!ok)
			failures++;
	}

	void crash_point()
	{
		points++;
		std::vector<size_t> dirty;
		for (size_t off = 0; off < len; off += kLine)
			if (std::memcmp(live + off, durable.data() + off, kLine) != 0)
				dirty.push_back(off);
		auto build = [&](uint64_t keep_mask, long torn) {
			std::vector<char> img = durable;
			for (size_t i = 0; i < dirty.size(); i++) {
				size_t off = dirty[i];
				if (static_cast<long>(i) == torn) {
					for (size_t w = 0; w < kLine; w += 8)
						if (rng.below(2))
							std::memcpy(img.data() + off + w, live + off + w, 8);
				} else if ((keep_mask >> (i % 64)) & 1) {
					std::memcpy(img.data() + off, live + off, kLine);
				}
			}
			image_check(img);
		};
		if (dirty.size() <= 6) {
			for (uint64_t m = 0; m < (uint64_t(1) << dirty.size()); m++)
				build(m, -1);
		} else {
			for (int k = 0; k < 48; k++)
				build(rng.next(), -1);
		}
		for (int k = 0; k < 8 && !dirty.empty(); k++)
			build(rng.next(), static_cast<long>(rng.below(dirty.size())));
	}
};

int on_flush(void *ctx, int, const void *addr, size_t n)
{
	Sim *s = static_cast<Sim *>(ctx);
	s->crash_point();
	size_t start = (static_cast<const char *>(addr) - s->live) & ~(kLine - 1);
	size_t end = static_cast<size_t>(static_cast<const char *>(addr) - s->live) + n;
	for (size_t off = start; off < end; off += kLine)
		s->pending[off].assign(s->live + off, s->live + off + kLine);
	return 0;
}

void on_drain(void *ctx, int)
{
	Sim *s = static_cast<Sim *>(ctx);
	s->crash_point();
	for (auto &[off, line] : s->pending)
		std::memcpy(s->durable.data() + off, line.data(), kLine);
	s->pending.clear();
}

// Runs the workload; returns the number of crash images that failed the checks.
uint64_t run(uint64_t skip_sites, Sim &report)
{
	std::string dir = scratch_dir("powerfail");
	prosper_persist plain{};
	plain.granularity = PROSPER_GRAN_CACHE_LINE;
	plain.simulated = 1;
	Sim sim;
	prosper_persist_hooks hooks{on_flush, on_drain, nullptr, &sim};
	prosper_persist pp{};
	pp.granularity = PROSPER_GRAN_CACHE_LINE;
	pp.simulated = 1;
	pp.skip_sites = skip_sites;
	auto log = Log::create(dir, 1, "pf", 99, 64 * 1024, &plain);
	sim.live = log->mapping();
	sim.len = log->mapping_bytes();
	sim.durable.assign(sim.live, sim.live + sim.len);
	// the checker: a second log file whose bytes are replaced by each crash image
	std::string check_dir = dir + "/check";
	mkdir(check_dir.c_str(), 0700);
	auto checker = Log::create(check_dir, 1, "pf", 99, 64 * 1024, &plain);
	sim.checker = checker.get();
	sim.check_map = checker->mapping();
	std::vector<Op> ops;
	sim.ops = &ops;
	// the writer's log, now observed
	log.reset();
	log = Log::open(dir + "/log.1", &pp);
	sim.live = log->mapping();
	pp.hooks = &hooks;
	Rng r(777);
	uint64_t next_commit = 1, sealed_ops = 0;
	for (int i = 0; i < 400; i++) {
		Op op;
		op.tag = static_cast<uint16_t>(r.below(5));
		op.args.resize(r.below(i % 10 == 0 ? 3000 : 100));
		for (char &c : op.args)
			c = static_cast<char>(r.next());
		op.lsn = log->tail();
		bool sealed = r.below(3) == 0;
		if (sealed)
			op.commit = next_commit++; // committed by the append itself
		ops.push_back(op);
		uint64_t lsn = log->append(op.tag, ops.back().args.data(), static_cast<uint32_t>(ops.back().args.size()),
					   sealed ? op.commit : 0);
		(void)lsn;
		if (sealed) {
			ops.back().durable_commit = true;
			sealed_ops++;
			continue;
		}
		if (r.below(8) == 0)
			continue; // this one is never committed
		ops.back().commit = next_commit++;
		log->commit(ops.back().lsn, ops.back().commit);
		ops.back().durable_commit = true;
		// a snapshot now and then: space before the entry 8 back is reusable
		if (i % 16 == 15 && ops.size() > 8)
			sim.from = ops[ops.size() - 8].lsn;
	}
	pp.hooks = nullptr;
	CHECK(sealed_ops > 50);
	report.points = sim.points;
	report.images = sim.images;
	log.reset();
	checker.reset();
	remove_dir(dir);
	return sim.failures;
}

// The same entries appended through the non-temporal path and through the flushed one must
// leave the same bytes in the ring (padding aside: the streamed path zeroes it), including
// entries that wrap around the ring's end.
void test_streamed_equals_flushed()
{
	std::string dir = scratch_dir("powerfail-nt");
	prosper_persist real{};
	real.granularity = PROSPER_GRAN_CACHE_LINE; // clwb / non-temporal stores + sfence, for real
	prosper_persist sim{};
	sim.granularity = PROSPER_GRAN_CACHE_LINE;
	sim.simulated = 1; // no instructions: the flushed path
	CHECK(prosper::asl::detail::can_stream(&real, PSITE_ASL_LOG) && !prosper::asl::detail::can_stream(&sim, PSITE_ASL_LOG));
	std::string d2 = dir + "/b";
	mkdir(d2.c_str(), 0700);
	auto a = Log::create(dir, 1, "nt", 7, 64 * 1024, &real);
	auto b = Log::create(d2, 1, "nt", 7, 64 * 1024, &sim);
	Rng r(4242);
	uint64_t compared = 0, wrapped = 0, streamed = 0, streamed_wrapped = 0;
	for (int i = 0; i < 2000; i++) {
		std::string args(r.below(i % 7 == 0 ? 5000 : 300), '\0');
		for (char &c : args)
			c = static_cast<char>(r.next());
		uint64_t cid = r.below(2) ? static_cast<uint64_t>(i + 1) : 0;
		uint64_t pa = a->append(static_cast<uint16_t>(i), args.data(), static_cast<uint32_t>(args.size()), cid);
		uint64_t pb = b->append(static_cast<uint16_t>(i), args.data(), static_cast<uint32_t>(args.size()), cid);
		CHECK(pa == pb);
		uint64_t n = prosper::asl::detail::kEntryHeaderBytes + args.size(), cap = a->capacity();
		if (pa % cap + n > cap)
			wrapped++;
		if (Log::entry_size(args.size()) >= prosper::asl::detail::kStreamMinBytes) {
			streamed++;
			if (pa % cap + n > cap)
				streamed_wrapped++;
		}
		for (uint64_t k = 0; k < n; k++) {
			uint64_t off = prosper::asl::detail::kLogHeaderBytes + (pa + k) % cap;
			if (a->mapping()[off] != b->mapping()[off]) {
				CHECK(!"streamed entry differs from the flushed one");
				break;
			}
		}
		compared++;
	}
	std::printf("streamed vs flushed: %llu entries compared (%llu large enough to stream), %llu across the ring's end "
		    "(%llu of them streamed)\n",
		    (unsigned long long)compared, (unsigned long long)streamed, (unsigned long long)wrapped,
		    (unsigned long long)streamed_wrapped);
	CHECK(streamed > 10 && streamed_wrapped > 0 && wrapped > streamed_wrapped);
	a.reset();
	b.reset();
	remove_dir(dir);
}

void test_crc()
{
	Rng r(99);
	std::vector<char> buf(10000);
	for (char &c : buf)
		c = static_cast<char>(r.next());
	for (int i = 0; i < 2000; i++) {
		size_t off = r.below(64), len = r.below(9000);
		uint32_t seed = static_cast<uint32_t>(r.next());
		CHECK(prosper::asl::detail::crc32c(seed, buf.data() + off, len) == prosper_crc32c(seed, buf.data() + off, len));
	}
}

} // namespace

int main()
{
	test_crc();
	test_streamed_equals_flushed();
	Sim r;
	uint64_t failures = run(0, r);
	std::printf("log protocol: %llu persist points, %llu crash images, %llu failures\n", (unsigned long long)r.points,
		    (unsigned long long)r.images, (unsigned long long)failures);
	CHECK(failures == 0 && r.images > 15000);
	// mutations: each persist removed must be noticed
	for (int site : {PSITE_ASL_LOG, PSITE_ASL_COMMIT}) {
		Sim m;
		uint64_t f = run(uint64_t(1) << site, m);
		std::printf("without %s: %llu of %llu crash images fail (must be > 0)\n", prosper_persist_site_name(site),
			    (unsigned long long)f, (unsigned long long)m.images);
		CHECK(f > 0);
	}
	return report("test_asl_powerfail");
}

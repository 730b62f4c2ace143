// asl_bench.cpp -- the measurements of Pronto's evaluation, on this machine: container latency
// persistent vs volatile (paper Fig 7), concurrent hash map throughput (Fig 8), asynchronous vs
// synchronous logging as the operation gets longer (Fig 12), snapshot sync/async latency and
// recovery time vs size (Fig 13a, section 5.8).  Prints one JSON document; the table beside the
// paper's numbers is made by bench/scripts/asl_bench.sh from it.
//
// usage: asl_bench [--ops N] [--reps R] [--quick] [--figures 7,12,8,13,mem]
// Every point is measured R times (default 3; 1 with --quick), each time in a fresh runtime, and
// the median of each number is printed, with "reps".  Runtimes live in fresh directories under
// /dev/shm, removed after each run.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <map>
#include <mutex>
#include <queue>
#include <sys/mman.h>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>
#include "prosper/asl.hpp"

namespace asl = prosper::asl;
using clk = std::chrono::steady_clock;

static double secs_since(clk::time_point t0) { return std::chrono::duration<double>(clk::now() - t0).count(); }

static unsigned g_reps = 3;
// The median of a point's repetitions (the upper middle one for an even count).
static double median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	return v[v.size() / 2];
}
// Runs f() g_reps times; f returns the numbers of one repetition; returns their medians.  Each
// repetition starts with the memory freed by the previous ones given back to the system
// (malloc_trim): otherwise the volatile containers of a later repetition reuse pages the C
// library kept, while the persistent heap is a fresh mapping every time -- measured, the
// volatile hash map of Fig 8 ran 0.7 M/s in a first repetition and up to 1.07 in later ones.
template <class F> static std::vector<double> medians(F &&f)
{
	std::vector<std::vector<double>> runs;
	for (unsigned r = 0; r < g_reps; r++) {
		malloc_trim(0);
		runs.push_back(f());
	}
	std::vector<double> out;
	for (size_t k = 0; k < runs[0].size(); k++) {
		std::vector<double> col;
		for (auto &run : runs)
			col.push_back(run[k]);
		out.push_back(median(col));
	}
	return out;
}

static std::string scratch()
{
	std::string t = "/dev/shm/prosper-asl-bench-XXXXXX";
	if (access("/dev/shm", W_OK) != 0)
		t = "/tmp/prosper-asl-bench-XXXXXX";
	if (!mkdtemp(t.data())) {
		perror("mkdtemp");
		exit(1);
	}
	return t;
}
static void rmdir_all(const std::string &d)
{
	std::string cmd = "rm -rf '" + d + "'";
	if (system(cmd.c_str()) != 0)
		fprintf(stderr, "could not remove %s\n", d.c_str());
}

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}
// A 32-byte key, as in the paper's YCSB traces.
static std::string key_of(uint64_t i)
{
	char b[40];
	snprintf(b, sizeof b, "user%028llu", (unsigned long long)(mix(i) % 10000000000000000000ull));
	return std::string(b, 32);
}
static std::string value_of(uint64_t i, size_t n)
{
	std::string v(n, 'v');
	uint64_t x = mix(i);
	memcpy(v.data(), &x, std::min<size_t>(8, n));
	return v;
}

static asl::Options bench_options(size_t ops, size_t value)
{
	asl::Options o;
	o.heap_reserve = std::max<size_t>(size_t(256) << 20, ops * (value + 256) * 3);
	// a log that holds the whole run (the paper's log never wrapped and it snapshotted every
	// 15 s): the latency measured is the operation's, not a wait for log space
	size_t log = static_cast<size_t>(static_cast<double>(ops) * static_cast<double>(value + 128) * 1.2);
	o.log_capacity = std::max<size_t>(size_t(64) << 20, (log + 4095) & ~size_t(4095));
	return o;
}

// ---- Fig 7: containers ------------------------------------------------------------------------
template <class F> static double per_op_us(size_t ops, F &&f)
{
	auto t0 = clk::now();
	for (size_t i = 0; i < ops; i++)
		f(i);
	return secs_since(t0) * 1e6 / static_cast<double>(ops);
}

static void fig7(size_t ops, bool &first)
{
	const size_t sizes[] = {64, 256, 1024, 4096};
	for (size_t sz : sizes) {
		std::vector<std::string> vals(ops);
		std::vector<std::string> keys(ops);
		for (size_t i = 0; i < ops; i++) {
			vals[i] = value_of(i, sz);
			keys[i] = key_of(i);
		}
		// the medians of {volatile us, persistent us, snapshots completed during the persistent run}
		auto emit = [&](const char *name, const std::vector<double> &m) {
			printf("%s\n    {\"figure\": \"7\", \"container\": \"%s\", \"value_bytes\": %zu, \"ops\": %zu, \"reps\": %u, "
			       "\"volatile_us\": %.4f, \"persistent_us\": %.4f, \"overhead\": %.2f, \"snapshots\": %.0f}",
			       first ? "" : ",", name, sz, ops, g_reps, m[0], m[1], m[1] / m[0], m[2]);
			first = false;
			fflush(stdout);
		};
		// one repetition: the volatile container, then the persistent one in a fresh runtime
		auto point = [&](auto make_volatile, auto &&insert_volatile, auto tag, const char *name, auto &&insert_persistent) {
			using P = typename decltype(tag)::type;
			return [&, make_volatile, name]() -> std::vector<double> {
				auto v = make_volatile();
				double vt = per_op_us(ops, [&](size_t i) { insert_volatile(*v, i); });
				std::string d = scratch();
				double pt, snaps;
				{
					auto rt = asl::open(d, bench_options(ops, sz));
					auto &p = rt->get_object<P>(name);
					pt = per_op_us(ops, [&](size_t i) { insert_persistent(p, i); });
					snaps = static_cast<double>(rt->last_snapshot().seq);
				}
				rmdir_all(d);
				return {vt, pt, snaps};
			};
		};
		using VS = std::vector<std::string>;
		using PQ = std::priority_queue<std::string>;
		using M = std::map<std::string, std::string>;
		using U = std::unordered_map<std::string, std::string>;
		emit("vector", medians(point([] { return std::make_unique<VS>(); }, [&](VS &v, size_t i) { v.push_back(vals[i]); },
					     std::type_identity<asl::pvector<std::string>>{}, "v",
					     [&](auto &p, size_t i) { p.push_back(vals[i]); })));
		emit("priority_queue", medians(point([] { return std::make_unique<PQ>(); }, [&](PQ &q, size_t i) { q.push(vals[i]); },
						     std::type_identity<asl::ppriority_queue<std::string>>{}, "q",
						     [&](auto &p, size_t i) { p.push(vals[i]); })));
		emit("map", medians(point([] { return std::make_unique<M>(); },
					  [&](M &m, size_t i) { m.insert_or_assign(keys[i], vals[i]); },
					  std::type_identity<asl::pmap<std::string, std::string>>{}, "m",
					  [&](auto &p, size_t i) { p.insert_or_assign(keys[i], vals[i]); })));
		emit("unordered_map", medians(point([] { return std::make_unique<U>(); },
						    [&](U &m, size_t i) { m.insert_or_assign(keys[i], vals[i]); },
						    std::type_identity<asl::punordered_map<std::string, std::string>>{}, "u",
						    [&](auto &p, size_t i) { p.insert_or_assign(keys[i], vals[i]); })));
	}
}

// ---- Fig 12: ASL vs synchronous logging vs operation latency ------------------------------------
static void spin_ns(uint64_t ns)
{
	auto end = clk::now() + std::chrono::nanoseconds(ns);
	while (clk::now() < end) {
	}
}

class Worker : public asl::PersistentObject {
public:
	void work(uint64_t ns, std::string_view payload)
	{
		op_begin<&Worker::work>(ns, payload);
		spin_ns(ns);
		count_ += payload.size();
		op_commit();
	}
	PROSPER_ASL_UPDATES(&Worker::work);

private:
	uint64_t count_ = 0;
};

static void fig12(size_t ops, bool &first)
{
	const uint64_t lat_ns[] = {100, 300, 1000, 3000, 10000, 30000, 100000};
	std::string payload(1024 - 16, 'p'); // a 1 KiB entry, as in the paper
	for (uint64_t ns : lat_ns) {
		size_t n = std::max<size_t>(2000, std::min<size_t>(ops, static_cast<size_t>(2e9 / 1000 / static_cast<double>(ns) * 100)));
		std::vector<double> m = medians([&]() -> std::vector<double> {
			double vt = per_op_us(n, [&](size_t) { spin_ns(ns); });
			double t[2], by_logger = 0;
			for (int sync = 0; sync < 2; sync++) {
				std::string d = scratch();
				asl::Options o = bench_options(n, 1024);
				o.sync_logging = sync == 1;
				{
					auto rt = asl::open(d, o);
					auto &w = rt->get_object<Worker>("w");
					t[sync] = per_op_us(n, [&](size_t) { w.work(ns, payload); });
					if (!sync) {
						asl::LoggingStats ls = rt->logging();
						by_logger = static_cast<double>(ls.by_logger) / static_cast<double>(ls.by_logger + ls.by_foreground);
					}
				}
				rmdir_all(d);
			}
			return {vt, t[0], t[1], by_logger};
		});
		double vt = m[0], t[2] = {m[1], m[2]}, by_logger = m[3];
		printf("%s\n    {\"figure\": \"12\", \"op_ns\": %llu, \"ops\": %zu, \"reps\": %u, \"volatile_us\": %.4f, \"asl_us\": %.4f, "
		       "\"sync_us\": %.4f, \"asl_overhead_us\": %.4f, \"sync_overhead_us\": %.4f, \"entries_by_logger\": %.3f}",
		       first ? "" : ",", (unsigned long long)ns, n, g_reps, vt, t[0], t[1], t[0] - vt, t[1] - vt, by_logger);
		first = false;
		fflush(stdout);
	}
}

// ---- Fig 8: concurrent hash map ------------------------------------------------------------------
struct VolatileCHM {
	struct B {
		std::mutex mu;
		std::unordered_map<std::string, std::string> m;
	} b[64];
	void insert(const std::string &k, const std::string &v)
	{
		B &x = b[(std::hash<std::string>{}(k) >> 7) % 64];
		std::lock_guard<std::mutex> g(x.mu);
		x.m.insert_or_assign(k, v);
	}
};

static void fig8(size_t ops, bool &first)
{
	std::vector<std::string> keys(ops), vals(ops);
	for (size_t i = 0; i < ops; i++) {
		keys[i] = key_of(i);
		vals[i] = value_of(i, 1024);
	}
	unsigned maxt = std::max(2u, std::thread::hardware_concurrency());
	for (unsigned threads = 1; threads <= maxt && threads <= 8; threads *= 2) {
		auto run = [&](auto &&insert) {
			auto t0 = clk::now();
			std::vector<std::thread> ts;
			for (unsigned t = 0; t < threads; t++)
				ts.emplace_back([&, t] {
					for (size_t i = t; i < ops; i += threads)
						insert(i);
				});
			for (auto &x : ts)
				x.join();
			return static_cast<double>(ops) / secs_since(t0) / 1e6;
		};
		std::vector<double> m = medians([&]() -> std::vector<double> {
			auto vol = std::make_unique<VolatileCHM>();
			double v = run([&](size_t i) { vol->insert(keys[i], vals[i]); });
			// twice: as the paper measured (its snapshots 15 s apart, none in a run this short:
			// the log's half-fill does not request one), and with the default options, whose
			// half-full log requests one in the run -- its preparation and copy beside the inserts
			auto persistent = [&](bool snapshot_in_run, double *snaps, double *running) {
				std::string d = scratch();
				double p;
				{
					asl::Options o = bench_options(ops, 1024);
					if (!snapshot_in_run)
						o.auto_snapshot_fill = 0;
					auto rt = asl::open(d, o);
					auto &m = rt->get_object<asl::pconcurrent_hash_map<std::string, std::string>>("h");
					p = run([&](size_t i) { m.insert(keys[i], vals[i]); });
					*snaps = static_cast<double>(rt->last_snapshot().seq);
					*running = rt->snapshot_running() ? 1 : 0;
				}
				rmdir_all(d);
				return p;
			};
			double s0, r0, s1, r1;
			double p = persistent(false, &s0, &r0);
			if (s0 + r0 != 0) {
				fprintf(stderr, "asl_bench: Fig 8 took a snapshot with auto_snapshot_fill = 0\n");
				exit(1);
			}
			double ps = persistent(true, &s1, &r1);
			return {v, p, ps, s1 + r1};
		});
		double v = m[0], p = m[1];
		printf("%s\n    {\"figure\": \"8\", \"threads\": %u, \"ops\": %zu, \"reps\": %u, \"volatile_mops\": %.4f, "
		       "\"persistent_mops\": %.4f, \"persistent_snapshot_in_run_mops\": %.4f, \"snapshots_in_run\": %.0f}",
		       first ? "" : ",", threads, ops, g_reps, v, p, m[2], m[3]);
		first = false;
		fflush(stdout);
	}
}

// ---- Fig 13a and section 5.8: snapshot phases and recovery vs size ----------------------------
class Blob : public asl::PersistentObject {
public:
	void fill(uint64_t bytes, uint64_t seed)
	{
		op_begin<&Blob::fill>(bytes, seed);
		cells_.resize(bytes / sizeof(uint64_t));
		for (size_t i = 0; i < cells_.size(); i++)
			cells_[i] = mix(seed + i);
		op_commit();
	}
	void poke(uint64_t i, uint64_t v)
	{
		op_begin<&Blob::poke>(i, v);
		cells_[i % cells_.size()] = v;
		op_commit();
	}
	PROSPER_ASL_UPDATES(&Blob::fill, &Blob::poke);
	uint64_t at(size_t i) const { return cells_[i]; }

private:
	std::vector<uint64_t, asl::allocator<uint64_t>> cells_;
};

static void fig13(bool quick, bool &first)
{
	std::vector<uint64_t> mib = {2, 16, 128, 1024};
	if (quick)
		mib = {2, 16};
	for (uint64_t m : mib) {
		uint64_t bytes = m << 20;
		// one repetition: {heap MiB, sync ms, async ms, writes during copy, fault chunks,
		// recovery ms, load ms, replay ms, replayed, open ms}
		std::vector<double> r = medians([&]() -> std::vector<double> {
			std::string d = scratch();
			asl::Options o;
			o.heap_reserve = bytes * 2 + (size_t(64) << 20);
			o.log_capacity = size_t(256) << 20; // no wait for log space while the copy runs
			o.auto_snapshot_fill = 0;
			asl::SnapshotStats s;
			uint64_t pokes = 0;
			{
				auto rt = asl::open(d, o);
				auto &b = rt->get_object<Blob>("b");
				b.fill(bytes, 1);
				rt->snapshot(); // the first one allocates the file
				uint64_t first_seq = rt->last_snapshot().seq;
				rt->snapshot_async();
				// random writes while the copy runs: each first write to a chunk waits for its
				// copy.  At least one: on a loaded machine a 2 MiB copy can finish before this
				// thread runs again, and a write after the cut must still be replayed on reopen.
				do {
					b.poke(mix(pokes), pokes);
					pokes++;
				} while (rt->last_snapshot().seq == first_seq);
				s = rt->last_snapshot();
			}
			// reopen: load the newest snapshot, replay the pokes
			auto t1 = clk::now();
			double open_s, attach_s;
			asl::RecoveryStats rs;
			{
				auto rt = asl::open(d, o);
				open_s = secs_since(t1);
				auto &b = rt->get_object<Blob>("b");
				attach_s = secs_since(t1);
				rs = rt->recovery();
				(void)b.at(0);
			}
			rmdir_all(d);
			return {static_cast<double>(s.bytes) / 1048576.0, s.sync_ms, s.async_ms, static_cast<double>(pokes),
				static_cast<double>(s.fault_chunks), attach_s * 1e3, rs.load_ms, rs.replay_ms,
				static_cast<double>(rs.replayed), open_s * 1e3};
		});
		printf("%s\n    {\"figure\": \"13a\", \"reps\": %u, \"heap_mib\": %.1f, \"sync_ms\": %.3f, \"async_ms\": %.3f, "
		       "\"writes_during_copy\": %.0f, \"fault_chunks\": %.0f, \"recovery_ms\": %.3f, \"load_ms\": %.3f, "
		       "\"replay_ms\": %.3f, \"replayed\": %.0f, \"open_ms\": %.3f}",
		       first ? "" : ",", g_reps, r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9]);
		first = false;
		fflush(stdout);
	}
}

// ---- the machine: what loading a heap costs at best ---------------------------------------------
// Recovery copies a snapshot into fresh heap memory.  Its floor on this machine: the kernel
// providing fresh zeroed pages (MADV_POPULATE_WRITE, two threads as the loader uses) and a plain
// memcpy into memory already there; and a memcpy into fresh memory (faults included).
static void memfloor(bool quick, bool &first)
{
	size_t bytes = quick ? size_t(64) << 20 : size_t(1280) << 20;
	std::vector<double> r = medians([&]() -> std::vector<double> {
		std::vector<char> src(bytes, 1);
		auto fresh = [&] {
			void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
			if (p == MAP_FAILED) {
				perror("mmap");
				exit(1);
			}
			return static_cast<char *>(p);
		};
		char *a = fresh();
		auto t0 = clk::now();
		std::thread other([&] { madvise(a + bytes / 2, bytes - bytes / 2, 23 /* MADV_POPULATE_WRITE */); });
		madvise(a, bytes / 2, 23);
		other.join();
		double populate = secs_since(t0);
		t0 = clk::now();
		memcpy(a, src.data(), bytes);
		double copy = secs_since(t0);
		char *b = fresh();
		t0 = clk::now();
		memcpy(b, src.data(), bytes);
		double fault_copy = secs_since(t0);
		munmap(a, bytes);
		munmap(b, bytes);
		return {populate, copy, fault_copy};
	});
	double gb = static_cast<double>(bytes) / 1e9;
	printf("%s\n    {\"figure\": \"mem\", \"reps\": %u, \"bytes\": %zu, \"populate_gbs\": %.2f, \"memcpy_gbs\": %.2f, "
	       "\"memcpy_fresh_gbs\": %.2f, \"populate_then_memcpy_gbs\": %.2f}",
	       first ? "" : ",", g_reps, bytes, gb / r[0], gb / r[1], gb / r[2], gb / (r[0] + r[1]));
	first = false;
	fflush(stdout);
}

int main(int argc, char **argv)
{
	size_t ops = 200000;
	bool quick = false;
	std::string figures = "7,12,8,13,mem";
	long reps = -1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--ops") && i + 1 < argc)
			ops = strtoull(argv[++i], nullptr, 10);
		else if (!strcmp(argv[i], "--quick"))
			quick = true;
		else if (!strcmp(argv[i], "--figures") && i + 1 < argc)
			figures = argv[++i];
		else if (!strcmp(argv[i], "--reps") && i + 1 < argc && atol(argv[i + 1]) > 0)
			reps = atol(argv[++i]);
		else {
			fprintf(stderr, "usage: asl_bench [--ops N] [--reps R] [--quick] [--figures 7,12,8,13,mem]\n");
			return 2;
		}
	}
	auto want = [&](const char *f) { return ("," + figures + ",").find("," + std::string(f) + ",") != std::string::npos; };
	if (quick)
		ops = std::min<size_t>(ops, 5000);
	g_reps = reps > 0 ? static_cast<unsigned>(reps) : quick ? 1 : 3;
	const char *g = getenv("PMEM2_FORCE_GRANULARITY");
	printf("{\"ops\": %zu, \"reps\": %u, \"granularity\": \"%s\", \"cores\": %u, \"results\": [", ops, g_reps,
	       g ? g : "PAGE", std::thread::hardware_concurrency());
	bool first = true;
	if (want("7"))
		fig7(ops, first);
	if (want("12"))
		fig12(quick ? 2000 : ops, first);
	if (want("8"))
		fig8(ops, first);
	if (want("13"))
		fig13(quick, first);
	if (want("mem"))
		memfloor(quick, first);
	printf("\n]}\n");
	return 0;
}

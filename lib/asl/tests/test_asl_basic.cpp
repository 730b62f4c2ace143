// test_asl_basic.cpp -- the runtime in one process: objects survive close + reopen (which
// recovers exactly as after a crash: newest snapshot + replay), snapshots shorten the replay,
// type checks, nested operations, Pronto-Sync, and the allocator.
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <map>
#include <sys/mman.h>
#include <thread>
#include <string>
#include "check.hpp"
#include "prosper/asl.hpp"

namespace asl = prosper::asl;

static asl::Options small_options()
{
	asl::Options o;
	o.heap_reserve = size_t(64) << 20;
	o.log_capacity = size_t(1) << 20;
	o.auto_snapshot_fill = 0; // tests decide when snapshots happen
	return o;
}

static void test_map_reopen(bool sync_logging, bool pool = false)
{
	std::string top = scratch_dir("map");
	std::string dir = pool ? top + "/m.pool" : top; // snapshots in a pool, logs beside it
	asl::Options o = small_options();
	o.sync_logging = sync_logging;
	std::map<long, std::string> model;
	{
		auto rt = asl::open(dir, o);
		auto &m = rt->get_object<asl::pmap<long, std::string>>("m");
		CHECK(m.size() == 0);
		for (long i = 0; i < 500; i++) {
			std::string v(static_cast<size_t>(i % 97), static_cast<char>('a' + i % 26));
			m.insert_or_assign(i % 200, v);
			model[i % 200] = v;
			if (i % 7 == 0) {
				m.erase(i % 13);
				model.erase(i % 13);
			}
		}
		CHECK(m.size() == model.size());
		CHECK(rt->recovery().snapshot_seq == 0);
	}
	{
		auto rt = asl::open(dir, o);
		auto &m = rt->get_object<asl::pmap<long, std::string>>("m");
		CHECK(m.size() == model.size());
		bool same = true;
		for (auto &[k, v] : model)
			same = same && m.contains(k) && std::string_view(m.at(k)) == v;
		CHECK(same);
		CHECK(rt->recovery().replayed > 500);
		rt->snapshot();
		CHECK(rt->last_snapshot().seq == 1);
		m.insert(1000, "after");
		model[1000] = "after";
	}
	{
		auto rt = asl::open(dir, o);
		CHECK(rt->recovery().snapshot_seq == 1);
		auto &m = rt->get_object<asl::pmap<long, std::string>>("m");
		CHECK(rt->recovery().replayed == 1);
		CHECK(m.size() == model.size());
		CHECK(m.count(1000) == 1 && m.at(1000) == "after");
		bool threw = false;
		try {
			rt->get_object<asl::pvector<long>>("m");
		} catch (const std::runtime_error &) {
			threw = true;
		}
		CHECK(threw);
	}
	remove_dir(top);
}

static void test_containers()
{
	std::string dir = scratch_dir("containers");
	asl::Options o = small_options();
	{
		auto rt = asl::open(dir, o);
		auto &v = rt->get_object<asl::pvector<std::string>>("v");
		auto &q = rt->get_object<asl::ppriority_queue<long>>("q");
		auto &u = rt->get_object<asl::punordered_map<std::string, long>>("u");
		for (long i = 0; i < 300; i++) {
			v.push_back("s" + std::to_string(i));
			q.push((i * 37) % 101);
			u.insert_or_assign("k" + std::to_string(i % 50), i);
		}
		v.pop_back();
		v.set(0, "zero");
		q.pop();
		u.erase("k3");
		rt->snapshot();
		v.push_back("tail");
		q.push(1000);
		u.insert("new", 7);
	}
	{
		auto rt = asl::open(dir, o);
		auto &v = rt->get_object<asl::pvector<std::string>>("v");
		auto &q = rt->get_object<asl::ppriority_queue<long>>("q");
		auto &u = rt->get_object<asl::punordered_map<std::string, long>>("u");
		CHECK(v.size() == 300);
		CHECK(v[0] == "zero" && v[1] == "s1" && v.back() == "tail");
		CHECK(q.size() == 300 && q.top() == 1000);
		CHECK(u.size() == 50 && !u.contains("k3") && u.at("new") == 7 && u.at("k4") == 254);
		CHECK(rt->recovery().replayed == 3);
	}
	remove_dir(dir);
}

// A class that is not a container: an account ledger whose transfer calls deposit (nested).
class Ledger : public asl::PersistentObject {
public:
	void deposit(long who, long amount)
	{
		op_begin<&Ledger::deposit>(who, amount);
		balance_[who % 8] += amount;
		op_commit();
	}
	void transfer(long from, long to, long amount)
	{
		op_begin<&Ledger::transfer>(from, to, amount);
		deposit(from, -amount); // nested: logged once, as the transfer
		deposit(to, amount);
		op_commit();
	}
	PROSPER_ASL_UPDATES(&Ledger::deposit, &Ledger::transfer);
	long balance(long who) const { return balance_[who % 8]; }

private:
	long balance_[8] = {};
};

static void test_parallel_replay()
{
	std::string dir = scratch_dir("parallel");
	asl::Options o = small_options();
	{
		auto rt = asl::open(dir, o);
		auto [a, b, c] = rt->get_objects<asl::pvector<long>, asl::pmap<long, long>, asl::pvector<std::string>>({"a", "b", "c"});
		for (long i = 0; i < 2000; i++) {
			a.push_back(i);
			b.insert_or_assign(i % 100, i);
			if (i % 10 == 0)
				c.push_back(std::to_string(i));
		}
	}
	{
		auto rt = asl::open(dir, o);
		auto [c, a, b] = rt->get_objects<asl::pvector<std::string>, asl::pvector<long>, asl::pmap<long, long>>({"c", "a", "b"});
		CHECK(a.size() == 2000 && a[1999] == 1999);
		CHECK(b.size() == 100 && b.at(99) == 1999);
		CHECK(c.size() == 200 && c[199] == "1990");
		CHECK(rt->recovery().replayed == 4200);
		CHECK(&rt->get_object<asl::pvector<long>>("a") == &a); // attached once
		bool threw = false;
		try {
			rt->get_objects<asl::pvector<long>, asl::pvector<long>>({"a", "a"});
		} catch (const std::invalid_argument &) {
			threw = true;
		}
		CHECK(threw);
	}
	remove_dir(dir);
}

static void test_custom_class()
{
	std::string dir = scratch_dir("ledger");
	asl::Options o = small_options();
	{
		auto rt = asl::open(dir, o);
		auto &l = rt->get_object<Ledger>("ledger");
		l.deposit(1, 100);
		l.transfer(1, 2, 30);
		CHECK(l.balance(1) == 70 && l.balance(2) == 30);
		CHECK(rt->log_stats("ledger").appended == 2 * 64); // the transfer is one entry
	}
	{
		auto rt = asl::open(dir, o);
		auto &l = rt->get_object<Ledger>("ledger");
		CHECK(l.balance(1) == 70 && l.balance(2) == 30);
		CHECK(rt->recovery().replayed == 2);
	}
	remove_dir(dir);
}

// An operation that leaves its core (sleeps) gives the logger time: handed off, its entry is
// written by the logger, not by the operation's thread.  The hand-off is forced
// (PROSPER_ASL_LOGGING): left to choose, a thread on a loaded machine may find the sealed write
// faster and rightly hand off little.  With sync_logging none are the logger's.
class Napper : public asl::PersistentObject {
public:
	void nap(uint64_t us)
	{
		op_begin<&Napper::nap>(us);
		std::this_thread::sleep_for(std::chrono::microseconds(us));
		naps_++;
		op_commit();
	}
	PROSPER_ASL_UPDATES(&Napper::nap);
	long naps() const { return naps_; }

private:
	long naps_ = 0;
};

static void test_logger_writes_entries()
{
	setenv("PROSPER_ASL_LOGGING", "handoff", 1);
	for (bool sync : {false, true}) {
		std::string dir = scratch_dir("logger");
		asl::Options o = small_options();
		o.sync_logging = sync;
		{
			auto rt = asl::open(dir, o);
			auto &n = rt->get_object<Napper>("n");
			for (int i = 0; i < 100; i++)
				n.nap(1000); // 1 ms away from the core: time enough even on a busy machine
			asl::LoggingStats ls = rt->logging();
			CHECK(ls.by_logger + ls.by_foreground == 100);
			if (sync)
				CHECK(ls.by_logger == 0);
			else
				CHECK(ls.by_logger > 0);
			std::printf("%s: %llu entries written by the logger, %llu by the operation's thread\n",
				    sync ? "sync logging" : "asl", (unsigned long long)ls.by_logger, (unsigned long long)ls.by_foreground);
		}
		{
			auto rt = asl::open(dir, o);
			CHECK(rt->get_object<Napper>("n").naps() == 100);
		}
		remove_dir(dir);
	}
	unsetenv("PROSPER_ASL_LOGGING");
}

static void test_allocator_and_errors()
{
	std::string dir = scratch_dir("alloc");
	asl::Options o = small_options();
	auto rt = asl::open(dir, o);
	bool threw = false;
	try {
		asl::open(dir, o);
	} catch (const std::logic_error &) {
		threw = true;
	}
	CHECK(threw);
	void *a = asl::palloc(100), *b = asl::palloc(100);
	CHECK(a != b && reinterpret_cast<uintptr_t>(a) % 16 == 0);
	CHECK(reinterpret_cast<uintptr_t>(a) >= o.heap_base && reinterpret_cast<uintptr_t>(a) < o.heap_base + o.heap_reserve);
	asl::pfree(a);
	void *c = asl::palloc(90);
	CHECK(c == a); // same class, reused
	asl::allocator<std::max_align_t> al;
	struct alignas(64) Wide {
		char x[64];
	};
	asl::allocator<Wide> wal;
	Wide *w = wal.allocate(3);
	CHECK(reinterpret_cast<uintptr_t>(w) % 64 == 0);
	wal.deallocate(w, 3);
	asl::pfree(b);
	asl::pfree(c);
	(void)al;
	// every size class: blocks hold what was asked (filled to the last byte, checked after all
	// are allocated: no two overlap), the large ones with little waste, and a freed block is
	// reused by the next request of its class
	{
		std::vector<std::pair<char *, size_t>> blocks;
		for (size_t n = 1; n < 300000; n = n * 9 / 8 + 1) {
			char *p = static_cast<char *>(asl::palloc(n));
			std::memset(p, static_cast<int>(n & 0xff), n);
			blocks.emplace_back(p, n);
		}
		bool intact = true;
		for (auto &[p, n] : blocks)
			for (size_t i = 0; i < n; i++)
				intact = intact && p[i] == static_cast<char>(n & 0xff);
		CHECK(intact);
		char *x = static_cast<char *>(asl::palloc(4097)), *y = static_cast<char *>(asl::palloc(4097));
		CHECK(static_cast<size_t>(y > x ? y - x : x - y) <= 4608 + 64); // 4.5 KiB steps, not 8 KiB
		asl::pfree(x);
		CHECK(asl::palloc(4100) == x);
		for (auto &[p, n] : blocks)
			asl::pfree(p);
		asl::pfree(x);
		asl::pfree(y);
	}
	auto &v = rt->get_object<asl::pvector<std::string>>("big");
	threw = false;
	try {
		v.push_back(std::string(2 << 20, 'x')); // larger than the log
	} catch (const std::length_error &) {
		threw = true;
	}
	CHECK(threw && v.size() == 0);
	v.push_back("fine afterwards");
	CHECK(v.size() == 1);
	rt->close();
	remove_dir(dir);
}

// An update that throws (the heap is full) leaves no trace: the container is unchanged, the
// operation's entry stays uncommitted, and snapshots still work (the gate share was released).
static void test_failed_update()
{
	std::string dir = scratch_dir("abort");
	asl::Options o = small_options();
	o.heap_reserve = size_t(8) << 20;
	o.log_capacity = size_t(4) << 20;
	size_t pushed = 0;
	{
		auto rt = asl::open(dir, o);
		auto &v = rt->get_object<asl::pvector<std::string>>("v");
		bool threw = false;
		try {
			for (;; pushed++)
				v.push_back(std::string(100000, static_cast<char>('a' + pushed % 26)));
		} catch (const std::bad_alloc &) {
			threw = true;
		}
		CHECK(threw && v.size() == pushed && pushed > 10);
		v.pop_back();
		uint64_t before = rt->last_snapshot().seq; // a full log may have asked for some already
		rt->snapshot(); // would wait forever for the failed operation without op_abort
		// ours, and perhaps one the full log asked for, completed in the background meanwhile
		CHECK(rt->last_snapshot().seq >= before + 1);
		v.pop_back();
	}
	{
		auto rt = asl::open(dir, o);
		auto &v = rt->get_object<asl::pvector<std::string>>("v");
		CHECK(v.size() == pushed - 2);
		CHECK(rt->recovery().replayed == 1);
	}
	remove_dir(dir);
}

// The heap's pages ahead of the allocator are made present by a helper (heap.cpp): the 8 MiB past
// the bump pointer's huge page become resident without the program touching them -- and do not
// when the helper is switched off, so the check can fail.
static size_t resident_pages(uintptr_t from, size_t bytes)
{
	std::vector<unsigned char> v(bytes / 4096);
	if (mincore(reinterpret_cast<void *>(from), bytes, v.data()) != 0)
		return 0;
	size_t n = 0;
	for (unsigned char c : v)
		n += c & 1;
	return n;
}

static void test_heap_pages_ahead(bool helper)
{
	std::string dir = scratch_dir("ahead");
	if (!helper)
		setenv("PROSPER_ASL_HEAP_AHEAD", "0", 1);
	{
		auto rt = asl::open(dir, small_options());
		void *p = asl::palloc(3 << 20); // past the first huge page
		constexpr uintptr_t kHuge = 2 << 20;
		uintptr_t ahead = (reinterpret_cast<uintptr_t>(p) + (3 << 20) + kHuge - 1) & ~(kHuge - 1);
		constexpr size_t kBytes = 8 << 20, kPages = kBytes / 4096;
		size_t n = 0;
		for (int i = 0; i < (helper ? 500 : 10) && (n = resident_pages(ahead, kBytes)) < kPages; i++)
			std::this_thread::sleep_for(std::chrono::milliseconds(10));
		if (helper)
			CHECK(n == kPages); // within 5 s
		else
			CHECK(n == 0);      // after 0.1 s
		asl::pfree(p);
	}
	unsetenv("PROSPER_ASL_HEAP_AHEAD");
	remove_dir(dir);
}

int main()
{
	test_heap_pages_ahead(true);
	test_heap_pages_ahead(false);
	test_map_reopen(false);
	test_map_reopen(true);
	test_map_reopen(false, true);
	test_containers();
	test_parallel_replay();
	test_custom_class();
	test_logger_writes_entries();
	test_failed_update();
	test_allocator_and_errors();
	return report("test_asl_basic");
}

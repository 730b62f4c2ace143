// test_asl_concurrent.cpp -- the concurrent hash map under two threads: in one process (snapshots
// running while both threads update, so write-protect faults copy chunks early), and across
// SIGKILL with a linearizability check: every operation a thread reported must be present, and
// a key's recovered value may not be older than that thread's last reported write to the key.
#include <atomic>
#include <csignal>
#include <cstring>
#include <map>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <time.h>
#include <unistd.h>
#include <vector>
#include "check.hpp"
#include "prosper/asl.hpp"

namespace asl = prosper::asl;
using CMap = asl::pconcurrent_hash_map<long, long, 32>;
constexpr long kKeys = 2048;
constexpr long kThreadScale = 1000000000L; // value = thread * scale + sequence number

static asl::Options options()
{
	asl::Options o;
	o.heap_reserve = size_t(256) << 20;
	o.log_capacity = size_t(512) << 10;
	o.auto_snapshot_fill = 0.5;
	return o;
}

static long key_of(int t, long seq) { return static_cast<long>(Rng(static_cast<uint64_t>(t) * 7919 + static_cast<uint64_t>(seq)).below(kKeys)); }

static void test_in_process()
{
	std::string dir = scratch_dir("cmap");
	std::map<long, long> expect;
	{
		auto rt = asl::open(dir, options());
		auto &m = rt->get_object<CMap>("cm");
		std::atomic<bool> stop{false};
		std::thread snapper([&] {
			while (!stop.load()) {
				rt->snapshot();
				std::this_thread::sleep_for(std::chrono::milliseconds(2));
			}
		});
		std::vector<std::thread> workers;
		for (int t = 0; t < 2; t++)
			workers.emplace_back([&m, t] {
				for (long s = 0; s < 20000; s++)
					m.insert(key_of(t, s) * 2 + t, t * kThreadScale + s); // disjoint keys: a known result
			});
		for (auto &w : workers)
			w.join();
		stop.store(true);
		snapper.join();
		for (int t = 0; t < 2; t++)
			for (long s = 0; s < 20000; s++)
				expect[key_of(t, s) * 2 + t] = t * kThreadScale + s;
		CHECK(m.size() == expect.size());
		std::printf("in process: %llu snapshots during the updates, last: %llu chunks copied on a write fault\n",
			    (unsigned long long)rt->last_snapshot().seq, (unsigned long long)rt->last_snapshot().fault_chunks);
	}
	{
		auto rt = asl::open(dir, options());
		auto &m = rt->get_object<CMap>("cm");
		bool same = m.size() == expect.size();
		for (auto &[k, v] : expect)
			same = same && m.find(k) == v;
		CHECK(same);
	}
	remove_dir(dir);
}

// Child: two threads write shared keys forever, each reporting (thread, seq) after op returns.
static int child(const char *dir, int report)
{
	auto rt = asl::open(dir, options());
	auto &m = rt->get_object<CMap>("cm");
	std::vector<std::thread> workers;
	for (int t = 0; t < 2; t++)
		workers.emplace_back([&m, t, report] {
			for (long s = 0;; s++) {
				m.insert(key_of(t, s), t * kThreadScale + s);
				long msg[2] = {t, s};
				if (write(report, msg, sizeof msg) != sizeof msg)
					_exit(3);
			}
		});
	for (auto &w : workers)
		w.join();
	return 0;
}

static void test_kill_linearizable(int rounds)
{
	for (int round = 0; round < rounds; round++) {
		std::string dir = scratch_dir("cmapkill");
		int p[2];
		if (pipe(p) != 0)
			std::exit(2);
		pid_t pid = fork();
		if (pid == 0) {
			close(p[0]);
			std::string fd = std::to_string(p[1]);
			execl("/proc/self/exe", "test_asl_concurrent", "child", dir.c_str(), fd.c_str(), (char *)nullptr);
			_exit(127);
		}
		close(p[1]);
		struct timespec ts = {0, (20 + round * 7 % 50) * 1000000L};
		nanosleep(&ts, nullptr);
		kill(pid, SIGKILL);
		waitpid(pid, nullptr, 0);
		long reported[2] = {-1, -1};
		long msg[2];
		while (read(p[0], msg, sizeof msg) == sizeof msg)
			reported[msg[0]] = std::max(reported[msg[0]], msg[1]);
		close(p[0]);
		auto rt = asl::open(dir, options());
		auto &m = rt->get_object<CMap>("cm");
		bool ok = true;
		for (int t = 0; t < 2 && ok; t++) {
			// the last reported write of thread t to each key
			std::map<long, long> last;
			for (long s = 0; s <= reported[t]; s++)
				last[key_of(t, s)] = s;
			for (auto &[k, s] : last) {
				auto v = m.find(k);
				if (!v) {
					ok = false; // a reported write vanished
					break;
				}
				int writer = static_cast<int>(*v / kThreadScale);
				long seq = *v % kThreadScale;
				if (writer == t && seq < s)
					ok = false; // older than a write the same thread finished later
				if (writer != t && seq > reported[writer] + 1)
					ok = false; // a write that was never made (at most one in flight)
			}
		}
		CHECK(ok);
		if (!ok)
			std::printf("round %d: not a linearizable prefix (reported %ld, %ld)\n", round, reported[0], reported[1]);
		rt->close();
		remove_dir(dir);
	}
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "child"))
		return child(argv[2], atoi(argv[3]));
	const char *long_mode = getenv("PROSPER_LONG");
	test_in_process();
	test_kill_linearizable(long_mode && *long_mode == '1' ? 100 : 8);
	return report("test_asl_concurrent");
}

// test_asl_wrap.cpp -- the circular log keeps working forever: many updates with periodic
// (automatic) snapshots stay inside a small fixed log, the log file never grows, and reopening
// afterwards recovers exactly the final state.  PROSPER_LONG=1: 10 million updates.
#include <chrono>
#include <map>
#include <string>
#include <sys/stat.h>
#include "check.hpp"
#include "prosper/asl.hpp"

namespace asl = prosper::asl;

int main()
{
	const char *long_mode = getenv("PROSPER_LONG");
	uint64_t updates = long_mode && *long_mode == '1' ? 10000000 : 100000;
	std::string dir = scratch_dir("wrap");
	asl::Options o;
	o.heap_reserve = size_t(256) << 20;
	o.log_capacity = size_t(256) << 10;
	o.auto_snapshot_fill = 0.5;
	std::map<long, long> model;
	Rng r(7);
	auto t0 = std::chrono::steady_clock::now();
	uint64_t snapshots = 0, max_used = 0, appended = 0;
	{
		auto rt = asl::open(dir, o);
		auto &m = rt->get_object<asl::pmap<long, long>>("m");
		for (uint64_t i = 0; i < updates; i++) {
			long k = static_cast<long>(r.below(4096));
			if (r.below(4) == 0) {
				m.erase(k);
				model.erase(k);
			} else {
				m.insert_or_assign(k, static_cast<long>(i));
				model[k] = static_cast<long>(i);
			}
		}
		asl::LogStats ls = rt->log_stats("m");
		snapshots = rt->last_snapshot().seq;
		max_used = ls.max_used;
		appended = ls.appended;
		CHECK(ls.max_used <= ls.capacity);
		CHECK(ls.appended > 20 * ls.capacity); // the ring went round many times
		CHECK(snapshots > 10);
	}
	double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	struct stat sb;
	CHECK(stat((dir + "/log.1").c_str(), &sb) == 0 && static_cast<uint64_t>(sb.st_size) == 4096 + o.log_capacity);
	{
		auto rt = asl::open(dir, o);
		auto &m = rt->get_object<asl::pmap<long, long>>("m");
		bool same = m.size() == model.size();
		for (auto &[k, v] : model)
			same = same && m.contains(k) && m.at(k) == v;
		CHECK(same);
		std::printf("%llu updates in %.2f s (%.2f us each): %llu snapshots, log %llu KiB, at most %llu KiB used, "
			    "%.1f MiB appended; recovery replayed %llu entries after snapshot %llu\n",
			    (unsigned long long)updates, secs, secs * 1e6 / static_cast<double>(updates), (unsigned long long)snapshots,
			    (unsigned long long)(o.log_capacity >> 10), (unsigned long long)(max_used >> 10),
			    static_cast<double>(appended) / 1048576.0, (unsigned long long)rt->recovery().replayed,
			    (unsigned long long)rt->recovery().snapshot_seq);
	}
	remove_dir(dir);
	return report("test_asl_wrap");
}

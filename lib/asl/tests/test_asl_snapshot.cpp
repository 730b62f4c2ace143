// test_asl_snapshot.cpp -- copy-before-write: updates that run during a snapshot's asynchronous
// copy must not leak into the snapshot.  A grid of counters is snapshotted while additions keep
// landing on random cells; the runtime is closed (waiting for the copy) and reopened, which
// loads that snapshot and replays the additions after it.  Had any addition reached the
// snapshot, replay would apply it twice and the sums would differ.  Once with userfaultfd
// write-protection, once with the copy inside the sync phase (no userfaultfd).
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>
#include "check.hpp"
#include "prosper/asl.hpp"

namespace asl = prosper::asl;

class Grid : public asl::PersistentObject {
public:
	void grow(size_t n)
	{
		op_begin<&Grid::grow>(n);
		cells_.resize(n);
		op_commit();
	}
	void add(size_t i, long d)
	{
		op_begin<&Grid::add>(i, d);
		cells_[i % cells_.size()] += d;
		op_commit();
	}
	PROSPER_ASL_UPDATES(&Grid::grow, &Grid::add);
	long at(size_t i) const { return cells_[i]; }
	size_t size() const { return cells_.size(); }

private:
	std::vector<long, asl::allocator<long>> cells_;
};

static void run(bool uffd)
{
	if (uffd)
		unsetenv("PROSPER_ASL_SYNC_SNAPSHOT");
	else
		setenv("PROSPER_ASL_SYNC_SNAPSHOT", "1", 1);
	std::string dir = scratch_dir("snap");
	asl::Options o;
	o.heap_reserve = size_t(512) << 20;
	o.log_capacity = size_t(16) << 20;
	o.auto_snapshot_fill = 0;
	o.snapshot_threads = 1;
	const size_t n = getenv("GRID_CELLS") ? strtoull(getenv("GRID_CELLS"), nullptr, 10) : size_t(1) << 19; // 4 MiB of counters
	std::vector<long> model(n, 0);
	Rng r(uffd ? 1 : 2);
	asl::SnapshotStats st;
	{
		auto rt = asl::open(dir, o);
		auto &g = rt->get_object<Grid>("grid");
		g.grow(n);
		for (int i = 0; i < 1000; i++) {
			size_t c = r.below(n);
			g.add(c, 1);
			model[c] += 1;
		}
		rt->snapshot_async(); // returns after the sync phase: the copy runs now
		for (int i = 0; i < 5000; i++) {
			// the first writes go to the end of the grid, which the copier reaches last: they
			// fault and copy their chunk first (printed below as chunks copied on a fault)
			size_t c = i < 100 ? n - 1 - static_cast<size_t>(i) * 64 : r.below(n);
			long d = static_cast<long>(r.below(100)) + 1;
			g.add(c, d);
			model[c] += d;
		}
		while (rt->snapshot_running())
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		st = rt->last_snapshot();
		std::printf("%s: snapshot of %.0f MiB taken while 5000 additions ran: %llu chunks copied on a write fault\n",
			    uffd ? "userfaultfd" : "sync copy", static_cast<double>(st.bytes) / 1048576.0,
			    (unsigned long long)st.fault_chunks);
		rt->close();
	}
	{
		auto rt = asl::open(dir, o);
		auto &g = rt->get_object<Grid>("grid");
		CHECK(rt->recovery().snapshot_seq == 1);
		CHECK(rt->recovery().replayed == 5000);
		bool same = g.size() == n;
		for (size_t i = 0; same && i < n; i++)
			same = g.at(i) == model[i];
		CHECK(same);
		rt->snapshot();
		st = rt->last_snapshot();
		std::printf("%s: quiet snapshot of %.0f MiB: sync phase %.2f ms, async phase %.2f ms\n",
			    uffd ? "userfaultfd" : "sync copy", static_cast<double>(st.bytes) / 1048576.0, st.sync_ms, st.async_ms);
	}
	remove_dir(dir);
}

int main()
{
	run(true);
	run(false);
	return report("test_asl_snapshot");
}

// internal.hpp -- the runtime's volatile state, shared by the files of lib/asl/src.
//
// Invariants
//   - One RuntimeImpl per process (g_rt); it owns the heap mapping, the per-object logs, the
//     logger threads, the snapshotter and the write-protect fault thread.
//   - The gate: every logged operation holds a share of it from op_publish to op_commit; a
//     snapshot's sync phase and an object's attach hold it exclusively (no operation in flight),
//     so the heap they see is between operations.
//   - An object's log positions only grow: reclaimed <= tail <= reserved <= reclaimed + capacity.
#ifndef PROSPER_ASL_INTERNAL_HPP
#define PROSPER_ASL_INTERNAL_HPP
#include <atomic>
#include <cstdlib>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include "prosper/asl.hpp"
#include "prosper/persist.h"
#include "log.hpp"

namespace prosper::asl::detail {

// A lock for the short sections of the operation path (allocating, appending an entry, reserving
// log space): a waiter spins, then yields.  A std::mutex there sent a waiter to sleep in the
// kernel and its owner through a futex wake, tens of microseconds on a section that holds the
// lock for under one (measured with two threads inserting, docs/asl.md).
class SpinLock {
public:
	void lock() noexcept
	{
		for (unsigned spins = 0; locked_.exchange(true, std::memory_order_acquire);)
			while (locked_.load(std::memory_order_relaxed)) {
				if (++spins < 1024)
					__builtin_ia32_pause();
				else
					std::this_thread::yield(); // the owner lost its core: let it have one
			}
	}
	bool try_lock() noexcept { return !locked_.load(std::memory_order_relaxed) && !locked_.exchange(true, std::memory_order_acquire); }
	void unlock() noexcept { locked_.store(false, std::memory_order_release); }

private:
	std::atomic<bool> locked_{false};
};

constexpr size_t kPage = 4096;
constexpr size_t kMaxObjects = 1024;
constexpr unsigned kHeapClasses = 256;

// ---- heap.cpp --------------------------------------------------------------------------
// The first kHeapHeaderBytes of the heap: allocator state and the object directory.
struct HeapHeader {
	uint64_t magic;
	uint64_t base;
	uint64_t bump;           // next free byte (absolute address)
	uint64_t free_heads[kHeapClasses]; // free list per size class (heap.cpp)
	uint64_t nobjects;
	struct Obj {
		uint64_t id, ptr, type_hash;
	} objs[kMaxObjects];
};
constexpr size_t kHeapHeaderBytes = 64 * 1024;
static_assert(sizeof(HeapHeader) <= kHeapHeaderBytes);
constexpr uint64_t kHeapMagic = 0x50524f5350415348ull; // "PROSPASH"

void heap_format(char *base);
size_t heap_used_bytes(const char *base); // from the base to the bump pointer, page-rounded

// A helper thread that keeps the heap's next pages, a window ahead of the bump pointer, present
// (heap.cpp): the allocator's fresh memory is then faulted in off the operations' path, outside
// the locks they hold.  Only an optimisation: nothing depends on a page being present.
class HeapAhead {
public:
	HeapAhead(char *heap, uint64_t reserve);
	~HeapAhead(); // stops and joins the helper; before the snapshotter goes (see heap.cpp)
	// Under heap_mu, after the bump pointer moved: the end the window should reach now, or 0
	// when it still reaches far enough.  The caller passes a non-zero end to extend() once it
	// has released heap_mu.
	uint64_t wanted(uint64_t bump);
	void extend(uint64_t end);

private:
	void run(uint64_t done); // done: where the pages not yet present start
	char *heap_;
	uint64_t limit_;         // heap + reserve
	uint64_t trigger_ = 0;   // under heap_mu: a bump past this asks for more
	std::mutex mu_;
	std::condition_variable cv_;
	uint64_t want_ = 0;      // under mu_: make present up to here
	bool stop_ = false;      // under mu_
	std::thread thread_;
};

// ---- the runtime -----------------------------------------------------------------------
struct ObjectState {
	struct RuntimeImpl *rt = nullptr;
	std::unique_ptr<Log> log;
	std::string name;
	uint64_t id = 0;
	uint64_t type_hash = 0;

	SpinLock append_mu; // one append at a time: log order = persist order, no holes

	SpinLock space_mu; // guards reserved/reclaimed
	std::condition_variable_any space_cv;
	uint64_t reserved = 0;  // tail + bytes promised to published operations
	uint64_t reclaimed = 0; // log position of the newest complete snapshot (or of recovery)
	uint64_t max_used = 0;
	uint64_t appended = 0;
	uint64_t by_logger = 0, by_thread = 0; // entries appended by loggers / by operations' own
					       // threads (LoggingStats): under append_mu, no shared counter

	bool attached = false;
	void *obj = nullptr;
	std::vector<Log::Committed> to_replay; // committed entries found at open, commit-id order
};

class Loggers;
class Snapshotter;
class PoolStore;

struct RuntimeImpl {
	RuntimeImpl() = default;
	~RuntimeImpl();
	Options opt;
	std::string dir;
	int lock_fd = -1;
	prosper_persist pp{};

	char *heap = nullptr;
	SpinLock heap_mu; // allocator; the sync phase holds it while write-protecting
	std::unique_ptr<HeapAhead> heap_ahead; // null: pages are faulted in by the allocating thread

	// the gate (see the header comment)
	std::atomic<uint32_t> in_flight{0};
	unsigned cores = 1; // std::thread::hardware_concurrency(), at least 1
	std::atomic<uint32_t> blocked{0};
	std::mutex exclusive_mu; // one exclusive holder at a time
	void enter_shared();
	void leave_shared();
	void block();
	void unblock();

	std::mutex objects_mu;
	std::map<std::string, std::unique_ptr<ObjectState>, std::less<>> objects;
	uint64_t next_object_id = 1;
	std::atomic<uint64_t> next_commit{1};

	std::unique_ptr<Loggers> loggers;
	std::unique_ptr<PoolStore> pool; // snapshots in a pool (open("x.pool")), else snap.0/snap.1
	std::unique_ptr<Snapshotter> snap;
	RecoveryStats rec;
	uint64_t generation = 0;
};

extern std::atomic<RuntimeImpl *> g_rt;

// Durable commit of one operation's entry (foreground, in op_commit).
void commit_entry(RuntimeImpl *rt, ObjectState *st, uint64_t lsn);
// Append one entry under the object's append lock; returns its position.  sealed_commit != 0:
// a sealed entry, committed with that id by the same persist (log.hpp).  by_logger: who writes.
uint64_t append_entry(ObjectState *st, uint16_t tag, const std::vector<char> &args, bool by_logger,
		      uint64_t sealed_commit = 0);

// The switches the tests set through the environment (crash injection, synchronous snapshots,
// the way entries are written) exist only in the testable build (PROSPER_TESTABLE): the library
// programs link never changes behaviour because of a variable.
inline const char *test_switch(const char *name)
{
#ifdef PROSPER_TESTABLE
	return getenv(name);
#else
	(void)name;
	return nullptr;
#endif
}

} // namespace prosper::asl::detail
#endif

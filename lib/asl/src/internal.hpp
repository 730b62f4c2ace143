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

// ---- the runtime -----------------------------------------------------------------------
struct ObjectState {
	struct RuntimeImpl *rt = nullptr;
	std::unique_ptr<Log> log;
	std::string name;
	uint64_t id = 0;
	uint64_t type_hash = 0;

	std::mutex append_mu; // one append at a time: log order = persist order, no holes

	std::mutex space_mu; // guards reserved/reclaimed
	std::condition_variable space_cv;
	uint64_t reserved = 0;  // tail + bytes promised to published operations
	uint64_t reclaimed = 0; // log position of the newest complete snapshot (or of recovery)
	uint64_t max_used = 0;
	uint64_t appended = 0;

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
	std::mutex heap_mu; // allocator; the sync phase holds it while write-protecting

	// the gate (see the header comment)
	std::atomic<uint32_t> in_flight{0};
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
	std::atomic<uint64_t> by_logger{0}, by_foreground{0}; // LoggingStats

	std::unique_ptr<Loggers> loggers;
	std::unique_ptr<PoolStore> pool; // snapshots in a pool (open("x.pool")), else snap.0/snap.1
	std::unique_ptr<Snapshotter> snap;
	RecoveryStats rec;
	uint64_t generation = 0;
};

extern std::atomic<RuntimeImpl *> g_rt;

// Durable commit of one operation's entry (foreground, in op_commit).
void commit_entry(RuntimeImpl *rt, ObjectState *st, uint64_t lsn);
// Append one entry under the object's append lock; returns its position.
uint64_t append_entry(ObjectState *st, uint16_t tag, const std::vector<char> &args);

} // namespace prosper::asl::detail
#endif

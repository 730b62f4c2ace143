// snapshot.hpp -- periodic snapshots of the heap into snap.0 / snap.1 (alternately).
//
// File layout (docs/asl.md): a header {magic, version, crc, seq, heap base, heap bytes, next
// commit id, per object {id, log position}} at offset 0, the completion mark (one 8-byte word)
// at kMarkOffset, the heap's pages from kDataOffset.
//
// Invariants
//   - A snapshot is valid only if its header checksum matches and its mark equals seq ^ kMarkKey;
//     the mark is written last, after the pages and the header are persistent.
//   - A snapshot overwrites the file that does NOT hold the newest complete snapshot, and clears
//     that file's mark (persistently) before touching anything else in it: a crash at any point
//     leaves the previous snapshot valid and newest.
//   - Sync phase: no operation in flight (gate held), allocator lock held; it records each
//     object's log tail and write-protects the used heap.  Async phase: copy threads and the
//     fault thread copy 256 KiB chunks; a chunk is copied before anyone may write to it again
//     (copy, then unprotect).  On the cache-line path a chunk is copied with non-temporal
//     stores and fenced by the thread that copied it before it counts as copied (a fence orders
//     only its own thread's stores).  Log space before the recorded tails is released only once the
//     snapshot is complete.
//   - Without userfaultfd the whole copy happens inside the sync phase.
#ifndef PROSPER_ASL_SNAPSHOT_HPP
#define PROSPER_ASL_SNAPSHOT_HPP
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include "prosper/asl.hpp"

namespace prosper::asl::detail {

struct RuntimeImpl;
struct ObjectState;
constexpr uint64_t kSnapMagic = 0x50524f5341534e50ull; // "PROSASNP"
constexpr uint64_t kMarkKey = 0xC0117E7ED5A95E70ull;
constexpr size_t kMarkOffset = 60 * 1024;
constexpr size_t kDataOffset = 64 * 1024;
constexpr size_t kChunkBytes = 256 * 1024;

struct SnapHeader {
	uint64_t magic;
	uint32_t version;
	uint32_t crc; // over the struct with this field 0 (objects beyond nobj are zero)
	uint64_t seq;
	uint64_t heap_base;
	uint64_t heap_bytes;
	uint64_t next_commit;
	uint64_t nobj;
	struct {
		uint64_t id, pos;
	} objs[1024];
};

// The newest complete snapshot in dir (seq 0 if none); fills hdr.  Never throws for a bad file:
// a bad file is simply not a candidate.
uint64_t find_newest_snapshot(const std::string &dir, const Options &opt, SnapHeader &hdr, int &file_index);
// Reads the heap image of snapshot file `index` into heap (heap_bytes bytes) with `threads` readers.
void load_snapshot(const std::string &dir, int index, char *heap, uint64_t heap_bytes, unsigned threads);

class Snapshotter {
public:
	Snapshotter(RuntimeImpl *rt, uint64_t newest_seq, int newest_index);
	~Snapshotter(); // finishes a running snapshot, drops a pending one
	void take(bool wait_complete);  // request one and wait for its sync (or whole) phase
	void request_if_idle();         // background request, unless one is pending or running
	SnapshotStats last() const;
	bool busy() const; // pending or running

private:
	struct Copy; // one snapshot's asynchronous state
	void run();
	void snapshot_once();
	void snapshot_to_files();
	void snapshot_to_pool();
	double sync_phase(Copy &c, SnapHeader &hdr, std::vector<std::pair<ObjectState *, uint64_t>> &positions, uint64_t seq,
			  const std::function<bool(uint64_t)> &size_target);
	void async_copy(Copy &c);
	void finished(const Copy &c, const std::vector<std::pair<ObjectState *, uint64_t>> &positions, uint64_t seq,
		      double sync_ms, double async_ms);
	void arm_crash_steps(uint64_t seq);
	void fault_loop();
	void copy_chunk(Copy &c, size_t i);
	void handle_fault(uint64_t addr);
	void unprotect(uint64_t addr, uint64_t len, bool wake);
	void write_protect(uint64_t addr, uint64_t len);
	void crash_point(); // test hook (PROSPER_ASL_CRASH_IN_SNAPSHOT=<seq>:<step>)

	RuntimeImpl *rt_;
	int uffd_ = -1, stop_fd_ = -1;
	std::thread thread_, fault_thread_;

	mutable std::mutex mu_;
	std::condition_variable cv_;
	bool stop_ = false, pending_ = false, running_ = false;
	uint64_t next_seq_;       // seq the next snapshot gets
	int newest_index_;        // file holding the newest complete snapshot (-1: none)
	uint64_t sync_done_ = 0;  // rounds (snapshots started in this run) whose sync phase ended
	uint64_t complete_ = 0;   // rounds that ended, completed or failed (error_seq_)
	uint64_t error_seq_ = 0;  // the round that failed last
	std::string error_;
	SnapshotStats stats_;
	std::atomic<Copy *> active_{nullptr};
	std::atomic<long> crash_countdown_{-1};
	std::mutex fault_mu_; // held while a fault is handled, so a finished Copy can be dropped
};

} // namespace prosper::asl::detail
#endif

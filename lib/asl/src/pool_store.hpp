// pool_store.hpp -- snapshots kept in a persistent pool (include/prosper/pool.h) instead of
// snap.0/snap.1: asl::open("x.pool") keeps the heap image in the pool's buffered region
// "asl-heap" and the snapshot header as the pool's per-epoch blob; one pool commit makes a
// snapshot complete, with the pool's own failure-atomic protocol (two copies, one commit word).
// The logs live in the directory "x.pool.logs" beside it.
//
// Invariants
//   - The committed epoch's blob is the header of the newest complete snapshot (SnapHeader,
//     checksummed); its region holds exactly that snapshot's heap bytes.
//   - The pool is not thread-safe: every call goes through the store's mutex (copy threads and
//     the fault thread write chunks concurrently).
#ifndef PROSPER_ASL_POOL_STORE_HPP
#define PROSPER_ASL_POOL_STORE_HPP
#include <cstdint>
#include <mutex>
#include <string>
#include "prosper/asl.hpp"
#include "prosper/pool.h"
#include "snapshot.hpp"

namespace prosper::asl::detail {

class PoolStore {
public:
	// Opens (recovering) or creates the pool at path; throws with the pool's reason.
	PoolStore(const std::string &path, const Options &opt);
	~PoolStore();
	// The newest complete snapshot's header (seq 0 if the pool holds none).
	uint64_t newest(SnapHeader &hdr);
	void load(char *heap, uint64_t heap_bytes);
	// Building a snapshot: size the region, write chunks (any thread), commit with the header.
	void begin(uint64_t heap_bytes, uint64_t heap_base);
	void write(uint64_t off, const void *src, uint64_t len);
	void commit(const SnapHeader &hdr);

private:
	[[noreturn]] void fail(const std::string &what, int rc);
	prosper_pool *pool_ = nullptr;
	std::mutex mu_;
	int region_ = -1; // region id, -1 until the first snapshot
	std::string path_;
};

} // namespace prosper::asl::detail
#endif

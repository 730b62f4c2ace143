// log.hpp -- one object's circular semantic log in a file (log.<id> in the runtime directory).
//
// Format (docs/asl.md): a 4 KiB header {magic, version, crc, object id, capacity, type hash,
// name}, then `capacity` bytes used as a ring.  Positions (LSNs) grow forever; position p lives
// at byte p % capacity of the ring.  An entry is 64-byte aligned:
//   [lsn u64][len u32][tag u16][flags u16][crc u32][pad u32][commit word u64][args, len bytes]
// padded to a multiple of 64 (size = round_up(32 + len, 64): an aligned entry gets no extra line).
//
// Invariants
//   - An entry is valid at position p iff its lsn field equals p and its crc (seeded with the
//     object id) matches: stale bytes from an earlier lap of the ring carry another lsn.
//   - Entries are appended and persisted one at a time, so a valid entry's predecessors are
//     valid: a scan stops at the first invalid position and that is the tail.
//   - The commit word is written after the entry is persistent: (commit id << 16) | check16,
//     check16 binding it to this lsn; 0 = not committed.  Only committed entries are replayed.
//   - The region [reclaimed, reclaimed + capacity) may be overwritten; the caller guarantees
//     nothing it still needs lies before `reclaimed`.
#ifndef PROSPER_ASL_LOG_HPP
#define PROSPER_ASL_LOG_HPP
#include <cstdint>
#include <memory>
#include <string>
#include <vector>
#include "prosper/persist.h"

namespace prosper::asl::detail {

constexpr uint64_t kLogMagic = 0x50524f53414c4f47ull; // "PROSALOG"
constexpr size_t kLogHeaderBytes = 4096;
constexpr size_t kEntryHeaderBytes = 32;

class Log {
public:
	struct Committed {
		uint64_t commit, lsn;
	};
	// Creates dir/log.<id> durably (written to a temporary name, synced, renamed).
	static std::unique_ptr<Log> create(const std::string &dir, uint64_t id, const std::string &name, uint64_t type_hash,
					   uint64_t capacity, prosper_persist *pp);
	// Opens and validates an existing log file; throws with the reason.
	static std::unique_ptr<Log> open(const std::string &path, prosper_persist *pp);
	~Log();

	static uint64_t entry_size(uint64_t len) { return (kEntryHeaderBytes + len + 63) & ~uint64_t(63); }

	// Writes and persists the entry at tail; returns its position.  Caller serialises.
	uint64_t append(uint16_t tag, const char *args, uint32_t len);
	// Persists the commit word of the entry at lsn.
	void commit(uint64_t lsn, uint64_t commit_id);
	// Scans valid entries from `from`; sets tail to the end; appends committed ones to out.
	void scan(uint64_t from, std::vector<Committed> &out, uint64_t &max_commit);
	// Reads the entry at lsn (valid, found by scan) into tag/args.
	void read(uint64_t lsn, uint16_t &tag, std::vector<char> &args) const;

	uint64_t id() const { return id_; }
	uint64_t capacity() const { return capacity_; }
	uint64_t type_hash() const { return type_hash_; }
	const std::string &name() const { return name_; }
	uint64_t tail() const { return tail_; }
	// The whole mapping (header + ring), for crash simulation in tests.
	char *mapping() const { return map_; }
	uint64_t mapping_bytes() const { return map_len_; }

private:
	Log() = default;
	void map_file(int fd, const std::string &path);
	void copy_out(uint64_t pos, void *dst, uint64_t n) const;
	void copy_in(uint64_t pos, const void *src, uint64_t n);
	void persist(uint64_t pos, uint64_t n, int site);
	uint32_t entry_crc(uint64_t pos, uint32_t len) const;

	prosper_persist *pp_ = nullptr;
	char *map_ = nullptr;
	char *ring_ = nullptr;
	uint64_t map_len_ = 0;
	uint64_t id_ = 0, capacity_ = 0, type_hash_ = 0, tail_ = 0;
	std::string name_;
};

uint16_t commit_check(uint64_t lsn, uint64_t commit_id);

} // namespace prosper::asl::detail
#endif

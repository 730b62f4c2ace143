// log.hpp -- one object's circular semantic log in a file (log.<id> in the runtime directory).
//
// Format (docs/asl.md): a 4 KiB header {magic, version, crc, object id, capacity, type hash,
// name}, then `capacity` bytes used as a ring.  Positions (LSNs) grow forever; position p lives
// at byte p % capacity of the ring.  An entry is 64-byte aligned:
//   [lsn u64][len u32][tag u16][flags u16][crc u32][pad u32][commit word u64][args, len bytes]
// padded to a multiple of 64 (size = round_up(32 + len, 64): an aligned entry gets no extra line).
// Two kinds, told apart by flags (which the crc covers):
//   flags 0       the entry is written while the operation runs; its commit word is 0 in the
//                 entry and is set later, in place (the crc covers lsn, len, tag, flags, args).
//   kEntrySealed  the entry is written once the operation is done, commit word included: the
//                 crc covers lsn, len, tag, flags, the commit word, args.  One persist makes it
//                 durable and committed at once; until that persist ends it is not valid.
//
// Invariants
//   - An entry is valid at position p iff its lsn field equals p, its flags are known and its
//     crc (seeded with the object id) matches: stale bytes from an earlier lap of the ring
//     carry another lsn, and a sealed entry missing any line fails its crc.
//   - Entries are appended and persisted one at a time, so a valid entry's predecessors are
//     valid: a scan stops at the first invalid position and that is the tail.
//   - A commit word is (commit id << 16) | check16, check16 binding it to this lsn; 0 = not
//     committed.  An unsealed entry's word is written after the entry is persistent.  Only
//     committed entries are replayed.
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
constexpr uint16_t kEntrySealed = 1; // EntryHeader::flags: commit word inside the checksum
constexpr uint64_t kStreamMinBytes = 2048; // entries this large are written non-temporally (log.cpp)

struct EntryHeader { // the first 32 bytes of an entry (above)
	uint64_t lsn;
	uint32_t len;
	uint16_t tag;
	uint16_t flags;
	uint32_t crc;
	uint32_t pad;
	uint64_t commit;
};
static_assert(sizeof(EntryHeader) == kEntryHeaderBytes);

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

	// Writes and persists the entry at tail; returns its position.  Caller serialises.  With
	// sealed_commit != 0 the entry is sealed: committed with that id by this one persist.
	uint64_t append(uint16_t tag, const char *args, uint32_t len, uint64_t sealed_commit = 0);
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
	void persist(uint64_t pos, uint64_t n, int site, bool streamed = false); // streamed: no flush, fence only
	void warm(uint64_t need);
	void populate();
	void stream_entry(uint64_t pos, const EntryHeader &h, const char *args, uint32_t len);
	uint32_t entry_crc(uint64_t pos, const EntryHeader &h) const; // h: the entry's header

	prosper_persist *pp_ = nullptr;
	char *map_ = nullptr;
	char *ring_ = nullptr;
	uint64_t map_len_ = 0;
	uint64_t id_ = 0, capacity_ = 0, type_hash_ = 0, tail_ = 0;
	uint64_t warm_end_ = 0, warm_bytes_ = 0; // ring mapped up to this position; bytes mapped so far
	std::string name_;
};

uint16_t commit_check(uint64_t lsn, uint64_t commit_id);

} // namespace prosper::asl::detail
#endif

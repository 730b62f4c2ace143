// log.cpp -- the per-object circular log (format and invariants in log.hpp).
#include "log.hpp"
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <stdexcept>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fastcopy.hpp"
#include "prosper/crc32c.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace prosper::asl::detail {

namespace {

struct FileHeader {
	uint64_t magic;
	uint32_t version;
	uint32_t crc; // over the struct with this field 0
	uint64_t id;
	uint64_t capacity;
	uint64_t type_hash;
	uint32_t name_len;
	char name[256];
};
static_assert(sizeof(FileHeader) <= kLogHeaderBytes);

constexpr size_t kCrcCovered = 16; // lsn, len, tag, flags

uint32_t header_crc(FileHeader h)
{
	h.crc = 0;
	return prosper_crc32c(0, &h, sizeof h);
}

[[noreturn]] void fail(const std::string &what)
{
	throw std::runtime_error("prosper::asl: " + what + (errno ? std::string(": ") + std::strerror(errno) : ""));
}

// A zero-filled ring must not look like a valid entry at position 0: seed with the object id
// and xor a constant, so an all-zero header never carries its own crc.
uint32_t seed_of(uint64_t id) { return static_cast<uint32_t>(id * 0x9E3779B97F4A7C15ull >> 32) ^ 0x5A17C0DEu; }

} // namespace

uint16_t commit_check(uint64_t lsn, uint64_t commit_id)
{
	uint64_t x = (lsn ^ (commit_id * 0xff51afd7ed558ccdull)) + 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 29)) * 0xc4ceb9fe1a85ec53ull;
	uint16_t c = static_cast<uint16_t>(x >> 48);
	return c;
}

std::unique_ptr<Log> Log::create(const std::string &dir, uint64_t id, const std::string &name, uint64_t type_hash,
				 uint64_t capacity, prosper_persist *pp)
{
	if (name.size() > sizeof(FileHeader::name))
		throw std::invalid_argument("prosper::asl: object name longer than 256 bytes");
	std::string final_path = dir + "/log." + std::to_string(id);
	std::string tmp = dir + "/.log." + std::to_string(id) + ".tmp";
	unlink(tmp.c_str()); // a leftover of a creation cut short
	errno = 0;
	int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		fail("cannot create " + tmp);
	int rc = posix_fallocate(fd, 0, static_cast<off_t>(kLogHeaderBytes + capacity));
	if (rc != 0) {
		errno = rc;
		close(fd);
		fail("cannot allocate " + tmp);
	}
	FileHeader h{};
	h.magic = kLogMagic;
	h.version = 1;
	h.id = id;
	h.capacity = capacity;
	h.type_hash = type_hash;
	h.name_len = static_cast<uint32_t>(name.size());
	std::memcpy(h.name, name.data(), name.size());
	h.crc = header_crc(h);
	if (pwrite(fd, &h, sizeof h, 0) != static_cast<ssize_t>(sizeof h) || fsync(fd) != 0) {
		close(fd);
		fail("cannot write " + tmp);
	}
	close(fd);
	if (rename(tmp.c_str(), final_path.c_str()) != 0)
		fail("cannot rename " + tmp);
	int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd); // the name must survive as well as the file
		close(dfd);
	}
	std::unique_ptr<Log> log = open(final_path, pp);
	log->populate();
	return log;
}

std::unique_ptr<Log> Log::open(const std::string &path, prosper_persist *pp)
{
	errno = 0;
	int fd = ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		fail("cannot open " + path);
	FileHeader h{};
	ssize_t n = pread(fd, &h, sizeof h, 0);
	struct stat sb;
	errno = 0;
	if (n != static_cast<ssize_t>(sizeof h) || h.magic != kLogMagic || h.version != 1 || h.crc != header_crc(h) ||
	    h.capacity == 0 || h.capacity % 4096 != 0 || h.name_len > sizeof h.name || fstat(fd, &sb) != 0 ||
	    static_cast<uint64_t>(sb.st_size) < kLogHeaderBytes + h.capacity) {
		close(fd);
		fail(path + " is not a valid log (bad header or size)");
	}
	std::unique_ptr<Log> log(new Log());
	log->pp_ = pp;
	log->id_ = h.id;
	log->capacity_ = h.capacity;
	log->type_hash_ = h.type_hash;
	log->name_.assign(h.name, h.name_len);
	log->map_file(fd, path);
	close(fd);
	return log;
}

void Log::map_file(int fd, const std::string &path)
{
	map_len_ = kLogHeaderBytes + capacity_;
	void *p = mmap(nullptr, map_len_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		fail("cannot map " + path);
	map_ = static_cast<char *>(p);
	ring_ = map_ + kLogHeaderBytes;
}

Log::~Log()
{
	if (map_)
		munmap(map_, map_len_);
}

void Log::copy_out(uint64_t pos, void *dst, uint64_t n) const
{
	if (n == 0)
		return; // memcpy with a null pointer is undefined even for 0 bytes
	uint64_t off = pos % capacity_, first = std::min(n, capacity_ - off);
	std::memcpy(dst, ring_ + off, first);
	if (n > first)
		std::memcpy(static_cast<char *>(dst) + first, ring_, n - first);
}

void Log::copy_in(uint64_t pos, const void *src, uint64_t n)
{
	if (n == 0)
		return;
	uint64_t off = pos % capacity_, first = std::min(n, capacity_ - off);
	std::memcpy(ring_ + off, src, first);
	if (n > first)
		std::memcpy(ring_, static_cast<const char *>(src) + first, n - first);
}

void Log::persist(uint64_t pos, uint64_t n, int site, bool streamed)
{
	uint64_t off = pos % capacity_, first = std::min(n, capacity_ - off);
	int rc = 0;
	if (!streamed) { // streamed lines need only the fence
		rc = prosper_persist_flush(pp_, site, ring_ + off, first);
		if (rc == 0 && n > first)
			rc = prosper_persist_flush(pp_, site, ring_, n - first);
	}
	prosper_persist_drain(pp_, site);
	if (rc < 0) {
		errno = -rc;
		fail("log " + std::to_string(id_) + " could not be persisted");
	}
}

uint32_t Log::entry_crc(uint64_t pos, const EntryHeader &h) const
{
	uint32_t crc = crc32c(seed_of(id_), &h, kCrcCovered);
	if (h.flags & kEntrySealed)
		crc = crc32c(crc, &h.commit, sizeof h.commit);
	uint64_t off = (pos + kEntryHeaderBytes) % capacity_, first = std::min<uint64_t>(h.len, capacity_ - off);
	crc = crc32c(crc, ring_ + off, first);
	if (h.len > first)
		crc = crc32c(crc, ring_, h.len - first);
	return crc;
}

uint64_t Log::append(uint16_t tag, const char *args, uint32_t len, uint64_t sealed_commit)
{
	uint64_t pos = tail_, size = entry_size(len);
	EntryHeader h{};
	h.lsn = pos;
	h.len = len;
	h.tag = tag;
	if (sealed_commit) {
		h.flags = kEntrySealed;
		h.commit = (sealed_commit << 16) | commit_check(pos, sealed_commit);
	}
	h.crc = crc32c(seed_of(id_), &h, kCrcCovered);
	if (sealed_commit)
		h.crc = crc32c(h.crc, &h.commit, sizeof h.commit);
	if (len)
		h.crc = crc32c(h.crc, args, len);
	bool real_lines = can_stream(pp_, PSITE_ASL_LOG);
	if (real_lines && pos + size > warm_end_)
		warm(pos + size);
	// Large entries go out with non-temporal stores; small ones are cheaper as ordinary stores
	// and a clwb per line (measured: 0.46 against 0.63 us for 64 B, 1.26 against 0.63 us for
	// 4 KiB, each with its commit; docs/asl.md).
	bool streamed = real_lines && size >= kStreamMinBytes;
	if (streamed)
		stream_entry(pos, h, args, len);
	else {
		copy_in(pos, &h, sizeof h); // 64-aligned and capacity % 64 == 0: the header never wraps
		copy_in(pos + kEntryHeaderBytes, args, len);
	}
	persist(pos, kEntryHeaderBytes + len, PSITE_ASL_LOG, streamed);
	tail_ = pos + size;
	return pos;
}

// A new ring's pages, all of them, made present and mapped now: its first lap then takes no fault
// and no fresh page on the operations' path.  Fresh memory is what costs most here: a virtual
// machine's page the host took back costs 3-4.6 us to touch again against 1.5 us (docs/asl.md),
// and Fig 8's 1 KiB inserts ran 1.56-1.8 us with the ring populated, 2.2-2.5 us without.  Every
// page of the ring is written in its first lap anyway, so nothing is dirtied that would not be.
// Only an optimisation: an error (an old kernel) leaves warm() to map the ring as it goes.
void Log::populate()
{
	if (madvise(ring_, capacity_, MADV_POPULATE_WRITE) == 0)
		warm_end_ = UINT64_MAX;
}

// Maps the ring's pages ahead of the tail a window at a time (one madvise per 2 MiB instead of a
// page fault per 4 KiB, which a large entry would otherwise take on every append); after one lap
// the whole ring is mapped and this is never called again.  Only an optimisation: errors (an
// old kernel without MADV_POPULATE_WRITE) are ignored.
void Log::warm(uint64_t need)
{
	constexpr uint64_t kWindow = 2 << 20;
	if (warm_end_ < tail_)
		warm_end_ = tail_;
	while (warm_end_ < need) {
		if (warm_bytes_ >= capacity_) {
			warm_end_ = UINT64_MAX;
			return;
		}
		uint64_t off = warm_end_ % capacity_, n = std::min(kWindow - off % kWindow, capacity_ - off);
		madvise(ring_ + off, n, MADV_POPULATE_WRITE);
		warm_end_ += n;
		warm_bytes_ += n;
	}
}

// The entry's lines, header and arguments, written once with non-temporal stores (fastcopy.hpp):
// the same bytes as copy_in, padding zeroed, and no line left to flush -- persist() then only
// fences.  Lines never straddle the ring's end (64-aligned positions, capacity % 64 == 0).
void Log::stream_entry(uint64_t pos, const EntryHeader &h, const char *args, uint32_t len)
{
	uint64_t size = entry_size(len), end = kEntryHeaderBytes + len;
	alignas(64) char edge[64];
	for (uint64_t off = 0; off < size;) {
		char *dst = ring_ + (pos + off) % capacity_;
		if (off == 0 || off + 64 > end) { // a line holding the header or the end of the arguments
			std::memset(edge, 0, sizeof edge);
			if (off == 0)
				std::memcpy(edge, &h, sizeof h);
			uint64_t from = std::max<uint64_t>(off, kEntryHeaderBytes), to = std::min<uint64_t>(off + 64, end);
			if (to > from)
				std::memcpy(edge + (from - off), args + (from - kEntryHeaderBytes), to - from);
			stream_lines(dst, edge, 1);
			off += 64;
			continue;
		}
		// whole lines of arguments, up to the end of the ring or the last full line
		uint64_t lines = std::min((end - off) / 64, (capacity_ - (pos + off) % capacity_) / 64);
		stream_lines(dst, args + (off - kEntryHeaderBytes), lines);
		off += lines * 64;
	}
}

void Log::commit(uint64_t lsn, uint64_t commit_id)
{
	uint64_t *word = reinterpret_cast<uint64_t *>(ring_ + lsn % capacity_ + offsetof(EntryHeader, commit));
	prosper_persist_store64(pp_, PSITE_ASL_COMMIT, word, (commit_id << 16) | commit_check(lsn, commit_id));
	int rc = prosper_persist_range(pp_, PSITE_ASL_COMMIT, word, sizeof *word);
	if (rc < 0) {
		errno = -rc;
		fail("commit of log " + std::to_string(id_) + " could not be persisted");
	}
}

void Log::scan(uint64_t from, std::vector<Committed> &out, uint64_t &max_commit)
{
	uint64_t pos = from;
	for (;;) {
		EntryHeader h;
		if (pos - from + kEntryHeaderBytes > capacity_)
			break;
		copy_out(pos, &h, sizeof h);
		if (h.lsn != pos || h.len > capacity_ - kEntryHeaderBytes || (h.flags & ~kEntrySealed))
			break;
		uint64_t size = entry_size(h.len);
		if (pos + size - from > capacity_ || h.crc != entry_crc(pos, h))
			break;
		// a sealed entry's commit word is the one its checksum covers; another's is written
		// after the entry, so it is read again (it may have been set since the copy)
		uint64_t word = (h.flags & kEntrySealed)
					? h.commit
					: __atomic_load_n(reinterpret_cast<uint64_t *>(ring_ + pos % capacity_ + offsetof(EntryHeader, commit)),
							  __ATOMIC_ACQUIRE);
		uint64_t cid = word >> 16;
		if (cid != 0 && static_cast<uint16_t>(word) == commit_check(pos, cid)) {
			out.push_back({cid, pos});
			max_commit = std::max(max_commit, cid);
		}
		pos += size;
	}
	tail_ = pos;
}

void Log::read(uint64_t lsn, uint16_t &tag, std::vector<char> &args) const
{
	EntryHeader h;
	copy_out(lsn, &h, sizeof h);
	tag = h.tag;
	args.resize(h.len);
	copy_out(lsn + kEntryHeaderBytes, args.data(), h.len);
}

} // namespace prosper::asl::detail

// trace.h -- the Prosper trace (docs/trace-format.md): records, reader, writer.
//
// Invariants the reader guarantees to its caller (everything else is an error that names the
// file and the record number, counted from 0 after the header):
//   - the header's magic, version, record size and field layout are the ones this build knows;
//   - every record's op is known and its region id is declared in the header;
//   - instruction positions (the running sum of instr_delta) never go backwards;
//   - the stream ends with exactly one END record whose count equals the records before it,
//     followed by nothing: a truncated or padded trace is refused;
//   - MAP/UNMAP records (the address space changing) cover whole 4 KiB pages, end above their
//     start, and a MAP's protection is 0..7.  They reach the caller only if it asked for them
//     (deliver_mappings); otherwise they are checked and skipped, so that every consumer written
//     before they existed still sees loads and stores only.
#pragma once
#include <cstdint>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "prosper/trace_format.h"

namespace prosper::trace {

enum Op : uint8_t {
	kAdvance = PROSPER_TRACE_ADVANCE, kLoad = PROSPER_TRACE_LOAD, kStore = PROSPER_TRACE_STORE,
	kRegion = PROSPER_TRACE_REGION, kMap = PROSPER_TRACE_MAP, kUnmap = PROSPER_TRACE_UNMAP, kEnd = PROSPER_TRACE_END
};
// A MAP record's protection bits (its size field).
enum Prot : uint8_t { kProtRead = 1, kProtWrite = 2, kProtExec = 4 };
enum Region : uint8_t { kOther = PROSPER_TRACE_OTHER, kStack = PROSPER_TRACE_STACK, kHeap = PROSPER_TRACE_HEAP };
constexpr uint32_t kVersion = 1;
constexpr size_t kRecordBytes = PROSPER_TRACE_RECORD;

// One decoded access.  `instr` is the absolute instruction position.  With deliver_mappings,
// also kMap / kUnmap events: [addr, sp) is the range, size the protection (kMap) or 0.
struct Event {
	uint64_t instr;
	uint64_t addr;
	uint64_t sp;
	uint32_t size;
	uint8_t op;      // kLoad or kStore (and kMap / kUnmap when asked for)
	uint8_t region;  // kOther / kStack / kHeap
};

// A declared range of the process, from REGION records: [start, end).
struct Range {
	uint8_t region;
	uint32_t tid;
	uint64_t start, end;
};

// The error every malformed trace raises: what() is "FILE: record N: reason".
struct TraceError : std::runtime_error {
	using std::runtime_error::runtime_error;
};

// Reader -- streaming decoder.  next() fills up to `max` events and returns how many (0 at a
// valid end).  Regions declared so far are in ranges().
class Reader {
public:
	// Opens and checks the header; throws TraceError.
	explicit Reader(const std::string &path);
	// From bytes in memory (the fuzz target); `name` appears in errors.
	Reader(const uint8_t *data, size_t len, const std::string &name);
	~Reader();
	size_t next(Event *out, size_t max);
	// From now on next() also returns kMap / kUnmap events.
	void deliver_mappings(bool on) { deliver_mappings_ = on; }
	uint64_t mappings() const { return mappings_; }  // MAP and UNMAP records read so far
	const std::vector<Range> &ranges() const { return ranges_; }
	const std::string &program() const { return program_; }
	uint64_t records() const { return record_; }
	uint64_t instructions() const { return instr_; }

private:
	void parse_header();
	void checked_header();
	void release();
	bool fill(size_t need);  // at least `need` decompressed bytes buffered, or false at EOF
	[[noreturn]] void fail(const std::string &why) const;
	[[noreturn]] void fail_header(const std::string &why) const;

	std::string name_;
	FILE *file_ = nullptr;
	const uint8_t *mem_ = nullptr;
	size_t mem_len_ = 0, mem_pos_ = 0;
	void *dctx_ = nullptr;                 // ZSTD_DCtx
	std::vector<uint8_t> in_, out_;        // compressed input, decompressed output
	size_t in_pos_ = 0, in_len_ = 0, out_pos_ = 0, out_len_ = 0;
	bool in_eof_ = false, frame_done_ = true;
	bool ended_ = false, deliver_mappings_ = false;
	uint64_t record_ = 0, instr_ = 0, mappings_ = 0;
	std::vector<Range> ranges_;
	std::string program_;
};

// Writer -- for tests, synthetic traces and imports; the Valgrind tool writes the same bytes.
class Writer {
public:
	Writer(const std::string &path, const std::string &program, int level = 3);
	~Writer();
	void region(uint8_t region, uint32_t tid, uint64_t start, uint64_t end);
	void access(uint64_t instr, uint8_t op, uint8_t region, uint32_t size, uint64_t addr, uint64_t sp);
	// The address space changed at `instr`: [start, end) mapped (region: kHeap for anonymous
	// memory, kOther for files; prot: Prot bits) or unmapped.
	void map(uint64_t instr, uint8_t region, uint8_t prot, uint64_t start, uint64_t end);
	void unmap(uint64_t instr, uint64_t start, uint64_t end);
	void close();  // writes END; the destructor calls it
	// The raw (uncompressed) header text; exposed for tests that craft broken traces.
	static std::string header(const std::string &program);
	static void put_record(std::string &out, uint32_t delta, uint8_t op, uint8_t region, uint16_t size,
			       uint64_t addr, uint64_t sp);

private:
	void put(uint32_t delta, uint8_t op, uint8_t region, uint16_t size, uint64_t addr, uint64_t sp);
	uint32_t delta_to(uint64_t instr);  // ADVANCE records as needed; the delta left for the next record
	void flush(bool end);
	FILE *file_ = nullptr;
	void *cctx_ = nullptr;
	std::string raw_, path_;
	uint64_t last_instr_ = 0, records_ = 0;
	bool closed_ = false;
};

// Compresses raw trace bytes into one zstd frame (tests and the fuzz corpus).
std::string compress(const std::string &raw, int level = 3);

}  // namespace prosper::trace

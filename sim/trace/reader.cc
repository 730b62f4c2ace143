// reader.cc -- streaming, checking decoder of the Prosper trace (see trace.h for its promises).
// The trace is one or more zstd frames; records never straddle anything we care about because
// we decode into a byte buffer and cut records from it.
#include <zstd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "trace.h"

namespace prosper::trace {

namespace {
constexpr size_t kMaxHeader = 64 * 1024;

struct FieldSpec {
	const char *name, *type;
	unsigned offset;
};
constexpr FieldSpec kFields[] = {{"instr_delta", "u32", 0}, {"op", "u8", 4},    {"region", "u8", 5},
				 {"size", "u16", 6},        {"addr", "u64", 8}, {"sp", "u64", 16}};

template <typename T> T load_le(const uint8_t *p)
{
	T v;
	std::memcpy(&v, p, sizeof v);  // x86-64 and aarch64 Linux are little-endian, as the format
	return v;
}
}  // namespace

Reader::Reader(const std::string &path) : name_(path)
{
	file_ = std::fopen(path.c_str(), "rb");
	if (!file_)
		throw TraceError(path + ": cannot open: " + std::strerror(errno));
	checked_header();
}

Reader::Reader(const uint8_t *data, size_t len, const std::string &name) : name_(name), mem_(data), mem_len_(len)
{
	checked_header();
}

Reader::~Reader() { release(); }

void Reader::release()
{
	if (file_)
		std::fclose(file_);
	file_ = nullptr;
	ZSTD_freeDCtx(static_cast<ZSTD_DCtx *>(dctx_));
	dctx_ = nullptr;
}

// checked_header -- a constructor that throws runs no destructor: release here.
void Reader::checked_header()
{
	try {
		parse_header();
	} catch (...) {
		release();
		throw;
	}
}

void Reader::fail(const std::string &why) const
{
	throw TraceError(name_ + ": record " + std::to_string(record_) + ": " + why);
}

void Reader::fail_header(const std::string &why) const { throw TraceError(name_ + ": header: " + why); }

// fill -- decompress until `need` bytes are buffered past out_pos_, or the input ends.
bool Reader::fill(size_t need)
{
	if (!dctx_) {
		dctx_ = ZSTD_createDCtx();
		in_.resize(ZSTD_DStreamInSize());
		out_.resize(1 << 16);  // grows when a caller needs more
	}
	auto *dctx = static_cast<ZSTD_DCtx *>(dctx_);
	while (out_len_ - out_pos_ < need) {
		if (out_pos_ > 0) {  // keep the unconsumed tail at the front
			std::memmove(out_.data(), out_.data() + out_pos_, out_len_ - out_pos_);
			out_len_ -= out_pos_;
			out_pos_ = 0;
		}
		if (out_.size() - out_len_ < need)
			out_.resize(out_len_ + need + (1 << 20));
		if (in_pos_ == in_len_) {
			if (in_eof_) {
				if (!frame_done_)
					fail("the compressed stream is truncated");
				return false;
			}
			if (file_) {
				in_len_ = std::fread(in_.data(), 1, in_.size(), file_);
				if (std::ferror(file_))
					fail(std::string("read error: ") + std::strerror(errno));
			} else {
				in_len_ = std::min(in_.size(), mem_len_ - mem_pos_);
				std::memcpy(in_.data(), mem_ + mem_pos_, in_len_);
				mem_pos_ += in_len_;
			}
			in_pos_ = 0;
			if (in_len_ == 0) {
				in_eof_ = true;
				continue;
			}
		}
		ZSTD_inBuffer in{in_.data(), in_len_, in_pos_};
		ZSTD_outBuffer out{out_.data(), out_.size(), out_len_};
		size_t r = ZSTD_decompressStream(dctx, &out, &in);
		if (ZSTD_isError(r))
			fail(std::string("not a zstd stream or corrupt: ") + ZSTD_getErrorName(r));
		frame_done_ = r == 0;
		in_pos_ = in.pos;
		out_len_ = out.pos;
	}
	return true;
}

void Reader::parse_header()
{
	std::string text;
	for (;;) {  // the header ends at the line "end"
		if (!fill(1))
			fail_header("ends before its \"end\" line (empty or not a Prosper trace)");
		uint8_t c = out_[out_pos_++];
		text.push_back(static_cast<char>(c));
		if (text.size() > kMaxHeader)
			fail_header("longer than 64 KiB (not a Prosper trace?)");
		if (c == '\n' && (text.size() == 4 ? text == "end\n" : text.ends_with("\nend\n")))
			break;
		if (text.size() == 14 && text != "PROSPER-TRACE ")
			fail_header("bad magic (expected \"PROSPER-TRACE <version>\")");
	}
	std::istringstream lines(text);
	std::string line;
	std::getline(lines, line);
	if (line != "PROSPER-TRACE " + std::to_string(kVersion))
		fail_header("unsupported version line \"" + line + "\" (this build reads version " +
			    std::to_string(kVersion) + ")");
	bool fields[6] = {};
	bool record = false;
	while (std::getline(lines, line) && line != "end") {
		std::istringstream w(line);
		std::string key;
		w >> key;
		if (key == "record") {
			size_t n = 0;
			w >> n;
			if (n != kRecordBytes)
				fail_header("record size " + std::to_string(n) + " (this build reads 24)");
			record = true;
		} else if (key == "field") {
			std::string name, type;
			unsigned off = ~0u;
			w >> name >> type >> off;
			bool known = false;
			for (size_t i = 0; i < 6; i++)
				if (name == kFields[i].name) {
					if (type != kFields[i].type || off != kFields[i].offset)
						fail_header("field " + name + " is " + type + " at " + std::to_string(off) +
							    "; this build reads " + kFields[i].type + " at " +
							    std::to_string(kFields[i].offset));
					fields[i] = known = true;
				}
			if (!known)
				fail_header("unknown field \"" + name + "\"");
		} else if (key == "program") {
			program_ = line.size() > 8 ? line.substr(8) : "";
		}
		// op / region / other lines name things for humans; unknown keys are for later versions
	}
	if (!record)
		fail_header("no \"record\" line");
	for (size_t i = 0; i < 6; i++)
		if (!fields[i])
			fail_header(std::string("field ") + kFields[i].name + " is not declared");
}

size_t Reader::next(Event *out, size_t max)
{
	size_t n = 0;
	while (n < max) {
		if (out_len_ - out_pos_ < kRecordBytes && !fill(kRecordBytes)) {
			if (out_len_ != out_pos_)
				fail("truncated: " + std::to_string(out_len_ - out_pos_) + " trailing bytes");
			if (!ended_)
				fail("truncated: the trace has no END record");
			return n;
		}
		if (ended_)
			fail("data after the END record");
		const uint8_t *r = out_.data() + out_pos_;
		uint32_t delta = load_le<uint32_t>(r);
		uint8_t op = r[4], region = r[5];
		uint16_t size = load_le<uint16_t>(r + 6);
		uint64_t addr = load_le<uint64_t>(r + 8), sp = load_le<uint64_t>(r + 16);
		if (region > kHeap)
			fail("region id " + std::to_string(region) + " is not declared");
		if (instr_ + delta < instr_)
			fail("instruction position overflows");
		switch (op) {
		case kLoad:
		case kStore:
			if (size == 0)
				fail("an access of size 0");
			instr_ += delta;
			out[n++] = Event{instr_, addr, sp, size, op, region};
			break;
		case kAdvance:
			instr_ += delta;
			break;
		case kRegion:
			if (sp <= addr)
				fail("a region whose end is not above its start");
			instr_ += delta;
			ranges_.push_back(Range{region, size, addr, sp});
			break;
		case kMap:
		case kUnmap:
			if (sp <= addr)
				fail("a mapping whose end is not above its start");
			if ((addr | sp) & 4095)
				fail("a mapping not aligned to 4 KiB pages");
			if (op == kMap ? size > (kProtRead | kProtWrite | kProtExec) : size != 0)
				fail("a mapping with protection bits " + std::to_string(size));
			instr_ += delta;
			mappings_++;
			if (deliver_mappings_)
				out[n++] = Event{instr_, addr, sp, size, op, region};
			break;
		case kEnd:
			if (addr != record_)
				fail("END says " + std::to_string(addr) + " records, the trace has " + std::to_string(record_));
			ended_ = true;
			out_pos_ += kRecordBytes;
			continue;  // record_ stays: the END record is not counted
		default:
			fail("unknown op " + std::to_string(op));
		}
		out_pos_ += kRecordBytes;
		record_++;
	}
	return n;
}

}  // namespace prosper::trace

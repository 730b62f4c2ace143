// writer.cc -- writes the Prosper trace (docs/trace-format.md) as zstd frames.  The Valgrind
// tool writes the same bytes uncompressed and `prosper trace` compresses them; both encode with
// include/prosper/trace_format.h.
#include <zstd.h>

#include <cerrno>
#include <cstring>

#include "prosper/trace_format.h"
#include "trace.h"

namespace prosper::trace {

std::string Writer::header(const std::string &program)
{
	return PROSPER_TRACE_HEADER_HEAD + program + PROSPER_TRACE_HEADER_TAIL;
}

void Writer::put_record(std::string &out, uint32_t delta, uint8_t op, uint8_t region, uint16_t size, uint64_t addr,
			uint64_t sp)
{
	uint8_t r[kRecordBytes];
	prosper_trace_encode(r, delta, op, region, size, addr, sp);
	out.append(reinterpret_cast<char *>(r), sizeof r);
}

Writer::Writer(const std::string &path, const std::string &program, int level) : path_(path)
{
	file_ = std::fopen(path.c_str(), "wb");
	if (!file_)
		throw TraceError(path + ": cannot create: " + std::strerror(errno));
	auto *c = ZSTD_createCCtx();
	ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
	cctx_ = c;
	raw_ = header(program);
}

Writer::~Writer()
{
	try {
		close();
	} catch (...) {
	}
	ZSTD_freeCCtx(static_cast<ZSTD_CCtx *>(cctx_));
}

void Writer::put(uint32_t delta, uint8_t op, uint8_t region, uint16_t size, uint64_t addr, uint64_t sp)
{
	put_record(raw_, delta, op, region, size, addr, sp);
	if (op != kEnd)
		records_++;
	if (raw_.size() >= (1 << 20))
		flush(false);
}

void Writer::region(uint8_t region, uint32_t tid, uint64_t start, uint64_t end)
{
	put(0, kRegion, region, static_cast<uint16_t>(tid), start, end);
}

uint32_t Writer::delta_to(uint64_t instr)
{
	if (instr < last_instr_)
		instr = last_instr_;
	uint64_t d = instr - last_instr_;
	while (d > 0xFFFFFFFFull) {
		put(0xFFFFFFFFu, kAdvance, 0, 0, 0, 0);
		d -= 0xFFFFFFFFull;
	}
	last_instr_ = instr;
	return static_cast<uint32_t>(d);
}

void Writer::access(uint64_t instr, uint8_t op, uint8_t region, uint32_t size, uint64_t addr, uint64_t sp)
{
	uint32_t d = delta_to(instr);
	put(d, op, region, static_cast<uint16_t>(size > 0xFFFF ? 0xFFFF : size), addr, sp);
}

void Writer::map(uint64_t instr, uint8_t region, uint8_t prot, uint64_t start, uint64_t end)
{
	uint32_t d = delta_to(instr);
	put(d, kMap, region, prot, start, end);
}

void Writer::unmap(uint64_t instr, uint64_t start, uint64_t end)
{
	uint32_t d = delta_to(instr);
	put(d, kUnmap, 0, 0, start, end);
}

void Writer::flush(bool end)
{
	auto *c = static_cast<ZSTD_CCtx *>(cctx_);
	ZSTD_inBuffer in{raw_.data(), raw_.size(), 0};
	std::string buf(ZSTD_CStreamOutSize(), '\0');
	for (;;) {
		ZSTD_outBuffer out{buf.data(), buf.size(), 0};
		size_t left = ZSTD_compressStream2(c, &out, &in, end ? ZSTD_e_end : ZSTD_e_continue);
		if (ZSTD_isError(left))
			throw TraceError(path_ + ": compression failed: " + ZSTD_getErrorName(left));
		if (out.pos && std::fwrite(buf.data(), 1, out.pos, file_) != out.pos)
			throw TraceError(path_ + ": write failed: " + std::strerror(errno));
		if (end ? left == 0 : in.pos == in.size)
			break;
	}
	raw_.clear();
}

void Writer::close()
{
	if (closed_)
		return;
	closed_ = true;
	put(0, kEnd, 0, 0, records_, last_instr_);
	flush(true);
	if (std::fclose(file_) != 0)
		throw TraceError(path_ + ": close failed: " + std::strerror(errno));
	file_ = nullptr;
}

std::string compress(const std::string &raw, int level)
{
	std::string out(ZSTD_compressBound(raw.size()), '\0');
	size_t n = ZSTD_compress(out.data(), out.size(), raw.data(), raw.size(), level);
	out.resize(ZSTD_isError(n) ? 0 : n);
	return out;
}

}  // namespace prosper::trace

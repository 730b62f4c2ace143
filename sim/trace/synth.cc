// synth.cc -- the synthetic allocation traces (patterns in synth.h).
#include "synth.h"

#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "trace.h"

namespace prosper::trace {

namespace {
constexpr uint64_t kPage = 4096, kBase = 1ull << 44;  // 16 TiB: clear of the program and its stack
constexpr uint8_t kRW = kProtRead | kProtWrite;

uint64_t parse_size(const std::string &s, const std::string &spec)
{
	char *end = nullptr;
	unsigned long long v = std::strtoull(s.c_str(), &end, 10);
	uint64_t mul = 1;
	if (*end == 'K')
		mul = 1ull << 10;
	else if (*end == 'M')
		mul = 1ull << 20;
	else if (*end == 'G')
		mul = 1ull << 30;
	if (s.empty() || end == s.c_str() || (mul > 1 ? end[1] != '\0' : *end != '\0'))
		throw std::invalid_argument("--synth " + spec + ": \"" + s + "\" is not a size (e.g. 64M, 2M, 1G)");
	return v * mul;
}

// The pattern writer: a clock of instructions, a store or load per page.
struct Gen {
	Writer w;
	uint64_t instr = 0;
	Gen(const std::string &out, const std::string &spec) : w(out, "synthetic " + spec) {}
	void touch(uint64_t page, uint8_t op)
	{
		instr += kSynthInstrPerTouch;
		w.access(instr, op, kHeap, 8, page, 0);
	}
	void touch_all(uint64_t start, uint64_t bytes, uint8_t op)
	{
		for (uint64_t p = start; p < start + bytes; p += kPage)
			touch(p, op);
	}
};
}  // namespace

void write_synthetic(const std::string &spec, const std::string &out)
{
	std::vector<std::string> f;
	std::stringstream ss(spec);
	for (std::string t; std::getline(ss, t, ':');)
		f.push_back(t);
	auto need = [&](size_t lo, size_t hi, const char *usage) {
		if (f.size() < lo || f.size() > hi)
			throw std::invalid_argument("--synth " + spec + ": expected " + usage);
	};
	auto pages = [&](uint64_t bytes, const char *what) {
		if (bytes == 0 || bytes % kPage)
			throw std::invalid_argument("--synth " + spec + ": " + what + " must be a positive multiple of 4K");
		return bytes;
	};
	if (f.empty())
		throw std::invalid_argument("--synth: empty pattern");
	if (f[0] == "seq") {
		need(2, 2, "seq:SIZE");
		uint64_t size = pages(parse_size(f[1], spec), "SIZE");
		Gen g(out, spec);
		g.w.map(g.instr, kHeap, kRW, kBase, kBase + size);
		g.touch_all(kBase, size, kStore);
		g.w.unmap(g.instr, kBase, kBase + size);
		g.w.close();
	} else if (f[0] == "stride") {
		need(3, 5, "stride:PAGES:GAP[:PASSES[:REPS]]");
		uint64_t n = parse_size(f[1], spec), gap = pages(parse_size(f[2], spec), "GAP");
		uint64_t passes = f.size() >= 4 ? parse_size(f[3], spec) : 0;
		uint64_t reps = f.size() == 5 ? parse_size(f[4], spec) : 1;
		if (n == 0 || n > (1ull << 20) || gap > (64ull << 40) / n || passes > 1000 || reps == 0 || reps > 1000)
			throw std::invalid_argument("--synth " + spec +
						    ": PAGES x GAP must stay within 64 TiB, PASSES at most 1000, REPS 1..1000");
		Gen g(out, spec);
		for (uint64_t r = 0; r < reps; r++) {
			for (uint64_t i = 0; i < n; i++) {
				g.w.map(g.instr, kHeap, kRW, kBase + i * gap, kBase + i * gap + kPage);
				g.touch(kBase + i * gap, kStore);
			}
			for (uint64_t p = 0; p < passes; p++)
				for (uint64_t i = 0; i < n; i++)
					g.touch(kBase + i * gap, kLoad);
			for (uint64_t i = 0; i < n; i++)
				g.w.unmap(g.instr, kBase + i * gap, kBase + i * gap + kPage);
		}
		g.w.close();
	} else if (f[0] == "allocfree") {
		need(3, 4, "allocfree:TOTAL:CHUNK[:PASSES]");
		uint64_t total = pages(parse_size(f[1], spec), "TOTAL"), chunk = pages(parse_size(f[2], spec), "CHUNK");
		uint64_t passes = f.size() == 4 ? parse_size(f[3], spec) : 0;
		if (chunk > total || passes > 1000)
			throw std::invalid_argument("--synth " + spec + ": CHUNK must not exceed TOTAL, PASSES at most 1000");
		Gen g(out, spec);
		g.w.map(g.instr, kHeap, kRW, kBase, kBase + total);
		g.touch_all(kBase, total, kStore);
		for (int round = 0; round < 2; round++) {
			g.w.unmap(g.instr, kBase, kBase + chunk);
			g.w.map(g.instr, kHeap, kRW, kBase, kBase + chunk);
			if (passes == 0)
				g.touch_all(kBase, chunk, kLoad);
			for (uint64_t p = 0; p < passes; p++)
				g.touch_all(kBase, total, kLoad);
		}
		g.w.unmap(g.instr, kBase, kBase + total);
		g.w.close();
	} else {
		throw std::invalid_argument("--synth: unknown pattern \"" + f[0] + "\" (seq, stride, allocfree)");
	}
}

}  // namespace prosper::trace

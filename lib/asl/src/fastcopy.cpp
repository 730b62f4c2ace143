// fastcopy.cpp -- hardware CRC-32C and non-temporal line copies (see fastcopy.hpp).
#include "fastcopy.hpp"
#include <cpuid.h>
#include <cstring>
#include <emmintrin.h>
#include <nmmintrin.h>
#include "prosper/crc32c.h"

namespace prosper::asl::detail {

namespace {
bool has_sse42()
{
	unsigned a, b, c, d;
	return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2);
}
const bool g_sse42 = has_sse42();

// Three independent streams would hide the instruction's latency; one stream already runs at
// several GB/s, far above what the entries need, so the loop stays simple.
__attribute__((target("sse4.2"))) uint32_t crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = static_cast<const unsigned char *>(buf);
	uint32_t c = ~crc;
	while (len && (reinterpret_cast<uintptr_t>(p) & 7)) {
		c = _mm_crc32_u8(c, *p++);
		len--;
	}
	uint64_t c64 = c;
	for (; len >= 8; p += 8, len -= 8) {
		uint64_t v;
		std::memcpy(&v, p, 8);
		c64 = _mm_crc32_u64(c64, v);
	}
	c = static_cast<uint32_t>(c64);
	while (len--)
		c = _mm_crc32_u8(c, *p++);
	return ~c;
}
} // namespace

uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
	return g_sse42 ? crc32c_hw(crc, buf, len) : prosper_crc32c(crc, buf, len);
}

void stream_lines(void *dst, const void *src, size_t n_lines)
{
	__m128i *d = static_cast<__m128i *>(dst);
	const __m128i *s = static_cast<const __m128i *>(src);
	for (size_t i = 0; i < n_lines; i++, d += 4, s += 4) {
		__m128i a = _mm_loadu_si128(s), b = _mm_loadu_si128(s + 1), c = _mm_loadu_si128(s + 2),
			e = _mm_loadu_si128(s + 3);
		_mm_stream_si128(d, a);
		_mm_stream_si128(d + 1, b);
		_mm_stream_si128(d + 2, c);
		_mm_stream_si128(d + 3, e);
	}
}

} // namespace prosper::asl::detail

// fastcopy.hpp -- the two byte-moving loops of the hot paths: CRC-32C of a log entry and a
// copy that makes whole cache lines durable with non-temporal stores.
//
// Invariants
//   - crc32c() returns exactly prosper_crc32c() (include/prosper/crc32c.h) for every input: the
//     SSE4.2 instruction computes the same CRC-32C (Castagnoli, reflected); without it the
//     portable routine is called.  The on-media checksums do not depend on the CPU.
//   - stream_lines() writes whole 64-byte lines with non-temporal stores: they bypass the cache
//     and, once a later sfence (prosper_persist_drain) retires, are in the persistence domain --
//     the same guarantee as stores + clwb + sfence, in one pass and without a flush per line.
//     The fence stays with the caller, in the persist layer, so the ordering points of the
//     protocol are unchanged.
//   - can_stream() is true only on the cache-line and byte paths with real instructions (not
//     simulated, no hooks, site not disabled): the crash simulator and the mutation tests see
//     every byte go through prosper_persist_flush() as before.
#ifndef PROSPER_ASL_FASTCOPY_HPP
#define PROSPER_ASL_FASTCOPY_HPP
#include <cstddef>
#include <cstdint>
#include "prosper/persist.h"

namespace prosper::asl::detail {

uint32_t crc32c(uint32_t crc, const void *buf, size_t len);

inline bool can_stream(const prosper_persist *pp, int site)
{
	return (pp->granularity == PROSPER_GRAN_CACHE_LINE || pp->granularity == PROSPER_GRAN_BYTE) && !pp->simulated &&
	       !pp->hooks && !((pp->skip_sites >> site) & 1);
}

// Copies n_lines * 64 bytes from src (any alignment) to dst (64-byte aligned) with
// non-temporal stores.  Not durable until the caller's drain.
void stream_lines(void *dst, const void *src, size_t n_lines);

} // namespace prosper::asl::detail
#endif

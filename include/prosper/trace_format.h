/* trace_format.h -- the Prosper trace's header and record encoder (docs/trace-format.md), written
 * once for the Valgrind tool (which writes traces) and the simulator (which writes converted and
 * synthetic ones, and reads them all).
 *
 * Freestanding C (no libc): the tool includes it.  A trace is the text header
 *     PROSPER_TRACE_HEADER_HEAD <program> PROSPER_TRACE_HEADER_TAIL
 * followed by records of PROSPER_TRACE_RECORD bytes, little-endian:
 *     instr_delta u32 @0, op u8 @4, region u8 @5, size u16 @6, addr u64 @8, sp u64 @16.
 * Op and region numbers are part of the format: never renumber them.
 */
#ifndef PROSPER_TRACE_FORMAT_H
#define PROSPER_TRACE_FORMAT_H
#include <stdint.h>

#define PROSPER_TRACE_RECORD 24
enum {
	PROSPER_TRACE_ADVANCE = 0, PROSPER_TRACE_LOAD = 1, PROSPER_TRACE_STORE = 2, PROSPER_TRACE_REGION = 3,
	PROSPER_TRACE_MAP = 4, PROSPER_TRACE_UNMAP = 5, PROSPER_TRACE_END = 127
};
enum { PROSPER_TRACE_OTHER = 0, PROSPER_TRACE_STACK = 1, PROSPER_TRACE_HEAP = 2 };

#define PROSPER_TRACE_HEADER_HEAD                                                                                 \
	"PROSPER-TRACE 1\nrecord 24\nfield instr_delta u32 0\nfield op u8 4\nfield region u8 5\n"                   \
	"field size u16 6\nfield addr u64 8\nfield sp u64 16\nop 0 advance\nop 1 load\nop 2 store\n"               \
	"op 3 region\nop 4 map\nop 5 unmap\nop 127 end\nregion 0 other\nregion 1 stack\nregion 2 heap\nprogram "
#define PROSPER_TRACE_HEADER_TAIL "\nend\n"

static inline void prosper_trace_put_le(uint8_t *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* One record into r[0, PROSPER_TRACE_RECORD). */
static inline void prosper_trace_encode(uint8_t *r, uint32_t delta, uint8_t op, uint8_t region, uint16_t size,
					uint64_t addr, uint64_t sp)
{
	prosper_trace_put_le(r, delta, 4);
	r[4] = op;
	r[5] = region;
	prosper_trace_put_le(r + 6, size, 2);
	prosper_trace_put_le(r + 8, addr, 8);
	prosper_trace_put_le(r + 16, sp, 8);
}

#endif

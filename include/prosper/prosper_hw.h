/* prosper_hw.h -- the Prosper tracker's "MSRs", as Valgrind client requests.
 *
 * A program run under `prosper hw` (the Valgrind tool "prosper") may drive a tracker of its
 * own, as gemOS user programs drive the hardware: set the range, the bitmap, the granularity,
 * then flush and wait for TRACK_SYNC and read its bitmap.  Outside Valgrind every macro costs a
 * few instructions and returns the given default.
 *
 * Bit order: granule i of [TRACK_START, TRACK_END] is bit i of the bitmap (32-bit words,
 * little-endian), as in include/prosper/hwmodel.h.
 *
 * The request numbers are part of the interface: append only, never reorder or delete.
 * This header is MIT-licensed so that any program may include it.
 */
#ifndef PROSPER_HW_H
#define PROSPER_HW_H
#include <valgrind/valgrind.h>

typedef enum {
	PROSPER_HW_TRACK_START = VG_USERREQ_TOOL_BASE('P', 'R'), /* arg: lowest tracked address */
	PROSPER_HW_TRACK_END,      /* arg: highest tracked address (inclusive) */
	PROSPER_HW_DIRTYMAP_ADDR,  /* arg: bitmap base, in the program's memory */
	PROSPER_HW_LOG_TRACK_GRAN, /* arg: 3..7 = 8..128 B granules; 0 = stop tracking */
	PROSPER_HW_TRACK_MIN,      /* returns the lowest tracked store address at the last flush */
	PROSPER_HW_TRACK_SYNC,     /* returns 1 when every bitmap write-out has completed */
	PROSPER_HW_FLUSH,          /* write out the lookup table, publish TRACK_MIN */
	PROSPER_HW_CHECKPOINT,     /* ask the tool to run its OS component for the main stack now */
	PROSPER_HW_RUNNING,        /* returns 1 under the prosper tool (0 outside Valgrind) */
} prosper_hw_request;

#define PROSPER_HW_REQ(req, arg, dflt) \
	((unsigned long)VALGRIND_DO_CLIENT_REQUEST_EXPR((dflt), (req), (arg), 0, 0, 0, 0))

/* Each sets one register; returns 0 under the tool. */
#define PROSPER_HW_SET_TRACK_START(a)   PROSPER_HW_REQ(PROSPER_HW_TRACK_START, (unsigned long)(a), 0)
#define PROSPER_HW_SET_TRACK_END(a)     PROSPER_HW_REQ(PROSPER_HW_TRACK_END, (unsigned long)(a), 0)
#define PROSPER_HW_SET_DIRTYMAP(a)      PROSPER_HW_REQ(PROSPER_HW_DIRTYMAP_ADDR, (unsigned long)(a), 0)
#define PROSPER_HW_SET_GRAN(log2)       PROSPER_HW_REQ(PROSPER_HW_LOG_TRACK_GRAN, (unsigned long)(log2), 0)
/* Reads. */
#define PROSPER_HW_GET_TRACK_MIN()      PROSPER_HW_REQ(PROSPER_HW_TRACK_MIN, 0, ~0UL)
#define PROSPER_HW_GET_TRACK_SYNC()     PROSPER_HW_REQ(PROSPER_HW_TRACK_SYNC, 0, 1)
/* Actions. */
#define PROSPER_HW_DO_FLUSH()           PROSPER_HW_REQ(PROSPER_HW_FLUSH, 0, 0)
#define PROSPER_HW_DO_CHECKPOINT()      PROSPER_HW_REQ(PROSPER_HW_CHECKPOINT, 0, 0)
#define PROSPER_HW_IS_RUNNING()         PROSPER_HW_REQ(PROSPER_HW_RUNNING, 0, 0)

#endif

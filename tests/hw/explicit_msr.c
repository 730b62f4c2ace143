/* explicit_msr -- a program that drives the tracker "MSRs" itself, as gemOS programs do, and
 * checks the bitmap the tracker wrote into its memory.  Prints "explicit ok" on success; exit 1
 * with the reason otherwise.  Outside the tool it says so and exits 0. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "prosper/prosper_hw.h"

static volatile uint8_t buf[4096] __attribute__((aligned(64)));
static uint32_t bitmap[4096 / 8 / 32];

static int fail(const char *why)
{
	printf("explicit FAIL: %s\n", why);
	return 1;
}

int main(void)
{
	if (!PROSPER_HW_IS_RUNNING()) {
		printf("explicit: not under the prosper tool\n");
		return 0;
	}
	memset(bitmap, 0, sizeof bitmap);
	PROSPER_HW_SET_TRACK_START(&buf[0]);
	PROSPER_HW_SET_TRACK_END(&buf[sizeof buf - 1]);
	PROSPER_HW_SET_DIRTYMAP(bitmap);
	PROSPER_HW_SET_GRAN(3);                         /* 8 B granules: tracking on */
	buf[100] = 1;                                   /* granule 12 */
	*(volatile uint64_t *)&buf[60] = 7;             /* 8 B across a cache line: granules 7, 8 */
	memset((void *)&buf[200], 5, 20);               /* bytes 200..219: granules 25, 26, 27 */
	buf[4095] = 9;                                  /* granule 511 */
	PROSPER_HW_SET_GRAN(0);                         /* tracking off */
	buf[300] = 3;                                   /* not tracked */
	PROSPER_HW_DO_FLUSH();
	if (PROSPER_HW_GET_TRACK_SYNC() != 1)
		return fail("TRACK_SYNC is not 1 after a flush");
	if (PROSPER_HW_GET_TRACK_MIN() != (unsigned long)&buf[60])
		return fail("TRACK_MIN is not the lowest tracked store");
	uint32_t want[sizeof bitmap / 4];
	memset(want, 0, sizeof want);
	int granules[] = { 7, 8, 12, 25, 26, 27, 511 };
	for (unsigned i = 0; i < sizeof granules / sizeof granules[0]; i++)
		want[granules[i] / 32] |= 1u << (granules[i] % 32);
	if (memcmp(want, bitmap, sizeof want) != 0) {
		for (unsigned w = 0; w < sizeof want / 4; w++)
			if (want[w] != bitmap[w])
				printf("word %u: want %08x got %08x\n", w, want[w], bitmap[w]);
		return fail("bitmap differs");
	}
	printf("explicit ok\n");
	return 0;
}

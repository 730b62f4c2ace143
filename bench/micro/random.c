/* random -- Prosper Table III "Random": per call a depth of (r%4)+1 frames, each a 132 KB u32
 * array with 100 random writes per 4 KB page, then a 1000-iteration spin; (r%10)+24 operations
 * per call.  usage: random [CALLS] */
#include "common.h"

#define FRAME_WORDS (132 * 1024 / 4)

static void __attribute__((noinline)) frame(int depth)
{
	volatile uint32_t a[FRAME_WORDS];
	uint32_t last = 0;
	for (int p = 0; p < FRAME_WORDS / 1024; p++)
		for (int k = 0; k < 100; k++) {
			last = p * 1024 + lfsr() % 1024;
			a[last] = lfsr();
		}
	spin(1000);
	if (depth > 1)
		frame(depth - 1);
	/* Mix a word this frame wrote: the rest of the array is uninitialized stack, whose contents
	 * are not the program's (and not kept by an SP-aware checkpoint).  The LFSR draw stays, so
	 * the store pattern is the artifact's. */
	uint32_t unused = lfsr();
	(void)unused;
	mix(a[last]);
}

int main(int argc, char **argv)
{
	long calls = scale(argc, argv, 1000);
	for (long c = 0; c < calls; c++) {
		uint32_t r = lfsr();
		for (uint32_t op = 0; op < r % 10 + 24; op++)
			frame((int)(r % 4) + 1);
	}
	return finish();
}

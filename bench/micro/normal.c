/* normal -- bursts of length ~ Normal(63, 20): the sum of 12 LFSR uniforms (Irwin-Hall) scaled,
 * clipped at 1.  usage: normal [BURSTS] */
#include "bursts.h"

static uint32_t draw(void)
{
	int64_t sum = 0; /* 12 uniforms in [0, 65536): mean 12*32768, sd 65536 */
	for (int i = 0; i < 12; i++)
		sum += lfsr() & 0xFFFF;
	int64_t v = 63 + (sum - 12 * 32768) * 20 / 65536;
	return v < 1 ? 1 : (uint32_t)v;
}

int main(int argc, char **argv) { return run(argc, argv); }

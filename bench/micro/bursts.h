/* bursts.h -- Prosper Table III "Normal" and "Poisson": u32 input[10000] on the stack; bursts of
 * stack writes between 1000-iteration compute blocks, the burst length drawn by draw(). */
#include "common.h"

static uint32_t draw(void);

static int run(int argc, char **argv)
{
	long bursts = scale(argc, argv, 1000000);
	volatile uint32_t input[10000];
	for (int i = 0; i < 10000; i++)
		input[i] = (uint32_t)i;
	for (long b = 0; b < bursts; b++) {
		uint32_t len = draw(), at = lfsr() % 10000;
		for (uint32_t k = 0; k < len; k++)
			input[(at + k) % 10000] += k + 1;
		spin(1000);
	}
	for (int i = 0; i < 10000; i++)
		mix(input[i]);
	return finish();
}

/* poisson -- bursts of length ~ Poisson(63), as Binomial(630, 0.1) from LFSR bits (no libm).
 * usage: poisson [BURSTS] */
#include "bursts.h"

static uint32_t draw(void)
{
	uint32_t n = 0;
	for (int i = 0; i < 630; i++)
		n += lfsr() % 10 == 0;
	return n ? n : 1;
}

int main(int argc, char **argv)
{
	if (argc < 2) { /* the Binomial draw costs more per burst than Normal's: fewer by default */
		char *dflt[] = { argv[0], "400000", NULL };
		return run(2, dflt);
	}
	return run(argc, argv);
}

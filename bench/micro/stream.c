/* stream -- Prosper Table III "Stream": a stack array of (r%5)+20 x 1024 u32 written entirely
 * per operation (dense: sub-page tracking has no advantage).  usage: stream [OPS] */
#include "common.h"

static void __attribute__((noinline)) op(uint32_t r, long it)
{
	volatile uint32_t a[24 * 1024];
	uint32_t n = (r % 5 + 20) * 1024;
	for (uint32_t i = 0; i < n; i++)
		a[i] = i ^ (uint32_t)it;
	spin(1000);
	mix(a[r % n]);
}

int main(int argc, char **argv)
{
	long ops = scale(argc, argv, 50000);
	for (long it = 0; it < ops; it++)
		op(lfsr(), it);
	return finish();
}

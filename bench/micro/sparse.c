/* sparse -- Prosper Table III "Sparse": a 256 KB frame array written at a 4 KB stride (4 bytes
 * per page).  usage: sparse [OPS] */
#include "common.h"

static void __attribute__((noinline)) op(long it)
{
	volatile uint32_t a[256 * 1024 / 4];
	for (int p = 0; p < 64; p++)
		a[p * 1024] = (uint32_t)(it * 64 + p);
	spin(20000);
	mix(a[(it % 64) * 1024]);
}

int main(int argc, char **argv)
{
	long ops = scale(argc, argv, 100000);
	for (long it = 0; it < ops; it++)
		op(it);
	return finish();
}

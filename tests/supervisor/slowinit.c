/* slowinit -- a library whose constructor computes for tens of milliseconds, so that a checkpoint
 * of a program that dlopen()s it often lands inside dlopen, with the loader's recursive lock held
 * (tests/e2e/test_exec_children.py, docs/run-resume.md "Thread ids and the loader's locks"). */
#include <stdint.h>

static volatile uint64_t value;

__attribute__((constructor)) static void slow_init(void)
{
	uint64_t x = 88172645463325252ull;
	for (long i = 0; i < 60000000; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
	}
	value = x;
}

uint64_t slowinit_value(void) { return value; }

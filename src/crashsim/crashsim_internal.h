/* crashsim_internal.h -- what the crash simulator's files share: the deterministic random numbers
 * and the pool's test seams.  Private to src/crashsim. */
#ifndef PROSPER_CRASHSIM_INTERNAL_H
#define PROSPER_CRASHSIM_INTERNAL_H
#include <stddef.h>
#include <stdint.h>
#include "prosper/internal/crashsim.h"
#include "prosper/internal/pool_testing.h"
#include "prosper/pool.h"

/* xorshift64*: the workloads and the engine are deterministic in their seeds. */
static inline uint64_t crashsim_rng_next(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

static inline uint64_t crashsim_rng_below(uint64_t *s, uint64_t n) { return n ? crashsim_rng_next(s) % n : 0; }

/* n random bytes at p. */
void crashsim_fill_random(uint8_t *p, size_t n, uint64_t *rng);

#endif

/* hook.h -- the fast path of a store hook, shared by the library (track.c) and the copy that
 * instrumented.c links into each instrumented program (a direct call instead of one through
 * the PLT, on every store of the program).
 *
 * One range covers every open container; a store outside it costs two loads, a subtract and a
 * compare.  The range is widened or narrowed by track.c only while no container in it is being
 * written (open/close), so relaxed loads suffice. */
#ifndef PROSPER_CRPM_HOOK_H
#define PROSPER_CRPM_HOOK_H
#include <stddef.h>
#include <stdint.h>

extern uintptr_t crpm__filter_lo, crpm__filter_span;
void crpm__hook_slow(uintptr_t addr, size_t len);

#define CRPM_HOOK(a, n)                                                                          \
	do {                                                                                     \
		uintptr_t a_ = (uintptr_t)(a);                                                   \
		if (__builtin_expect(a_ - __atomic_load_n(&crpm__filter_lo, __ATOMIC_RELAXED) <  \
					     __atomic_load_n(&crpm__filter_span, __ATOMIC_RELAXED), \
				     0))                                                         \
			crpm__hook_slow(a_, (n));                                                \
	} while (0)
#endif

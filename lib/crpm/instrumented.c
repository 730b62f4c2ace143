/* instrumented.c -- linked by bin/prosper-cc into every program it builds:
 *   - tells the library, before main, that the program's stores call the hooks (track.c), so
 *     containers may rely on them instead of comparing every written segment with its
 *     checkpoint;
 *   - carries the hooks' fast path into the program (hook.h): the compiler's calls to
 *     __sanitizer_cov_storeN bind here, directly, and only stores into a container go on to
 *     the library. */
#include "hook.h"

void crpm_declare_instrumented(void);

__attribute__((constructor)) static void declare(void) { crpm_declare_instrumented(); }

void __sanitizer_cov_store1(void *p) { CRPM_HOOK(p, 1); }
void __sanitizer_cov_store2(void *p) { CRPM_HOOK(p, 2); }
void __sanitizer_cov_store4(void *p) { CRPM_HOOK(p, 4); }
void __sanitizer_cov_store8(void *p) { CRPM_HOOK(p, 8); }
void __sanitizer_cov_store16(void *p) { CRPM_HOOK(p, 16); }

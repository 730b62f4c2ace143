/* why.h -- how the supervisor says what failed: its one error style.
 *
 * A step that can fail returns 0, or a negative value: -errno when an errno says what happened,
 * else -1.  When it has more to say than the errno, it writes the reason, in words a user can act
 * on, into the buffer its caller hands down (`char *why, size_t whylen`): the reason travels up
 * with the failure to the one place that reports it -- stderr, a refusal, --stats-json -- and is
 * copied there if it must outlive the call.  No reason is left in a field for someone to look at
 * later.  A resume's refusals return their stable code (enum refusal, refusal.h) the same way.
 *
 * At a library's edge (the pool's prosper_pool_errormsg(), the tracker's track.err), the library's
 * own message is read right where its call failed, in the thread that made the call (the pool's
 * message is per thread), and goes into why.
 */
#ifndef PROSPER_SUP_WHY_H
#define PROSPER_SUP_WHY_H
#include <stdio.h>

/* In a function with `why` and `whylen` in scope: the reason written, -1 returned. */
#define WHY_FAIL(...) do { snprintf(why, whylen, __VA_ARGS__); return -1; } while (0)

/* The reason written unless one was given already (the deepest step knows best). */
#define WHY_SAY(...) do { if (!why[0]) snprintf(why, whylen, __VA_ARGS__); } while (0)

#endif

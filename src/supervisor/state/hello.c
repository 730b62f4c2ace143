/* hello.c -- the addresses an image's shim said hello with (gate, records, scratch: shim_proto.h),
 * taken into its supervised process (sup.h).  Below everything that starts or adopts an image:
 * run, resume, an exec, a fork, a resumed member of a tree. */
#include "sup.h"
#include "hello.h"

void sup_take_hello(struct sup *s, const struct shim_hello *hello)
{
	s->hello = *hello; /* a child it forks says no hello of its own: it is given this one (tree.c) */
	s->gate = hello->gate;
	s->nvm_gate = hello->nvm_gate;
	s->nvm_path_addr = hello->nvm_path;
	s->timers_addr = hello->timers;
	s->scratch_addr = hello->scratch;
	s->pending_addr = hello->pending;
	s->pending_written = 0; /* a new image: its records are empty */
	s->limits_addr = hello->limits;
	s->limits_written = 0;
	s->posix_timers_addr = hello->posix_timers;
	s->posix_timers_written = -1; /* what it holds is not known: written at the next checkpoint */
}

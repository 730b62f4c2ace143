/* altstack -- the main thread and a second one each run on an alternate signal stack of their
 * own (sigaltstack); each sends itself SIGUSR1 every few thousand steps of its work, and the
 * handler (SA_ONSTACK) counts whether it ran on its thread's alternate stack.  A resume that did
 * not set the stacks again runs the handlers on the threads' own stacks: "off" counts then differ
 * from a native run's 0.  (Go's runtime dies instead: "signal ... received on thread with no
 * signal stack".)  usage: altstack ROUNDS */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALT_BYTES (64 << 10)

static __thread char *alt_lo;
static __thread volatile long on, off;

static void handler(int sig)
{
	char here;
	(void)sig;
	if (alt_lo && &here >= alt_lo && &here < alt_lo + ALT_BYTES)
		on++;
	else
		off++;
}

struct work {
	long rounds;
	uint64_t sum;
	long on, off;
};

static void *run(void *arg)
{
	struct work *w = arg;
	alt_lo = malloc(ALT_BYTES);
	stack_t ss = { .ss_sp = alt_lo, .ss_size = ALT_BYTES, .ss_flags = 0 };
	if (!alt_lo || sigaltstack(&ss, NULL) != 0)
		abort();
	uint64_t x = 88172645463325252ull;
	for (long r = 0; r < w->rounds; r++) {
		for (int k = 0; k < 4000; k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			w->sum += x >> 40;
		}
		if (r % 16 == 0)
			pthread_kill(pthread_self(), SIGUSR1);
	}
	w->on = on, w->off = off;
	return NULL;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 20000;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sa.sa_flags = SA_ONSTACK | SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	struct work a = { .rounds = rounds }, b = { .rounds = rounds };
	pthread_t t;
	if (pthread_create(&t, NULL, run, &b) != 0)
		return 1;
	run(&a);
	pthread_join(t, NULL);
	printf("%016llx %016llx on %ld %ld off %ld %ld\n", (unsigned long long)a.sum, (unsigned long long)b.sum, a.on, b.on,
	       a.off, b.off);
	return 0;
}

/* coroutine -- a thread runs a coroutine whose stack lies at the top of a mapping it also keeps a
 * table in, below that stack; the mapping is the mapped part of a region reserved PROT_NONE, so
 * it has the shape of a glibc thread stack (a guard right below it), as a Go heap arena holding
 * goroutine stacks does.  The table below the coroutine's SP is live data: a checkpoint must save
 * it (capture.c, mark_stacks).  Prints the table's checksum.  usage: coroutine ROUNDS */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>

#define RESERVED (4ul << 20)
#define GUARD (1ul << 20)
#define WORDS (256ul << 10) /* a 2 MiB table at the bottom of the mapped part */
#define CO_STACK (256ul << 10)

static ucontext_t home, co;
static uint64_t *table;
static long rounds;

static void work(void)
{
	uint64_t x = 88172645463325252ull;
	for (long r = 0; r < rounds; r++) {
		for (int k = 0; k < 2000; k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			table[x % WORDS] += x >> 32;
		}
		swapcontext(&co, &home); /* back to the thread's own stack now and then */
	}
}

static void *thread(void *arg)
{
	(void)arg;
	uint8_t *region = mmap(NULL, RESERVED, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (region == MAP_FAILED || mprotect(region + GUARD, RESERVED - GUARD, PROT_READ | PROT_WRITE) != 0)
		abort();
	table = (uint64_t *)(region + GUARD);
	getcontext(&co);
	co.uc_stack.ss_sp = region + RESERVED - CO_STACK;
	co.uc_stack.ss_size = CO_STACK;
	co.uc_link = &home;
	makecontext(&co, work, 0);
	for (long r = 0; r <= rounds; r++)
		swapcontext(&home, &co);
	return NULL;
}

int main(int argc, char **argv)
{
	rounds = argc > 1 ? atol(argv[1]) : 2000;
	pthread_t t;
	if (pthread_create(&t, NULL, thread, NULL) != 0)
		return 1;
	pthread_join(t, NULL);
	uint64_t sum = 0;
	for (size_t i = 0; i < WORDS; i++)
		sum = sum * 31 + table[i];
	printf("%016llx\n", (unsigned long long)sum);
	return 0;
}

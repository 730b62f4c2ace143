/* threads_stacks -- threads writing their own stacks, and one writing another thread's stack,
 * with checkpoints requested while all of them are live.  Tests the per-thread trackers, the
 * context-switch flush and the inter-thread store path.  usage: threads_stacks [THREADS] [ROUNDS] */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "prosper/prosper_hw.h"

static int rounds = 20;
static volatile uint64_t *shared_frame;     /* thread 1's frame, written by thread 2 */
static pthread_barrier_t bar;
static uint64_t sums[16];

static void *worker(void *arg)
{
	long id = (long)arg;
	volatile uint64_t frame[4096];          /* 32 KiB on this thread's stack */
	if (id == 1)
		shared_frame = frame;
	pthread_barrier_wait(&bar);
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < 4096; i += 64)
			frame[i] = (uint64_t)r * 131 + (uint64_t)i + (uint64_t)id;
		if (id == 2)
			shared_frame[8] = (uint64_t)r * 7; /* another thread's stack */
		pthread_barrier_wait(&bar);
		if (id == 0)
			PROSPER_HW_DO_CHECKPOINT();     /* all threads are live, in the barrier */
		pthread_barrier_wait(&bar);
	}
	sums[id] = frame[0] + frame[4032];
	pthread_barrier_wait(&bar);             /* keep frames alive until everyone is done */
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3;
	rounds = argc > 2 ? atoi(argv[2]) : 20;
	if (n < 3 || n > 16 || rounds < 1) {
		fprintf(stderr, "usage: threads_stacks [THREADS 3..16] [ROUNDS]\n");
		return 2;
	}
	pthread_t th[16];
	pthread_barrier_init(&bar, NULL, (unsigned)n);
	for (long i = 0; i < n; i++)
		pthread_create(&th[i], NULL, worker, (void *)i);
	uint64_t s = 0;
	for (int i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		s += sums[i];
	}
	printf("checksum %llu\n", (unsigned long long)s);
	return 0;
}

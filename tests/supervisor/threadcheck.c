/* threadcheck -- threads that come and go between checkpoints, and a thread writing into another
 * thread's stack: per round, two workers start; the first fills a buffer that lives in the second's
 * stack frame (its address published through a shared pointer) while the second waits at a
 * barrier; then the second folds its buffer into the round's checksum; both are joined; a short
 * sleep lets checkpoints land in every phase.  A write into a foreign stack that a checkpoint lost
 * would change the checksum after a resume.  usage: threadcheck [ROUNDS] */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define WORDS 3000

static pthread_barrier_t filled, published;
static uint64_t *volatile foreign; /* the second worker's stack buffer */
static uint64_t round_sum[2];

static void *writer(void *arg)
{
	uint64_t r = (uint64_t)(uintptr_t)arg;
	pthread_barrier_wait(&published);
	for (int i = 0; i < WORDS; i++)
		foreign[i] = (r << 32 | (uint64_t)i) * 0x9E3779B97F4A7C15ull;
	struct timespec ts = { 0, 300000 };
	nanosleep(&ts, NULL);
	pthread_barrier_wait(&filled);
	return NULL;
}

static void *owner(void *arg)
{
	uint64_t buf[WORDS]; /* written only by the other thread */
	foreign = buf;
	pthread_barrier_wait(&published);
	pthread_barrier_wait(&filled);
	uint64_t h = 1469598103934665603ull;
	for (int i = 0; i < WORDS; i++)
		h = (h ^ buf[i]) * 1099511628211ull;
	round_sum[(uintptr_t)arg & 1] += h;
	return NULL;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 400;
	pthread_barrier_init(&filled, NULL, 2);
	pthread_barrier_init(&published, NULL, 2);
	for (long r = 0; r < rounds; r++) {
		pthread_t a, b;
		pthread_create(&b, NULL, owner, (void *)(uintptr_t)r);
		pthread_create(&a, NULL, writer, (void *)(uintptr_t)r);
		pthread_join(a, NULL);
		pthread_join(b, NULL);
		struct timespec ts = { 0, 500000 };
		nanosleep(&ts, NULL);
	}
	printf("rounds %ld checksum 0x%016llx%016llx\n", rounds, (unsigned long long)round_sum[0],
	       (unsigned long long)round_sum[1]);
	return 0;
}

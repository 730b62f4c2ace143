/* prodcons -- producers and consumers around a bounded queue with a mutex and two condition
 * variables: PRODUCERS threads push ITEMS numbered items each, CONSUMERS threads pop and fold them
 * into per-consumer sums, which are combined in a fixed order at the end (the result does not
 * depend on which consumer got which item: each item is folded by a commutative hash).  Threads
 * are blocked in futex waits most of the time, the case a checkpoint must restart correctly.
 * usage: prodcons [ITEMS] [PRODUCERS] [CONSUMERS] */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define QCAP 64

static struct {
	pthread_mutex_t mu;
	pthread_cond_t not_full, not_empty;
	uint64_t q[QCAP];
	int head, count, producers_left;
} Q = { .mu = PTHREAD_MUTEX_INITIALIZER, .not_full = PTHREAD_COND_INITIALIZER, .not_empty = PTHREAD_COND_INITIALIZER };

static long items = 400000;

static uint64_t work(uint64_t x)
{
	for (int i = 0; i < 200; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

static void *producer(void *arg)
{
	uint64_t id = (uint64_t)(uintptr_t)arg;
	for (long i = 0; i < items; i++) {
		uint64_t v = work(id << 40 | (uint64_t)i);
		pthread_mutex_lock(&Q.mu);
		while (Q.count == QCAP)
			pthread_cond_wait(&Q.not_full, &Q.mu);
		Q.q[(Q.head + Q.count++) % QCAP] = v;
		pthread_cond_signal(&Q.not_empty);
		pthread_mutex_unlock(&Q.mu);
	}
	pthread_mutex_lock(&Q.mu);
	Q.producers_left--;
	pthread_cond_broadcast(&Q.not_empty);
	pthread_mutex_unlock(&Q.mu);
	return NULL;
}

static void *consumer(void *arg)
{
	uint64_t *sum = arg;
	for (;;) {
		pthread_mutex_lock(&Q.mu);
		while (Q.count == 0 && Q.producers_left > 0)
			pthread_cond_wait(&Q.not_empty, &Q.mu);
		if (Q.count == 0) {
			pthread_mutex_unlock(&Q.mu);
			return NULL;
		}
		uint64_t v = Q.q[Q.head];
		Q.head = (Q.head + 1) % QCAP;
		Q.count--;
		pthread_cond_signal(&Q.not_full);
		pthread_mutex_unlock(&Q.mu);
		*sum += work(v) | 1; /* order-free: a sum */
	}
}

int main(int argc, char **argv)
{
	items = argc > 1 ? atol(argv[1]) : items;
	int np = argc > 2 ? atoi(argv[2]) : 2, nc = argc > 3 ? atoi(argv[3]) : 2;
	if (items <= 0 || np < 1 || np > 16 || nc < 1 || nc > 16) {
		fprintf(stderr, "usage: prodcons [ITEMS>0] [PRODUCERS 1..16] [CONSUMERS 1..16]\n");
		return 2;
	}
	Q.producers_left = np;
	pthread_t p[16], c[16];
	uint64_t sums[16] = { 0 };
	for (int i = 0; i < nc; i++)
		pthread_create(&c[i], NULL, consumer, &sums[i]);
	for (int i = 0; i < np; i++)
		pthread_create(&p[i], NULL, producer, (void *)(uintptr_t)(i + 1));
	for (int i = 0; i < np; i++)
		pthread_join(p[i], NULL);
	uint64_t total = 0;
	for (int i = 0; i < nc; i++) {
		pthread_join(c[i], NULL);
		total += sums[i];
	}
	printf("checksum 0x%016llx\n", (unsigned long long)total);
	return 0;
}

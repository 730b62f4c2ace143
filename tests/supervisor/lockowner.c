/* lockowner -- robust mutexes held across checkpoints: two threads each lock their own robust
 * mutex (an error-checking one, so that a foreign unlock is refused), compute, and unlock it.
 * The lock word of a robust mutex is its owner's thread id, and a resume gives threads new ids:
 * left with the old id, the unlock after a resume fails with EPERM and the next lock waits for
 * a thread that is gone (tests/e2e/test_threads.py; src/supervisor/objects/lockowners.c).
 * With `plain` the mutexes are error-checking but not robust: on no list the kernel keeps, they
 * cannot be found from outside, and only a resume that gives each thread its old id (the
 * program's own pid namespace, src/supervisor/base/pidns.c) lets them be unlocked.
 *
 * usage: lockowner ROUNDS (1-16) [plain] */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct locks {
	pthread_mutex_t robust;
	int id, rounds;
	uint64_t result;
	char report[16][48]; /* per round; printed by main at the end, in order */
};

static const char *name(int rc) { return rc == 0 ? "ok" : rc == EPERM ? "EPERM" : strerror(rc); }

static void *work(void *arg)
{
	struct locks *l = arg;
	uint64_t x = 0x9E3779B97F4A7C15ull * (uint64_t)(l->id + 1);
	for (int r = 0; r < l->rounds; r++) {
		int a = pthread_mutex_lock(&l->robust);
		for (long i = 0; i < 60000000; i++) /* the lock is held while this runs */
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		int b = pthread_mutex_unlock(&l->robust);
		snprintf(l->report[r], sizeof l->report[r], "lock %s unlock %s", name(a), name(b));
	}
	l->result = x;
	return NULL;
}

int main(int argc, char **argv)
{
	int plain = argc == 3 && !strcmp(argv[2], "plain");
	if ((argc != 2 && !plain) || atoi(argv[1]) < 1 || atoi(argv[1]) > 16) {
		fprintf(stderr, "usage: lockowner ROUNDS (1-16) [plain]\n");
		return 2;
	}
	static struct locks l[2];
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
	if (!plain)
		pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	for (int t = 0; t < 2; t++) {
		pthread_mutex_init(&l[t].robust, &a);
		l[t].id = t;
		l[t].rounds = atoi(argv[1]);
	}
	pthread_t th;
	if (pthread_create(&th, NULL, work, &l[1]) != 0)
		return 1;
	work(&l[0]);
	pthread_join(th, NULL);
	for (int t = 0; t < 2; t++)
		for (int r = 0; r < l[t].rounds; r++)
			printf("thread %d round %d: %s\n", t, r, l[t].report[r]);
	printf("end %016llx %016llx\n", (unsigned long long)l[0].result, (unsigned long long)l[1].result);
	return 0;
}

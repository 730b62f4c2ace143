/* lockowner -- locks that name their owner by thread id, held across checkpoints: two threads,
 * each with its own error-checking, recursive and robust mutexes and a rwlock, hold them while
 * they compute and then check what glibc answers -- a relock is EDEADLK (error-checking mutex,
 * write-locked rwlock), a recursive lock counts, every unlock succeeds.  After a resume that
 * left the old thread ids in the locks, an unlock fails with EPERM and a relock of the rwlock
 * waits forever (tests/e2e/test_exec_children.py; src/supervisor/lockowners.c).
 *
 * usage: lockowner ROUNDS (1-16) */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct locks {
	pthread_mutex_t check, rec, robust;
	pthread_rwlock_t rw;
	int id, rounds;
	uint64_t result;
	char report[16][80]; /* per round; printed by main at the end, in order */
};

static void init(struct locks *l)
{
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&l->check, &a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&l->rec, &a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_NORMAL);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&l->robust, &a);
	pthread_rwlock_init(&l->rw, NULL);
}

static const char *name(int rc) { return rc == 0 ? "ok" : rc == EDEADLK ? "EDEADLK" : rc == EPERM ? "EPERM" : strerror(rc); }

static void *work(void *arg)
{
	struct locks *l = arg;
	uint64_t x = 0x9E3779B97F4A7C15ull * (uint64_t)(l->id + 1);
	for (int r = 0; r < l->rounds; r++) {
		int a = pthread_mutex_lock(&l->check), b = pthread_mutex_lock(&l->rec), c = pthread_mutex_lock(&l->rec);
		int d = pthread_mutex_lock(&l->robust), e = pthread_rwlock_wrlock(&l->rw);
		for (long i = 0; i < 60000000; i++) /* the locks are held while this runs */
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		int f = pthread_mutex_lock(&l->check), g = pthread_rwlock_wrlock(&l->rw);
		int h = pthread_mutex_unlock(&l->rec), i = pthread_mutex_unlock(&l->rec), j = pthread_mutex_unlock(&l->check);
		int k = pthread_mutex_unlock(&l->robust), m = pthread_rwlock_unlock(&l->rw);
		snprintf(l->report[r], sizeof l->report[r], "%s %s %s %s %s %s %s %s %s %s %s %s", name(a), name(b), name(c),
			 name(d), name(e), name(f), name(g), name(h), name(i), name(j), name(k), name(m));
	}
	l->result = x;
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2 || atoi(argv[1]) < 1 || atoi(argv[1]) > 16) {
		fprintf(stderr, "usage: lockowner ROUNDS (1-16)\n");
		return 2;
	}
	static struct locks l[2];
	pthread_t th;
	for (int t = 0; t < 2; t++) {
		init(&l[t]);
		l[t].id = t;
		l[t].rounds = atoi(argv[1]);
	}
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

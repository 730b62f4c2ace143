/* pendsig -- signals pending across checkpoints: blocked everywhere, queued before long phases of
 * work and taken afterwards with sigwaitinfo, which must find each one with its siginfo:
 *   - three instances of a realtime signal queued to the process, with values (sigqueue): all
 *     three, in order;
 *   - SIGUSR2 sent to the worker thread alone (pthread_kill): taken by that thread.
 * A resume that dropped them waits forever (tests/e2e/test_run_resume.py; src/supervisor/objects/pending.c).
 *
 * usage: pendsig PHASES (1-20) */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static uint64_t work(uint64_t x)
{
	for (long i = 0; i < 120000000; i++)
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
	return x;
}

static pthread_barrier_t sent;

static void *worker(void *arg)
{
	int phases = *(int *)arg;
	sigset_t usr2;
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	for (int p = 0; p < phases; p++) {
		pthread_barrier_wait(&sent); /* main has sent this phase's SIGUSR2 to us */
		siginfo_t si;
		if (sigwaitinfo(&usr2, &si) != SIGUSR2)
			return NULL;
		printf("phase %d: worker took SIGUSR2, si_code %d\n", p, si.si_code);
		fflush(stdout);
		pthread_barrier_wait(&sent);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int phases = argc == 2 ? atoi(argv[1]) : 0;
	if (phases < 1 || phases > 20) {
		fprintf(stderr, "usage: pendsig PHASES (1-20)\n");
		return 2;
	}
	sigset_t all;
	sigemptyset(&all);
	sigaddset(&all, SIGRTMIN);
	sigaddset(&all, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &all, NULL); /* inherited by the worker */
	pthread_barrier_init(&sent, NULL, 2);
	pthread_t th;
	if (pthread_create(&th, NULL, worker, &phases) != 0)
		return 1;
	sigset_t rt;
	sigemptyset(&rt);
	sigaddset(&rt, SIGRTMIN);
	uint64_t x = 88172645463325252ull;
	for (int p = 0; p < phases; p++) {
		for (int v = 1; v <= 3; v++)
			sigqueue(getpid(), SIGRTMIN, (union sigval){ .sival_int = 10 * p + v });
		pthread_kill(th, SIGUSR2);
		x = work(x); /* pending, checkpoint after checkpoint */
		pthread_barrier_wait(&sent);
		pthread_barrier_wait(&sent); /* the worker has printed its line */
		for (int v = 1; v <= 3; v++) {
			siginfo_t si;
			if (sigwaitinfo(&rt, &si) != SIGRTMIN)
				return 1;
			printf("phase %d: SIGRTMIN value %d code %s\n", p, si.si_value.sival_int,
			       si.si_code == SI_QUEUE ? "SI_QUEUE" : "other");
		}
		fflush(stdout);
	}
	pthread_join(th, NULL);
	printf("end %016llx\n", (unsigned long long)x);
	return 0;
}

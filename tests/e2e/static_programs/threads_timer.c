/* threads_timer.c -- built with `gcc -static` by tests/e2e/test_static.py: rounds of four hashing
 * threads joined by the main thread, an interval timer (setitimer, every 20 ms) whose handler
 * counts; at the end it says whether the handler and the timer are still in place.  Output:
 * one line per round, then the checks; all of it deterministic. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
static volatile sig_atomic_t ticks;
static void on_alarm(int s) { ticks++; }
static unsigned long long work[4];
static void *worker(void *a) {
	long k = (long)a; unsigned long long h = 1469598103934665603ull;
	for (long i = 0; i < 40000000; i++) { h ^= (unsigned long long)(i * (k + 1)); h *= 1099511628211ull; }
	work[k] = h; return 0;
}
int main(int argc, char **argv) {
	int rounds = argc > 1 ? atoi(argv[1]) : 20;
	struct sigaction sa; memset(&sa, 0, sizeof sa); sa.sa_handler = on_alarm; sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, 0);
	struct itimerval it = { { 0, 20000 }, { 0, 20000 } };
	setitimer(ITIMER_REAL, &it, 0);
	unsigned long long total = 0;
	for (int r = 0; r < rounds; r++) {
		pthread_t t[4];
		for (long k = 0; k < 4; k++) pthread_create(&t[k], 0, worker, (void *)k);
		for (int k = 0; k < 4; k++) pthread_join(t[k], 0);
		for (int k = 0; k < 4; k++) total += work[k] ^ (unsigned long long)r;
		printf("round %d %016llx\n", r, total); fflush(stdout);
	}
	struct itimerval now; getitimer(ITIMER_REAL, &now);
	printf("ticks>0 %d interval %ld handler-kept %d\n", ticks > 0, (long)now.it_interval.tv_usec,
	       (sigaction(SIGALRM, 0, &sa), sa.sa_handler == on_alarm));
	return 0;
}

/* blocked_timer.c -- built static and dynamic by tests/e2e/test_static.py: a periodic ITIMER_REAL
 * (every 10 ms) whose SIGALRM stays blocked while the program computes.  The timer fires once and
 * then has no time left until its signal is taken -- the kernel rearms ITIMER_REAL only when its
 * SIGALRM is dequeued -- so that is how every checkpoint of the computing phase reads it.  Then
 * the program takes 25 ticks with sigwait: a resume that left such a timer off waits for ever.
 * Output: one line per round, then the ticks and the interval; all of it deterministic. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 10;
	sigset_t alrm;
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	sigprocmask(SIG_BLOCK, &alrm, 0);
	struct itimerval it = { { 0, 10000 }, { 0, 10000 } };
	setitimer(ITIMER_REAL, &it, 0);
	unsigned long long h = 1469598103934665603ull;
	for (int r = 0; r < rounds; r++) {
		for (long i = 0; i < 20000000; i++) {
			h ^= (unsigned long long)(i + r);
			h *= 1099511628211ull;
		}
		printf("round %d %016llx\n", r, h);
		fflush(stdout);
	}
	for (int k = 0; k < 25; k++) {
		int sig;
		sigwait(&alrm, &sig);
	}
	struct itimerval now;
	getitimer(ITIMER_REAL, &now);
	printf("ticks 25 interval %ld\n", (long)now.it_interval.tv_usec);
	return 0;
}

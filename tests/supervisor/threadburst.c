/* threadburst -- many threads that exit as soon as they start: a new thread can be stopped,
 * resumed, run and exit before the supervisor reads its creator's clone event (its creator not
 * scheduled in between), so the event names a thread that is gone.  It prints how many it
 * made, and checksums its own count so a resume that lost a round shows.
 * usage: threadburst [THREADS] */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static void *quick(void *arg) { return arg; }

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	uint64_t h = 1469598103934665603ull;
	for (long i = 0; i < n; i++) {
		pthread_t t;
		while (pthread_create(&t, &at, quick, NULL) != 0)
			; /* too many alive at once: try again */
		h = (h ^ (uint64_t)i) * 1099511628211ull;
	}
	printf("threads %ld checksum 0x%016llx\n", n, (unsigned long long)h);
	return 0;
}

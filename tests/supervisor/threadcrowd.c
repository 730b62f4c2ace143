/* threadcrowd -- N threads alive at once (default 450), each waiting MS milliseconds (default
 * 300): every one of them is in each checkpoint, its stack a region of the pool.
 * usage: threadcrowd [N [MS]] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static pthread_barrier_t b;
static useconds_t wait_us = 300000;
static void *sleeper(void *a) { pthread_barrier_wait(&b); usleep(wait_us); return a; }
int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 450;
	if (argc > 2)
		wait_us = (useconds_t)atoi(argv[2]) * 1000;
	pthread_t *t = calloc(n, sizeof *t);
	pthread_barrier_init(&b, NULL, n + 1);
	for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, sleeper, NULL);
	pthread_barrier_wait(&b);
	for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
	printf("joined %d\n", n);
	return 0;
}

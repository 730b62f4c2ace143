/* wakeup_cost -- measure what waking a sleeping thread costs on this machine, the source of
 * prosper-sim's thread_wakeup_ns (sim/config/timing.conf: SSP's consolidation thread).
 *
 * Two measurements, each over ROUNDS rounds after a warm-up, printed as one JSON object with
 * the minimum, median and 90th percentile in nanoseconds:
 *   - same_core_round_trip_ns: two threads pinned to one CPU hand a token back and forth
 *     through futexes; one round trip is two wake-ups and two context switches.  This is what a
 *     helper thread sharing the application's core costs that core each time it runs: the
 *     application is switched out, the helper runs and goes back to sleep, the application is
 *     switched back in.
 *   - cross_core_wakeup_ns: a thread sleeping in FUTEX_WAIT on another CPU is woken; the time
 *     from just before FUTEX_WAKE to the woken thread running again (both read CLOCK_MONOTONIC).
 * Pinning needs two CPUs for the second measurement; with one, it is reported as null.
 * Usage: wakeup_cost [ROUNDS]   (default 20000) */
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void futex_wait(atomic_int *f, int val)
{
	syscall(SYS_futex, f, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake(atomic_int *f) { syscall(SYS_futex, f, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0); }

static int pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void print_stats(const char *name, uint64_t *v, int n, int last)
{
	qsort(v, n, sizeof *v, cmp_u64);
	printf("  \"%s\": {\"min\": %llu, \"median\": %llu, \"p90\": %llu}%s\n", name, (unsigned long long)v[0],
	       (unsigned long long)v[n / 2], (unsigned long long)v[n * 9 / 10], last ? "" : ",");
}

/* The token: `turn` says whose move it is (0 main, 1 helper); each side sleeps until it is its
 * turn.  `stamp` carries the waker's clock for the cross-core measurement. */
static atomic_int turn;
static _Atomic uint64_t stamp;
static int rounds, helper_cpu;
static uint64_t *cross;

static void wait_for(int me)
{
	int t;
	while ((t = atomic_load(&turn)) != me)
		futex_wait(&turn, t);
}

static void hand_to(int other)
{
	atomic_store(&stamp, now_ns());
	atomic_store(&turn, other);
	futex_wake(&turn);
}

static void *helper(void *arg)
{
	int total = *(int *)arg;
	pin(helper_cpu);
	for (int i = 0; i < total; i++) {
		wait_for(1);
		if (cross)
			cross[i] = now_ns() - atomic_load(&stamp);
		hand_to(0);
	}
	return NULL;
}

/* ping_pong -- `total` rounds with the helper on helper_cpu; returns each round trip's ns. */
static void ping_pong(int total, uint64_t *rtt)
{
	pthread_t t;
	atomic_store(&turn, 0);
	if (pthread_create(&t, NULL, helper, &total) != 0) {
		fprintf(stderr, "wakeup_cost: cannot create a thread\n");
		exit(2);
	}
	for (int i = 0; i < total; i++) {
		uint64_t t0 = now_ns();
		hand_to(1);
		wait_for(0);
		if (rtt)
			rtt[i] = now_ns() - t0;
	}
	pthread_join(t, NULL);
}

int main(int argc, char **argv)
{
	rounds = 20000;
	if (argc > 2 || (argc == 2 && (rounds = atoi(argv[1])) <= 0)) {
		fprintf(stderr, "usage: wakeup_cost [ROUNDS]\n");
		return 2;
	}
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t *rtt = malloc(sizeof(uint64_t) * rounds), *x = malloc(sizeof(uint64_t) * rounds);
	if (!rtt || !x || pin(0) != 0) {
		fprintf(stderr, "wakeup_cost: cannot allocate or pin to CPU 0\n");
		return 2;
	}
	helper_cpu = 0;
	ping_pong(rounds / 10 + 1, NULL); /* warm-up */
	ping_pong(rounds, rtt);
	printf("{\n  \"rounds\": %d,\n  \"cpus\": %d,\n", rounds, ncpu);
	print_stats("same_core_round_trip_ns", rtt, rounds, 0);
	if (ncpu < 2) {
		printf("  \"cross_core_wakeup_ns\": null\n}\n");
		return 0;
	}
	helper_cpu = 1;
	ping_pong(rounds / 10 + 1, NULL);
	cross = x;
	ping_pong(rounds, NULL);
	print_stats("cross_core_wakeup_ns", x, rounds, 1);
	printf("}\n");
	return 0;
}

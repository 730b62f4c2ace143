/* wakeup_cost -- measure what waking a sleeping thread costs on this machine, the source of
 * thread_wakeup_ns in prosper-sim's this-machine profile (sim/config/this-machine.conf: SSP's
 * consolidation thread).
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
 *   - timer_activation_ns: a helper thread on the application's CPU sleeps until the next
 *     100 us deadline (clock_nanosleep), notes the time and sleeps again -- a periodic helper
 *     such as SSP's consolidation thread with no work to do.  The main thread spins on the
 *     same CPU reading the clock; the gap in its readings that holds an activation is what
 *     that activation cost the application (timer interrupt, switch to the helper, its return
 *     to sleep, switch back).
 * Pinning needs two CPUs for the cross-core measurement; with one, it is reported as null, as
 * is the timer measurement if no activation fell into a gap.
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

/* The timer-driven helper: pinned to CPU 0 with the main thread, wakes at absolute deadlines
 * kTimerPeriodNs apart and records when it ran. */
enum { kTimerPeriodNs = 100000, kGapNs = 300 };
static uint64_t *activation;
static atomic_int spinning;

static void *timer_helper(void *arg)
{
	int total = *(int *)arg;
	pin(0);
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (int i = 0; i < total; i++) {
		next.tv_nsec += kTimerPeriodNs;
		if (next.tv_nsec >= 1000000000) {
			next.tv_nsec -= 1000000000;
			next.tv_sec++;
		}
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) != 0)
			;
		activation[i] = now_ns();
	}
	atomic_store(&spinning, 0);
	return NULL;
}

/* timer_activations -- runs `total` helper activations beside the spinning main thread; writes
 * the length of each gap that holds an activation to cost[] and returns how many there were. */
static int timer_activations(int total, uint64_t *cost)
{
	int max_gaps = 4 * total + 1024, gaps = 0, found = 0;
	uint64_t *gap_start = malloc(sizeof(uint64_t) * max_gaps), *gap_end = malloc(sizeof(uint64_t) * max_gaps);
	pthread_t t;
	activation = malloc(sizeof(uint64_t) * total);
	if (!gap_start || !gap_end || !activation) {
		fprintf(stderr, "wakeup_cost: cannot allocate\n");
		exit(2);
	}
	atomic_store(&spinning, 1);
	if (pthread_create(&t, NULL, timer_helper, &total) != 0) {
		fprintf(stderr, "wakeup_cost: cannot create a thread\n");
		exit(2);
	}
	for (uint64_t prev = now_ns(); atomic_load_explicit(&spinning, memory_order_relaxed);) {
		uint64_t t_now = now_ns();
		if (t_now - prev > kGapNs && gaps < max_gaps) {
			gap_start[gaps] = prev;
			gap_end[gaps++] = t_now;
		}
		prev = t_now;
	}
	pthread_join(t, NULL);
	for (int i = 0, g = 0; i < total; i++) {  /* both in time order */
		while (g < gaps && gap_end[g] < activation[i])
			g++;
		if (g < gaps && gap_start[g] <= activation[i])
			cost[found++] = gap_end[g] - gap_start[g];
	}
	free(gap_start);
	free(gap_end);
	free(activation);
	return found;
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
	int activations = rounds / 10 + 1, seen = timer_activations(activations, x);
	printf("  \"timer_activations\": %d,\n  \"timer_activations_seen\": %d,\n", activations, seen);
	if (seen)
		print_stats("timer_activation_ns", x, seen, 0);
	else
		printf("  \"timer_activation_ns\": null,\n");
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

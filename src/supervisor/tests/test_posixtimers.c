/* test_posixtimers.c -- /proc/PID/timers as the checkpoint reads it (posixtimers.h): timers of
 * each way of notifying, made by this test process, parsed back with their ids, clocks, signals,
 * values and threads; more than the record holds counted as lost; any other text refused. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "posixtimers.h"

static int failures;
#define MUST(c) do { if (!(c)) { fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); exit(1); } } while (0)
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); failures++; } } while (0)

static int make(clockid_t clock, int notify, int signo, uint64_t value, int tid)
{
	struct sigevent ev;
	memset(&ev, 0, sizeof ev);
	ev.sigev_notify = notify;
	ev.sigev_signo = signo;
	ev.sigev_value.sival_ptr = (void *)(uintptr_t)value;
	ev._sigev_un._tid = tid;
	int id = -1;
	MUST(syscall(SYS_timer_create, clock, &ev, &id) == 0);
	return id;
}

static void read_self(char *buf, size_t cap)
{
	FILE *f = fopen("/proc/self/timers", "re");
	MUST(f);
	size_t n = fread(buf, 1, cap - 1, f);
	buf[n] = 0;
	fclose(f);
}

static const struct shim_posix_timer *by_id(const struct shim_posix_timer *t, int n, int id)
{
	for (int i = 0; i < n; i++)
		if (t[i].id == id)
			return &t[i];
	return NULL;
}

int main(void)
{
	int me = (int)getpid();
	int a = make(CLOCK_MONOTONIC, SIGEV_SIGNAL, SIGUSR1, 0x1234, 0);
	int b = make(CLOCK_REALTIME, SIGEV_THREAD_ID, SIGUSR2, 7, (int)syscall(SYS_gettid));
	int c = make(CLOCK_BOOTTIME, SIGEV_NONE, 0, 0, 0);
	static char text[65536];
	read_self(text, sizeof text);
	struct shim_posix_timer t[8];
	uint32_t lost = 99;
	int n = posix_timers_parse(text, t, 8, &lost);
	CHECK(n == 3 && lost == 0);
	const struct shim_posix_timer *ta = by_id(t, n, a), *tb = by_id(t, n, b), *tc = by_id(t, n, c);
	MUST(ta && tb && tc);
	CHECK(ta->clock == CLOCK_MONOTONIC && ta->notify == SIGEV_SIGNAL && ta->signo == SIGUSR1 && ta->value == 0x1234 &&
	      ta->tid == 0);
	CHECK(tb->clock == CLOCK_REALTIME && tb->notify == SIGEV_THREAD_ID && tb->signo == SIGUSR2 && tb->value == 7 &&
	      tb->tid == me);
	CHECK(tc->clock == CLOCK_BOOTTIME && tc->notify == SIGEV_NONE);

	/* more than the record holds: the rest counted, not taken */
	for (int i = 0; i < 40; i++)
		make(CLOCK_MONOTONIC, SIGEV_NONE, 0, 0, 0);
	read_self(text, sizeof text);
	struct shim_posix_timer many[SHIM_POSIX_TIMERS_MAX];
	n = posix_timers_parse(text, many, SHIM_POSIX_TIMERS_MAX, &lost);
	CHECK(n == SHIM_POSIX_TIMERS_MAX && lost == 43 - SHIM_POSIX_TIMERS_MAX);

	/* none: nothing, nothing lost */
	CHECK(posix_timers_parse("", t, 8, &lost) == 0 && lost == 0);
	/* any other text: refused, never half taken */
	const char *bad[] = {
		"ID: 0\n",
		"ID: 0\nsignal: 10/0\nnotify: signal/pid.1\n",
		"ID: 0\nsignal: 10/0\nnotify: loud/pid.1\nClockID: 1\n",
		"ID: 0\nsignal: 10/0\nnotify: signal/grp.1\nClockID: 1\n",
		"ID: 0\nsignal: 10/0\nnotify: signal/pid.1\nClockID: 1\ngarbage\n",
		"Id: 0\nsignal: 10/0\nnotify: signal/pid.1\nClockID: 1\n",
	};
	for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
		if (posix_timers_parse(bad[k], t, 8, &lost) != -1)
			fprintf(stderr, "FAIL taken: %s\n", bad[k]), failures++;
	if (failures) {
		fprintf(stderr, "%d failures\n", failures);
		return 1;
	}
	printf("posixtimers: /proc/self/timers parsed, overflow counted, damaged text refused\n");
	return 0;
}

/* threads.c -- the table of the program's threads (threads.h). */
#include "threads.h"
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <unistd.h>
#include "disable.h"

int threads_same_process(pid_t pid, pid_t tid)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/task/%d", (int)pid, (int)tid);
	return access(p, F_OK) == 0;
}

int task_exists(pid_t tid)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/%d", (int)tid);
	return access(p, F_OK) == 0;
}

struct thr *threads_find(struct sup *s, pid_t tid)
{
	for (int i = 0; i < s->nthr; i++)
		if (s->thr[i].tid == tid)
			return &s->thr[i];
	return NULL;
}

struct thr *threads_add(struct sup *s, pid_t tid)
{
	struct thr *t = threads_find(s, tid);
	if (t)
		return t;
	if (s->nthr == MAX_THREADS) {
		sup_disable(s, "the program has too many threads");
		return NULL;
	}
	t = &s->thr[s->nthr++];
	memset(t, 0, sizeof *t);
	t->tid = tid;
	return t;
}

void threads_remove(struct sup *s, pid_t tid)
{
	struct thr *t = threads_find(s, tid);
	if (t && t != &s->thr[0])
		*t = s->thr[--s->nthr];
}

int threads_all_stopped(const struct sup *s)
{
	for (int i = 0; i < s->nthr; i++)
		if (!s->thr[i].stopped)
			return 0;
	return 1;
}

void threads_resume_all(struct sup *s)
{
	threads_resume_all_as(s, PTRACE_CONT);
}

void threads_resume_all_as(struct sup *s, int request)
{
	for (int i = 0; i < s->nthr; i++) {
		struct thr *t = &s->thr[i];
		if (t->stopped)
			ptrace(t->listening ? PTRACE_LISTEN : request, t->tid, 0, 0);
		t->stopped = 0;
	}
}

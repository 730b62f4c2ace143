/* test_crpm_threads.c -- collective checkpoints of several threads writing one container.
 *
 * NTHREADS threads each own NOBJ objects spread over the same segments (so first writes race
 * on the copy-on-write of one segment and allocations race in the allocator).  In epoch e every
 * thread reallocates one object with a new size and fills all of its objects with e; thread 0
 * also stores e in the container's counter; then all call crpm_checkpoint(c, NTHREADS).
 * Invariant checked after recovery: every object of every thread holds exactly the counter's
 * value -- a checkpoint is one cut across all threads.
 *
 *   test_crpm_threads               epochs in-process, then reopen and check (both modes)
 *   test_crpm_threads kill [N]      the same in victims SIGKILLed at random, N kills per mode
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "prosper/crpm.h"

#define NTHREADS 4
#define NOBJ 48

struct obj {
	uint64_t epoch;
	uint32_t size; /* bytes of fill[] */
	uint32_t pad;
	unsigned char fill[];
};

struct shared { /* root 0 */
	uint64_t epochs_done;
	struct obj *objs[NTHREADS][NOBJ];
};

static crpm_t *ctr;
static struct shared *sh;
static uint64_t run_epochs; /* 0: forever */
static uint64_t start_epoch; /* read before the threads start: thread 0 moves the counter */

static void fill(struct obj *o, uint64_t e)
{
	o->epoch = e;
	memset(o->fill, (int)(e & 0xFF), o->size);
}

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	uint64_t x = (uint64_t)t * 7919 + 1;
	for (uint64_t e = start_epoch + 1;; e++) {
		if (run_epochs && e > run_epochs)
			break;
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		int k = (int)((x >> 33) % NOBJ);
		uint32_t size = 16 + (uint32_t)((x >> 17) % 5000);
		struct obj *o = crpm_malloc(ctr, sizeof *o + size);
		if (!o) {
			fprintf(stderr, "thread %d: %s\n", t, crpm_errormsg());
			exit(1);
		}
		o->size = size;
		crpm_free(ctr, sh->objs[t][k]);
		sh->objs[t][k] = o;
		for (int i = 0; i < NOBJ; i++)
			fill(sh->objs[t][i], e);
		if (t == 0)
			sh->epochs_done = e;
		if (crpm_checkpoint(ctr, NTHREADS)) {
			fprintf(stderr, "thread %d: checkpoint: %s\n", t, crpm_errormsg());
			exit(1);
		}
	}
	return NULL;
}

static crpm_t *open_ctr(const char *path, int mode, int truncate)
{
	crpm_option_t o;
	crpm_init_option(&o);
	o.capacity = 128u << 20;
	o.mode = mode;
	o.truncate = truncate;
	return crpm_open(path, &o);
}

/* run -- open, make the shared state if needed, run the threads. */
static int run(const char *path, int mode, int truncate)
{
	ctr = open_ctr(path, mode, truncate);
	if (!ctr) {
		fprintf(stderr, "open: %s\n", crpm_errormsg());
		return 1;
	}
	sh = crpm_get_root(ctr, 0);
	if (!sh) {
		sh = crpm_malloc(ctr, sizeof *sh);
		memset(sh, 0, sizeof *sh);
		for (int t = 0; t < NTHREADS; t++)
			for (int i = 0; i < NOBJ; i++) {
				sh->objs[t][i] = crpm_malloc(ctr, sizeof(struct obj) + 64);
				sh->objs[t][i]->size = 64;
				fill(sh->objs[t][i], 0);
			}
		crpm_set_root(ctr, 0, sh);
		if (crpm_checkpoint(ctr, 1))
			return 1;
	}
	pthread_t th[NTHREADS];
	start_epoch = sh->epochs_done;
	for (int t = 0; t < NTHREADS; t++)
		pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
	crpm_close(ctr);
	return 0;
}

/* check -- every object holds the committed counter; returns epochs or -1. */
static long check(const char *path, int mode)
{
	crpm_t *c = open_ctr(path, mode, 0);
	if (!c) {
		fprintf(stderr, "reopen: %s\n", crpm_errormsg());
		return -1;
	}
	struct shared *s = crpm_get_root(c, 0);
	long k = s ? (long)s->epochs_done : 0;
	for (int t = 0; s && t < NTHREADS; t++)
		for (int i = 0; i < NOBJ; i++) {
			struct obj *o = s->objs[t][i];
			int bad = o->epoch != (uint64_t)k;
			for (uint32_t j = 0; !bad && j < o->size; j++)
				bad = o->fill[j] != (unsigned char)(k & 0xFF);
			if (bad) {
				fprintf(stderr, "%s mode: thread %d object %d is not at epoch %ld (says %llu)\n",
					mode ? "buffered" : "default", t, i, k, (unsigned long long)o->epoch);
				k = -1;
				goto out;
			}
		}
out:
	crpm_close(c);
	return k;
}

int main(int argc, char **argv)
{
	const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	char path[256];
	int kill_mode = argc >= 2 && !strcmp(argv[1], "kill");
	if (argc == 4 && !strcmp(argv[1], "victim"))
		return run(argv[2], atoi(argv[3]), 0);
	int kills = argc >= 3 ? atoi(argv[2]) : (getenv("PROSPER_LONG") ? 200 : 10);
	srand((unsigned)time(NULL) ^ (unsigned)getpid());
	for (int mode = CRPM_MODE_DEFAULT; mode <= CRPM_MODE_BUFFERED; mode++) {
		snprintf(path, sizeof path, "%s/test-crpm-threads-%d-%d.crpm", dir, (int)getpid(), mode);
		unlink(path);
		if (!kill_mode) {
			run_epochs = 60;
			if (run(path, mode, 1) || check(path, mode) != 60)
				return 1;
			printf("%s mode: %d threads, 60 collective checkpoints, recovered consistently\n",
			       mode ? "buffered" : "default", NTHREADS);
		} else {
			long last = 0;
			for (int r = 0; r < kills; r++) {
				pid_t pid = fork();
				if (pid == 0) {
					char m[8];
					snprintf(m, sizeof m, "%d", mode);
					execl("/proc/self/exe", argv[0], "victim", path, m, (char *)NULL);
					_exit(127);
				}
				struct timespec d = {0, (long)(1000000 + rand() % 50000000)};
				nanosleep(&d, NULL);
				kill(pid, SIGKILL);
				waitpid(pid, NULL, 0);
				long k = check(path, mode);
				if (k < 0 || k < last)
					return 1;
				last = k;
			}
			printf("%s mode: %d threads, %d kills, every recovery one consistent cut (%ld epochs)\n",
			       mode ? "buffered" : "default", NTHREADS, kills, last);
		}
		unlink(path);
	}
	return 0;
}

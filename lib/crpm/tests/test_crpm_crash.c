/* test_crpm_crash.c -- SIGKILL a process that works on a container at random instants; the
 * reopened container must hold EXACTLY the state of its last checkpoint (C1).
 *
 *   test_crpm_crash [--kills N] [--child PROGRAM] [--modes default,buffered] [--tracking LIST]
 *   test_crpm_crash child PATH MODE TRACKING SEED REPORT_FD      (the victim)
 *
 * The victim opens (and so recovers) the container, then runs epochs of crash_workload.h,
 * checkpointing after each and writing the number of epochs done to REPORT_FD once the
 * checkpoint returned.  The parent kills it after a random delay, reopens the container,
 * checks that it holds k epochs with k = the last reported count or one more (the kill may
 * fall between the commit and the report), replays k epochs on a DRAM model and compares every
 * object byte for byte; objects must not overlap.  The next victim continues from the
 * recovered state, so recovery of recovered containers is exercised too.  PROGRAM may be the
 * same source built with bin/prosper-cc (instrumented stores).  PROSPER_LONG=1: more kills.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "crash_workload.h"

static crpm_t *open_ctr(const char *path, int mode, int tracking)
{
	crpm_option_t o;
	crpm_init_option(&o);
	o.capacity = 256ull << 20;
	o.mode = mode;
	o.tracking = tracking;
	return crpm_open(path, &o);
}

static int child(const char *path, int mode, int tracking, uint64_t seed, int fd)
{
	wl_annotate = tracking == CRPM_TRACK_HOOKS && !getenv("CRPM_CHILD_INSTRUMENTED");
	crpm_t *c = open_ctr(path, mode, tracking);
	if (!c) {
		fprintf(stderr, "victim: %s\n", crpm_errormsg());
		return 1;
	}
	struct wl_state *s = crpm_get_root(c, 0);
	if (!s) {
		s = crpm_malloc(c, sizeof *s);
		write_bytes(s, 0, sizeof *s);
		write_word(&s->seed, &seed, sizeof seed);
		crpm_set_root(c, 0, s);
		if (crpm_checkpoint(c, 1))
			return 1;
	}
	for (;;) {
		uint64_t e = s->epochs_done;
		if (wl_epoch(c, s, NULL, s->seed, e)) {
			fprintf(stderr, "victim: %s\n", crpm_errormsg());
			return 1;
		}
		e++;
		write_word(&s->epochs_done, &e, sizeof e);
		if (crpm_checkpoint(c, 1)) {
			fprintf(stderr, "victim: checkpoint: %s\n", crpm_errormsg());
			return 1;
		}
		if (write(fd, &e, sizeof e) != sizeof e)
			return 1;
	}
}

static int cmp_addr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return x < y ? -1 : x > y;
}

/* verify -- the recovered container against the model; returns epochs held or -1. */
static long verify(const char *path, int mode, uint64_t seed, uint64_t reported, char *why, size_t whylen)
{
	crpm_t *c = open_ctr(path, mode, CRPM_TRACK_AUTO);
	if (!c) {
		snprintf(why, whylen, "reopen: %s", crpm_errormsg());
		return -1;
	}
	long result = -1;
	struct wl_state *s = crpm_get_root(c, 0);
	struct wl_model m;
	memset(&m, 0, sizeof m);
	uint64_t k = s ? s->epochs_done : 0;
	if (!s) {
		/* Killed before the first checkpoint of a new container. */
		result = reported == 0 ? 0 : -1;
		if (result < 0)
			snprintf(why, whylen, "no state, but %llu epochs were reported", (unsigned long long)reported);
		goto out;
	}
	if (s->seed != seed) {
		snprintf(why, whylen, "seed %llu, expected %llu", (unsigned long long)s->seed, (unsigned long long)seed);
		goto out;
	}
	if (k != reported && k != reported + 1) {
		snprintf(why, whylen, "holds %llu epochs, %llu were reported committed", (unsigned long long)k,
			 (unsigned long long)reported);
		goto out;
	}
	for (uint64_t e = 0; e < k; e++)
		wl_epoch(NULL, NULL, &m, seed, e);
	uintptr_t spans[NSLOTS][2];
	int n = 0;
	for (int i = 0; i < NSLOTS; i++) {
		if ((s->obj[i] == NULL) != (m.obj[i] == NULL) || s->size[i] != m.size[i]) {
			snprintf(why, whylen, "epoch %llu: slot %d holds %u bytes, model %u", (unsigned long long)k, i,
				 s->obj[i] ? s->size[i] : 0, m.size[i]);
			goto out;
		}
		if (!m.obj[i])
			continue;
		if (memcmp(s->obj[i], m.obj[i], m.size[i])) {
			size_t at = 0;
			while (s->obj[i][at] == m.obj[i][at])
				at++;
			snprintf(why, whylen, "epoch %llu: slot %d differs at byte %zu of %u", (unsigned long long)k, i, at,
				 m.size[i]);
			goto out;
		}
		spans[n][0] = (uintptr_t)s->obj[i];
		spans[n][1] = (uintptr_t)s->obj[i] + m.size[i];
		n++;
	}
	qsort(spans, (size_t)n, sizeof spans[0], cmp_addr);
	for (int i = 1; i < n; i++)
		if (spans[i][0] < spans[i - 1][1]) {
			snprintf(why, whylen, "epoch %llu: two objects overlap", (unsigned long long)k);
			goto out;
		}
	result = (long)k;
out:
	for (int i = 0; i < NSLOTS; i++)
		free(m.obj[i]);
	crpm_close(c);
	return result;
}

static int run_config(const char *prog, const char *dir, int mode, int tracking, int kills, uint64_t seed)
{
	char path[256];
	snprintf(path, sizeof path, "%s/test-crpm-crash-%d-%d-%d.crpm", dir, (int)getpid(), mode, tracking);
	unlink(path);
	uint64_t reported = 0, max_seen = 0;
	int recoveries = 0;
	for (int round = 0; round < kills; round++) {
		int pfd[2];
		if (pipe(pfd))
			return 1;
		pid_t pid = fork();
		if (pid == 0) {
			close(pfd[0]);
			char a_mode[16], a_track[16], a_seed[32], a_fd[16];
			snprintf(a_mode, sizeof a_mode, "%d", mode);
			snprintf(a_track, sizeof a_track, "%d", tracking);
			snprintf(a_seed, sizeof a_seed, "%llu", (unsigned long long)seed);
			snprintf(a_fd, sizeof a_fd, "%d", pfd[1]);
			execl(prog, prog, "child", path, a_mode, a_track, a_seed, a_fd, (char *)NULL);
			_exit(127);
		}
		close(pfd[1]);
		/* Kill anywhere: in recovery, mid-epoch, mid-checkpoint (delays of 0.5..60 ms). */
		struct timespec d = {0, (long)(500000 + (uint64_t)rand() % 60000000)};
		nanosleep(&d, NULL);
		kill(pid, SIGKILL);
		uint64_t v;
		while (read(pfd[0], &v, sizeof v) == sizeof v)
			reported = v;
		close(pfd[0]);
		int st;
		waitpid(pid, &st, 0);
		/* a victim killed while it created the pool leaves the file it was building under its
		 * temporary name (the pool appears whole or not at all): not ours to keep */
		char building[300];
		snprintf(building, sizeof building, "%s/.test-crpm-crash-%d-%d-%d.crpm.creating-%d", dir, (int)getpid(), mode,
			 tracking, (int)pid);
		unlink(building);
		if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)) {
			fprintf(stderr, "victim exited with status %d before it was killed\n", st);
			return 1;
		}
		char why[256] = "";
		long k = verify(path, mode, seed, reported, why, sizeof why);
		if (k < 0) {
			fprintf(stderr, "%s mode, tracking %d, kill %d: %s\n", mode ? "buffered" : "default", tracking,
				round, why);
			return 1;
		}
		reported = (uint64_t)k; /* the next victim continues from here */
		if ((uint64_t)k > max_seen)
			max_seen = (uint64_t)k;
		recoveries++;
	}
	printf("%s mode, tracking %d: %d kills, each recovered exactly its last checkpoint (%llu epochs at the end)\n",
	       mode ? "buffered" : "default", tracking, recoveries, (unsigned long long)max_seen);
	unlink(path);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 7 && !strcmp(argv[1], "child"))
		return child(argv[2], atoi(argv[3]), atoi(argv[4]), strtoull(argv[5], NULL, 10), atoi(argv[6]));
	const char *prog = "/proc/self/exe", *modes = "default,buffered", *trackings = "0,1,2,3";
	int kills = getenv("PROSPER_LONG") ? 300 : 12;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--kills") && i + 1 < argc)
			kills = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--child") && i + 1 < argc)
			prog = argv[++i];
		else if (!strcmp(argv[i], "--modes") && i + 1 < argc)
			modes = argv[++i];
		else if (!strcmp(argv[i], "--tracking") && i + 1 < argc)
			trackings = argv[++i];
		else {
			fprintf(stderr, "usage: %s [--kills N] [--child PROGRAM] [--modes default,buffered] [--tracking 0,1,2,3]\n",
				argv[0]);
			return 2;
		}
	}
	char self[4096];
	if (!strcmp(prog, "/proc/self/exe")) {
		ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
		if (n <= 0)
			return 1;
		self[n] = 0;
		prog = self;
	}
	const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	uint64_t seed = (uint64_t)time(NULL) ^ (uint64_t)getpid();
	srand((unsigned)seed);
	printf("seed %llu\n", (unsigned long long)seed);
	int rc = 0;
	for (int mode = 0; mode <= 1; mode++) {
		if (!strstr(modes, mode ? "buffered" : "default"))
			continue;
		for (int t = 0; t <= 3; t++) {
			char tk[4];
			snprintf(tk, sizeof tk, "%d", t);
			if (strstr(trackings, tk) && !(t == CRPM_TRACK_PAGES && mode == CRPM_MODE_DEFAULT))
				rc |= run_config(prog, dir, mode, t, kills, seed + (uint64_t)(mode * 3 + t));
		}
	}
	return rc;
}

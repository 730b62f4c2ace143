/* stopclock.h -- the supervisor's one clock (stopclock_now: CLOCK_MONOTONIC, in seconds), and
 * where the time of a stop goes: each step of a capture adds its wall time to one of a few
 * phases, summed over the run (`stop_us` in --stats-json: the mean per checkpoint).
 *
 * The phases partition the capture, so they add up to about mean_stop_ms; the fixed part of a
 * stop -- what it costs whatever the program wrote -- is all but `dirty` (the tracker's scans)
 * and `read` (the copy of the written pages), which grow with what was written.
 */
#ifndef PROSPER_SUP_STOPCLOCK_H
#define PROSPER_SUP_STOPCLOCK_H
#include <time.h>

enum stop_phase {
	STOP_THREADS,  /* registers and masks of every thread; timers, pending signals, limits */
	STOP_MAPS,     /* /proc/PID/maps read and parsed */
	STOP_FOLLOW,   /* regions follow the map: added, resized, removed, their tracking checked */
	STOP_DIRTY,    /* the tracker: which pages were written (and re-protected) */
	STOP_READ,     /* the written pages copied out of the program */
	STOP_FDS,      /* /proc/PID/fd and fdinfo of every process */
	STOP_BLOB,     /* the epoch's record: status, cwd, the map, files, fds */
	STOP_METADATA, /* the record's changes into the metadata log */
	STOP_TREE,     /* the rest: processes gone, sockets, pipes, shared memory */
	STOP_NPHASES
};

static inline double stopclock_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Adds the time since *t to phase p of sums and starts the next lap: *t = now. */
static inline void stopclock_lap(double *sums, enum stop_phase p, double *t)
{
	double n = stopclock_now();
	sums[p] += n - *t;
	*t = n;
}

#endif

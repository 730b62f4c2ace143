/* worker.h -- the commit half of each checkpoint, on a thread of its own (worker.c).
 *
 * sup_capture() runs while the program is stopped; sup_commit() then runs here while it goes on.
 * One commit at a time: the loop waits for the commit under way before the next capture, before
 * serving an NVM request (the pool has one user at a time) and at the end.  Each finished commit
 * writes a byte to done_fd[1] so that the loop can poll for it beside its signalfd.
 */
#ifndef PROSPER_SUP_WORKER_H
#define PROSPER_SUP_WORKER_H
#include <pthread.h>
#include "sup.h"

struct worker {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int busy, quit, rc;
	char why[400];  /* with rc: why the commit failed, said in the thread that saw it (why.h) */
	int done_fd[2]; /* non-blocking; [0] is -1 when the thread could not be started */
	struct sup *s;
};

/* Start the thread; 0 or -1 (then done_fd[0] == -1). */
int worker_start(struct worker *w, struct sup *s);
/* Is a commit under way? */
int worker_busy(struct worker *w);
/* Wait for the commit under way, if any; its result (0 or a negative errno), and why. */
int worker_wait(struct worker *w, char *why, size_t whylen);
/* Hand the captured checkpoint (s->cut.batch) to the thread. */
void worker_start_commit(struct worker *w);
/* Wait for the commit under way and end the thread; the last commit's result, and why. */
int worker_stop(struct worker *w, char *why, size_t whylen);

/* sup_commit(), its time added to the statistics (also used without the thread, by --verify);
 * why said on failure. */
int worker_timed_commit(struct sup *s, char *why, size_t whylen);

#endif

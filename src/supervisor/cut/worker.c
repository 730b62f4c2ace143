/* worker.c -- the commit thread (worker.h). */
#include "worker.h"
#include "tree.h"
#include "stopclock.h"
#include "filetrack.h"
#include "snapshot.h"
#include "why.h"
#include <string.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

/* The cut's copy-on-write views (snapshot.h) checked, what they override of a pre-copy read:
 * 0, or the first failure.  The commit reads the rest of each, a window at a time. */
static int check_views(struct tree *t, char *why, size_t whylen)
{
	int rc = 0;
	for (int i = 0; i < t->cut.n && !rc; i++)
		rc = snapshot_read(t->cut.members[i], why, whylen);
	return rc;
}

static void end_views(struct tree *t)
{
	for (int i = 0; i < t->cut.n; i++)
		snapshot_drop(t->cut.members[i]);
}

int worker_timed_commit(struct sup *s, char *why, size_t whylen)
{
	double t0 = stopclock_now();
	int rc = check_views(s->tree, why, whylen);
	if (rc)
		; /* why said */
	else if ((rc = filetrack_before_durable(s->tree)) != 0)
		WHY_SAY("the file-undo journal in %s cannot be flushed", s->tree->files.dir);
	else if ((rc = tree_commit(s->tree, why, whylen)) != 0)
		WHY_SAY("%s", prosper_pool_errormsg()); /* the pool's message is this thread's */
	end_views(s->tree); /* ended by their windows' end; here too when the commit failed before */
	s->tree->stats.commit_total += stopclock_now() - t0;
	if (!rc) {
		filetrack_committed(s->tree); /* before the durable copy: it is tagged with this cut */
		tiers_after_commit(&s->tree->tiers, s->tree->pool, 0); /* outside commit_total: the copy is its own */
		tree_stage_ahead(s->tree); /* with --verify in the stop, so that the oracle sees this path too */
	}
	return rc;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->busy && !w->quit)
			pthread_cond_wait(&w->cv, &w->mu);
		if (!w->busy)
			break;
		pthread_mutex_unlock(&w->mu);
		char why[sizeof w->why] = "";
		int rc = worker_timed_commit(w->s, why, sizeof why);
		pthread_mutex_lock(&w->mu);
		w->rc = rc;
		memcpy(w->why, why, sizeof why);
		w->busy = 0;
		pthread_cond_broadcast(&w->cv);
		if (write(w->done_fd[1], "c", 1) < 0) {
			/* the pipe is non-blocking and drained by the loop: a full pipe already says "done" */
		}
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

int worker_start(struct worker *w, struct sup *s)
{
	*w = (struct worker){ .s = s };
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	if (pipe2(w->done_fd, O_CLOEXEC | O_NONBLOCK) != 0)
		goto fail;
	if (pthread_create(&w->th, NULL, worker_main, w) != 0) {
		close(w->done_fd[0]);
		close(w->done_fd[1]);
		goto fail;
	}
	return 0;
fail:
	w->done_fd[0] = w->done_fd[1] = -1;
	return -1;
}

int worker_busy(struct worker *w)
{
	pthread_mutex_lock(&w->mu);
	int b = w->busy;
	pthread_mutex_unlock(&w->mu);
	return b;
}

int worker_wait(struct worker *w, char *why, size_t whylen)
{
	pthread_mutex_lock(&w->mu);
	while (w->busy)
		pthread_cond_wait(&w->cv, &w->mu);
	int rc = w->rc;
	if (rc)
		snprintf(why, whylen, "%s", w->why);
	w->rc = 0;
	pthread_mutex_unlock(&w->mu);
	return rc;
}

void worker_start_commit(struct worker *w)
{
	pthread_mutex_lock(&w->mu);
	w->busy = 1;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

int worker_stop(struct worker *w, char *why, size_t whylen)
{
	int rc = worker_wait(w, why, whylen);
	pthread_mutex_lock(&w->mu);
	w->quit = 1;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->th, NULL);
	close(w->done_fd[0]);
	close(w->done_fd[1]);
	return rc;
}

/* readers.c -- a stopped process's memory read by every core at once (readers.h). */
#include "readers.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "procfs.h"

struct part {
	struct iov_pairs pairs;
	pid_t pid;
	uint64_t bad;
	int rc, err;
};

static struct part parts[READERS_MAX];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go = PTHREAD_COND_INITIALIZER, done = PTHREAD_COND_INITIALIZER;
static unsigned long generation;  /* one per split read: a helper reads its part once per value */
static int pending;               /* helpers' parts not read yet in this generation */
static int helpers = -1;          /* started; -1: not tried yet */

static void read_part(struct part *p)
{
	p->bad = 0;
	p->rc = proc_mem_readv(p->pid, p->pairs.local, p->pairs.remote, p->pairs.n, &p->bad);
	p->err = errno;
}

static void *helper_main(void *arg)
{
	struct part *p = arg;
	unsigned long seen = 0;
	pthread_mutex_lock(&mu);
	for (;;) {
		while (generation == seen)
			pthread_cond_wait(&go, &mu);
		seen = generation;
		if (!p->pairs.n) /* not needed for this read */
			continue;
		pthread_mutex_unlock(&mu);
		read_part(p);
		pthread_mutex_lock(&mu);
		if (--pending == 0)
			pthread_cond_signal(&done);
	}
	return NULL;
}

static void start_helpers(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int want = cpus > READERS_MAX ? READERS_MAX - 1 : cpus > 1 ? (int)cpus - 1 : 0;
	helpers = 0;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old); /* signals stay the supervisor's main thread's */
	for (int i = 1; i <= want; i++) {
		pthread_t t;
		pthread_attr_t a;
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&a, 64 << 10);
		int ok = pthread_create(&t, &a, helper_main, &parts[i]) == 0;
		pthread_attr_destroy(&a);
		if (!ok)
			break;
		helpers++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

int iov_pairs_add(struct iov_pairs *l, void *local, void *remote, size_t len)
{
	if (l->n == l->cap) {
		size_t c = l->cap ? 2 * l->cap : 1024;
		struct iovec *lo = realloc(l->local, c * sizeof *lo);
		if (!lo)
			return -ENOMEM;
		l->local = lo;
		struct iovec *re = realloc(l->remote, c * sizeof *re);
		if (!re)
			return -ENOMEM; /* local is larger than cap says: harmless */
		l->remote = re;
		l->cap = c;
	}
	l->local[l->n] = (struct iovec){ local, len };
	l->remote[l->n] = (struct iovec){ remote, len };
	l->n++;
	return 0;
}

/* Cut the pairs into k parts of about total / k bytes each, a pair cut at the boundary. */
static int split(struct iovec *local, struct iovec *remote, size_t n, uint64_t total, int k)
{
	int p = 0;
	uint64_t in_part = 0, share = (total + k - 1) / k;
	for (int i = 0; i < k; i++)
		parts[i].pairs.n = 0;
	for (size_t i = 0; i < n; i++) {
		char *l = local[i].iov_base, *r = remote[i].iov_base;
		size_t len = remote[i].iov_len;
		while (len) {
			size_t take = p == k - 1 || share - in_part >= len ? len : (size_t)(share - in_part);
			if (iov_pairs_add(&parts[p].pairs, l, r, take) != 0)
				return -ENOMEM;
			l += take, r += take, len -= take;
			in_part += take;
			if (in_part >= share && p < k - 1)
				p++, in_part = 0;
		}
	}
	return 0;
}

int readers_readv(pid_t pid, struct iovec *local, struct iovec *remote, size_t n, uint64_t total, uint64_t *bad)
{
	pthread_mutex_lock(&mu);
	if (helpers < 0)
		start_helpers();
	int k = helpers + 1;
	pthread_mutex_unlock(&mu);
	if (k > 1 && total / READERS_SPLIT_MIN + 1 < (uint64_t)k)
		k = (int)(total / READERS_SPLIT_MIN) + 1;
	if (k < 2 || split(local, remote, n, total, k) != 0)
		return proc_mem_readv(pid, local, remote, n, bad) ? -EIO : 1;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < k; i++)
		parts[i].pid = pid;
	for (int i = k; i <= helpers; i++)
		parts[i].pairs.n = 0;
	pending = 0;
	for (int i = 1; i <= helpers; i++)
		pending += parts[i].pairs.n != 0;
	generation++;
	pthread_cond_broadcast(&go);
	pthread_mutex_unlock(&mu);
	read_part(&parts[0]);
	pthread_mutex_lock(&mu);
	while (pending)
		pthread_cond_wait(&done, &mu);
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < k; i++)
		if (parts[i].rc) {
			*bad = parts[i].bad;
			errno = parts[i].err;
			return -EIO;
		}
	return k;
}

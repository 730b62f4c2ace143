/* altchild -- alternate signal stacks (sigaltstack) in a forked child process: the child's main
 * thread sets one once; each of PHASES phases starts a worker thread that sets its own and lives
 * into the next phase.  As it works, each thread asks the kernel for its stack now and then
 * (sigaltstack(NULL, &old)) and counts the answers that are not the stack it set ("lost"); at
 * its end it sends itself SIGUSR1, whose handler (SA_ONSTACK) counts whether it ran on that stack
 * ("on"/"off").  Natively "off" and "lost" are 0.  The workers of later phases are born after a
 * first resume: a second kill and resume shows whether the resumed child's stacks are recorded.
 * Signals are few: a checkpoint taken while a thread is in its handler would give the stack back
 * at the handler's return (sigreturn) and hide a loss.  The parent only waits for the child.
 * usage: altchild PHASES ROUNDS */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define ALT_BYTES (64 << 10)

static __thread char *alt_lo;
static __thread volatile long on, off;

static void handler(int sig)
{
	char here;
	stack_t ss;
	(void)sig;
	if (alt_lo && &here >= alt_lo && &here < alt_lo + ALT_BYTES && sigaltstack(NULL, &ss) == 0 &&
	    (ss.ss_flags & SS_ONSTACK))
		on++;
	else
		off++;
}

struct work {
	long rounds, phase;
	uint64_t x, sum;
	long on, off, lost;
	pthread_t t;
};

static void set_altstack(void)
{
	alt_lo = malloc(ALT_BYTES);
	stack_t ss = { .ss_sp = alt_lo, .ss_size = ALT_BYTES, .ss_flags = 0 };
	if (!alt_lo || sigaltstack(&ss, NULL) != 0)
		abort();
}

/* Is the thread's alternate stack still the one it set? */
static int kept(void)
{
	stack_t ss;
	return sigaltstack(NULL, &ss) == 0 && ss.ss_sp == alt_lo && ss.ss_size == ALT_BYTES && !(ss.ss_flags & SS_DISABLE);
}

static void work(struct work *w)
{
	for (long r = 0; r < w->rounds; r++) {
		for (int k = 0; k < 4000; k++) {
			w->x ^= w->x << 13, w->x ^= w->x >> 7, w->x ^= w->x << 17;
			w->sum += w->x >> 40;
		}
		if (r % 64 == 0 && !kept())
			w->lost++;
	}
}

/* A last look at the stack, and a signal handled on it. */
static void finish(struct work *w)
{
	w->lost += !kept();
	long on0 = on, off0 = off;
	pthread_kill(pthread_self(), SIGUSR1);
	w->on += on - on0, w->off += off - off0;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t moved = PTHREAD_COND_INITIALIZER;
static long main_done; /* the phases the main thread has done */

/* The worker of a phase ends only after the main thread's next phase: every checkpoint, even one
 * taken as the next worker is born, holds a worker whose stack is set and still to be looked at. */
static void *worker(void *arg)
{
	struct work *w = arg;
	set_altstack();
	work(w);
	pthread_mutex_lock(&lock);
	while (main_done < w->phase + 2)
		pthread_cond_wait(&moved, &lock);
	pthread_mutex_unlock(&lock);
	finish(w);
	return NULL;
}

static void main_did(long phases)
{
	pthread_mutex_lock(&lock);
	main_done = phases;
	pthread_cond_broadcast(&moved);
	pthread_mutex_unlock(&lock);
}

static void joined(struct work *w, struct work *all)
{
	pthread_join(w->t, NULL);
	all->sum += w->sum, all->on += w->on, all->off += w->off, all->lost += w->lost;
}

static int child(long phases, long rounds)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sa.sa_flags = SA_ONSTACK | SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	set_altstack();
	struct work m = { .rounds = rounds, .x = 88172645463325252ull }, all = { 0 }, ws[2];
	for (long p = 0; p < phases; p++) {
		struct work *w = &ws[p % 2];
		*w = (struct work){ .rounds = rounds, .phase = p, .x = 2463534242ull + (uint64_t)p };
		if (pthread_create(&w->t, NULL, worker, w) != 0)
			return 1;
		work(&m);
		finish(&m);
		main_did(p + 1);
		if (p > 0)
			joined(&ws[(p - 1) % 2], &all);
	}
	main_did(phases + 1);
	if (phases > 0)
		joined(&ws[(phases - 1) % 2], &all);
	printf("%016llx %016llx on %ld %ld off %ld %ld lost %ld %ld\n", (unsigned long long)m.sum,
	       (unsigned long long)all.sum, m.on, all.on, m.off, all.off, m.lost, all.lost);
	return 0;
}

int main(int argc, char **argv)
{
	long phases = argc > 1 ? atol(argv[1]) : 100;
	long rounds = argc > 2 ? atol(argv[2]) : 1500;
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		int rc = child(phases, rounds);
		fflush(stdout);
		_exit(rc);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid)
		return 1;
	printf("child %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st));
	return 0;
}

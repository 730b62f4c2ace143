/* pidns.h -- the program's own process ids: a pid namespace of its own (pidns.c).
 *
 * The program runs as a process of a pid namespace made for it, under a small init (its process
 * 1, forked from the supervisor) that reaps the orphans of the program's children and, when
 * asked, sets the id the next process or thread of the namespace gets (ns_last_pid).  So a resume
 * gives the program and each of its threads the id it had at the checkpoint: getpid(), the tids
 * glibc caches, the owners written into locks and pid files stay true (docs/run-resume.md
 * "Process and thread ids").
 *
 * Invariants
 *   - The program sees its namespace's /proc (its own mount namespace, proc mounted again), so
 *     /proc/<getpid()> is itself; the supervisor keeps the system's view and uses system ids.
 *   - If the supervisor dies, init dies (parent-death signal, and the end of its control socket)
 *     and with it, by the kernel, every process of the namespace: nothing runs unsupervised.
 *   - After the program ended normally, init stays until the last process of the namespace (a
 *     background child the program left behind) has ended too, as those would natively.
 *   - Where no namespace can be made (no CAP_SYS_ADMIN -- an ordinary user gets it in a user
 *     namespace first, userns.h -- /proc cannot be mounted, --host-pids),
 *     `on` is 0, `why` says why, and the program runs with the system's ids, as before.
 */
#ifndef PROSPER_SUP_PIDNS_H
#define PROSPER_SUP_PIDNS_H
#include <stddef.h>
#include <sys/types.h>

struct pidns {
	int on;
	pid_t init;     /* its init, by the system's id */
	int ctl;        /* our end of init's control socket */
	int nsfd, ours; /* the namespace, and our own (a process whose children go into another pid
	                 * namespace cannot make threads: we are in it only around pidns_fork) */
	char why[160];  /* when off: why */
};

/* Make the namespace: the processes we fork from here on are in it.  0 (on) or -1 (off, why). */
int pidns_enter(struct pidns *ns);

/* fork(), the child in the namespace when it is on.  As fork(). */
pid_t pidns_fork(struct pidns *ns);

/* In the forked program, before its exec: its own mount namespace with the namespace's /proc.
 * 0, or -1 with errno. */
int pidns_child_setup(void);

/* Ask that the next process or thread made in the namespace gets id `id` (if it is free then).
 * 0 or a negative errno. */
int pidns_next(struct pidns *ns, pid_t id);

/* The program has ended: init stays only while processes it left behind still run. */
void pidns_release(struct pidns *ns);

/* The id thread `tid` (a system id) has in its own namespace: what getpid()/gettid() return
 * there.  0 if it cannot be read. */
pid_t pidns_own_id(pid_t tid);

#endif

/* userns.h -- an ordinary user's supervisor in a user namespace of its own (userns.c).
 *
 * The program's own process ids (pidns.h) need a pid namespace, and making one needs
 * CAP_SYS_ADMIN.  An ordinary user has it in a user namespace it makes: the supervisor's process
 * makes one, with a pid namespace and a mount namespace owned by it, and forks; the child is
 * process 1 of that pid namespace and goes on as the supervisor, with the capabilities the
 * namespace gives it.  pidns.c then makes the program's namespace inside it exactly as for root
 * (a supervisor must stay in its own active pid namespace to make threads; entering a namespace
 * and coming back needs CAP_SYS_ADMIN over both, which it has over these two and never over the
 * system's).  The process the user started waits for it and exits as it does.
 *
 * What the program sees (docs/run-resume.md "An ordinary user"): its own uid and gid mapped to
 * themselves -- its files stay its own, getuid() is what it is natively -- every other owner as
 * the overflow id (nobody), no supplementary groups, no capabilities (an exec drops them for a
 * uid other than 0), set-user-ID programs without effect.
 *
 * Invariants
 *   - Nothing runs unsupervised: the child dies with the parent (parent-death signal, checked
 *     once more after it is set) and the kernel ends the namespace with its process 1, the
 *     supervisor; `kill -9` of the parent alone, or of the job's group, ends all of it.
 *   - The child's /proc is its namespace's, mounted again in its own mount namespace: the ids
 *     it reads there and the ids it uses are one.
 *   - Where the system forbids the namespace (user.max_user_namespaces 0, Debian's
 *     kernel.unprivileged_userns_clone 0, a security module), userns_enter says why and changes
 *     nothing: the caller refuses (no-pid-namespace) before anything starts.
 */
#ifndef PROSPER_SUP_USERNS_H
#define PROSPER_SUP_USERNS_H
#include <stddef.h>

/* Does this process lack CAP_SYS_ADMIN (an ordinary user: the namespace is needed)? */
int userns_needed(void);

/* Make the namespaces and fork.  In the child (the supervisor from here on): 0.  In the parent:
 * never returns, it exits with the child's status (128 + signal when it was killed).  With why:
 * USERNS_DENIED if the namespace cannot be made (nothing was changed), USERNS_BROKEN if it was
 * made but cannot be used (this process must not go on: it is in it). */
enum { USERNS_DENIED = -1, USERNS_BROKEN = -2 };
int userns_enter(char *why, size_t whylen);

#endif

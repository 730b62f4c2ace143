/* tree.h -- the program as a tree of processes (tree.c, tree_procs.c; docs/run-resume.md "Process trees").
 *
 * Every process the program forks is traced and checkpointed with it: one checkpoint is one cut
 * of every process (all stopped), written as one pool epoch under one commit.  tree->procs[0] is
 * the program's first process; the others are the processes it and they forked, each a struct
 * sup of its own, parents before their children.  A process's regions are named "p<ID>.m<ADDR>"
 * and its metadata region "metadata.<ID>", ID being its id in the program's pid namespace: the id
 * a resume gives it back.  The epoch blob of a cut of several processes is a tree blob
 * (tree_image.h) holding each one's blob and the bytes in flight in the pipes between them.
 *
 * Processes are followed only when the program has its own pid namespace (pidns.h): without it
 * the ids a parent holds could not be given back, and the program's children run unsupervised
 * while the cut waits for them (children.h), as before.
 *
 * Invariants
 *   - A cut includes every process of the program or is not taken: it waits while a process
 *     shares its parent's memory (vfork, posix_spawn: until it execs, then the new image joins
 *     the cut; loop.c gives up after VFORK_WAIT), or is not tracked yet; and while the program
 *     uses NVM memory and has more than one process.
 *   - A process that exited leaves the pool at the next cut: its regions leave with that epoch,
 *     never while a commit is under way.  Until its parent waits for it, the cuts keep its wait
 *     status (tree_image.h); then it leaves the tree.
 *   - Every process is traced with the same options as the first: its children are seen too.
 */
#ifndef PROSPER_SUP_TREE_H
#define PROSPER_SUP_TREE_H
#include "sup.h"

/* A new process record of the tree (the arrays of struct sup allocated, cfg copied), appended
 * to tree->procs; NULL when out of memory. */
struct sup *tree_proc_new(struct tree *t, const struct sup_config *cfg);
/* The process of thread tid (and the thread, if known), or NULL. */
struct sup *tree_find(struct tree *t, pid_t tid, struct thr **thr);
/* Child process `child` of `parent` (its fork event or its first stop, whichever comes first):
 * its record, made now if new.  NULL: it cannot be followed (checkpointing is then disabled). */
struct sup *tree_add_child(struct tree *t, struct sup *parent, pid_t child);
/* At the first stop of a forked child: give it a tracker (a userfaultfd it makes by an injected
 * system call, taken with pidfd_getfd) unless it shares its parent's memory.  0 or -1 (why). */
int tree_start_child(struct sup *m, char *why, size_t whylen);
/* Can a cut include every process now?  1, or 0 with the first reason it cannot. */
int tree_cut_ready(struct tree *t, const char **why);
/* Before a due cut stops the program: does an fd it held at the last stop still hold what a cut
 * cannot keep (fdkind.h `unread`: inotify events it has not read), within the cut's wait for it?
 * Then the cut is put off, without a stop; the stop looks again (tree_capture: -EAGAIN). */
int tree_unread_waits(struct tree *t, double now);
/* Processes that are gone (waited for): out of the tree, their regions out of the next epoch.
 * Only between commits.  0 or a pool error. */
int tree_drop_gone(struct tree *t);
/* One checkpoint of every process (the program stopped): sup_capture of each, then the epoch
 * blob.  0 or a negative errno, with why when there is more to say (why.h). */
int tree_capture(struct tree *t, char *why, size_t whylen);
/* The commit of what tree_capture staged (on the worker).  0 or a negative errno. */
int tree_commit(struct tree *t, char *why, size_t whylen);
/* After a commit, on the worker: each process's staging made ready for the next stops
 * (stage_ahead). */
void tree_stage_ahead(struct tree *t);
/* --verify: the oracle over every process. */
int tree_verify(struct tree *t);
/* tree_restore.c: resume of a checkpoint of several processes -- the first one relaunched and
 * stopped in its shim, the others are forked again by their parents and stopped in theirs,
 * tree->procs in the checkpoint's order, every pipe and socketpair made again.  0, or -1 with why. */
int tree_relaunch(struct sup *s, char *why, size_t whylen);
/* The program ended: let the processes it left behind go on untraced. */
void tree_release(struct tree *t);

#endif

/* outhold.h -- external synchrony: what the program sends to the world outside it reaches the
 * outside only once the checkpoint that covers it has committed (docs/run-resume.md, "Output held
 * until its checkpoint commits").  A kill at any instant then neither repeats output (the resume
 * does not show again what the outside saw) nor shows output of work the resume undoes: a
 * server's acknowledgement always names work that survives.
 *
 * What is held, and how:
 *   - the run's stdout/stderr that are pipes or FIFOs: before anything is launched, our fd 1/2 are
 *     replaced by pipes of ours (outhold_interpose), which the program inherits and writes at full
 *     speed; a reader thread moves what comes into the hold, and each cut, the program stopped,
 *     drains the rest: the hold then has every byte written before the cut;
 *   - the run's stdout/stderr that are terminals or sockets (also through /dev/tty or another fd
 *     of the same file), and stream connections -- TCP or unix -- whose peer is outside the
 *     program: at the file filter's stop (filefilter.h; FILTER_SENDS adds sendto, sendmsg and
 *     shutdown) the bytes of a write, writev, sendto or sendmsg without an address or ancillary
 *     data, or sendfile (read from its file by us) are copied into the hold and the call is
 *     skipped, its result the count.  A shutdown of a connection with bytes held is held behind
 *     them.  A releaser thread writes the held bytes to our fd, or to our copy of the connection.
 *
 * Invariants
 *   - The held bytes are one stream, numbered from 0 at the run's start and on across resumes, in
 *     the order they entered the hold, whatever the target: released in that order.
 *   - A byte is released only once a cut taken after it entered the hold has committed (or
 *     checkpointing has stopped, or the program ended).
 *   - At each cut's capture the bytes not released yet are written to <journal dir>/<seq>.out (the
 *     cut's seq, filetrack.h) before the cut can commit; a resume from cut C shows, before the
 *     program runs, the stdout/stderr bytes of C.out that the killed run had not shown (a
 *     connection's end with the killed run).  Files older than the newest committed cut go.
 *   - What was shown is said by <journal dir>/released (a mapped 8-byte stream offset), stored
 *     *before* each release write, which is made only when the reader has room for all of it
 *     (poll; to a pipe PIPE_BUF bytes, or more into an empty one, non-blocking): all or nothing.
 *     A kill during the write lets it complete; one between the store and the write's entry into
 *     the kernel (a few instructions) loses that write's bytes.  Nothing is ever shown twice.
 *   - A reader gone (EPIPE) ends holding for that target: its held bytes are dropped, and the
 *     program's next write there fails as it would have (an interposed pipe's reader is closed).
 *   - Checkpointing stopped (disable.h; the threads look every 50 ms) or the program ended:
 *     everything held is released.
 */
#ifndef PROSPER_SUP_OUTHOLD_H
#define PROSPER_SUP_OUTHOLD_H
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>
#include "sup.h"

#define OUTHOLD_BACKLOG (16u << 20) /* committed bytes the reader has not taken before writes wait */
#define OUTHOLD_MAX_WRITE (1u << 20) /* a longer write is held in part: a short write, as a pipe may give */

/* Are bytes held that no cut taken yet covers (what the outside waits for the next cut to see)?
 * 0; OUTHOLD_WAITS: some, to a pipe or FIFO; OUTHOLD_WAITS_URGENT (with it or not): some go to
 * a connection or a terminal (someone waits for a reply), or more than OUTHOLD_BACKLOG bytes. */
#define OUTHOLD_WAITS 1
#define OUTHOLD_WAITS_URGENT 2
int outhold_waiting(const struct tree *t);

/* Are the writes to our fd n (1 or 2) held call by call -- a terminal or a socket -- with holding
 * wanted (--external-sync on, the default, and the file filter on)?  Then the launch filter must
 * not let them through (filetrack_filter).  An interposed pipe's writes need no stop. */
int outhold_holds_own(const struct tree *t, int n);

/* Early, before anything is launched or compared with our fds: our fd 1 and 2 that are pipes
 * (or FIFOs) are replaced by pipes of ours, read by a thread of ours into the hold, so that the
 * program writes to them without a stop; the run's own are kept and written by the releaser.
 * Until outhold_start, what comes is passed on at once (our own messages).  0, or -1. */
int outhold_interpose(struct tree *t);

/* Start holding for a run (seq 0: a new stream) or a resume from cut seq, once nothing can refuse
 * it: the bytes the killed run held at that cut and did not release are written to our fd 1/2
 * first (the program has not run yet).  dir is the journal's folder.  0, or -1 with why. */
int outhold_start(struct tree *t, const char *dir, uint64_t seq, char *why, size_t whylen);

/* At the seccomp stop of a write, writev, sendto, sendmsg, sendfile or shutdown of thread tid of
 * process pid (registers r): 1 when it was held (the call is skipped, its result set: the count,
 * or 0 for a shutdown held behind the connection's bytes), 0 when it runs as it is. */
int outhold_write(struct tree *t, pid_t pid, pid_t tid, const struct user_regs_struct *r);

/* At the capture of cut seq, everyone stopped: what is not released yet, written with it.
 * 0, or -errno. */
int outhold_cut(struct tree *t, uint64_t seq);

/* On the commit thread, cut seq committed: what it covers is released.  Crash-point tests set the
 * hook PROSPER_TEST_DIE_HOLDING=1: the first commit that covers bytes not shown yet kills the
 * run's process group (as `kill -9 -- -PGID`) before any of them is shown. */
void outhold_committed(struct tree *t, uint64_t seq);

/* The program ended: everything held written out, the releaser stopped. */
void outhold_finish(struct tree *t);

/* The files of the hold removed from dir (the run finished, or a new run begins). */
void outhold_remove_all(const char *dir);

#endif

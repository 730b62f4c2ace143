/* filetrack.h -- the program's changes to the file system, seen before they run and recorded in
 * the file-undo journal (undolog.h), so that a resume puts the files back as they were at its
 * checkpoint (fileundo.h).  docs/run-resume.md, "Files".
 *
 * How changes are seen: a seccomp filter, installed in the launched program before it executes
 * (inherited by every thread and process it makes, kept across exec), sends the system calls
 * that can change a file (write and its kin, truncation, open with O_CREAT/O_TRUNC, renames,
 * removals, mode/owner/time changes, shared writable mappings, io_uring) to the supervisor as a
 * ptrace stop (SECCOMP_RET_TRACE); every other call runs without it.  The stop records what the
 * change needs undone (filecalls.h), then lets the call run.  Raw system calls (Go, static programs) are seen
 * like libc's.
 *
 * Invariants
 *   - No change runs before its record is written: the journal is appended before the stop ends;
 *     a journal that cannot be written stops checkpointing and kills the program (a record
 *     missing would be a silent wrong resume).
 *   - Undo before data, when a checkpoint can outlive a power cut (a pool on a disk or persistent
 *     memory): a change to a file on a disk runs only after its records are flushed (fdatasync
 *     of the journal, and of its folder for a new journal file); a change that cannot be undone
 *     is flushed the same way, wherever the file is.  A checkpoint is made durable only after
 *     the journal file of its cut is (filetrack_before_durable, tiers.h).  Files in memory
 *     (tmpfs) need no flush: a power cut takes them too.
 *   - The journal file of cut seq holds the changes made after that cut's capture; the pool's
 *     "files" region, committed with the cut's epoch, names seq (FILES_REGION_NAME).
 *   - Files of cuts older than both the newest committed cut and the one a power cut would leave
 *     (tiers.h) are removed; the newer ones are kept until a resume has undone them.
 *   - Without its own pid namespace the program is not filtered (a process it leaves running
 *     would find those calls failing once we are gone): its checkpoints say so, and a resume of
 *     them refuses (files-untracked).
 */
#ifndef PROSPER_SUP_FILETRACK_H
#define PROSPER_SUP_FILETRACK_H
#include <stdint.h>
#include <sys/types.h>
#include "sup.h"

#define FILES_REGION_NAME "files"

/* The record of the "files" region: which journal the epoch's cut starts. */
struct files_record {
	uint64_t seq;     /* the cut's seq: journal files >= seq undo what followed it */
	uint32_t tracked; /* 1: the program ran under the filter */
	uint32_t pad;
};

/* Is the program to run under the filter?  With its own pid namespace (above); not with the test
 * hook PROSPER_TEST_NO_FILE_FILTER, which measures what the filter costs (bench/scripts). */
int filetrack_wanted(const struct tree *t);

/* Which launch filter (filefilter.h FILTER_*): none when not wanted; else the filter, letting
 * through writes to those of our fd 1 and 2 that the program may write unseen (filefilter.h: not
 * a file, or a file open for appending only).  For a resume, im (NULL: a run) is the checkpoint
 * of one process, and an fd is let through only if that holds in it too; call once per process
 * of a tree and AND the answers' pass flags. */
int filetrack_filter(const struct tree *t, const struct img *im);

/* Start the journal for cut seq (a run: seq 0, fresh; a resume: the cut it resumed from, whose
 * undone records are dropped).  0, or -1 with why. */
int filetrack_start(struct tree *t, const char *pool_path, uint64_t seq, int on, char *why, size_t whylen);

/* A seccomp stop of thread tid of process m: the change recorded (or, the journal failing,
 * the program killed).  The caller continues the thread.  Crash-point tests set the hook
 * PROSPER_TEST_DIE_AT_CALL=<system call number>[,<number>...] (at most 4): at such a call's
 * first stop the run's process group is killed (as `kill -9 -- -PGID`) once the call is
 * recorded, before it runs. */
void filetrack_stop(struct tree *t, struct sup *m, pid_t tid);

/* The same for the shared writable file mappings of a checkpoint's process, mapped again by a resume. */
void filetrack_mapped_image(struct tree *t, const struct img *im);

/* At a cut's capture, everyone stopped: the next journal file; the "files" region staged into
 * the epoch being built; the files the program holds open, as they are now (UNDO_WATCH).
 * 0, or a negative errno (the pool's error). */
int filetrack_cut(struct tree *t);

/* On the commit thread, before a commit that a power cut does not undo (a pool on a disk or on
 * persistent memory, one tier): the journal file of the cut being committed, and its name, made
 * durable -- a resume from that checkpoint after a power cut must find it (two tiers: the durable
 * thread does the same before each copy, tiers.h).  0, or a negative errno. */
int filetrack_before_durable(struct tree *t);

/* On the commit thread, after the cut committed: older journal files removed. */
void filetrack_committed(struct tree *t);

/* The "files" region of the pool's committed epoch: 0 and *r, 1 if the epoch has none (made before
 * the journal existed), -1 if unreadable. */
int filetrack_region(prosper_pool *pool, struct files_record *r);

#endif

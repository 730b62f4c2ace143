/* refusal.h -- every way `prosper run` and `prosper resume` refuse, in one typed table.
 *
 * A refusal ends the command with exit code 2 and one line on stderr, "prosper run: <reason>".
 * With --json the same refusal is also one JSON object on stderr (stdout belongs to the program,
 * and a resume's is often appended to the run's output file):
 *     {"refused": "<code>", "message": "<reason>"[, "exit_code": N]}
 * The codes are stable: scripts (prosper torture) branch on them, never on the wording.  The
 * table is docs/run-resume.md's "Refusals"; a test checks that every code is documented there.
 *
 * Invariants
 *   - Codes are never renamed or reused; a new refusal gets a new row.
 *   - A refusal of `resume` that needs no child (pool, files, kernel, CPU) is decided by the
 *     admission check before the program is relaunched (resume.c).
 */
#ifndef PROSPER_SUP_REFUSAL_H
#define PROSPER_SUP_REFUSAL_H

enum refusal {
	REFUSE_USAGE = 1,        /* bad options or arguments */
	REFUSE_NO_POOL,          /* resume without --pool: no *.prosper here, or several */
	REFUSE_POOL_MISSING,     /* resume: the pool file does not exist or cannot be read */
	REFUSE_POOL_BUSY,        /* another prosper holds the pool */
	REFUSE_NOT_A_POOL,       /* run: the path exists and is not a usable pool: never overwritten */
	REFUSE_HAS_CHECKPOINT,   /* run: the pool holds a checkpoint and --fresh was not given */
	REFUSE_POOL_CORRUPT,     /* resume: the pool or its checkpoint's metadata cannot be read */
	REFUSE_POOL_CREATE,      /* run: the pool cannot be created or replaced */
	REFUSE_FINISHED,         /* resume: the program ran to its end (exit_code: its exit code) */
	REFUSE_NO_CHECKPOINT,    /* resume: no checkpoint was committed */
	REFUSE_FILE_GONE,        /* resume: a mapped file of the checkpoint is gone */
	REFUSE_FILE_CHANGED,     /* resume: the executable or a library changed */
	REFUSE_MAPPED_DELETED,   /* resume: the checkpoint maps a file that was deleted */
	REFUSE_FD_GONE,          /* resume: an open file of the checkpoint is gone */
	REFUSE_FD_SHORTER,       /* resume: a file open for writing is shorter than at the checkpoint */
	REFUSE_KERNEL_CHANGED,   /* resume: another kernel */
	REFUSE_CPU_CHANGED,      /* resume: other CPU extended-state features */
	REFUSE_NOT_BUILT,        /* the shim is not built */
	REFUSE_SETUP,            /* the supervisor cannot set itself up (signalfd, cwd) */
	REFUSE_LAUNCH,           /* the program cannot be started or relaunched */
	REFUSE_NO_USERFAULTFD,   /* userfaultfd, with write-protect tracking, is not available */
	REFUSE_RESTORE,          /* resume: the relaunched program could not be rebuilt */
	REFUSE_FD_UNSUPPORTED,   /* resume: the checkpoint holds an fd of a kind, or in a state, not kept yet */
	REFUSE_FILES_UNTRACKED,  /* resume: the checkpoint's run did not see its file changes */
	REFUSE_FILE_NOT_UNDOABLE, /* resume: the program changed a file in a way that cannot be undone */
	REFUSE_FILE_CHANGED_OUTSIDE, /* resume: a file of the program's was changed by another process */
	REFUSE_PTRACE_DENIED,    /* this user may not trace its children (preflight.h) */
	REFUSE_NO_PID_NAMESPACE, /* run: the program cannot have ids of its own (pidns.h), no --host-pids */
	REFUSE_SETUID_PROGRAM,   /* run: a set-user-ID program, run by an ordinary user */
	REFUSE_ADDRESS_UNAVAILABLE, /* resume: a socket's address cannot be bound again (held, or gone) */
	REFUSAL_COUNT
};

/* The stable code of r ("finished", "no-checkpoint", ...). */
const char *refusal_code(enum refusal r);

/* The command named in messages ("prosper run" / "prosper resume") and whether --json was given. */
void refusal_setup(const char *command, int json);
const char *sup_command(void);

/* Print the refusal (and its JSON line with --json); returns 2, the exit code. */
int refuse(enum refusal r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same for REFUSE_FINISHED, whose JSON also carries the program's recorded exit code. */
int refuse_finished(int exit_code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif

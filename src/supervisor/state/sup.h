/* sup.h -- the supervisor's state, shared by its parts.  The parts are in layers, one folder each,
 * bottom to top; a file calls only its own layer and those below (docs/architecture.md has every
 * file; the build fails on a call upwards):
 *   image/    the epoch's record of a process and of a tree, the metadata log: codecs only
 *   base/     /proc, a process's memory, injected system calls, the hello channel, the pid
 *             namespace, JSON and refusals, the clock
 *   state/    this header; tiers and the pool file, threads, fds read per cut, the shim's hello,
 *             checkpointing stopped, --stats-json
 *   memory/   regions follow the map, the batch and its pre-copy, the commit half and the oracle,
 *             a resume's fill, NVM-resident memory
 *   objects/  the kinds of fd (fdkind.h), sockets, shared memory, children, timers, pending
 *             signals, limits, alternate stacks, lock owners
 *   cut/      one checkpoint of a process and of the tree, the commit thread; the restore of a
 *             process and of a tree
 *   control/  main, options, run, resume, launch, exec, the loop
 *
 * struct tree is what the whole program shares: the pool, stats (what a run measured, written out
 * by stats.c), whether checkpointing is on, the pid namespace and the shim's channel.  struct sup
 * is one supervised process: cfg (the options, read-only once the program runs) and its state.
 */
#ifndef PROSPER_SUP_H
#define PROSPER_SUP_H
#include <stdint.h>
#include <sys/types.h>
#include "image.h"
#include "hello_channel.h"
#include "metalog.h"
#include "pidns.h"
#include "prosper/internal/shim_proto.h"
#include "procfs.h"
#include "refusal.h"
#include "stopclock.h"
#include "tiers.h"
#include "prosper/pool.h"
#include "prosper/track.h"

#define MAX_VMAS 4096
#define MAX_FDS 1024
#define MAX_RANGES 65536
#define MAX_FILES 1024
#define MAX_INHERITED_PIPES 64
#define SUP_SEG_SIZE (64u << 10) /* pool segments: most mappings are small, keep their slots small */
/* The epoch blob's room in a metadata slot: the tree's shared memory objects are copied into it
 * (sharedmem.h; Open MPI's ranks share a 4 MiB one with no name).  The pool file is sparse: a
 * slot takes the room its blobs use. */
#define SUP_BLOB_BYTES (16u << 20)

enum tracker_mode { TRACK_MODE_PAGE = 1, TRACK_MODE_DIFF = 2, TRACK_MODE_FULL = 3 };
/* --copy: every dirty byte read while the program is stopped, or most of them by a pre-copy
 * just before the stop (stage.h) */
enum copy_mode { COPY_STOP = 0, COPY_PRECOPY = 1 };
/* --snapshot: a large cut's bytes read from a copy-on-write view forked at the stop, after it
 * (snapshot.h): never (copy, the default for now), when the stop's copy would be long (auto),
 * whenever it can be (fork) */
enum snapshot_mode { SNAPSHOT_COPY = 0, SNAPSHOT_AUTO = 1, SNAPSHOT_FORK = 2 };

/* One range of child memory read at a stop, to be written into its region at the commit. */
struct chunk {
	uint32_t region;
	uint8_t whole;   /* part of a new mapping: written as it is, never compared */
	uint8_t stack;
	uint64_t off, len;   /* in the region */
	uint64_t addr;       /* in the child */
	size_t at;           /* in batch.data */
};

/* One checkpoint between its stop and its commit. */
/* Bytes of a chunk read again at the stop, over what a pre-copy read (stage.h). */
struct reread {
	size_t at;           /* in batch.data */
	uint64_t addr, len;  /* in the child */
};

struct batch {
	struct chunk *chunks;
	size_t nchunks, chunks_cap;
	uint8_t *data;       /* an anonymous mapping of cap bytes (stage.c) */
	size_t len, cap;
	size_t ready;        /* data's first bytes whose pages are in place (stage_ahead) */
	size_t filled;       /* data's first bytes a read wrote this cut (a view's chunks go through the window) */
	uint64_t most;       /* the largest filled a cut has read */
	uint64_t could;      /* bytes of the mappings saved at the last cut: the most a stop reads of them */
	struct img_buf blob;
	/* --copy precopy (stage.h): chunks [0, npre) were read by a pre-copy for the coming cut;
	 * pre_stale: its read failed, the stop reads them again */
	size_t npre;
	int pre_stale;
	size_t read_from;    /* chunks before it are read */
	struct reread *rereads;
	size_t nrereads, rereads_cap;
};

/* Bytes of one checkpoint (and, summed, of a run). */
struct ckpt_stats {
	uint64_t stack, stack_pages, stack_exact; /* written; named by the tracker; changed 8-byte words */
	uint64_t other, other_pages;
	uint64_t new_bytes;                       /* mappings seen for the first time */
	uint64_t stack_dense_checkpoints;         /* stack written as whole pages (adaptive) */
	uint64_t dense_regions;                   /* times a mapping was switched to whole copies */
	uint64_t mismatches, verified_bytes;      /* soundness oracle */
};

/* A thread of the program.  thr[0] is the main thread (tid == pid). */
#define MAX_THREADS 512
struct thr {
	pid_t tid;
	pid_t own;     /* its id in the program's own namespace (getpid/gettid there); 0: not read yet */
	int stopped;    /* in a stop of ours: PTRACE_INTERRUPT, or the first stop of a new thread */
	int listening;  /* group-stopped (SIGSTOP & co.): left with PTRACE_LISTEN */
	/* captured at the stop */
	struct user_regs_struct regs;
	uint64_t sigmask, robust_head, robust_len;
	char comm[16];  /* its name (other threads; the main thread's comes with proc_status) */
	struct img_altstack altstack;  /* asked now and then, not at every stop (altstack.h) */
	uint64_t altstack_asked;       /* the cut (tree->cut.gen) it was last asked at; 0: never */
	uint32_t altstack_asks;
	uint64_t clear_tid;            /* its clear-child-tid address, asked with its first altstack ask */
	size_t xlen;
	uint8_t xstate[4096 * 4];
};

/* An NVM-resident allocation: a direct pool region mapped at [start, start + len) (nvm.c). */
struct nvm_region {
	uint32_t id;
	uint64_t start, len;       /* len: whole segments */
	uint8_t *written;          /* per segment: writable in the epoch being built */
	uint8_t *committing;       /* per segment: written in the epoch the commit is making durable */
	uint8_t *changed;          /* per segment: the last commit found changed blocks in it */
	uint8_t *ahead;            /* per segment: opened ahead of a fault in this interval, and by which rule */
	int any_written, any_committing;
	uint32_t ahead_next;       /* segments the last sequential fault opened after it (0: none) */
	uint32_t ahead_skip;       /* first faults left at which the repeat set is not opened */
	uint32_t ahead_poor;       /* consecutive intervals whose repeat set was mostly not written again */
	uint32_t ahead_idle;       /* consecutive intervals that wrote too little to judge it */
};

/* The launch record's strings after an exec, owned by exec.c (run and resume own theirs). */
struct exec_mem {
	char *args_buf, *env_buf;  /* /proc/PID/cmdline and environ as read */
	char **argv, **envp;       /* argv points into args_buf; envp from launch_environment */
	int own_from;              /* envp[own_from...] were allocated by launch_environment */
};

struct known_file {
	char path[VMA_PATH_MAX];
	struct file_id id;
};

/* What the options set; read-only once the program runs. */
struct sup_config {
	int resume;                  /* `prosper resume` (else `prosper run`) */
	int json;                    /* --json: refusals also as one JSON line on stderr */
	double interval_ms;
	double durable_every_s;      /* --durable-every: < 0 the default (1 s on a disk) */
	int verify;                  /* the soundness oracle: commit while stopped, compare */
	int copy_mode;               /* enum copy_mode: when the cut's bytes are read (stage.h) */
	int snapshot_mode;           /* enum snapshot_mode: from the program or a view of it (snapshot.h) */
	int stack_mode, heap_mode;   /* enum tracker_mode */
	uint32_t stack_gran, heap_gran;
	int meta_mode;               /* enum meta_mode: the metadata as a log of changes or whole */
	int stats_exact;             /* also count the stack's changed 8-byte words (costs a compare) */
	const char *stats_path;      /* --stats-json, or NULL */
	uint64_t commit_delay_us;    /* test hook: widen the window between data and commit */
	int host_pids;               /* --host-pids: no pid namespace of its own (pidns.h) */
	int trust_files;             /* --trust-files: resume an untracked checkpoint (fileundo.h) */
	int eager_restore;           /* --restore eager: every page in place before the program runs */
	int external_sync;           /* --external-sync: output to the outside held until committed (outhold.h) */
	double max_overhead_pct;     /* --max-overhead: the interval lengthens to keep the cost within it (budget.h) */
	unsigned given;              /* enum settings_given: the checkpoint options the command line gave */
};

/* What a resume measured (a part of struct sup_stats). */
struct resume_stats {
	uint64_t lock_owners_retagged;    /* held locks given their thread's new id (lockowners.c) */
	uint64_t pending_restored;        /* signals queued again (pending.c) */
	uint64_t limits_restored;         /* resource limits set back to the checkpoint's (rlimits.c) */
	uint64_t timers_restored;         /* interval timers armed again (timers.c) */
	uint64_t posix_timers_restored;   /* POSIX timers made again (posixtimers.c) */
	uint64_t epoll_watches_left;      /* watches of epoll instances whose fd is not back (fd_epoll.c) */
	uint64_t names_restored;          /* ps shows the checkpoint's argv again (restore.c) */
	uint64_t ids_changed;             /* the program's process and thread ids that are not the checkpoint's */
	double restore_seconds, restore_memory_seconds;
	double resume_command_seconds;    /* from the command's start (admission included) to running */
	uint64_t restore_copied_bytes;    /* of restored_bytes, put in place by UFFDIO_COPY (restore.c) */
	uint64_t restored_bytes;
	uint64_t restore_fill_faults;     /* first touches of pages not yet in place, answered at once (fillcopy.h) */
	double fill_wait_s;               /* how long the first cut after a lazy resume waited for the fill's copiers (loop.c) */
	int restore_lazy;                 /* the program ran while its memory was filled */
	uint64_t files_undone;            /* file-undo journal records undone before it ran (fileundo.h) */
};

/* What a run measured; written out by stats.c, read by nothing else. */
/* The statistics of a run (--stats-json, stats.c), by what they measure: the checkpoints and
 * commits (struct sup_stats itself), the stops, the pre-copy passes, NVM memory, a resume. */
struct stop_stats {
	uint64_t count;                   /* stops taken for a checkpoint (committed or not) */
	double total, max;
	double first, max_later;          /* the run's first stop; the longest of the others */
	double phase_seconds[STOP_NPHASES]; /* where the stops' time went (stopclock.h) */
	uint64_t read_bytes;              /* dirty bytes read while the program was stopped */
	uint64_t protected_bytes;         /* of the written pages collected, those protected again (a fault each next write) */
	uint64_t reads_shared;            /* stops whose read was shared between cores (readers.h) */
	uint64_t read_faults;             /* page faults of the supervisor in the stops' reads (fresh staging pages) */
	uint64_t staging_ahead_bytes;     /* staging pages faulted in beside the running program (stage_ahead) */
	uint64_t staging_bytes;           /* the staging buffers' pages in place, all processes, at most */
	double thread_capture_seconds;    /* registers, xstate, mask, robust list of every thread */
	uint64_t thread_captures;         /* threads captured, summed over checkpoints */
};

struct precopy_stats {
	uint64_t passes, bytes;           /* pre-copy passes; the bytes they read while it ran */
	uint64_t reread_bytes;            /* of those, read again at the stop (written since) */
	uint64_t dropped_bytes;           /* of those, dropped: their mapping was gone or replaced at the stop */
	uint64_t stale;                   /* passes whose read failed (a mapping went away under it) */
	uint64_t skips;                   /* mappings left out of the next passes: mostly read again */
	double seconds;
};

/* The copy-on-write views (snapshot.h). */
struct snapshot_stats {
	uint64_t views;                   /* cuts read from a view */
	uint64_t bytes;                   /* bytes read from views, beside the running program */
	uint64_t declined;                /* cuts that could have used one but were cheaper copied in the stop */
	uint64_t failed;                  /* forks refused (memory, limits, a filter): copied in the stop instead */
	uint64_t forbidden;               /* processes that advised MADV_DONTFORK or MADV_WIPEONFORK: no view of them */
	uint64_t no_room;                 /* cuts copied because the machine could not hold the program twice */
	double fork_total_s, fork_max_s;  /* the forks, in the stops */
	double read_total_s;              /* reading the views, in the commits */
	uint64_t cow_faults;              /* the program's faults while its views lived (copies of shared pages) */
	uint64_t cow_extra_ns;            /* its system time while they lived, beyond its rate before them */
	uint64_t copied_bytes;            /* the stops' copies of 4 MiB or more (the rate auto prices them at) */
	double copy_total_s;
};

struct nvm_stats {
	uint64_t faults, dirty_bytes;
	uint64_t ahead_segments, ahead_changed; /* made writable ahead of a fault; of them, changed */
	double fault_seconds;             /* serving write faults (copy-on-write, mprotect), summed */
};

/* What checkpointing cost the program, and the intervals taken (budget.h). */
struct budget_stats {
	double percent;                   /* --max-overhead (0: the fixed cadence of --interval) */
	double fault_s;                   /* one write-protect fault, measured at start (0: not measured) */
	double cow_fault_s;               /* one copy-on-write fault, measured at start (0: not measured) */
	double since, until;              /* the first cut's start and the last cut's end (stopclock) */
	double stop_s, fault_total_s, wait_s; /* the program's losses: stops, faults, run-queue waits */
	uint64_t intervals;               /* from one cut's start to the next's */
	double interval_sum_s, interval_max_s;
	double chosen_max_s, chosen_last_s; /* the longest interval the budget chose; the last one */
	uint64_t postponed;               /* due cuts put off: their predicted cost was over the budget earned */
	double page_s;                    /* the learned cost per page written between cuts (0: not learned) */
};

/* The program's losses to checkpointing in percent of its time since the first cut. */
static inline double budget_measured_pct(const struct budget_stats *b)
{
	double span = b->until - b->since;
	return span > 0 ? 100 * (b->stop_s + b->fault_total_s + b->wait_s) / span : 0.0;
}

struct sup_stats {
	uint64_t checkpoints, late;       /* late: ticks that found the previous commit still running */
	uint64_t trees, max_processes;    /* checkpoints of more than one process; the most in one */
	uint64_t pipe_bytes_in_flight;    /* bytes found in the program's own pipes at the cuts, saved (tree.c) */
	uint64_t shm_bytes;               /* shared memory copied at the cuts (sharedmem.h) */
	uint64_t zombies_kept;            /* exited children not yet waited for, kept by their status in cuts */
	uint64_t waited_for_children;     /* looks at a due checkpoint that found the program with a child */
	uint64_t cuts_given_up;           /* cuts abandoned because a thread did not stop in time */
	uint64_t cuts_put_off;            /* looks at a due cut that found what it cannot keep yet: a connection
	                                   * not accepted, bytes at a terminal, events not read (tree.c) */
	uint64_t unread_lost_bytes;       /* events left unread past the wait, taken from the resumes (tree.c) */
	uint64_t execs_followed;          /* new images the checkpoints went on with (exec.c) */
	uint64_t pending_saved, pending_lost;  /* signals pending at the cuts (kept; beyond the record's room) */
	uint64_t timers_stale;            /* checkpoints that kept the previous timer values (main thread group-stopped) */
	struct resume_stats resume;       /* resume: what it put back, and how long it took */
	struct ckpt_stats bytes;          /* summed over checkpoints */
	struct metalog_stats meta;
	uint64_t meta_first_bytes;        /* meta.bytes after the first checkpoint (a full layout in log mode) */
	double commit_total;              /* seconds in sup_commit, summed */
	struct stop_stats stop;           /* the stops: how long the program was held, what was read */
	struct precopy_stats precopy;     /* the pre-copy passes beside the running program */
	struct nvm_stats nvm;             /* NVM-resident memory's faults */
	struct budget_stats budget;       /* the overhead budget: costs measured, intervals taken */
	struct snapshot_stats snapshot;   /* the copy-on-write views */
};

struct sock_end;
struct pty_cut;
struct tree_view;
struct premade;

/* The cut of a tree being taken or committed (tree.c). */
struct tree_cut {
	/* its processes: the commit thread reads only these, while the loop goes on adding the
	 * children forked meanwhile to procs */
	struct sup **members;
	int n, cap;
	uint64_t gen;                /* counts cuts: what was read of a process at this cut (fds_gen) */
	struct img_buf blob;         /* the epoch blob of a cut of several processes (tree_image.h) */
	struct sock_end *socks;      /* the unix sockets kept at this cut (socketpairs.h) */
	int nsocks;
	uint64_t *tcp_kept;          /* the TCP sockets whose peer the program holds too (tcppair.h) */
	int ntcp_kept;
	struct pty_cut *ptys;        /* the pseudo-terminals whose master the program holds (ptys.h) */
	int nptys, ptys_cap;
	int viewed;                  /* a process of it is read from a copy-on-write view (snapshot.h) */
	int cancel;                  /* atomic: the program finished, this commit is not wanted (loop.c) */
	double unread_since;         /* a due cut waits for the program to read an fd's events since (0: not) */
	struct { pid_t pid; int fd; } unread_fds[8]; /* fds the last stop found with `unread` (fdkind.h) */
	int nunread_fds;
};

/* A resume of a tree (tree_restore.c): the checkpoint's processes and the objects made for them. */
struct tree_resume {
	struct tree_view *view;
	struct img *imgs;            /* view->nprocs decoded images */
	struct premade *premade;
	int npremade;
	unsigned stdio_shared;       /* bit n: fd n, the checkpointed stdout-like file, opened again
	                              * in the first process before the others were forked: all of
	                              * them share it, as they shared it at the cut (tree_restore.c) */
};

/* The file-undo journal being written (filetrack.h): the changes the program makes to the file
 * system since cut `seq`, each recorded before it runs. */
struct file_track {
	int on;                      /* the program runs under the filter: its file changes are seen */
	int launch_filter;           /* the filter it was launched with (FILTER_*, filefilter.h) */
	char dir[4200];              /* <pool>.undo (undolog.h) */
	uint64_t seq;                /* the cut the records follow: the journal file being appended */
	int fd;                      /* that file, or -1 */
	uint64_t committed_seq;      /* the newest cut committed (the commit thread) */
	uint64_t saved_bytes;        /* old bytes recorded since cut seq (bounded: FILETRACK_BUDGET) */
	uint64_t *touched;           /* inodes whose attributes are recorded since cut seq (dev ^ ino) */
	struct fcover *cover;        /* their bytes recorded since cut seq (filecover.h) */
	struct born_path *born;      /* paths the program made, and in which interval (filechange.c) */
	size_t nborn, born_cap;
	/* The cut a power cut could take the files back to, or UINT64_MAX before any is durable:
	 * what is made after it needs no flushed records (docs/durability.md).  Written by the
	 * durable or commit thread, under mu, which the loop holds while it records a call. */
	uint64_t flush_base;
	pthread_mutex_t mu;
	size_t ntouched, touched_cap;
	int failed;                  /* the journal cannot be written: said once; the program is stopped */
	/* files mapped shared and writable (stores to them are not seen): each cut's journal says
	 * so again, for a mapping lasts (munmap is not followed) */
	char mapped[16][256];
	int nmapped;
	int snapshot;                /* the records being written keep a mapped file whole (b = 1) */
	uint64_t warned[16];         /* reasons of UNDO_CANNOT said on stderr (a hash each; 0: free) */
	/* flushing before the change (docs/durability.md): the file being recorded is on a disk;
	 * records were written that the journal must hold durably before the call runs; the
	 * journal file's name is durable in its folder */
	int target_on_disk, unflushed, name_flushed;
	int target_born;             /* the file being recorded was made after flush_base */
	long die_at[4];              /* test hook PROSPER_TEST_DIE_AT_CALL (filetrack.h) */
	size_t ndie_at;
	/* statistics */
	uint64_t traps, records, bytes, cannot, flushes, tightened;
	double seconds, flush_seconds;
	/* output held until its checkpoint commits (outhold.h) */
	int external_sync;           /* --external-sync on (the default) */
	struct outhold *out;         /* the hold, or NULL: nothing of ours is held */
	uint64_t held_writes, held_bytes, released_at_resume, hold_waits;
	double hold_wait_seconds;
};

struct born_path {
	char *path;
	uint64_t seq; /* the journal file its UNDO_CREATED is in */
};

/* How every image of the program is started and says hello (launch.h), and when the command
 * began: set before the program runs, read only after. */
struct tree_run {
	char shim[VMA_PATH_MAX];
	struct hello_channel channel;
	struct pidns ns;             /* the program's own ids (pidns.h) */
	char inherited_pipes[MAX_INHERITED_PIPES][64]; /* "pipe:[ino]" passed to the program at launch */
	int ninherited;
	double started;              /* CLOCK_MONOTONIC at the supervisor's start */
	int64_t began_ns;            /* CLOCK_REALTIME at the supervisor's start */
};

/* The supervision of the program as a whole: what every process of it shares. */
struct tree {
	struct sup_stats stats;
	prosper_pool *pool;          /* where checkpoints are committed: the fast pool of two tiers */
	char pool_path[4096];        /* absolute path of `pool`: the program maps its NVM regions from it */
	struct tiers tiers;          /* which checkpoints survive a power cut (tiers.h) */
	int enabled;                 /* checkpointing still on */
	int commit_cancelled;        /* the last commit was given up at the program's end: the pool
	                              * handle holds its writes uncommitted (main.c opens it again) */
	double interval_s;           /* the interval until the next cut (the budget's choice, budget.h) */
	char disabled_reason[VMA_PATH_MAX + 200]; /* why it is off: the first reason, copied (disable.c) */
	struct tree_run run;         /* how the program is started: set at the start, then read only */
	int memory_lost;             /* a resume's fill failed and the program was killed: exit 2 */
	/* the program's processes (tree.h): procs[0] is the first, parents before their children */
	struct sup **procs;
	int nprocs, procs_cap;
	struct tree_cut cut;         /* the cut being taken or committed */
	struct {                     /* notes given once */
		int children;        /* children the run does not follow (--host-pids) */
		int tree;            /* why a cut waits */
		int shm;             /* shared memory too large to keep (sharedmem.h) */
		int unread;          /* a cut taken with events the program had not read (tree.c) */
	} warned;
	struct tree_resume resume;   /* a resume of it, until every process runs again */
	struct file_track files;     /* what it changes in the file system (filetrack.h) */
};

/* An object of the checkpoint made again before the processes are forked (a pipe, a socket,
 * shared memory): every process inherits it, and the kind of each fd that held it takes it to
 * that fd's number (fdkind.h: fd_premade), then closes these. */
struct premade {
	uint32_t type;   /* enum img_fd_type of the fds that take it */
	uint64_t object; /* their img_fd.object; shared memory: its index in the tree view */
	int rfd, wfd;    /* in every process of the resumed tree, until its restore; one fd: rfd == wfd */
};

/* A cut of one process: what its stop read, and what the commit writes while the program runs. */
struct sup_cut {
	/* read at its stop (scratch, rewritten at the next) */
	uint64_t sp;                 /* the main thread's, at this stop */
	struct vma *now;             /* the map at this stop */
	struct fd_info *fds;         /* the fds at this stop */
	int nfds_read, fds_rc;       /* how many, and the read's result, when fds_gen == tree->cut.gen */
	uint64_t fds_gen;
	struct prosper_range *ranges;
	/* ... and committed while the program runs (ckpt_commit.c) */
	int captured;                /* its memory is in the cut being committed: decided at the capture,
	                              * for it may exit while the commit runs (tree_commit) */
	struct batch batch;          /* the checkpoint being committed */
	pid_t view;                  /* the copy-on-write view its unread bytes are read from (snapshot.h), or 0 */
	uint64_t view_bytes;         /* those bytes */
	uint64_t view_faults_from;   /* the program's minor faults when the view was made */
	uint64_t view_resident_from; /* ... its resident pages then */
	double view_stime_from;      /* ... its system time then (seconds) */
	double view_from;            /* ... when (stopclock) */
	double view_stime_rate;      /* its system time per second before the view (snapshot.c) */
	uint8_t *old;                /* committed bytes, for the diff filter */
	size_t old_cap;
};

/* A resume of one process, from the admission until its memory is filled. */
struct sup_resume {
	const struct img *img;       /* its checkpoint */
	struct shim_hello hello;     /* its shim's hello (gate, records) */
	int uffd;
	struct fillcopy *fill;       /* its memory still being filled while it runs (fillcopy.h) */
	pid_t old_main_tid;          /* the main thread's id at the checkpoint (restore.c), 0: unknown */
};

/* What the views of one process cost, as measured (snapshot.c). */
struct snapshot_learned {
	int off;                     /* no view of it can be made: its parent is not ours, a fork failed */
	int parent_checked;
	double fork_s_per_byte;      /* the last fork's time per byte the process had in place (0: none yet) */
	/* its system time when last read (at a view's start or end), to tell what a view adds to it */
	double stime_s, stime_at;
};

/* The supervision of one process: the options (the tree's, copied), and its state. */
struct sup {
	/* for the run: the options (the tree's, copied; read-only once the program runs) */
	struct sup_config cfg;
	struct tree *tree;
	pid_t pid;
	/* its place in the tree (tree.h) */
	pid_t own_pid;               /* its id in the program's namespace (0: not read yet) */
	char region_prefix[16];      /* of its regions' names: "" for procs[0], else "p<own_pid>." */
	int vforked;                 /* shares its parent's memory (vfork, posix_spawn) until it execs */
	int exited;                  /* its last thread is gone: a zombie until its parent waits for it */
	int exit_status;             /* then: its wait status, kept in the cuts until its parent waits */
	int memory_dropped;          /* then: its regions have left the pool (tree_drop_gone) */
	int untracked;               /* not tracked (yet): no cut can include it */
	int stdio_tight;             /* its writes to fd 1 and 2 are sent to us too (filefilter.h) */
	struct thr *thr;             /* the program's threads (threads.c) */
	int nthr;
	/* child processes (children.c): no cut while the program has one */
	pid_t *children;
	int nchildren, children_cap, children_lost;
	/* warnings given once */
	uint64_t warned_fds[MAX_FDS / 64];
	int warned_shared;

	/* for the image it runs (a new one at each exec, exec.c) */
	/* the launch record, written into every epoch */
	char exe[VMA_PATH_MAX];
	char launch_cwd[VMA_PATH_MAX];
	char *const *argv;
	int argc;
	char *const *envp;
	int envc;
	struct exec_mem exec_mem;
	struct known_file *files;
	int nfiles;
	uint32_t tid_offset;
	int tid_offset_settled;      /* 1: tid_offset is known for this image (capture.c) */
	uint64_t start_brk;
	int new_image;               /* no checkpoint of this image yet (a run, or after an exec) */
	/* what its shim said (sup_take_hello, hello.c): its gate and the addresses of its records */
	struct shim_hello hello;
	uint64_t gate, nvm_gate, nvm_path_addr; /* the shim's syscall gate, NVM gate, path buffer */
	uint64_t timers_addr;         /* the shim's interval-timer record (timers.h) */
	uint64_t scratch_addr;        /* the shim's scratch for injected calls' results (altstack.h) */
	uint64_t pending_addr;        /* the shim's pending-signal record (pending.h) */
	int pending_written;          /* it holds signals of the last checkpoint (rewrite it, even empty) */
	uint64_t limits_addr;         /* the shim's resource-limit record (rlimits.h) */
	int limits_written;           /* it holds the limits as of the shim's count limits_seen */
	uint64_t limits_seen;
	uint64_t posix_timers_addr;   /* the shim's POSIX timer record (posixtimers.h) */
	int posix_timers_written;     /* the timers it holds (-1: not known) */
	/* its saved memory and how it is tracked */
	struct prosper_track track;
	struct metalog *meta;
	struct vma *vmas;            /* mappings whose contents are saved, with their regions */
	int nvmas;
	struct vma *prev;            /* the map at the last stop (of this image), nprev entries */
	int nprev;
	uint32_t stack_dense_left;   /* checkpoints left that write stack pages whole (adaptive) */
	/* NVM-resident memory (nvm.c) */
	uint64_t nvm_seg, nvm_next;   /* segment size; the next free NVM address */
	struct nvm_region *nvm;
	int nnvm, nvm_cap;
	uint8_t *nvm_zeros;           /* a segment of zeros: the committed copy of a new segment */
	struct inject *nvm_proc;      /* the program's /proc/PID/mem, opened at the first NVM call */

	/* for a cut: read at its stop, and committed while the program runs */
	struct sup_cut cut;
	struct snapshot_learned snap; /* what views of it cost, and whether one can be made (snapshot.h) */

	/* for a resume of it (resume.c, restore.c) */
	struct sup_resume resume;
};

#endif

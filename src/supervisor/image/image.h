/* image.h -- what one checkpoint of a process holds besides its memory: the epoch blob.
 *
 * The pool stores memory regions; the blob of each epoch describes the process around them:
 * registers and extended state, the whole memory map (saved regions and the mappings rebuilt
 * from files), open files, cwd, umask, signal mask, and the launch record (executable, argv,
 * environment, the identity of every mapped file) that resume relaunches and checks against.
 *
 * Layout (little-endian, host structs, one version): struct img_hdr, then the main thread's
 * xstate bytes, then nthreads struct img_thread (the other threads) and their xstate bytes
 * (xstate_bytes each), then nvmas struct img_vma, nfds struct img_fd, nfiles struct img_file,
 * then the string table.
 * Strings are referenced by byte offset into the table (IMG_NONE: absent).  argv and the
 * environment are argc + envc consecutive NUL-terminated strings starting at args_str.
 *
 * Invariants: img_decode() accepts only a blob it can fully bounds-check (every count, offset
 * and string end inside the blob); a rejected blob is a refusal to resume, never a guess.
 */
#ifndef PROSPER_SUP_IMAGE_H
#define PROSPER_SUP_IMAGE_H
#include <stddef.h>
#include <stdint.h>
#include <sys/user.h>

#define IMG_MAGIC 0x33474D4950535250ull /* "PRSPIMG3" */
#define IMG_VERSION 5 /* 3: the argument area and thread names (ps shows the program after a resume);
                       * 4: each thread's alternate signal stack, epoll instances;
                       * 5: an fd's object and payload in fields of their own */
#define IMG_NONE 0xFFFFFFFFu

/* A thread's alternate signal stack (sigaltstack), as the capture last asked it (capture.c):
 * known = 0 if it was never asked (then none is set at a resume). */
struct img_altstack {
	uint64_t sp, size;
	uint32_t flags; /* SS_DISABLE, SS_AUTODISARM; SS_ONSTACK if the thread was running on it */
	uint32_t known;
};

struct img_hdr {
	uint64_t magic;
	uint32_t version, total_bytes;
	uint32_t nvmas, nfds, nfiles, xstate_bytes;
	uint32_t argc, envc, strings_bytes, tid_offset; /* tid_offset: glibc's cached tid, 0 = unknown */
	uint32_t exe_str, cwd_str, launch_cwd_str, kernel_str, args_str, umask;
	uint32_t nthreads, own_pid; /* threads besides the main one; the pid the program saw (0: unknown) */
	uint64_t start_brk, xcr0, sigblk, vdso;
	struct user_regs_struct regs;
	/* where the kernel reads the program's argv and environment (/proc/PID/cmdline, ps): the
	 * exec's strings on its first stack; 0: unknown */
	uint64_t arg_start, arg_end, env_start, env_end;
	char comm[16];   /* the main thread's name (/proc/PID/comm) */
	struct img_altstack altstack; /* the main thread's */
};

/* A thread besides the main one: what resume needs to recreate it. */
struct img_thread {
	int32_t tid;      /* at the checkpoint, as the program saw it (its own namespace's id) */
	uint32_t clear_tid; /* where the kernel clears its id at its exit (img_clear_tid) */
	uint64_t sigmask, robust_head, robust_len;
	struct user_regs_struct regs;  /* fs_base is its TLS, rsp its stack */
	char comm[16];                 /* its name (pthread_setname_np) */
	struct img_altstack altstack;
};

/* A thread's clear-child-tid address (CLONE_CHILD_CLEARTID: what pthread_join waits on; glibc's
 * is in its descriptor, musl's is one lock for all threads) in 32 bits: 0 none or not known; bit 0
 * set: the address itself, below 4 GiB; IMG_CLEAR_TID_LOST: one that fits neither form; else a
 * signed offset from the thread's fs_base.  (Field `reserved`, always 0, before.) */
#define IMG_CLEAR_TID_LOST 3u
static inline uint32_t img_clear_tid_encode(uint64_t addr, uint64_t fs_base)
{
	int64_t off = (int64_t)(addr - fs_base);
	if (!addr)
		return 0;
	if (addr < (1ull << 32) && !(addr & 3))
		return (uint32_t)addr | 1u;
	if (!(off & 3) && off != 0 && off >= INT32_MIN && off <= INT32_MAX)
		return (uint32_t)(int32_t)off;
	return IMG_CLEAR_TID_LOST;
}
/* The address, 0 for none; *lost set for IMG_CLEAR_TID_LOST. */
static inline uint64_t img_clear_tid_decode(uint32_t v, uint64_t fs_base, int *lost)
{
	*lost = v == IMG_CLEAR_TID_LOST;
	if (!v || *lost)
		return 0;
	return v & 1u ? (uint64_t)(v & ~1u) : fs_base + (uint64_t)(int64_t)(int32_t)v;
}

struct img_vma {
	uint64_t start, end, offset;
	uint32_t region; /* pool region with its contents, or IMG_NONE (rebuilt from the file/zero) */
	uint32_t path;   /* string, or IMG_NONE for anonymous */
	char perms[8];   /* as in /proc/PID/maps: "rw-p" */
};

/* The kinds of fd a checkpoint records (fdkind.h: one file per kind holds what its record means,
 * how it is taken at a cut and made again at a resume).  Append only: the values are on media. */
enum img_fd_type { IMG_FD_FILE = 1, IMG_FD_DEVICE = 2, IMG_FD_DIR = 3, IMG_FD_OTHER = 4, IMG_FD_PIPE = 5, IMG_FD_SOCKET = 6,
		   IMG_FD_SHM = 7, IMG_FD_FIFO = 8, IMG_FD_EPOLL = 9, IMG_FD_EVENTFD = 10,
		   IMG_FD_SIGNALFD = 11, IMG_FD_TIMERFD = 12, IMG_FD_IOURING = 13,
		   IMG_FD_INET = 14, IMG_FD_INOTIFY = 15, IMG_FD_PTY = 16, IMG_FD_UNIX_GONE = 17, IMG_FD_NTYPES };

/* In img_fd.flags beside the open flags: an fd 0-2 that is not the stdio the program was given
 * (a file its shell redirected it to, `gzip > out.gz`): restored like any other fd. */
#define IMG_FD_REDIRECTED 0x80000000u

/* One open fd.  Fields every kind has: fd, flags, pos, type, path (a file's path, or the link text
 * of a kernel object: "pipe:[ino]").  The rest belongs to the kind (fdkind.h says which uses
 * what; unused fields are 0 / IMG_NONE). */
struct img_fd {
	int32_t fd;
	uint32_t flags;   /* open flags from fdinfo (and IMG_FD_REDIRECTED) */
	uint64_t pos;
	uint64_t size;    /* regular files open for writing: size at the checkpoint */
	uint32_t type;    /* enum img_fd_type */
	uint32_t path;    /* string */
	uint64_t object;  /* the kernel object's inode at the cut (pipe, socket, FIFO, shared memory):
			   * what names it in the tree blob and groups the fds of one object */
	uint32_t payload; /* string: the kind's own record (an epoll instance's watches), or IMG_NONE */
	uint32_t reserved;
};

struct img_file {
	uint32_t path;
	uint32_t build_id_len;
	uint64_t size, mtime_ns, ino, dev;
	uint8_t build_id[32];
};

/* A growable byte buffer used to build blobs and string tables. */
struct img_buf {
	uint8_t *p;
	size_t len, cap;
};
int img_buf_put(struct img_buf *b, const void *src, size_t n);
/* Append a NUL-terminated string to a string table; returns its offset or IMG_NONE on ENOMEM. */
uint32_t img_str(struct img_buf *strings, const char *s);

/* A decoded image: pointers into the blob (valid while it lives). */
struct img {
	const struct img_hdr *h;
	const uint8_t *xstate;
	const struct img_thread *threads;
	const uint8_t *thread_xstate;  /* nthreads * xstate_bytes */
	const struct img_vma *vmas;
	const struct img_fd *fds;
	const struct img_file *files;
	const char *strings;
};
/* 0, or -EINVAL with *why set to a one-line reason. */
int img_decode(const void *blob, size_t len, struct img *out, const char **why);
static inline const char *img_s(const struct img *im, uint32_t off) { return off == IMG_NONE ? NULL : im->strings + off; }
/* The heap as the checkpoint saw it, over every [heap] VMA (the kernel may show it as several,
 * e.g. a part a resume mapped below start_brk and a part brk() grew later): *lowest is the one
 * that starts lowest, *end the highest end (the break).  0, or -ENOENT when there is no heap. */
int img_heap(const struct img *im, const struct img_vma **lowest, uint64_t *end);

#endif

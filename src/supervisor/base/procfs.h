/* procfs.h -- what the supervisor reads about a process from /proc, and file identities.
 * Every reader fills caller arrays and returns 0 or a negative errno. */
#ifndef PROSPER_SUP_PROCFS_H
#define PROSPER_SUP_PROCFS_H
#include <stdint.h>
#include <sys/types.h>

#define VMA_PATH_MAX 512

struct vma {
	uint64_t start, end, offset;
	uint64_t ino;     /* of the mapped file or shared object; 0 for private anonymous memory */
	char perms[8];
	char path[VMA_PATH_MAX];
	int region;       /* pool region id, or -1 */
	int seen;
	uint64_t sp;      /* a stack: the SP of its thread at this stop (dead below SP-128); else 0 */
	int copy_whole;   /* checkpoints left that copy it whole, unprotected (it was found dense) */
	/* the supervisor's bookkeeping of a saved mapping (stage.h) */
	uint64_t added_gen;   /* the cut that added its region */
	int pre_armed;        /* a dense mapping write-protected by a pre-copy: the stop collects it */
	size_t pre_first, pre_n, pre_cur; /* its pre-copied chunks at this stop */
	uint64_t pre_bytes, pre_again;    /* of them, bytes; bytes read again at this stop */
	int pre_skip;         /* passes left that leave it to the stop: most of what they read was
			       * written again before it (a dense rewriter) */
};

/* /proc/PID/maps, in address order.  0, -ESRCH when it has no mapping (gone), or -errno. */
int proc_maps(pid_t pid, struct vma *out, int max, int *n);

/* Kernel-provided mappings that are never saved or rebuilt. */
int vma_is_special(const struct vma *v);
/* Mappings whose contents are saved in the pool: private, readable, not executable code and not
 * kernel-provided.  Shared mappings are not persisted (warned); text is rebuilt from its file. */
int vma_is_saved(const struct vma *v);
int vma_is_stack(const struct vma *v);
int vma_is_heap(const struct vma *v);

struct fd_info {
	int fd;
	unsigned flags;
	uint64_t pos, size;        /* size: of a regular file */
	uint64_t ino;              /* of what the fd names (0: not known: a kernel object /proc shows by its link) */
	int type;                  /* enum img_fd_type */
	char path[VMA_PATH_MAX];
};
int proc_fds(pid_t pid, struct fd_info *out, int max, int *n);

struct proc_status {
	uint64_t sigblk;
	unsigned umask;
	char comm[16];
	/* from /proc/PID/stat: the memory layout the kernel keeps (prctl(PR_SET_MM_MAP) sets it) */
	uint64_t start_code, end_code, start_stack, start_data, end_data, start_brk;
	uint64_t arg_start, arg_end, env_start, env_end;
};
/* n bytes of process pid's memory at addr, read or written whole (process_vm_readv/writev:
 * the mapping's protection applies); 0 or -EIO. */
int proc_mem_read(pid_t pid, uint64_t addr, void *to, size_t n);
int proc_mem_write(pid_t pid, uint64_t addr, const void *from, size_t n);
/* The same for n pairs of ranges, local[i] and remote[i] of equal length, of any total size: the
 * kernel moves at most MAX_RW_COUNT (2 GiB - 4 KiB) per call and returns the count it moved, so
 * the rest is asked for again.  The iovecs are consumed.  0, or -EIO with *bad the remote
 * address where it stopped (unmapped or protected). */
struct iovec;
int proc_mem_readv(pid_t pid, struct iovec *local, struct iovec *remote, size_t n, uint64_t *bad);
int proc_mem_writev(pid_t pid, struct iovec *local, struct iovec *remote, size_t n, uint64_t *bad);
/* The threads of process pid now (/proc/PID/task), at most cap into tids: their number (all of
 * them, even past cap), or -1 if the process is gone. */
int proc_threads(pid_t pid, pid_t *tids, int cap);
/* Every task of the system traced by tracer: at most cap of them into tids (and their processes
 * into tgids); their number (all, even past cap). */
int proc_traced_by(pid_t tracer, pid_t *tids, pid_t *tgids, int cap);
/* The name of thread tid of process pid (/proc/PID/task/TID/comm) into comm[16]; 0 or -1. */
int proc_thread_comm(pid_t pid, pid_t tid, char comm[16]);
int proc_status(pid_t pid, struct proc_status *out);
/* The parent of process pid (the system's id, /proc/PID/stat; a zombie keeps it); 0 if gone. */
pid_t proc_parent(pid_t pid);
/* The foreground process group of pid's controlling terminal (the system's id); 0 if it has none. */
pid_t proc_tty_pgrp(pid_t pid);
/* A copy of the fd at number fd of process pid (pidfd_getfd: the same open file, O_CLOEXEC), or
 * -errno. */
int proc_fd_copy(pid_t pid, int fd);
/* Process pid's controlling terminal (stat's tty_nr: its device number, 0 for none), or -1. */
int proc_tty_nr(pid_t pid);
/* Has process pid ended, or is it ending: gone, or no memory left (a live process always has
 * some: /proc/PID/statm counts none only after exit_mm)? */
int proc_gone(pid_t pid);
/* Process pid's memory in place (statm's resident pages), in bytes; 0 if it cannot be read. */
uint64_t proc_resident_bytes(pid_t pid);
/* Counters of process pid, every thread's (/proc/PID/stat): minor faults, system time in clock
 * ticks, resident pages.  A first touch of new memory is a fault that adds a resident page; a
 * copy-on-write or a write-protect fault adds none.  Safe from any thread (no shared buffer). */
struct proc_counts {
	uint64_t minflt, stime_ticks, resident_pages;
};
int proc_stat_counts(pid_t pid, struct proc_counts *c); /* 0, or -1 (all zero) */

/* A small /proc file (a stat line, an fdinfo) read whole into buf, NUL-terminated: its length,
 * or -1 (missing, empty).  Safe from any thread: no state kept. */
int proc_read_small(const char *path, char *buf, size_t cap);

/* Identity of a file: size, mtime, inode, device, and the ELF build-id if it has one. */
struct file_id {
	uint64_t size, mtime_ns, ino, dev;
	uint32_t build_id_len;
	uint8_t build_id[32];
};
int file_identity(const char *path, struct file_id *out);

/* The running kernel's release string (read once). */
const char *kernel_release(void);

/* XSAVE feature mask of this CPU/kernel (XCR0). */
uint64_t cpu_xcr0(void);

#endif

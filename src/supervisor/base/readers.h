/* readers.h -- a stopped process's memory read by every core at once (readers.c).
 *
 * While a process is stopped for its cut, the cores it ran on are idle; one thread reading with
 * process_vm_readv moves 1.4-3.1 GB/s here, two threads each reading half 5.8-10 GB/s
 * (`bench/cut_costs`, docs/run-resume.md).  So a stop's read is split by bytes between the
 * calling thread and up to READERS_MAX - 1 helper threads, started once and kept.
 *
 * Invariants
 *   - Only for a process that does not run meanwhile (the stop): the parts are read in no order.
 *   - The caller's pairs are spent (proc_mem_readv moves them on); on failure, *bad is an address
 *     that could not be read (the first such part's, by part order), errno what the kernel said,
 *     and -EIO is returned.
 *   - Below READERS_SPLIT_MIN bytes, or on one CPU, the caller reads alone (a helper's wake-up
 *     costs more than it saves).
 */
#ifndef PROSPER_SUP_READERS_H
#define PROSPER_SUP_READERS_H
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#define READERS_MAX 4
#define READERS_SPLIT_MIN (1ull << 20)

/* A growable list of (local, remote) iovec pairs: what a read is given, and each thread's share. */
struct iov_pairs {
	struct iovec *local, *remote;
	size_t n, cap;
};

/* Append a pair of `len` bytes.  0, or -ENOMEM (the list as it was). */
int iov_pairs_add(struct iov_pairs *l, void *local, void *remote, size_t len);

/* Read n pairs (remote -> local) of pid, `total` bytes in all.  The number of threads that read
 * (1 when the caller read alone), or -EIO with *bad set. */
int readers_readv(pid_t pid, struct iovec *local, struct iovec *remote, size_t n, uint64_t total, uint64_t *bad);

#endif

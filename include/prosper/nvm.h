/* nvm.h -- NVM-resident memory for programs run under `prosper run` (Kindle's MAP_NVM).
 *
 * Link with -lprosper-nvm.  prosper_nvm_alloc(size) returns memory that, under the supervisor,
 * lives directly in the pool: it is a direct region (libcrpm's default mode, include/prosper/pool.h)
 * mapped into the program at a fixed address, so a checkpoint copies nothing of it; the first
 * write to each segment (64 KiB) in a checkpoint interval makes the supervisor copy that segment's
 * committed contents into a backup slot first (copy-on-write).  Ordinary memory stays in DRAM and
 * is checkpointed as before.  After kill -9 and `prosper resume`, the memory is mapped again at
 * the same address with exactly the contents of the last committed checkpoint, consistent with
 * the DRAM state of that checkpoint: pointers to it kept anywhere stay valid.
 *
 * Without the supervisor (or when it does not checkpoint) the same calls return plain anonymous
 * memory, so a program behaves the same with and without `prosper run`.
 *
 * Caveats (docs/run-resume.md, "NVM-resident memory"; docs/limitations.md):
 *   - The memory is zero-filled and page-aligned; sizes are rounded up to whole segments under
 *     the supervisor.  Freed address ranges are not reused.
 *   - A system call that writes into NVM memory (read(2) into it) fails with EFAULT when it is
 *     the first write to a segment in an interval: write through user code, or touch the buffer
 *     first.
 *   - A forked child must not call these functions or write NVM memory (it is not supervised).
 */
#ifndef PROSPER_NVM_H
#define PROSPER_NVM_H
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* size bytes of zeroed NVM-resident memory, or NULL with errno set (EINVAL for size 0, ENOMEM). */
void *prosper_nvm_alloc(size_t size);
/* Release memory prosper_nvm_alloc returned; NULL is ignored.  0, or -1 with errno (EINVAL: not
 * an address prosper_nvm_alloc returned). */
int prosper_nvm_free(void *ptr);

#ifdef __cplusplus
}
#endif
#endif

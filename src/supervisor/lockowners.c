/* lockowners.c -- after a resume, the locks a thread held are given the thread's new id
 * (lockowners.h).
 *
 * glibc names the owner of some locks by thread id, and a resume gives every thread a new one.
 * Natively a relock by the owner is caught by that id: a recursive mutex counts it, an
 * error-checking one and a write-locked rwlock return EDEADLK, and code relies on it (OpenSSL's
 * provider walk re-takes a write lock it holds and goes on after EDEADLK).  With the old id in
 * place the same relock waits for a thread that no longer exists: a checkpoint taken inside
 * dlopen (ld.so's recursive _dl_load_lock) or inside Python's `import hashlib` (OpenSSL's rwlock)
 * resumed into a program hung for good.
 *
 * So every writable private mapping of the rebuilt program is scanned, 8-byte aligned, for a
 * 32-bit word equal to an old id in the owner position of a held lock of glibc's x86-64 layout:
 *   pthread_mutex_t   __lock @0 (!= 0), __count @4, __owner @8, __nusers @12 (>= 1), __kind @16:
 *                     recursive, error-checking, robust or priority-inheriting (for the last two
 *                     __lock itself holds the owner's id in its low 30 bits and is rewritten too);
 *                     a normal mutex is left alone (nothing reads its owner);
 *   pthread_rwlock_t  __writers_futex @12 (1 or 2: write-locked), __pad3 @16 = __pad4 @20 = 0,
 *                     __cur_writer @24, __shared @28 (0 or 1), __pad2 @40 = 0, __flags @48 (<= 2).
 * The owner (and robust/PI lock word) is rewritten to the new id through /proc/PID/mem, after
 * tracking is on, so the next checkpoint saves it.  A word that merely looks like such a lock
 * would be changed too: the shape checks and the id match make that unlikely, not impossible
 * (docs/run-resume.md).
 */
#include "lockowners.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK (4u << 20)
#define MUTEX_BYTES 40
#define RWLOCK_BYTES 56
#define KIND_RECURSIVE 1
#define KIND_ERRORCHECK 2
#define KIND_ROBUST 16
#define KIND_PI 32
#define FUTEX_TID_MASK 0x3fffffffu

static uint32_t u32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static uint64_t u64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

/* The index of id among the old ids, or -1. */
static int old_index(uint32_t id, const pid_t *old, int n)
{
	for (int t = 0; t < n; t++)
		if (id == (uint32_t)old[t])
			return t;
	return -1;
}

/* Is m (MUTEX_BYTES) a held mutex whose owner matters, owned by old[t]?  *lock_word: the lock
 * word holds the id too (robust, PI). */
static int held_mutex(const uint8_t *m, int *lock_word)
{
	uint32_t lock = u32(m), nusers = u32(m + 12), kind = u32(m + 16) & 0x7f;
	uint32_t type = kind & 3;
	if (!lock || !nusers || (kind & 64))
		return 0; /* free, or priority-protect (no owner in the lock word, rare) */
	*lock_word = (kind & (KIND_ROBUST | KIND_PI)) != 0;
	if (*lock_word)
		return (lock & FUTEX_TID_MASK) == u32(m + 8);
	return type == KIND_RECURSIVE ? u32(m + 4) >= 1 : type == KIND_ERRORCHECK;
}

static int held_rwlock(const uint8_t *w)
{
	uint32_t wf = u32(w + 12), shared = u32(w + 28), flags = u32(w + 48);
	return (wf == 1 || wf == 2) && !u32(w + 16) && !u32(w + 20) && shared <= 1 && !u64(w + 40) && flags <= 2;
}

static int put(int fd, uint64_t addr, uint32_t v)
{
	return pwrite(fd, &v, 4, (off_t)addr) == 4 ? 0 : -1;
}

/* Scan one chunk: buf holds [addr, addr + len) of the program. */
static int scan(int fd, const uint8_t *buf, uint64_t addr, size_t len, const pid_t *old, const pid_t *now, int n)
{
	int found = 0;
	for (size_t off = 0; off + 8 <= len; off += 8) {
		uint32_t v = u32(buf + off);
		int t = v ? old_index(v, old, n) : -1;
		if (t < 0 || old[t] == now[t])
			continue;
		int lock_word;
		if (off >= 8 && off - 8 + MUTEX_BYTES <= len && held_mutex(buf + off - 8, &lock_word)) {
			if (put(fd, addr + off, (uint32_t)now[t]) != 0)
				return -1;
			uint32_t lw = u32(buf + off - 8);
			if (lock_word && put(fd, addr + off - 8, (lw & ~FUTEX_TID_MASK) | (uint32_t)now[t]) != 0)
				return -1;
			found++;
		} else if (off >= 24 && off - 24 + RWLOCK_BYTES <= len && held_rwlock(buf + off - 24)) {
			if (put(fd, addr + off, (uint32_t)now[t]) != 0)
				return -1;
			found++;
		}
	}
	return found;
}

int lock_owners_retag(pid_t pid, const struct img *im, const pid_t *old, const pid_t *now, int n)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/mem", (int)pid);
	int fd = open(p, O_RDWR | O_CLOEXEC);
	uint8_t *buf = malloc(CHUNK);
	int total = 0;
	if (fd < 0 || !buf) {
		total = -1;
		goto out;
	}
	for (uint32_t i = 0; i < im->h->nvmas && total >= 0; i++) {
		const struct img_vma *v = &im->vmas[i];
		if (v->perms[1] != 'w' || v->perms[3] != 'p')
			continue;
		/* chunks overlap by a lock's size, so one that straddles a boundary is seen whole */
		for (uint64_t a = v->start; a < v->end && total >= 0;) {
			size_t len = v->end - a < CHUNK ? (size_t)(v->end - a) : CHUNK;
			if (pread(fd, buf, len, (off_t)a) != (ssize_t)len)
				break; /* a part the program never touched that cannot be read: nothing held there */
			int k = scan(fd, buf, a, len, old, now, n);
			total = k < 0 ? -1 : total + k;
			if (a + len >= v->end)
				break;
			a += len - RWLOCK_BYTES;
		}
	}
out:
	free(buf);
	if (fd >= 0)
		close(fd);
	return total;
}

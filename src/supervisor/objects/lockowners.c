/* lockowners.c -- after a resume, the locks a thread held that glibc names by its id are given
 * the thread's new id (lockowners.h).
 *
 * A resume gives every thread a new id, but some locks name their owner by id: a relock by the
 * owner of a recursive mutex is counted by that id, and a robust mutex's lock word is its
 * owner's id.  With the old id in place, a checkpoint taken inside dlopen() (ld.so's recursive
 * _dl_load_lock held) resumed into a loader whose unlock failed and whose next lock waited for its
 * old self forever, and a robust mutex held across a checkpoint could not be unlocked.
 *
 * Only locks that are known to be locks are touched -- a scan of all memory for "an id in the
 * owner position of something shaped like a lock" once changed graph data of pr and sssp:
 *   - ld.so's own locks: every held recursive pthread_mutex_t (glibc's x86-64 layout: __lock @0,
 *     __count @4, __owner @8, __nusers @12, __kind @16) inside _rtld_global, whose address and
 *     size come from ld.so's dynamic symbol table;
 *   - robust mutexes: the ones each thread holds are on its robust list (the kernel's
 *     robust_list_head, registered by glibc for every thread), walked from its head; their lock
 *     word (id in the low 30 bits) and __owner are rewritten.
 * Other locks of the program's own that name an owner (error-checking and recursive mutexes,
 * write-locked rwlocks) keep the old id: docs/limitations.md.  Writes go through /proc/PID/mem
 * after tracking is on, so the next checkpoint saves them.
 */
#include "lockowners.h"
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MUTEX_BYTES 40
#define KIND_RECURSIVE 1
#define KIND_MASK 0x7f
#define FUTEX_TID_MASK 0x3fffffffu
#define ROBUST_LIST_MAX 4096

/* The loader among the checkpoint's mappings: its path and load address (the start of its
 * mapping at file offset 0).  0, or -1 when the program has none (statically linked). */
static int find_loader(const struct img *im, const char **path, uint64_t *base)
{
	for (uint32_t i = 0; i < im->h->nvmas; i++) {
		const char *p = img_s(im, im->vmas[i].path);
		const char *b = p ? strrchr(p, '/') : NULL;
		if (b && !strncmp(b + 1, "ld-linux", 8) && im->vmas[i].offset == 0) {
			*path = p;
			*base = im->vmas[i].start;
			return 0;
		}
	}
	return -1;
}

/* The value and size of a dynamic symbol of an ELF file; 0 or -1. */
static int dynsym(const char *path, const char *name, uint64_t *value, uint64_t *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = -1;
	Elf64_Ehdr eh;
	Elf64_Shdr *sh = NULL;
	char *strs = NULL;
	Elf64_Sym *syms = NULL;
	if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof *sh || eh.e_shnum == 0 || eh.e_shnum > 4096)
		goto out;
	sh = malloc((size_t)eh.e_shnum * sizeof *sh);
	if (!sh || pread(fd, sh, (size_t)eh.e_shnum * sizeof *sh, (off_t)eh.e_shoff) != (ssize_t)(eh.e_shnum * sizeof *sh))
		goto out;
	for (unsigned i = 0; i < eh.e_shnum && rc; i++) {
		if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh.e_shnum || sh[i].sh_entsize != sizeof(Elf64_Sym) ||
		    sh[i].sh_size > (64u << 20) || sh[sh[i].sh_link].sh_size > (64u << 20))
			continue;
		const Elf64_Shdr *st = &sh[sh[i].sh_link];
		syms = malloc(sh[i].sh_size);
		strs = malloc(st->sh_size + 1);
		if (!syms || !strs || pread(fd, syms, sh[i].sh_size, (off_t)sh[i].sh_offset) != (ssize_t)sh[i].sh_size ||
		    pread(fd, strs, st->sh_size, (off_t)st->sh_offset) != (ssize_t)st->sh_size)
			goto out;
		strs[st->sh_size] = 0;
		for (size_t k = 0; k < sh[i].sh_size / sizeof *syms; k++)
			if (syms[k].st_name < st->sh_size && !strcmp(strs + syms[k].st_name, name) && syms[k].st_value) {
				*value = syms[k].st_value;
				*size = syms[k].st_size;
				rc = 0;
				break;
			}
		free(syms), free(strs);
		syms = NULL, strs = NULL;
	}
out:
	free(sh), free(syms), free(strs);
	close(fd);
	return rc;
}

static int read32(int fd, uint64_t addr, uint32_t *v)
{
	return pread(fd, v, 4, (off_t)addr) == 4 ? 0 : -1;
}

static int write32(int fd, uint64_t addr, uint32_t v)
{
	return pwrite(fd, &v, 4, (off_t)addr) == 4 ? 0 : -1;
}

/* The index of id among the old ids whose thread got a new one, or -1. */
static int renamed(uint32_t id, const pid_t *old, const pid_t *now, int n)
{
	for (int t = 0; t < n; t++)
		if (id && id == (uint32_t)old[t] && old[t] != now[t])
			return t;
	return -1;
}

/* ld.so's held recursive locks; the number retagged, or -1. */
static int retag_loader(int fd, const struct img *im, const pid_t *old, const pid_t *now, int n)
{
	const char *path;
	uint64_t base, value = 0, size = 0;
	if (find_loader(im, &path, &base) != 0 || dynsym(path, "_rtld_global", &value, &size) != 0 ||
	    size < MUTEX_BYTES || size > (1u << 20))
		return 0; /* no loader, or one without the symbol: nothing we know how to fix */
	uint8_t *g = malloc(size);
	int found = 0;
	if (!g || pread(fd, g, size, (off_t)(base + value)) != (ssize_t)size) {
		free(g);
		return -1;
	}
	for (uint64_t off = 0; off + MUTEX_BYTES <= size && found >= 0; off += 8) {
		uint32_t lock, count, owner, kind;
		memcpy(&lock, g + off, 4), memcpy(&count, g + off + 4, 4);
		memcpy(&owner, g + off + 8, 4), memcpy(&kind, g + off + 16, 4);
		int t = renamed(owner, old, now, n);
		if (!lock || !count || (kind & KIND_MASK) != KIND_RECURSIVE || t < 0)
			continue;
		found = write32(fd, base + value + off + 8, (uint32_t)now[t]) == 0 ? found + 1 : -1;
	}
	free(g);
	return found;
}

/* The robust mutexes on the list whose kernel head is at head; the number retagged, or -1.
 * struct robust_list_head { next; long futex_offset; list_op_pending }: each entry is the list
 * node inside a mutex, whose lock word is at entry + futex_offset. */
static int retag_robust(int fd, uint64_t head, const pid_t *old, const pid_t *now, int n)
{
	uint64_t h[3];
	if (!head || pread(fd, h, sizeof h, (off_t)head) != (ssize_t)sizeof h)
		return 0;
	int64_t off = (int64_t)h[1];
	int found = 0;
	uint64_t entry = h[0];
	for (int k = 0; k < ROBUST_LIST_MAX && entry && entry != head; k++) {
		uint32_t lock, owner;
		uint64_t word = entry + (uint64_t)off;
		if (read32(fd, word, &lock) != 0 || read32(fd, word + 8, &owner) != 0)
			return found;
		int t = renamed(lock & FUTEX_TID_MASK, old, now, n);
		if (t >= 0) {
			if (write32(fd, word, (lock & ~FUTEX_TID_MASK) | (uint32_t)now[t]) != 0 ||
			    (owner == (uint32_t)old[t] && write32(fd, word + 8, (uint32_t)now[t]) != 0))
				return -1;
			found++;
		}
		if (pread(fd, &entry, 8, (off_t)entry) != 8)
			break;
	}
	return found;
}

int lock_owners_retag(pid_t pid, const struct img *im, const uint64_t *robust_heads, const pid_t *old, const pid_t *now,
		      int n)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/mem", (int)pid);
	int fd = open(p, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int total = retag_loader(fd, im, old, now, n);
	for (int t = 0; t < n && total >= 0; t++) {
		int k = retag_robust(fd, robust_heads[t], old, now, n);
		total = k < 0 ? -1 : total + k;
	}
	close(fd);
	return total;
}

/* loaderlocks.c -- the dynamic loader's locks after a resume (loaderlocks.h).
 *
 * ld.so serialises dlopen/dlclose and TLS setup with recursive mutexes kept in its _rtld_global
 * (_dl_load_lock, _dl_load_write_lock, _dl_load_tls_lock).  A recursive mutex names its owner by
 * thread id, and a resume gives every thread a new id: a checkpoint taken inside dlopen() -- a
 * library's constructor running, Python importing an extension module -- resumed into a loader
 * whose unlock fails (not the owner) and whose next lock waits for its old self forever.
 *
 * So after a resume every such lock held by an old id is given to the thread that has that
 * thread's place now.  _rtld_global's address and size come from ld.so's dynamic symbol table;
 * inside it a lock is recognised by glibc's x86-64 pthread_mutex_t layout (__lock @0, __count @4,
 * __owner @8, __kind @16): recursive kind, held (__lock != 0, __count >= 1), owner == the old id.
 * Writes go through /proc/PID/mem after tracking is on, so the next checkpoint saves them.
 */
#include "loaderlocks.h"
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MUTEX_BYTES 40
#define KIND_RECURSIVE 1
#define KIND_MASK 0x7f

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

int loader_locks_retag(pid_t pid, const struct img *im, const pid_t *old_tids, const pid_t *new_tids, int n)
{
	const char *path;
	uint64_t base, value, size;
	if (find_loader(im, &path, &base) != 0 || dynsym(path, "_rtld_global", &value, &size) != 0)
		return 0; /* no loader, or one without the symbol: nothing we know how to fix */
	if (size < MUTEX_BYTES || size > (1u << 20))
		return 0;
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/mem", (int)pid);
	int fd = open(p, O_RDWR | O_CLOEXEC);
	uint8_t *g = malloc(size);
	int retagged = 0;
	if (fd < 0 || !g || pread(fd, g, size, (off_t)(base + value)) != (ssize_t)size) {
		retagged = -1;
		goto out;
	}
	for (uint64_t off = 0; off + MUTEX_BYTES <= size; off += 8) {
		int32_t lock, owner, kind;
		uint32_t count;
		memcpy(&lock, g + off, 4), memcpy(&count, g + off + 4, 4);
		memcpy(&owner, g + off + 8, 4), memcpy(&kind, g + off + 16, 4);
		if (!lock || !count || (kind & KIND_MASK) != KIND_RECURSIVE || owner <= 0)
			continue;
		for (int t = 0; t < n; t++) {
			if (owner != old_tids[t] || old_tids[t] == new_tids[t])
				continue;
			int32_t now = new_tids[t];
			if (pwrite(fd, &now, 4, (off_t)(base + value + off + 8)) != 4) {
				retagged = -1;
				goto out;
			}
			retagged++;
			break;
		}
	}
out:
	free(g);
	if (fd >= 0)
		close(fd);
	return retagged;
}

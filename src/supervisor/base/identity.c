/* identity.c -- what a checkpoint is tied to besides the program: the identity of a file (size,
 * mtime, inode, device, ELF build-id), the kernel's release, the CPU's extended-state features
 * (procfs.h).  A resume refuses when one differs (restore_check.c). */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "procfs.h"

const char *kernel_release(void)
{
	static char rel[128];
	if (!rel[0]) {
		FILE *k = fopen("/proc/sys/kernel/osrelease", "re");
		if (k) {
			if (fgets(rel, sizeof rel, k))
				rel[strcspn(rel, "\n")] = 0;
			fclose(k);
		}
	}
	return rel;
}

/* The GNU build-id note of an ELF file, if any. */
static void elf_build_id(int fd, struct file_id *id)
{
	Elf64_Ehdr eh;
	if (pread(fd, &eh, sizeof eh, 0) != sizeof eh || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > 256)
		return;
	for (int i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (uint64_t)i * sizeof ph)) != sizeof ph)
			return;
		if (ph.p_type != PT_NOTE || ph.p_filesz > 4096)
			continue;
		uint8_t notes[4096];
		if (pread(fd, notes, ph.p_filesz, (off_t)ph.p_offset) != (ssize_t)ph.p_filesz)
			return;
		for (uint64_t at = 0; at + sizeof(Elf64_Nhdr) <= ph.p_filesz;) {
			Elf64_Nhdr nh;
			memcpy(&nh, notes + at, sizeof nh);
			uint64_t name = at + sizeof nh, desc = name + ((nh.n_namesz + 3) & ~3u);
			uint64_t next = desc + ((nh.n_descsz + 3) & ~3u);
			if (next > ph.p_filesz)
				break;
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && !memcmp(notes + name, "GNU", 4) &&
			    nh.n_descsz <= sizeof id->build_id) {
				memcpy(id->build_id, notes + desc, nh.n_descsz);
				id->build_id_len = nh.n_descsz;
				return;
			}
			at = next;
		}
	}
}

int file_identity(const char *path, struct file_id *out)
{
	memset(out, 0, sizeof *out);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) != 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	out->size = (uint64_t)st.st_size;
	out->mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec;
	out->ino = st.st_ino;
	out->dev = st.st_dev;
	if (S_ISREG(st.st_mode))
		elf_build_id(fd, out);
	close(fd);
	return 0;
}

uint64_t cpu_xcr0(void)
{
	uint32_t lo, hi;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return ((uint64_t)hi << 32) | lo;
}

/* procfs.c -- readers of /proc/PID/{maps,fd,fdinfo,status,stat}, file identities (procfs.h). */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "image.h"
#include "procfs.h"

int proc_maps(pid_t pid, struct vma *out, int max, int *n)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	char line[VMA_PATH_MAX + 128];
	*n = 0;
	int rc = 0;
	while (fgets(line, sizeof line, f)) {
		if (*n == max) {
			rc = -ENOSPC;
			break;
		}
		struct vma v = { .region = -1 };
		unsigned long long a, b, off;
		int pos = 0;
		if (sscanf(line, "%llx-%llx %4s %llx %*s %*s%n", &a, &b, v.perms, &off, &pos) < 4)
			continue;
		v.start = a;
		v.end = b;
		v.offset = off;
		char *p = line + pos;
		while (*p == ' ')
			p++;
		p[strcspn(p, "\n")] = 0;
		snprintf(v.path, sizeof v.path, "%s", p);
		out[(*n)++] = v;
	}
	fclose(f);
	return rc;
}

int vma_is_special(const struct vma *v)
{
	return !strcmp(v->path, "[vvar]") || !strcmp(v->path, "[vdso]") || !strcmp(v->path, "[vsyscall]") ||
	       !strcmp(v->path, "[vvar_vclock]");
}

int vma_is_saved(const struct vma *v)
{
	if (v->perms[3] != 'p' || v->perms[0] != 'r' || vma_is_special(v))
		return 0;
	return v->perms[1] == 'w' || v->perms[2] != 'x';
}

int vma_is_stack(const struct vma *v) { return !strcmp(v->path, "[stack]"); }
int vma_is_heap(const struct vma *v) { return !strcmp(v->path, "[heap]"); }

static int read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, cap - 1);
	int e = errno;
	close(fd);
	if (n < 0)
		return -e;
	buf[n] = 0;
	return 0;
}

int proc_fds(pid_t pid, struct fd_info *out, int max, int *n)
{
	char dir[64];
	snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	*n = 0;
	struct dirent *e;
	int rc = 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		if (*n == max) {
			rc = -ENOSPC;
			break;
		}
		struct fd_info fi = { .fd = atoi(e->d_name) };
		char p[320], info[512];
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		ssize_t l = readlink(p, fi.path, sizeof fi.path - 1);
		if (l < 0)
			continue; /* closed meanwhile: the process is stopped, so it was ours */
		fi.path[l] = 0;
		struct stat st;
		if (stat(p, &st) != 0)
			fi.type = IMG_FD_OTHER;
		else if (S_ISREG(st.st_mode))
			fi.type = IMG_FD_FILE, fi.size = (uint64_t)st.st_size;
		else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
			fi.type = IMG_FD_DEVICE;
		else if (S_ISDIR(st.st_mode))
			fi.type = IMG_FD_DIR;
		else
			fi.type = IMG_FD_OTHER;
		if (fi.type != IMG_FD_OTHER && fi.path[0] != '/')
			fi.type = IMG_FD_OTHER; /* memfd:, anon_inode: */
		snprintf(p, sizeof p, "/proc/%d/fdinfo/%s", (int)pid, e->d_name);
		if (read_small(p, info, sizeof info) == 0) {
			char *s = strstr(info, "pos:");
			if (s)
				fi.pos = strtoull(s + 4, NULL, 10);
			s = strstr(info, "flags:");
			if (s)
				fi.flags = (unsigned)strtoul(s + 6, NULL, 8);
		}
		out[(*n)++] = fi;
	}
	closedir(d);
	return rc;
}

int proc_status(pid_t pid, struct proc_status *out)
{
	char p[64], buf[4096];
	memset(out, 0, sizeof *out);
	snprintf(p, sizeof p, "/proc/%d/status", (int)pid);
	int rc = read_small(p, buf, sizeof buf);
	if (rc)
		return rc;
	char *s = strstr(buf, "\nUmask:");
	if (s)
		out->umask = (unsigned)strtoul(s + 7, NULL, 8);
	s = strstr(buf, "\nSigBlk:");
	if (s)
		out->sigblk = strtoull(s + 8, NULL, 16);
	snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
	if ((rc = read_small(p, buf, sizeof buf)) != 0)
		return rc;
	/* fields after the command name (which may hold spaces) start at the last ')' */
	char *f = strrchr(buf, ')');
	if (!f)
		return -EPROTO;
	f += 2; /* field 3 */
	for (int field = 3; field < 47 && f; field++) {
		f = strchr(f, ' ');
		if (f)
			f++;
	}
	if (!f)
		return -EPROTO;
	out->start_brk = strtoull(f, NULL, 10);
	return 0;
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

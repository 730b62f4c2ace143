/* sharedmem.c -- shared memory of the program's processes (sharedmem.h). */
#include "sharedmem.h"
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "inject.h"
#include "tree_image.h"

#define MAX_SHM_HOLDS 4096 /* mappings and fds of kept objects in the whole tree at one cut */
#define DELETED " (deleted)"

/* What holds each object at this cut: a mapping (start < end) or an fd (fd >= 0). */
static struct shm_hold {
	uint32_t obj;
	pid_t pid;        /* ours, to read it */
	int32_t own_pid;  /* the program's */
	uint64_t start, end, offset;
	int fd;
} holds[MAX_SHM_HOLDS];
static int nholds;
static struct shm_obj {
	uint64_t ino, size;
	uint32_t nuses;
	char path[VMA_PATH_MAX]; /* a /dev/shm name; "" for none */
} objs[TREE_MAX_SHMS];
static int nobjs, over;

static int ends_deleted(const char *p)
{
	size_t l = strlen(p), d = sizeof DELETED - 1;
	return l > d && !strcmp(p + l - d, DELETED);
}

int shm_kept_path(const char *p)
{
	return p[0] == '/' && strncmp(p, "/SYSV", 5) && (ends_deleted(p) || !strncmp(p, "/dev/shm/", 9));
}

int shm_kept_mapping(const struct vma *v)
{
	if (v->perms[3] != 's' || vma_is_special(v))
		return 0;
	return !strncmp(v->path, "[anon_shmem:", 12) || shm_kept_path(v->path);
}

/* The object of inode ino, added if new; -1 when there are too many. */
static int object(uint64_t ino, const char *path)
{
	int o = 0;
	while (o < nobjs && objs[o].ino != ino)
		o++;
	if (o == nobjs) {
		if (nobjs == TREE_MAX_SHMS)
			return over = 1, -1;
		objs[nobjs] = (struct shm_obj){ .ino = ino };
		if (!strncmp(path, "/dev/shm/", 9) && !ends_deleted(path))
			snprintf(objs[nobjs].path, sizeof objs[nobjs].path, "%s", path);
		nobjs++;
	}
	return o;
}

static void hold(int o, const struct shm_hold *h)
{
	if (o < 0 || nholds == MAX_SHM_HOLDS) {
		over = 1;
		return;
	}
	holds[nholds] = *h;
	holds[nholds++].obj = (uint32_t)o;
}

void shm_begin(struct tree *t)
{
	(void)t;
	nholds = nobjs = over = 0;
}

int shm_note_fd(struct sup *s, int fd, const char *path, uint64_t *ino)
{
	char p[64];
	struct stat st;
	struct statfs fs;
	snprintf(p, sizeof p, "/proc/%d/fd/%d", (int)s->pid, fd);
	/* a deleted file elsewhere than in memory (a disk's) is not the program's memory */
	if (stat(p, &st) != 0 || !S_ISREG(st.st_mode) || statfs(p, &fs) != 0 || fs.f_type != TMPFS_MAGIC)
		return 0;
	struct stat pool;
	if (stat(s->tree->pool_path, &pool) == 0 && pool.st_ino == st.st_ino && pool.st_dev == st.st_dev)
		return 0; /* the pool itself (NVM memory, nvm.c) */
	*ino = (uint64_t)st.st_ino;
	int o = object(*ino, path);
	if (o >= 0 && (uint64_t)st.st_size > objs[o].size)
		objs[o].size = (uint64_t)st.st_size;
	hold(o, &(struct shm_hold){ .pid = s->pid, .own_pid = s->own_pid ? s->own_pid : s->pid, .fd = fd });
	return 1;
}

int shm_scan(struct tree *t)
{
	for (int i = 0; i < t->nprocs; i++) {
		const struct sup *m = t->procs[i];
		for (int k = 0; k < m->nprev && !m->exited; k++) {
			const struct vma *v = &m->prev[k];
			if (!shm_kept_mapping(v) || sup_nvm_find((struct sup *)m, v->start))
				continue; /* NVM memory is the pool's own (nvm.c) */
			int o = object(v->ino, v->path);
			uint64_t reach = v->offset + (v->end - v->start);
			if (o >= 0 && reach > objs[o].size)
				objs[o].size = reach;
			if (o >= 0)
				objs[o].nuses++;
			hold(o, &(struct shm_hold){ .pid = m->pid, .own_pid = m->own_pid ? m->own_pid : m->pid, .start = v->start,
						    .end = v->end, .offset = v->offset, .fd = -1 });
		}
	}
	uint64_t total = 0;
	for (int o = 0; o < nobjs; o++) {
		total += objs[o].size;
		over |= objs[o].nuses > TREE_MAX_SHM_USES;
	}
	if (over || total > SHM_MAX_BYTES) {
		if (!t->warned_shm) {
			t->warned_shm = 1;
			fprintf(stderr, "prosper: warning: the program's shared memory (%d objects, %llu KiB) is more than a "
					"checkpoint keeps (%u MiB): a resume of it is refused\n",
				nobjs, (unsigned long long)(total >> 10), SHM_MAX_BYTES >> 20);
		}
		nholds = nobjs = 0;
	}
	return nobjs > 0;
}

/* The bytes of object o: through an fd that holds it if any (its whole file), else through each
 * mapping of it.  Every mapping and fd shows the same memory: each range is read once. */
static int read_object(int o, uint8_t *bytes)
{
	for (int k = 0; k < nholds; k++)
		if (holds[k].obj == (uint32_t)o && holds[k].fd >= 0) {
			char p[64];
			snprintf(p, sizeof p, "/proc/%d/fd/%d", (int)holds[k].pid, holds[k].fd);
			int f = open(p, O_RDONLY | O_CLOEXEC);
			if (f < 0)
				continue; /* opened write-only: read it through a mapping */
			ssize_t got = pread(f, bytes, objs[o].size, 0);
			close(f);
			if (got >= 0)
				return 0; /* past its end (a mapping reaches further): zeros, as the kernel shows */
		}
	for (int k = 0; k < nholds; k++) {
		const struct shm_hold *h = &holds[k];
		if (h->obj != (uint32_t)o || h->fd >= 0)
			continue;
		int seen = 0;
		for (int j = 0; j < k && !seen; j++)
			seen = holds[j].obj == (uint32_t)o && holds[j].fd < 0 && holds[j].offset <= h->offset &&
			       holds[j].offset + (holds[j].end - holds[j].start) >= h->offset + (h->end - h->start);
		int rc = seen ? 0 : proc_mem_read(h->pid, h->start, bytes + h->offset, h->end - h->start);
		if (rc)
			return rc;
	}
	return 0;
}

int shm_capture(struct tree *t, struct img_buf *blob)
{
	static struct tree_shm_use uses[TREE_MAX_SHM_USES];
	int rc = 0;
	for (int o = 0; o < nobjs && !rc; o++) {
		uint8_t *bytes = calloc(1, objs[o].size ? objs[o].size : 1);
		if (!bytes)
			return -ENOMEM;
		uint32_t n = 0;
		for (int k = 0; k < nholds; k++)
			if (holds[k].obj == (uint32_t)o && holds[k].fd < 0 && n < TREE_MAX_SHM_USES)
				uses[n++] = (struct tree_shm_use){ .pid = holds[k].own_pid, .start = holds[k].start };
		rc = read_object(o, bytes);
		struct tree_shm e = { .ino = objs[o].ino, .nuses = n, .bytes = (uint32_t)objs[o].size };
		if (!rc)
			rc = tree_add_shm(blob, &e, uses, objs[o].path[0] ? objs[o].path : NULL, bytes);
		t->stats.shm_bytes += objs[o].size;
		free(bytes);
	}
	return rc;
}

/* ------------------------------------------------------------------ resume */

int shm_premake(struct tree *t, struct inject *root, uint64_t scratch, long *next, char *why, size_t whylen)
{
	static const char name[] = "prosper-shared";
	const struct tree_view *v = t->view;
	if (!v->nshms)
		return 0;
	struct premade_pipe *more = realloc(t->premade, ((size_t)t->npremade + v->nshms + 1) * sizeof *more);
	if (!more) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	t->premade = more;
	for (uint32_t i = 0; i < v->nshms; i++) {
		const struct tree_shm *e = v->shms[i];
		const char *path = v->shm_paths[i];
		long fd;
		if (path) {
			/* the name is the file system's while it exists; gone since the cut (the program
			 * unlinked it after), it is made again, as the program had it then */
			size_t l = strlen(path) + 1;
			if (inject_write(root, scratch, path, l) != 0)
				fd = -EIO;
			else
				fd = inject_syscall(root, SYS_openat, AT_FDCWD, (long)scratch, O_RDWR | O_CREAT | O_EXCL, 0600, 0, 0);
			if (fd == -EEXIST)
				continue;
		} else {
			fd = inject_write(root, scratch, name, sizeof name) == 0
				     ? inject_syscall(root, SYS_memfd_create, (long)scratch, 0, 0, 0, 0, 0) : -EIO;
		}
		long hi = fd >= 0 ? inject_syscall(root, SYS_fcntl, fd, F_DUPFD, *next, 0, 0, 0) : -1;
		if (fd >= 0)
			inject_syscall(root, SYS_close, fd, 0, 0, 0, 0, 0);
		if (hi < *next || inject_syscall(root, SYS_ftruncate, hi, (long)e->bytes, 0, 0, 0, 0) != 0) {
			snprintf(why, whylen, "cannot make the program's shared memory %s again (%s)", path ? path : "",
				 strerror(fd < 0 ? (int)-fd : EIO));
			return -1;
		}
		*next = hi + 1;
		char p[64];
		snprintf(p, sizeof p, "/proc/%d/fd/%ld", (int)root->pid, hi);
		int w = open(p, O_RDWR | O_CLOEXEC);
		ssize_t put = w >= 0 ? pwrite(w, v->shm_bytes[i], e->bytes, 0) : -1;
		if (w >= 0)
			close(w);
		if (put != (ssize_t)e->bytes) {
			snprintf(why, whylen, "cannot fill the program's shared memory again (%u KiB)", e->bytes >> 10);
			return -1;
		}
		t->premade[t->npremade++] = (struct premade_pipe){ .ino = i, .rfd = (int)hi, .wfd = (int)hi, .shm = 1 };
	}
	return 0;
}

static int premade_object(const struct tree *t, int o)
{
	for (int i = 0; o >= 0 && i < t->npremade; i++)
		if (t->premade[i].shm && t->premade[i].ino == (uint64_t)o)
			return t->premade[i].rfd;
	return -1;
}

int shm_fd_at(const struct tree *t, int32_t own_pid, uint64_t start)
{
	return premade_object(t, tree_shm_at(t->view, own_pid, start));
}

int shm_fd_of(const struct tree *t, uint64_t ino)
{
	return premade_object(t, tree_shm_of(t->view, ino));
}

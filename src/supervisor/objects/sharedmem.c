/* sharedmem.c -- shared memory of the program's processes (sharedmem.h). */
#include "sharedmem.h"
#include <dirent.h>
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
#include "fdkind.h"
#include "inject.h"
#include "tree_image.h"
#include "nvm.h"

#define MAX_SHM_HOLDS 4096 /* mappings and fds of kept objects in the whole tree at one cut */
#define DELETED " (deleted)"
#define SHM_DIR "/dev/shm/"
#define LINKS_BYTES (TREE_SHM_MAX_LINKS * (sizeof SHM_DIR + 256))

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
	int in_shm_dir;          /* it was opened in /dev/shm (its name since removed, or not) */
	uint32_t nlinks, links_len;
	char links[LINKS_BYTES]; /* its other names in /dev/shm, each NUL-ended */
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
		struct shm_obj *b = &objs[nobjs];
		b->ino = ino, b->size = 0, b->nuses = 0, b->path[0] = 0;
		b->in_shm_dir = !strncmp(path, SHM_DIR, sizeof SHM_DIR - 1);
		if (b->in_shm_dir && !ends_deleted(path))
			snprintf(b->path, sizeof b->path, "%s", path);
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
	/* a file in memory, or a deleted one anywhere: held open with no name (SQLite's temporary
	 * files, tmpfile(), O_TMPFILE), its bytes are the program's alone -- kept like its memory */
	if (stat(p, &st) != 0 || !S_ISREG(st.st_mode) || statfs(p, &fs) != 0 || (fs.f_type != TMPFS_MAGIC && !ends_deleted(path)))
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

/* The other names in /dev/shm of the objects opened there, from the directory's entries by inode
 * (no stat each).  glibc's sem_open maps a temporary name, links the semaphore's name to it and
 * removes the temporary one; Python then removes the semaphore's name.  A cut in between holds a
 * name the program will remove again after a resume: it must exist then (shm_premake). */
static void find_links(void)
{
	int any = 0;
	for (int o = 0; o < nobjs; o++) {
		objs[o].nlinks = objs[o].links_len = 0;
		any |= objs[o].in_shm_dir;
	}
	DIR *d = any ? opendir(SHM_DIR) : NULL;
	if (!d)
		return;
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_type != DT_REG && e->d_type != DT_UNKNOWN)
			continue;
		for (int o = 0; o < nobjs; o++) {
			struct shm_obj *b = &objs[o];
			char name[sizeof SHM_DIR + 256];
			if (!b->in_shm_dir || b->ino != (uint64_t)e->d_ino)
				continue;
			int n = snprintf(name, sizeof name, SHM_DIR "%s", e->d_name);
			if (!strcmp(name, b->path) || b->nlinks == TREE_SHM_MAX_LINKS || b->links_len + (size_t)n + 1 > sizeof b->links)
				continue; /* its own name; or more than a resume makes again */
			memcpy(b->links + b->links_len, name, (size_t)n + 1);
			b->links_len += (uint32_t)n + 1;
			b->nlinks++;
		}
	}
	closedir(d);
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
	/* the objects go into the epoch's blob: what the pool's metadata slot has room for, less
	 * room for the processes' own metadata, or at most SHM_MAX_BYTES */
	uint64_t room = t->pool ? prosper_pool_blob_room(t->pool) : SHM_MAX_BYTES;
	uint64_t limit = room > SHM_BLOB_MARGIN ? room - SHM_BLOB_MARGIN : 0;
	if (limit > SHM_MAX_BYTES)
		limit = SHM_MAX_BYTES;
	if (over || total > limit) {
		if (!t->warned.shm) {
			t->warned.shm = 1;
			fprintf(stderr, "prosper: warning: the program's shared memory and files held open with no name (%d "
					"objects, %llu KiB) are more than a checkpoint keeps (%llu KiB): a resume of it is refused\n",
				nobjs, (unsigned long long)((total + 1023) >> 10), (unsigned long long)(limit >> 10));
		}
		nholds = nobjs = 0;
	}
	find_links();
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
		struct tree_shm e = { .ino = objs[o].ino, .nuses = n, .bytes = (uint32_t)objs[o].size, .links_len = objs[o].links_len };
		if (!rc)
			rc = tree_add_shm(blob, &e, uses, objs[o].path[0] ? objs[o].path : NULL, objs[o].links, bytes);
		t->stats.shm_bytes += objs[o].size;
		free(bytes);
	}
	return rc;
}

/* ------------------------------------------------------------------ resume */

/* An injected system call on one path (at scratch), or two (the second after the first). */
static long path_call(struct inject *root, uint64_t scratch, long nr, const char *a, const char *b, long arg)
{
	size_t la = strlen(a) + 1, lb = b ? strlen(b) + 1 : 0;
	if (inject_write(root, scratch, a, la) != 0 || (b && inject_write(root, scratch + la, b, lb) != 0))
		return -EIO;
	if (nr == SYS_linkat)
		return inject_syscall(root, SYS_linkat, AT_FDCWD, (long)scratch, AT_FDCWD, (long)(scratch + la), 0, 0);
	return inject_syscall(root, SYS_openat, AT_FDCWD, (long)scratch, arg, 0600, 0, 0);
}

/* Object i's names in the file system, as at the cut: the one it was opened by first (if that
 * still named it), then its other names.  While one of them exists that file is the object, and
 * each name gone since the cut is linked to it again (the program removed it after the cut, and
 * will again); none left, its first name is made again.  Either way *fd is the object, opened,
 * for its bytes to be put back as they were at the cut (the killed run went on writing them).
 * 0, or -errno with *failed the name. */
static long premake_named(struct inject *root, uint64_t scratch, const struct tree_view *v, uint32_t i, long *fd,
			  const char **failed)
{
	const char *names[1 + TREE_SHM_MAX_LINKS];
	int n = 0, live = -1;
	if (v->shm_paths[i])
		names[n++] = v->shm_paths[i];
	for (int k = 0; k < TREE_SHM_MAX_LINKS && v->shm_links[i][k]; k++)
		names[n++] = v->shm_links[i][k];
	for (int k = 0; k < n && live < 0; k++) {
		long probe = path_call(root, scratch, SYS_openat, names[k], NULL, O_PATH | O_CLOEXEC);
		if (probe >= 0) {
			inject_syscall(root, SYS_close, probe, 0, 0, 0, 0, 0);
			live = k;
		}
	}
	*failed = names[live < 0 ? 0 : live];
	*fd = live < 0 ? path_call(root, scratch, SYS_openat, names[0], NULL, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC)
		       : path_call(root, scratch, SYS_openat, names[live], NULL, O_RDWR | O_CLOEXEC);
	if (*fd < 0)
		return *fd;
	if (live < 0)
		live = 0;
	for (int k = 0; k < n; k++) {
		long rc = k == live ? 0 : path_call(root, scratch, SYS_linkat, names[live], names[k], 0);
		if (rc != 0 && rc != -EEXIST) { /* EEXIST: another file took the name since; it is the file system's */
			*failed = names[k];
			inject_syscall(root, SYS_close, *fd, 0, 0, 0, 0, 0);
			return rc;
		}
	}
	return 0;
}

int shm_premake(struct tree *t, struct injector *j, long *next, char *why, size_t whylen)
{
	struct inject *root = &j->in;
	uint64_t scratch = j->scratch;
	static const char name[] = "prosper-shared";
	const struct tree_view *v = t->resume.view;
	if (!v->nshms)
		return 0;
	struct premade *more = realloc(t->resume.premade, ((size_t)t->resume.npremade + v->nshms + 1) * sizeof *more);
	if (!more) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	t->resume.premade = more;
	for (uint32_t i = 0; i < v->nshms; i++) {
		const struct tree_shm *e = v->shms[i];
		const char *failed = "";
		long fd;
		if (v->shm_paths[i] || v->shm_links[i][0]) {
			long rc = premake_named(root, scratch, v, i, &fd, &failed);
			if (rc < 0)
				fd = rc;
		} else {
			fd = inject_write(root, scratch, name, sizeof name) == 0
				     ? inject_syscall(root, SYS_memfd_create, (long)scratch, 0, 0, 0, 0, 0) : -EIO;
		}
		long hi = fd >= 0 ? inject_syscall(root, SYS_fcntl, fd, F_DUPFD, *next, 0, 0, 0) : -1;
		if (fd >= 0)
			inject_syscall(root, SYS_close, fd, 0, 0, 0, 0, 0);
		if (hi < *next || inject_syscall(root, SYS_ftruncate, hi, (long)e->bytes, 0, 0, 0, 0) != 0) {
			snprintf(why, whylen, "cannot make the program's shared memory %s again (%s)", failed,
				 strerror(fd < 0 ? (int)-fd : EIO));
			return -1;
		}
		*next = hi + 1;
		/* its bytes as they were at the cut */
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
		t->resume.premade[t->resume.npremade++] = (struct premade){ .type = IMG_FD_SHM, .object = i, .rfd = (int)hi, .wfd = (int)hi };
	}
	return 0;
}

static int premade_object(const struct tree *t, int o)
{
	const struct premade *pm = o >= 0 ? fd_premade(t, IMG_FD_SHM, (uint64_t)o) : NULL;
	return pm ? pm->rfd : -1;
}

int shm_fd_at(const struct tree *t, int32_t own_pid, uint64_t start)
{
	return premade_object(t, tree_shm_at(t->resume.view, own_pid, start));
}

int shm_fd_of(const struct tree *t, uint64_t ino)
{
	return premade_object(t, tree_shm_of(t->resume.view, ino));
}

/* sharedmem.c -- memory the processes of the program share that only they hold (sharedmem.h). */
#include "sharedmem.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "inject.h"
#include "tree_image.h"

#define MAX_SHM_MAPS 4096 /* mappings of kept objects in the whole tree at one cut */

/* The objects of this cut (shm_scan): a mapping of each, in the order found. */
static struct shm_map {
	uint32_t obj;
	pid_t pid;        /* ours, to read it */
	int32_t own_pid;  /* the program's */
	uint64_t start, end, offset;
} maps[MAX_SHM_MAPS];
static int nmaps;
static struct shm_obj {
	uint64_t ino, size;
	uint32_t nuses;
} objs[TREE_MAX_SHMS];
static int nobjs;

int shm_kept_mapping(const struct vma *v)
{
	if (v->perms[3] != 's' || vma_is_special(v))
		return 0;
	if (!strncmp(v->path, "[anon_shmem:", 12))
		return 1;
	size_t l = strlen(v->path);
	return v->path[0] == '/' && strncmp(v->path, "/SYSV", 5) && l > 10 && !strcmp(v->path + l - 10, " (deleted)");
}

uint64_t shm_mapped_by_fd(const struct sup *s, int fd, int nmaps)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)s->pid, fd);
	if (stat(path, &st) != 0)
		return 0;
	for (int i = 0; i < nmaps; i++)
		if (s->now[i].ino == (uint64_t)st.st_ino && shm_kept_mapping(&s->now[i]))
			return s->now[i].start;
	return 0;
}

int shm_scan(struct tree *t)
{
	nmaps = nobjs = 0;
	uint64_t total = 0;
	int over = 0;
	for (int i = 0; i < t->nprocs; i++) {
		const struct sup *m = t->procs[i];
		for (int k = 0; k < m->nprev && !m->exited; k++) {
			const struct vma *v = &m->prev[k];
			if (!shm_kept_mapping(v))
				continue;
			int o = 0;
			while (o < nobjs && objs[o].ino != v->ino)
				o++;
			if (o == nobjs) {
				if (nobjs == TREE_MAX_SHMS) {
					over = 1;
					continue;
				}
				objs[nobjs++] = (struct shm_obj){ .ino = v->ino };
			}
			if (nmaps == MAX_SHM_MAPS || objs[o].nuses == TREE_MAX_SHM_USES) {
				over = 1;
				continue;
			}
			uint64_t reach = v->offset + (v->end - v->start);
			if (reach > objs[o].size) {
				total += reach - objs[o].size;
				objs[o].size = reach;
			}
			objs[o].nuses++;
			maps[nmaps++] = (struct shm_map){ (uint32_t)o, m->pid, m->own_pid ? m->own_pid : m->pid, v->start, v->end,
							  v->offset };
		}
	}
	if (over || total > SHM_MAX_BYTES) {
		if (!t->warned_shm) {
			t->warned_shm = 1;
			fprintf(stderr, "prosper: warning: the program's shared memory (%d objects, %llu KiB) is more than a "
					"checkpoint keeps (%u MiB): a resume of it is refused\n",
				nobjs, (unsigned long long)(total >> 10), SHM_MAX_BYTES >> 20);
		}
		nmaps = nobjs = 0;
	}
	return nobjs > 0;
}

int shm_capture(struct tree *t, struct img_buf *blob)
{
	(void)t;
	static struct tree_shm_use uses[TREE_MAX_SHM_USES];
	int rc = 0;
	for (int o = 0; o < nobjs && !rc; o++) {
		uint8_t *bytes = calloc(1, objs[o].size ? objs[o].size : 1);
		if (!bytes)
			return -ENOMEM;
		uint32_t n = 0;
		for (int k = 0; k < nmaps && !rc; k++) {
			const struct shm_map *mp = &maps[k];
			if (mp->obj != (uint32_t)o)
				continue;
			uses[n++] = (struct tree_shm_use){ .pid = mp->own_pid, .start = mp->start };
			/* every mapping of it holds the same bytes: read each range once */
			int seen = 0;
			for (int j = 0; j < k && !seen; j++)
				seen = maps[j].obj == (uint32_t)o && maps[j].offset <= mp->offset &&
				       maps[j].offset + (maps[j].end - maps[j].start) >= mp->offset + (mp->end - mp->start);
			if (!seen)
				rc = proc_mem_read(mp->pid, mp->start, bytes + mp->offset, mp->end - mp->start);
		}
		struct tree_shm e = { .ino = objs[o].ino, .nuses = n, .bytes = (uint32_t)objs[o].size };
		if (!rc)
			rc = tree_add_shm(blob, &e, uses, bytes);
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
	if (!more || inject_write(root, scratch, name, sizeof name) != 0) {
		snprintf(why, whylen, "cannot make the program's shared memory again");
		return -1;
	}
	t->premade = more;
	for (uint32_t i = 0; i < v->nshms; i++) {
		const struct tree_shm *e = v->shms[i];
		long fd = inject_syscall(root, SYS_memfd_create, (long)scratch, 0, 0, 0, 0, 0);
		long hi = fd >= 0 ? inject_syscall(root, SYS_fcntl, fd, F_DUPFD, *next, 0, 0, 0) : -1;
		if (fd >= 0)
			inject_syscall(root, SYS_close, fd, 0, 0, 0, 0, 0);
		if (hi < *next || inject_syscall(root, SYS_ftruncate, hi, (long)e->bytes, 0, 0, 0, 0) != 0) {
			snprintf(why, whylen, "cannot make the program's shared memory again (%u KiB)", e->bytes >> 10);
			return -1;
		}
		*next = hi + 1;
		char path[64];
		snprintf(path, sizeof path, "/proc/%d/fd/%ld", (int)root->pid, hi);
		int w = open(path, O_RDWR | O_CLOEXEC);
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

int shm_fd_at(const struct tree *t, int32_t own_pid, uint64_t start)
{
	int o = tree_shm_at(t->view, own_pid, start);
	for (int i = 0; o >= 0 && i < t->npremade; i++)
		if (t->premade[i].shm && t->premade[i].ino == (uint64_t)o)
			return t->premade[i].rfd;
	return -1;
}

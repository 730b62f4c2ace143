/* filechange.c -- one change to the file system, recorded so that it can be undone (filechange.h). */
#include "filechange.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "filecover.h"
#include "fsclass.h"
#include "procfs.h"
#include "undolog.h"

#define CHUNK (16u << 20) /* old bytes per record */

int fchange_fd_target(pid_t tid, int fd, struct fchange_target *f)
{
	memset(&f->st, 0, sizeof f->st);
	f->path[0] = 0;
	snprintf(f->open_path, sizeof f->open_path, "/proc/%d/fd/%d", (int)tid, fd);
	if (stat(f->open_path, &f->st) != 0 || (!S_ISREG(f->st.st_mode) && !S_ISBLK(f->st.st_mode)))
		return -1; /* a pipe, a socket, a terminal: the common write, one call */
	ssize_t n = readlink(f->open_path, f->path, sizeof f->path - 1);
	if (n <= 0 || f->path[0] != '/')
		return f->path[0] = 0, -1;
	f->path[n] = 0;
	if (!S_ISREG(f->st.st_mode))
		return -1;
	return strstr(f->path, " (deleted)") ? -1 : 0; /* removed already: nothing of it to put back */
}

static int read_string(pid_t tid, uint64_t addr, char *out, size_t cap)
{
	size_t got = 0;
	while (got < cap - 1) {
		size_t room = 4096 - ((addr + got) & 4095); /* never across a page that may be unmapped */
		if (room > cap - 1 - got)
			room = cap - 1 - got;
		if (proc_mem_read(tid, addr + got, out + got, room) != 0)
			return -1;
		void *z = memchr(out + got, 0, room);
		if (z)
			return 0;
		got += room;
	}
	return -1;
}

int fchange_path_target(pid_t tid, int dirfd, uint64_t addr, int follow, struct fchange_target *f)
{
	char rel[PATH_MAX];
	f->open_path[0] = 0;
	if (!addr || read_string(tid, addr, rel, sizeof rel) != 0)
		return -1;
	if (rel[0] == '/') {
		snprintf(f->path, sizeof f->path, "%s", rel);
	} else {
		char link[64], base[PATH_MAX];
		if (dirfd == AT_FDCWD)
			snprintf(link, sizeof link, "/proc/%d/cwd", (int)tid);
		else
			snprintf(link, sizeof link, "/proc/%d/fd/%d", (int)tid, dirfd);
		ssize_t n = readlink(link, base, sizeof base - 1);
		if (n <= 0 || base[0] != '/')
			return -1;
		base[n] = 0;
		if (snprintf(f->path, sizeof f->path, "%s/%s", strcmp(base, "/") ? base : "", rel) >= (int)sizeof f->path)
			return -1;
	}
	if ((follow ? stat : lstat)(f->path, &f->st) != 0)
		memset(&f->st, 0, sizeof f->st);
	return 0;
}

int fchange_fd_pos(pid_t tid, int fd, uint64_t *pos, int *flags)
{
	char p[64], b[512];
	snprintf(p, sizeof p, "/proc/%d/fdinfo/%d", (int)tid, fd);
	if (proc_read_small(p, b, sizeof b) < 0)
		return -1;
	unsigned long long v;
	unsigned fl;
	const char *fp = strstr(b, "flags:");
	if (sscanf(b, "pos: %llu", &v) != 1 || !fp || sscanf(fp, "flags: %o", &fl) != 1)
		return -1;
	*pos = v, *flags = (int)fl;
	return 0;
}

/* ------------------------------------------------------------------ records */

static void put(struct tree *t, struct undo_rec *h, const char *path, const void *data, size_t len)
{
	struct file_track *ft = &t->files;
	if (ft->fd < 0 || ft->failed)
		return;
	int rc = undolog_append(ft->fd, h, path, data, len);
	if (rc) {
		ft->failed = 1; /* the caller stops the program (filetrack.c): no change runs unrecorded */
		fprintf(stderr, "%s: cannot write the file-undo journal in %s: %s\n", sup_command(), ft->dir, strerror(-rc));
		return;
	}
	ft->records++;
	ft->bytes += sizeof *h + len;
	/* a change that can outlive a power cut, or one that cannot be undone: flushed before the
	 * call runs (filetrack_stop) -- but the bytes, attributes and removal of a file made after
	 * the cut a power cut goes back to (its UNDO_CREATED, flushed, removes it) */
	int of_born = ft->target_born && (h->kind == UNDO_ATTRS || h->kind == UNDO_BYTES || h->kind == UNDO_REMOVED);
	if ((ft->target_on_disk && !of_born) || h->kind == UNDO_CANNOT)
		ft->unflushed = 1;
}

/* ------------------------------------------------------------------ files made since a cut */

/* Paths the program made (a regular file, a FIFO, a directory) and the interval it made each in,
 * followed through its own renames and removals.  Two uses:
 *   - removing one made in this very interval needs no copy of its bytes: it did not exist at the
 *     cut, so the resume removes it anyway (its UNDO_CREATED); only an empty one is made again
 *     first, for the records between to act on (a rename back).  SQLite makes and removes its
 *     rollback journal at every transaction.
 *   - the bytes and attributes of one made after the cut a power cut would go back to
 *     (flush_base) need not be flushed before they change: if lost, the file is removed by its
 *     UNDO_CREATED, which is flushed (a compiler's temporary files, an object file).
 * A path not found is treated as any file's: copied and flushed. */
#define BORN_MAX 4096

static struct born_path *born_find(const struct file_track *ft, const char *path)
{
	for (size_t i = 0; i < ft->nborn; i++)
		if (!strcmp(ft->born[i].path, path))
			return &ft->born[i];
	return NULL;
}

static void born_drop(struct file_track *ft, const char *path)
{
	struct born_path *b = born_find(ft, path);
	if (!b)
		return;
	free(b->path);
	*b = ft->born[--ft->nborn];
}

static void born_add(struct file_track *ft, const char *path, uint64_t seq)
{
	born_drop(ft, path);
	if (ft->nborn == ft->born_cap) {
		size_t cap = ft->born_cap ? ft->born_cap * 2 : 16;
		struct born_path *g = cap <= BORN_MAX ? realloc(ft->born, cap * sizeof *g) : NULL;
		if (!g)
			return; /* not followed: treated as any file */
		ft->born = g, ft->born_cap = cap;
	}
	char *p = strdup(path);
	if (p)
		ft->born[ft->nborn++] = (struct born_path){ p, seq };
}

/* Made after the cut a power cut could take the program back to? (flush_base: the caller holds mu) */
static int born_since_base(const struct file_track *ft, const char *path)
{
	const struct born_path *b = born_find(ft, path);
	return b && ft->flush_base != UINT64_MAX && b->seq >= ft->flush_base;
}

void fchange_new_interval(struct tree *t)
{
	struct file_track *ft = &t->files;
	/* made before both the cut now committed and the durable one: no longer of use */
	for (size_t i = 0; i < ft->nborn;) {
		if (ft->born[i].seq < ft->committed_seq && (ft->flush_base == UINT64_MAX || ft->born[i].seq < ft->flush_base)) {
			free(ft->born[i].path);
			ft->born[i] = ft->born[--ft->nborn];
		} else {
			i++;
		}
	}
	fcover_reset(&ft->cover);
}

static void fill_attrs(struct undo_rec *h, const struct stat *st)
{
	h->dev = st->st_dev, h->ino = st->st_ino;
	h->mode = st->st_mode, h->uid = st->st_uid, h->gid = st->st_gid;
	h->a = (uint64_t)st->st_size;
	h->atime_ns = (int64_t)st->st_atim.tv_sec * 1000000000 + st->st_atim.tv_nsec;
	h->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	h->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
}

void fchange_snapshot(struct tree *t, const char *path)
{
	struct fchange_target f;
	f.open_path[0] = 0;
	snprintf(f.path, sizeof f.path, "%s", path);
	if (stat(path, &f.st) != 0 || !S_ISREG(f.st.st_mode))
		return;
	if ((uint64_t)f.st.st_size > FILETRACK_MAPPED_MAX) {
		fchange_cannot(t, path, "mapped shared and writable, larger than a checkpoint keeps whole");
		return;
	}
	t->files.snapshot = 1; /* its records are no change of the program's (fileundo.c) */
	fchange_bytes(t, &f, 0, (uint64_t)f.st.st_size);
	t->files.snapshot = 0;
}

void fchange_cannot(struct tree *t, const char *path, const char *what)
{
	struct file_track *ft = &t->files;
	struct undo_rec h = { .kind = UNDO_CANNOT };
	ft->cannot++;
	put(t, &h, path, what, strlen(what));
	/* said while it runs, once per reason: the user learns it before a resume refuses */
	uint64_t key = 1469598103934665603ull;
	for (const char *c = what; *c; c++)
		key = (key ^ (uint8_t)*c) * 1099511628211ull;
	size_t n = sizeof ft->warned / sizeof ft->warned[0];
	for (size_t i = 0; i < n; i++) {
		if (ft->warned[i] == key)
			return;
		if (!ft->warned[i]) {
			ft->warned[i] = key;
			fprintf(stderr, "%s: warning: %s%s%s: a change the file-undo journal cannot put back; a resume from a "
				"checkpoint made before it refuses (file-not-undoable)\n", sup_command(), path, *path ? ": " : "", what);
			return;
		}
	}
}

/* A file where the journal does not apply (fsclass.h): on a kernel file system nothing is kept
 * (1); outside the local ones, a change that cannot be undone (1); else 0. */
static int not_journalled(struct tree *t, const struct fchange_target *f)
{
	char name[64], what[160];
	const char *at = f->open_path[0] ? f->open_path : f->path;
	enum fs_class c = f->st.st_ino ? fsclass_of_stat(at, &f->st, name, sizeof name) : fsclass_of(at, name, sizeof name);
	t->files.target_on_disk = c == FS_LOCAL;
	t->files.target_born = born_since_base(&t->files, f->path);
	if (c == FS_LOCAL || c == FS_MEMORY)
		return 0;
	if (c == FS_OUTSIDE) {
		snprintf(what, sizeof what, "on %s, a file system others can change too", name);
		fchange_cannot(t, f->path, what);
	}
	return 1;
}

static void attrs(struct tree *t, const struct fchange_target *f);

void fchange_attrs(struct tree *t, const struct fchange_target *f)
{
	if (!not_journalled(t, f))
		attrs(t, f);
}

static void attrs(struct tree *t, const struct fchange_target *f)
{
	struct file_track *ft = &t->files;
	/* A cut's copy of a mapped file (fchange_snapshot) is no change of the program's: its key
	 * differs, so that the program's own first change after it is still recorded -- else a resize
	 * of the file after the cut would find no record of the program's and be judged another
	 * process's (fileundo.c).  The copy's record comes first, and the undo, last to first, ends
	 * with it. */
	uint64_t key = (uint64_t)f->st.st_dev * 0x9e3779b97f4a7c15ull ^ (uint64_t)f->st.st_ino ^
		       (ft->snapshot ? 0x5bd1e9955bd1e995ull : 0);
	for (size_t i = 0; i < ft->ntouched; i++)
		if (ft->touched[i] == key)
			return;
	if (ft->ntouched == ft->touched_cap) {
		size_t cap = ft->touched_cap ? ft->touched_cap * 2 : 64;
		uint64_t *g = realloc(ft->touched, cap * sizeof *g);
		if (!g) {
			fchange_cannot(t, f->path, "out of memory");
			return;
		}
		ft->touched = g, ft->touched_cap = cap;
	}
	ft->touched[ft->ntouched++] = key;
	struct undo_rec h = { .kind = UNDO_ATTRS, .b = (uint64_t)ft->snapshot };
	fill_attrs(&h, &f->st);
	h.b = (uint64_t)ft->snapshot;
	put(t, &h, f->path, NULL, 0);
}

/* Old bytes [off, off + len) of the file (len > 0), read from src, kept within the budget. */
static int keep_bytes(struct tree *t, const struct fchange_target *f, const char *src, uint64_t off, uint64_t len,
		      int kind)
{
	struct file_track *ft = &t->files;
	if (ft->saved_bytes + len > FILETRACK_BUDGET) {
		fchange_cannot(t, f->path, "more old bytes than the journal keeps between two checkpoints");
		return -1;
	}
	int in = open(src, O_RDONLY | O_CLOEXEC | O_NOATIME);
	if (in < 0 && errno == EPERM)
		in = open(src, O_RDONLY | O_CLOEXEC);
	uint8_t *b = in >= 0 ? malloc(len < CHUNK ? len : CHUNK) : NULL;
	if (!b) {
		if (in >= 0)
			close(in);
		fchange_cannot(t, f->path, "its old bytes cannot be read");
		return -1;
	}
	for (uint64_t done = 0; done < len;) {
		size_t n = len - done < CHUNK ? (size_t)(len - done) : CHUNK;
		ssize_t r = pread(in, b, n, (off_t)(off + done));
		if (r < 0) {
			fchange_cannot(t, f->path, "its old bytes cannot be read");
			break;
		}
		if (r == 0)
			break; /* shorter than it was a moment ago: what is gone needs no bytes */
		struct undo_rec h = { .kind = (uint32_t)kind };
		fill_attrs(&h, &f->st);
		h.a = off + done;
		h.b = (uint64_t)ft->snapshot;
		put(t, &h, f->path, b, (size_t)r);
		ft->saved_bytes += (uint64_t)r;
		done += (uint64_t)r;
	}
	free(b);
	close(in);
	return 0;
}

void fchange_bytes(struct tree *t, const struct fchange_target *f, uint64_t off, uint64_t len)
{
	if (not_journalled(t, f))
		return;
	attrs(t, f);
	uint64_t size = (uint64_t)f->st.st_size;
	if (off >= size || !len)
		return; /* beyond the end: cut back by the size in its attributes */
	if (len > size - off)
		len = size - off;
	/* only what this interval's journal does not hold yet: its older record puts it back */
	struct frange gaps[FCOVER_MAX_GAPS];
	struct file_track *ft = &t->files;
	size_t n = fcover_gaps(&ft->cover, (uint64_t)f->st.st_dev, (uint64_t)f->st.st_ino, off, off + len, gaps);
	for (size_t i = 0; i < n; i++) {
		if (keep_bytes(t, f, f->open_path[0] ? f->open_path : f->path, gaps[i].off, gaps[i].end - gaps[i].off,
			       UNDO_BYTES) != 0)
			return;
		fcover_add(&ft->cover, (uint64_t)f->st.st_dev, (uint64_t)f->st.st_ino, gaps[i].off, gaps[i].end);
	}
}

/* The directory an entry is made in or removed from: its times (and mode), once per cut, so that
 * the resume puts back its modification time too. */
static void parent_attrs(struct tree *t, const char *path)
{
	struct fchange_target d;
	const char *slash = strrchr(path, '/');
	if (!slash || slash == path)
		return; /* the root directory: not ours to keep */
	d.open_path[0] = 0;
	snprintf(d.path, sizeof d.path, "%.*s", (int)(slash - path), path);
	if (lstat(d.path, &d.st) == 0 && S_ISDIR(d.st.st_mode)) {
		int entry_born = t->files.target_born;
		t->files.target_born = born_since_base(&t->files, d.path); /* the directory's own */
		attrs(t, &d);
		t->files.target_born = entry_born;
	}
}

void fchange_created(struct tree *t, const struct fchange_target *f, int dir, const struct stat *of)
{
	if (not_journalled(t, f))
		return;
	parent_attrs(t, f->path);
	struct undo_rec h = { .kind = UNDO_CREATED, .a = (uint64_t)dir };
	if (of)
		h.dev = of->st_dev, h.ino = of->st_ino; /* a hard link: the inode it adds a name to */
	put(t, &h, f->path, NULL, 0);
	if (!of)
		born_add(&t->files, f->path, t->files.seq); /* a link's inode is older than its new name: not followed */
}

void fchange_removed(struct tree *t, const struct fchange_target *f)
{
	const struct stat *st = &f->st;
	if (!st->st_ino || not_journalled(t, f))
		return; /* nothing there: nothing to put back */
	parent_attrs(t, f->path);
	struct undo_rec h = { .kind = UNDO_REMOVED };
	fill_attrs(&h, st);
	const struct born_path *b = born_find(&t->files, f->path);
	if (b && b->seq == t->files.seq && (S_ISREG(st->st_mode) || S_ISDIR(st->st_mode) || S_ISFIFO(st->st_mode))) {
		/* made since the cut: made again empty, then removed by its UNDO_CREATED */
		h.a = 0;
		born_drop(&t->files, f->path);
		put(t, &h, f->path, NULL, 0);
		return;
	}
	born_drop(&t->files, f->path);
	if (S_ISREG(st->st_mode)) {
		/* undone last to first: the file made empty (UNDO_REMOVED), its content written
		 * (UNDO_BYTES), then its size, mode and times (UNDO_ATTRS) */
		struct undo_rec a = { .kind = UNDO_ATTRS };
		fill_attrs(&a, st);
		put(t, &a, f->path, NULL, 0);
		if (st->st_size && keep_bytes(t, f, f->path, 0, (uint64_t)st->st_size, UNDO_BYTES) != 0)
			return;
		put(t, &h, f->path, NULL, 0);
	} else if (S_ISLNK(st->st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlink(f->path, target, sizeof target);
		if (n < 0 || n == (ssize_t)sizeof target)
			fchange_cannot(t, f->path, "a symbolic link whose target cannot be read");
		else
			put(t, &h, f->path, target, (size_t)n);
	} else if (S_ISDIR(st->st_mode) || S_ISFIFO(st->st_mode) || S_ISSOCK(st->st_mode)) {
		put(t, &h, f->path, NULL, 0); /* a socket's name is bound again by the program's socket, not made */
	} else {
		fchange_cannot(t, f->path, "a device node removed");
	}
}

void fchange_renamed(struct tree *t, const struct fchange_target *from, const char *to, int exchange)
{
	if (not_journalled(t, from))
		return;
	parent_attrs(t, from->path);
	parent_attrs(t, to);
	struct undo_rec h = { .kind = UNDO_RENAMED };
	fill_attrs(&h, &from->st);
	h.a = (uint64_t)exchange;
	put(t, &h, from->path, to, strlen(to));
	/* what was made since the cut moves with its name (a directory's entries are not followed) */
	struct file_track *ft = &t->files;
	const struct born_path *fb = born_find(ft, from->path), *tb = born_find(ft, to);
	uint64_t from_seq = fb ? fb->seq : UINT64_MAX, to_seq = tb ? tb->seq : UINT64_MAX;
	born_drop(ft, from->path);
	born_drop(ft, to);
	if (from_seq != UINT64_MAX && !S_ISDIR(from->st.st_mode))
		born_add(ft, to, from_seq);
	if (exchange && to_seq != UINT64_MAX)
		born_add(ft, from->path, to_seq);
}

/* ------------------------------------------------------------------ files mapped shared and writable */

int fchange_is_mapped(const struct file_track *ft, const char *path)
{
	for (int i = 0; i < ft->nmapped; i++)
		if (!strcmp(ft->mapped[i], path))
			return 1;
	return 0;
}

void fchange_mapped(struct tree *t, const char *path)
{
	struct file_track *ft = &t->files;
	if (!strncmp(path, "/dev/shm/", 9) || !strncmp(path, "/memfd:", 7) || strstr(path, " (deleted)") ||
	    !strcmp(path, t->pool_path) || path[0] != '/')
		return; /* shared memory is kept whole at the cuts (sharedmem.h); the pool is ours */
	if (fchange_is_mapped(ft, path))
		return;
	if (ft->nmapped == (int)(sizeof ft->mapped / sizeof ft->mapped[0]) || strlen(path) >= sizeof ft->mapped[0]) {
		fchange_cannot(t, path, "mapped shared and writable, one file more than are kept at each checkpoint");
		return;
	}
	snprintf(ft->mapped[ft->nmapped++], sizeof ft->mapped[0], "%s", path);
	fchange_snapshot(t, path); /* its stores from now on are not seen: as it is before them */
}

/* test_undoput.c -- records of the file-undo journal put back (undoput.h), in a scratch folder:
 * the records are made as the tracker makes them (filechange.c), before each change, and the
 * change is then made or not.  Put back newest first, they must leave the folder as it was before
 * the first change whether the last change ran or not (a program killed at the call's stop, a
 * rename that failed) and when a record is put back twice in a row (a resume killed before it
 * noted one). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "undoput.h"

static int failures;
#define MUST(c) do { if (!(c)) { fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); exit(1); } } while (0)
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "FAIL %s:%d: %s (%s)\n", __FILE__, __LINE__, #c, scenario); failures++; } } while (0)

static char dir[64], A[128], B[128];
static const char *scenario;
static struct undo_entry log_[32];
static size_t nlog;

static void put(uint32_t kind, const char *path, const struct stat *st, const void *data, size_t len, uint64_t a)
{
	MUST(nlog < sizeof log_ / sizeof log_[0]);
	struct undo_entry *e = &log_[nlog++];
	memset(e, 0, sizeof *e);
	e->h.kind = kind;
	if (st) {
		e->h.dev = st->st_dev, e->h.ino = st->st_ino, e->h.mode = st->st_mode;
		e->h.uid = st->st_uid, e->h.gid = st->st_gid, e->h.a = (uint64_t)st->st_size;
		e->h.atime_ns = (int64_t)st->st_atim.tv_sec * 1000000000 + st->st_atim.tv_nsec;
		e->h.mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	}
	if (kind != UNDO_ATTRS && kind != UNDO_REMOVED)
		e->h.a = a;
	e->path = strdup(path);
	e->data = len ? memcpy(malloc(len + 1), data, len) : NULL;
	if (e->data)
		e->data[len] = 0;
	e->h.data_len = len;
}

static void write_file(const char *p, const char *s)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	MUST(fd >= 0 && write(fd, s, strlen(s)) == (ssize_t)strlen(s) && close(fd) == 0);
}

static const char *read_file(const char *p)
{
	static char b[256];
	int fd = open(p, O_RDONLY);
	if (fd < 0)
		return "(none)";
	ssize_t n = read(fd, b, sizeof b - 1);
	close(fd);
	b[n < 0 ? 0 : n] = 0;
	return b;
}

static ino_t ino_of(const char *p)
{
	struct stat st;
	return lstat(p, &st) == 0 ? st.st_ino : 0;
}

/* Records of a removal of regular file p, as the tracker keeps one (its attributes, its bytes,
 * then the removal). */
static void removing(const char *p)
{
	struct stat st;
	MUST(lstat(p, &st) == 0);
	put(UNDO_ATTRS, p, &st, NULL, 0, 0);
	const char *b = read_file(p);
	put(UNDO_BYTES, p, &st, b, strlen(b), 0);
	put(UNDO_REMOVED, p, &st, NULL, 0, 0);
}

/* rename(from, to) recorded: what it replaces, then the rename. */
static void renaming(const char *from, const char *to, int exchange)
{
	struct stat st;
	if (!exchange && lstat(to, &st) == 0)
		removing(to);
	MUST(lstat(from, &st) == 0);
	put(UNDO_RENAMED, from, &st, to, strlen(to), (uint64_t)exchange);
}

/* Newest first; the record at index twice (if any) is put back twice in a row. */
static void put_back(size_t twice)
{
	for (size_t i = nlog; i-- > 0;) {
		CHECK(undoput_record(&log_[i]) == 0);
		if (i == twice)
			CHECK(undoput_record(&log_[i]) == 0);
	}
}

static void start(const char *what)
{
	scenario = what;
	for (size_t i = 0; i < nlog; i++)
		free(log_[i].path), free(log_[i].data);
	nlog = 0;
	unlink(A), unlink(B);
	write_file(A, "new");
	write_file(B, "old");
}

static void expect_start(ino_t a_ino)
{
	CHECK(!strcmp(read_file(A), "new"));
	CHECK(!strcmp(read_file(B), "old"));
	CHECK(ino_of(A) == a_ino); /* the file the program may hold open is the one under its name */
}

int main(void)
{
	snprintf(dir, sizeof dir, "/tmp/test_undoput.XXXXXX");
	MUST(mkdtemp(dir));
	snprintf(A, sizeof A, "%s/a", dir);
	snprintf(B, sizeof B, "%s/b", dir);

	for (size_t twice = 0; twice < 4; twice++) {
		/* a save: a over b; ran */
		start("rename over a file, ran");
		ino_t a = ino_of(A);
		renaming(A, B, 0);
		MUST(rename(A, B) == 0);
		put_back(twice < nlog ? twice : (size_t)-1);
		expect_start(ino_of(A)); /* a is the same inode again: b's name moved back */
		CHECK(ino_of(A) == a);

		/* killed at the call's stop: recorded, never ran */
		start("rename over a file, never ran");
		a = ino_of(A);
		renaming(A, B, 0);
		put_back(twice < nlog ? twice : (size_t)-1);
		expect_start(a);

		/* moved, then removed under its new name */
		start("rename over a file, then removed");
		a = ino_of(A);
		renaming(A, B, 0);
		MUST(rename(A, B) == 0);
		removing(B);
		MUST(unlink(B) == 0);
		put_back(twice < nlog ? twice : (size_t)-1);
		CHECK(!strcmp(read_file(A), "new"));
		CHECK(!strcmp(read_file(B), "old"));

		/* across file systems: the rename fails (EXDEV), the program copies in place and
		 * removes the source (mv) */
		start("rename failed, copied instead");
		a = ino_of(A);
		renaming(A, B, 0);
		struct stat st;
		MUST(lstat(B, &st) == 0);
		put(UNDO_ATTRS, B, &st, NULL, 0, 0);
		put(UNDO_BYTES, B, &st, "old", 3, 0);
		write_file(B, "new");
		removing(A);
		MUST(unlink(A) == 0);
		put_back(twice < nlog ? twice : (size_t)-1);
		CHECK(!strcmp(read_file(A), "new"));
		CHECK(!strcmp(read_file(B), "old"));

		/* exchanged, ran and never ran */
		start("exchange, ran");
		a = ino_of(A);
		renaming(A, B, 1);
		MUST(renameat2(AT_FDCWD, A, AT_FDCWD, B, RENAME_EXCHANGE) == 0);
		put_back(twice < nlog ? twice : (size_t)-1);
		expect_start(a);
		start("exchange, never ran");
		a = ino_of(A);
		renaming(A, B, 1);
		put_back(twice < nlog ? twice : (size_t)-1);
		expect_start(a);
	}
	start("done");
	unlink(A), unlink(B);
	rmdir(dir);
	if (failures)
		return 1;
	printf("undoput: ok\n");
	return 0;
}

/* test_undolog.c -- the file-undo journal's records (undolog.h): what is appended is read back in
 * order with its path and data; only the files of the cuts asked for are read; a record torn at
 * the tail (a crash while appending: its change never ran) is ignored; a damaged record before
 * the tail is refused; dropping keeps exactly the cuts asked for. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "undolog.h"

static int failures;
#define MUST(c) do { if (!(c)) { fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); exit(1); } } while (0)
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); failures++; } } while (0)

static char dir[64];

static void append(uint64_t seq, uint32_t kind, const char *path, const char *data, uint64_t a)
{
	int fd = undolog_open(dir, seq, 0);
	MUST(fd >= 0);
	struct undo_rec h = { .kind = kind, .a = a, .dev = 7, .ino = 42 };
	MUST(undolog_append(fd, &h, path, data, data ? strlen(data) : 0) == 0);
	close(fd);
}

static size_t load(uint64_t from, struct undo_entry **e, char *why)
{
	size_t n = 0;
	MUST(undolog_load(dir, from, e, &n, why, 200) == 0);
	return n;
}

static off_t size_of(uint64_t seq)
{
	char p[128];
	struct stat st;
	snprintf(p, sizeof p, "%s/%020llu.undo", dir, (unsigned long long)seq);
	return stat(p, &st) == 0 ? st.st_size : -1;
}

static void cut_file(uint64_t seq, off_t len)
{
	char p[128];
	snprintf(p, sizeof p, "%s/%020llu.undo", dir, (unsigned long long)seq);
	MUST(truncate(p, len) == 0);
}

static void flip_byte(uint64_t seq, off_t at)
{
	char p[128];
	snprintf(p, sizeof p, "%s/%020llu.undo", dir, (unsigned long long)seq);
	int fd = open(p, O_RDWR);
	unsigned char b;
	MUST(fd >= 0 && pread(fd, &b, 1, at) == 1);
	b ^= 0x40;
	MUST(pwrite(fd, &b, 1, at) == 1);
	close(fd);
}

int main(void)
{
	snprintf(dir, sizeof dir, "/tmp/test_undolog.%d", (int)getpid());
	char why[200] = "";
	struct undo_entry *e;

	/* an empty journal: no folder at all */
	CHECK(load(0, &e, why) == 0);
	undolog_free(e, 0);

	append(3, UNDO_ATTRS, "/a/file", NULL, 100);
	append(3, UNDO_BYTES, "/a/file", "old bytes", 10);
	append(4, UNDO_CREATED, "/a/new", NULL, 1);
	append(5, UNDO_RENAMED, "/a/x", "/a/y", 0);
	size_t n = load(4, &e, why);
	CHECK(n == 2);
	CHECK(n == 2 && e[0].h.kind == UNDO_CREATED && !strcmp(e[0].path, "/a/new") && e[0].h.a == 1 && e[0].seq == 4);
	CHECK(n == 2 && e[1].h.kind == UNDO_RENAMED && !strcmp((char *)e[1].data, "/a/y") && e[1].seq == 5);
	undolog_free(e, n);
	n = load(0, &e, why);
	CHECK(n == 4 && e[1].h.kind == UNDO_BYTES && e[1].h.data_len == 9 && !memcmp(e[1].data, "old bytes", 9) &&
	      e[1].h.a == 10 && e[1].h.ino == 42 && e[1].h.dev == 7);
	undolog_free(e, n);

	/* a record torn at the tail is ignored: cut into its data, then into its header */
	off_t whole = size_of(3);
	append(3, UNDO_BYTES, "/a/file", "torn record", 20);
	cut_file(3, size_of(3) - 3);
	n = load(3, &e, why);
	CHECK(n == 4);
	undolog_free(e, n);
	cut_file(3, whole + 10);
	n = load(3, &e, why);
	CHECK(n == 4);
	undolog_free(e, n);
	/* the last record whole but damaged (its bytes reached the file, not all of them right) is a
	 * torn tail too */
	cut_file(3, whole);
	append(3, UNDO_BYTES, "/a/file", "damaged tail", 30);
	flip_byte(3, size_of(3) - 2);
	n = load(3, &e, why);
	CHECK(n == 4);
	undolog_free(e, n);

	/* a damaged record before the tail: the journal is refused, whole */
	cut_file(3, whole);
	flip_byte(3, (off_t)sizeof(struct undo_rec) + 2); /* the first record's path */
	size_t m = 99;
	CHECK(undolog_load(dir, 0, &e, &m, why, sizeof why) == -1 && m == 0 && strstr(why, "damaged"));
	flip_byte(3, (off_t)sizeof(struct undo_rec) + 2);
	flip_byte(3, 0); /* the first record's magic */
	CHECK(undolog_load(dir, 0, &e, &m, why, sizeof why) == -1);
	flip_byte(3, 0);
	n = load(0, &e, why);
	CHECK(n == 4);
	undolog_free(e, n);

	/* a fresh open truncates; dropping keeps [keep_from, keep_to] */
	int fd = undolog_open(dir, 5, 1);
	MUST(fd >= 0);
	close(fd);
	CHECK(size_of(5) == 0 && undolog_has(dir, 5) && !undolog_has(dir, 6));
	/* how far a resume has undone the journal */
	struct undo_progress pr = { 4, 10, 3 }, got;
	CHECK(undolog_progress_get(dir, &got) == -1);
	int pfd = undolog_progress_open(dir);
	CHECK(pfd >= 0 && undolog_progress_put(pfd, &pr, 1) == 0);
	pr.done = 7;
	CHECK(undolog_progress_put(pfd, &pr, 0) == 0);
	close(pfd);
	CHECK(undolog_progress_get(dir, &got) == 0 && got.seq == 4 && got.total == 10 && got.done == 7);
	undolog_progress_clear(dir);
	CHECK(undolog_progress_get(dir, &got) == -1);
	undolog_drop(dir, 4, 4);
	CHECK(size_of(3) < 0 && size_of(4) > 0 && size_of(5) < 0);
	undolog_remove_all(dir);
	struct stat st;
	CHECK(stat(dir, &st) != 0);
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	else
		printf("undolog: ok\n");
	return failures != 0;
}

/* undolog.c -- the file-undo journal's files and records (undolog.h). */
#include "undolog.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include "prosper/crc32c.h"

#define MAX_PATH_BYTES 4096
#define MAX_DATA_BYTES (1ull << 36)

int undolog_dir(const char *pool_path, char *out, size_t cap)
{
	int n = snprintf(out, cap, "%s.undo", pool_path);
	return n > 0 && (size_t)n < cap ? 0 : -1;
}

static int file_of(const char *dir, uint64_t seq, char *out, size_t cap)
{
	int n = snprintf(out, cap, "%s/%020" PRIu64 ".undo", dir, seq);
	return n > 0 && (size_t)n < cap ? 0 : -1;
}

int undolog_open(const char *dir, uint64_t seq, int fresh)
{
	char p[4200];
	if (file_of(dir, seq, p, sizeof p) != 0)
		return -ENAMETOOLONG;
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return -errno;
	int fd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (fresh ? O_TRUNC : 0), 0600);
	return fd < 0 ? -errno : fd;
}

/* Crash tests of a power cut (prosper torture --power-cut, docs/durability.md): with
 * PROSPER_TEST_JOURNAL_DURABLE=1 each sync notes "seq length" in <dir>/durable-lengths, the bytes
 * of the file written before the sync began; the test cuts every journal file back to its noted
 * length (removes one never noted), as a power cut that lost all the rest would. */
static void note_line(const char *dir, const char *line)
{
	const char *on = getenv("PROSPER_TEST_JOURNAL_DURABLE");
	char p[4200];
	if (!on || *on != '1' || snprintf(p, sizeof p, "%s/durable-lengths", dir) >= (int)sizeof p)
		return;
	int fd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (write(fd, line, strlen(line)) != (ssize_t)strlen(line)) {
		/* a test's note: the test finds it missing and fails */
	}
	close(fd);
}

static void note_durable(const char *dir, uint64_t seq, off_t len)
{
	char line[64];
	snprintf(line, sizeof line, "%" PRIu64 " %lld\n", seq, (long long)len);
	note_line(dir, line);
}

void undolog_notes_restart(const char *dir, uint64_t seq)
{
	char line[64];
	snprintf(line, sizeof line, "%" PRIu64 " restart\n", seq);
	note_line(dir, line);
}

void undolog_notes_clear(const char *dir)
{
	char p[4200];
	if (snprintf(p, sizeof p, "%s/durable-lengths", dir) < (int)sizeof p)
		unlink(p);
}

int undolog_sync(const char *dir, uint64_t seq, int fd, int with_dir)
{
	char p[4200];
	if (file_of(dir, seq, p, sizeof p) != 0)
		return -ENAMETOOLONG;
	int own = fd < 0;
	if (own && (fd = open(p, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	struct stat st;
	int rc = fstat(fd, &st) == 0 && fdatasync(fd) == 0 ? 0 : -errno;
	if (own)
		close(fd);
	int d = rc || !with_dir ? -1 : open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (!rc && with_dir && (d < 0 || fsync(d) != 0))
		rc = -errno;
	if (d >= 0)
		close(d);
	if (!rc)
		note_durable(dir, seq, st.st_size);
	return rc;
}

int undolog_sync_from(const char *dir, uint64_t from)
{
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	int rc = 0;
	struct dirent *e;
	while ((e = readdir(d)) && !rc) {
		char *end;
		unsigned long long v = strtoull(e->d_name, &end, 10);
		if (end != e->d_name && !strcmp(end, ".undo") && v >= from)
			rc = undolog_sync(dir, v, -1, 0);
	}
	closedir(d);
	int fd = rc ? -1 : open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (!rc && (fd < 0 || fsync(fd) != 0))
		rc = -errno;
	if (fd >= 0)
		close(fd);
	return rc;
}

static uint32_t crc_of(const struct undo_rec *h, const void *path, const void *data)
{
	uint32_t c = prosper_crc32c(0, &h->kind, sizeof *h - offsetof(struct undo_rec, kind));
	c = prosper_crc32c(c, path, h->path_len);
	return prosper_crc32c(c, data, h->data_len);
}

int undolog_append(int fd, struct undo_rec *h, const char *path, const void *data, size_t data_len)
{
	h->magic = UNDO_MAGIC;
	h->path_len = path ? (uint32_t)strlen(path) : 0;
	h->data_len = data_len;
	h->pad = 0;
	h->crc = crc_of(h, path ? path : "", data ? data : "");
	struct iovec v[3] = { { h, sizeof *h }, { (void *)(path ? path : ""), h->path_len }, { (void *)data, data_len } };
	size_t total = sizeof *h + h->path_len + data_len;
	ssize_t w = writev(fd, v, data_len ? 3 : 2);
	if (w == (ssize_t)total)
		return 0;
	return w < 0 ? -errno : -EIO; /* a short append is a torn tail: ignored by the reader */
}

/* The seqs of the journal files in dir, ascending. */
static int list_seqs(const char *dir, uint64_t **out, size_t *n)
{
	*out = NULL, *n = 0;
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -1;
	size_t cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		unsigned long long v = strtoull(e->d_name, &end, 10);
		if (end == e->d_name || strcmp(end, ".undo") != 0)
			continue;
		if (*n == cap) {
			uint64_t *g = realloc(*out, (cap = cap ? cap * 2 : 16) * sizeof *g);
			if (!g) {
				closedir(d);
				return -1;
			}
			*out = g;
		}
		(*out)[(*n)++] = v;
	}
	closedir(d);
	for (size_t i = 1; i < *n; i++) /* few files: insertion sort */
		for (size_t k = i; k > 0 && (*out)[k - 1] > (*out)[k]; k--) {
			uint64_t t = (*out)[k];
			(*out)[k] = (*out)[k - 1], (*out)[k - 1] = t;
		}
	return 0;
}

static uint8_t *read_whole(const char *p, size_t *len)
{
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	uint8_t *b = malloc((size_t)st.st_size + 1);
	size_t got = 0;
	while (b && got < (size_t)st.st_size) {
		ssize_t r = read(fd, b + got, (size_t)st.st_size - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	*len = got;
	return b;
}

/* The records of one file into *v; -1 with why if one before the tail is damaged. */
static int load_file(const char *p, uint64_t seq, struct undo_entry **v, size_t *n, size_t *cap, char *why, size_t whylen)
{
	size_t len = 0;
	uint8_t *b = read_whole(p, &len);
	if (!b) {
		snprintf(why, whylen, "cannot read the file-undo journal %s", p);
		return -1;
	}
	size_t at = 0;
	int rc = 0;
	while (at < len) {
		struct undo_rec h;
		if (len - at < sizeof h)
			break; /* a torn tail */
		memcpy(&h, b + at, sizeof h);
		uint64_t body = (uint64_t)h.path_len + h.data_len;
		int sane = h.magic == UNDO_MAGIC && h.kind >= UNDO_ATTRS && h.kind < UNDO_KIND_END &&
			   h.path_len <= MAX_PATH_BYTES && h.data_len <= MAX_DATA_BYTES;
		if (sane && body > len - at - sizeof h)
			break; /* a torn tail */
		if (!sane || crc_of(&h, b + at + sizeof h, b + at + sizeof h + h.path_len) != h.crc) {
			if (sane && at + sizeof h + body == len)
				break; /* the last record, half written */
			snprintf(why, whylen, "the file-undo journal %s is damaged at byte %zu", p, at);
			rc = -1;
			break;
		}
		if (*n == *cap) {
			struct undo_entry *g = realloc(*v, (*cap = *cap ? *cap * 2 : 64) * sizeof *g);
			if (!g) {
				snprintf(why, whylen, "out of memory reading %s", p);
				rc = -1;
				break;
			}
			*v = g;
		}
		struct undo_entry *e = &(*v)[*n];
		e->h = h, e->seq = seq;
		e->path = malloc(h.path_len + 1);
		e->data = malloc(h.data_len + 1);
		if (!e->path || !e->data) {
			free(e->path), free(e->data);
			snprintf(why, whylen, "out of memory reading %s", p);
			rc = -1;
			break;
		}
		memcpy(e->path, b + at + sizeof h, h.path_len);
		e->path[h.path_len] = 0;
		memcpy(e->data, b + at + sizeof h + h.path_len, h.data_len);
		e->data[h.data_len] = 0;
		(*n)++;
		at += sizeof h + body;
	}
	free(b);
	return rc;
}

int undolog_load(const char *dir, uint64_t from, struct undo_entry **out, size_t *n, char *why, size_t whylen)
{
	uint64_t *seqs;
	size_t ns, cap = 0;
	*out = NULL, *n = 0;
	if (list_seqs(dir, &seqs, &ns) != 0) {
		snprintf(why, whylen, "cannot read the file-undo journal %s: %s", dir, strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < ns; i++) {
		char p[4200];
		if (seqs[i] < from)
			continue;
		if (file_of(dir, seqs[i], p, sizeof p) != 0 || load_file(p, seqs[i], out, n, &cap, why, whylen) != 0) {
			free(seqs);
			undolog_free(*out, *n);
			*out = NULL, *n = 0;
			return -1;
		}
	}
	free(seqs);
	return 0;
}

void undolog_free(struct undo_entry *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(e[i].path), free(e[i].data);
	free(e);
}

int undolog_has(const char *dir, uint64_t seq)
{
	char p[4200];
	struct stat st;
	return file_of(dir, seq, p, sizeof p) == 0 && stat(p, &st) == 0;
}

void undolog_drop(const char *dir, uint64_t keep_from, uint64_t keep_to)
{
	uint64_t *seqs;
	size_t ns;
	if (list_seqs(dir, &seqs, &ns) != 0)
		return;
	for (size_t i = 0; i < ns; i++) {
		char p[4200];
		if ((seqs[i] < keep_from || seqs[i] > keep_to) && file_of(dir, seqs[i], p, sizeof p) == 0)
			unlink(p);
	}
	free(seqs);
}

static void progress_path(const char *dir, char *p, size_t cap) { snprintf(p, cap, "%s/progress", dir); }

int undolog_progress_get(const char *dir, struct undo_progress *pr)
{
	char p[4200];
	progress_path(dir, p, sizeof p);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int ok = pread(fd, pr, sizeof *pr, 0) == (ssize_t)sizeof *pr && pr->done <= pr->total;
	close(fd);
	return ok ? 0 : -1;
}

int undolog_progress_open(const char *dir)
{
	char p[4200];
	progress_path(dir, p, sizeof p);
	int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	return fd < 0 ? -errno : fd;
}

int undolog_progress_put(int fd, const struct undo_progress *pr, int durable)
{
	if (pwrite(fd, pr, sizeof *pr, 0) != (ssize_t)sizeof *pr)
		return -EIO;
	return durable && fdatasync(fd) != 0 ? -errno : 0;
}

void undolog_progress_clear(const char *dir)
{
	char p[4200];
	progress_path(dir, p, sizeof p);
	unlink(p);
}

void undolog_remove_all(const char *dir)
{
	undolog_progress_clear(dir);
	undolog_drop(dir, UINT64_MAX, 0);
	undolog_notes_clear(dir);
	rmdir(dir);
}

/* undolog.h -- the file-undo journal: what the program changed in the file system since a cut,
 * written before the change happens, so that a resume can put every file back as it was at the
 * checkpoint it resumes from (docs/pool-format.md, "The file-undo journal"; the tracker that
 * writes it, filetrack.h; the resume that reads it, fileundo.h).
 *
 * The journal is a folder beside the pool, <pool>.undo, holding one file per cut:
 * <seq>.undo (seq 20 decimal digits) holds the records made after the capture of cut seq, in the
 * order the changes were made.  The pool's committed epoch names the cut it holds (its "files"
 * region, filetrack.h), so a resume from cut C undoes the files seq >= C, the newest first and
 * each file's records last to first: every record holds what was there before its change, so the
 * oldest record of a byte range is applied last and wins.
 *
 * Invariants
 *   - A record is appended (one write of an O_APPEND file) before the change it undoes is let
 *     run; a record torn by a crash is the last of its file and its change never ran: a torn tail
 *     is ignored, a damaged record before the tail is a corrupt journal.
 *   - Every record is checksummed (CRC-32C over all of it but the magic and the checksum).
 *   - A resume killed while undoing goes on after the last record it undid (undo_progress); a
 *     record undone twice in a row gives what undoing it once gives.
 */
#ifndef PROSPER_SUP_UNDOLOG_H
#define PROSPER_SUP_UNDOLOG_H
#include <stddef.h>
#include <stdint.h>

#define UNDO_MAGIC 0x31525550u /* "PUR1" */

enum undo_kind {
	UNDO_ATTRS = 1,  /* an inode's size, mode, owner and times before its first change since the cut
	                  * (b = 1, also for UNDO_BYTES: a mapped file kept whole, no change of its own) */
	UNDO_BYTES,      /* bytes of a regular file at offset a, before they were overwritten */
	UNDO_CREATED,    /* path did not exist: remove it (a = 1: a directory) */
	UNDO_REMOVED,    /* path was removed: made again (regular file: data is its content;
	                  * symlink: data is its target; directory: empty; mode, owner, times) */
	UNDO_RENAMED,    /* path was renamed to data (a = 1: the two were exchanged) */
	UNDO_CANNOT,     /* a change that cannot be undone: data says what (a resume refuses) */
	UNDO_WATCH,      /* at the cut: a file of the program's as it was (size a, times); b = 1: mapped
	                  * shared and writable.  Changed later by no record: changed from outside */
	UNDO_KIND_END
};

struct undo_rec {
	uint32_t magic;
	uint32_t crc;      /* over the rest of the header, the path and the data */
	uint32_t kind;     /* enum undo_kind */
	uint32_t path_len; /* bytes of the path that follows the header, no NUL */
	uint64_t data_len; /* bytes of data after the path */
	uint64_t dev, ino;
	uint64_t a, b;
	uint32_t mode, uid, gid, pad;
	int64_t atime_ns, mtime_ns, ctime_ns;
};

/* One record as read: header, path (NUL-terminated copy), data. */
struct undo_entry {
	struct undo_rec h;
	char *path;
	uint8_t *data;
	uint64_t seq;
};

/* The journal folder of the pool at pool_path; -1 if it does not fit. */
int undolog_dir(const char *pool_path, char *out, size_t cap);

/* Open (create) the journal file of cut seq in dir for appending; truncated when fresh is set.
 * The fd, or -errno. */
int undolog_open(const char *dir, uint64_t seq, int fresh);

/* Make the journal file of cut seq durable (fdatasync), by fd when fd >= 0, else by its name; and
 * with with_dir its name in dir (fsync of the folder).  0 or -errno. */
int undolog_sync(const char *dir, uint64_t seq, int fd, int with_dir);

/* The same for every journal file of cut >= from in dir, and the folder.  0 or -errno. */
int undolog_sync_from(const char *dir, uint64_t from);

/* Power-cut tests (prosper torture --power-cut) set PROSPER_TEST_JOURNAL_DURABLE=1: each sync
 * then notes "seq length" in <dir>/durable-lengths (the bytes written before it began), and the
 * test cuts every journal file back to its longest noted length, as a power cut that lost all
 * that was not flushed would.  A resume that restarts the journal of cut seq notes "seq restart"
 * (the file's name was durable already; what was noted before it is gone); a new run clears them. */
void undolog_notes_restart(const char *dir, uint64_t seq);
void undolog_notes_clear(const char *dir);

/* Append one record (one write); 0 or -errno. */
int undolog_append(int fd, struct undo_rec *h, const char *path, const void *data, size_t data_len);

/* Every record of the files seq >= from in dir, in the order they were written (oldest file
 * first).  0 with *out (free with undolog_free), or -1 with why (a damaged record, unreadable
 * file).  A missing folder is an empty journal. */
int undolog_load(const char *dir, uint64_t from, struct undo_entry **out, size_t *n, char *why, size_t whylen);
void undolog_free(struct undo_entry *e, size_t n);

/* Is there a journal file of cut seq in dir (made at that cut's capture, empty or not)? */
int undolog_has(const char *dir, uint64_t seq);

/* Remove the files of cuts outside [keep_from, keep_to] (keep_to = UINT64_MAX: no upper end). */
void undolog_drop(const char *dir, uint64_t keep_from, uint64_t keep_to);

/* How far a resume has undone the journal of cut seq (total records, the last `done` of them
 * undone), kept in <dir>/progress after every record, so that a resume killed while undoing goes
 * on where it stopped instead of undoing again what it put back (a file made again under a name a
 * rename is undone to would be moved over the right one).  Cleared when the journal restarts. */
struct undo_progress {
	uint64_t seq, total, done;
};
int undolog_progress_get(const char *dir, struct undo_progress *p); /* 0, or -1: none */
int undolog_progress_open(const char *dir);                         /* the fd, or -errno */
int undolog_progress_put(int fd, const struct undo_progress *p, int durable); /* 0 or -errno */
void undolog_progress_clear(const char *dir);

/* Remove the whole folder (a fresh run, a finished program). */
void undolog_remove_all(const char *dir);

#endif

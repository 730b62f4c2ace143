/* fileundo.c -- the file-undo journal judged, then undone, at a resume (fileundo.h). */
#include "fileundo.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "filetrack.h"
#include "undoput.h"
#include "undolog.h"

static int64_t ns_of(const struct timespec *t) { return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec; }

/* Does a record of the program's own (not a watch) name this inode or path? */
static int explained(const struct undo_entry *e, size_t n, const struct undo_entry *w)
{
	for (size_t i = 0; i < n; i++)
		if (e[i].h.kind != UNDO_WATCH && !e[i].h.b /* a snapshot of ours, not a change */ &&
		    ((e[i].h.ino && e[i].h.ino == w->h.ino && e[i].h.dev == w->h.dev) || !strcmp(e[i].path, w->path)))
			return 1;
	return 0;
}

static enum refusal judge(const struct undo_entry *e, size_t n, uint64_t seq, char *why, size_t whylen)
{
	for (size_t i = 0; i < n; i++)
		if (e[i].h.kind == UNDO_CANNOT) {
			snprintf(why, whylen, "%s: the program changed it after the checkpoint in a way that cannot be undone (%s)",
				 e[i].path[0] ? e[i].path : "a file", (const char *)e[i].data);
			return REFUSE_FILE_NOT_UNDOABLE;
		}
	for (size_t i = 0; i < n; i++) {
		const struct undo_entry *w = &e[i];
		/* mapped shared and writable (b): the program's own stores move its time, only the size
		 * and inode say another process was there */
		if (w->h.kind != UNDO_WATCH || w->seq != seq || explained(e, n, w))
			continue;
		struct stat st;
		/* size and modification time: every write moves the time (to the nanosecond once it was
		 * read at the cut: multigrain timestamps); a copy that keeps it (cp -p) is the same file */
		int same = stat(w->path, &st) == 0 && st.st_ino == w->h.ino && st.st_dev == w->h.dev &&
			   (uint64_t)st.st_size == w->h.a && (w->h.b || ns_of(&st.st_mtim) == w->h.mtime_ns);
		if (!same) {
			snprintf(why, whylen, "%s was changed after the checkpoint by another process than the program's: "
				 "its contents may no longer be what the program expects", w->path);
			return REFUSE_FILE_CHANGED_OUTSIDE;
		}
	}
	return 0;
}

enum refusal fileundo_resume(struct tree *t, const char *pool_path, char *why, size_t whylen)
{
	struct files_record rec;
	int r = filetrack_region(t->pool, &rec);
	if (r < 0) {
		snprintf(why, whylen, "%s: its record of the file-undo journal is damaged", pool_path);
		return REFUSE_POOL_CORRUPT;
	}
	if ((r > 0 || !rec.tracked) && t->procs[0]->cfg.trust_files) {
		fprintf(stderr, "%s: the checkpoint's run did not see the program's file changes; resumed with the files as "
			"they are (--trust-files)\n", sup_command());
		return filetrack_start(t, pool_path, r > 0 ? 1 : rec.seq, filetrack_wanted(t), why, whylen) == 0 ? 0 : REFUSE_SETUP;
	}
	if (r > 0 || !rec.tracked) {
		snprintf(why, whylen, "%s: the run that made this checkpoint did not see the program's file changes (%s): its "
			 "files may be ahead of the checkpoint", pool_path,
			 r > 0 ? "a checkpoint of an older prosper" : "it ran without a pid namespace of its own, --host-pids; --trust-files resumes it anyway");
		return REFUSE_FILES_UNTRACKED;
	}
	char dir[4200];
	struct undo_entry *e;
	size_t n;
	if (undolog_dir(pool_path, dir, sizeof dir) != 0 || undolog_load(dir, rec.seq, &e, &n, why, whylen) != 0)
		return REFUSE_POOL_CORRUPT;
	if (!undolog_has(dir, rec.seq)) {
		/* made at the cut's capture: gone, the program's changes since are unknown */
		undolog_free(e, n);
		snprintf(why, whylen, "%s: its file-undo journal %s is missing (a pool is moved or copied with its .undo "
			 "folder): the files may be ahead of the checkpoint", pool_path, dir);
		return REFUSE_POOL_CORRUPT;
	}
	/* a resume killed while undoing this journal: on after the records it undid, not judged again
	 * (its own undo changed the files the judge compares) */
	size_t real = 0;
	for (size_t i = 0; i < n; i++)
		real += e[i].h.kind != UNDO_WATCH;
	struct undo_progress pr = { .seq = rec.seq, .total = real, .done = 0 }, was;
	if (undolog_progress_get(dir, &was) == 0 && was.seq == rec.seq && was.total == real)
		pr.done = was.done;
	/* crash-point tests: the resume dies after undoing this many records (tests/e2e/test_files.py) */
	const char *crash = getenv("PROSPER_TEST_UNDO_CRASH_AFTER");
	long crash_after = crash ? atol(crash) : -1;
	/* "N+": after undoing one more record, before noting it (the window a redo must survive) */
	int crash_unnoted = crash && crash[strlen(crash) - 1] == '+';
	enum refusal no = pr.done ? 0 : judge(e, n, rec.seq, why, whylen);
	int pfd = no || pr.done == real ? -1 : undolog_progress_open(dir);
	if (!no && pr.done < real && pfd < 0) {
		snprintf(why, whylen, "cannot write in the file-undo journal %s", dir);
		no = REFUSE_SETUP;
	}
	size_t undone = 0, skip = pr.done;
	for (size_t i = n; !no && pr.done < real && i-- > 0;) {
		if (e[i].h.kind == UNDO_WATCH)
			continue;
		if (skip) {
			skip--;
			continue;
		}
		if ((long)undone == crash_after && !crash_unnoted)
			_exit(3);
		if (undoput_record(&e[i]) != 0) {
			snprintf(why, whylen, "cannot put %s back as it was at the checkpoint: %s", e[i].path, strerror(errno));
			no = REFUSE_RESTORE;
			break;
		}
		if ((long)undone == crash_after && crash_unnoted)
			_exit(3);
		undone++;
		pr.done++;
		if (undolog_progress_put(pfd, &pr, 0) != 0) {
			snprintf(why, whylen, "cannot write in the file-undo journal %s", dir);
			no = REFUSE_SETUP;
		}
	}
	undolog_free(e, n);
	if (no) {
		if (pfd >= 0)
			close(pfd);
		return no;
	}
	if (undone)
		sync(); /* what was put back is on the disk before the program runs on it */
	if (crash_after == -2)
		_exit(3); /* after all of it, before the journal restarts */
	if (pfd >= 0)
		close(pfd);
	t->stats.resume.files_undone = undone;
	return filetrack_start(t, pool_path, rec.seq, filetrack_wanted(t), why, whylen) == 0 ? 0 : REFUSE_SETUP;
}

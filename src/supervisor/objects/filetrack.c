/* filetrack.c -- the filter, the journal's files from cut to cut, and each stop of a file call
 * (filetrack.h; what a call changes: filecalls.c). */
#include "filetrack.h"
#include "snapshot.h"
#include "outhold.h"
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <unistd.h>
#include "disable.h"
#include "filechange.h"
#include "filecalls.h"
#include "filefilter.h"
#include "inject.h"
#include "fsclass.h"
#include "poolfile.h"
#include "procfs.h"
#include "undolog.h"


int filetrack_wanted(const struct tree *t)
{
	const char *off = getenv("PROSPER_TEST_NO_FILE_FILTER");
	return t->run.ns.on && !(off && *off == '1');
}

/* May our fd n be written unseen (filefilter.h)? */
static int own_fd_passable(int n)
{
	struct stat st;
	int fl = fcntl(n, F_GETFL);
	if (fl < 0 || fstat(n, &st) != 0)
		return 0; /* not open: what the program opens there is anything */
	if (S_ISBLK(st.st_mode))
		return 0;
	return !S_ISREG(st.st_mode) || (fl & O_APPEND);
}

/* In checkpoint image im, is fd n one the resume makes again as given (our own, passable), or
 * one the program put there that is no file? */
static int image_fd_passable(const struct img *im, int n)
{
	for (uint32_t i = 0; im->h && i < im->h->nfds; i++) {
		const struct img_fd *f = &im->fds[i];
		if (f->fd != n)
			continue;
		if (!(f->flags & IMG_FD_REDIRECTED))
			return own_fd_passable(n); /* the resume gives it its own (fd_file.c) */
		const char *p = f->path != IMG_NONE ? img_s(im, f->path) : "";
		return f->type == IMG_FD_PIPE || f->type == IMG_FD_SOCKET || f->type == IMG_FD_FIFO ||
		       (f->type == IMG_FD_DEVICE && (!strcmp(p, "/dev/null") || !strncmp(p, "/dev/pts/", 9) ||
						     !strncmp(p, "/dev/tty", 8)));
	}
	return 0; /* closed at the cut */
}

int filetrack_filter(const struct tree *t, const struct img *im)
{
	if (!t->files.on)
		return FILTER_NONE;
	int f = FILTER_ON | (t->files.external_sync ? FILTER_SENDS : 0);
	if (own_fd_passable(1) && !outhold_holds_own(t, 1) && (!im || image_fd_passable(im, 1)))
		f |= FILTER_PASS_FD1;
	if (own_fd_passable(2) && !outhold_holds_own(t, 2) && (!im || image_fd_passable(im, 2)))
		f |= FILTER_PASS_FD2;
	return f;
}

/* ------------------------------------------------------------------ the journal's files */

void filetrack_mapped_image(struct tree *t, const struct img *im)
{
	for (uint32_t i = 0; im->h && i < im->h->nvmas; i++) {
		const struct img_vma *v = &im->vmas[i];
		if (v->perms[1] == 'w' && v->perms[3] == 's' && v->path != IMG_NONE)
			fchange_mapped(t, img_s(im, v->path));
	}
}

int filetrack_region(prosper_pool *pool, struct files_record *r)
{
	int rc = poolfile_record_get(pool, FILES_REGION_NAME, r, sizeof *r);
	return rc == 0 && r->tracked > 1 ? -1 : rc;
}

static int switch_to(struct tree *t, uint64_t seq, int fresh)
{
	struct file_track *ft = &t->files;
	int fd = undolog_open(ft->dir, seq, fresh);
	if (fd < 0)
		return fd;
	if (ft->fd >= 0)
		close(ft->fd);
	ft->fd = fd, ft->seq = seq;
	ft->saved_bytes = 0, ft->ntouched = 0;
	fchange_new_interval(t);
	ft->unflushed = 0, ft->name_flushed = 0;
	return 0;
}

/* Can a checkpoint of this run outlive a power cut (a pool on a disk or on persistent memory)?
 * Then so must the records that undo what the program changed on a disk since (docs/durability.md). */
static int outlives_power_cut(const struct tree *t)
{
	return t->tiers.kind == TIER_DISK || t->tiers.kind == TIER_PMEM || t->tiers.kind == TIER_TWO;
}

/* The journal file being appended made durable (with its name the first time); 0, or -1 and the
 * journal failed. */
static int flush_journal(struct tree *t)
{
	struct file_track *ft = &t->files;
	double t0 = stopclock_now();
	int rc = undolog_sync(ft->dir, ft->seq, ft->fd, !ft->name_flushed);
	ft->flush_seconds += stopclock_now() - t0;
	ft->unflushed = 0;
	if (rc) {
		ft->failed = 1;
		fprintf(stderr, "%s: cannot flush the file-undo journal in %s: %s\n", sup_command(), ft->dir, strerror(-rc));
		return -1;
	}
	ft->name_flushed = 1;
	ft->flushes++;
	return 0;
}

/* The durable thread, before a copy of cut tag commits (tiers.h). */
static int before_copy(void *arg, uint64_t tag)
{
	struct tree *t = arg;
	struct file_track *ft = &t->files;
	/* from now on what was made after tag is what needs no flush; what was recorded before,
	 * under the older base, is flushed here (every file from tag on) */
	pthread_mutex_lock(&ft->mu);
	ft->flush_base = tag;
	pthread_mutex_unlock(&ft->mu);
	return undolog_sync_from(ft->dir, tag);
}

int filetrack_start(struct tree *t, const char *pool_path, uint64_t seq, int on, char *why, size_t whylen)
{
	struct file_track *ft = &t->files;
	ft->fd = -1, ft->on = on;
	ft->flush_base = UINT64_MAX; /* no checkpoint known durable yet: every record is flushed */
	pthread_mutex_init(&ft->mu, NULL);
	if (undolog_dir(pool_path, ft->dir, sizeof ft->dir) != 0) {
		snprintf(why, whylen, "the pool's path is too long for its file-undo journal");
		return -1;
	}
	if (!seq) {
		outhold_remove_all(ft->dir);
		undolog_remove_all(ft->dir); /* a new run: an older run's journal means nothing now */
	}
	else
		undolog_drop(ft->dir, 0, seq); /* undone by this resume */
	if (seq)
		undolog_notes_restart(ft->dir, seq);
	int rc = on ? switch_to(t, seq, 1) : 0;
	if (rc) {
		snprintf(why, whylen, "cannot write the file-undo journal in %s: %s", ft->dir, strerror(-rc));
		return -1;
	}
	undolog_progress_clear(ft->dir); /* the records it undid are gone now */
	if (on && outlives_power_cut(t) && flush_journal(t) != 0) {
		/* the restarted journal and the cleared progress durable: after a power cut, a resume
		 * must not find the records this one undid and undo them again */
		snprintf(why, whylen, "cannot flush the file-undo journal in %s", ft->dir);
		return -1;
	}
	if (on && t->tiers.kind == TIER_TWO)
		t->tiers.before_copy = before_copy, t->tiers.before_copy_arg = t;
	const char *die = getenv("PROSPER_TEST_DIE_AT_CALL");
	ft->ndie_at = 0;
	for (char *end; die && *die && ft->ndie_at < sizeof ft->die_at / sizeof ft->die_at[0]; die = *end ? end + 1 : end)
		ft->die_at[ft->ndie_at++] = strtol(die, &end, 10);
	return 0;
}

int filetrack_before_durable(struct tree *t)
{
	struct file_track *ft = &t->files;
	if (!ft->on || (t->tiers.kind != TIER_DISK && t->tiers.kind != TIER_PMEM))
		return 0; /* two tiers: the durable thread flushes before its copy (before_copy) */
	return before_copy(t, ft->seq);
}

static int cut_locked(struct tree *t);

int filetrack_cut(struct tree *t)
{
	struct file_track *ft = &t->files;
	pthread_mutex_lock(&ft->mu);
	int rc = cut_locked(t);
	pthread_mutex_unlock(&ft->mu);
	if (!rc && ft->on)
		rc = outhold_cut(t, ft->seq); /* what is held and not shown yet goes with the cut */
	/* a mapped file's copy is flushed before its stores can reach the disk: before the program
	 * runs again */
	if (!rc && ft->unflushed && !ft->failed && outlives_power_cut(t) && flush_journal(t) != 0)
		rc = -EIO;
	ft->unflushed = 0;
	return rc;
}

static int cut_locked(struct tree *t)
{
	struct file_track *ft = &t->files;
	struct files_record r = { .seq = ft->seq + 1, .tracked = (uint32_t)ft->on };
	int rc = poolfile_record_put(t->pool, FILES_REGION_NAME, &r, sizeof r);
	if (rc)
		return rc;
	if (ft->on && switch_to(t, r.seq, 1) != 0) {
		ft->failed = 1;
		return -EIO;
	}
	if (!ft->on)
		ft->seq = r.seq;
	/* files mapped shared and writable: their stores are not seen, so each cut keeps them whole
	 * (a resume puts back the newest copy of the cut it resumes from: the first record of its
	 * journal file); one another process resized is refused (UNDO_WATCH, b = 1) */
	for (int i = 0; ft->on && i < ft->nmapped; i++) {
		struct stat st;
		if (stat(ft->mapped[i], &st) != 0 || !S_ISREG(st.st_mode))
			continue; /* gone (SQLite removes its -shm at the end): nothing to keep */
		struct undo_rec h = { .kind = UNDO_WATCH, .dev = st.st_dev, .ino = st.st_ino, .a = (uint64_t)st.st_size, .b = 1,
				      .mode = st.st_mode };
		if (undolog_append(ft->fd, &h, ft->mapped[i], NULL, 0) != 0)
			ft->failed = 1;
		fchange_snapshot(t, ft->mapped[i]);
	}
	/* the files the program holds open, as they are at the cut: a resume compares */
	for (int p = 0; ft->on && p < t->nprocs; p++) {
		struct sup *m = t->procs[p];
		for (int k = 0; !m->exited && k < m->cut.nfds_read && m->cut.fds_gen == t->cut.gen; k++) {
			struct fchange_target f;
			struct stat ours;
			int fd = m->cut.fds[k].fd;
			if (fchange_fd_target(m->pid, fd, &f) != 0)
				continue;
			if (fd <= 2 && fstat(fd, &ours) == 0 && ours.st_dev == f.st.st_dev && ours.st_ino == f.st.st_ino)
				continue; /* the run's own stdio, ours too: a resume is given its own (fd_file.c) */
			if (fchange_is_mapped(ft, f.path))
				continue; /* its stores move its time: watched by its size below */
			char fsname[64];
			if (fsclass_of(f.open_path, fsname, sizeof fsname) == FS_KERNEL)
				continue; /* a value of the kernel's (/proc/N/comm), not a file's bytes */
			struct undo_rec h = { .kind = UNDO_WATCH, .dev = f.st.st_dev, .ino = f.st.st_ino, .a = (uint64_t)f.st.st_size,
					      .mode = f.st.st_mode };
			h.mtime_ns = (int64_t)f.st.st_mtim.tv_sec * 1000000000 + f.st.st_mtim.tv_nsec;
			h.ctime_ns = (int64_t)f.st.st_ctim.tv_sec * 1000000000 + f.st.st_ctim.tv_nsec;
			if (undolog_append(ft->fd, &h, f.path, NULL, 0) != 0)
				ft->failed = 1;
		}
	}
	return ft->failed ? -EIO : 0;
}

void filetrack_committed(struct tree *t)
{
	struct file_track *ft = &t->files;
	ft->committed_seq = ft->seq;
	outhold_committed(t, ft->committed_seq); /* what it covers goes out */
	uint64_t keep = ft->committed_seq;
	if (t->tiers.kind == TIER_TWO) {
		t->tiers.tag = ft->committed_seq;
		if (t->tiers.thread_started)
			pthread_mutex_lock(&t->tiers.mu);
		if (t->tiers.durable_tag < keep)
			keep = t->tiers.durable_tag;
		if (t->tiers.thread_started)
			pthread_mutex_unlock(&t->tiers.mu);
	}
	if (keep)
		undolog_drop(ft->dir, keep, UINT64_MAX);
}

void filetrack_stop(struct tree *t, struct sup *m, pid_t tid)
{
	struct file_track *ft = &t->files;
	struct user_regs_struct r;
	if (!ft->on || ptrace(PTRACE_GETREGS, tid, 0, &r) != 0)
		return;
	if ((long)r.orig_rax == __NR_madvise) { /* MADV_DONTFORK or MADV_WIPEONFORK (filefilter.h) */
		snapshot_forbid(m);
		return;
	}
	if (ft->fd < 0)
		return;
	double t0 = stopclock_now();
	ft->traps++;
	if (outhold_write(t, m->pid, tid, &r)) {
		ft->seconds += stopclock_now() - t0; /* output held (outhold.h): no file of the file system */
		return;
	}
	pthread_mutex_lock(&ft->mu); /* flush_base holds still while the call is recorded */
	filecalls_record(t, m, tid, &r);
	pthread_mutex_unlock(&ft->mu);
	/* undo before data: a change on a disk runs only once what undoes it is on the disk too */
	if (ft->unflushed && !ft->failed && outlives_power_cut(t))
		flush_journal(t);
	ft->unflushed = 0;
	ft->seconds += stopclock_now() - t0;
	for (size_t i = 0; i < ft->ndie_at; i++)
		if ((long)r.orig_rax == ft->die_at[i])
			kill(0, SIGKILL); /* recorded, never run: as `kill -9 -- -PGID` at this instant would */
	if (ft->failed) {
		/* a change that cannot be recorded must not run: the program ends here, its last
		 * checkpoint resumable with the files as they were */
		sup_disable(m, "the file-undo journal cannot be written");
		kill(m->pid, SIGKILL);
	}
}

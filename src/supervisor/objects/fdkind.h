/* fdkind.h -- the kinds of file descriptor a checkpoint keeps: one table, one file per kind.
 *
 * Each kind of kernel object a program holds an fd to (a regular file, a pipe, an epoll
 * instance, ...) is one file, fd_<kind>.c, that holds both halves of it: how an fd of that kind
 * is recorded at a cut, and how it is checked and made again at a resume.  The file exports one
 * `const struct fd_kind`, and fd_kinds[] (fdkind.c) lists them.  Nothing else in the supervisor
 * tests an fd's kind: capture and restore only call through the table.
 *
 *   capture  fd_record(): every kind in table order is asked whether it claims the fd; the first
 *            that does records it (the common fields are filled before, the kind fills the rest:
 *            its type, object, payload).  The last row claims everything (not kept).
 *   unread   fd_unread(): before that, what an fd holds for the program that no record can keep
 *            (an inotify instance's queued events): the cut waits for the program to read it.
 *   check    fd_check(): at a resume, before anything is changed, each fd of the checkpoint is
 *            checked by its kind (by the record's type); a refusal names the fd.  A type no row
 *            has is a refusal too (a damaged or newer record).  Kinds whose check reads no file
 *            are asked first, before the program's files are undone (fd_check_no_files); those
 *            whose check looks at files (check_reads_files: gone, shorter) once they are the
 *            checkpoint's.
 *   premake  fd_premake_all(): for a tree of processes, before the others are forked, the objects
 *            of kinds that processes may share (an eventfd) made in the first one, once each.
 *   reopen   fd_reopen(): in the relaunched process, stopped in its shim, each fd is made again
 *            by its kind at its number, phase by phase (FD_PHASE_*), then every kind's `after`
 *            (an epoll instance's watches need every fd back).
 *
 * Tree-wide parts stay with the tree: what a pipe, socketpair or shared memory holds at the cut
 * is saved in the tree blob (tree.c, socketpairs.c, sharedmem.c), and those objects are made
 * before the processes are forked (tree_restore.c), as `struct premade`; a kind's reopen takes
 * its fd from there (fd_premade()).
 *
 * To add a kind: a value at the end of enum img_fd_type (image.h), one file fd_<kind>.c with its
 * struct fd_kind, one row in fd_kinds[] (fdkind.c) before the row of kinds it must be asked
 * before, its tests (tests/test_fdkind.c: the record's encoding and damaged forms), its docs.
 *
 * Invariants
 *   - A kind's check changes nothing: a refused resume leaves every file as it was.
 *   - A kind's reopen places exactly the fd f->fd; it never closes or replaces another number of
 *     the checkpoint.  Objects made for several fds live above every number of the checkpoint
 *     (fd_restore.top) until the end of fd_reopen, which closes them.
 */
#ifndef PROSPER_SUP_FDKIND_H
#define PROSPER_SUP_FDKIND_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "image.h"
#include "procfs.h"
#include "refusal.h"

struct sup;
struct tree;
struct tree_view;
struct inject;
struct injector;

/* A tree's resume before its processes are forked: objects made in the first process (root), at
 * numbers above every fd of the checkpoint, that each fd holding them takes (premake.c). */
struct fd_premake {
	struct tree *t;
	struct injector *root;
	long next;                 /* the lowest number above them not taken yet */
	char *why;
	size_t whylen;
};

/* The order a resume makes fds in: those a kind opens by itself first, then those taken from
 * objects made for several fds (a pipe's ends), then every kind's `after`. */
enum fd_phase { FD_PHASE_OPEN = 0, FD_PHASE_SHARED = 1, FD_NPHASES };

/* One fd being recorded at a cut. */
struct fd_capture {
	struct sup *s;              /* its process, stopped */
	const struct fd_info *fi;   /* as /proc read it */
	struct img_fd *e;           /* its record: fd, flags, pos, size and path are filled */
	struct img_buf *strings;    /* the blob's string table */
};

/* An object made for several fds of a process, above every number of the checkpoint. */
struct fd_made {
	uint32_t type;   /* enum img_fd_type of the kind that made it */
	uint64_t object; /* its img_fd.object */
	int32_t rfd, wfd;
};

/* The fds of one relaunched process being made again. */
struct fd_restore {
	struct sup *s;
	struct injector *j;        /* its system calls, and scratch memory in it for paths and results */
	const struct img *im;
	int32_t top;               /* the highest fd number of the checkpoint (at least 2) */
	int32_t next;              /* the lowest number above top that no made object holds */
	struct fd_made *made;      /* objects made in this process (fd_make_above) */
	int nmade, made_cap;
	uint64_t watches_left;     /* epoll watches whose fd is not back */
	char *why;
	size_t whylen;
};

struct fd_kind {
	uint32_t type;             /* enum img_fd_type: the tag its records carry */
	const char *name;          /* in messages and docs */
	int phase;                 /* enum fd_phase of its reopen */
	/* capture: is fi of this kind?  May note the fd for the tree's cut (shared memory). */
	int (*claims)(struct sup *s, const struct fd_info *fi);
	/* capture, optional: the kind's fields of c->e; 0 or a negative errno */
	int (*record)(struct fd_capture *c);
	/* cut, optional, asked before anything of the cut is taken (the program stopped): the bytes
	 * fi holds for the program to read that no record can keep (an inotify instance's queued
	 * events), 0 for none.  The cut waits a little for the program to read them (tree.c).  A
	 * kind with it has a claims that notes nothing. */
	long (*unread)(struct sup *s, const struct fd_info *fi);
	/* resume, optional: 0 to go on, or the refusal with a one-line why */
	int check_reads_files;     /* its check looks at files the resume's undo may change: made after it */
	enum refusal (*check)(const struct img *im, const struct tree_view *tv, const struct img_fd *f, char *why,
			      size_t whylen);
	/* resume, optional (NULL: not made again, the fd is closed): f made again at f->fd; 0 or -1 with r->why */
	int (*reopen)(struct fd_restore *r, const struct img_fd *f);
	/* resume, optional: once every fd is back; 0 or -1 with r->why */
	int (*after)(struct fd_restore *r, const struct img_fd *f);
	/* resume of a tree, optional: f's object made before the processes are forked, so that the
	 * processes that shared it share it again (fd_premade_add); called once per object (f->object);
	 * 0 or -1 with p->why.  A kind whose tree-wide part is the tree's own (pipes, sockets, shared
	 * memory: premake.c) has none. */
	int (*premake)(struct fd_premake *p, const struct img *im, const struct img_fd *f);
};

/* The table, in the order the kinds are asked; the last claims every fd. */
extern const struct fd_kind *const fd_kinds[];
extern const int fd_nkinds;
/* The kind of records of type t, or NULL. */
const struct fd_kind *fd_kind_of(uint32_t type);

/* Capture: the record of fi into *e (its strings into *strings).  0 or a negative errno. */
int fd_record(struct sup *s, const struct fd_info *fi, struct img_fd *e, struct img_buf *strings);
/* Cut: the bytes fd fi of process s holds that a record cannot keep (its kind's `unread`; its
 * kind's name in *kind), 0 for none; -1 when its kind has no `unread`. */
long fd_unread(struct sup *s, const struct fd_info *fi, const char **kind);
/* Resume: every fd of im checked by its kind.  0, or the refusal with a one-line why. */
enum refusal fd_check(const struct img *im, const struct tree_view *tv, char *why, size_t whylen);
/* ... only by the kinds whose check reads no file (before the files are undone). */
enum refusal fd_check_no_files(const struct img *im, const struct tree_view *tv, char *why, size_t whylen);
/* Resume: every fd of r->im made again in the relaunched process (its other fds closed first,
 * but for the tree's premade objects, which are closed last).  0 or -1 with r->why. */
int fd_reopen(struct fd_restore *r);

/* Resume of a tree: every kind's premake for every fd of every process of the checkpoint. */
int fd_premake_all(struct fd_premake *p);

/* Helpers for the kinds. */
/* How a kind makes the object of f, one of several fds may share, in the process of `in`
 * (scratch: 256 bytes of it, for its arguments): its number there, or -1. */
typedef long (*fd_make_fn)(struct inject *in, uint64_t scratch, const struct img *im, const struct img_fd *f);
/* premake: fd, made in the tree's first process, moved above the checkpoint's numbers: its number
 * there, or -1 (closed). */
long fd_premake_above(struct fd_premake *p, long fd);
/* premake of such a kind: f's object made by `make` in the tree's first process, moved above the
 * checkpoint's numbers, and recorded for the processes that share it.  0 or -1 with p->why. */
int fd_premake_shared(struct fd_premake *p, uint32_t type, fd_make_fn make, const struct img *im, const struct img_fd *f);
/* reopen of such a kind: f placed at its number from its object -- the tree's, made before the
 * forks; or the one made in this process for an earlier fd that held it; or made now by `make`
 * and kept above the checkpoint's numbers for the later ones.  0 or -1 with r->why ("cannot make
 * the program's <what> again"). */
int fd_reopen_shared(struct fd_restore *r, const struct img_fd *f, uint32_t type, fd_make_fn make, const char *what);
/* fd, made in the first process for (type, object), recorded as the tree's premade object.  0 or
 * -1 with p->why. */
int fd_premade_add(struct fd_premake *p, uint32_t type, uint64_t object, long fd);
/* Is fi an fd of a kernel object /proc shows by this link text ("anon_inode:[eventfd]")? */
int fd_is_link(const struct fd_info *fi, const char *link);
/* The fd's /proc/PID/fdinfo, open for reading (the kind's fields are there); NULL with errno. */
FILE *fd_fdinfo(const struct fd_capture *c);
/* c->e->object from a link text "PREFIX:[INO]" (a pipe's, a socket's); 0 or -EINVAL. */
int fd_record_link_ino(struct fd_capture *c, const char *prefix);
/* A warning about fd of process s, given once per number for the run. */
void fd_warn_once(struct sup *s, int fd, const char *what, const char *path);
/* The object of the tree's premade ones (made before the forks) of kind type and object; NULL if none. */
const struct premade *fd_premade(const struct tree *t, uint32_t type, uint64_t object);
/* Is fd a number of the tree's premade objects (closed at the end of fd_reopen)? */
int fd_is_premade(const struct tree *t, int fd);
/* from (an fd of the process, f->fd itself or another) at f->fd with f's O_CLOEXEC and O_NONBLOCK.  0 or -1. */
int fd_place(struct fd_restore *r, long from, const struct img_fd *f);
/* An object made in this process (made[0], made[1] its fds, -1 if one) moved above every number of
 * the checkpoint and remembered as (type, object).  0 or -1. */
int fd_make_above(struct fd_restore *r, uint32_t type, uint64_t object, const long made[2]);
const struct fd_made *fd_made_here(const struct fd_restore *r, uint32_t type, uint64_t object);

/* The regular file kind's test of stdio (fd_file.c): is this fd 0-2 of a checkpoint the run's
 * stdout-like file, which the restore cuts back to its checkpointed size and position (rather than
 * the resumed run's own stdio, or a redirection)? */
int fd_stdio_reopened_here(const struct img_fd *f, const char *path);

/* Does fd of the checkpoint im come back as a connected TCP socket (reset, or its connection
 * ended: fd_inet.c), on which a connect() would fail with EISCONN? */
int fd_connected_tcp(const struct img *im, int fd);

#endif

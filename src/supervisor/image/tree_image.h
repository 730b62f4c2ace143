/* tree_image.h -- the epoch blob of a program of several processes (tree_image.c).
 *
 * A program of one process has the blob of one process (image.h, or its metadata stub).  While
 * it has more (docs/run-resume.md "Process trees"), the epoch blob is a tree blob: one entry per
 * process, parents before their children, the first the program's first process; then the pipes
 * between them with the bytes that were in flight at the cut.
 *
 * Layout (little-endian host structs): struct tree_hdr (TREE_HDR_V3_BYTES of it in version 3); nprocs x { struct tree_proc, blob_len
 * bytes of that process's blob (image.h, or a metadata stub), padded to 8 }; npipes x
 * { struct tree_pipe, its name (path_len bytes with the NUL, padded to 8), bytes in flight,
 * padded to 8 }; nsocks x { struct tree_sock, bytes queued,
 * padded to 8 }; nshms x { struct tree_shm, nuses x struct tree_shm_use, its name (path_len
 * bytes with the NUL, padded to 8), its other names (links_len bytes of "/...\0" names, padded
 * to 8), its bytes, padded to 8 } (in that order: add them so).
 *
 * Invariants: tree_decode() accepts only a blob it can bounds-check whole (every length inside
 * it, every parent an earlier process, ids unique); a rejected blob is a refusal to resume.
 */
#ifndef PROSPER_SUP_TREE_IMAGE_H
#define PROSPER_SUP_TREE_IMAGE_H
#include <stddef.h>
#include <stdint.h>
#include "image.h"

#define TREE_MAGIC 0x4545525450535250ull /* "PRSPTREE" */
#define TREE_VERSION 5u /* 2: socketpairs; 3: shared memory; 4: listening sockets, the terminal's
                          * foreground group; 5: the other names of shared memory (3, 4 are read too) */
#define TREE_MAX_PROCS 256
#define TREE_MAX_PIPES 1024
#define TREE_MAX_SHMS 256
#define TREE_MAX_SHM_USES 1024 /* mappings of one object in the whole tree */

struct tree_hdr {
	uint64_t magic;
	uint32_t version, total_bytes;
	uint32_t nprocs, npipes;
	uint32_t nsocks, nshms;
	/* version 4 on (a version-3 header ends above): the process group that was the terminal's
	 * foreground group, as the program sees it; 0 if none of the program's */
	int32_t fg_pgid;
	uint32_t reserved;
};
#define TREE_HDR_V3_BYTES 32u

/* One process: its id and its parent's as the program sees them (its own pid namespace).  A
 * process that has exited and whose parent has not waited for it yet (a zombie) has no blob,
 * only its wait status: a resume makes it exit again with it, for its parent to collect. */
struct tree_proc {
	int32_t pid, parent;    /* parent: 0 for the first process, and for an orphan (its parent is
	                         * the init of the program's pid namespace) */
	int32_t pgid, sid;      /* its process group and session, as the program sees them */
	uint32_t blob_len;
	uint32_t exited;        /* TREE_EXITED | its wait status (waitpid's), or 0 */
};
#define TREE_EXITED 0x80000000u

/* A pipe between processes of the tree: "pipe:[ino]" in their fds, or a named pipe (a FIFO: its
 * path, its inode on its file system, its mode); its capacity and the bytes that were in it at
 * the cut, in order. */
struct tree_pipe {
	uint64_t ino;
	uint32_t capacity, bytes;
	uint32_t path_len;  /* 0: an anonymous pipe */
	uint32_t mode;      /* a FIFO's permission bits */
};

/* An end of a connected unix stream socket between processes of the tree (socketpairs.h): its
 * inode and its peer's, and the bytes queued to be read at it, in order.  With TREE_SOCK_LISTENER
 * (version 4), a listening unix stream socket instead: peer is its backlog and the bytes are its
 * name (a sun_path: an absolute path, or an abstract name whose first byte is 0; 2..108 bytes).
 * With TREE_SOCK_DGRAM or TREE_SOCK_SEQPACKET, an end of a pair of that type (its peer in the
 * tree): the bytes are its queued messages. */
struct tree_sock {
	uint64_t ino, peer;
	uint32_t bytes, flags;
};
#define TREE_SOCK_LISTENER 1u
#define TREE_SOCK_NAME_GONE 2u /* a listener whose path the program removed: made again unnamed */
#define TREE_SOCK_DGRAM 4u     /* an end of a datagram socketpair: its bytes are its queued messages, */
#define TREE_SOCK_SEQPACKET 8u /* each a u32 length and that many bytes (version 4) */
#define TREE_SOCK_UNCONNECTED 16u /* made, not connected: its bytes are its name if it was bound */
#define TREE_SOCK_NAME_MAX 108u

/* Shared memory of the tree's processes (sharedmem.h): a MAP_SHARED anonymous mapping, a deleted
 * file on a memory file system, a /dev/shm file.  Its inode at the cut, its name (path_len 0: it
 * has none -- the name its holders opened it by, if that still names it), the other names it had
 * in /dev/shm (version 5: sem_open links a temporary name to the semaphore's, then removes the
 * temporary one), its bytes from offset 0 (as far as its file or any mapping of it reaches), and
 * every mapping of it in the tree (none: only an fd holds it). */
struct tree_shm {
	uint64_t ino;
	uint32_t nuses, bytes;
	uint32_t path_len, links_len;
};
#define TREE_SHM_MAX_LINKS 4
struct tree_shm_use {
	int32_t pid;     /* the process, as the program sees it */
	uint32_t reserved;
	uint64_t start;  /* where it maps the object (the image's vma at that address says the rest) */
};

/* Append one part to a tree blob being built (tree_begin first, tree_end last).  A shared
 * object's other names are s->links_len bytes at links. */
int tree_begin(struct img_buf *b);
int tree_add_proc(struct img_buf *b, const struct tree_proc *p, const void *blob, size_t len);
int tree_add_pipe(struct img_buf *b, const struct tree_pipe *p, const char *path, const void *bytes);
int tree_add_sock(struct img_buf *b, const struct tree_sock *s, const void *bytes);
int tree_add_shm(struct img_buf *b, const struct tree_shm *s, const struct tree_shm_use *uses, const char *path,
		 const char *links, const void *bytes);
void tree_end(struct img_buf *b);
/* The terminal's foreground group (the program's id; 0: none of its own). */
void tree_set_fg(struct img_buf *b, int32_t pgid);

/* A decoded tree blob: pointers into it (valid while it lives). */
struct tree_view {
	uint32_t nprocs, npipes, nsocks, nshms;
	int32_t fg_pgid;
	const struct tree_proc *procs[TREE_MAX_PROCS];
	const void *blobs[TREE_MAX_PROCS];
	const struct tree_pipe *pipes[TREE_MAX_PIPES];
	const char *pipe_paths[TREE_MAX_PIPES]; /* NULL: anonymous */
	const uint8_t *bytes[TREE_MAX_PIPES];
	const struct tree_sock *socks[TREE_MAX_PIPES];
	const uint8_t *sock_bytes[TREE_MAX_PIPES];
	const struct tree_shm *shms[TREE_MAX_SHMS];
	const struct tree_shm_use *shm_uses[TREE_MAX_SHMS];
	const char *shm_paths[TREE_MAX_SHMS]; /* NULL: no name */
	const char *shm_links[TREE_MAX_SHMS][TREE_SHM_MAX_LINKS]; /* its other names; NULL after the last */
	const uint8_t *shm_bytes[TREE_MAX_SHMS];
};
int tree_is_blob(const void *blob, size_t len);
/* 0, or -EINVAL with *why a one-line reason. */
int tree_decode(const void *blob, size_t len, struct tree_view *out, const char **why);
/* The shared object (its index) process `pid` maps at `start`; of inode ino; named path (its
 * name or one of its other names).  -1: none (also for a NULL view). */
int tree_shm_at(const struct tree_view *v, int32_t pid, uint64_t start);
int tree_shm_of(const struct tree_view *v, uint64_t ino);
int tree_shm_named(const struct tree_view *v, const char *path);

#endif

/* test_tree_image.c -- the tree blob (tree_image.h): what is built decodes to the same processes
 * and pipes, and every damaged form is refused, never read past its end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tree_image.h"

static int failures;
#define MUST(c) do { if (!(c)) { fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); exit(1); } } while (0)
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); failures++; } } while (0)

static uint8_t page[4096];
static int old_format; /* build as version 4 wrote it: no other names */

static struct img_buf build_shm(int32_t second_parent, uint32_t pipe_bytes, uint32_t capacity, int32_t user)
{
	struct img_buf b = { 0 };
	const char a[] = "first process blob", c[] = "second";
	uint8_t bytes[100];
	memset(bytes, 0xab, sizeof bytes);
	MUST(tree_begin(&b) == 0);
	MUST(tree_add_proc(&b, &(struct tree_proc){ .pid = 2, .parent = 0, .pgid = 2, .sid = 2 }, a, sizeof a) == 0);
	MUST(tree_add_proc(&b, &(struct tree_proc){ .pid = 7, .parent = second_parent }, c, sizeof c) == 0);
	MUST(tree_add_pipe(&b, &(struct tree_pipe){ .ino = 99, .capacity = capacity, .bytes = pipe_bytes }, NULL, bytes) == 0);
	MUST(tree_add_pipe(&b, &(struct tree_pipe){ .ino = 98, .capacity = 4096, .bytes = 2, .mode = 0600 }, "/tmp/q.fifo", "hi") == 0);
	MUST(tree_add_sock(&b, &(struct tree_sock){ .ino = 5, .peer = 6, .bytes = 3 }, "abc") == 0);
	MUST(tree_add_sock(&b, &(struct tree_sock){ .ino = 6, .peer = 5, .bytes = 0 }, "") == 0);
	struct tree_shm_use uses[2] = { { .pid = 2, .start = 0x7000 }, { .pid = user, .start = 0x9000 } };
	memset(page, 0x5a, sizeof page);
	static const char links[] = "/dev/shm/sem.mp-1\0/dev/shm/b";
	MUST(tree_add_shm(&b, &(struct tree_shm){ .ino = 41, .nuses = 2, .bytes = sizeof page }, uses, NULL, NULL, page) == 0);
	MUST(tree_add_shm(&b, &(struct tree_shm){ .ino = 42, .nuses = 0, .bytes = 10, .links_len = old_format ? 0 : sizeof links }, uses,
			  "/dev/shm/sem.x", links, "0123456789") == 0);
	tree_end(&b);
	return b;
}

static struct img_buf build(int32_t second_parent, uint32_t pipe_bytes, uint32_t capacity)
{
	return build_shm(second_parent, pipe_bytes, capacity, 7);
}

/* The same blob as version 3 wrote it: a header without the foreground group. */
static void to_v3(struct img_buf *b)
{
	const size_t gone = sizeof(struct tree_hdr) - TREE_HDR_V3_BYTES;
	memmove(b->p + TREE_HDR_V3_BYTES, b->p + sizeof(struct tree_hdr), b->len - sizeof(struct tree_hdr));
	b->len -= gone;
	struct tree_hdr *h = (struct tree_hdr *)b->p;
	h->version = 3;
	h->total_bytes = (uint32_t)b->len;
}

static int decodes(const struct img_buf *b, size_t len)
{
	struct tree_view v;
	const char *why = NULL;
	void *copy = malloc(len ? len : 1);
	memcpy(copy, b->p, len);
	int rc = tree_decode(copy, len, &v, &why);
	CHECK(rc == 0 || (why && *why));
	free(copy);
	return rc == 0;
}

int main(void)
{
	struct img_buf b = build(2, 100, 65536);
	struct tree_view v;
	const char *why;
	CHECK(tree_is_blob(b.p, b.len));
	tree_set_fg(&b, 7);
	CHECK(tree_decode(b.p, b.len, &v, &why) == 0 && v.fg_pgid == 7);
	CHECK(v.nprocs == 2 && v.npipes == 2);
	CHECK(!v.pipe_paths[0] && !strcmp(v.pipe_paths[1], "/tmp/q.fifo") && !memcmp(v.bytes[1], "hi", 2) && v.pipes[1]->mode == 0600);
	CHECK(v.procs[0]->pid == 2 && v.procs[1]->parent == 2 && v.procs[0]->sid == 2);
	CHECK(!memcmp(v.blobs[0], "first process blob", 19) && !memcmp(v.blobs[1], "second", 7));
	CHECK(v.pipes[0]->ino == 99 && v.pipes[0]->bytes == 100 && v.bytes[0][99] == 0xab);
	CHECK(v.nsocks == 2 && v.socks[0]->peer == 6 && !memcmp(v.sock_bytes[0], "abc", 3) && v.socks[1]->bytes == 0);
	CHECK(v.nshms == 2 && v.shms[0]->ino == 41 && v.shms[0]->bytes == 4096 && v.shm_bytes[0][4095] == 0x5a);
	CHECK(!v.shm_paths[0] && !strcmp(v.shm_paths[1], "/dev/shm/sem.x") && !memcmp(v.shm_bytes[1], "0123456789", 10));
	CHECK(tree_shm_of(&v, 42) == 1 && tree_shm_named(&v, "/dev/shm/sem.x") == 1 && tree_shm_named(&v, "/x") == -1);
	CHECK(!v.shm_links[0][0] && !strcmp(v.shm_links[1][0], "/dev/shm/sem.mp-1") && !strcmp(v.shm_links[1][1], "/dev/shm/b") &&
	      !v.shm_links[1][2]);
	CHECK(tree_shm_named(&v, "/dev/shm/b") == 1 && tree_shm_named(&v, "/dev/shm/sem.mp-") == -1);
	CHECK(tree_shm_at(&v, 7, 0x9000) == 0 && tree_shm_at(&v, 2, 0x7000) == 0);
	CHECK(tree_shm_at(&v, 7, 0x7000) == -1 && tree_shm_at(NULL, 2, 0x7000) == -1);
	/* every truncation is refused */
	for (size_t len = 0; len < b.len; len++)
		CHECK(!decodes(&b, len));
	/* a parent that is not an earlier process, more bytes than the pipe holds */
	struct img_buf bad = build(7, 100, 65536);
	CHECK(!decodes(&bad, bad.len));
	free(bad.p);
	bad = build(3, 100, 65536);
	CHECK(!decodes(&bad, bad.len));
	free(bad.p);
	bad = build(2, 100, 50);
	CHECK(!decodes(&bad, bad.len));
	free(bad.p);
	/* an exited process: its status and no blob; never the first process */
	{
		struct img_buf z = { 0 };
		MUST(tree_begin(&z) == 0);
		MUST(tree_add_proc(&z, &(struct tree_proc){ .pid = 2 }, "x", 1) == 0);
		MUST(tree_add_proc(&z, &(struct tree_proc){ .pid = 9, .parent = 2, .exited = TREE_EXITED | 7 << 8 }, "", 0) == 0);
		tree_end(&z);
		CHECK(decodes(&z, z.len));
		((struct tree_proc *)(z.p + sizeof(struct tree_hdr)))->exited = TREE_EXITED;
		CHECK(!decodes(&z, z.len));
		free(z.p);
	}
	/* listening sockets: a path (with its NUL) and an abstract name; damaged names and flags are
	 * refused, and a version-3 blob (before listeners) takes no flag */
	{
		struct img_buf l = { 0 };
		const char abstract[] = "\0hidden";
		MUST(tree_begin(&l) == 0);
		MUST(tree_add_proc(&l, &(struct tree_proc){ .pid = 2 }, "x", 1) == 0);
		MUST(tree_add_sock(&l, &(struct tree_sock){ .ino = 11, .peer = 128, .bytes = 12, .flags = TREE_SOCK_LISTENER },
				   "/tmp/s.sock") == 0);
		MUST(tree_add_sock(&l, &(struct tree_sock){ .ino = 12, .peer = 5, .bytes = sizeof abstract - 1,
							    .flags = TREE_SOCK_LISTENER }, abstract) == 0);
		tree_end(&l);
		CHECK(tree_decode(l.p, l.len, &v, &why) == 0);
		CHECK(v.nsocks == 2 && v.socks[0]->flags == TREE_SOCK_LISTENER && v.socks[0]->peer == 128 &&
		      !strcmp((const char *)v.sock_bytes[0], "/tmp/s.sock") && v.sock_bytes[1][0] == 0 &&
		      !memcmp(v.sock_bytes[1] + 1, "hidden", 6));
		struct tree_sock *first = (struct tree_sock *)(l.p + sizeof(struct tree_hdr) + sizeof(struct tree_proc) + 8);
		CHECK(first->ino == 11);
		first->flags = 4;
		CHECK(!decodes(&l, l.len)); /* an unknown flag */
		first->flags = TREE_SOCK_NAME_GONE;
		CHECK(!decodes(&l, l.len)); /* a name gone, but not a listener's */
		first->flags = TREE_SOCK_LISTENER | TREE_SOCK_NAME_GONE;
		CHECK(decodes(&l, l.len));
		first->flags = TREE_SOCK_LISTENER;
		l.p[(size_t)((uint8_t *)(first + 1) - l.p) + 11] = 'x';
		CHECK(!decodes(&l, l.len)); /* a path without its NUL */
		l.p[(size_t)((uint8_t *)(first + 1) - l.p) + 11] = 0;
		((uint8_t *)(first + 1))[0] = 't';
		CHECK(!decodes(&l, l.len)); /* neither a path nor an abstract name */
		((uint8_t *)(first + 1))[0] = '/';
		first->peer = 70000;
		CHECK(!decodes(&l, l.len)); /* a backlog past 65535 */
		first->peer = 128;
		CHECK(decodes(&l, l.len));
		to_v3(&l);
		CHECK(!decodes(&l, l.len));
		free(l.p);
	}
	/* the messages of a datagram / seqpacket end: each a u32 length and its bytes */
	{
		struct img_buf g = { 0 };
		uint8_t msgs[4 + 3 + 4 + 0 + 4 + 2];
		uint32_t l3 = 3, l0 = 0, l2 = 2;
		memcpy(msgs, &l3, 4), memcpy(msgs + 4, "abc", 3);
		memcpy(msgs + 7, &l0, 4);
		memcpy(msgs + 11, &l2, 4), memcpy(msgs + 15, "de", 2);
		MUST(tree_begin(&g) == 0);
		MUST(tree_add_proc(&g, &(struct tree_proc){ .pid = 2 }, "x", 1) == 0);
		MUST(tree_add_sock(&g, &(struct tree_sock){ .ino = 21, .peer = 22, .bytes = sizeof msgs, .flags = TREE_SOCK_DGRAM },
				   msgs) == 0);
		MUST(tree_add_sock(&g, &(struct tree_sock){ .ino = 22, .peer = 21, .bytes = 0, .flags = TREE_SOCK_DGRAM }, "") == 0);
		tree_end(&g);
		CHECK(tree_decode(g.p, g.len, &v, &why) == 0 && v.nsocks == 2 && v.socks[0]->bytes == sizeof msgs);
		struct tree_sock *first = (struct tree_sock *)(g.p + sizeof(struct tree_hdr) + sizeof(struct tree_proc) + 8);
		CHECK(first->ino == 21);
		uint8_t *body = (uint8_t *)(first + 1);
		uint32_t big = 5;
		memcpy(body + 11, &big, 4);
		CHECK(!decodes(&g, g.len)); /* a message past the end of its end's bytes */
		memcpy(body + 11, &l2, 4);
		first->flags = TREE_SOCK_DGRAM | TREE_SOCK_SEQPACKET;
		CHECK(!decodes(&g, g.len)); /* two kinds at once */
		first->flags = TREE_SOCK_SEQPACKET;
		CHECK(decodes(&g, g.len));
		first->peer = 0;
		CHECK(decodes(&g, g.len)); /* its peer was closed */
		first->peer = 21;
		CHECK(!decodes(&g, g.len)); /* its own peer */
		free(g.p);
	}
	/* sockets made and not connected: unbound (no bytes) or bound to a name */
	{
		struct img_buf u = { 0 };
		MUST(tree_begin(&u) == 0);
		MUST(tree_add_proc(&u, &(struct tree_proc){ .pid = 2 }, "x", 1) == 0);
		MUST(tree_add_sock(&u, &(struct tree_sock){ .ino = 31, .flags = TREE_SOCK_UNCONNECTED | TREE_SOCK_DGRAM }, "") == 0);
		MUST(tree_add_sock(&u, &(struct tree_sock){ .ino = 32, .bytes = 6, .flags = TREE_SOCK_UNCONNECTED }, "/a/b.") == 0);
		tree_end(&u);
		CHECK(tree_decode(u.p, u.len, &v, &why) == 0 && v.nsocks == 2 && v.socks[1]->bytes == 6);
		struct tree_sock *first = (struct tree_sock *)(u.p + sizeof(struct tree_hdr) + sizeof(struct tree_proc) + 8);
		CHECK(first->ino == 31);
		first->peer = 9;
		CHECK(!decodes(&u, u.len)); /* an unconnected socket with a peer */
		first->peer = 0;
		first->flags = TREE_SOCK_UNCONNECTED | TREE_SOCK_LISTENER;
		CHECK(!decodes(&u, u.len)); /* two states */
		first->flags = TREE_SOCK_LISTENER | TREE_SOCK_DGRAM;
		CHECK(!decodes(&u, u.len)); /* a datagram listener */
		free(u.p);
	}
	/* a blob of version 3 (no listeners) is still read */
	{
		old_format = 1;
		struct img_buf o = build(2, 100, 65536);
		old_format = 0;
		to_v3(&o);
		CHECK(tree_decode(o.p, o.len, &v, &why) == 0 && v.nprocs == 2 && v.nsocks == 2 && v.fg_pgid == 0);
		free(o.p);
	}
	/* other names of shared memory: each "/...", NUL-ended, at most TREE_SHM_MAX_LINKS; none before version 5 */
	{
		static const struct { const char *names; uint32_t len; int ok; } cases[] = {
			{ "/a\0/b", 6, 1 },		/* two names */
			{ "/a\0b", 5, 0 },		/* not a path */
			{ "/a\0/b", 5, 0 },		/* not NUL-ended */
			{ "/1\0/2\0/3\0/4\0/5", 15, 0 }, /* too many */
			{ "", 1, 0 },			/* empty */
		};
		for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
			struct img_buf l = { 0 };
			MUST(tree_begin(&l) == 0);
			MUST(tree_add_proc(&l, &(struct tree_proc){ .pid = 2 }, "x", 1) == 0);
			MUST(tree_add_shm(&l, &(struct tree_shm){ .ino = 3, .bytes = 1, .links_len = cases[k].len }, NULL, NULL,
					  cases[k].names, "z") == 0);
			tree_end(&l);
			CHECK(decodes(&l, l.len) == cases[k].ok);
			if (cases[k].ok) {
				((struct tree_hdr *)l.p)->version = 4;
				CHECK(!decodes(&l, l.len)); /* version 4 had no other names */
			}
			free(l.p);
		}
	}
	/* shared memory mapped by a process that is not in the tree */
	bad = build_shm(2, 100, 65536, 8);
	CHECK(!decodes(&bad, bad.len));
	free(bad.p);
	/* a flipped length field anywhere in the headers: refused or still inside the blob */
	for (size_t at = 0; at < b.len; at++) {
		struct img_buf m = { malloc(b.len), b.len, b.len };
		memcpy(m.p, b.p, b.len);
		m.p[at] ^= 0x40;
		(void)decodes(&m, m.len); /* must not crash or read outside (ASan build) */
		free(m.p);
	}
	free(b.p);
	if (failures)
		return 1;
	printf("tree image: ok\n");
	return 0;
}

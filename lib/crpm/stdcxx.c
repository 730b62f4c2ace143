/* stdcxx.c -- linked by bin/prosper-c++: the few libstdc++ routines that write container
 * nodes from inside libstdc++.so, where the compiler's store hooks never reach.
 *
 * std::map/std::set rebalancing and std::list linking are out-of-line functions of the shared
 * library; a node they write in a container would go unnoticed in an instrumented program
 * (its segment is not write-protected once a hooked store prepared it).  Each is defined here
 * under its mangled name, notes every node it may write, and calls the real one (RTLD_NEXT).
 *
 * What each may write (libstdc++'s algorithms, as documented by their data structure):
 *   insert_and_rebalance(left, x, p, header): x, p, header, the root; then the fix-up climbs
 *     two levels per step while parent and uncle are red (recolouring parent, uncle and
 *     grandparent) and ends with at most two rotations around x, its parent and grandparent.
 *     Colours are read before the call to replay that climb (a step only recolours nodes it
 *     has already passed, so the colours it reads next are still the original ones); at the
 *     stop, x, parent, grandparent, their children and the grandparent's parent are noted.
 *   rebalance_for_erase(z, header): z, its successor y, header, and the fix-up from y's place
 *     up: path nodes and their descendants to depth 4 (a rotation at the sibling, then at the
 *     new sibling, reaches nodes four levels below the path).
 *   _List_node_base::_M_hook(pos): this, pos, pos->prev.  _M_unhook(): this->prev, this->next.
 * Every candidate node is prepared (copy-on-write of its segment) and copied aside before the
 * call; afterwards only the nodes that changed are marked dirty, so the checkpoint saves what
 * was written, not everything that might have been.  Past SNAP_MAX candidates the rest are
 * simply marked (more bytes saved, never fewer).
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "prosper/crpm.h"

void crpm__prepare(void *addr, size_t len); /* track.c */
void crpm__mark(void *addr, size_t len);

struct rb_node {
	int color;
	struct rb_node *parent, *left, *right;
};

struct list_node {
	struct list_node *next, *prev;
};

static void *real(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);
	if (!f) {
		fprintf(stderr, "prosper-c++: %s not found in the C++ library\n", name);
		abort();
	}
	return f;
}

#define SNAP_MAX 2048
static __thread struct snap {
	struct rb_node *at;
	struct rb_node was;
} snaps[SNAP_MAX];
static __thread int nsnaps;

static void note_node(struct rb_node *n)
{
	if (nsnaps < SNAP_MAX) {
		crpm__prepare(n, sizeof *n);
		snaps[nsnaps].at = n;
		snaps[nsnaps++].was = *n;
	} else {
		crpm_annotate(n, sizeof *n);
	}
}

/* mark_changed -- after the call: the candidates whose bytes differ were written. */
static void mark_changed(void)
{
	for (int i = 0; i < nsnaps; i++)
		if (memcmp(&snaps[i].was, snaps[i].at, sizeof snaps[i].was))
			crpm__mark(snaps[i].at, sizeof snaps[i].was);
	nsnaps = 0;
}

static void note_subtree(struct rb_node *n, int depth)
{
	if (!n)
		return;
	note_node(n);
	if (depth > 0) {
		note_subtree(n->left, depth - 1);
		note_subtree(n->right, depth - 1);
	}
}

static void note_path(struct rb_node *from, struct rb_node *header, int depth)
{
	for (struct rb_node *n = from; n && n != header; n = n->parent)
		note_subtree(n, depth);
}

#define INSERT "_ZSt29_Rb_tree_insert_and_rebalancebPSt18_Rb_tree_node_baseS0_RS_"
#define ERASE "_ZSt28_Rb_tree_rebalance_for_erasePSt18_Rb_tree_node_baseRS_"
#define HOOK "_ZNSt8__detail15_List_node_base7_M_hookEPS0_"
#define UNHOOK "_ZNSt8__detail15_List_node_base9_M_unhookEv"

void rb_insert(_Bool left, struct rb_node *x, struct rb_node *p, struct rb_node *header) __asm__(INSERT);
void rb_insert(_Bool left, struct rb_node *x, struct rb_node *p, struct rb_node *header)
{
	static void (*f)(_Bool, struct rb_node *, struct rb_node *, struct rb_node *);
	if (!f)
		f = real(INSERT);
	nsnaps = 0;
	note_node(x);
	note_node(header);
	note_node(p);
	if (header->parent)
		note_node(header->parent);
	/* Replay the climb: x is red; it stops at the root, at a black parent, or at a black
	 * uncle (rotations). */
	struct rb_node *n = x, *np = p;
	while (np != header && np != header->parent && np->color == 0 /* red */) {
		struct rb_node *g = np->parent, *u = g->left == np ? g->right : g->left;
		note_node(np);
		note_node(g);
		if (u)
			note_node(u);
		if (u && u->color == 0) {
			n = g;
			np = g->parent;
			continue;
		}
		note_subtree(n, n == x ? 0 : 1); /* x's links are set by the call itself */
		note_subtree(np, 1);
		note_subtree(g, 1);
		if (g->parent != header)
			note_node(g->parent);
		break;
	}
	f(left, x, p, header);
	mark_changed();
}

struct rb_node *rb_erase(struct rb_node *z, struct rb_node *header) __asm__(ERASE);
struct rb_node *rb_erase(struct rb_node *z, struct rb_node *header)
{
	static struct rb_node *(*f)(struct rb_node *, struct rb_node *);
	if (!f)
		f = real(ERASE);
	struct rb_node *y = z;
	if (z->left && z->right)
		for (y = z->right; y->left; y = y->left)
			;
	nsnaps = 0;
	note_node(header);
	note_subtree(z, 1);
	note_path(y, header, 4);
	struct rb_node *r = f(z, header);
	mark_changed();
	return r;
}

void list_hook(struct list_node *self, struct list_node *pos) __asm__(HOOK);
void list_hook(struct list_node *self, struct list_node *pos)
{
	static void (*f)(struct list_node *, struct list_node *);
	if (!f)
		f = real(HOOK);
	crpm_annotate(self, sizeof *self);
	crpm_annotate(pos, sizeof *pos);
	crpm_annotate(pos->prev, sizeof *pos);
	f(self, pos);
}

void list_unhook(struct list_node *self) __asm__(UNHOOK);
void list_unhook(struct list_node *self)
{
	static void (*f)(struct list_node *);
	if (!f)
		f = real(UNHOOK);
	crpm_annotate(self->prev, sizeof *self);
	crpm_annotate(self->next, sizeof *self);
	f(self);
}

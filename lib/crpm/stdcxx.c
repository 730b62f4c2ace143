/* stdcxx.c -- linked by bin/prosper-c++: the few libstdc++ routines that write container
 * nodes from inside libstdc++.so, where the compiler's store hooks never reach.
 *
 * std::map/std::set rebalancing and std::list linking are out-of-line functions of the shared
 * library; a node they write in a container would go unnoticed in an instrumented program
 * (its segment is not write-protected once a hooked store prepared it).  Each is defined here
 * under its mangled name, notes every node it may write, and calls the real one (RTLD_NEXT).
 *
 * What each may write (libstdc++'s algorithms, as documented by their data structure):
 *   insert_and_rebalance(left, x, p, header): x, header, and along the path from p to the root
 *     the recolourings and at most two rotations: every path node, its children and their
 *     children (a rotation rewrites the parent pointer of a grandchild).
 *   rebalance_for_erase(z, header): z, its successor y, header, and the fix-up from y's place
 *     up: path nodes and their descendants to depth 3 (rotations at the sibling reach the
 *     sibling's grandchildren).
 *   _List_node_base::_M_hook(pos): this, pos, pos->prev.  _M_unhook(): this->prev, this->next.
 * Noting more than is written costs a little time, never correctness.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include "prosper/crpm.h"

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

static void note_subtree(struct rb_node *n, int depth)
{
	if (!n)
		return;
	crpm_annotate(n, sizeof *n);
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
	crpm_annotate(x, sizeof *x);
	crpm_annotate(header, sizeof *header);
	note_path(p, header, 2);
	f(left, x, p, header);
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
	crpm_annotate(header, sizeof *header);
	note_subtree(z, 1);
	note_path(y, header, 3);
	return f(z, header);
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

// tree_mirror.c: the ray walk's and the box query's compact copy of a built
// tree's divided nodes (query_cast.c: sweep_record; query.c:
// region_walk_built).
//
// ## Why
//
// A first-hit ray descends about one root-to-leaf path (S5, 100k boxes: 9
// nodes) and at each node tests its children's bounds: four nodes of 68
// bytes, each on a line of its own, 31 a ray, each child reached through a
// pointer computed from its index. A mirror record holds what that descent
// reads of a divided node: its children's bounds, one row an axis, so four
// children are one vector test with no gather (2D: one line), and their
// indices and sub codes (whether each has a record and entries of its own).
// Only nodes with grandchildren get one (mirror_wants: S5, 1.3k records of
// 96 bytes in 2D, 1.3 bytes an object); below them the walk reads nodes, as
// it must to scan a leaf. The bounds are copies, so the walk's tests give
// the same numbers as on the nodes: the same visits, the same order, the
// same hits.
//
// ## Lifetime
//
// A build makes it (build_done). The first change that could make it wrong
// drops it: a bound that grows (bound_grow), an entry appended (a node may
// gain its first own entry), a node made or released; a clear forgets it
// and keeps its block for the next build (mirror_forget). What a
// removal or an in-place move within the bound leaves is still right: every
// bound still holds what it held, and an own-entries flag only says where to
// look (the node's count says what is there). So a tree built once that
// changes every frame has no mirror after its first change, and spends no
// bytes on one. A tree that is cleared and built again keeps the block
// through every change from its first clear with a block on (mirror_keep):
// a frame that builds and then inserts or moves would otherwise give it
// back and take it anew, an allocation a frame.
#include "tree_int.h"

/// Bytes of a mirror block of cap records: the bounds, the links, and the
/// slack to start the bounds on a line.
static size_t mirror_bytes(uint32_t cap) { return (size_t)cap * (sizeof(mirror_bounds) + sizeof(mirror_link)) + 63; }

/// The mirror is wrong from now on: no walk reads it. A clear keeps its
/// block for the build that follows (a tree rebuilt every frame allocates
/// nothing); any other change gives it back unless the tree is rebuilt
/// (mirror_drop).
static void mirror_forget(tree_t *t)
{
	t->mirror = NULL;
	t->mirror_box = NULL;
	t->mirror_len = 0;
}

/// The mirror and its block are gone (a block too small, the tree destroyed).
static void mirror_release(tree_t *t)
{
	mirror_forget(t);
	mem_free(t, t->mirror_mem, mirror_bytes(t->mirror_cap));
	t->mirror_mem = NULL;
	t->mirror_cap = 0;
}

/// A change made the mirror wrong: it goes, and its block too unless the
/// tree is rebuilt (mirror_keep: the next build takes it again).
static void mirror_drop(tree_t *t)
{
	if (t->mirror_keep)
		mirror_forget(t);
	else
		mirror_release(t);
}

/// Whether node n gets a record: divided, with a child that holds anything
/// below it. A node whose children are all leaves has none: its children
/// are tested on their nodes, which the walk reads anyway to scan them (S5:
/// three quarters of the divided nodes, so the records take a quarter of
/// the room, 1.3 bytes an object instead of 5.2).
static bool mirror_wants(const tree_t *t, const node *n)
{
	if (!(n->flags & NODE_DIVIDED)) return false;
	for (int c = 0; c < NCHILD; ++c) {
		const node *cn = n->child[c] != NIL ? &t->nodes[n->child[c]] : NULL;
		if (cn && cn->total > cn->count) return true;
	}
	return false;
}

/// Fill record ri for node ni and, depth first, the records below it,
/// numbering them from *next on (so a record's children's records follow
/// it, near it in memory).
static void mirror_fill(tree_t *t, uint32_t ni, uint32_t ri, uint32_t *next)
{
	const node *n = &t->nodes[ni];
	mirror_bounds *b = &t->mirror_box[ri];
	mirror_link *l = &t->mirror[ri];
	for (int c = 0; c < NCHILD; ++c) {
		uint32_t ci = n->child[c];
		const node *cn = ci != NIL ? &t->nodes[ci] : NULL;
		bool there = cn && cn->total;
		l->child[c] = there ? ci : NIL;
		l->sub[c] = !there ? MIRROR_NODE : (cn->count ? MIRROR_OWN : 0u) | (mirror_wants(t, cn) ? (*next)++ : MIRROR_NODE);
		// An absent child's slot: the node's own bound (never read: any box will do).
		const box_t *cb = there ? &cn->bound : &n->bound;
		for (int d = 0; d < DIM; ++d) {
			b->lo[d][c] = cb->min[d];
			b->hi[d][c] = cb->max[d];
		}
	}
	for (int c = 0; c < NCHILD; ++c)
		if (!(l->sub[c] & MIRROR_NODE)) mirror_fill(t, l->child[c], l->sub[c] & MIRROR_INDEX, next);
}

/// Make the mirror of a loose or tight tree that a build stored items in
/// (build_done). Without memory there is none, and rays walk the nodes.
static void mirror_make(tree_t *t)
{
	mirror_forget(t);
	assert(t->root != NIL && t->nodes[t->root].total > 0); // a build stored something
	// (Sub codes keep 30 bits for a record: a tree with a pool of nodes
	// past that walks its nodes.)
	if (t->def.placement == ORT_PLACEMENT_LEAVES || t->node_len >= MIRROR_NONE) return;
	uint32_t len = 0;
	for (uint32_t i = 0; i < t->node_len; ++i) len += !(t->nodes[i].flags & NODE_FREE) && mirror_wants(t, &t->nodes[i]);
	if (len == 0) return;
	if (len > t->mirror_cap) {
		mirror_release(t);
		t->mirror_mem = mem_alloc(t, mirror_bytes(len));
		if (!t->mirror_mem) return;
		t->mirror_cap = len;
	}
	t->mirror_box = (mirror_bounds *)(((uintptr_t)t->mirror_mem + 63) & ~(uintptr_t)63);
	t->mirror = (mirror_link *)(t->mirror_box + t->mirror_cap);
	t->mirror_len = len;
	uint32_t next = 1;
	const node *root = &t->nodes[t->root];
	t->mirror_root = (root->count ? MIRROR_OWN : 0u) | (mirror_wants(t, root) ? 0u : MIRROR_NODE);
	if (!(t->mirror_root & MIRROR_NODE)) mirror_fill(t, t->root, 0, &next);
	assert(next == (t->mirror_root & MIRROR_NODE ? 1 : len));
}

/// Why record ri does not describe node ni's children, or NULL.
static const char *mirror_check_node(const tree_t *t, uint32_t ni, uint32_t ri)
{
	if (ri >= t->mirror_len) return "mirror: a record out of range";
	const mirror_bounds *b = &t->mirror_box[ri];
	const mirror_link *l = &t->mirror[ri];
	const node *n = &t->nodes[ni];
	for (int c = 0; c < NCHILD; ++c) {
		uint32_t ci = n->child[c];
		if (l->child[c] == NIL) {
			if (ci != NIL && t->nodes[ci].total) return "mirror: a child that holds entries is missing";
			continue;
		}
		if (l->child[c] != ci) return "mirror: a child is not the node's";
		const node *cn = &t->nodes[ci];
		for (int d = 0; d < DIM && cn->total; ++d)
			if (b->lo[d][c] > cn->bound.min[d] || b->hi[d][c] < cn->bound.max[d])
				return "mirror: a child's bound is outside its copy";
		if (cn->count && !(l->sub[c] & MIRROR_OWN)) return "mirror: a child's own entries are not flagged";
		const char *why = l->sub[c] & MIRROR_NODE ? NULL : mirror_check_node(t, ci, l->sub[c] & MIRROR_INDEX);
		if (why) return why;
	}
	return NULL;
}

/// Why the mirror does not describe the tree, or NULL (ortN_tree_validate):
/// every record reached from the root lists the node's children that hold
/// anything, each one's copied bound holds its bound, and the flags say
/// where entries are.
static const char *mirror_check(const tree_t *t)
{
	if (!t->mirror) return NULL;
	if (t->root == NIL) return "a mirror without a root";
	if (t->nodes[t->root].count && !(t->mirror_root & MIRROR_OWN)) return "mirror: the root's own entries are not flagged";
	return t->mirror_root & MIRROR_NODE ? NULL : mirror_check_node(t, t->root, t->mirror_root & MIRROR_INDEX);
}

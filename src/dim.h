// dim.h: the tree's data layout and the small geometry every module shares.
//
// orthant is written once for any dimension. src/dim2.c and src/dim3.c define
// ORTHANT_DIM and include this header and the modules (tree.c, pairs.c,
// query.c), so the quadtree and the octree are one implementation compiled
// twice, and every internal function is static to its dimension.
//
// ## Layout
//
// Three pools, each one array addressed by 32-bit index with a free list, so a
// pool can grow (and move) without invalidating anything, and no node, item or
// entry is ever allocated on its own:
//
//   items[]   one per handle: user data, generation, where its entry is.
//   nodes[]   one per cell: its cell bounds, split point, parent, children,
//             its entry list, and how many entries its whole subtree holds.
//   chunks[]  fixed blocks of CHUNK_CAP entries; a node's entries are a chain
//             of chunks. An entry is a copy of the item's box plus its index,
//             so a traversal reads boxes from contiguous memory and touches
//             an item only to report it.
//
// Child order: bit d of a child's index is set when the child is the upper
// half on axis d. In 2D (y up):
//
//        +----+----+
//        | 2  | 3  |      2 = (x low, y high)   3 = (x high, y high)
//        +----+----+ mid
//        | 0  | 1  |      0 = (x low, y low)    1 = (x high, y low)
//        +----+----+
//            mid
//
// A node stores lo, mid and hi per axis. The children's cells are exactly
// [lo, mid] and [mid, hi] of their parent, so cells tile without rounding
// gaps, and when the root grows the old root's bounds become the new root's
// mid exactly.
//
// ## Invariants (checked by ortN_tree_validate)
//
// - A node's entries: CHUNK_CAP * (chunks - 1) < count <= CHUNK_CAP * chunks;
//   the head chunk is the only partly filled one.
// - total = count + the totals of the children; a non-root node with total 0
//   exists only while waiting out the prune delay.
// - loose/tight: every item has exactly one entry, inside its node's bounds
//   (the cell, or the loose cell); in a divided node an entry fits no child.
// - leaves: entries only in undivided nodes; an item has one entry in every
//   leaf whose cell its box touches, and no other.
// - Each item's (node, addr) names an entry of that item.
#ifndef ORTHANT_SRC_DIM_H
#define ORTHANT_SRC_DIM_H

#include <assert.h>
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "orthant/base.h"

#endif

// The public headers define ORTHANT_DIM only while they declare the API, so
// the dimension of this compilation comes in as ORT_SRC_DIM.
#if ORT_SRC_DIM == 2
#include "orthant/orthant2.h"
#elif ORT_SRC_DIM == 3
#include "orthant/orthant3.h"
#else
#error "compile orthant's modules through src/dim2.c or src/dim3.c"
#endif
#define ORTHANT_DIM ORT_SRC_DIM

#define DIM ORTHANT_DIM
#define NCHILD (1 << DIM)
#define NIL UINT32_MAX
#define CHUNK_CAP 8
/// Query stacks hold this many nodes before they fall back to the heap.
#define LOCAL_STACK 256

typedef ORTHANT_NAME(box) box_t;
typedef ORTHANT_NAME(tree) tree_t;
typedef ORTHANT_NAME(tree_def) def_t;

typedef struct entry {
	box_t box;
	uint32_t item;
} entry;

typedef struct chunk {
	entry e[CHUNK_CAP];
	uint32_t next; ///< next chunk of the node, or the next free chunk
} chunk;

enum node_flags {
	NODE_FREE = 1,
	NODE_DIVIDED = 2,     ///< has (or may grow) children; inserts go down
	NODE_WAITING = 4,     ///< empty, kept for the prune delay
};

typedef struct node {
	float lo[DIM], mid[DIM], hi[DIM];
	uint32_t parent; ///< NIL for the root; next free node when free
	uint32_t child[NCHILD];
	uint32_t head;  ///< first chunk (the only partly filled one), or NIL
	uint32_t count; ///< entries held here
	uint32_t total; ///< entries held in the subtree
	int16_t level;  ///< depth + the root's level (the root's level falls as it grows)
	uint8_t flags;
	uint8_t which;     ///< index in the parent's child array
	uint16_t lifespan; ///< prune delay earned (doubles on reuse)
	uint16_t countdown;
	/// A leaf splits once it holds more than bucket_size entries and at least
	/// this many. A split that could not help (leaves: every entry would land
	/// in one child) or could not get memory doubles it, so an unsplittable
	/// pile is not rescanned on every insert.
	uint32_t retry_at;
	/// The union of the categories stored in the subtree (a superset: removals
	/// do not shrink it), so a query mask skips whole subtrees.
	uint64_t cats;
} node;

enum item_flags {
	ITEM_LIVE = 1,
	ITEM_MARK = 2,   ///< scratch bit for de-duplicating leaves entries
	ITEM_STATIC = 4,  ///< ort_filter.is_static
	ITEM_TOUCHED = 8, ///< in the broad phase's touched list
	ITEM_PENDING = 16, ///< inserted from a callback: has a handle, not yet stored
	ITEM_DOOMED = 32,  ///< removed from a callback: still stored until applied
	ITEM_SPHERE = 64   ///< its bound is the sphere in tree.spheres; the entry holds its box
};

/// A sphere (a circle in 2D): centre and radius.
typedef struct sphere_t {
	float c[DIM];
	float r;
} sphere_t;

typedef struct item {
	void *user;
	uint32_t node; ///< node holding its (first) entry; next free item when free
	uint32_t addr; ///< chunk * CHUNK_CAP + slot of that entry
	uint32_t gen;
	uint32_t flags;
} item;

struct ORTHANT_NAME(tree) {
	def_t def;
	ort_allocator alloc;
	uint32_t salt; ///< mixed into handle generations: foreign handles fail

	item *items;
	uint32_t item_cap, item_len, item_free, live;
	node *nodes;
	uint32_t node_cap, node_len, node_free, node_live;
	chunk *chunks;
	uint32_t chunk_cap, chunk_len, chunk_free, chunk_free_count;

	uint32_t root; ///< NIL until the first item (or a region) makes one
	uint32_t entries;
	int height; ///< an upper bound on the depth of any node

	/// Per-item filters, NULL until some item gets a non-default one; sized
	/// item_cap like items.
	ort_filter *filters;
	uint32_t filter_cap;
	/// Per-item spheres, NULL until the first sphere item; sized sphere_cap.
	sphere_t *spheres;
	uint32_t sphere_cap;
	uint32_t statics; ///< live static items
	/// The incremental broad phase (broadphase.c), NULL until first used.
	struct broadphase *bp;

	/// Queries running now (any thread). While it is above zero, changes are
	/// queued (defer.c) and applied when the outermost query returns.
	atomic_int readers;
	struct deferred *pending;
	uint32_t pending_len, pending_cap, pending_items, pending_ticks;
	uint32_t pending_nodes, pending_chunks; ///< pool room the queue may need
	bool destroy_pending;

	void *scratch; ///< pair finder and build memory, kept between frames
	size_t scratch_bytes;
	/// The pair finder's per-node content bounds (the union of what each
	/// subtree stores), indexed like nodes, kept between frames.
	box_t *content;
	uint32_t content_cap;

	size_t bytes, bytes_peak;
};

// ---- geometry -------------------------------------------------------------

static inline bool box_overlap(const box_t *a, const box_t *b)
{
	for (int d = 0; d < DIM; ++d)
		if (a->min[d] > b->max[d] || b->min[d] > a->max[d]) return false;
	return true;
}

static inline bool box_within(const box_t *inner, const float lo[DIM], const float hi[DIM])
{
	for (int d = 0; d < DIM; ++d)
		if (inner->min[d] < lo[d] || inner->max[d] > hi[d]) return false;
	return true;
}

static inline bool box_overlaps_bounds(const box_t *b, const float lo[DIM], const float hi[DIM])
{
	for (int d = 0; d < DIM; ++d)
		if (b->min[d] > hi[d] || b->max[d] < lo[d]) return false;
	return true;
}

/// ORT_OK for a finite box with min <= max inside the coordinate limit.
static inline ort_result box_check(const box_t *b)
{
	for (int d = 0; d < DIM; ++d) {
		if (!isfinite(b->min[d]) || !isfinite(b->max[d]) || !(b->min[d] <= b->max[d]))
			return ORT_ERROR_INVALID_BOX;
		if (fabsf(b->min[d]) > ORTHANT_COORD_LIMIT || fabsf(b->max[d]) > ORTHANT_COORD_LIMIT)
			return ORT_ERROR_OUT_OF_RANGE;
	}
	return ORT_OK;
}

static inline ort_result point_check(const float p[DIM])
{
	for (int d = 0; d < DIM; ++d)
		if (!isfinite(p[d])) return ORT_ERROR_INVALID_BOX;
	return ORT_OK;
}

/// The bounds every entry of n must lie in (tight, loose) or touch (leaves).
static inline void node_bounds(const tree_t *t, const node *n, float lo[DIM], float hi[DIM])
{
	if (t->def.placement == ORT_PLACEMENT_LOOSE) {
		float k = (t->def.looseness - 1.0f) * 0.5f;
		for (int d = 0; d < DIM; ++d) {
			float m = (n->hi[d] - n->lo[d]) * k;
			lo[d] = n->lo[d] - m;
			hi[d] = n->hi[d] + m;
		}
	} else {
		memcpy(lo, n->lo, sizeof n->lo);
		memcpy(hi, n->hi, sizeof n->hi);
	}
}

static inline int child_of_point(const node *n, const float p[DIM])
{
	int c = 0;
	for (int d = 0; d < DIM; ++d)
		if (p[d] >= n->mid[d]) c |= 1 << d;
	return c;
}

static inline void child_cell(const node *n, int c, float lo[DIM], float hi[DIM])
{
	for (int d = 0; d < DIM; ++d) {
		if (c >> d & 1) {
			lo[d] = n->mid[d];
			hi[d] = n->hi[d];
		} else {
			lo[d] = n->lo[d];
			hi[d] = n->mid[d];
		}
	}
}

static inline entry *entry_at(const tree_t *t, uint32_t addr)
{
	return &t->chunks[addr / CHUNK_CAP].e[addr % CHUNK_CAP];
}

/// Entries in the head chunk of a node holding count entries.
static inline uint32_t head_fill(uint32_t count) { return count == 0 ? 0 : (count - 1) % CHUNK_CAP + 1; }

static inline ort_handle make_handle(const tree_t *t, uint32_t index)
{
	ort_handle h = {index + 1, t->items[index].gen ^ t->salt};
	return h;
}

/// The item index of a live handle, or NIL.
static inline uint32_t handle_index(const tree_t *t, ort_handle h)
{
	if (h.id == 0 || h.id > t->item_len) return NIL;
	const item *it = &t->items[h.id - 1];
	if (!(it->flags & ITEM_LIVE) || (it->gen ^ t->salt) != h.gen) return NIL;
	return h.id - 1;
}

/// Cells are half-open, [lo, hi) on every axis, the root's too: an item's box
/// always ends strictly below the root's upper faces (the root grows until it
/// does). So sibling cells share no point, and growing the root never makes an
/// item touch a cell it did not touch before.
static inline bool cell_holds(const float lo[DIM], const float hi[DIM], const box_t *b)
{
	for (int d = 0; d < DIM; ++d)
		if (b->min[d] < lo[d] || !(b->max[d] < hi[d])) return false;
	return true;
}

/// Whether box b meets the half-open cell [lo, hi).
static inline bool cell_touches(const float lo[DIM], const float hi[DIM], const box_t *b)
{
	for (int d = 0; d < DIM; ++d)
		if (!(b->min[d] < hi[d]) || b->max[d] < lo[d]) return false;
	return true;
}

/// Leaves placement reports a pair (or a query hit) only from the leaf whose
/// half-open cell holds one canonical point p of the overlap: that leaf holds
/// both boxes (both contain p), and no other leaf holds p.
static inline bool leaf_owns(const node *leaf, const float p[DIM])
{
	for (int d = 0; d < DIM; ++d)
		if (p[d] < leaf->lo[d] || !(p[d] < leaf->hi[d])) return false;
	return true;
}

static inline void overlap_corner(const box_t *a, const box_t *b, float p[DIM])
{
	for (int d = 0; d < DIM; ++d) p[d] = a->min[d] > b->min[d] ? a->min[d] : b->min[d];
}

/// An item's category bits (1 while no item has a filter of its own).
static inline uint64_t item_cat(const tree_t *t, uint32_t i) { return t->filters ? t->filters[i].category : 1u; }

/// Whether the filters of items a and b let them pair.
static inline bool items_pair(const tree_t *t, uint32_t a, uint32_t b)
{
	if (t->statics && (t->items[a].flags & t->items[b].flags & ITEM_STATIC)) return false;
	if (!t->filters) return true;
	const ort_filter *fa = &t->filters[a], *fb = &t->filters[b];
	return (fa->category & fb->mask) && (fb->category & fa->mask);
}

// ---- exact shapes ----------------------------------------------------------
//
// The tree prunes and pairs by boxes; an item whose bound is a sphere is then
// tested exactly. Distances are in double (float squares overflow past 1.8e19).

static inline double dist2_point_box(const float p[DIM], const box_t *b)
{
	double s = 0.0;
	for (int d = 0; d < DIM; ++d) {
		double v = p[d] < b->min[d] ? (double)b->min[d] - p[d] : p[d] > b->max[d] ? (double)p[d] - b->max[d] : 0.0;
		s += v * v;
	}
	return s;
}

/// A float box holding every point a sphere query accepts. The rule is
/// dist2 <= r^2 in double, and double rounding can accept a point up to a few
/// 1e-16 (relative) beyond r — at 1e20 that is past what one float ulp of
/// widening covers (fuzz_packed: sphere-rounding-known-bug). So the box is
/// c -+ r (1 + 1e-12), worked out in double and rounded outwards to float.
static inline void sphere_prune_box(const float c[DIM], float r, box_t *out)
{
	double reach = (double)r * (1.0 + 1e-12);
	for (int d = 0; d < DIM; ++d) {
		double lo = (double)c[d] - reach, hi = (double)c[d] + reach;
		float flo = (float)lo, fhi = (float)hi;
		out->min[d] = (double)flo > lo ? nextafterf(flo, -INFINITY) : flo;
		out->max[d] = (double)fhi < hi ? nextafterf(fhi, INFINITY) : fhi;
	}
}

static inline double dist2_points(const float a[DIM], const float b[DIM])
{
	double s = 0.0;
	for (int d = 0; d < DIM; ++d) {
		double v = (double)a[d] - b[d];
		s += v * v;
	}
	return s;
}

static inline const sphere_t *item_sphere(const tree_t *t, uint32_t i)
{
	return (t->items[i].flags & ITEM_SPHERE) ? &t->spheres[i] : NULL;
}

/// Items a and b, whose boxes overlap: do their exact bounds meet?
static inline bool items_touch(const tree_t *t, uint32_t a, uint32_t b, const box_t *box_a, const box_t *box_b)
{
	const sphere_t *sa = item_sphere(t, a), *sb = item_sphere(t, b);
	if (!sa && !sb) return true;
	if (sa && sb) {
		double r = (double)sa->r + sb->r;
		return dist2_points(sa->c, sb->c) <= r * r;
	}
	if (sa) return dist2_point_box(sa->c, box_b) <= (double)sa->r * sa->r;
	return dist2_point_box(sb->c, box_a) <= (double)sb->r * sb->r;
}

/// Item i, whose box meets box q: does its exact bound?
static inline bool item_touches_box(const tree_t *t, uint32_t i, const box_t *q)
{
	const sphere_t *s = item_sphere(t, i);
	return !s || dist2_point_box(s->c, q) <= (double)s->r * s->r;
}

// The broad phase's hooks (broadphase.c), called by the tree as items change.
static bool bp_reserve(tree_t *t, uint32_t items_to_touch, uint32_t item_to_remove);
static void bp_touch(tree_t *t, uint32_t index);
static void bp_detach(tree_t *t, uint32_t index);
static bool bp_items_grow(tree_t *t, uint32_t old_cap, uint32_t new_cap);
static void bp_reset(tree_t *t);
static void bp_free(tree_t *t);

// Queries bracket their work with these (defer.c), so a callback that changes
// the tree has the change queued instead of pulling the tree from under it.
static inline void reading_begin(const tree_t *t)
{
	atomic_fetch_add_explicit(&((tree_t *)t)->readers, 1, memory_order_acquire);
}
static void reading_end(const tree_t *t);

enum deferred_kind { DEFER_INSERT, DEFER_REMOVE, DEFER_MOVE, DEFER_FILTER };

/// A change made from inside a callback, waiting for the queries to end.
struct deferred {
	uint8_t kind;
	bool is_sphere; ///< insert/move: the item's bound becomes `sphere`
	uint32_t item;
	box_t box;
	sphere_t sphere;
	ort_filter filter;
};

static ort_result defer_insert(tree_t *t, const box_t *box, const sphere_t *sph, void *user, ort_handle *out);
static ort_result defer_remove(tree_t *t, uint32_t i);
static ort_result defer_move(tree_t *t, uint32_t i, const box_t *box, const sphere_t *sph);
static ort_result defer_filter(tree_t *t, uint32_t i, const ort_filter *filter);
static const box_t *pending_box(const tree_t *t, uint32_t i);
static const sphere_t *pending_sphere(const tree_t *t, uint32_t i);
static inline bool in_callback(const tree_t *t)
{
	return atomic_load_explicit(&((tree_t *)t)->readers, memory_order_relaxed) > 0;
}

// ---- memory ---------------------------------------------------------------

static void *mem_alloc(tree_t *t, size_t size)
{
	void *p = t->alloc.alloc ? t->alloc.alloc(t->alloc.ctx, size) : malloc(size);
	if (p) {
		t->bytes += size;
		if (t->bytes > t->bytes_peak) t->bytes_peak = t->bytes;
	}
	return p;
}

static void mem_free(tree_t *t, void *p, size_t size)
{
	if (!p) return;
	t->bytes -= size;
	if (t->alloc.free)
		t->alloc.free(t->alloc.ctx, p, size);
	else
		free(p);
}

/// Temporary memory of a const query (a deep traversal stack): not counted in
/// the tree's bytes, so concurrent readers never write to the tree.
static void *query_alloc(const tree_t *t, size_t size)
{
	return t->alloc.alloc ? t->alloc.alloc(t->alloc.ctx, size) : malloc(size);
}

static void query_free(const tree_t *t, void *p, size_t size)
{
	if (!p) return;
	if (t->alloc.free)
		t->alloc.free(t->alloc.ctx, p, size);
	else
		free(p);
}

static bool scratch_reserve(tree_t *t, size_t bytes)
{
	if (bytes <= t->scratch_bytes) return true;
	size_t want = t->scratch_bytes * 2 > bytes ? t->scratch_bytes * 2 : bytes;
	void *p = mem_alloc(t, want);
	if (!p) return false;
	// Callers index the scratch, never point into it, so it may move: keep it.
	if (t->scratch) memcpy(p, t->scratch, t->scratch_bytes);
	mem_free(t, t->scratch, t->scratch_bytes);
	t->scratch = p;
	t->scratch_bytes = want;
	return true;
}

/// A traversal stack of node indices: a local array, or heap when the tree is
/// deeper than it holds. A depth-first walk never holds more than
/// (NCHILD - 1) * depth + 1 nodes, so sizing from the tree's height up front
/// means nothing is ever dropped.
typedef struct node_stack {
	uint32_t local[LOCAL_STACK];
	uint32_t *data;
	size_t cap;
	int top;
} node_stack;

static bool stack_init(const tree_t *t, node_stack *s)
{
	size_t need = (size_t)(NCHILD - 1) * (size_t)(t->height + 1) + 1;
	s->top = 0;
	if (need <= LOCAL_STACK) {
		s->data = s->local;
		s->cap = LOCAL_STACK;
		return true;
	}
	s->data = query_alloc(t, need * sizeof(uint32_t));
	s->cap = need;
	return s->data != NULL;
}

static void stack_free(const tree_t *t, node_stack *s)
{
	if (s->data != s->local) query_free(t, s->data, s->cap * sizeof(uint32_t));
}

static inline void stack_push(node_stack *s, uint32_t v)
{
	assert((size_t)s->top < s->cap);
	s->data[s->top++] = v;
}

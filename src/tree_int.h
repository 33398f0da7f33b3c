// tree_int.h: the tree's data layout, its invariants, and what the tree's
// modules share: memory accounting, handles, traversal stacks, the misuse
// hook, and the functions one module calls in another.
//
// ## Layout
//
// Three pools, each one array addressed by 32-bit index with a free list, so a
// pool can grow (and move) without invalidating anything, and no node, item or
// entry is ever allocated on its own:
//
//   items[]   one per handle: user data, generation, flags, where its entry
//             is (16 bytes: the entry's chunk names its node).
//   nodes[]   one per cell: its cell bounds, parent, children, its entry
//             list, and how many entries its whole subtree holds. What only
//             some trees use (categories once there are filters, prune
//             delays) sits in side arrays by node index (node_cats,
//             node_waits), and what can be worked out is not stored (the
//             split point, the index in the parent), so a node is 68 bytes
//             in 2D (100 in 3D).
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
// A node also keeps `bound`, a box holding every entry of its subtree: a
// superset, grown when an entry arrives or grows in place (bound_grow) and
// never shrunk by a removal, so keeping it costs a few compares per change;
// the pair finder's pass (pairs_content) makes it exact again. Queries prune
// by it instead of the (loose) cell: small items in loose cells leave most of
// a loose cell empty, and a box query visits about a third of the nodes and
// tests under half the entries it would by the loose cell. It sits first in
// the node, with what a query reads next, so testing a child reads one line.
//
// A node stores lo and hi per axis; its split point mid is the centre
// lo + (hi - lo) / 2 as cell_mid rounds it, the same every time (node_mid).
// The children's cells are exactly [lo, mid] and [mid, hi] of their parent,
// so cells tile without rounding gaps. When the root grows, the old root's
// bounds become the new root's mid exactly, and its rounded new bounds need
// not have that centre (about 3 doublings in 100 miss it): such a node is
// flagged NODE_ODDMID and its mid kept in tree_t.odd_mids, one slot a
// level, since each doubling makes the one node of a new, lower level.
// Floats bound the doublings (from a cell 2^-149 wide to the quarter of
// FLT_MAX root_next stops at: under 280), so the table stays small; storing
// mid in every node cost 8 bytes a node (1.7 an object in S4).
//
// ## Invariants (checked by ortN_tree_validate)
//
// - A node's entries: CHUNK_CAP * (chunks - 1) < count <= CHUNK_CAP * chunks;
//   the head chunk is the only partly filled one.
// - total = count + the totals of the children; a non-root node with total 0
//   exists only while waiting out the prune delay.
// - loose/tight: every item has exactly one entry, inside its node's bounds
//   (the cell, or the loose cell); in a divided node an entry fits no child.
// - leaves: an item is copied (one entry in every leaf whose cell its box
//   touches, and no other, at most LEAVES_CAP of them) or capped (ITEM_CAPPED:
//   one entry, in the smallest node whose cell holds its box, a divided one);
//   tree_cap.c says which and when. Only capped entries sit in divided nodes.
// - Each item's addr names an entry of that item; a chunk in a node's chain
//   names that node as its owner.
// - bound holds every entry box of the node and the bound of every child
//   that holds anything.
#ifndef ORTHANT_SRC_TREE_INT_H
#define ORTHANT_SRC_TREE_INT_H

#include <assert.h>
#include <float.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "dim.h"
#include "geom.h"
#include "mem.h"

/// Entries a chunk holds. A node keeps its entries in a chain of chunks whose
/// head is the only partly filled one, so a node's slack is the head's free
/// slots. In 2D a leaf holds about 6 entries (S4: 100k boxes, bucket 16), in
/// chunks of 8 it left 2.3 slots empty a node (9.8 bytes an object); chunks
/// of 4 leave 1.3 (plus a 8-byte header every 4 entries): 31.3 -> 27.1 bytes
/// an object for the chained chunks. 3D keeps 8 (a 28-byte entry).
#if DIM == 2
#define CHUNK_CAP 4
#else
#define CHUNK_CAP 8
#endif
/// Nodes owing an own-list settle the tree lists by name (tree_t.own_owed).
#define OWN_OWED 32
/// A node at max_depth holding more than this many buckets splits on
/// (can_split in tree_shape.c). Two, not more: a world too big for the depth
/// (2M boxes at depth 8: 61 a cell) would otherwise keep cells whose every
/// query scans them whole and whose own-list indexes every in-place move must
/// keep up (about 4 of a mover's 11 cache misses in tree_move); split, its
/// cells hold a bucket or less and need no index.
#define DEEP_SPLIT 2
/// leaves: an item whose box would be copied into more leaves than this is
/// stored once instead, at the smallest node holding it (tree_cap.c). A build
/// may set ORTHANT_LEAVES_CAP to show what the cap saves (test_leafcap.c).
#ifdef ORTHANT_LEAVES_CAP
#define LEAVES_CAP ORTHANT_LEAVES_CAP
#else
#define LEAVES_CAP NCHILD
#endif
/// Query stacks hold this many nodes before they fall back to the heap.
#define LOCAL_STACK 256

#ifdef ORTHANT_COUNT_WORK
/// Work of inserts and removes: nodes descended, entries scanned for an item,
/// and own-list upkeep (entries laid out, scanned by selection, sampled, and
/// index runs searched). A test-only build counts it (tests/test_adversarial.c).
extern uint64_t ORTHANT_NAME(work_churn);
uint64_t ORTHANT_NAME(work_churn);
#define WORK_CHURN(n) (ORTHANT_NAME(work_churn) += (uint64_t)(n))
/// Pair records the broad phase's first update wrote: the walk's, and each
/// record again when it was copied into the set (broadphase.c: bp_walk_first).
extern uint64_t ORTHANT_NAME(work_first_records);
uint64_t ORTHANT_NAME(work_first_records);
#define WORK_FIRST_RECORDS(n) (ORTHANT_NAME(work_first_records) += (uint64_t)(n))
#else
#define WORK_CHURN(n) ((void)0)
#define WORK_FIRST_RECORDS(n) ((void)0)
#endif

typedef ORTHANT_NAME(tree) tree_t;
typedef ORTHANT_NAME(tree_def) def_t;

typedef struct entry {
	box_t box;
	uint32_t item;
} entry;

/// The links come first. A walk reads the head chunk's next with its entries,
/// and the head fills its slots from 0: with the links last, next sat apart
/// from the few entries there, on a cache line of its own in 6 of the 8
/// places a 2D chunk (88 bytes) starts in a line. Moved first, S5 (1 MiB
/// cache model) lost 0.9 of 27.5 misses a box query, 0.6 of 12 a first-hit ray.
typedef struct chunk {
	uint32_t next;  ///< next chunk of the node, or the next free chunk
	uint32_t owner; ///< the node whose chain holds it (item_node reads it); stale while free
	entry e[CHUNK_CAP];
} chunk;

enum node_flags {
	NODE_FREE = 1,
	NODE_DIVIDED = 2,     ///< has (or may grow) children; inserts go down
	NODE_WAITING = 4,     ///< empty, kept for the prune delay
	NODE_OWNIDX = 8,      ///< its own list has an index (tree_ownidx.h)
	NODE_SWEPT = 16,      ///< scratch bit of cap_fixup (tree_cap.c): leaf already swept
	NODE_OWED = 32,       ///< its own-list index owes a settle (tree_ownidx.c: own_note)
	NODE_ODDMID = 64,     ///< made by a root doubling, its mid is not its centre: tree_t.odd_mids
};

typedef struct node {
	/// Holds every entry of the subtree (see Layout); inverted (min > max)
	/// while nothing has arrived since the node was made.
	box_t bound;
	// Its categories are in tree_t.node_cats (node_cats).
	uint32_t total; ///< entries held in the subtree
	uint32_t head;  ///< first chunk (the only partly filled one), or NIL
	uint32_t count; ///< entries held here
	uint32_t child[NCHILD];
	float lo[DIM], hi[DIM]; ///< the cell; its split point is node_mid's
	uint32_t parent; ///< NIL for the root; next free node when free (its index there: node_which)
	int16_t level;  ///< depth + the root's level (the root's level falls as it grows)
	uint8_t flags;
	// Its prune delay is in tree_t.node_waits (prune_delay > 0 only).
	/// A leaf splits once it holds more than bucket_size entries and at least
	/// node_retry_at of them: 2^retry, or any number while retry is 0. A
	/// split that could not help (leaves: every entry would land in one
	/// child) or could not get memory sets it past twice the count
	/// (node_retry_after), so an unsplittable pile is not rescanned on every
	/// insert.
	uint8_t retry;
} node;
_Static_assert(sizeof(node) == (DIM == 2 ? 68 : 100), "a node grew: S4's bytes an object count it (tree_int.h Layout)");

/// A mirror record (tree_mirror.c): what a ray's or a box query's descent reads of a divided
/// node, in two parts. The bounds of its children, one row an axis (a row
/// is a vector register of four children), a line in 2D; an absent child
/// (none, or holding nothing) has a row slot that is never read.
typedef struct mirror_bounds {
	float lo[DIM][NCHILD], hi[DIM][NCHILD];
} mirror_bounds;
_Static_assert(DIM != 2 || sizeof(mirror_bounds) == 64, "a 2D record's bounds are one cache line");
/// And the links: child[c] is the child, NIL where it holds nothing;
/// sub[c] its sub code: MIRROR_OWN when it has entries of its own, and its
/// record (MIRROR_INDEX), or MIRROR_NODE when it has none: the walk reads
/// the node from there down.
typedef struct mirror_link {
	uint32_t child[NCHILD];
	uint32_t sub[NCHILD];
} mirror_link;
#define MIRROR_OWN 0x80000000u
#define MIRROR_NODE 0x40000000u
#define MIRROR_INDEX 0x3fffffffu
#define MIRROR_NONE MIRROR_INDEX

enum item_flags {
	ITEM_LIVE = 1,
	ITEM_MARK = 2,   ///< scratch bit for de-duplicating leaves entries
	ITEM_STATIC = 4,  ///< ort_filter.is_static
	ITEM_TOUCHED = 8, ///< in the broad phase's touched list
	ITEM_PENDING = 16, ///< inserted from a callback: has a handle, not yet stored
	ITEM_DOOMED = 32,  ///< removed from a callback: still stored until applied
	ITEM_SPHERE = 64,  ///< its bound is the sphere in tree.spheres; the entry holds its box
	ITEM_PAIRED = 128, ///< scratch bit of the broad phase: already paired with the item being updated
	ITEM_CAPPED = 256, ///< leaves: stored once, at an inner node (tree_cap.c)
	ITEM_OVERCAP = 512 ///< leaves: in the list of items a split may have put over the cap
};

/// Bits of an item's generation and flags, which share one word: 16 bytes an
/// item. A handle is stale once its slot's generation moves on; 22 bits let a
/// slot be reused about four million times before an old handle could name it
/// again (Box2D's shape ids keep 16).
#define ITEM_GEN_BITS 22
#define ITEM_FLAG_BITS 10
_Static_assert(ITEM_OVERCAP < 1u << ITEM_FLAG_BITS, "item flags outgrew their bits");

typedef struct item {
	void *user;
	/// chunk * CHUNK_CAP + slot of its (first) entry, whose chunk names the
	/// node (item_node); NIL while it has none; the next free item when free.
	uint32_t addr;
	uint32_t flags : ITEM_FLAG_BITS; ///< the low bits: a flag test is one AND
	uint32_t gen : ITEM_GEN_BITS;
} item;

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
	/// Per node, the union of the categories stored in its subtree (a
	/// superset: removals do not shrink it), so a query mask skips whole
	/// subtrees. NULL while filters is (every item's category is 1, and so is
	/// every node's); then sized node_cats_cap >= node_cap.
	uint64_t *node_cats;
	uint32_t node_cats_cap;
	/// Per node, with def.prune_delay > 0 (NULL without): the prune delay it
	/// earned (doubles on reuse) and what is left of it while NODE_WAITING.
	/// Sized node_waits_cap >= node_cap.
	struct node_wait {
		uint16_t lifespan, countdown;
	} *node_waits;
	uint32_t node_waits_cap;
	/// The split points of the nodes flagged NODE_ODDMID (made by root
	/// doublings): slot -level - 1 (odd_slot). Only doublings make nodes of a
	/// level below 0 and each makes one, so a slot has at most one owner; a
	/// stale slot (its node pruned) is never read. Reserved with the nodes of
	/// the doublings (odd_mids_reserve), NULL until the root first doubles.
	float (*odd_mids)[DIM];
	uint32_t odd_mids_cap;
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

	/// Indexes of big own lists (tree_ownidx.h): headers, a free list, and
	/// each indexed node's header (own_of, valid where NODE_OWNIDX is set).
	struct ownidx *own;
	uint32_t own_cap, own_len, own_free;
	uint32_t *own_of;
	uint32_t own_of_cap;
	/// The indexes' pools (struct ownidx.base): positions held, handed out
	/// (at the end, in order), and in use (the rest is left by regrown indexes).
	uint32_t *own_ids;
	box_t *own_bounds;
	uint32_t *own_least; ///< beside own_bounds: the least handle id under each bound
	uint8_t *own_skip;   ///< beside own_ids: a run chunk's foreign slots (tree_ownidx.h)
	uint32_t own_pool_cap, own_pool_len, own_pool_used;
	void *own_scratch; ///< rebuild memory, kept between frames
	size_t own_scratch_bytes;
	/// Nodes whose index owes a settle (NODE_OWED), settled before every
	/// mutation returns (own_settle_owed). Past OWN_OWED of them every node
	/// is looked at instead (own_owed_all), so marking never allocates.
	/// own_refused: the last settle left some owing for want of memory.
	uint32_t own_owed[OWN_OWED];
	uint32_t own_owed_len;
	bool own_owed_all, own_refused;
	/// leaves: items stored capped, and the items splits found over the cap,
	/// waiting for cap_fixup (tree_cap.c).
	uint32_t capped;
	uint32_t *overcap;
	uint32_t overcap_len, overcap_cap;

	void *scratch; ///< pair finder and build memory, kept between frames
	size_t scratch_bytes;
	/// A split is rehoming the entries it found astray (tree.c:
	/// rehome_astray); the splits those inserts cause leave theirs.
	bool rehoming;
	/// A build ran before: this one keeps its scratch and pool room for the
	/// next (a tree rebuilt every frame allocates nothing), where a first
	/// build gives them back (pools_fit).
	bool built;

	size_t bytes, bytes_peak;

	/// The item slots of the per-item moves since the last update_pairs, in
	/// call order (tree.c: move_ahead): a move reads the previous round's
	/// slots a few places on and fetches their items, entries and nodes
	/// early. Kept while a broad phase runs; at most item_len long.
	uint32_t *mlog;
	uint32_t mlog_cap, mlog_len, mlog_pos; ///< room; the previous round's moves; this round's so far

	/// The ray walk's mirror of the divided nodes (tree_mirror.c), NULL
	/// unless a build made it and nothing has changed since: record i is
	/// mirror_box[i] and mirror[i] (both in mirror_mem, the bounds on
	/// lines, kept through a clear); mirror_root is the root's sub code.
	mirror_link *mirror;
	mirror_bounds *mirror_box;
	void *mirror_mem;
	uint32_t mirror_len, mirror_cap, mirror_root; ///< records in use, records the block holds
	/// A clear came after a build: the tree is rebuilt, and a change after
	/// a build keeps the block for the next build (mirror_drop).
	bool mirror_keep;

	/// The detached mode (tree_detach.c): a big move_many batch writes its
	/// boxes into a dense array, and the entries take them later (DET_*).
	struct detached *det;
	atomic_int det_state;
	bool det_attaching; ///< the entries are taking the detached boxes now
};

// ---- nodes, entries, items ----------------------------------------------------------

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

/// An inverted box: it holds nothing and overlaps nothing.
static inline void bound_clear(box_t *b)
{
	for (int d = 0; d < DIM; ++d) {
		b->min[d] = INFINITY;
		b->max[d] = -INFINITY;
	}
}

static void mirror_drop(tree_t *t);
static void mirror_release(tree_t *t);

/// Grow node ni's bound, and its ancestors', to hold box; stops at the first
/// that holds it already (its ancestors hold it too). A bound that grows
/// may outgrow its mirror record: the mirror goes.
static inline void bound_grow(tree_t *t, uint32_t ni, const box_t *box)
{
	while (ni != NIL) {
		node *n = &t->nodes[ni];
		bool grew = false;
		for (int d = 0; d < DIM; ++d) {
			if (box->min[d] < n->bound.min[d]) n->bound.min[d] = box->min[d], grew = true;
			if (box->max[d] > n->bound.max[d]) n->bound.max[d] = box->max[d], grew = true;
		}
		if (!grew) return;
		if (t->mirror) mirror_drop(t);
		ni = n->parent;
	}
}

static inline int node_depth(const tree_t *t, const node *n) { return n->level - t->nodes[t->root].level; }

/// Nodes a descent from the root may make: one a level, down to the deepest
/// level there is or may be.
static inline uint64_t descent_nodes(const tree_t *t)
{
	return (uint64_t)(t->height > t->def.max_depth ? t->height : t->def.max_depth) + 2;
}

/// The slot of tree_t.odd_mids a NODE_ODDMID node's split point is in.
static inline uint32_t odd_slot(const node *n)
{
	assert(n->level < 0);
	return (uint32_t)(-(int32_t)n->level - 1);
}

/// Whether box's centre lies in n's half-open cell (where an insert from
/// the root would take a loose box).
static inline bool centre_in_cell(const node *n, const box_t *box)
{
	for (int d = 0; d < DIM; ++d) {
		float c = box->min[d] + (box->max[d] - box->min[d]) * 0.5f;
		if (c < n->lo[d] || !(c < n->hi[d])) return false;
	}
	return true;
}

/// The split point of the cell [lo, hi): its centre.
static inline void cell_mid(const float lo[DIM], const float hi[DIM], float mid[DIM])
{
	for (int d = 0; d < DIM; ++d) mid[d] = lo[d] + (hi[d] - lo[d]) * 0.5f;
}

/// Node n's split point (see Layout): its cell's centre, or the old root's
/// edge kept for a node a root doubling made.
static inline void node_mid(const tree_t *t, const node *n, float mid[DIM])
{
	if (n->flags & NODE_ODDMID) {
		assert(odd_slot(n) < t->odd_mids_cap);
		memcpy(mid, t->odd_mids[odd_slot(n)], sizeof(float) * DIM);
	} else {
		cell_mid(n->lo, n->hi, mid);
	}
}

/// Child c's cell within [lo, hi) split at mid.
static inline void quadrant(const float lo[DIM], const float mid[DIM], const float hi[DIM], int c, float clo[DIM],
                            float chi[DIM])
{
	for (int d = 0; d < DIM; ++d) {
		clo[d] = c >> d & 1 ? mid[d] : lo[d];
		chi[d] = c >> d & 1 ? hi[d] : mid[d];
	}
}

static inline void child_cell(const tree_t *t, const node *n, int c, float lo[DIM], float hi[DIM])
{
	float mid[DIM];
	node_mid(t, n, mid);
	quadrant(n->lo, mid, n->hi, c, lo, hi);
}

static inline int child_of_point(const tree_t *t, const node *n, const float p[DIM])
{
	float mid[DIM];
	node_mid(t, n, mid);
	int c = 0;
	for (int d = 0; d < DIM; ++d)
		if (p[d] >= mid[d]) c |= 1 << d;
	return c;
}

/// Node ni's index in its parent's child array.
static inline int node_which(const tree_t *t, uint32_t ni)
{
	const node *p = &t->nodes[t->nodes[ni].parent];
	int c = 0;
	while (p->child[c] != ni) {
		++c;
		assert(c < NCHILD);
	}
	return c;
}

/// The count at which a leaf tries to split again (node.retry).
static inline uint64_t node_retry_at(const node *n) { return n->retry ? (uint64_t)1 << n->retry : 0; }

/// A leaf holding count entries could not split: the least power of two of
/// at least twice the count (under four times it) as its next try.
static inline uint8_t node_retry_after(uint32_t count)
{
	uint8_t e = 1;
	while (((uint64_t)1 << e) < 2 * (uint64_t)count) ++e;
	return e;
}

/// Leaves placement reports a pair (or a query hit) only from the leaf whose
/// half-open cell holds one canonical point p of the overlap: that leaf holds
/// both boxes (both contain p), and no other leaf holds p.
static inline bool cell_owns(const float lo[DIM], const float hi[DIM], const float p[DIM])
{
	for (int d = 0; d < DIM; ++d)
		if (p[d] < lo[d] || !(p[d] < hi[d])) return false;
	return true;
}

static inline bool leaf_owns(const node *leaf, const float p[DIM]) { return cell_owns(leaf->lo, leaf->hi, p); }

static inline entry *entry_at(const tree_t *t, uint32_t addr)
{
	return &t->chunks[addr / CHUNK_CAP].e[addr % CHUNK_CAP];
}

/// Fetch every cache line of the record of `size` bytes at p ahead of its
/// use: a record may straddle lines (a 2D node, 68 bytes, has its cell,
/// parent and flags on a second line in 11 of the 16 places it starts; a 2D
/// entry, 20 bytes, in 2 of the 8 places in its chunk). Always inlined: a
/// function that only reads and prefetches is "pure" to GCC (a prefetch is
/// no side effect), so a call of it left out of line would be deleted as
/// dead code.
ORT_INLINE void fetch_span(const void *p, size_t size)
{
	const char *c = p;
	for (size_t o = 0; o < size; o += 64) __builtin_prefetch(c + o);
	__builtin_prefetch(c + size - 1);
}

/// The node holding item i's (first) entry: its chunk's owner. An item keeps
/// only where its entry is, so the node costs 4 bytes a chunk, not an item.
static inline uint32_t item_node(const tree_t *t, uint32_t i)
{
	uint32_t addr = t->items[i].addr;
	return addr == NIL ? NIL : t->chunks[addr / CHUNK_CAP].owner;
}

/// Entries in the head chunk of a node holding count entries.
static inline uint32_t head_fill(uint32_t count) { return count == 0 ? 0 : (count - 1) % CHUNK_CAP + 1; }

/// Visit the entries of a node: ENTRY_LOOP(t, n, c, k) { entry *e = &t->chunks[c].e[k]; ... }.
#define ENTRY_LOOP(t, n, c, k)                                                                   \
	for (uint32_t c = (n)->head, c##_fill = head_fill((n)->count); c != NIL;                       \
	     c = (t)->chunks[c].next, c##_fill = CHUNK_CAP)                                             \
		for (uint32_t k = 0; k < c##_fill; ++k)

// A built tree (one with a mirror: nothing made or appended since the
// build) is laid out in pre-order (tree_build.c: bd_job_emit): a node's
// children follow it in the pool, the first right after it when they are
// leaves, and a node's chunks are one run ending at its head (each chunk's
// next is the one before it). The two prefetches below guess from that
// layout; a wrong guess (a removal emptied a chunk) fetches lines for
// nothing and changes no result.

/// Node ni, pushed from a mirror record without a record of its own or own
/// entries (a leaves' parent, mostly), and the NCHILD nodes after it: its
/// children, which its pop tests next, arrive with it instead of after it.
ORT_INLINE void built_children_prefetch(const tree_t *t, uint32_t ni)
{
	uint32_t end = ni + 1 + NCHILD < t->node_len ? ni + 1 + NCHILD : t->node_len;
	fetch_span(&t->nodes[ni], (size_t)(end - ni) * sizeof(node));
}

/// The lines of leaf cn's chunks (up to four), not only its head's: its
/// scan then waits for one fetch, not one a chunk along the chain.
ORT_INLINE void built_chunks_prefetch(const tree_t *t, const node *cn)
{
	uint32_t chunks = (cn->count + CHUNK_CAP - 1) / CHUNK_CAP, head = cn->head;
	if (chunks > 4) chunks = 4;
	if (chunks > head + 1) chunks = head + 1;
	uint32_t first = head + 1 - chunks;
	fetch_span(&t->chunks[first],
	           (size_t)(chunks - 1) * sizeof(chunk) + offsetof(chunk, e) + head_fill(cn->count) * sizeof(entry));
}

/// The children record l lists, a bit each.
static inline unsigned mirror_live(const mirror_link *l)
{
	unsigned live = 0;
#if defined(__SSE2__)
	for (int g = 0; g < NCHILD; g += 4) {
		__m128i ids = _mm_loadu_si128((const __m128i *)(const void *)&l->child[g]);
		__m128i nil = _mm_cmpeq_epi32(ids, _mm_set1_epi32(-1)); // NIL
		live |= (~(unsigned)_mm_movemask_ps(_mm_castsi128_ps(nil)) & 15u) << g;
	}
#else
	for (int c = 0; c < NCHILD; ++c) live |= (unsigned)(l->child[c] != NIL) << c;
#endif
	return live;
}

static inline ort_handle make_handle(const tree_t *t, uint32_t index)
{
	ort_handle h = {index + 1, t->items[index].gen ^ t->salt};
	return h;
}

/// The item index of a live handle, or NIL.
static inline uint32_t handle_index(const tree_t *t, ort_handle h)
{
	uint32_t i = h.id - 1; // the null id wraps past every slot
	if (i >= t->item_len) return NIL;
	const item *it = &t->items[i];
	if (!(it->flags & ITEM_LIVE) || (it->gen ^ t->salt) != h.gen) return NIL;
	return i;
}

/// A programmer error (a stale handle, a call a callback may not make): the
/// assert hook hears of it, and the caller returns r.
static ort_result misuse(const tree_t *t, ort_result r, const char *what)
{
	if (t->def.assert_fn) t->def.assert_fn(t->def.assert_ctx, what);
	return r;
}

/// An item's category bits (1 while no item has a filter of its own).
static inline uint64_t item_cat(const tree_t *t, uint32_t i) { return t->filters ? t->filters[i].category : 1u; }

/// The categories node ni's subtree may hold (tree_t.node_cats).
static inline uint64_t node_cats(const tree_t *t, uint32_t ni) { return t->node_cats ? t->node_cats[ni] : 1u; }
static inline void node_cats_add(tree_t *t, uint32_t ni, uint64_t cat)
{
	if (t->node_cats) t->node_cats[ni] |= cat;
}
static inline void node_cats_set(tree_t *t, uint32_t ni, uint64_t cat)
{
	if (t->node_cats) t->node_cats[ni] = cat;
}

/// A fresh node's prune delay: the tree's (a no-op without one).
static inline void node_wait_init(tree_t *t, uint32_t ni)
{
	if (t->node_waits) t->node_waits[ni] = (struct node_wait){(uint16_t)t->def.prune_delay, 0};
}

/// Whether the filters of items a and b let them pair.
static inline bool items_pair(const tree_t *t, uint32_t a, uint32_t b)
{
	if (t->statics && (t->items[a].flags & t->items[b].flags & ITEM_STATIC)) return false;
	if (!t->filters) return true;
	const ort_filter *fa = &t->filters[a], *fb = &t->filters[b];
	return (fa->category & fb->mask) && (fb->category & fa->mask);
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

// ---- placement: which child takes a box (tree_shape.c) ---------------------------------

/// Where the items of one node go (loose/tight), computed once per node so a
/// split or a build classifies each item with a few compares.
typedef struct fitter {
	bool can;  ///< the node may have children at all
	bool tight;
	float mid[DIM];
	float lo[NCHILD][DIM], hi[NCHILD][DIM]; ///< each child's cell (tight) or loose cell
} fitter;

/// The child a box goes to, if any: tight, the child whose half-open cell holds
/// the box's low corner; loose, the child holding its centre.
static inline int choose_child(bool tight, const float mid[DIM], const box_t *box)
{
	int c = 0;
	for (int d = 0; d < DIM; ++d) {
		float key = tight ? box->min[d] : box->min[d] + (box->max[d] - box->min[d]) * 0.5f;
		if (key >= mid[d]) c |= 1 << d;
	}
	return c;
}

/// Whether the chosen child's bounds (cell, or loose cell) take the box.
static inline bool child_takes(bool tight, const float lo[DIM], const float hi[DIM], const box_t *box)
{
	return tight ? cell_holds(lo, hi, box) : box_within(box, lo, hi);
}

/// The child that should hold box, or -1 if it stays in the node.
static inline int fitter_child(const fitter *f, const box_t *box)
{
	if (!f->can) return -1;
	int c = choose_child(f->tight, f->mid, box);
	return child_takes(f->tight, f->lo[c], f->hi[c], box) ? c : -1;
}

// ---- what one module calls in another ------------------------------------------------

// Pools, entries and items (tree_pool.c). The reserve family (items_,
// spheres_, nodes_, chunks_, scratch_, content_, insert_, defer_, bp_ and
// bp_pair_reserve) makes room for what a change is about to use before the
// change starts: true (ORT_OK) once the room is there; on failure nothing but
// capacity has changed.
static bool array_resize(tree_t *t, void **arr, size_t old_bytes, size_t new_bytes);
static ort_result items_reserve(tree_t *t, uint32_t n);
static bool spheres_reserve(tree_t *t);
static bool nodes_reserve(tree_t *t, uint32_t n);
static bool chunks_reserve(tree_t *t, uint32_t n);
static bool node_sides_fit(tree_t *t);
static uint64_t pool_fit_cap(uint64_t need);
static void pools_fit(tree_t *t);
static uint32_t node_new(tree_t *t);
static void node_release(tree_t *t, uint32_t i);
static void chunk_release(tree_t *t, uint32_t i);
static uint32_t entry_append(tree_t *t, uint32_t ni, const box_t *box, uint32_t item_index);
static void entry_remove(tree_t *t, uint32_t ni, uint32_t addr);
static uint32_t item_new(tree_t *t, void *user, bool touch);
static void item_release(tree_t *t, uint32_t i);

// Shape: splits, merges, pruning, the root (tree_shape.c).
static bool can_split(const tree_t *t, const node *n);
static bool wants_split(const tree_t *t, const node *n);
static void fitter_init(const tree_t *t, const node *n, fitter *f);
static int fit_child(const tree_t *t, const node *n, const box_t *box);
static bool node_holds(const tree_t *t, const node *n, const box_t *box);
static uint32_t child_make(tree_t *t, uint32_t pi, int c);
static void cats_leaves(tree_t *t, uint32_t ni, const box_t *box, uint64_t cat);
static void cats_up(tree_t *t, uint32_t ni, uint64_t cat);
static void total_add(tree_t *t, uint32_t ni, int64_t delta);
static bool leaves_split_helps(const uint32_t per[NCHILD], uint32_t n, const box_t *meet);
static inline void leaves_meet_init(box_t *meet);
static inline void leaves_meet_add(box_t *meet, const box_t *box);
static void split(tree_t *t, uint32_t ni);
static void empty_free(tree_t *t, uint32_t ni);
static void prune(tree_t *t, uint32_t ni);
static void tidy(tree_t *t, uint32_t ni);
static void root_set(tree_t *t, const float lo[DIM], const float hi[DIM]);
static void region_cell(const tree_t *t, float lo[DIM], float hi[DIM]);
/// What root_cover will do for a box: the nodes it takes from the pool, how
/// many of them double the root, and whether it leaves a fresh, empty root.
typedef struct root_plan {
	uint32_t nodes, doublings;
	bool fresh;
} root_plan;
static bool root_plan_for(const tree_t *t, const box_t *box, root_plan *p);
static void root_cover(tree_t *t, const box_t *box);
static bool odd_mids_reserve(tree_t *t, uint32_t doublings);
static ort_result root_grow(tree_t *t, const box_t *box);

// The leaves placement's cap on copies (tree_cap.c).
static uint32_t cap_home(const tree_t *t, const box_t *box);
static uint32_t cap_count(const tree_t *t, uint32_t ni, const box_t *box, uint32_t limit);
static void cap_insert(tree_t *t, const box_t *box, uint32_t index);
static uint32_t cap_detach(tree_t *t, uint32_t index);
static bool cap_move_in_place(tree_t *t, uint32_t index, const box_t *box);
static bool cap_note_reserve(tree_t *t, uint32_t n);
static void cap_note(tree_t *t, uint32_t index, const box_t *box);
static bool cap_split_entry(tree_t *t, const entry *e);
static void cap_uncap(tree_t *t, uint32_t index);
static inline bool cap_build_spans(const tree_t *t, const node *nd, const box_t *box);
static inline unsigned cap_child_mask(const tree_t *t, const node *nd, const box_t *box);
static inline bool cap_split_caps(const tree_t *t, const node *nd, const box_t *box, unsigned mask);
static void cap_build_split(tree_t *t, const node *nd, const box_t *boxes, const uint32_t *S, size_t at, uint32_t n,
                            uint32_t per[NCHILD]);
static bool cap_build_fixup(tree_t *t, const box_t *boxes);

// Insert and move (tree.c), which applying deferred changes calls.
static void insert_leaves(tree_t *t, uint32_t ni, const box_t *box, uint32_t index);
static void split_region(tree_t *t, uint32_t ni, const box_t *box);
static uint32_t remove_leaves(tree_t *t, uint32_t ni, const box_t *box, uint32_t index);
static void tidy_after(tree_t *t, uint32_t ni, const box_t *box);
static void leaves_need(const tree_t *t, uint32_t ni, const box_t *box, uint64_t *nodes, uint64_t *chunks);
static ort_result store_item(tree_t *t, uint32_t i, const box_t *box, const sphere_t *sph);
/// loose: entries a split left in node ni because their centres lie outside
/// its cell (tree_shape.c: split) go where an insert would put them.
#define ASTRAY_MAX 16
static void rehome_astray(tree_t *t, uint32_t ni, const uint32_t *items, uint32_t n);
static ort_result move_item(tree_t *t, ort_handle h, box_t box, const sphere_t *sph);

// Indexes of big own lists (tree_ownidx.c). The on_ hooks keep an index
// right as its node's chunks change and mark the node when its index is due
// to be made, folded, rebuilt or dropped; every public mutation settles the
// marked nodes before it returns (own_settle_pending: never inside a query,
// never half-way through a split or a store), and a settle that gets no
// memory leaves its node marked, its index as it was and still right.
static void own_on_append(tree_t *t, uint32_t ni, uint32_t addr, bool fresh_chunk);
static void own_on_write(tree_t *t, uint32_t ni, uint32_t addr, const box_t *box);
static void own_on_take(tree_t *t, uint32_t ni, uint32_t addr, uint32_t last);
static void own_on_release(tree_t *t, uint32_t ni, uint32_t ci);
static void own_on_remove(tree_t *t, uint32_t ni);
static void own_settle_all(tree_t *t);
static void own_settle_owed(tree_t *t);
static inline void own_settle_pending(tree_t *t)
{
	if (t->own_owed_len || t->own_owed_all) own_settle_owed(t);
}
static void own_drop(tree_t *t, uint32_t ni);
static void own_clear(tree_t *t);
static void own_free_all(tree_t *t);
static const char *own_check(const tree_t *t, uint32_t ni);

// The mirror of a built tree (tree_mirror.c) that rays and plain box queries walk: made by a build, dropped by a change.
static void mirror_make(tree_t *t);
static void mirror_forget(tree_t *t);
static const char *mirror_check(const tree_t *t);

// ---- readers ------------------------------------------------------------------------
//
// Queries bracket their work with these (defer.c), so a callback that changes
// the tree has the change queued instead of pulling the tree from under it.

static inline void reading_begin(const tree_t *t)
{
	atomic_fetch_add_explicit(&((tree_t *)t)->readers, 1, memory_order_acquire);
}
static void reading_end(const tree_t *t);

// ---- the detached mode (tree_detach.c) --------------------------------------------

/// det_state: every entry holds its item's box; some items' boxes wait in the
/// dense array (reads must attach first); one thread is attaching now.
enum { DET_ATTACHED, DET_DETACHED, DET_ATTACHING };
static ort_result detached_attach(const tree_t *t);
static ort_result detached_settle(tree_t *t, bool boxes_change);
static void detached_free(tree_t *t);
static void detached_clear(tree_t *t);
static const char *detached_check(const tree_t *t);
static const box_t *detached_boxes(tree_t *t);
static bool detached_move(tree_t *t, ort_handle h, const box_t *box, const sphere_t *sph, ort_result *r);
static inline bool detached_move_quick(tree_t *t, ort_handle h, const box_t *box);
static void detached_moved(tree_t *t, ort_handle h, const box_t *box);
static void detached_release(tree_t *t);
static void detached_flush(tree_t *t);
static void detached_rewind(tree_t *t);

/// A round of per-item moves ends (update_pairs): the next round's moves
/// read this one's slots (tree.c: move_ahead).
static inline void move_rewind(tree_t *t)
{
	t->mlog_len = t->mlog_pos;
	t->mlog_pos = 0;
}

/// Before a read of the tree's nodes or entries: the detached boxes, if any,
/// are written into the entries (ORT_ERROR_OUT_OF_MEMORY when a re-home
/// cannot get memory; the tree is then still whole, still detached).
static inline ort_result detached_read(const tree_t *t)
{
	tree_t *w = (tree_t *)t;
	return atomic_load_explicit(&w->det_state, memory_order_acquire) == DET_ATTACHED ? ORT_OK : detached_attach(t);
}

static inline bool in_callback(const tree_t *t)
{
	return atomic_load_explicit(&((tree_t *)t)->readers, memory_order_relaxed) > 0;
}

// ---- memory -------------------------------------------------------------------------

static void *mem_alloc(tree_t *t, size_t size)
{
	void *p = allocator_alloc(&t->alloc, size);
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
	allocator_free(&t->alloc, p, size);
}

/// Temporary memory of a const query (a deep traversal stack): not counted in
/// the tree's bytes, so concurrent readers never write to the tree.
static void *query_alloc(const tree_t *t, size_t size) { return allocator_alloc(&t->alloc, size); }

static void query_free(const tree_t *t, void *p, size_t size) { allocator_free(&t->alloc, p, size); }

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

// ---- the broad phase, deferred changes, content bounds --------------------------------

// The broad phase's hooks (broadphase.c), called by the tree as items change.
static bool bp_reserve(tree_t *t, uint32_t items_to_touch, uint32_t item_to_remove);
static void bp_touch(tree_t *t, uint32_t index);
static inline bool bp_reserve_touch(tree_t *t, uint32_t index); ///< a move's bp_reserve and bp_touch
static void bp_refilter(tree_t *t, uint32_t index); ///< bp_touch for a filter change
static void bp_detach(tree_t *t, uint32_t index);
static bool bp_expects_all(const tree_t *t);
static bool bp_wants_all(const tree_t *t);
static bool bp_items_grow(tree_t *t, uint32_t old_cap, uint32_t new_cap);
static void bp_reset(tree_t *t);
static void bp_free(tree_t *t);
static size_t bp_pair_bytes(const tree_t *t);

// Changes made inside callbacks (defer.c).
static ort_result defer_insert(tree_t *t, const box_t *box, const sphere_t *sph, void *user, ort_handle *out);
static ort_result defer_remove(tree_t *t, uint32_t i);
static ort_result defer_move(tree_t *t, uint32_t i, const box_t *box, const sphere_t *sph);
static ort_result defer_filter(tree_t *t, uint32_t i, const ort_filter *filter);
static const box_t *pending_box(const tree_t *t, uint32_t i);
static const sphere_t *pending_sphere(const tree_t *t, uint32_t i);

// The pass that makes every node's bound exact (pairs.c), which the pair
// finder and the broad phase run before their queries (query.c).
static bool content_reserve(tree_t *t);
static void pairs_content(tree_t *t, uint32_t ni);
static ort_result query_box_by_content(const tree_t *t, const box_t *box, ORTHANT_NAME(query_fn) * fn, void *ctx);

#endif

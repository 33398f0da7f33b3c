// packed_int.h: the packed tree's layout and what its modules share — a
// loose quadtree/octree built whole from an array of boxes and kept in flat
// arrays (include/orthant/packed_dim.h). How build lays it out is in
// packed_build.c.
//
// Nodes live in blocks, as in a wide bounding-volume tree (Jolt's 4-wide
// nodes, Boost's and flatbush's packed nodes): a block holds the children of
// one node, lane by lane — their bounds axis by axis, so one query box is
// tested against all of them at once, then where each child's items start,
// how many it owns and the block of its own children (NIL for a leaf). Block
// 0 holds the root alone. A node's items start at `first`: its own, then each
// child's subtree in turn. A leaf owns all its items, at least one. A node
// with no items of its own and one child is never made: the child takes its
// place. Bounds are the union of every box in the subtree, so answers depend
// on the boxes alone: the keys decide the shape, never a result. Unused lanes
// hold inverted bounds, which meet nothing.
//
// Runs the grid cannot spread out (more than a bucket in one cell at the depth
// limit or at one level, more than PK_OWN_MAX own items) are piles: subtrees
// cut by count in the Morton order of their centres, whose nodes own no items
// and whose leaves hold up to a bucket. A node whose own items became a pile owns none: the pile is its
// first child.
//
// Traversals use fixed stacks: grid levels strictly deepen along a path, each
// at most doubled by a node split from its own pile, and a path ends in at
// most one pile, so a path has at most PK_PATH_MAX nodes and a stack at most
// PK_PATH_MAX * NCHILD entries.
#ifndef ORTHANT_SRC_PACKED_INT_H
#define ORTHANT_SRC_PACKED_INT_H

#include <assert.h>
#include <stdatomic.h>
#include <string.h>

#include "dim.h"
#include "geom.h"
#include "mem.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

typedef ORTHANT_NAME(packed) packed_t;
typedef ORTHANT_NAME(packed_def) pdef_t;

#define PK_MAX_DEPTH (DIM == 2 ? 13 : 9)
#define PK_LEVEL_BITS 4
#define PK_LEVEL_MASK ((1u << PK_LEVEL_BITS) - 1u)
/// Most own items a node keeps; more become a pile (packed_build.c).
#define PK_OWN_MAX(bucket) (2 * (bucket) + 16)
/// The deepest pile: NCHILD^PK_PILE_LEVELS > PK_MAX_ITEMS.
#define PK_PILE_LEVELS (DIM == 2 ? 16 : 11)
/// Levels on a path: a grid node per level, each perhaps split from its own
/// pile by a node of no items, then one pile.
#define PK_PATH_MAX (2 * (PK_MAX_DEPTH + 1) + PK_PILE_LEVELS + 1)
#define PK_STACK (PK_PATH_MAX * NCHILD)
/// Most items: ids are 32-bit and node counts reach 2 * count + 1.
#define PK_MAX_ITEMS (INT32_MAX / 2 - 2)

typedef struct pblock {
	float lo[DIM][NCHILD], hi[DIM][NCHILD]; ///< each child's bounds
	uint32_t first[NCHILD]; ///< the child's first item; its own items come first
	uint32_t own[NCHILD];   ///< items of the child itself
	uint32_t child[NCHILD]; ///< the block of the child's children, NIL for a leaf
	uint16_t kids;          ///< lanes in use, from 0
	/// The lanes (one bit each) whose own items ascend by id: every node's
	/// own run (they share one key, and the sort is by key, then id) and
	/// every leaf of a pile (packed_build.c pk_leaf puts them in order);
	/// not the grid's leaves, which spread over cells (a uniform scene's
	/// leaves: ordering them cost its build 14 % more instructions in 2D).
	/// k nearest scans an ordered lane in id order, stopping at the first id
	/// above the k-th's once the k-th is at distance 0, so boxes that all
	/// hold the point cost about k tests however many share a pile's leaves.
	uint16_t ordered;
	/// The least id of the child's items, its own and below (pk_least_fill):
	/// nearest drops a child no nearer than the k-th found whose ids are all
	/// above the k-th's, so boxes that all hold the point cost about k leaves.
	uint32_t least[NCHILD];
} pblock;

struct ORTHANT_NAME(packed) {
	pdef_t def;
	uint32_t count;      ///< items
	uint32_t block_count; ///< blocks in use
	box_t bounds;        ///< union of every box
	box_t *boxes;        ///< [cap], tree order
	uint32_t *ids;       ///< [cap], the id of each box
	pblock *blocks;      ///< [block_cap]
	uint64_t *sort_a, *sort_b; ///< [cap] build scratch: key << 32 | id
	uint32_t cap, block_cap;
	size_t bytes, bytes_peak;
	/// Queries and pair searches running now (any thread). While it is above
	/// zero, build refuses (ORT_ERROR_BUSY) and destroy is put off until the
	/// last of them returns: a callback cannot pull the arrays from under the
	/// walk that called it.
	atomic_int readers;
	atomic_bool destroy_pending;
	/// The pair finder's sweep keys, kept from call to call so that piles
	/// cost no allocation per frame. One call at a time holds them (taken
	/// set); a concurrent second call takes keys of its own and gives them
	/// back. keys_bytes is their size, read by stats from any thread.
	uint64_t *keys;
	size_t keys_cap;
	atomic_bool keys_taken;
	atomic_size_t keys_bytes;
};

static void pk_destroy_now(packed_t *p);

static inline void pk_reading_begin(const packed_t *p)
{
	atomic_fetch_add_explicit(&((packed_t *)p)->readers, 1, memory_order_acquire);
}

/// The end of a query: the last reader out carries out a destroy a callback asked for.
static inline void pk_reading_end(const packed_t *p)
{
	packed_t *q = (packed_t *)p;
	if (atomic_fetch_sub_explicit(&q->readers, 1, memory_order_acq_rel) == 1 &&
	    atomic_load_explicit(&q->destroy_pending, memory_order_acquire))
		pk_destroy_now(q);
}

// ---- memory -----------------------------------------------------------------

static void *pk_alloc(packed_t *p, size_t size)
{
	void *m = allocator_alloc(&p->def.allocator, size);
	if (m) {
		p->bytes += size;
		if (p->bytes > p->bytes_peak) p->bytes_peak = p->bytes;
	}
	return m;
}

static void pk_free(packed_t *p, void *m, size_t size)
{
	if (!m) return;
	p->bytes -= size;
	allocator_free(&p->def.allocator, m, size);
}

static void pk_free_items(packed_t *p, box_t *boxes, uint32_t *ids, uint64_t *sa, uint64_t *sb, uint32_t cap)
{
	pk_free(p, boxes, (size_t)cap * sizeof *boxes);
	pk_free(p, ids, (size_t)cap * sizeof *ids);
	pk_free(p, sa, (size_t)cap * sizeof *sa);
	pk_free(p, sb, (size_t)cap * sizeof *sb);
}

/// box_overlap without branches: the comparisons of one test are rarely
/// predictable, and a mispredicted branch costs more than the other axes.
static inline bool pk_overlap(const box_t *a, const box_t *b)
{
	int ok = 1;
	for (int d = 0; d < DIM; ++d) ok &= (a->min[d] <= b->max[d]) & (b->min[d] <= a->max[d]);
	return ok;
}

static box_t pk_empty_box(void)
{
	box_t b;
	for (int d = 0; d < DIM; ++d) {
		b.min[d] = INFINITY;
		b.max[d] = -INFINITY;
	}
	return b;
}

static inline void pk_grow(box_t *into, const box_t *b)
{
	for (int d = 0; d < DIM; ++d) {
		if (b->min[d] < into->min[d]) into->min[d] = b->min[d];
		if (b->max[d] > into->max[d]) into->max[d] = b->max[d];
	}
}

// ---- lanes ------------------------------------------------------------------

static inline box_t pk_lane_box(const pblock *b, int k)
{
	box_t r;
	for (int d = 0; d < DIM; ++d) {
		r.min[d] = b->lo[d][k];
		r.max[d] = b->hi[d][k];
	}
	return r;
}

/// Lane l of block c's squared distance from point, in double: no more
/// than any of its boxes' dist2_point_box (k nearest, one or batched).
static inline double pk_lane_d2(const pblock *c, uint32_t l, const float point[DIM])
{
	double d2 = 0.0;
	for (int d = 0; d < DIM; ++d) {
		double lo = c->lo[d][l], hi = c->hi[d][l], x = point[d];
		double gap = x < lo ? lo - x : x > hi ? x - hi : 0.0;
		d2 += gap * gap;
	}
	return d2;
}

static inline void pk_lane_set(pblock *b, int k, const box_t *box, uint32_t first, uint32_t own, uint32_t child)
{
	for (int d = 0; d < DIM; ++d) {
		b->lo[d][k] = box->min[d];
		b->hi[d][k] = box->max[d];
	}
	b->first[k] = first;
	b->own[k] = own;
	b->child[k] = child;
}

/// Fill every lane's least id from the items and the blocks below it; the
/// least id of lane k of block bi is returned by pk_least_lane.
static uint32_t pk_least_lane(pblock *blocks, const uint32_t *ids, uint32_t bi, uint32_t k)
{
	pblock *b = &blocks[bi];
	uint32_t least = UINT32_MAX;
	for (const uint32_t *i = ids + b->first[k], *e = i + b->own[k]; i < e; ++i) least = *i < least ? *i : least;
	uint32_t ci = b->child[k];
	if (ci != NIL)
		for (uint32_t l = 0, kids = blocks[ci].kids; l < kids; ++l) {
			uint32_t m = pk_least_lane(blocks, ids, ci, l); // at most PK_PATH_MAX deep
			least = m < least ? m : least;
		}
	b->least[k] = least;
	return least;
}

static void pk_least_fill(packed_t *p)
{
	if (p->block_count) pk_least_lane(p->blocks, p->ids, 0, 0);
}

static void pk_block_clear(pblock *b)
{
	box_t empty = pk_empty_box();
	for (int k = 0; k < NCHILD; ++k) pk_lane_set(b, k, &empty, 0, 0, NIL);
	b->kids = 0;
	b->ordered = 0;
}

/// The lanes of b whose bounds meet box q (closed), one bit each. The tests
/// of all lanes are made without a branch: which children meet a query is
/// rarely predictable.
static inline unsigned pk_lanes_meeting(const pblock *b, const box_t *q)
{
#if defined(__SSE2__)
	unsigned m = 0;
	for (int h = 0; h < NCHILD; h += 4) {
		__m128 ok = _mm_castsi128_ps(_mm_set1_epi32(-1));
		for (int d = 0; d < DIM; ++d) {
			ok = _mm_and_ps(ok, _mm_cmple_ps(_mm_set1_ps(q->min[d]), _mm_loadu_ps(&b->hi[d][h])));
			ok = _mm_and_ps(ok, _mm_cmple_ps(_mm_loadu_ps(&b->lo[d][h]), _mm_set1_ps(q->max[d])));
		}
		m |= (unsigned)_mm_movemask_ps(ok) << h;
	}
	return m;
#else
	unsigned m = 0;
	for (int k = 0; k < NCHILD; ++k) {
		int ok = 1;
		for (int d = 0; d < DIM; ++d) ok &= (q->min[d] <= b->hi[d][k]) & (b->lo[d][k] <= q->max[d]);
		m |= (unsigned)ok << k;
	}
	return m;
#endif
}

static inline int pk_next_lane(unsigned *m)
{
	int k = __builtin_ctz(*m);
	*m &= *m - 1;
	return k;
}

struct knn_best;

/// The k (>= 1, at most the count) nearest to point of a tree of one item
/// or more, at squared distance below lim, leaving out id skip (NIL: none),
/// into the max-heap best[0, k) (knn_heap.h); returns how many were found.
/// packed_query.c: one search for ortN_packed_nearest and the batch.
static int pk_knn_search(const packed_t *p, const float point[DIM], int k, double lim, uint32_t skip,
                         struct knn_best *best);

/// A node: lane k of block b.
typedef struct pk_ref {
	uint32_t block;
	int lane;
} pk_ref;

// ---- build: what packed_build.c and packed_build_jobs.c share --------------------
//
// packed_build.c keys, sorts and lays out the tree on the calling thread;
// packed_build_jobs.c runs the same steps as jobs (through an ort_tasks) and
// reuses the node building, which stops at job subtrees by its mode.

/// How build quantises: per axis, the origin, cells per unit and the extent.
typedef struct pk_grid {
	double lo[DIM], scale[DIM], extent[DIM];
	int depth;
	uint32_t cells; ///< 2^depth cells per axis
} pk_grid;

typedef struct pk_build {
	const uint64_t *sorted;
	box_t *boxes; ///< tree order; NULL when only counting (piles reorder it)
	pblock *blocks;     ///< NULL when only counting
	uint32_t made;      ///< blocks handed out
	int depth, bucket;
	/// When growable (a build into new arrays, the old ones still whole), the
	/// blocks array grows as needed instead of being counted first.
	packed_t *grow;
	uint32_t cap;
	bool failed; ///< growing it failed: the build is abandoned
	/// With tasks (mode != 0): subtrees of at most job_items items are jobs,
	/// which pk_job_edge handles as the mode says.
	struct pk_node_job *jobs;
	uint32_t job_items;
	int mode, next_job;
	uint32_t *ids; ///< tree order, beside boxes: piles reorder both
	uint64_t *scratch; ///< sort_b: [lo, hi) is a pile's to order it by
} pk_build;

/// What a node puts in its parent's lane besides its bounds.
typedef struct pk_lane_out {
	uint32_t first, own, child;
	bool ordered; ///< its own items ascend by id (pblock.ordered)
} pk_lane_out;

/// Lane k of block b gets a node's bounds and what *ln says of it.
static inline void pk_lane_put(pblock *b, int k, const box_t *box, const pk_lane_out *ln)
{
	pk_lane_set(b, k, box, ln->first, ln->own, ln->child);
	b->ordered = (uint16_t)((b->ordered & ~(1u << k)) | (unsigned)ln->ordered << k);
}

/// The item arrays a build fills: the tree's own, or new ones that stay
/// beside the old until the build can no longer fail.
typedef struct pk_arrays {
	box_t *boxes;
	uint32_t *ids;
	uint64_t *sort_a, *sort_b;
	uint32_t cap;
} pk_arrays;

/// How pk_node treats a subtree of at most job_items items (packed_build_jobs.c).
enum { PK_SERIAL, PK_COUNT_JOBS, PK_PLAN, PK_NUMBER, PK_FINISH };

static inline uint32_t pk_key(const pk_grid *g, const box_t *b);
static box_t pk_node(pk_build *b, uint32_t lo, uint32_t hi, int level, uint32_t code, pk_lane_out *ln);
static void pk_root(pk_build *b, uint32_t n);
static void pk_gather(box_t *boxes, uint32_t *ids, const uint64_t *sorted, const char *base, size_t stride,
                      uint32_t n);
static inline box_t pk_load(const char *base, size_t stride, uint32_t i);
static inline ort_result pk_box_ok(const box_t *b);
static ort_result pk_bound_all(const char *base, size_t stride, uint32_t n, box_t *all);
static void pk_arrays_free(packed_t *p, const pk_arrays *a);
static ort_result pk_arrays_for(packed_t *p, uint32_t n, pk_arrays *a);
static pk_grid pk_grid_make(const box_t *grid_box, int depth, uint32_t n);
static void pk_sort_buffers(bool growing, pk_arrays *a, uint64_t **keys, uint64_t **other);
static void pk_sort_end(bool growing, pk_arrays *a, uint64_t *keys, uint64_t *other, uint32_t n);
/// A job subtree met by pk_node: what it does with it depends on b->mode.
static box_t pk_job_edge(pk_build *b, uint32_t lo, uint32_t hi, int level, uint32_t code, pk_lane_out *ln);
/// pk_build_from's steps with tasks; the same tree, the same failures.
static ort_result pk_build_in_jobs(packed_t *p, ort_tasks *tasks, const char *base, size_t stride, uint32_t n);

#endif

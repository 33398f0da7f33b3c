// tree_ownidx.h: the index of a big own list (tree_ownidx.c), and the walk a
// query makes over a node's own entries with it.
//
// A loose or tight node keeps the entries that fit none of its children: long
// strips, boxes across a split line. A query that reaches the node used to
// test every one of them. Once a node's own list holds OWN_MIN entries it gets
// an index: its chunks are grouped into runs, each run a small implicit
// bounding-volume hierarchy (a chunk's bound at the bottom, a bound per 8
// chunks above, per 64 above that, ...), so a query descends the groups its
// shape meets and tests only their chunks.
//
// ## Layout
//
// The node's chunk chain stays the only home of its entries (the pair finder,
// splits and every other reader walk it as before). The index only groups it:
//
//   chain:  [tail: `tail` chunks][run k's live chunks]...[run 0's live chunks]
//
// The tail is the newest chunks, in no run; queries test them one by one, and
// when it passes OWN_TAIL chunks all of it but the head becomes a run (merged
// with the newer runs while they are no bigger than twice it, so run sizes
// fall geometrically and there are O(log m) of them: Bentley and Saxe's
// logarithmic method), merged as well into the newest run while that holds
// fewer than OWN_BASE chunks. So the tail is the head alone at rest, and only
// the newest run is small: a small run is laid out again as each chunk fills.
// Why not a longer tail, folded less often: a query tests the tail whole, and
// its entries, in arrival order, are all kinds mixed, so no bound parts them.
// Thin boxes long on every axis through one point fill some 8 nodes a level
// around it, each near any point from afar; a k nearest search that tested
// eight tail chunks in each of them spent most of its work there. A run's chunk ids are ascending in ids[], and its
// entries were laid out in them in spatial order (tree_ownidx.c: own_order),
// so position p of the run is both the p-th chunk in spatial order and the
// p-th smallest id: a chunk's place is a binary search away.
//
// Changes keep the index correct without rebuilding it: an entry written into
// a run chunk (an append to a head that is in a run, a removal's hole filled
// from the head, an in-place move) grows that chunk's bound and its groups'
// (conservative: never shrunk); a released run chunk (the head emptied by
// removals) gets an inverted bound and is skipped. When dead chunks or grown
// bounds pass a fraction of the list, the next change rebuilds the whole
// index: O(m log m) after Θ(m) changes. Rebuilds happen in mutations only;
// queries read the index and never change it.
//
// ## Least ids
//
// Beside each bound the index keeps a lower bound of the handle ids (item + 1)
// under it (own_least, parallel to own_bounds), and the header one for the
// tail's entries (tail_least). Like the bounds they only move one way (down)
// between rebuilds. A nearest search needs them: its results are ordered by
// distance, then id, so when many boxes hold the query point (all at distance
// 0) it must find the least ids among them; a group no nearer than the k-th
// found whose least id is above the k-th's holds nothing that ranks before it.
#ifndef ORTHANT_SRC_TREE_OWNIDX_H
#define ORTHANT_SRC_TREE_OWNIDX_H

#include "sweep.h"
#include "tree_int.h"

/// Entries from which a node's own list gets an index; it is dropped below half.
/// (A build may set it, e.g. out of reach to measure the tree without indexes.)
#ifndef ORTHANT_OWNIDX_MIN
#define ORTHANT_OWNIDX_MIN 32
#endif
#define OWN_MIN ORTHANT_OWNIDX_MIN
/// Chunks the unindexed tail holds before it becomes a run (the head, and
/// one more that has just filled).
#define OWN_TAIL 1
/// Chunks the newest run gathers before a new run starts after it.
#define OWN_BASE 4
#define OWN_RUNS 32
/// Levels of a run's hierarchy: 8^11 chunks is more than a pool holds.
#define OWN_LEVELS 12
/// The walk's stack: the runs' tops, then 8 a level.
#define OWN_STACK (OWN_RUNS + 8 * OWN_LEVELS)

typedef struct own_run {
	uint32_t first; ///< its first position in ids; run j + 1 starts where run j ends
	uint32_t size;  ///< positions, released chunks included
	uint32_t live;  ///< positions whose chunk is still in the node's chain
	uint32_t levels;
	/// Level L's bounds start at bounds[2 * first + off[L]]; level 0 holds a
	/// bound per chunk, level L + 1 one per 8 of level L, the top one bound.
	uint32_t off[OWN_LEVELS];
} own_run;

struct ownidx {
	uint32_t node;  ///< the owner; the next free header when free
	uint32_t tail;  ///< chunks at the chain's front that no run holds
	uint32_t dead;  ///< released run chunks, over all runs
	uint32_t stale; ///< bounds grown since the last full rebuild
	uint32_t nruns;
	/// No entry of a tail chunk has a lower handle id (item + 1); 0 when unknown.
	uint32_t tail_least;
	/// Its region of the tree's index pools: positions [base, base + cap) of
	/// own_ids (chunk ids by run and position) and [2 base, 2 (base + cap))
	/// of own_bounds (per run, its levels: they fit in twice its size). The
	/// pools, not pointers here, so validate can check every reference.
	uint32_t base, cap;
	own_run run[OWN_RUNS];
};

static inline const struct ownidx *own_get(const tree_t *t, uint32_t ni)
{
	assert(t->nodes[ni].flags & NODE_OWNIDX);
	return &t->own[t->own_of[ni]];
}

static inline uint32_t *own_ids(const tree_t *t, const struct ownidx *ix) { return &t->own_ids[ix->base]; }
static inline box_t *own_bounds(const tree_t *t, const struct ownidx *ix) { return &t->own_bounds[2 * (size_t)ix->base]; }
/// The least ids, one for each bound of own_bounds, at the same place.
static inline uint32_t *own_least(const tree_t *t, const struct ownidx *ix) { return &t->own_least[2 * (size_t)ix->base]; }

static inline bool box_inverted(const box_t *b) { return !(b->min[0] <= b->max[0]); }

/// A query's test of a group's bound: whether it may hold something the query
/// wants, and a key to visit nearer groups first (0 when order does not matter).
typedef bool own_test(const void *q, const box_t *b, float *key);

typedef struct own_slot {
	uint32_t run, level, pos;
	float key;
} own_slot;

/// A walk over a node's own chunks: the whole chain when it has no index,
/// else the tail, then the run chunks whose groups pass the test.
typedef struct own_iter {
	uint32_t next, left; ///< the next chain chunk (NIL past the tail), and how many chain chunks are left to give
	uint32_t fill;       ///< entries in the next chain chunk
	uint32_t head, head_fill;
	const struct ownidx *ix;
	const uint32_t *ids;
	const box_t *bounds;
	own_test *test;
	const void *q;
	int top;
	own_slot stack[OWN_STACK];
} own_iter;

static inline void own_push(own_iter *it, const box_t *b, uint32_t run, uint32_t level, uint32_t pos)
{
	float key = 0.0f;
	WORK_TESTS(1);
	if (box_inverted(b) || !it->test(it->q, b, &key)) return;
	// Farthest first among what is pushed together: the nearest pops next.
	int j = it->top++;
	assert(it->top <= OWN_STACK);
	while (j > 0 && it->stack[j - 1].key < key && it->stack[j - 1].level == level && it->stack[j - 1].run == run) {
		it->stack[j] = it->stack[j - 1];
		--j;
	}
	it->stack[j] = (own_slot){run, level, pos, key};
}

/// Start a walk over node ni's own chunks. test (with q) prunes index groups;
/// it is asked again when a group is popped, so a query that narrows (a ray's
/// clip, the k-th distance) prunes what it pushed before.
static inline void own_iter_init(const tree_t *t, uint32_t ni, own_iter *it, own_test *test, const void *q)
{
	const node *n = &t->nodes[ni];
	it->next = it->head = n->head;
	it->fill = it->head_fill = head_fill(n->count);
	it->top = 0;
	WORK_TESTS(1); // the node (the counting build: see tests/test_ownidx.c)
	it->test = test;
	it->q = q;
	if (!(n->flags & NODE_OWNIDX)) {
		it->left = UINT32_MAX;
		it->ix = NULL;
		it->ids = NULL;
		it->bounds = NULL;
		return;
	}
	const struct ownidx *ix = own_get(t, ni);
	it->ix = ix;
	it->ids = own_ids(t, ix);
	it->bounds = own_bounds(t, ix);
	it->left = ix->tail;
	if (ix->tail == 0) it->next = NIL;
	for (uint32_t r = 0; r < ix->nruns; ++r) {
		const own_run *run = &ix->run[r];
		if (run->live == 0) continue;
		uint32_t top = run->levels - 1;
		own_push(it, &it->bounds[2 * run->first + run->off[top]], r, top, 0);
	}
}

/// The next chunk of the walk, and how many entries it holds; NIL at the end.
static inline uint32_t own_iter_next(const tree_t *t, own_iter *it, uint32_t *fill)
{
	uint32_t c = it->next;
	if (c != NIL) {
		*fill = it->fill;
		it->fill = CHUNK_CAP;
		it->next = --it->left ? t->chunks[c].next : NIL;
		WORK_TESTS(*fill);
		return c;
	}
	const struct ownidx *ix = it->ix;
	while (it->top > 0) {
		own_slot s = it->stack[--it->top];
		const own_run *run = &ix->run[s.run];
		const box_t *base = &it->bounds[2 * run->first];
		float key;
		if (!it->test(it->q, &base[run->off[s.level] + s.pos], &key)) continue;
		if (s.level == 0) {
			c = it->ids[run->first + s.pos];
			*fill = c == it->head ? it->head_fill : CHUNK_CAP;
			WORK_TESTS(*fill);
			return c;
		}
		uint32_t below = s.level - 1, n_below = run->off[s.level] - run->off[below];
		uint32_t end = s.pos * 8 + 8 < n_below ? s.pos * 8 + 8 : n_below;
		for (uint32_t p = s.pos * 8; p < end; ++p) own_push(it, &base[run->off[below] + p], s.run, below, p);
	}
	return NIL;
}

// ---- a best-first walk's view of the groups ------------------------------------
//
// A nearest search keeps the groups it has yet to open in its own frontier,
// with the tree's nodes, instead of walking a node's index at once.

/// Group (level, pos) of run r: its place in the index's bounds and least ids.
static inline uint32_t own_group_at(const struct ownidx *ix, uint32_t r, uint32_t level, uint32_t pos)
{
	const own_run *run = &ix->run[r];
	assert(level < run->levels);
	return 2 * run->first + run->off[level] + pos;
}

/// The groups one level below group (level >= 1, pos) of run r: [*first, *end).
static inline void own_group_below(const struct ownidx *ix, uint32_t r, uint32_t level, uint32_t pos,
                                   uint32_t *first, uint32_t *end)
{
	const own_run *run = &ix->run[r];
	uint32_t n_below = run->off[level] - run->off[level - 1];
	*first = pos * 8;
	*end = pos * 8 + 8 < n_below ? pos * 8 + 8 : n_below;
}

/// The chunk at level-0 position pos of run r of node ni's index, and the
/// entries it holds.
static inline uint32_t own_group_chunk(const tree_t *t, const struct ownidx *ix, uint32_t ni, uint32_t r, uint32_t pos,
                                       uint32_t *fill)
{
	uint32_t c = own_ids(t, ix)[ix->run[r].first + pos];
	const node *n = &t->nodes[ni];
	*fill = c == n->head ? head_fill(n->count) : CHUNK_CAP;
	return c;
}

#endif

// query.c: box, point and sphere queries. Rays and other sweeps are in
// query_cast.c, convex regions in query_planes.c, k nearest in query_knn.c.
//
// Every query walks the tree with an explicit stack sized from the tree's
// height (tree_int.h: node_stack), skipping subtrees that hold nothing and those
// whose bound (node.bound: what the subtree holds, not its loose cell) misses
// the query; children are tested before they are stacked. Queries only read
// the tree, so any number may run at once on one tree from several threads,
// as long as none mutates it.
//
// leaves placement stores an item in every leaf it touches; a query reports it
// only from the leaf that owns one canonical point of item ∩ query (leaf_owns),
// a point that lies in both, so that leaf is always visited and the item is
// reported exactly once.
//
// The box part of every test (a node's bound, an entry's box) is vector
// compares without a branch where SSE2 is there (region_box_meets): the same
// comparisons as box_overlaps_bounds, 12% fewer instructions per S5 box query.
//
// A plain box query of a built tree (one with a mirror: tree_mirror.c) walks
// the mirror's records where they are (region_walk_built): a node's four
// children tested on one line (2D), where the node walk reads a line a child,
// and a node read only where it has entries or no record. S5 (100k boxes,
// about 10 hits a query, a driver of the benchmark's queries): 52.6 -> 46.1
// ms for 100k queries; 6.5% of it the records, the rest fetching ahead what
// the next pops read (a node without a record and its children, which the
// build laid out one after the other; a leaf's chunks, one run).
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "tree_int.h"
#include "tree_ownidx.h"

/// The shapes a region query can test: a box, or a sphere (radius2 >= 0).
typedef struct region {
	uint64_t mask; ///< items whose category meets it; subtrees whose categories miss it are skipped
	box_t box;     ///< the query box, or the sphere's bounding box
	float centre[DIM];
	float radius;
	double radius2; ///< < 0 for a box query
#if defined(__SSE2__) && (DIM == 2 || DIM == 3)
	box_lanes lanes; ///< box as region_box_meets tests against it (region_lanes)
#endif
} region;

#if defined(__SSE2__) && (DIM == 2 || DIM == 3)
/// box_overlaps_bounds(&q->box, b->min, b->max), as vector compares
/// (geom.h: box_lanes_meet).
static inline bool region_box_meets(const region *q, const box_t *b) { return box_lanes_meet(&q->lanes, b); }

/// The box as own_iter_box (tree_ownidx.h) takes it.
static inline const void *region_box_lanes(const region *q) { return &q->lanes; }

static inline void region_lanes(region *q) { q->lanes = box_lanes_of(&q->box); }
#else
static inline bool region_box_meets(const region *q, const box_t *b)
{
	return box_overlaps_bounds(&q->box, b->min, b->max);
}

static inline void region_lanes(region *q) { (void)q; }

static inline const void *region_box_lanes(const region *q) { return &q->box; }
#endif

/// Item i's box passed region_hits_bounds: does its exact bound meet q?
static inline bool region_hits_item(const tree_t *t, const region *q, uint32_t i)
{
	const sphere_t *s = item_sphere(t, i);
	if (!s) return true;
	if (q->radius2 < 0.0) return dist2_point_box(s->c, &q->box) <= (double)s->r * s->r;
	double r = (double)s->r + q->radius;
	return dist2_points(s->c, q->centre) <= r * r;
}

static inline bool region_hits_bounds(const region *q, const float lo[DIM], const float hi[DIM])
{
	if (!box_overlaps_bounds(&q->box, lo, hi)) return false;
	return q->radius2 < 0.0f || dist2_point_bounds(q->centre, lo, hi) <= q->radius2;
}

/// An own-list index group (tree_ownidx.h) that may hold entries meeting q.
static bool region_group(const void *q, const box_t *b, float *key)
{
	const region *r = q;
	*key = 0.0f;
	if (!region_box_meets(r, b)) return false;
	return r->radius2 < 0.0 || dist2_point_bounds(r->centre, b->min, b->max) <= r->radius2;
}

/// Whether a query goes into node n: it holds something of the mask's
/// categories within its bound that meets q. leaves placement also asks the
/// cell, as only a point of the cell counts there (leaf_owns). The bound is
/// tested first: it is the node's first 16 bytes, always in one cache line,
/// where total may be in the next (nodes are 80 bytes), and most tested
/// nodes fail on it. A plain query (region_walk) is that box test alone.
static inline bool region_enters(const tree_t *t, const region *q, uint32_t ni, bool plain, bool leaves)
{
	const node *n = &t->nodes[ni];
	if (!region_box_meets(q, &n->bound) || n->total == 0) return false;
	if (plain) return true;
	// With every mask bit the categories skip only subtrees of category-0
	// items, which the entry tests reject anyway: not worth their read.
	if (q->mask != ORT_MASK_ALL && !(node_cats(t, ni) & q->mask)) return false;
	if (q->radius2 >= 0.0 && dist2_point_bounds(q->centre, n->bound.min, n->bound.max) > q->radius2) return false;
	return !leaves || region_hits_bounds(q, n->lo, n->hi);
}

/// The entries of es in slots [from, fill) that meet q: their items into
/// hit, how many returned. A plain query (boxes alone, no filter, not
/// leaves) makes one box test per entry. A hit's item is prefetched at once,
/// as reporting reads it. (Collecting the hits without a branch, the count
/// moved by each test's outcome, made 4 fewer mispredicted branches a S5
/// query but ran slower: the prefetches waited for the whole chunk's tests.)
static inline int chunk_hits(const tree_t *t, const region *q, bool plain, bool leaves, const float cell_lo[DIM],
                             const float cell_hi[DIM], const entry *es, uint32_t from, uint32_t fill,
                             uint32_t hit[CHUNK_CAP])
{
	int nh = 0;
	for (uint32_t k = from; k < fill; ++k) {
		const entry *e = &es[k];
		if (!region_box_meets(q, &e->box)) continue;
		if (!plain) {
			if (q->radius2 >= 0.0 && dist2_point_bounds(q->centre, e->box.min, e->box.max) > q->radius2) continue;
			if (q->mask != ORT_MASK_ALL && !(item_cat(t, e->item) & q->mask)) continue;
			if (t->spheres && !region_hits_item(t, q, e->item)) continue;
			if (leaves) {
				float p[DIM];
				if (q->radius2 < 0.0f)
					overlap_corner(&e->box, &q->box, p);
				else
					clamp_point(q->centre, &e->box, p);
				if (!cell_owns(cell_lo, cell_hi, p)) continue;
			}
		}
		__builtin_prefetch(&t->items[e->item]);
		hit[nh++] = e->item;
	}
	return nh;
}

/// Node ni's own entries that meet q, reported; false when fn stopped the walk.
ORT_INLINE bool region_own(const tree_t *t, const region *q, ORTHANT_NAME(query_fn) * fn, void *ctx, bool plain,
                           bool leaves, uint32_t ni)
{
	const node *n = &t->nodes[ni];
	// Copies: callbacks' deferred changes may move the pool. (Zeros, read
	// by leaves alone, where they are the cell.)
	float cell_lo[DIM] = {0}, cell_hi[DIM] = {0};
	if (leaves) {
		memcpy(cell_lo, n->lo, sizeof cell_lo);
		memcpy(cell_hi, n->hi, sizeof cell_hi);
	}
	// A chunk at a time: its hits first, their items fetched together
	// (reporting reads them: one miss after another is what a hit
	// cost), then the callbacks.
	own_iter it;
	own_iter_init(t, ni, &it, region_group, q);
	if (q->radius2 < 0.0) own_iter_box(&it, region_box_lanes(q));
	for (uint32_t fill, c = own_iter_next(t, &it, &fill); c != NIL; c = own_iter_next(t, &it, &fill)) {
		uint32_t hit[CHUNK_CAP];
		int nh = chunk_hits(t, q, plain, leaves, cell_lo, cell_hi, t->chunks[c].e, it.from, fill, hit);
		for (int j = 0; j < nh; ++j)
			if (!fn(ctx, make_handle(t, hit[j]), t->items[hit[j]].user)) return false;
	}
	return true;
}

/// The children of mirror record b (tree_mirror.c) whose bounds meet the
/// query box, a bit each: the comparisons of box_overlaps_bounds, made on a
/// row (an axis of four children) at a time.
static inline unsigned region_mirror_hits(const region *q, const mirror_bounds *b)
{
	unsigned bits = 0;
#if defined(__SSE2__)
	for (int g = 0; g < NCHILD; g += 4) {
		__m128 m = _mm_castsi128_ps(_mm_set1_epi32(-1));
		for (int d = 0; d < DIM; ++d) {
			m = _mm_and_ps(m, _mm_cmple_ps(_mm_loadu_ps(&b->lo[d][g]), _mm_set1_ps(q->box.max[d])));
			m = _mm_and_ps(m, _mm_cmpge_ps(_mm_loadu_ps(&b->hi[d][g]), _mm_set1_ps(q->box.min[d])));
		}
		bits |= (unsigned)_mm_movemask_ps(m) << g;
	}
#else
	for (int c = 0; c < NCHILD; ++c) {
		bool in = true;
		for (int d = 0; d < DIM; ++d) in = in && b->lo[d][c] <= q->box.max[d] && b->hi[d][c] >= q->box.min[d];
		bits |= (unsigned)in << c;
	}
#endif
	return bits;
}

/// A plain box query of a built tree, one with a mirror (tree_mirror.c):
/// down the records, a node's children are tested four at a time on one
/// line (2D), and a node is read only where it has entries of its own or no
/// record; below the records, the node walk. The same tests as on the nodes
/// (the bounds are copies), so the same hits.
static ort_result region_walk_built(const tree_t *t, const region *q, ORTHANT_NAME(query_fn) * fn, void *ctx)
{
	if (!region_enters(t, q, t->root, true, false)) return ORT_OK;
	node_stack s, subs;
	if (!stack_init(t, &s)) return ORT_ERROR_OUT_OF_MEMORY;
	if (!stack_init(t, &subs)) {
		stack_free(t, &s);
		return ORT_ERROR_OUT_OF_MEMORY;
	}
	stack_push(&s, t->root);
	stack_push(&subs, t->mirror_root);
	while (s.top > 0) {
		uint32_t ni = s.data[--s.top], sub = subs.data[--subs.top];
		if (!(sub & MIRROR_NODE)) {
			if ((sub & MIRROR_OWN) && t->nodes[ni].count && !region_own(t, q, fn, ctx, true, false, ni)) break;
			// Read after the callbacks: what they change waits for the
			// walk's end, so the mirror is still there.
			uint32_t ri = sub & MIRROR_INDEX;
			assert(t->mirror && ri < t->mirror_len);
			const mirror_link *l = &t->mirror[ri];
			for (unsigned hit = region_mirror_hits(q, &t->mirror_box[ri]) & mirror_live(l); hit; hit &= hit - 1) {
				int c = __builtin_ctz(hit);
				uint32_t csub = l->sub[c], ci = l->child[c];
				if (csub & MIRROR_NODE) {
					built_children_prefetch(t, ci); // its node and its children's are read next
				} else {
					fetch_span(&t->mirror_box[csub & MIRROR_INDEX], sizeof(mirror_bounds));
					__builtin_prefetch(&t->mirror[csub & MIRROR_INDEX]);
					if (csub & MIRROR_OWN) fetch_span(&t->nodes[ci], sizeof(node));
				}
				stack_push(&s, ci);
				stack_push(&subs, csub);
			}
			continue;
		}
		const node *n = &t->nodes[ni];
		if (n->count) {
			if (!region_own(t, q, fn, ctx, true, false, ni)) break;
			n = &t->nodes[ni]; // a callback's deferred change may have moved the pool
		}
		for (int c = 0; c < NCHILD; ++c) {
			uint32_t ci = n->child[c];
			if (ci == NIL || !region_enters(t, q, ci, true, false)) continue;
			const node *cn = &t->nodes[ci];
			if (cn->head != NIL) built_chunks_prefetch(t, cn);
			stack_push(&s, ci);
			stack_push(&subs, MIRROR_NODE);
		}
	}
	stack_free(t, &subs);
	stack_free(t, &s);
	return ORT_OK;
}

/// Every entry of the subtrees the query enters that meets it; children are
/// tested before they are stacked, so a node is read once and only if entered.
/// Called with plain and leaves constant (query_region), so a plain query's
/// walk carries none of the other tests.
static inline ort_result region_walk(const tree_t *t, const region *q, ORTHANT_NAME(query_fn) * fn, void *ctx,
                                     bool plain, bool leaves)
{
	if (!region_enters(t, q, t->root, plain, leaves)) return ORT_OK;
	node_stack s;
	if (!stack_init(t, &s)) return ORT_ERROR_OUT_OF_MEMORY;
	stack_push(&s, t->root);
	while (s.top > 0) {
		uint32_t ni = s.data[--s.top];
		const node *n = &t->nodes[ni];
		if (n->count) {
			if (!region_own(t, q, fn, ctx, plain, leaves, ni)) {
				stack_free(t, &s);
				return ORT_OK;
			}
			n = &t->nodes[ni]; // a callback's deferred change may have moved the pool
		}
		// Only a divided node has children (validate checks it), so a leaf's
		// are all NIL and its flags, a line of their own in most nodes,
		// need not be read.
		for (int c = 0; c < NCHILD; ++c) {
			uint32_t ci = n->child[c];
			if (ci == NIL || !region_enters(t, q, ci, plain, leaves)) continue;
			const node *cn = &t->nodes[ci];
			if (cn->head != NIL) __builtin_prefetch(&t->chunks[cn->head]);
			stack_push(&s, ci);
		}
	}
	stack_free(t, &s);
	return ORT_OK;
}

static ort_result query_region(const tree_t *t, const region *q, ORTHANT_NAME(query_fn) * fn, void *ctx)
{
	if (t->root == NIL) return ORT_OK;
	bool leaves = t->def.placement == ORT_PLACEMENT_LEAVES;
	// Boxes alone, no filter: each node and entry is one box test.
	if (!leaves && q->mask == ORT_MASK_ALL && !t->spheres && q->radius2 < 0.0)
		return t->mirror ? region_walk_built(t, q, fn, ctx) : region_walk(t, q, fn, ctx, true, false);
	return leaves ? region_walk(t, q, fn, ctx, false, true) : region_walk(t, q, fn, ctx, false, false);
}

/// query_region inside the readers' bracket (defer.c).
static ort_result query_run(const tree_t *t, region *q, ORTHANT_NAME(query_fn) * fn, void *ctx)
{
	region_lanes(q);
	ort_result attached = detached_read(t);
	if (attached != ORT_OK) return attached;
	reading_begin(t);
	ort_result r = query_region(t, q, fn, ctx);
	reading_end(t);
	return r;
}

ort_result ORTHANT_NAME(tree_query_box)(const tree_t *t, box_t box, uint64_t mask, ORTHANT_NAME(query_fn) * fn,
                                        void *ctx)
{
	if (!t || !fn) return ORT_ERROR_INVALID_ARGUMENT;
	for (int d = 0; d < DIM; ++d)
		if (isnan(box.min[d]) || isnan(box.max[d]) || !(box.min[d] <= box.max[d])) return ORT_ERROR_INVALID_BOX;
	region q;
	q.mask = mask;
	q.box = box;
	q.radius2 = -1.0f;
	return query_run(t, &q, fn, ctx);
}

/// A box query of a box already checked. Every query prunes by the nodes'
/// bounds; the broad phase calls this after making them exact (pairs_content).
static ort_result query_box_by_content(const tree_t *t, const box_t *box, ORTHANT_NAME(query_fn) * fn, void *ctx)
{
	region q;
	q.mask = ORT_MASK_ALL;
	q.box = *box;
	q.radius2 = -1.0f;
	return query_run(t, &q, fn, ctx);
}

ort_result ORTHANT_NAME(tree_query_point)(const tree_t *t, const float point[DIM], uint64_t mask,
                                          ORTHANT_NAME(query_fn) * fn, void *ctx)
{
	if (!t || !fn || !point) return ORT_ERROR_INVALID_ARGUMENT;
	if (point_check(point) != ORT_OK) return ORT_ERROR_INVALID_BOX;
	region q;
	q.mask = mask;
	memcpy(q.box.min, point, sizeof q.box.min);
	memcpy(q.box.max, point, sizeof q.box.max);
	q.radius2 = -1.0f;
	return query_run(t, &q, fn, ctx);
}

ort_result ORTHANT_NAME(tree_query_sphere)(const tree_t *t, const float centre[DIM], float radius, uint64_t mask,
                                           ORTHANT_NAME(query_fn) * fn, void *ctx)
{
	if (!t || !fn || !centre) return ORT_ERROR_INVALID_ARGUMENT;
	if (point_check(centre) != ORT_OK || !isfinite(radius) || radius < 0.0f) return ORT_ERROR_INVALID_BOX;
	region q;
	q.mask = mask;
	// The bounding box must hold whatever the distance test accepts, or
	// pruning would drop it.
	for (int d = 0; d < DIM; ++d) q.centre[d] = centre[d];
	sphere_prune_box(centre, radius, &q.box);
	q.radius = radius;
	q.radius2 = (double)radius * radius;
	return query_run(t, &q, fn, ctx);
}

// packed_pairs.c: ortN_packed_find_pairs — every overlapping pair once.
//
// self(x) pairs x's own items with each other and with everything below x,
// then crosses each two children whose bounds meet and recurses. cross(x, y),
// for disjoint subtrees whose bounds meet, splits the side with more items:
// its own items against the other subtree, then each of its children that
// meets the other. Every pair is tested once: in its items' common node, down
// the ancestor line, or in the cross of the two children of their lowest
// common ancestor.
//
// A node owning a pile the build could not spread out (the depth limit, a
// speck of boxes far smaller than the scene, strips across split lines) is
// swept (sweep.h) instead of tested pair by pair, and so are two such piles
// crossed: O(m log m + k1), not m^2; so is a subtree whose children's
// bounds overlap nearly whole (tangled, below), which a walk would cross
// pairwise for little. The keys of a sweep are the one memory find_pairs
// allocates, and only when some node owns SWEEP_MIN items or more or some
// subtree is tangled; the tree keeps them for the next call (a concurrent
// second call takes its own), so a steady scene allocates nothing per frame;
// without them the pile is tested pair by pair (the tangled subtree walked),
// as before. Piles whose boxes all meet (duplicates)
// are neither swept nor tested: their pairs are written out (pk_report_all).
//
// With tasks (task.h), the same recursion walks the top of the tree on the
// calling thread with a plan and, instead of doing the work, lists it as jobs
// in the order it would do it: a subtree small enough (or a cross of two)
// becomes one job; a larger one becomes its own items' job, then its
// children's crosses and selves, planned the same way. The workers run the
// jobs, each into its own buffer (a sweep's keys in a second one, as the
// workers never allocate), and the calling thread replays the buffers in job
// order — the serial order exactly, for any number of workers.
#include "packed_int.h"
#include "sweep.h"
#include "task_int.h"

typedef struct pk_pairs {
	const packed_t *p;
	ort_id_pair_fn *fn;
	void *ctx;
	bool stop;
	uint64_t *keys; ///< the sweep's keys, allocated on the first sweep
	size_t keys_cap;
	/// In a job: out[0] takes the pairs instead of fn, out[1] the sweep's keys.
	tk_out *out;
	/// Planning (with tasks): the walk lists its work as jobs instead of doing it.
	struct pk_plan *plan;
} pk_pairs;

static inline bool pk_report(pk_pairs *r, uint32_t a, uint32_t b)
{
	if (r->out) {
		const uint32_t pair[2] = {r->p->ids[a], r->p->ids[b]};
		tk_put(&r->out[0], pair, sizeof pair);
		return true;
	}
	if (r->fn(r->ctx, r->p->ids[a], r->p->ids[b])) return true;
	r->stop = true;
	return false;
}

/// A sweep's lists: where they start in the tree's item order.
typedef struct pk_sweep_at {
	pk_pairs *r;
	uint32_t a0, b0;
} pk_sweep_at;

static bool pk_sweep_report(void *ctx, uint32_t i, uint32_t j)
{
	pk_sweep_at *s = ctx;
	return pk_report(s->r, s->a0 + i, s->b0 + j);
}

/// Items [a0, a0 + na) among themselves (nb = 0) or against [b0, b0 + nb),
/// swept; false when the keys found no memory (the caller then tests pair by
/// pair: slower, never wrong).
static bool pk_sweep(pk_pairs *r, uint32_t a0, uint32_t na, uint32_t b0, uint32_t nb)
{
	size_t need = 2 * ((size_t)na + nb);
	if (r->out) {
		// A job's keys live in its scratch, which grows only on the calling
		// thread: ask for room, give up, and be run again with it.
		r->keys = (uint64_t *)(void *)r->out[1].data;
		r->keys_cap = r->out[1].cap / sizeof *r->keys;
		if (need > r->keys_cap) {
			r->out[1].used = 2 * need * sizeof *r->keys;
			r->stop = true;
			return true;
		}
	}
	if (need > r->keys_cap) {
		const ort_allocator *al = &r->p->def.allocator;
		if (r->keys) allocator_free(al, r->keys, r->keys_cap * sizeof *r->keys);
		size_t cap = need < 2 * r->keys_cap ? 2 * r->keys_cap : need;
		r->keys = allocator_alloc(al, cap * sizeof *r->keys);
		r->keys_cap = r->keys ? cap : 0;
		if (!r->keys) return false;
	}
	const box_t *boxes = r->p->boxes;
	sweep_list la = {(const char *)&boxes[a0], sizeof(box_t), na};
	sweep_list lb = {(const char *)&boxes[b0], sizeof(box_t), nb};
	pk_sweep_at s = {r, a0, nb ? b0 : a0};
	if (nb)
		sweep_cross(&la, &lb, r->keys, pk_sweep_report, &s);
	else
		sweep_self(&la, r->keys, pk_sweep_report, &s);
	return true;
}

/// Items [a0, a0 + na) that meet bounds yb, each against items [b0, b0 + nb).
/// Overlap is rarely predictable, so the tests advance indices instead of
/// branching; only the hits (a predictable few) branch.
static void pk_list_vs_list(pk_pairs *r, uint32_t a0, uint32_t na, const box_t *yb, uint32_t b0, uint32_t nb)
{
	const box_t *boxes = r->p->boxes;
	uint32_t near[32];
	for (uint32_t a = a0, ae = a0 + na; a < ae;) {
		uint32_t nn = 0, stop = ae - a > 32 ? a + 32 : ae;
		WORK_TESTS(stop - a);
		for (; a < stop; ++a) {
			near[nn] = a;
			nn += pk_overlap(&boxes[a], yb);
		}
		WORK_TESTS((uint64_t)nn * nb);
		for (uint32_t j = 0; j < nn; ++j) {
			const box_t *ba = &boxes[near[j]];
			for (uint32_t i = b0, ie = b0 + nb; i < ie;) {
				uint32_t hit[32], nh = 0, istop = ie - i > 32 ? i + 32 : ie;
				for (; i < istop; ++i) {
					hit[nh] = i;
					nh += pk_overlap(ba, &boxes[i]);
				}
				for (uint32_t h = 0; h < nh; ++h)
					if (!pk_report(r, near[j], hit[h])) return;
			}
		}
	}
}

// ---- piles of boxes that all meet --------------------------------------------
//
// A pile of identical boxes (or a speck of boxes that all overlap) meets
// itself everywhere: every pair of two of its leaves is a hit. Testing such
// a cross pair by pair costs a test and a branch per pair for nothing; when
// every box of one list meets every box of the other the pairs are written
// straight out, in the order the tests would find them. Whether they all meet
// is exact and linear: on each axis, the highest low face of either list must
// lie at or below the lowest high face of the other (two intervals meet when
// each starts before the other ends). Two box tests of the lists' ends sort
// out nearly every cross of a spread scene before the linear check is made.

/// On each axis, the highest low face and the lowest high face of items [a0, a0 + n).
static void pk_faces(const box_t *boxes, uint32_t a0, uint32_t n, float *top_lo, float *low_hi)
{
	for (int d = 0; d < DIM; ++d) {
		top_lo[d] = -INFINITY;
		low_hi[d] = INFINITY;
	}
	for (uint32_t a = a0; a < a0 + n; ++a)
		for (int d = 0; d < DIM; ++d) {
			top_lo[d] = boxes[a].min[d] > top_lo[d] ? boxes[a].min[d] : top_lo[d];
			low_hi[d] = boxes[a].max[d] < low_hi[d] ? boxes[a].max[d] : low_hi[d];
		}
}

/// pk_all_meet past the test of the lists' ends.
static bool pk_all_meet_faces(const box_t *boxes, uint32_t a0, uint32_t na, uint32_t b0, uint32_t nb)
{
	WORK_TESTS(na + nb);
	float alo[DIM], ahi[DIM], blo[DIM], bhi[DIM];
	pk_faces(boxes, a0, na, alo, ahi);
	pk_faces(boxes, b0, nb, blo, bhi);
	int ok = 1;
	for (int d = 0; d < DIM; ++d) ok &= (alo[d] <= bhi[d]) & (blo[d] <= ahi[d]);
	return ok;
}

/// Whether every item of [a0, a0 + na) meets every item of [b0, b0 + nb)
/// (the same list for a self: then every two of its items meet).
static inline bool pk_all_meet(const box_t *boxes, uint32_t a0, uint32_t na, uint32_t b0, uint32_t nb)
{
	return pk_overlap(&boxes[a0], &boxes[b0 + nb - 1]) &&
	       (a0 == b0 || pk_overlap(&boxes[a0 + na - 1], &boxes[b0])) && pk_all_meet_faces(boxes, a0, na, b0, nb);
}

/// Every pair of items a in [a0, a1), b in [b0, b1), a-major (as
/// pk_list_vs_list finds them); for a self (the rows of one list: b0 == a0
/// of its first row) only b > a.
static void pk_report_rows(pk_pairs *r, uint32_t a0, uint32_t a1, uint32_t b0, uint32_t b1, bool self)
{
	const uint32_t *ids = r->p->ids;
	if (r->out) {
		// Room for all of them at once; the ids straight into the job's buffer.
		tk_out *o = &r->out[0];
		size_t pairs = 0;
		for (uint32_t a = a0; a < a1; ++a) pairs += b1 - (self ? a + 1 : b0);
		size_t size = pairs * 2 * sizeof(uint32_t);
		if (o->used + size <= o->cap) {
			uint32_t *w = (uint32_t *)(void *)(o->data + o->used);
			for (uint32_t a = a0; a < a1; ++a)
				for (uint32_t b = self ? a + 1 : b0; b < b1; ++b) {
					w[0] = ids[a];
					w[1] = ids[b];
					w += 2;
				}
		}
		o->used += size;
		return;
	}
	for (uint32_t a = a0; a < a1; ++a)
		for (uint32_t b = self ? a + 1 : b0; b < b1; ++b)
			if (!r->fn(r->ctx, ids[a], ids[b])) {
				r->stop = true;
				return;
			}
}

/// pk_report_rows for two whole lists (one, a0 == b0: its pairs).
static void pk_report_all(pk_pairs *r, uint32_t a0, uint32_t na, uint32_t b0, uint32_t nb)
{
	pk_report_rows(r, a0, a0 + na, b0, b0 + nb, a0 == b0);
}

/// Item a against every item below block bi (the children of some node).
static void pk_item_vs_block(pk_pairs *r, uint32_t a, uint32_t bi)
{
	const packed_t *p = r->p;
	const box_t ba = p->boxes[a];
	uint32_t stack[PK_STACK];
	int top = 0;
	stack[top++] = bi;
	while (top > 0) {
		const pblock *b = &p->blocks[stack[--top]];
		WORK_TESTS(b->kids);
		unsigned m = pk_lanes_meeting(b, &ba);
		while (m) {
			int k = pk_next_lane(&m);
			pk_list_vs_list(r, a, 1, &ba, b->first[k], b->own[k]);
			if (r->stop) return;
			if (b->child[k] != NIL) stack[top++] = b->child[k];
		}
		assert(top <= PK_STACK);
	}
}

/// pk_subtree_end by walking down the last children.
static uint32_t pk_subtree_end_walk(const packed_t *p, uint32_t bi, int k)
{
	for (;;) {
		const pblock *b = &p->blocks[bi];
		if (b->child[k] == NIL) return b->first[k] + b->own[k];
		bi = b->child[k];
		k = (int)p->blocks[bi].kids - 1;
	}
}

/// One past the last item of the subtree of lane k of block bi: a subtree's
/// items are one run, its last child's subtree last, and the runs of a
/// block's lanes follow each other, so a lane's ends where the next's starts.
static uint32_t pk_subtree_end(const packed_t *p, uint32_t bi, int k)
{
	const pblock *b = &p->blocks[bi];
	uint32_t end = k + 1 < (int)b->kids ? b->first[k + 1] : pk_subtree_end_walk(p, bi, k);
	assert(end == pk_subtree_end_walk(p, bi, k));
	return end;
}

/// x's own items against the subtree of y (whose bounds are yb).
static void pk_own_vs(pk_pairs *r, pk_ref x, pk_ref y, const box_t *yb)
{
	const packed_t *p = r->p;
	const pblock *bx = &p->blocks[x.block], *by = &p->blocks[y.block];
	// A pile against the subtree's items, one run, swept at once.
	uint32_t y0 = by->first[y.lane], ny = pk_subtree_end(p, y.block, y.lane) - y0;
	if (bx->own[x.lane] >= SWEEP_MIN && pk_sweep(r, bx->first[x.lane], bx->own[x.lane], y0, ny)) return;
	WORK_TESTS(bx->own[x.lane]);
	for (uint32_t a = bx->first[x.lane], e = a + bx->own[x.lane]; a < e && !r->stop; ++a) {
		const box_t *ba = &p->boxes[a];
		if (!pk_overlap(ba, yb)) continue;
		pk_list_vs_list(r, a, 1, ba, by->first[y.lane], by->own[y.lane]);
		if (!r->stop && by->child[y.lane] != NIL) pk_item_vs_block(r, a, by->child[y.lane]);
	}
}

/// The sum of a box's sides: which of two subtrees to split first.
static inline float pk_extent(const box_t *b)
{
	float s = 0.0f;
	for (int d = 0; d < DIM; ++d) s += b->max[d] - b->min[d];
	return s;
}

/// Which side a cross splits: the one with children, of the two the larger
/// (a leaf never). Swaps x and y (and their bounds) so that it is x, and
/// returns x's children's block.
static uint32_t pk_cross_order(const packed_t *p, pk_ref *x, pk_ref *y, const box_t **xb, const box_t **yb)
{
	uint32_t cx = p->blocks[x->block].child[x->lane], cy = p->blocks[y->block].child[y->lane];
	if (cx == NIL || (cy != NIL && pk_extent(*yb) > pk_extent(*xb))) {
		pk_ref t = *x;
		*x = *y;
		*y = t;
		const box_t *tb = *xb;
		*xb = *yb;
		*yb = tb;
		cx = cy;
	}
	return cx;
}

static inline bool pk_both_leaves(const packed_t *p, pk_ref x, pk_ref y)
{
	return p->blocks[x.block].child[x.lane] == NIL && p->blocks[y.block].child[y.lane] == NIL;
}

/// At most the items in the subtree of x, a node with children, and at
/// least all of them but its last child's (which has one or more): exact
/// unless x is its block's last lane, and cheap either way.
static inline uint32_t pk_items_least(const packed_t *p, pk_ref x)
{
	const pblock *b = &p->blocks[x.block];
	if (x.lane + 1 < (int)b->kids) return b->first[x.lane + 1] - b->first[x.lane];
	const pblock *c = &p->blocks[b->child[x.lane]];
	return c->first[c->kids - 1] + 1 - b->first[x.lane];
}

static inline bool pk_both_inner(const packed_t *p, pk_ref x, pk_ref y)
{
	return p->blocks[x.block].child[x.lane] != NIL && p->blocks[y.block].child[y.lane] != NIL;
}

// ---- subtrees that do not prune: swept whole ------------------------------------
//
// A pile is cut by count in the Morton order of its centres (packed_build.c):
// where the centres vary less than the boxes' noise on some axis, the
// children of a node hold boxes from all over its range and their bounds
// overlap nearly whole. Strips stacked along y and long in x and z (a
// pinwheel's arm) are so below the level where y differs by the noise of x
// and z: a part's y range there covers m^(2/3) others' strips in 3D (m^(1/2)
// in 2D), and crossing the children pairwise meets leaf after leaf whose
// boxes meet none (3D pinwheel of 100k boxes: 1,002,386 leaf-against-leaf
// tests, 32,823 at 20k, before the build put each arm, once cut from the
// whole, in an order of its own: packed_build.c pk_pile_skewed; strips of
// different families mixed in one place still tangle). Such a node is
// tangled (pk_tangled): its children's
// bounds cover their union PK_TANGLE_COVER times over, and the sum over each
// two that meet of how much of the smaller lies in the other (pk_share_in,
// axis by axis) times the items of the two passes the items below it. Its
// subtree, one run of items, is then swept once (sweep_self: in 2D
// O((m + k) log m), in 3D the streamed pile's bound) instead of walked; and
// two tangled subtrees crossed, their bounds meeting PK_TANGLE_SHARE or more,
// are swept against each other (sweep_cross) instead of split.
//
// Work: a self sweep ends the walk below its node, so swept subtrees never
// nest and each item is in at most one self sweep: all of them together cost
// what one sweep of n boxes would. A cross sweep ends the walk of its pair
// too; what bounds the number of tangled subtrees one item's is swept
// against is only that each has PK_TANGLE_MIN items or more and bounds that
// meet its own half whole: no proof here that it is O(log n). On pinwheels
// it is about one: items in cross sweeps, a box, 2D 0.91 at 100k and 1.06 at
// 200k, 3D 0.28 and 0.31; self sweeps hold every item once from 20k on. The
// test costs kids^2 lane tests, made only for subtrees of PK_TANGLE_MIN items
// or more, and in a cross only while both sides may be that large
// (pk_cross_big): a uniform scene's nodes lie apart save for their boxes'
// reach across a split line, and its walk costs the same (callgrind, 100k:
// 2D +0.4%, 3D -0.1%).

/// Subtrees of fewer items are walked: below this a sweep's sort costs more
/// than the walk's tests.
#define PK_TANGLE_MIN (2 * SWEEP_MIN)

/// A tangled node's children's bounds cover the union of them this many
/// times over or more (pk_tangled's first, cheap test).
#define PK_TANGLE_COVER 1.2f

/// How much of the smaller of two meeting boxes lies in the other: on each
/// axis the share of the shorter side within both, multiplied (a side of no
/// length, met, counts whole).
static float pk_share_in(const box_t *a, const box_t *b)
{
	float f = 1.0f;
	for (int d = 0; d < DIM; ++d) {
		float lo = a->min[d] > b->min[d] ? a->min[d] : b->min[d];
		float hi = a->max[d] < b->max[d] ? a->max[d] : b->max[d];
		float la = a->max[d] - a->min[d], lb = b->max[d] - b->min[d], s = la < lb ? la : lb;
		if (s > 0.0f) f *= (hi - lo) / s;
	}
	return f;
}

/// A tangled run is swept only when its boxes are thin on some axis: there
/// the sum of their sides over the run's extent (how many boxes a point on
/// that axis lies in, on average) is at most this. A sweep on that axis then
/// meets few boxes a box, where crossing the children meets leaf after leaf
/// (a pinwheel's arm: 0.3-0.4 in 3D). Boxes that overlap on every axis
/// (a speck of 100k small cubes, 738) are walked: the children's bounds
/// overlap there as well when a pile is cut by count, but a few levels down
/// they part, and the walk found their pairs in a third to a quarter of a
/// sweep's work. Crossing rods in 3D (one family long on each axis, 33,064)
/// are swept all the same (sweep_streams_whole): the stream parts the
/// families and puts each on a grid, where the walk met leaf after leaf of
/// one family's rods across another's (find_pairs at 64k: 158.6M
/// instructions walked, 44.7M swept).
#define PK_TANGLE_THIN 8.0

/// Whether the boxes [first, end) (within `all`) are thin on some axis
/// (PK_TANGLE_THIN), or in 3D a pile of rods crossing that the stream parts.
static bool pk_thin(const packed_t *p, uint32_t first, uint32_t end, const box_t *all)
{
	double len[DIM] = {0};
	for (uint32_t i = first; i < end; ++i)
		for (int d = 0; d < DIM; ++d) len[d] += (double)p->boxes[i].max[d] - (double)p->boxes[i].min[d];
	double share[DIM];
	for (int d = 0; d < DIM; ++d) {
		double side = (double)all->max[d] - (double)all->min[d];
		if (side > 0.0 && len[d] <= PK_TANGLE_THIN * side) return true;
		share[d] = side > 0.0 ? len[d] / side : INFINITY;
	}
#if DIM == 3
	// Families of rods crossing (no axis thin, none long for most): the
	// streamed pile parts them and puts each on a grid (sweep.h).
	return sweep_streams_whole(share, end - first);
#else
	(void)share;
	return false;
#endif
}

/// Whether the subtree of x (items [first, end), children in block ci) is
/// tangled: its children's bounds overlap so much that crossing them prunes
/// little (above). Children's items: lane k's run ends where lane k + 1's
/// starts, the last at end.
static bool pk_tangled(const packed_t *p, uint32_t ci, uint32_t first, uint32_t end)
{
	if (ci == NIL || end - first < PK_TANGLE_MIN) return false;
	const pblock *c = &p->blocks[ci];
	int kids = (int)c->kids;
	// First the cheap sum of the children's bounds over the union of them
	// (an axis on which all are flat left out): children of a split cell,
	// however their boxes reach over its split lines, cover little more
	// than once; a tangled node's cover most of it each.
	box_t all = pk_empty_box();
	for (int k = 0; k < kids; ++k) {
		box_t kb = pk_lane_box(c, k);
		pk_grow(&all, &kb);
	}
	float cover = 0.0f;
	for (int k = 0; k < kids; ++k) {
		float f = 1.0f;
		for (int d = 0; d < DIM; ++d) {
			float side = all.max[d] - all.min[d];
			if (side > 0.0f) f *= (c->hi[d][k] - c->lo[d][k]) / side;
		}
		cover += f;
	}
	if (cover < PK_TANGLE_COVER) return false;
	uint32_t items[NCHILD];
	for (int k = 0; k < kids; ++k) items[k] = (k + 1 < kids ? c->first[k + 1] : end) - c->first[k];
	float score = 0.0f;
	for (int k = 0; k < kids; ++k) {
		box_t kb = pk_lane_box(c, k);
		unsigned m = pk_lanes_meeting(c, &kb) & ~((2u << k) - 1u);
		while (m) {
			int l = pk_next_lane(&m);
			box_t lb = pk_lane_box(c, l);
			score += pk_share_in(&kb, &lb) * (float)(items[k] + items[l]);
		}
	}
	return score > (float)(end - first) && pk_thin(p, first, end, &all);
}

/// Two subtrees are swept against each other only when this much of the
/// smaller one's bounds lies in the other's (pk_share_in): tangled subtrees
/// crossed in a walk that has stopped pruning meet nearly whole.
#define PK_TANGLE_SHARE 0.5f

/// pk_tangled for node x; its run of items into *first and *end.
static bool pk_tangled_ref(const packed_t *p, pk_ref x, uint32_t *first, uint32_t *end)
{
	const pblock *b = &p->blocks[x.block];
	*first = b->first[x.lane];
	*end = pk_subtree_end(p, x.block, x.lane);
	return pk_tangled(p, b->child[x.lane], *first, *end);
}

// ---- planning: the walk's top as jobs -------------------------------------------

enum { PK_JOB_SELF, PK_JOB_OWN, PK_JOB_CROSS, PK_JOB_OWN_VS, PK_JOB_ROWS };

/// One job: pk_self(x), pk_self_own(x), pk_cross(x, y, xb, yb),
/// pk_own_vs(x, y, yb), or rows [a0, a1) of a subtree ending at `end` whose
/// boxes all meet (pk_report_rows, a self).
typedef struct pk_job {
	int kind;
	pk_ref x, y;
	box_t xb, yb;
	uint32_t a0, a1, end;
} pk_job;

typedef struct pk_plan {
	pk_job *jobs; ///< NULL while counting
	int n;
	uint32_t limit; ///< subtrees (or crosses) of at most this many items are one job
} pk_plan;

/// The items in the subtree of x.
static uint32_t pk_subtree_items(const packed_t *p, pk_ref x)
{
	return pk_subtree_end(p, x.block, x.lane) - p->blocks[x.block].first[x.lane];
}

static void pk_plan_add(pk_plan *pl, int kind, pk_ref x, pk_ref y, const box_t *xb, const box_t *yb)
{
	if (pl->jobs)
		pl->jobs[pl->n] = (pk_job){kind, x, y, xb ? *xb : pk_empty_box(), yb ? *yb : pk_empty_box(), 0, 0, 0};
	pl->n++;
}

/// The pairs of items [first, end), which all meet, as jobs of whole rows,
/// each of about an equal share of the pairs (and at least 64k of them).
static void pk_plan_rows(pk_plan *pl, uint32_t first, uint32_t end)
{
	uint64_t m = end - first, share = m * (m - 1) / 2 / TK_JOBS_TARGET, sum = 0;
	if (share < 65536) share = 65536;
	uint32_t a0 = first;
	for (uint32_t a = first; a < end; ++a) {
		sum += end - a - 1;
		if (sum >= share || a + 1 == end) {
			if (pl->jobs) {
				pl->jobs[pl->n] = (pk_job){PK_JOB_ROWS, {0, 0}, {0, 0}, pk_empty_box(), pk_empty_box(), a0, a + 1, end};
			}
			pl->n++;
			a0 = a + 1;
			sum = 0;
		}
	}
}

// ---- the walk ------------------------------------------------------------------
//
// pk_cross and pk_self do the work, or, planning (r->plan set), list it: a
// part small enough becomes one job (the same call, run by a worker without
// a plan), a larger one lists its own items' job and goes on down exactly as
// the work would, so the jobs come in the order the work would be done.

/// pk_cross of two tangled subtrees: their runs swept against each other
/// (planning: listed as one job); false, having done nothing, when they are
/// not both tangled (or the sweep found no memory). Most crosses have bounds
/// that meet in a slab along a split line: that test first, the cheap one.
/// Kept out of pk_cross (noinline), whose every call would otherwise pay for
/// its frame.
static __attribute__((noinline)) bool pk_cross_swept(pk_pairs *r, pk_ref x, pk_ref y, const box_t *xb, const box_t *yb)
{
	const packed_t *p = r->p;
	uint32_t x0, xe, y0, ye;
	if (pk_share_in(xb, yb) < PK_TANGLE_SHARE || !pk_tangled_ref(p, x, &x0, &xe) || !pk_tangled_ref(p, y, &y0, &ye))
		return false;
	if (r->plan) {
		pk_plan_add(r->plan, PK_JOB_CROSS, x, y, xb, yb);
		return true;
	}
	return pk_sweep(r, x0, xe - x0, y0, ye - y0);
}

static void pk_cross_big(pk_pairs *r, pk_ref x, pk_ref y, const box_t *xb, const box_t *yb);
static void pk_cross(pk_pairs *r, pk_ref x, pk_ref y, const box_t *xb, const box_t *yb);

/// Every pair with one item in the subtree of x and one in that of y
/// (disjoint subtrees whose bounds xb and yb meet): pk_cross_big when both
/// may be large enough to be tangled, pk_cross below a cross that was not
/// (then neither is any cross below it). One body, made twice, so that the
/// walk of a spread scene pays nothing for the question.
ORT_INLINE void pk_cross_body(pk_pairs *r, pk_ref x, pk_ref y, const box_t *xb,
                                                                const box_t *yb, bool big)
{
	const packed_t *p = r->p;
	bool leaves = pk_both_leaves(p, x, y);
	if (r->plan && (leaves || pk_subtree_items(p, x) + pk_subtree_items(p, y) <= r->plan->limit)) {
		pk_plan_add(r->plan, PK_JOB_CROSS, x, y, xb, yb);
		return;
	}
	if (leaves) {
		const pblock *bx = &p->blocks[x.block], *by = &p->blocks[y.block];
		uint64_t nx = bx->own[x.lane], ny = by->own[y.lane];
		if (pk_all_meet(p->boxes, bx->first[x.lane], (uint32_t)nx, by->first[y.lane], (uint32_t)ny))
			pk_report_all(r, bx->first[x.lane], (uint32_t)nx, by->first[y.lane], (uint32_t)ny);
		else if (nx * ny < (uint64_t)SWEEP_MIN * (nx + ny) ||
		         !pk_sweep(r, bx->first[x.lane], (uint32_t)nx, by->first[y.lane], (uint32_t)ny))
			pk_list_vs_list(r, bx->first[x.lane], bx->own[x.lane], yb, by->first[y.lane], by->own[y.lane]);
		return;
	}
	// Two subtrees both of PK_TANGLE_MIN items or more may be tangled; once
	// one side is smaller, so is one side of every cross below (each splits
	// one side into its children), and none is asked again.
	if (big) {
		big = pk_both_inner(p, x, y) && pk_items_least(p, x) >= PK_TANGLE_MIN && pk_items_least(p, y) >= PK_TANGLE_MIN;
		if (big && pk_cross_swept(r, x, y, xb, yb)) return;
	}
	uint32_t cx = pk_cross_order(p, &x, &y, &xb, &yb);
	if (!r->plan)
		pk_own_vs(r, x, y, yb);
	else if (p->blocks[x.block].own[x.lane])
		pk_plan_add(r->plan, PK_JOB_OWN_VS, x, y, NULL, yb);
	const pblock *c = &p->blocks[cx];
	WORK_TESTS(r->plan ? 0 : c->kids);
	unsigned m = pk_lanes_meeting(c, yb);
	while (m && !r->stop) {
		int k = pk_next_lane(&m);
		box_t kb = pk_lane_box(c, k);
		if (big)
			pk_cross_big(r, (pk_ref){cx, k}, y, &kb, yb);
		else
			pk_cross(r, (pk_ref){cx, k}, y, &kb, yb);
	}
}

static void pk_cross_big(pk_pairs *r, pk_ref x, pk_ref y, const box_t *xb, const box_t *yb)
{
	pk_cross_body(r, x, y, xb, yb, true);
}

static void pk_cross(pk_pairs *r, pk_ref x, pk_ref y, const box_t *xb, const box_t *yb)
{
	pk_cross_body(r, x, y, xb, yb, false);
}

/// x's own items with each other and with everything below x.
static void pk_self_own(pk_pairs *r, pk_ref x)
{
	const packed_t *p = r->p;
	const pblock *bx = &p->blocks[x.block];
	const box_t *boxes = p->boxes;
	uint32_t ci = bx->child[x.lane];
	uint32_t first = bx->first[x.lane], own = bx->own[x.lane];
	// Own items that all meet are written out without a test; a pile
	// otherwise swept among itself. A pile against everything below it (one
	// run of items) is swept.
	bool all = own >= 2 && pk_all_meet(boxes, first, own, first, own);
	if (all) pk_report_all(r, first, own, first, own);
	bool swept = !all && own >= SWEEP_MIN && pk_sweep(r, first, own, 0, 0);
	uint32_t below = ci == NIL ? 0 : pk_subtree_end(p, x.block, x.lane) - first - own;
	bool swept_below = own >= SWEEP_MIN && (all || swept) && below && !r->stop &&
	                   pk_sweep(r, first, own, first + own, below);
	for (uint32_t a = first, e = a + own; a < e && !r->stop; ++a) {
		if (!all && !swept) pk_list_vs_list(r, a, 1, &boxes[a], a + 1, e - a - 1);
		if (!r->stop && ci != NIL && !swept_below) pk_item_vs_block(r, a, ci);
	}
}

/// pk_self of a tangled subtree x (items [first, end), children in block
/// ci): its run swept once (planning: listed as one job); false, having done
/// nothing, when it is not tangled (or the sweep found no memory).
static __attribute__((noinline)) bool pk_self_swept(pk_pairs *r, pk_ref x, uint32_t ci, uint32_t first, uint32_t end)
{
	if (!pk_tangled(r->p, ci, first, end)) return false;
	if (r->plan) {
		pk_plan_add(r->plan, PK_JOB_SELF, x, x, NULL, NULL);
		return true;
	}
	return pk_sweep(r, first, end - first, 0, 0);
}

/// Every pair with both items in the subtree of x.
static void pk_self(pk_pairs *r, pk_ref x)
{
	const packed_t *p = r->p;
	const pblock *bx = &p->blocks[x.block];
	uint32_t ci = bx->child[x.lane];
	if (r->plan && (ci == NIL || pk_subtree_items(p, x) <= r->plan->limit)) {
		pk_plan_add(r->plan, PK_JOB_SELF, x, x, NULL, NULL);
		return;
	}
	if (ci != NIL) {
		// A pile whose boxes all meet (duplicates, a speck): its pairs at
		// once, without a test each. (A leaf: pk_self_own sees to it.)
		uint32_t first = bx->first[x.lane], end = pk_subtree_end(p, x.block, x.lane);
		if (pk_all_meet(p->boxes, first, end - first, first, end - first)) {
			if (r->plan)
				pk_plan_rows(r->plan, first, end);
			else
				pk_report_all(r, first, end - first, first, end - first);
			return;
		}
		// A tangled subtree: its run swept once (a job of its own when planning).
		if (end - first >= PK_TANGLE_MIN && pk_self_swept(r, x, ci, first, end)) return;
	}
	if (!r->plan)
		pk_self_own(r, x);
	else if (bx->own[x.lane])
		pk_plan_add(r->plan, PK_JOB_OWN, x, x, NULL, NULL);
	if (r->stop || ci == NIL) return;
	const pblock *c = &p->blocks[ci];
	int kids = (int)c->kids;
	for (int k = 0; k < kids && !r->stop; ++k) {
		box_t kb = pk_lane_box(c, k);
		// The later siblings that meet this one, all at once.
		WORK_TESTS(r->plan ? 0 : c->kids);
		unsigned m = pk_lanes_meeting(c, &kb) & ~((2u << k) - 1u);
		while (m && !r->stop) {
			int l = pk_next_lane(&m);
			box_t lb = pk_lane_box(c, l);
			pk_cross_big(r, (pk_ref){ci, k}, (pk_ref){ci, l}, &kb, &lb);
		}
	}
	for (int k = 0; k < kids && !r->stop; ++k) pk_self(r, (pk_ref){ci, k});
}

// ---- in jobs ---------------------------------------------------------------------

static void pk_pairs_job(void *ctx, int j, tk_out *out)
{
	const pk_pairs *plan = ctx;
	const pk_job *jb = &plan->plan->jobs[j];
	pk_pairs r = {plan->p, NULL, NULL, false, NULL, 0, out, NULL};
	switch (jb->kind) {
	case PK_JOB_SELF: pk_self(&r, jb->x); break;
	case PK_JOB_OWN: pk_self_own(&r, jb->x); break;
	case PK_JOB_CROSS: pk_cross_big(&r, jb->x, jb->y, &jb->xb, &jb->yb); break;
	case PK_JOB_OWN_VS: pk_own_vs(&r, jb->x, jb->y, &jb->yb); break;
	default: pk_report_rows(&r, jb->a0, jb->a1, jb->a0, jb->end, true); break;
	}
}

static ort_result pk_pairs_in_jobs(const packed_t *p, ort_tasks *tasks, ort_id_pair_fn *fn, void *ctx)
{
	uint32_t limit = p->count / TK_JOBS_TARGET;
	pk_plan pl = {NULL, 0, limit < 1024 ? 1024 : limit};
	pk_pairs plan = {p, NULL, NULL, false, NULL, 0, NULL, &pl};
	pk_self(&plan, (pk_ref){0, 0}); // counting
	pl.jobs = ort_tk_scratch(tasks, (size_t)pl.n * sizeof *pl.jobs);
	if (!pl.jobs) return ORT_ERROR_OUT_OF_MEMORY;
	pl.n = 0;
	pk_self(&plan, (pk_ref){0, 0});
	ort_result r = ort_tk_run(tasks, pl.n, 2, pk_pairs_job, &plan);
	for (int j = 0; j < pl.n && r == ORT_OK; ++j) {
		const tk_out *o = ort_tk_output(tasks, j);
		const uint32_t *v = (const uint32_t *)(const void *)o->data;
		for (size_t i = 0, e = o->used / (2 * sizeof *v); i < e; ++i)
			if (!fn(ctx, v[2 * i], v[2 * i + 1])) return ORT_OK;
	}
	return r;
}

ort_result ORTHANT_NAME(packed_find_pairs)(const packed_t *p, ort_id_pair_fn *fn, void *ctx)
{
	if (!p || !fn) return ORT_ERROR_INVALID_ARGUMENT;
	if (!p->block_count) return ORT_OK;
	ort_result res = ORT_OK;
	ort_tasks *tasks = p->def.tasks;
	pk_reading_begin(p);
	if (ort_tk_acquire(tasks)) {
		res = pk_pairs_in_jobs(p, tasks, fn, ctx);
		ort_tk_release(tasks);
	} else {
		pk_pairs r = {p, fn, ctx, false, NULL, 0, NULL, NULL};
		// The tree's kept keys when no other call holds them, else keys of
		// this call's own.
		packed_t *q = (packed_t *)p;
		bool kept = !atomic_exchange_explicit(&q->keys_taken, true, memory_order_acquire);
		if (kept) {
			r.keys = q->keys;
			r.keys_cap = q->keys_cap;
		}
		pk_self(&r, (pk_ref){0, 0});
		if (kept) {
			q->keys = r.keys;
			q->keys_cap = r.keys_cap;
			atomic_store_explicit(&q->keys_bytes, r.keys_cap * sizeof *r.keys, memory_order_relaxed);
			atomic_store_explicit(&q->keys_taken, false, memory_order_release);
		} else if (r.keys) {
			allocator_free(&p->def.allocator, r.keys, r.keys_cap * sizeof *r.keys);
		}
	}
	pk_reading_end(p);
	return res;
}

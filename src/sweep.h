// sweep.h: sort and sweep, the pair finders' fallback for a pile of boxes a
// tree cannot spread out (both trees).
//
// A tree splits space, so boxes that space cannot separate stay together: a
// cell at the depth limit or where floats run out (a speck of boxes far
// smaller than the scene), boxes across a split line (strips, straddlers),
// duplicates. Testing such a pile of m boxes pair by pair costs m^2 whatever
// the answer. Sorting it by the boxes' low faces on one axis and sweeping
// tests only the boxes that overlap on that axis: O(m log m + k1), k1 the
// pairs overlapping on the axis. The axis is the one whose extents are
// smallest against the pile's spread, where k1 is least for boxes spread
// evenly: thin horizontal strips sweep in y, never in x.
//
// One axis fails a mixed pile (strips long in x and strips long in y, all
// across one point, overlap on either axis): a sweep that tests more than
// SWEEP_BUDGET pairs a box that are not pairs stops, and what it left is
// swept on with the boxes it has passed kept in a tree ordered on a second
// axis (sweep_set_self, sweep_set_cross; the essay above them), which in
// 2D costs O((m + k) log m) for any pile. In 3D, an active set whose boxes
// meet on the two swept axes and miss on the third goes on through a
// segment tree axis by axis (stream_run): O(m log^3 m + k) for any pile,
// split first on planes that leave few boxes across them (stream_self,
// stream_cross_split), so families of rods apart on some axis are streamed
// apart.
//
// Sorting is a radix sort of (key << 32 | index): a float's bits, flipped so
// they order as the floats do, are the key. Below SWEEP_MIN boxes (and for two
// lists, below SWEEP_MIN times their sum in pairs) testing pair by pair is
// cheaper than sorting. Memory is the caller's: 2n 64-bit words, n keys to
// sort and n to sort through (the active set's sweep reuses them).
//
// A box list is seen through (base, stride): box i is the box_t at the start
// of base + i * stride, so the tree's entries and the packed tree's box array
// are read in place.
#ifndef ORTHANT_SRC_SWEEP_H
#define ORTHANT_SRC_SWEEP_H

#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "dim.h"
#include "geom.h"

/// Piles smaller than this are tested pair by pair: the sort would cost more.
#define SWEEP_MIN 96

#ifdef ORTHANT_COUNT_WORK
/// Box tests made by the pair finders (a test-only build counts them; see
/// tests/test_adversarial.c). Not thread-safe: counting runs are single-threaded.
extern uint64_t ORTHANT_NAME(work_box_tests);
uint64_t ORTHANT_NAME(work_box_tests);
#define WORK_TESTS(n) (ORTHANT_NAME(work_box_tests) += (uint64_t)(n))
#else
#define WORK_TESTS(n) ((void)0)
#endif

typedef struct sweep_list {
	const char *base;
	size_t stride;
	uint32_t n;
} sweep_list;

static inline const box_t *sweep_box(const sweep_list *l, uint32_t i)
{
	return (const box_t *)(const void *)(l->base + (size_t)i * l->stride);
}

/// A float's bits turned into an unsigned key that orders as the float does.
static inline uint32_t sweep_key(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u & 0x80000000u ? ~u : u | 0x80000000u;
}

/// The share of each axis in a pile (total extent / spread, the spread
/// being max high face - min low face: the expected number of
/// boxes a box meets on it when they are spread evenly; INFINITY without spread).
static void sweep_shares(const sweep_list *a, const sweep_list *b, double share[DIM])
{
	double ext[DIM] = {0}, lo[DIM], hi[DIM];
	for (int d = 0; d < DIM; ++d) {
		lo[d] = INFINITY;
		hi[d] = -INFINITY;
	}
	const sweep_list *ls[2] = {a, b};
	for (int l = 0; l < 2; ++l) {
		if (!ls[l]) continue;
		for (uint32_t i = 0; i < ls[l]->n; ++i) {
			const box_t *x = sweep_box(ls[l], i);
			for (int d = 0; d < DIM; ++d) {
				ext[d] += (double)x->max[d] - x->min[d];
				if (x->min[d] < lo[d]) lo[d] = x->min[d];
				if (x->max[d] > hi[d]) hi[d] = x->max[d];
			}
		}
	}
	for (int d = 0; d < DIM; ++d) {
		double span = (double)hi[d] - lo[d];
		// No spread at all (every box on one plane): the worst axis.
		share[d] = span > 0.0 ? ext[d] / span : INFINITY;
	}
}

/// The axis to sweep a pile along: the least share.
static int sweep_axis(const double share[DIM])
{
	int best = 0;
	for (int d = 1; d < DIM; ++d)
		if (share[d] < share[best]) best = d;
	return best;
}

/// v[0..n) (key << 32 | index) sorted by key, through tmp[0..n): four passes
/// of 8 bits, so a small pile pays little for the counts and the run ends in v.
static void sweep_sort(uint64_t *v, uint64_t *tmp, uint32_t n)
{
	for (int pass = 0; pass < 4; ++pass) {
		int shift = 32 + 8 * pass;
		uint32_t count[256] = {0};
		for (uint32_t i = 0; i < n; ++i) count[(v[i] >> shift) & 255u]++;
		uint32_t sum = 0;
		for (int k = 0; k < 256; ++k) {
			uint32_t c = count[k];
			count[k] = sum;
			sum += c;
		}
		for (uint32_t i = 0; i < n; ++i) tmp[count[(v[i] >> shift) & 255u]++] = v[i];
		uint64_t *x = v;
		v = tmp;
		tmp = x;
	}
}

/// Box i's sort key on axis: its low face, then its index.
static inline uint64_t sweep_code(const sweep_list *l, uint32_t i, int axis)
{
	return (uint64_t)sweep_key(sweep_box(l, i)->min[axis]) << 32 | i;
}

/// Fill v with the codes on axis of l's boxes, sorted through tmp.
static void sweep_fill(const sweep_list *l, int axis, uint64_t *v, uint64_t *tmp)
{
	for (uint32_t i = 0; i < l->n; ++i) v[i] = sweep_code(l, i, axis);
	sweep_sort(v, tmp, l->n);
}

/// Called for boxes i of the first list and j of the second (or of the one
/// list) that overlap; false stops the sweep.
typedef bool sweep_pair_fn(void *ctx, uint32_t i, uint32_t j);

enum { SWEEP_DONE, SWEEP_STOPPED, SWEEP_OVER };

/// A sweep tests at most this many pairs a box that do not overlap, on
/// average over the boxes it has passed (and SWEEP_MIN more), before it
/// goes on with an active set ordered on a second axis (sweep_set_self,
/// sweep_set_cross), which costs a few times log m a box: pairs that do
/// overlap are never held against it (a pile of duplicates sweeps on), and
/// a pile that wastes many tests a box stops after a few boxes.
#define SWEEP_BUDGET 64

/// Sweep sorted v[0..m) of l along axis: every overlapping pair once. Past
/// `budget` tests that found no pair a box passed it stops before box *at
/// (every pair of a box before it reported) and returns SWEEP_OVER.
static int sweep_run_self(const sweep_list *l, const uint64_t *v, uint32_t m, int axis, uint64_t budget,
                          uint32_t *at, sweep_pair_fn *fn, void *ctx)
{
	uint64_t tests = 0, hits = 0;
	for (uint32_t i = 0; i < m; ++i) {
		if (tests - hits > budget * ((uint64_t)i + SWEEP_MIN)) {
			*at = i;
			WORK_TESTS(tests + m);
			return SWEEP_OVER;
		}
		const box_t *x = sweep_box(l, (uint32_t)v[i]);
		float reach = x->max[axis];
		for (uint32_t j = i + 1; j < m; ++j) {
			const box_t *y = sweep_box(l, (uint32_t)v[j]);
			if (y->min[axis] > reach) break;
			tests++;
			if (box_overlap(x, y) && (hits++, !fn(ctx, (uint32_t)v[i], (uint32_t)v[j]))) {
				WORK_TESTS(tests + m);
				return SWEEP_STOPPED;
			}
		}
	}
	WORK_TESTS(tests + m);
	return SWEEP_DONE;
}

/// Sweep sorted va[0..ma) of a against sorted vb[0..mb) of b along axis:
/// every overlapping pair once. Past `budget` tests that found no pair a
/// box passed it stops before boxes
/// at[0] of a and at[1] of b (every pair of a box before them reported) and
/// returns SWEEP_OVER.
static int sweep_run_cross(const sweep_list *a, const uint64_t *va, uint32_t ma, const sweep_list *b,
                           const uint64_t *vb, uint32_t mb, int axis, uint64_t budget, uint32_t at[2],
                           sweep_pair_fn *fn, void *ctx)
{
	uint64_t tests = 0, hits = 0;
	uint32_t i = 0, j = 0;
	int res = SWEEP_DONE;
	// Take the lower low face next; scan the other list from its cursor while
	// boxes start within its reach. Equal low faces: whichever goes first
	// meets the other in its scan, and the other's later scan starts past it.
	while (i < ma && j < mb) {
		if (tests - hits > budget * ((uint64_t)i + j + SWEEP_MIN)) {
			at[0] = i;
			at[1] = j;
			res = SWEEP_OVER;
			break;
		}
		const box_t *x = sweep_box(a, (uint32_t)va[i]), *y = sweep_box(b, (uint32_t)vb[j]);
		if (x->min[axis] <= y->min[axis]) {
			for (uint32_t k = j; k < mb; ++k) {
				const box_t *z = sweep_box(b, (uint32_t)vb[k]);
				if (z->min[axis] > x->max[axis]) break;
				tests++;
				if (box_overlap(x, z) && (hits++, !fn(ctx, (uint32_t)va[i], (uint32_t)vb[k]))) {
					res = SWEEP_STOPPED;
					goto out;
				}
			}
			i++;
		} else {
			for (uint32_t k = i; k < ma; ++k) {
				const box_t *z = sweep_box(a, (uint32_t)va[k]);
				if (z->min[axis] > y->max[axis]) break;
				tests++;
				if (box_overlap(z, y) && (hits++, !fn(ctx, (uint32_t)va[k], (uint32_t)vb[j]))) {
					res = SWEEP_STOPPED;
					goto out;
				}
			}
			j++;
		}
	}
out:
	WORK_TESTS(tests + ma + mb);
	return res;
}

// ---- the sweep with an active set ordered on a second axis ----------------------
//
// A sweep along one axis tests every pair that overlaps on it, boxes or not.
// Piles exist where every axis has many such pairs and the boxes meet on
// none: a pinwheel of strips across the centre lines (strips long in x
// reaching over strips long in y, and the other way round at the next arm)
// makes m^2 tests for k = 0 on either axis, and splitting the pile by the
// axis each box is thin in does not help, as the two groups cross each other
// on both axes.
//
// So what a sweep along a leaves past its budget goes on with the boxes it
// has passed (the active set: those still reaching the next low face on a)
// kept in a tree over their order by low face on a second axis b. A box asks
// for the active boxes whose low face on b lies at or below its high face
// (a prefix of that order, found by a binary search) and whose high face on
// b reaches its low face: each node of the tree keeps the highest face on b
// below it, so the walk enters only subtrees holding such a box. Boxes the
// sweep has passed on a are dropped where the walk meets them, once each.
// Every box the walk reaches is an answer on a and on b, or dropped: in 2D
// the work is O((m + k) log m), whatever the scene. In 3D the third axis is
// still tested box by box: O((m + k2) log m), k2 the pairs that overlap on
// the two axes swept (the two least shared), which a pile of boxes that
// overlap on any two axes and never on all three makes quadratic: past
// SWEEP_BUDGET such misses a box the rest is streamed (below).
//
// It needs no memory but the sweep's own: the 2m keys' words hold, in
// 32-bit words, the boxes by low face on b, where each box by low face on a
// sits in that order, and the tree (2m - 1 nodes, each the sortable key of
// a high face, 0 for none) laid out in pre-order, a node's left child next
// to it and its right child past the left subtree.

/// A face's sortable key, -0 taken as +0 (box tests compare floats, -0 == +0).
static inline uint32_t sweep_key0(float f)
{
	if (f == 0.0f) f = 0.0f;
	return sweep_key(f);
}

/// The boxes of one list in the active-set sweep: box[p] is the list index
/// of the p-th by low face on b, pos[r] where the r-th by low face on a sits
/// in box, top the tree over box.
typedef struct sweep_set {
	const sweep_list *l;
	const uint32_t *box, *pos;
	uint32_t *top;
	uint32_t m;
} sweep_set;

/// Where a walk is, and what it found.
typedef struct sweep_ask {
	const box_t *x;  ///< the box asking
	uint32_t xi;     ///< its index in its list
	bool x_first;    ///< report (x, found) rather than (found, x)
	bool stop;       ///< the callback said stop
	int a, b;        ///< the axis swept, the axis the tree orders
	uint32_t reach;  ///< sweep_key0 of x's low face on b
	uint64_t steps;  ///< nodes visited and searched: the work
	uint64_t misses; ///< boxes met on a and b and not as boxes (3D: apart on the third axis)
	sweep_pair_fn *fn;
	void *ctx;
} sweep_ask;

/// Leaf i of s's tree (position p, its low face on b at most x's high
/// face, its high face on b at least x's low face): x against its box, or
/// the box dropped when x has passed it on a. Returns the leaf's new key.
static uint32_t sweep_ask_leaf(const sweep_set *s, sweep_ask *w, uint32_t i, uint32_t p)
{
	const box_t *y = sweep_box(s->l, s->box[p]);
	if (y->max[w->a] < w->x->min[w->a]) return s->top[i] = 0; // passed: never met again
	if (!box_overlap(w->x, y))
		w->misses++;
	else if (!(w->x_first ? w->fn(w->ctx, w->xi, s->box[p]) : w->fn(w->ctx, s->box[p], w->xi)))
		w->stop = true;
	return s->top[i];
}

/// Node i of s's tree (positions [lo, hi), every low face on b at most x's
/// high face): x against every active box there whose high face on b
/// reaches x's low face. Returns the node's new highest face.
static uint32_t sweep_ask_all(const sweep_set *s, sweep_ask *w, uint32_t i, uint32_t lo, uint32_t hi)
{
	if (s->top[i] < w->reach || w->stop) return s->top[i];
	w->steps++;
	if (hi - lo == 1) return sweep_ask_leaf(s, w, i, lo);
	uint32_t mid = lo + (hi - lo) / 2;
	uint32_t l = sweep_ask_all(s, w, i + 1, lo, mid), r = sweep_ask_all(s, w, i + 2 * (mid - lo), mid, hi);
	return s->top[i] = l > r ? l : r;
}

/// x (index xi of its list) against the active boxes of s; false when the
/// callback said stop. One descent finds where the low faces on b pass x's
/// high face (a binary search over the tree's halves); every left half it
/// passes lies below that, whole (sweep_ask_all).
static bool sweep_set_ask(const sweep_set *s, sweep_ask *w, const box_t *x, uint32_t xi, bool x_first)
{
	w->x = x;
	w->xi = xi;
	w->x_first = x_first;
	w->reach = sweep_key0(x->min[w->b]);
	uint32_t path[64], half[64], i = 0, lo = 0, hi = s->m;
	int depth = 0;
	while (hi - lo > 1 && s->top[i] >= w->reach && !w->stop) {
		uint32_t mid = lo + (hi - lo) / 2;
		path[depth] = i;
		half[depth++] = mid - lo;
		w->steps++;
		if (sweep_box(s->l, s->box[mid])->min[w->b] <= x->max[w->b]) {
			if (s->top[i + 1] >= w->reach) sweep_ask_all(s, w, i + 1, lo, mid);
			i += 2 * (mid - lo);
			lo = mid;
		} else {
			i += 1;
			hi = mid;
		}
	}
	if (hi - lo == 1 && s->top[i] >= w->reach && !w->stop && sweep_box(s->l, s->box[lo])->min[w->b] <= x->max[w->b])
		sweep_ask_leaf(s, w, i, lo);
	// The highest faces again up the path, below which boxes may have gone.
	while (depth-- > 0) {
		uint32_t n = path[depth], l = s->top[n + 1], r = s->top[n + 2 * half[depth]];
		s->top[n] = l > r ? l : r;
	}
	return !w->stop;
}

/// The r-th box by low face on a joins s's active set: its high face on b
/// raises the tree's nodes down to its leaf.
static void sweep_set_put(const sweep_set *s, sweep_ask *w, uint32_t r)
{
	uint32_t p = s->pos[r], key = sweep_key0(sweep_box(s->l, s->box[p])->max[w->b]);
	uint32_t i = 0, lo = 0, hi = s->m;
	for (;;) {
		w->steps++;
		if (s->top[i] < key) s->top[i] = key;
		if (hi - lo == 1) break;
		uint32_t mid = lo + (hi - lo) / 2;
		if (p < mid) {
			i += 1;
			hi = mid;
		} else {
			i += 2 * (mid - lo);
			lo = mid;
		}
	}
}

/// The low face on a of the r-th box by low face on a.
static inline float sweep_set_low(const sweep_set *s, int a, uint32_t r)
{
	return sweep_box(s->l, s->box[s->pos[r]])->min[a];
}

/// ranks r[0..m) (list indices idx[r]) sorted by the low face on b, through
/// tmp: the radix sort of sweep_sort with the keys read from the boxes.
static void sweep_sort_ranks(const sweep_list *l, const uint32_t *idx, uint32_t *r, uint32_t *tmp, uint32_t m, int b)
{
	for (uint32_t k = 0; k < m; ++k) r[k] = k;
	for (int pass = 0; pass < 4; ++pass) {
		int shift = 8 * pass;
		uint32_t count[256] = {0};
		for (uint32_t k = 0; k < m; ++k) count[(sweep_key(sweep_box(l, idx[r[k]])->min[b]) >> shift) & 255u]++;
		uint32_t sum = 0;
		for (int c = 0; c < 256; ++c) {
			uint32_t n = count[c];
			count[c] = sum;
			sum += n;
		}
		for (uint32_t k = 0; k < m; ++k) tmp[count[(sweep_key(sweep_box(l, idx[r[k]])->min[b]) >> shift) & 255u]++] = r[k];
		uint32_t *x = r;
		r = tmp;
		tmp = x;
	}
}

/// A set of the m boxes idx[0..m) of l (in order on a): box and pos filled,
/// sorted through tmp[0..m) (idx and tmp spent after), its tree at top (2m - 1
/// words, emptied by sweep_set_clear once the memory under it is spent).
static sweep_set sweep_set_make(const sweep_list *l, const uint32_t *idx, uint32_t m, int b, uint32_t *box,
                                uint32_t *pos, uint32_t *tmp, uint32_t *top)
{
	sweep_sort_ranks(l, idx, box, tmp, m, b); // four passes: the ranks end in box
	for (uint32_t p = 0; p < m; ++p) pos[box[p]] = p;
	for (uint32_t p = 0; p < m; ++p) box[p] = idx[box[p]];
	return (sweep_set){l, box, pos, top, m};
}

static void sweep_set_clear(const sweep_set *s)
{
	if (s->m) memset(s->top, 0, (2 * (size_t)s->m - 1) * sizeof *s->top);
}

/// Keys v[from..from + m) (code of a box: key << 32 | index) as their
/// indices, into 32-bit words w[to..to + m) of the same memory; to <= from.
static void sweep_to_index(uint64_t *v, size_t from, uint32_t m, size_t to)
{
	for (uint32_t k = 0; k < m; ++k) {
		uint64_t code;
		memcpy(&code, (const char *)v + (from + k) * sizeof code, sizeof code);
		uint32_t i = (uint32_t)code;
		memcpy((char *)v + (to + k) * sizeof i, &i, sizeof i);
	}
}

/// The second axis: the least shared of the others.
static int sweep_axis_second(const double share[DIM], int a)
{
	int best = -1;
	for (int d = 0; d < DIM; ++d)
		if (d != a && (best < 0 || share[d] < share[best])) best = d;
	return best;
}

// ---- 3D: the rest split as a segment tree, axis by axis -------------------------
//
// In 3D the active set's third axis is tested box by box, and a pile whose
// boxes overlap on two axes and never on three (plates stacked on one axis,
// rods along one axis crossing rods along another, each stack on its own
// pair of axes so that no choice of the two swept axes dodges them all) makes
// every such test a miss. So what a 3D sweep leaves past its budget goes to
// the streamed segment tree of Zomorodian and Edelsbrunner ("Fast software
// for box intersections", 2002), which needs no memory but two arrays of
// indices, reordered in place.
//
// On an axis d the boxes are ordered by (low face, index) (two lists: the
// second's indices above the first's), so that of two boxes overlapping on d
// exactly one, the holder, comes first, and the other's low face lies in the
// holder's interval. st_run(I, P, d) reports the pairs of a holder in I and
// a box of P whose low face on d lies in the holder's interval, given that
// every pair of I x P overlaps on the axes above d. It splits the points P
// at a median into two halves of the segment [lo, hi) they lie in, as a
// segment tree would; the intervals spanning the whole segment meet every
// point on d, so their pairs with P go down one axis, with either side as
// the holder there (on the lowest axis they are all pairs: reported
// straight away); an interval that meets a half but does not span the
// segment goes down into that half. A small node tests its boxes pair by
// pair; a level's first node whose sets a sort and sweep on some axis would
// test in few pairs a box (counted first, by binary searches) is swept.
// An interval spans or goes into at most two nodes a level, so in 3D the
// work is O(m log^3 m + k) for any pile, within the sweep's own memory.
// (2D keeps the active set, which is O((m + k) log m) there.)
#if DIM == 3

/// A node with at most this many intervals or points tests pair by pair.
#define STREAM_BASE 24

/// Past this depth of nesting (never reached with the medians below, which
/// halve within 1/8 save for odds of about 1e-8) a node tests pair by pair.
#define STREAM_DEPTH 200

/// A new problem (a level's first node) whose sweep on some axis tests at
/// most this many pairs a box is swept instead: sorted on that axis, each
/// box against the other set's boxes that start within it (stream_scan).
#define STREAM_SCAN 8

/// A new problem, and a node about to test more than this many pairs a box
/// pair by pair, first drops the boxes that miss the other set's bounding
/// box (stream_trim): of rods long on x, crossing rods long on y and apart
/// from them on z, a node's spanning rods often lie in one corner that most
/// of its points miss. (3D rods at n = 20000 made 36 n log2 n box tests
/// before it, 19 after.)
#define STREAM_TRIM 4

/// A box's index in the stream: bit 31 says which list.
#define STREAM_SIDE 0x80000000u
#define STREAM_NONE UINT32_MAX

typedef struct sweep_stream {
	const sweep_list *l[2];
	int axis[DIM]; ///< axis[level]: the axes in order, the top level last
	bool stop;
	uint64_t steps; ///< boxes touched and pairs tested: the work
	uint64_t rng;
	/// Scratch for stream_scan's sorts: `room` words at `spare`, apart from
	/// every set a stream_run under way holds (0: sorted in place, by a heap).
	/// Whoever starts a run sets it (stream_cross_spare).
	uint32_t *spare;
	uint32_t room;
	sweep_pair_fn *fn;
	void *ctx;
} sweep_stream;

static inline const box_t *stream_box(const sweep_stream *s, uint32_t id)
{
	return sweep_box(s->l[id >> 31], id & ~STREAM_SIDE);
}

/// Box x (index xi) before box y (index yi) on axis d.
static inline bool stream_less(const box_t *x, uint32_t xi, const box_t *y, uint32_t yi, int d)
{
	return x->min[d] < y->min[d] || (x->min[d] == y->min[d] && xi < yi);
}

static void stream_report(sweep_stream *s, uint32_t i, uint32_t j)
{
	if (s->stop) return;
	bool swap = (i & STREAM_SIDE) != 0; // two lists: the first list's box first
	if (!s->fn(s->ctx, (swap ? j : i) & ~STREAM_SIDE, (swap ? i : j) & ~STREAM_SIDE)) s->stop = true;
}

enum { STREAM_SPANS, STREAM_BEFORE, STREAM_LEFT, STREAM_RIGHT };

/// Move the boxes of v[0..n) for which `test` holds (on axis d, segment
/// [lo, hi) split at mid) to the front; returns how many.
static uint32_t stream_part(sweep_stream *s, uint32_t *v, uint32_t n, int test, int d, uint32_t lo, uint32_t mid,
                            uint32_t hi)
{
	const box_t *bl = lo == STREAM_NONE ? NULL : stream_box(s, lo), *bm = stream_box(s, mid);
	const box_t *bh = hi == STREAM_NONE ? NULL : stream_box(s, hi);
	uint32_t k = 0;
	s->steps += n;
	for (uint32_t i = 0; i < n; ++i) {
		const box_t *x = stream_box(s, v[i]);
		bool in;
		switch (test) {
		case STREAM_SPANS: // before every point of the segment, reaching past its last low face
			in = bl && bh && stream_less(x, v[i], bl, lo, d) && bh->min[d] <= x->max[d];
			break;
		case STREAM_BEFORE: in = stream_less(x, v[i], bm, mid, d); break;
		case STREAM_LEFT: // may hold a point of [lo, mid)
			in = stream_less(x, v[i], bm, mid, d) && (!bl || x->max[d] >= bl->min[d]);
			break;
		default: // may hold a point of [mid, hi)
			in = x->max[d] >= bm->min[d] && (!bh || stream_less(x, v[i], bh, hi, d));
			break;
		}
		if (in) {
			uint32_t t = v[k];
			v[k++] = v[i];
			v[i] = t;
		}
	}
	return k;
}

/// A random position in stratum k of `of` equal strata of [0, n) (n >= of,
/// so every stratum holds one).
static uint32_t stream_stratum(sweep_stream *s, uint32_t n, int k, int of)
{
	s->rng ^= s->rng << 13;
	s->rng ^= s->rng >> 7;
	s->rng ^= s->rng << 17;
	uint32_t a = (uint32_t)((uint64_t)n * (uint32_t)k / (uint32_t)of);
	uint32_t b = (uint32_t)((uint64_t)n * (uint32_t)(k + 1) / (uint32_t)of);
	assert(b > a);
	return a + (uint32_t)(s->rng % (b - a));
}

/// A point of p[0..n) (n > STREAM_BASE) near the median on axis d: the
/// median of one random point from each of 15 equal strata.
static uint32_t stream_pivot(sweep_stream *s, const uint32_t *p, uint32_t n, int d)
{
	enum { S = 15 };
	// Every stratum must hold a point (b > a below), so n >= S.
	_Static_assert(STREAM_BASE >= S, "stream_pivot's strata need nodes of at least 15 points");
	uint32_t pick[S];
	for (int k = 0; k < S; ++k) {
		uint32_t x = p[stream_stratum(s, n, k, S)];
		int j = k;
		while (j > 0 && stream_less(stream_box(s, x), x, stream_box(s, pick[j - 1]), pick[j - 1], d)) {
			pick[j] = pick[j - 1];
			j--;
		}
		pick[j] = x;
	}
	s->steps += S;
	return pick[S / 2];
}

/// v[0..n) sorted by low face on axis e (then index): a heap sort, in place.
static void stream_sort(sweep_stream *s, uint32_t *v, uint32_t n, int e)
{
	s->steps += n;
	for (uint32_t end = n, start = n / 2;;) { // heapify, then pop the greatest to the end
		uint32_t root;
		if (start > 0) {
			root = --start;
		} else {
			if (end <= 1) break;
			uint32_t t = v[--end];
			v[end] = v[0];
			v[0] = t;
			root = 0;
		}
		uint32_t x = v[root];
		const box_t *bx = stream_box(s, x);
		for (;;) { // sift x down from root within [0, end)
			uint32_t c = 2 * root + 1;
			if (c >= end) break;
			s->steps++;
			if (c + 1 < end && stream_less(stream_box(s, v[c]), v[c], stream_box(s, v[c + 1]), v[c + 1], e)) c++;
			if (!stream_less(bx, x, stream_box(s, v[c]), v[c], e)) break;
			v[root] = v[c];
			root = c;
		}
		v[root] = x;
	}
}

/// v[0..n) sorted by low face on axis e (ties in any order: stream_scan
/// needs none): a radix sort through the stream's spare words when there
/// are enough, four passes of 8 bits reading the keys from the boxes, else
/// stream_sort. (A small set against a big one sorts both: the heap sort
/// of 33000 rods cost 48M instructions of the 3D rods' 342M at n = 100000.)
static void stream_order(sweep_stream *s, uint32_t *v, uint32_t n, int e)
{
	if (n > s->room) {
		stream_sort(s, v, n, e);
		return;
	}
	uint32_t *from = v, *to = s->spare;
	s->steps += 8 * (uint64_t)n;
	for (int pass = 0; pass < 4; ++pass) {
		int shift = 8 * pass;
		uint32_t count[256] = {0};
		for (uint32_t k = 0; k < n; ++k) count[(sweep_key(stream_box(s, from[k])->min[e]) >> shift) & 255u]++;
		uint32_t sum = 0;
		for (int c = 0; c < 256; ++c) {
			uint32_t m = count[c];
			count[c] = sum;
			sum += m;
		}
		for (uint32_t k = 0; k < n; ++k) to[count[(sweep_key(stream_box(s, from[k])->min[e]) >> shift) & 255u]++] = from[k];
		uint32_t *x = from;
		from = to;
		to = x;
	}
	assert(from == v); // an even number of passes ends where it began
}

/// Box x (index xi) against the boxes of v[from..n) that start within it
/// on axis e (v sorted on e): x holds on axis d when x_holds, else they do.
static void stream_scan_from(sweep_stream *s, const box_t *x, uint32_t xi, const uint32_t *v, uint32_t from,
                             uint32_t n, int e, int d, bool x_holds)
{
	for (uint32_t k = from; k < n && !s->stop; ++k) {
		const box_t *z = stream_box(s, v[k]);
		if (z->min[e] > x->max[e]) break;
		s->steps++;
		if (!box_overlap(x, z)) continue;
		if (x_holds && stream_less(x, xi, z, v[k], d)) stream_report(s, xi, v[k]);
		if (!x_holds && stream_less(z, v[k], x, xi, d)) stream_report(s, v[k], xi);
	}
}

/// The first of v[from..n) (sorted on axis e) starting past f.
static uint32_t stream_past(sweep_stream *s, const uint32_t *v, uint32_t from, uint32_t n, int e, float f)
{
	while (from < n) {
		s->steps++;
		uint32_t mid = from + (n - from) / 2;
		if (stream_box(s, v[mid])->min[e] > f)
			n = mid;
		else
			from = mid + 1;
	}
	return from;
}

/// Sorted on axis e, whether the sweep of stream_scan tests at most `most`
/// pairs: the same walk, counting each box's run by a binary search.
static bool stream_scan_pays(sweep_stream *s, const uint32_t *iv, uint32_t ni, const uint32_t *pv, uint32_t np, int e,
                             uint64_t most)
{
	uint64_t tests = 0;
	for (uint32_t i = 0, j = 0; i < ni && j < np && tests <= most;) {
		const box_t *x = stream_box(s, iv[i]), *y = stream_box(s, pv[j]);
		if (x->min[e] <= y->min[e])
			tests += stream_past(s, pv, j, np, e, x->max[e]) - j, i++;
		else
			tests += stream_past(s, iv, i, ni, e, y->max[e]) - i, j++;
	}
	return tests <= most;
}

/// stream_run's pairs by a sweep on axis e, if it tests at most STREAM_SCAN
/// pairs a box (iv and pv left sorted on e either way): false if not.
static bool stream_scan(sweep_stream *s, uint32_t *iv, uint32_t ni, uint32_t *pv, uint32_t np, int d, int e)
{
	stream_order(s, iv, ni, e);
	stream_order(s, pv, np, e);
	if (!stream_scan_pays(s, iv, ni, pv, np, e, STREAM_SCAN * ((uint64_t)ni + np))) return false;
	uint32_t i = 0, j = 0;
	// The lower low face next (a holder first on ties), against the other
	// set's boxes from its cursor on, as sweep_run_cross does.
	while (i < ni && j < np && !s->stop) {
		const box_t *x = stream_box(s, iv[i]), *y = stream_box(s, pv[j]);
		if (x->min[e] <= y->min[e])
			stream_scan_from(s, x, iv[i++], pv, j, np, e, d, true);
		else
			stream_scan_from(s, y, pv[j++], iv, i, ni, e, d, false);
	}
	return true;
}

/// The extents, summed, and the bounds of the boxes v[0..n), read once.
typedef struct stream_shape {
	double ext[DIM];
	float lo[DIM], hi[DIM];
} stream_shape;

static void stream_shape_of(sweep_stream *s, const uint32_t *v, uint32_t n, stream_shape *sh)
{
	for (int d = 0; d < DIM; ++d) {
		sh->ext[d] = 0.0;
		sh->lo[d] = INFINITY;
		sh->hi[d] = -INFINITY;
	}
	s->steps += n;
	for (uint32_t k = 0; k < n; ++k) {
		const box_t *x = stream_box(s, v[k]);
		for (int d = 0; d < DIM; ++d) {
			sh->ext[d] += (double)x->max[d] - x->min[d];
			if (x->min[d] < sh->lo[d]) sh->lo[d] = x->min[d];
			if (x->max[d] > sh->hi[d]) sh->hi[d] = x->max[d];
		}
	}
}

/// The axis on which a sweep of a set of ni boxes shaped sa against one of
/// np shaped sp (stream_scan) would test the fewest pairs by the boxes'
/// shares, if at most STREAM_SCAN a box; -1 if none (the shares only guess:
/// stream_scan counts before it sweeps).
static int stream_scan_axis_of(const stream_shape *sa, uint32_t ni, const stream_shape *sp, uint32_t np)
{
	int best = -1;
	double least = STREAM_SCAN * ((double)ni + np);
	for (int d = 0; d < DIM; ++d) {
		double lo = sa->lo[d] < sp->lo[d] ? sa->lo[d] : sp->lo[d], hi = sa->hi[d] > sp->hi[d] ? sa->hi[d] : sp->hi[d];
		double span = hi - lo;
		double est = span > 0.0 ? ((double)np * sa->ext[d] + (double)ni * sp->ext[d]) / span : (double)ni * np;
		if (est <= least) {
			least = est;
			best = d;
		}
	}
	return best;
}

/// stream_scan_axis_of for iv[0..ni) against pv[0..np), each set read once
/// (one list against itself, a pile's own sweep, once in all).
static int stream_scan_axis(sweep_stream *s, const uint32_t *iv, uint32_t ni, const uint32_t *pv, uint32_t np)
{
	stream_shape sa, sp;
	stream_shape_of(s, iv, ni, &sa);
	if (iv == pv && ni == np)
		sp = sa;
	else
		stream_shape_of(s, pv, np, &sp);
	return stream_scan_axis_of(&sa, ni, &sp, np);
}

/// Move the boxes of v[0..n) that meet the bounding box of w[0..m) to the
/// front; returns how many. The others meet no box of w, so a problem of
/// v against w may drop them: a stack of rods whose spanning rods all lie
/// in one corner meets none of the points elsewhere.
static uint32_t stream_trim(sweep_stream *s, uint32_t *v, uint32_t n, const uint32_t *w, uint32_t m)
{
	box_t bb;
	for (int d = 0; d < DIM; ++d) {
		bb.min[d] = INFINITY;
		bb.max[d] = -INFINITY;
	}
	for (uint32_t k = 0; k < m; ++k) {
		const box_t *x = stream_box(s, w[k]);
		for (int d = 0; d < DIM; ++d) {
			if (x->min[d] < bb.min[d]) bb.min[d] = x->min[d];
			if (x->max[d] > bb.max[d]) bb.max[d] = x->max[d];
		}
	}
	uint32_t kept = 0;
	s->steps += (uint64_t)n + m;
	for (uint32_t k = 0; k < n; ++k)
		if (box_overlap(stream_box(s, v[k]), &bb)) {
			uint32_t t = v[kept];
			v[kept++] = v[k];
			v[k] = t;
		}
	return kept;
}

/// Both sets of a problem trimmed to the boxes that meet the other's
/// bounding box, the smaller set's bounds taken first: a few boxes across a
/// plane against a big part then cost one pass over the part (its two runs'
/// trims would each make two), and what is left of the part is small.
static void stream_trim_both(sweep_stream *s, uint32_t *a, uint32_t *na, uint32_t *b, uint32_t *nb)
{
	if (*na <= *nb) {
		*nb = stream_trim(s, b, *nb, a, *na);
		*na = stream_trim(s, a, *na, b, *nb);
	} else {
		*na = stream_trim(s, a, *na, b, *nb);
		*nb = stream_trim(s, b, *nb, a, *na);
	}
}

/// Every pair of a holder in iv[0..ni) and a box of pv[0..np) whose low face
/// on axis[level] lies in the holder's interval there and that overlap as
/// boxes, given that every such pair overlaps on the axes above; the points'
/// keys lie in [lo, hi) (STREAM_NONE: unbounded).
static void stream_run(sweep_stream *s, uint32_t *iv, uint32_t ni, uint32_t *pv, uint32_t np, uint32_t lo, uint32_t hi,
                       int level, int depth)
{
	if (!ni || !np || s->stop) return;
	bool fresh = lo == STREAM_NONE && hi == STREAM_NONE; // a new problem
	if (fresh || (uint64_t)ni * np > STREAM_TRIM * ((uint64_t)ni + np)) {
		ni = stream_trim(s, iv, ni, pv, np);
		np = stream_trim(s, pv, np, iv, ni);
		if (!ni || !np) return;
	}
	int d = s->axis[level > 0 ? level : 0]; // (level >= 0: the clamp only quiets a compiler)
	if (ni <= STREAM_BASE || np <= STREAM_BASE || depth > STREAM_DEPTH) {
		s->steps += (uint64_t)ni * np;
		for (uint32_t i = 0; i < ni && !s->stop; ++i) {
			const box_t *x = stream_box(s, iv[i]);
			for (uint32_t j = 0; j < np; ++j) {
				const box_t *y = stream_box(s, pv[j]);
				if (stream_less(x, iv[i], y, pv[j], d) && box_overlap(x, y)) stream_report(s, iv[i], pv[j]);
			}
		}
		return;
	}
	if (fresh) { // a sweep may do
		int e = stream_scan_axis(s, iv, ni, pv, np);
		if (e >= 0 && stream_scan(s, iv, ni, pv, np, d, e)) return;
	}
	uint32_t mid = stream_pivot(s, pv, np, d);
	uint32_t nm = stream_part(s, iv, ni, STREAM_SPANS, d, lo, mid, hi);
	if (nm && level <= 0) { // every axis met: all pairs
		s->steps += (uint64_t)nm * np;
		for (uint32_t i = 0; i < nm && !s->stop; ++i)
			for (uint32_t j = 0; j < np; ++j) stream_report(s, iv[i], pv[j]);
	} else if (nm) {
		stream_run(s, iv, nm, pv, np, STREAM_NONE, STREAM_NONE, level - 1, depth + 1);
		stream_run(s, pv, np, iv, nm, STREAM_NONE, STREAM_NONE, level - 1, depth + 1);
	}
	// The halves: the median is one of 15 distinct points, so both hold some.
	uint32_t nl = stream_part(s, pv, np, STREAM_BEFORE, d, lo, mid, hi);
	uint32_t *rv = iv + nm, nr = ni - nm;
	uint32_t k = stream_part(s, rv, nr, STREAM_LEFT, d, lo, mid, hi);
	stream_run(s, rv, k, pv, nl, lo, mid, level, depth + 1);
	k = stream_part(s, rv, nr, STREAM_RIGHT, d, lo, mid, hi);
	stream_run(s, rv, k, pv + nl, np - nl, mid, hi, level, depth + 1);
}

/// A stream over lists a and b (b NULL: a among itself), its axes ordered
/// by share, the least shared on top (it parts the most pairs first).
static sweep_stream sweep_stream_make(const sweep_list *a, const sweep_list *b, const double share[DIM],
                                      sweep_pair_fn *fn, void *ctx)
{
	sweep_stream s = {.l = {a, b ? b : a}, .rng = 0x9E3779B97F4A7C15u, .fn = fn, .ctx = ctx};
	for (int d = 0; d < DIM; ++d) s.axis[d] = d;
	for (int i = 1; i < DIM; ++i) // most shared first: the top level is last
		for (int j = i; j > 0 && share[s.axis[j]] > share[s.axis[j - 1]]; --j) {
			int t = s.axis[j];
			s.axis[j] = s.axis[j - 1];
			s.axis[j - 1] = t;
		}
	return s;
}

/// Sets a[0..na) and b[0..nb) of boxes of one list or two (b's then with
/// STREAM_SIDE): their pairs, each holding on the top axis in turn.
static void stream_cross(sweep_stream *s, uint32_t *a, uint32_t na, uint32_t *b, uint32_t nb)
{
	stream_trim_both(s, a, &na, b, &nb);
	stream_run(s, a, na, b, nb, STREAM_NONE, STREAM_NONE, DIM - 1, 0);
	stream_run(s, b, nb, a, na, STREAM_NONE, STREAM_NONE, DIM - 1, 0);
}

/// Copy from[0..n) to to[], keeping the boxes whose high face on axis a is
/// at least `reach` (those that may still meet a box starting there), and
/// adding `side` to each; returns how many.
static uint32_t stream_keep(const sweep_stream *s, const uint32_t *from, uint32_t n, uint32_t *to, int a, float reach,
                            uint32_t side)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < n; ++i)
		if (stream_box(s, from[i] | side)->max[a] >= reach) to[k++] = from[i] | side;
	return k;
}

// ---- 3D: a streamed pile split first, on the plane that cuts fewest -------------
//
// The stream splits its problems at medians of low faces, axis by axis,
// and a box that reaches past a segment goes down both halves until it
// spans one; a family of long boxes that start together (rods long on x,
// all starting near x = 0) goes down one side of every level, and each level
// makes it a new problem to trim, sort and sweep: O(m log^2 m) with a large
// constant (3D rods at n = 20000 cost 13 times the instructions of the
// uniform scene in find_pairs, 60 times under leaves placement). Yet such a
// pile mostly falls apart at one plane: boxes below it (L), above it (R) and
// across it (S), L and R never meeting. So a streamed pile is first split,
// as a kd-tree would with its straddlers kept at the node: pairs(L),
// pairs(R), pairs(S), then S against L and against R (whose trims drop the
// boxes of one that miss the other's bounds: rods long on x, on the x = 500
// plane, leave the families long on y and z to either side and the x rods
// across, apart from both on a third axis). The plane is on the axis that
// leaves fewest across it, at the median of a sample of centres; a split is
// made only if it leaves at least an eighth on either side and at most half
// across, so the parts shrink geometrically, each level partitions all m
// boxes once (O(m log m) in all) and the crosses are what the stream makes
// of them.

/// Piles smaller than this go to the stream whole.
#define STREAM_SPLIT_MIN (4 * SWEEP_MIN)

/// The median of the centres on axis e of one random box from each of 15
/// equal strata of v[0..n) (n >= 15).
static float stream_split_at(sweep_stream *s, const uint32_t *v, uint32_t n, int e)
{
	enum { S = 15 };
	float c[S];
	for (int k = 0; k < S; ++k) {
		const box_t *x = stream_box(s, v[stream_stratum(s, n, k, S)]);
		float f = 0.5f * x->min[e] + 0.5f * x->max[e];
		int j = k;
		for (; j > 0 && c[j - 1] > f; --j) c[j] = c[j - 1];
		c[j] = f;
	}
	s->steps += S;
	return c[S / 2];
}

/// Reorder v[0..n) as the boxes below `at` on axis e, those across it, those
/// above it; nl and nr get how many lie below and above.
static void stream_split_part(sweep_stream *s, uint32_t *v, uint32_t n, int e, float at, uint32_t *nl, uint32_t *nr)
{
	uint32_t lo = 0, i = 0, hi = n; // v[0..lo) below, [lo..i) across, [hi..n) above
	s->steps += n;
	while (i < hi) {
		const box_t *x = stream_box(s, v[i]);
		uint32_t t = v[i];
		if (x->max[e] < at) {
			v[i++] = v[lo];
			v[lo++] = t;
		} else if (x->min[e] > at) {
			v[i] = v[--hi];
			v[hi] = t;
		} else {
			i++;
		}
	}
	*nl = lo;
	*nr = n - hi;
}

/// The axis of a plane that parts the boxes v[0..n) and w[0..m) (m may be
/// 0) leaving at most half across it and an eighth or more on either side,
/// the fewest across of one plane an axis (at the median of a sample of
/// the larger set's centres, put in *at); -1 if none, or too few boxes.
static int stream_split_plane(sweep_stream *s, const uint32_t *v, uint32_t n, const uint32_t *w, uint32_t m,
                              float *at)
{
	uint32_t t = n + m, across = t / 2 + 1, nl[DIM] = {0}, nr[DIM] = {0};
	int best = -1;
	if (t < STREAM_SPLIT_MIN) return -1;
	float f[DIM];
	for (int e = 0; e < DIM; ++e) f[e] = n >= m ? stream_split_at(s, v, n, e) : stream_split_at(s, w, m, e);
	s->steps += t;
	for (uint32_t i = 0; i < t; ++i) {
		const box_t *x = stream_box(s, i < n ? v[i] : w[i - n]);
		for (int e = 0; e < DIM; ++e) {
			nl[e] += x->max[e] < f[e];
			nr[e] += x->min[e] > f[e];
		}
	}
	for (int e = 0; e < DIM; ++e)
		if (nl[e] >= t / 8 && nr[e] >= t / 8 && t - nl[e] - nr[e] < across) {
			across = t - nl[e] - nr[e];
			best = e;
			*at = f[e];
		}
	return best;
}

// ---- 3D: a pile of parallel rods, on a grid of its two thin axes ---------------
//
// A family of parallel rods (all long on one axis, all across one another
// there) is a 2D problem on the two other axes. Split on planes, it goes
// down until a one-axis sweep tests few pairs a box, and the depth that
// takes grows with the family's density (3D rods: a part a level at
// n = 20000, five at 100000, each level a few passes over the part). A
// grid over the two axes of least share, with as many cells as a few boxes
// each, costs O(m + k) for boxes spread evenly: each box goes into the cells
// it covers, each cell tests its boxes pair by pair, and a pair is reported
// only by the cell holding the low corner of its overlap on the two axes
// (the larger low face on each: a point both boxes cover, so both are
// entered there). The cells are shaped like the average box (their sides in
// the ratio of the mean extents), so a box covers about (1 + 1/c)^2 of them.
// The grid is tried only when it stays cheap, or given up for the split:
// its entries must fit the scratch (2m words or more: a pile streamed
// whole lends 3m, so each of three families gets 9 words a box; first
// bounded from the extents, then counted: with 2m, 3D rods at n = 256000
// overflowed it at every level, and find_pairs under loose placement cost
// 858.5M instructions, 223.2M with 9), and its cells' pairs must be at
// most STREAM_GRID_TESTS a box (a cluster crowding a few cells fails that). A pile of boxes long on the grid's axes (the families crossing
// each other, strips of a pinwheel) fails the extents' bound with no pass.

/// Boxes a cell of the grid, were they points.
#define STREAM_GRID 4

/// Most pairs a box the grid's cells may test (pairs found included): the
/// cells hold more boxes as a family grows denser for its boxes' size, and
/// past it the pile is split and each part tried again.
#define STREAM_GRID_TESTS (4 * STREAM_SCAN)

/// One axis of the grid: g cells over [lo, lo + g / inv).
typedef struct stream_grid_axis {
	uint32_t g;
	float lo, inv;
} stream_grid_axis;

/// The cell of coordinate f on a grid axis, clamped to the grid: a float
/// function that never decreases in f, so a point inside a box maps between
/// the cells of the box's faces.
static inline uint32_t stream_grid_at(const stream_grid_axis *a, float f)
{
	float t = (f - a->lo) * a->inv;
	if (!(t > 0.0f)) return 0;
	if (t >= (float)(a->g - 1)) return a->g - 1;
	return (uint32_t)t;
}

/// Every overlapping pair among the boxes v[0..n) of one list, each once,
/// by a grid over the two axes of least share (the essay above), if it
/// stays cheap: false (and nothing reported) if not. v is only read;
/// tmp: `room` words of scratch, the cells' starts and then their entries.
static bool stream_grid_self(sweep_stream *s, const uint32_t *v, uint32_t n, uint32_t *tmp, uint64_t room,
                             const stream_shape *sh)
{
	if (n < STREAM_SPLIT_MIN) return false;
	double share[DIM], span[DIM];
	for (int d = 0; d < DIM; ++d) {
		span[d] = (double)sh->hi[d] - sh->lo[d];
		share[d] = span[d] > 0.0 ? sh->ext[d] / span[d] : INFINITY;
	}
	int u = sweep_axis(share), w = sweep_axis_second(share, u);
	if (share[w] == INFINITY) return false; // flat on two axes: no grid spreads it
	// Cells shaped like the mean box: g_u / g_w = share_w / share_u, g_u g_w = cells.
	double cells = (double)(n / STREAM_GRID), gu = sqrt(cells * (share[w] + 1e-9) / (share[u] + 1e-9));
	gu = gu < 1.0 ? 1.0 : gu > cells ? cells : gu;
	double gw = cells / gu < 1.0 ? 1.0 : cells / gu;
	stream_grid_axis au = {(uint32_t)gu, sh->lo[u], 0.0f}, aw = {(uint32_t)gw, sh->lo[w], 0.0f};
	uint64_t g = (uint64_t)au.g * aw.g;
	if (g < 4) return false;
	au.inv = (float)(au.g / span[u]);
	aw.inv = (float)(aw.g / span[w]);
	uint32_t *start = tmp, *ent = tmp + g + 1;
	if (g + 1 >= room) return false;
	room -= g + 1;
	// A box covers at least its extent over a cell's side of cells on each axis.
	if (sh->ext[u] * au.inv > (double)room || sh->ext[w] * aw.inv > (double)room) return false;
	memset(start, 0, (g + 1) * sizeof *start);
	uint64_t entries = 0;
	s->steps += n + g;
	for (uint32_t k = 0; k < n; ++k) {
		const box_t *x = stream_box(s, v[k]);
		uint32_t u0 = stream_grid_at(&au, x->min[u]), u1 = stream_grid_at(&au, x->max[u]);
		uint32_t w0 = stream_grid_at(&aw, x->min[w]), w1 = stream_grid_at(&aw, x->max[w]);
		entries += (uint64_t)(u1 - u0 + 1) * (w1 - w0 + 1);
		if (entries > room) return false;
		for (uint32_t i = u0; i <= u1; ++i)
			for (uint32_t j = w0; j <= w1; ++j) start[i * aw.g + j + 1]++;
	}
	// The cells' pairs, bounded as a sweep's; then the starts summed.
	uint64_t tests = 0;
	for (uint64_t c = 1; c <= g; ++c) {
		tests += (uint64_t)start[c] * (start[c] - 1) / 2;
		start[c] += start[c - 1];
	}
	s->steps += entries;
	if (tests > STREAM_GRID_TESTS * (uint64_t)n) return false;
	s->steps += entries + tests;
	for (uint32_t k = 0; k < n; ++k) { // each box into its cells: start[c] ends at the cell's end
		const box_t *x = stream_box(s, v[k]);
		uint32_t u0 = stream_grid_at(&au, x->min[u]), u1 = stream_grid_at(&au, x->max[u]);
		uint32_t w0 = stream_grid_at(&aw, x->min[w]), w1 = stream_grid_at(&aw, x->max[w]);
		for (uint32_t i = u0; i <= u1; ++i)
			for (uint32_t j = w0; j <= w1; ++j) ent[start[i * aw.g + j]++] = v[k];
	}
	// Cell c's entries are now ent[start[c - 1] .. start[c]) (start[-1] = 0).
	for (uint64_t c = 0; c < g && !s->stop; ++c) {
		uint32_t from = c ? start[c - 1] : 0, to = start[c];
		for (uint32_t i = from; i < to; ++i) {
			const box_t *x = stream_box(s, ent[i]);
			for (uint32_t j = i + 1; j < to; ++j) {
				const box_t *y = stream_box(s, ent[j]);
				if (!box_overlap(x, y)) continue;
				// The overlap's low corner on u and w: reported where it lies.
				uint32_t cu = stream_grid_at(&au, x->min[u] > y->min[u] ? x->min[u] : y->min[u]);
				uint32_t cw = stream_grid_at(&aw, x->min[w] > y->min[w] ? x->min[w] : y->min[w]);
				if ((uint64_t)cu * aw.g + cw == c) stream_report(s, ent[i], ent[j]);
			}
		}
	}
	return true;
}

/// Every overlapping pair among the boxes v[0..n) of one list, by a sweep
/// along the axis of least share, if it tests at most STREAM_SCAN pairs a
/// box (counted first, as stream_scan does; v left sorted on it): false if
/// not. sh: v's shape (stream_shape_of); tmp: 2n words of scratch. A pile
/// split into parts thin on some axis ends here, sorted once, not twice as
/// holders and points.
static bool stream_sweep_self(sweep_stream *s, uint32_t *v, uint32_t n, uint32_t *tmp, const stream_shape *sh)
{
	int e = stream_scan_axis_of(sh, n, sh, n);
	if (e < 0) return false;
	// A radix sort through tmp (v holds indices of the first list, and ties
	// on a face need no order: each pair is tested from its first box).
	sweep_sort_ranks(s->l[0], v, tmp, tmp + n, n, e); // four passes: the ranks end in tmp
	for (uint32_t p = 0; p < n; ++p) tmp[n + p] = v[tmp[p]];
	memcpy(v, tmp + n, n * sizeof *v);
	s->steps += 4 * (uint64_t)n;
	// Counted by walking each box's run (no box tests), so a count that
	// passes the most stops after at most that many steps.
	uint64_t tests = 0, most = STREAM_SCAN * 2 * (uint64_t)n;
	for (uint32_t i = 0; i < n && tests <= most; ++i) {
		float reach = stream_box(s, v[i])->max[e];
		for (uint32_t j = i + 1; j < n && stream_box(s, v[j])->min[e] <= reach && tests <= most; ++j) tests++;
	}
	s->steps += n + tests;
	if (tests > most) return false;
	s->steps += tests;
	for (uint32_t i = 0; i < n && !s->stop; ++i) {
		const box_t *x = stream_box(s, v[i]);
		for (uint32_t j = i + 1; j < n; ++j) {
			const box_t *y = stream_box(s, v[j]);
			if (y->min[e] > x->max[e]) break;
			if (box_overlap(x, y)) stream_report(s, v[i], v[j]);
		}
	}
	return true;
}

/// Every overlapping pair among the boxes v[0..n) of one list (the stream's
/// first), each once: swept if that is cheap on some axis, put on a grid
/// if that is (a family of parallel rods), else split on a plane while one
/// leaves little across it, the parts streamed. tmp: `room` words of
/// scratch, 2n or more (a whole part's two copies; the grid's cells and
/// entries take what there is).
static void stream_self(sweep_stream *s, uint32_t *v, uint32_t n, uint32_t *tmp, uint64_t room, int depth)
{
	if (n < 2 || s->stop) return;
	stream_shape sh; // read once for the sweep's estimate and the grid
	stream_shape_of(s, v, n, &sh);
	if (stream_sweep_self(s, v, n, tmp, &sh)) return; // thin on some axis: no split needed
	if (stream_grid_self(s, v, n, tmp, room, &sh)) return; // a family of parallel rods: no split needed
	float at = 0.0f;
	int best = depth < STREAM_DEPTH ? stream_split_plane(s, v, n, NULL, 0, &at) : -1;
	if (best < 0) { // no plane parts it: the stream, holder and point sets both v
		memcpy(tmp, v, n * sizeof *tmp);
		memcpy(tmp + n, v, n * sizeof *tmp);
		s->spare = v; // its sorts' scratch; the set goes back after
		s->room = n;
		stream_run(s, tmp, n, tmp + n, n, STREAM_NONE, STREAM_NONE, DIM - 1, depth);
		memcpy(v, tmp, n * sizeof *v);
		return;
	}
	uint32_t nl, nr;
	stream_split_part(s, v, n, best, at, &nl, &nr);
	uint32_t nm = n - nl - nr, *l = v, *m = v + nl, *r = v + nl + nm;
	assert(nl >= n / 8 && nr >= n / 8);
	// Each part keeps its own range of v, so the crosses below see the parts whole.
	stream_self(s, l, nl, tmp, room, depth + 1);
	stream_self(s, r, nr, tmp, room, depth + 1);
	stream_self(s, m, nm, tmp, room, depth + 1);
	s->spare = tmp; // the parts' own passes are done: tmp is free
	s->room = 2 * n;
	if (!s->stop) stream_cross(s, m, nm, l, nl);
	if (!s->stop) stream_cross(s, m, nm, r, nr);
}

/// Every overlapping pair of a box of a[0..na) and one of b[0..nb), each
/// once: split on a plane (stream_split_plane, over both sets) while one
/// leaves little across it. Below against below and above against above
/// are split again; what lies across meets the other set's every part
/// through the stream whole, so each level's work stays within na + nb
/// plus what lies across.
static void stream_cross_split(sweep_stream *s, uint32_t *a, uint32_t na, uint32_t *b, uint32_t nb, int depth)
{
	stream_trim_both(s, a, &na, b, &nb);
	if (!na || !nb || s->stop) return;
	float at = 0.0f;
	// A sweep on some axis that looks cheap (the stream's first resort) is
	// not split.
	int e = stream_scan_axis(s, a, na, b, nb) < 0 && depth < STREAM_DEPTH ? stream_split_plane(s, a, na, b, nb, &at) : -1;
	if (e < 0) {
		stream_cross(s, a, na, b, nb);
		return;
	}
	uint32_t al, ar, bl, br;
	stream_split_part(s, a, na, e, at, &al, &ar);
	stream_split_part(s, b, nb, e, at, &bl, &br);
	uint32_t am = na - al - ar, bm = nb - bl - br;
	stream_cross_split(s, a, al, b, bl, depth + 1);
	stream_cross_split(s, a + al + am, ar, b + bl + bm, br, depth + 1);
	if (!s->stop) stream_cross(s, a, al, b + bl, bm);
	if (!s->stop) stream_cross(s, a + al + am, ar, b + bl, bm);
	if (!s->stop) stream_cross(s, a + al, am, b, nb);
}
#endif

/// Whether an active-set sweep that has passed r boxes goes on streamed: in
/// 3D, past STREAM_BUDGET boxes a box met on the two swept axes and not as
/// boxes (2D never meets such a box). Each miss costs a walk of the tree, a
/// few times what the stream (split first) spends a box, and every box the
/// set has passed and keeps is crossed with the rest: the budget is one a
/// box (3D rods at n = 20000 in find_pairs: 56.2M instructions with 8, 51.3M
/// with 1 under loose placement; 53.8M and 45.1M under leaves).
#define STREAM_BUDGET 1
#define SWEEP_SET_OVER(w, r) (DIM == 3 && (w)->misses > STREAM_BUDGET * ((uint64_t)(r) + SWEEP_MIN))

/// What sweep_run_self left: the boxes v[at..m) of l (sorted on a) among
/// themselves, with the active set ordered on b. keys: the sweep's 2m words.
static bool sweep_set_self(const sweep_list *l, uint64_t *keys, uint32_t at, uint32_t m, int a, int b,
                           const double share[DIM], sweep_pair_fn *fn, void *ctx)
{
	uint32_t k = m - at, *w = (uint32_t *)(void *)keys; // 4m words of 32 bits
	if (k < 2) return true;
	sweep_to_index(keys, at, k, 0);
	memcpy(w + 3 * (size_t)k, w, k * sizeof *w); // the boxes in order on a, out of the sort's way
	sweep_set s = sweep_set_make(l, w + 3 * (size_t)k, k, b, w, w + k, w + 2 * (size_t)k, w + 2 * (size_t)k);
	sweep_set_clear(&s);
	sweep_ask wk = {.a = a, .b = b, .fn = fn, .ctx = ctx};
	bool go = true;
	uint32_t r = 0;
	for (; r < k && go && !SWEEP_SET_OVER(&wk, r); ++r) {
		uint32_t p = s.pos[r];
		go = sweep_set_ask(&s, &wk, sweep_box(l, s.box[p]), s.box[p], false);
		sweep_set_put(&s, &wk, r);
	}
	WORK_TESTS(wk.steps + k);
#if DIM == 3
	if (go && r < k) {
		// Streamed on: the boxes from r on among themselves and against
		// those before r that reach them (the pairs among those before r
		// are reported). The order on a goes past the sets, into the tree.
		// (The order at w[3k..4k), past the tree's last word: w[0..3k)
		// is stream_self's, n words and 2n of scratch.)
		uint32_t *o = w + 3 * (size_t)k, n = k - r;
		for (uint32_t q = 0; q < k; ++q) o[q] = s.box[s.pos[q]];
		sweep_stream st = sweep_stream_make(l, NULL, share, fn, ctx);
		memcpy(w, o + r, n * sizeof *w);
		stream_self(&st, w, n, w + n, 2 * (uint64_t)n, 0);
		uint32_t np = stream_keep(&st, o, r, w, a, sweep_box(l, o[r])->min[a], 0);
		memcpy(w + np, o + r, n * sizeof *w);
		st.spare = w + np + n; // past the sets, the order o spent: 4k words in all
		st.room = 4 * k - np - n;
		stream_cross_split(&st, w, np, w + np, n, 0);
		WORK_TESTS(st.steps + 2 * (uint64_t)k);
		go = !st.stop;
	}
#else
	(void)share;
#endif
	return go;
}

/// What sweep_run_cross left: boxes va[at[0]..ma) of a against vb[at[1]..mb)
/// of b (vb = va + ma, sorted on axis a), with the active sets ordered on
/// axis b. keys: the sweep's 2 (ma + mb) words.
static bool sweep_set_cross(const sweep_list *la, const sweep_list *lb, uint64_t *keys, const uint32_t at[2],
                            uint32_t ma, uint32_t mb, int a, int b, const double share[DIM], sweep_pair_fn *fn,
                            void *ctx)
{
	uint32_t ka = ma - at[0], kb = mb - at[1], *w = (uint32_t *)(void *)keys;
	size_t k = (size_t)ka + kb;
	if (!ka || !kb) return true;
	sweep_to_index(keys, at[0], ka, 0);
	sweep_to_index(keys, (size_t)ma + at[1], kb, ka);
	memcpy(w + 3 * k, w, k * sizeof *w);
	sweep_set sa = sweep_set_make(la, w + 3 * k, ka, b, w, w + k, w + k + ka, w + 2 * k);
	sweep_set sb = sweep_set_make(lb, w + 3 * k + ka, kb, b, w + ka, w + k + ka, w + 2 * k, w + 2 * k + 2 * (size_t)ka);
	sweep_set_clear(&sa);
	sweep_set_clear(&sb);
	sweep_ask wk = {.a = a, .b = b, .fn = fn, .ctx = ctx};
	bool go = true;
	uint32_t i = 0, j = 0;
	// The lower low face on a next (a first on ties): it meets the other
	// list's boxes passed so far, then joins its own list's set.
	while (go && (i < ka || j < kb) && !SWEEP_SET_OVER(&wk, i + j)) {
		if (j == kb || (i < ka && sweep_set_low(&sa, a, i) <= sweep_set_low(&sb, a, j))) {
			uint32_t p = sa.pos[i];
			go = sweep_set_ask(&sb, &wk, sweep_box(la, sa.box[p]), sa.box[p], true);
			sweep_set_put(&sa, &wk, i++);
		} else {
			uint32_t p = sb.pos[j];
			go = sweep_set_ask(&sa, &wk, sweep_box(lb, sb.box[p]), sb.box[p], false);
			sweep_set_put(&sb, &wk, j++);
		}
	}
	WORK_TESTS(wk.steps + k);
#if DIM == 3
	if (go && (i < ka || j < kb)) {
		// Streamed on: what is left of a against all of b that reaches it,
		// and what is left of b against what came before of a that reaches
		// it (the pairs of those before i and j are reported).
		uint32_t *oa = w + 2 * k, *ob = oa + ka, n;
		for (uint32_t q = 0; q < ka; ++q) oa[q] = sa.box[sa.pos[q]];
		for (uint32_t q = 0; q < kb; ++q) ob[q] = sb.box[sb.pos[q]];
		sweep_stream st = sweep_stream_make(la, lb, share, fn, ctx);
		st.spare = w + 3 * k; // past the sets (w[0..k)) and the orders (w[2k..3k))
		st.room = (uint32_t)k;
		if (i < ka) {
			memcpy(w, oa + i, (ka - i) * sizeof *w);
			n = stream_keep(&st, ob, j, w + ka - i, a, sweep_box(la, oa[i])->min[a], STREAM_SIDE);
			n += stream_keep(&st, ob + j, kb - j, w + ka - i + n, a, -INFINITY, STREAM_SIDE);
			stream_cross(&st, w, ka - i, w + ka - i, n);
		}
		if (j < kb && !st.stop) {
			n = stream_keep(&st, oa, i, w, a, sweep_box(lb, ob[j])->min[a], 0);
			uint32_t nb = stream_keep(&st, ob + j, kb - j, w + n, a, -INFINITY, STREAM_SIDE);
			stream_cross(&st, w, n, w + n, nb);
		}
		WORK_TESTS(st.steps + 2 * k);
		go = !st.stop;
	}
#else
	(void)share;
#endif
	return go;
}

#if DIM == 3
/// Whether a 3D pile of m boxes with these shares (one list, or two to
/// cross) goes to the stream whole, split on planes first, its sweeps skipped: when a sweep on the least shared axis would meet more
/// than SWEEP_BUDGET boxes a box (its budget would stop it after the first
/// few, each of which meets them all) and the most shared axis is not
/// shared by most pairs, so the active set on the two others would miss on
/// it as often as not, yet shared by many (3D crossing rods: a third of
/// the boxes long on each axis). A pile long on one axis (a pinwheel's
/// strips) keeps the active set, which misses little there; so does a
/// dense pile of small boxes, no axis shared by an eighth of them (the
/// packed tree's walk of such a pile, pk_thin, is kept as it was). (3D rods, loose, find_pairs at n =
/// 64000: the sweeps and the hand-over to the stream of what they left were
/// half of 111.4M instructions.)
static bool sweep_streams_whole(const double share[DIM], uint32_t m)
{
	int most = 0;
	for (int d = 1; d < DIM; ++d)
		if (share[d] > share[most]) most = d;
	return m >= STREAM_SPLIT_MIN && share[sweep_axis(share)] > SWEEP_BUDGET && share[most] < 0.5 * m &&
	       share[most] >= 0.125 * m;
}
#endif

/// Every overlapping pair within list a, each once. keys holds 2 a->n words.
static bool sweep_self(const sweep_list *a, uint64_t *keys, sweep_pair_fn *fn, void *ctx)
{
	double share[DIM];
	sweep_shares(a, NULL, share);
	int axis = sweep_axis(share);
	uint32_t m = a->n, at = 0;
#if DIM == 3
	if (sweep_streams_whole(share, m)) {
		uint32_t *w = (uint32_t *)(void *)keys; // 4m words: the pile, and stream_self's 2m of scratch
		for (uint32_t i = 0; i < m; ++i) w[i] = i;
		sweep_stream st = sweep_stream_make(a, NULL, share, fn, ctx);
		stream_self(&st, w, m, w + m, 3 * (uint64_t)m, 0);
		WORK_TESTS(st.steps + m);
		return !st.stop;
	}
#endif
	sweep_fill(a, axis, keys, keys + m);
	int res = sweep_run_self(a, keys, m, axis, SWEEP_BUDGET, &at, fn, ctx);
	if (res != SWEEP_OVER) return res == SWEEP_DONE;
	return sweep_set_self(a, keys, at, m, axis, sweep_axis_second(share, axis), share, fn, ctx);
}

/// Every overlapping pair of a box of a and a box of b, each once. keys
/// holds 2 (a->n + b->n) words.
static bool sweep_cross(const sweep_list *a, const sweep_list *b, uint64_t *keys, sweep_pair_fn *fn, void *ctx)
{
	double share[DIM];
	sweep_shares(a, b, share);
	int axis = sweep_axis(share);
	uint32_t ma = a->n, mb = b->n, at[2] = {0, 0};
#if DIM == 3
	if (sweep_streams_whole(share, ma + mb)) {
		uint32_t *w = (uint32_t *)(void *)keys, m = ma + mb; // 4m words: both sets, then the stream's scratch
		for (uint32_t i = 0; i < ma; ++i) w[i] = i;
		for (uint32_t j = 0; j < mb; ++j) w[ma + j] = j | STREAM_SIDE;
		sweep_stream st = sweep_stream_make(a, b, share, fn, ctx);
		st.spare = w + m;
		st.room = 3 * m;
		stream_cross_split(&st, w, ma, w + ma, mb, 0);
		WORK_TESTS(st.steps + m);
		return !st.stop;
	}
#endif
	uint64_t *tmp = keys + ma + mb;
	sweep_fill(a, axis, keys, tmp);
	sweep_fill(b, axis, keys + ma, tmp);
	int res = sweep_run_cross(a, keys, ma, b, keys + ma, mb, axis, SWEEP_BUDGET, at, fn, ctx);
	if (res != SWEEP_OVER) return res == SWEEP_DONE;
	return sweep_set_cross(a, b, keys, at, ma, mb, axis, sweep_axis_second(share, axis), share, fn, ctx);
}

#endif

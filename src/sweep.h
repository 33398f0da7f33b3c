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
// 2D costs O((m + k) log m) for any pile.
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
// overlap on any two axes and never on all three still makes quadratic.
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
	const box_t *x;    ///< the box asking
	uint32_t xi;       ///< its index in its list
	bool x_first;      ///< report (x, found) rather than (found, x)
	bool stop;         ///< the callback said stop
	int a, b;          ///< the axis swept, the axis the tree orders
	uint32_t reach;    ///< sweep_key0 of x's low face on b
	uint64_t steps;    ///< nodes visited and searched: the work
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
	if (box_overlap(w->x, y) && !(w->x_first ? w->fn(w->ctx, w->xi, s->box[p]) : w->fn(w->ctx, s->box[p], w->xi)))
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

/// What sweep_run_self left: the boxes v[at..m) of l (sorted on a) among
/// themselves, with the active set ordered on b. keys: the sweep's 2m words.
static bool sweep_set_self(const sweep_list *l, uint64_t *keys, uint32_t at, uint32_t m, int a, int b,
                           sweep_pair_fn *fn, void *ctx)
{
	uint32_t k = m - at, *w = (uint32_t *)(void *)keys; // 4m words of 32 bits
	if (k < 2) return true;
	sweep_to_index(keys, at, k, 0);
	memcpy(w + 3 * (size_t)k, w, k * sizeof *w); // the boxes in order on a, out of the sort's way
	sweep_set s = sweep_set_make(l, w + 3 * (size_t)k, k, b, w, w + k, w + 2 * (size_t)k, w + 2 * (size_t)k);
	sweep_set_clear(&s);
	sweep_ask wk = {.a = a, .b = b, .fn = fn, .ctx = ctx};
	bool go = true;
	for (uint32_t r = 0; r < k && go; ++r) {
		uint32_t p = s.pos[r];
		go = sweep_set_ask(&s, &wk, sweep_box(l, s.box[p]), s.box[p], false);
		sweep_set_put(&s, &wk, r);
	}
	WORK_TESTS(wk.steps + k);
	return go;
}

/// What sweep_run_cross left: boxes va[at[0]..ma) of a against vb[at[1]..mb)
/// of b (vb = va + ma, sorted on axis a), with the active sets ordered on
/// axis b. keys: the sweep's 2 (ma + mb) words.
static bool sweep_set_cross(const sweep_list *la, const sweep_list *lb, uint64_t *keys, const uint32_t at[2],
                            uint32_t ma, uint32_t mb, int a, int b, sweep_pair_fn *fn, void *ctx)
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
	while (go && (i < ka || j < kb)) {
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
	return go;
}

/// Every overlapping pair within list a, each once. keys holds 2 a->n words.
static bool sweep_self(const sweep_list *a, uint64_t *keys, sweep_pair_fn *fn, void *ctx)
{
	double share[DIM];
	sweep_shares(a, NULL, share);
	int axis = sweep_axis(share);
	uint32_t m = a->n, at = 0;
	sweep_fill(a, axis, keys, keys + m);
	int res = sweep_run_self(a, keys, m, axis, SWEEP_BUDGET, &at, fn, ctx);
	if (res != SWEEP_OVER) return res == SWEEP_DONE;
	return sweep_set_self(a, keys, at, m, axis, sweep_axis_second(share, axis), fn, ctx);
}

/// Every overlapping pair of a box of a and a box of b, each once. keys
/// holds 2 (a->n + b->n) words.
static bool sweep_cross(const sweep_list *a, const sweep_list *b, uint64_t *keys, sweep_pair_fn *fn, void *ctx)
{
	double share[DIM];
	sweep_shares(a, b, share);
	int axis = sweep_axis(share);
	uint32_t ma = a->n, mb = b->n, at[2] = {0, 0};
	uint64_t *tmp = keys + ma + mb;
	sweep_fill(a, axis, keys, tmp);
	sweep_fill(b, axis, keys + ma, tmp);
	int res = sweep_run_cross(a, keys, ma, b, keys + ma, mb, axis, SWEEP_BUDGET, at, fn, ctx);
	if (res != SWEEP_OVER) return res == SWEEP_DONE;
	return sweep_set_cross(a, b, keys, at, ma, mb, axis, sweep_axis_second(share, axis), fn, ctx);
}

#endif

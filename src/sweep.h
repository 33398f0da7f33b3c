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
// SWEEP_BUDGET pairs a box stops and splits what is left (sweep_split).
//
// Sorting is a radix sort of (key << 32 | index): a float's bits, flipped so
// they order as the floats do, are the key. Below SWEEP_MIN boxes (and for two
// lists, below SWEEP_MIN times their sum in pairs) testing pair by pair is
// cheaper than sorting. Memory is the caller's: n slots
// to sort and n more to sort through.
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

/// The spread of a pile's boxes on each axis (max high face - min low face),
/// and the share of each axis (total extent / spread: the expected number of
/// boxes a box meets on it when they are spread evenly; INFINITY without spread).
static void sweep_shares(const sweep_list *a, const sweep_list *b, double share[DIM], double span[DIM])
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
		span[d] = hi[d] - lo[d];
		// No spread at all (every box on one plane): the worst axis.
		share[d] = span[d] > 0.0 ? ext[d] / span[d] : INFINITY;
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

/// Which boxes of a list a split sweep takes (sweep_split): those the
/// interrupted sweep had not reached (code on from_axis at least from), of
/// one group (the axis they are thinnest on against the pile's spread; -1:
/// every group).
typedef struct sweep_part {
	uint64_t from;
	int from_axis;
	int group;
	double span[DIM];
} sweep_part;

static inline int sweep_thin_axis(const box_t *x, const double span[DIM])
{
	int best = 0;
	double best_share = INFINITY;
	for (int d = 0; d < DIM; ++d) {
		double share = span[d] > 0.0 ? ((double)x->max[d] - x->min[d]) / span[d] : INFINITY;
		if (share < best_share) {
			best_share = share;
			best = d;
		}
	}
	return best;
}

/// Fill v with the codes on axis of l's boxes in part (every box without
/// one), sorted through tmp; returns how many.
static uint32_t sweep_fill(const sweep_list *l, const sweep_part *part, int axis, uint64_t *v, uint64_t *tmp)
{
	uint32_t m = 0;
	if (!part) {
		for (; m < l->n; ++m) v[m] = sweep_code(l, m, axis);
		sweep_sort(v, tmp, m);
		return m;
	}
	for (uint32_t i = 0; i < l->n; ++i) {
		if ((sweep_code(l, i, part->from_axis) < part->from ||
		             (part->group >= 0 && sweep_thin_axis(sweep_box(l, i), part->span) != part->group)))
			continue;
		v[m++] = sweep_code(l, i, axis);
	}
	sweep_sort(v, tmp, m);
	return m;
}

/// Called for boxes i of the first list and j of the second (or of the one
/// list) that overlap; false stops the sweep.
typedef bool sweep_pair_fn(void *ctx, uint32_t i, uint32_t j);

enum { SWEEP_DONE, SWEEP_STOPPED, SWEEP_OVER };

/// A sweep tests at most this many pairs a box before it splits what is
/// left (sweep_split).
#define SWEEP_BUDGET 64

/// Sweep sorted v[0..m) of l along axis: every overlapping pair once. Past
/// `budget` tests it stops before box *at (every pair of a box before it
/// reported) and returns SWEEP_OVER.
static int sweep_run_self(const sweep_list *l, const uint64_t *v, uint32_t m, int axis, uint64_t budget,
                          uint32_t *at, sweep_pair_fn *fn, void *ctx)
{
	uint64_t tests = 0;
	for (uint32_t i = 0; i < m; ++i) {
		if (tests > budget) {
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
			if (box_overlap(x, y) && !fn(ctx, (uint32_t)v[i], (uint32_t)v[j])) {
				WORK_TESTS(tests + m);
				return SWEEP_STOPPED;
			}
		}
	}
	WORK_TESTS(tests + m);
	return SWEEP_DONE;
}

/// Sweep sorted va[0..ma) of a against sorted vb[0..mb) of b along axis:
/// every overlapping pair once. Past `budget` tests it stops before boxes
/// at[0] of a and at[1] of b (every pair of a box before them reported) and
/// returns SWEEP_OVER.
static int sweep_run_cross(const sweep_list *a, const uint64_t *va, uint32_t ma, const sweep_list *b,
                           const uint64_t *vb, uint32_t mb, int axis, uint64_t budget, uint32_t at[2],
                           sweep_pair_fn *fn, void *ctx)
{
	uint64_t tests = 0;
	uint32_t i = 0, j = 0;
	int res = SWEEP_DONE;
	// Take the lower low face next; scan the other list from its cursor while
	// boxes start within its reach. Equal low faces: whichever goes first
	// meets the other in its scan, and the other's later scan starts past it.
	while (i < ma && j < mb) {
		if (tests > budget) {
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
				if (box_overlap(x, z) && !fn(ctx, (uint32_t)va[i], (uint32_t)vb[k])) {
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
				if (box_overlap(z, y) && !fn(ctx, (uint32_t)va[k], (uint32_t)vb[j])) {
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

/// The first of sorted v[0..m) whose key passes key.
static uint32_t sweep_upper(const uint64_t *v, uint32_t m, uint32_t key)
{
	uint32_t lo = 0, hi = m;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if ((uint32_t)(v[mid] >> 32) <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/// The boxes of part of a among themselves (b NULL) or against part of b
/// (the groups), swept along the axis where the fewest pairs overlap,
/// counted exactly first (a sort and a binary search a box for each axis):
/// never more tests than the one axis chosen for the whole pile would make
/// on them. v and tmp hold the boxes of both parts.
static int sweep_part_run(const sweep_list *a, const sweep_part *pa, const sweep_list *b, const sweep_part *pb,
                          uint64_t *v, uint64_t *tmp, sweep_pair_fn *fn, void *ctx)
{
	int best = 0;
	uint64_t best_tests = UINT64_MAX;
	uint32_t ma = 0, mb = 0;
	for (int d = 0; d < DIM; ++d) {
		ma = sweep_fill(a, pa, d, v, tmp);
		if (b) mb = sweep_fill(b, pb, d, v + ma, tmp);
		uint64_t tests = 0;
		if (!b) {
			for (uint32_t i = 0; i < ma; ++i)
				tests += sweep_upper(v, ma, sweep_key(sweep_box(a, (uint32_t)v[i])->max[d])) - i - 1;
		} else {
			// All pairs, less those apart on d one way or the other.
			tests = (uint64_t)ma * mb;
			for (uint32_t i = 0; i < ma; ++i)
				tests -= mb - sweep_upper(v + ma, mb, sweep_key(sweep_box(a, (uint32_t)v[i])->max[d]));
			for (uint32_t j = 0; j < mb; ++j)
				tests -= ma - sweep_upper(v, ma, sweep_key(sweep_box(b, (uint32_t)v[ma + j])->max[d]));
		}
		WORK_TESTS(ma + mb);
		if (tests < best_tests) {
			best_tests = tests;
			best = d;
		}
		if (ma == 0 || (b && mb == 0)) return SWEEP_DONE;
	}
	uint32_t at[2];
	if (best != DIM - 1) {
		ma = sweep_fill(a, pa, best, v, tmp);
		if (b) mb = sweep_fill(b, pb, best, v + ma, tmp);
	}
	if (!b) return sweep_run_self(a, v, ma, best, UINT64_MAX, at, fn, ctx);
	return sweep_run_cross(a, v, ma, b, v + ma, mb, best, UINT64_MAX, at, fn, ctx);
}

/// What an interrupted sweep left (part a of list a, among itself or against
/// part b of list b), split by the axis each box is thinnest on (its group)
/// and each pair of groups swept along its own best axis.
///
/// One axis fails a mixed pile: strips long in x and strips long in y, all
/// across one point, overlap on whichever axis the pile is swept. Split, the
/// strips long in x are swept along y among themselves, those long in y
/// along x, and the two groups against each other along the axis that
/// separates them. The split costs a sort per axis and group pair more, and
/// makes no more tests than the interrupted sweep would have (each part takes
/// its least axis, the pile's own among them).
static bool sweep_split(const sweep_list *a, sweep_part pa, const sweep_list *b, sweep_part pb, uint64_t *v,
                        uint64_t *tmp, sweep_pair_fn *fn, void *ctx)
{
	for (int g = 0; g < DIM; ++g)
		for (int h = b ? 0 : g; h < DIM; ++h) {
			pa.group = g;
			pb.group = h;
			int res;
			if (b)
				res = sweep_part_run(a, &pa, b, &pb, v, tmp, fn, ctx);
			else if (g == h)
				res = sweep_part_run(a, &pa, NULL, NULL, v, tmp, fn, ctx);
			else
				res = sweep_part_run(a, &pa, a, &pb, v, tmp, fn, ctx);
			if (res == SWEEP_STOPPED) return false;
		}
	return true;
}

/// Every overlapping pair within list a, each once. v and tmp hold a->n each.
static bool sweep_self(const sweep_list *a, uint64_t *v, uint64_t *tmp, sweep_pair_fn *fn, void *ctx)
{
	double share[DIM], span[DIM];
	sweep_shares(a, NULL, share, span);
	int axis = sweep_axis(share);
	uint32_t m = sweep_fill(a, NULL, axis, v, tmp), at = 0;
	int res = sweep_run_self(a, v, m, axis, (uint64_t)SWEEP_BUDGET * m, &at, fn, ctx);
	if (res != SWEEP_OVER) return res == SWEEP_DONE;
	sweep_part p = {v[at], axis, -1, {0}};
	memcpy(p.span, span, sizeof span);
	return sweep_split(a, p, NULL, p, v, tmp, fn, ctx);
}

/// Every overlapping pair of a box of a and a box of b, each once. v and tmp
/// hold a->n + b->n each.
static bool sweep_cross(const sweep_list *a, const sweep_list *b, uint64_t *v, uint64_t *tmp, sweep_pair_fn *fn,
                        void *ctx)
{
	double share[DIM], span[DIM];
	sweep_shares(a, b, share, span);
	int axis = sweep_axis(share);
	uint32_t ma = sweep_fill(a, NULL, axis, v, tmp), mb = sweep_fill(b, NULL, axis, v + ma, tmp), at[2] = {0, 0};
	int res = sweep_run_cross(a, v, ma, b, v + ma, mb, axis, (uint64_t)SWEEP_BUDGET * (ma + mb), at, fn, ctx);
	if (res != SWEEP_OVER) return res == SWEEP_DONE;
	sweep_part pa = {v[at[0]], axis, -1, {0}}, pb = {v[ma + at[1]], axis, -1, {0}};
	memcpy(pa.span, span, sizeof span);
	memcpy(pb.span, span, sizeof span);
	return sweep_split(a, pa, b, pb, v, tmp, fn, ctx);
}

#endif

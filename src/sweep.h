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

/// The axis to sweep a pile along: the least total extent against the spread
/// of the boxes' low faces (the expected share of pairs overlapping on it).
static int sweep_axis(const sweep_list *a, const sweep_list *b)
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
	int best = 0;
	double best_share = INFINITY;
	for (int d = 0; d < DIM; ++d) {
		double span = hi[d] - lo[d];
		// No spread at all (every box on one plane): the worst axis.
		double share = span > 0.0 ? ext[d] / span : INFINITY;
		if (share < best_share) {
			best_share = share;
			best = d;
		}
	}
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

/// Fill v[0..l->n) with l's boxes keyed by their low face on axis and sort.
static void sweep_prepare(const sweep_list *l, int axis, uint64_t *v, uint64_t *tmp)
{
	for (uint32_t i = 0; i < l->n; ++i) v[i] = (uint64_t)sweep_key(sweep_box(l, i)->min[axis]) << 32 | i;
	sweep_sort(v, tmp, l->n);
}

/// Called for boxes i of the first list and j of the second (or of the one
/// list) that overlap; false stops the sweep.
typedef bool sweep_pair_fn(void *ctx, uint32_t i, uint32_t j);

/// Every overlapping pair within list a, each once. v and tmp hold a->n each.
static bool sweep_self(const sweep_list *a, uint64_t *v, uint64_t *tmp, sweep_pair_fn *fn, void *ctx)
{
	int axis = sweep_axis(a, NULL);
	sweep_prepare(a, axis, v, tmp);
	uint64_t tests = 0;
	for (uint32_t i = 0; i < a->n; ++i) {
		const box_t *x = sweep_box(a, (uint32_t)v[i]);
		float reach = x->max[axis];
		for (uint32_t j = i + 1; j < a->n; ++j) {
			const box_t *y = sweep_box(a, (uint32_t)v[j]);
			if (y->min[axis] > reach) break;
			tests++;
			if (box_overlap(x, y) && !fn(ctx, (uint32_t)v[i], (uint32_t)v[j])) return false;
		}
	}
	WORK_TESTS(tests + a->n);
	return true;
}

/// Every overlapping pair of a box of a and a box of b, each once. v and tmp
/// hold a->n + b->n each.
static bool sweep_cross(const sweep_list *a, const sweep_list *b, uint64_t *v, uint64_t *tmp, sweep_pair_fn *fn,
                        void *ctx)
{
	int axis = sweep_axis(a, b);
	uint64_t *va = v, *vb = v + a->n;
	sweep_prepare(a, axis, va, tmp);
	sweep_prepare(b, axis, vb, tmp);
	uint64_t tests = 0;
	uint32_t i = 0, j = 0;
	// Take the lower low face next; scan the other list from its cursor while
	// boxes start within its reach. Equal low faces: whichever goes first
	// meets the other in its scan, and the other's later scan starts past it.
	while (i < a->n && j < b->n) {
		const box_t *x = sweep_box(a, (uint32_t)va[i]), *y = sweep_box(b, (uint32_t)vb[j]);
		if (x->min[axis] <= y->min[axis]) {
			for (uint32_t k = j; k < b->n; ++k) {
				const box_t *z = sweep_box(b, (uint32_t)vb[k]);
				if (z->min[axis] > x->max[axis]) break;
				tests++;
				if (box_overlap(x, z) && !fn(ctx, (uint32_t)va[i], (uint32_t)vb[k])) return false;
			}
			i++;
		} else {
			for (uint32_t k = i; k < a->n; ++k) {
				const box_t *z = sweep_box(a, (uint32_t)va[k]);
				if (z->min[axis] > y->max[axis]) break;
				tests++;
				if (box_overlap(z, y) && !fn(ctx, (uint32_t)va[k], (uint32_t)vb[j])) return false;
			}
			j++;
		}
	}
	WORK_TESTS(tests + a->n + b->n);
	return true;
}

#endif

// morton.h: Morton (Z-order) codes and the stable sort by them, written once
// for everything that orders by them: the packed tree's build keys its items
// (packed_build.c), its batched nearest visits the query points in their
// order (packed_knn_batch.c), and the Python extension orders a batch's rows
// the same way, so that the batch finds its points already in order and
// skips its own sort. The dimension is an argument, a constant at every call,
// so the 2D/3D branch folds away; nothing here depends on DIM, which lets the
// extension include it for both dimensions from one translation unit.
//
// A point key is the Morton code of the point's cell on a grid of 2^16 (2D)
// or 2^10 (3D) cells a side over a box, so a key fits 32 bits; a point
// outside the box clamps to the edge cell. Keys are sorted as the high half of
// 64-bit values whose low half rides along (an index): an LSD radix sort of
// three 11-bit digits, stable, so equal keys keep their index order.
#ifndef ORTHANT_SRC_MORTON_H
#define ORTHANT_SRC_MORTON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/// Spread the low bits of x (32 in 2D, 21 in 3D) so that dim - 1 zero bits
/// separate them: bit i moves to bit dim * i. Each step halves the runs of
/// bits and moves every other run up: in 2D runs of 16, 8, 4, 2 and 1 bits by
/// as many places, in 3D by twice as many. (Written out, not a loop: with dim
/// a constant each step is a shift and a mask.)
static inline uint64_t morton_spread(uint64_t x, int dim)
{
	const bool d3 = dim == 3;
	x &= d3 ? 0x1fffffu : 0xffffffffu;
	x = (x | (x << (16 << d3))) & (d3 ? 0x001f00000000ffffull : 0x0000ffff0000ffffull);
	x = (x | (x << (8 << d3))) & (d3 ? 0x001f0000ff0000ffull : 0x00ff00ff00ff00ffull);
	x = (x | (x << (4 << d3))) & (d3 ? 0x100f00f00f00f00full : 0x0f0f0f0f0f0f0f0full);
	x = (x | (x << (2 << d3))) & (d3 ? 0x10c30c30c30c30c3ull : 0x3333333333333333ull);
	return (x | (x << (1 << d3))) & (d3 ? 0x1249249249249249ull : 0x5555555555555555ull);
}

/// The grid point keys are taken on: per axis the origin and cells per unit;
/// top is the last cell's index (2^16 - 1 in 2D, 2^10 - 1 in 3D).
typedef struct morton_grid {
	double lo[3], scale[3];
	int dim;
	uint32_t top;
} morton_grid;

/// The point grid over the box [min, max] (dim axes). An axis of no extent
/// (or an empty box, min > max) puts every point in cell 0 along it.
static inline morton_grid morton_grid_make(const float *min, const float *max, int dim)
{
	morton_grid g;
	memset(&g, 0, sizeof g);
	g.dim = dim;
	g.top = (1u << (dim == 2 ? 16 : 10)) - 1u;
	for (int d = 0; d < dim; ++d) {
		double w = (double)max[d] - min[d];
		g.lo[d] = w > 0.0 ? min[d] : 0.0;
		g.scale[d] = w > 0.0 ? (double)g.top / w : 0.0;
	}
	return g;
}

/// The key of point x (dim finite coordinates) on g.
static inline uint32_t morton_point_key(const morton_grid *g, const double *x)
{
	uint32_t key = 0;
	for (int d = 0; d < g->dim; ++d) {
		double q = (x[d] - g->lo[d]) * g->scale[d];
		uint32_t v = q <= 0.0 ? 0u : q >= (double)g->top ? g->top : (uint32_t)q;
		key |= (uint32_t)morton_spread(v, g->dim) << d;
	}
	return key;
}

/// Count a value whose high 32 bits are key into the sort's three digit histograms.
static inline void morton_hist_add(uint32_t hist[3][2048], uint32_t key)
{
	hist[0][key & 2047u]++;
	hist[1][(key >> 11) & 2047u]++;
	hist[2][key >> 22]++;
}

/// Sort (*a)[0..n) by the high 32 bits, stably, through *b; the result ends
/// in *a (the two pointers may swap). hist holds the three digit histograms
/// of those values (morton_hist_add), and is used up.
static inline void morton_sort_counted(uint64_t **a, uint64_t **b, size_t n, uint32_t hist[3][2048])
{
	if (n == 0) return;
	for (int pass = 0; pass < 3; ++pass) {
		uint32_t *h = hist[pass];
		int shift = 32 + 11 * pass;
		uint32_t digit0 = (uint32_t)((*a)[0] >> shift) & 2047u;
		if (h[digit0] == n) continue; // one bucket: the pass would not move anything
		uint32_t sum = 0;
		for (int k = 0; k < 2048; ++k) {
			uint32_t c = h[k];
			h[k] = sum;
			sum += c;
		}
		const uint64_t *src = *a;
		uint64_t *dst = *b;
		for (size_t i = 0; i < n; ++i) {
			uint64_t v = src[i];
			dst[h[(uint32_t)(v >> shift) & 2047u]++] = v;
		}
		uint64_t *t = *a;
		*a = *b;
		*b = t;
	}
}

/// morton_sort_counted, counting the histograms first (n < 2^32).
static inline void morton_sort(uint64_t **a, uint64_t **b, size_t n)
{
	static const uint32_t zero[3][2048];
	uint32_t hist[3][2048];
	memcpy(hist, zero, sizeof hist);
	for (size_t i = 0; i < n; ++i) morton_hist_add(hist, (uint32_t)((*a)[i] >> 32));
	morton_sort_counted(a, b, n, hist);
}

#endif

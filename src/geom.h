// geom.h: the geometry every module shares — boxes, half-open cells, spheres,
// distances and the ray slab test. Pure functions of their arguments; nothing
// here knows the tree.
//
// Boxes are closed: touching counts. Cells are half-open, [lo, hi) on every
// axis (see cell_holds). Distances are in double: float squares overflow past
// 1.8e19, and every distance rule the API documents is written in double.
#ifndef ORTHANT_SRC_GEOM_H
#define ORTHANT_SRC_GEOM_H

#include <math.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "dim.h"

// ---- boxes ------------------------------------------------------------------------

static inline bool box_overlap(const box_t *a, const box_t *b)
{
	for (int d = 0; d < DIM; ++d)
		if (a->min[d] > b->max[d] || b->min[d] > a->max[d]) return false;
	return true;
}

static inline bool box_within(const box_t *inner, const float lo[DIM], const float hi[DIM])
{
	for (int d = 0; d < DIM; ++d)
		if (inner->min[d] < lo[d] || inner->max[d] > hi[d]) return false;
	return true;
}

static inline bool box_overlaps_bounds(const box_t *b, const float lo[DIM], const float hi[DIM])
{
	for (int d = 0; d < DIM; ++d)
		if (b->min[d] > hi[d] || b->max[d] < lo[d]) return false;
	return true;
}

/// Whether -limit <= min <= max <= limit on every axis (which NaN and the
/// infinities fail): box_check's usual case. Where SSE2 is there, in 2D and
/// 3D, as vector compares and one test: every move checks its box, and the
/// scalar form took 38 instructions in 2D (callgrind, S3's per-item moves),
/// this one 9. The lanes test the same comparisons plus min <= limit and
/// max >= -limit, which the others imply, so both forms agree on every box.
static inline bool box_plain(const box_t *b)
{
#if defined(__SSE2__) && (DIM == 2 || DIM == 3)
	_Static_assert(sizeof(box_t) == 2 * DIM * sizeof(float), "box_t: min then max, packed floats");
	const __m128 lim = _mm_set1_ps(ORTHANT_COORD_LIMIT), nlim = _mm_set1_ps(-ORTHANT_COORD_LIMIT);
#if DIM == 2
	// v = (min x, min y, max x, max y); (max x, max y) twice against it: the
	// min lanes are min <= max, the max lanes max <= max (NaN fails there too).
	__m128 v = _mm_loadu_ps((const float *)b);
	__m128 hi = _mm_movehl_ps(v, v);
	__m128 ok = _mm_and_ps(_mm_and_ps(_mm_cmple_ps(v, lim), _mm_cmpge_ps(v, nlim)), _mm_cmple_ps(v, hi));
	return _mm_movemask_ps(ok) == 0xF;
#else
	// a = (min x, min y, min z, max x), c = (min z, max x, max y, max z): the
	// range test on both covers every coordinate; a's first three lanes
	// against (max x, max y, max z) are min <= max.
	const float *f = (const float *)b;
	__m128 a = _mm_loadu_ps(f), c = _mm_loadu_ps(f + 2);
	__m128 range = _mm_and_ps(_mm_and_ps(_mm_cmple_ps(a, lim), _mm_cmpge_ps(a, nlim)),
	                          _mm_and_ps(_mm_cmple_ps(c, lim), _mm_cmpge_ps(c, nlim)));
	__m128 order = _mm_cmple_ps(a, _mm_shuffle_ps(c, c, _MM_SHUFFLE(3, 3, 2, 1)));
	return (_mm_movemask_ps(range) == 0xF) & ((_mm_movemask_ps(order) & 7) == 7);
#endif
#else
	bool ok = true;
	for (int d = 0; d < DIM; ++d)
		ok &= (-ORTHANT_COORD_LIMIT <= b->min[d]) & (b->min[d] <= b->max[d]) & (b->max[d] <= ORTHANT_COORD_LIMIT);
	return ok;
#endif
}

#if defined(__SSE2__) && (DIM == 2 || DIM == 3)
/// A query box laid out for box_lanes_meet (box_lanes_of).
typedef struct box_lanes {
	__m128 v[2];
} box_lanes;

/// q's lanes. 2D: (q.max x, q.max y, -q.min x, -q.min y), in v[0] and v[1]
/// alike; 3D: (q.max x, y, z, +inf) and (+inf, -q.min x, y, z).
static inline box_lanes box_lanes_of(const box_t *q)
{
	box_lanes l;
#if DIM == 2
	l.v[0] = _mm_set_ps(-q->min[1], -q->min[0], q->max[1], q->max[0]);
	l.v[1] = l.v[0];
#else
	l.v[0] = _mm_set_ps(INFINITY, q->max[2], q->max[1], q->max[0]);
	l.v[1] = _mm_set_ps(-q->min[2], -q->min[1], -q->min[0], INFINITY);
#endif
	return l;
}

/// box_overlaps_bounds(q, b->min, b->max) for the q of box_lanes_of(q), as
/// two or three vector compares and no branch (the boxes a query tests,
/// nodes' and entries', pass and fail at random, which a branch per axis
/// mispredicts). A box and q meet when b.min <= q.max and -b.max <= -q.min
/// on every axis; negation is exact, so these are the scalar comparisons. In
/// 2D a box is one load (min x, min y, max x, max y), compared with its max
/// lanes negated against v[0]. In 3D the loads are (min x, y, z, max x) and
/// (min z, max x, y, z), each with one lane of the other that is compared
/// against +inf (always true: no bound is NaN, and an empty node's inverted
/// bound fails on the min lanes).
static inline bool box_lanes_meet(const box_lanes *q, const box_t *b)
{
#if DIM == 2
	__m128 v = _mm_xor_ps(_mm_loadu_ps(b->min), _mm_set_ps(-0.0f, -0.0f, 0.0f, 0.0f));
	return _mm_movemask_ps(_mm_cmple_ps(v, q->v[0])) == 0xF;
#else
	__m128 lo = _mm_loadu_ps(b->min);
	__m128 hi = _mm_xor_ps(_mm_loadu_ps(&b->min[2]), _mm_set_ps(-0.0f, -0.0f, -0.0f, 0.0f));
	__m128 ok = _mm_and_ps(_mm_cmple_ps(lo, q->v[0]), _mm_cmple_ps(hi, q->v[1]));
	return _mm_movemask_ps(ok) == 0xF;
#endif
}
#endif

/// ORT_OK for a finite box with min <= max inside the coordinate limit.
static inline ort_result box_check(const box_t *b)
{
	// The usual case in one test, without branches: -limit <= min <= max <=
	// limit on every axis (which NaN and the infinities fail; three
	// comparisons an axis, no absolute values). Only a box that fails it is
	// looked at again for its error.
	if (box_plain(b)) return ORT_OK;
	for (int d = 0; d < DIM; ++d) {
		if (!isfinite(b->min[d]) || !isfinite(b->max[d]) || !(b->min[d] <= b->max[d]))
			return ORT_ERROR_INVALID_BOX;
		if (fabsf(b->min[d]) > ORTHANT_COORD_LIMIT || fabsf(b->max[d]) > ORTHANT_COORD_LIMIT)
			return ORT_ERROR_OUT_OF_RANGE;
	}
	return ORT_OK;
}

static inline ort_result point_check(const float p[DIM])
{
	for (int d = 0; d < DIM; ++d)
		if (!isfinite(p[d])) return ORT_ERROR_INVALID_BOX;
	return ORT_OK;
}

/// Cells are half-open, [lo, hi) on every axis, the root's too: an item's box
/// always ends strictly below the root's upper faces (the root grows until it
/// does). So sibling cells share no point, and growing the root never makes an
/// item touch a cell it did not touch before.
static inline bool cell_holds(const float lo[DIM], const float hi[DIM], const box_t *b)
{
	for (int d = 0; d < DIM; ++d)
		if (b->min[d] < lo[d] || !(b->max[d] < hi[d])) return false;
	return true;
}

/// Whether box b meets the half-open cell [lo, hi).
static inline bool cell_touches(const float lo[DIM], const float hi[DIM], const box_t *b)
{
	for (int d = 0; d < DIM; ++d)
		if (!(b->min[d] < hi[d]) || b->max[d] < lo[d]) return false;
	return true;
}

/// The low corner of the overlap of two boxes that overlap.
static inline void overlap_corner(const box_t *a, const box_t *b, float p[DIM])
{
	for (int d = 0; d < DIM; ++d) p[d] = a->min[d] > b->min[d] ? a->min[d] : b->min[d];
}

static inline void clamp_point(const float p[DIM], const box_t *b, float out[DIM])
{
	for (int d = 0; d < DIM; ++d) out[d] = p[d] < b->min[d] ? b->min[d] : p[d] > b->max[d] ? b->max[d] : p[d];
}

// ---- spheres and distances -----------------------------------------------------------
//
// The tree prunes and pairs by boxes; an item whose bound is a sphere is then
// tested exactly.

/// A sphere (a circle in 2D): centre and radius.
typedef struct sphere_t {
	float c[DIM];
	float r;
} sphere_t;

static inline double dist2_point_box(const float p[DIM], const box_t *b)
{
	double s = 0.0;
	for (int d = 0; d < DIM; ++d) {
		double v = p[d] < b->min[d] ? (double)b->min[d] - p[d] : p[d] > b->max[d] ? (double)p[d] - b->max[d] : 0.0;
		s += v * v;
	}
	return s;
}

/// Squared distance from p to the box [lo, hi] (0 inside), in double: float
/// squares overflow beyond ~1.8e19, and every distance query ranks by this.
static inline double dist2_point_bounds(const float p[DIM], const float lo[DIM], const float hi[DIM])
{
	double s = 0.0;
	for (int d = 0; d < DIM; ++d) {
		double v = p[d] < lo[d] ? (double)lo[d] - p[d] : p[d] > hi[d] ? (double)p[d] - hi[d] : 0.0;
		s += v * v;
	}
	return s;
}

static inline double dist2_points(const float a[DIM], const float b[DIM])
{
	double s = 0.0;
	for (int d = 0; d < DIM; ++d) {
		double v = (double)a[d] - b[d];
		s += v * v;
	}
	return s;
}

/// A float box holding every point a sphere query accepts. The rule is
/// dist2 <= r^2 in double, and double rounding can accept a point up to a few
/// 1e-16 (relative) beyond r — at 1e20 that is past what one float ulp of
/// widening covers (the fuzz_packed corpus input sphere-rounding). So the box
/// is c -+ r (1 + 1e-12), worked out in double and rounded outwards to float.
static inline void sphere_prune_box(const float c[DIM], float r, box_t *out)
{
	double reach = (double)r * (1.0 + 1e-12);
	for (int d = 0; d < DIM; ++d) {
		double lo = (double)c[d] - reach, hi = (double)c[d] + reach;
		float flo = (float)lo, fhi = (float)hi;
		out->min[d] = (double)flo > lo ? nextafterf(flo, -INFINITY) : flo;
		out->max[d] = (double)fhi < hi ? nextafterf(fhi, INFINITY) : fhi;
	}
}

// ---- rays -------------------------------------------------------------------------

/// ORT_OK when origin, dir and max_t make a segment ray_cast accepts.
static ort_result ray_args_check(const float origin[DIM], const float dir[DIM], float max_t)
{
	if (!origin || !dir) return ORT_ERROR_INVALID_ARGUMENT;
	if (point_check(origin) != ORT_OK || point_check(dir) != ORT_OK || isnan(max_t) || max_t < 0.0f)
		return ORT_ERROR_INVALID_BOX;
	return ORT_OK;
}

/// Slab test of the segment origin + t * dir, t in [0, tmax], against [lo, hi]
/// (closed). On a hit *enter is where the segment enters (0 when it starts
/// inside). An axis with dir 0 is a slab the origin is in or not; otherwise the
/// parameters are (lo - o) / d and (hi - o) / d, exactly as written here, so a
/// brute-force oracle using this formula agrees to the bit.
static inline bool ray_slab(const float o[DIM], const float dir[DIM], float tmax, const float lo[DIM],
                            const float hi[DIM], float *enter)
{
	float t0 = 0.0f, t1 = tmax;
	for (int d = 0; d < DIM; ++d) {
		if (dir[d] == 0.0f) {
			if (o[d] < lo[d] || o[d] > hi[d]) return false;
			continue;
		}
		float a = (lo[d] - o[d]) / dir[d], b = (hi[d] - o[d]) / dir[d];
		if (a > b) {
			float x = a;
			a = b;
			b = x;
		}
		if (a > t0) t0 = a;
		if (b < t1) t1 = b;
		if (t0 > t1) return false;
	}
	*enter = t0;
	return true;
}

/// Coordinate d of the point origin + t * dir. An axis the ray does not move
/// along keeps the origin's coordinate: with a tiny dir on another axis the
/// entry t can overflow to infinity, and inf * 0 would make the point NaN
/// (a NaN point belongs to no leaf, so leaves placement lost the hit).
static inline float ray_at(const float o[DIM], const float dir[DIM], float t, int d)
{
	return dir[d] == 0.0f ? o[d] : o[d] + t * dir[d];
}

/// The segment origin + t * dir, t in [0, tmax], against a sphere, in double:
/// with a = dir.dir, b = dir.(o - c), k = |o - c|^2 - r^2, the entry is 0 when
/// k <= 0 (inside), else (-b - sqrt(b^2 - a k)) / a when that is real and in
/// [0, tmax].
static inline bool ray_sphere(const float o[DIM], const float dir[DIM], float tmax, const sphere_t *s, float *enter)
{
	double a = 0.0, b = 0.0, k = 0.0;
	for (int d = 0; d < DIM; ++d) {
		double oc = (double)o[d] - s->c[d];
		a += (double)dir[d] * dir[d];
		b += (double)dir[d] * oc;
		k += oc * oc;
	}
	k -= (double)s->r * s->r;
	if (k <= 0.0) {
		*enter = 0.0f;
		return true;
	}
	double disc = b * b - a * k;
	if (a == 0.0 || disc < 0.0) return false;
	double t0 = (-b - sqrt(disc)) / a;
	if (t0 < 0.0 || t0 > tmax) return false;
	*enter = (float)t0;
	return true;
}

#endif

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

/// ORT_OK for a finite box with min <= max inside the coordinate limit.
static inline ort_result box_check(const box_t *b)
{
	// The usual case in one test, without branches: -limit <= min <= max <=
	// limit on every axis (which NaN and the infinities fail; three
	// comparisons an axis, no absolute values). Only a box that fails it is
	// looked at again for its error.
	bool ok = true;
	for (int d = 0; d < DIM; ++d)
		ok &= (-ORTHANT_COORD_LIMIT <= b->min[d]) & (b->min[d] <= b->max[d]) & (b->max[d] <= ORTHANT_COORD_LIMIT);
	if (ok) return ORT_OK;
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

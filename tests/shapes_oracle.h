// shapes_oracle.h: the scenes and the brute force of the shape queries'
// tests, for one dimension (included by test_shapes.c and
// test_shapes_exact.c, each compiled twice: TEST_DIM=2 and TEST_DIM=3):
// convex-region (plane) queries, box casts, ray records and batched queries,
// on random and lattice scenes whose faces lie on the tree's split lines.
// The brute force follows docs/QUERIES.md, written out here independently of
// src/query_planes.c, src/query_cast.c and src/query_batch.c.
#ifndef ORTHANT_TEST_SHAPES_ORACLE_H
#define ORTHANT_TEST_SHAPES_ORACLE_H

#include "testutil.h"

typedef TU(plane) plane_t;
typedef TU(ray_hit) hit_t;

// ---- scenes -------------------------------------------------------------------

typedef enum scene_kind {
	SK_RANDOM,
	SK_LATTICE,  ///< faces on the lines 1000 * k / 2^level: the region's split lines
	SK_POINTS,   ///< zero-size boxes on a coarse lattice, many coinciding
	SK_TOUCHING, ///< a grid of boxes sharing faces
	SK_HUGE,     ///< a few huge boxes among small ones
	SK_COUNT
} scene_kind;

/// A coordinate on the lattice of step 1000 / 2^level, level in [1, 6].
static inline float lattice(tu_rng *r)
{
	float step = 1000.0f / (float)(1 << tu_int(r, 1, 6));
	return step * (float)tu_int(r, 0, (int)(1000.0f / step));
}

static inline box_t scene_box(scene_kind kind, tu_rng *r, int i)
{
	box_t b;
	for (int d = 0; d < DIM; ++d) {
		float lo, side;
		switch (kind) {
		case SK_LATTICE:
			lo = lattice(r);
			side = tu_int(r, 0, 3) == 0 ? 0.0f : lattice(r) * 0.25f;
			break;
		case SK_POINTS:
			lo = 125.0f * (float)tu_int(r, 0, 8);
			side = 0.0f;
			break;
		case SK_TOUCHING: {
			int cell = i, side_n = DIM == 2 ? 12 : 6;
			for (int k = 0; k < d; ++k) cell /= side_n;
			lo = 80.0f * (float)(cell % side_n);
			side = 80.0f;
			break;
		}
		case SK_HUGE:
			lo = tu_float(r, -100, 1000);
			side = i % 50 == 0 ? 900.0f : tu_float(r, 0, 8);
			break;
		default:
			lo = tu_float(r, 0, 1000);
			side = tu_float(r, 0, 60);
		}
		b.min[d] = lo;
		b.max[d] = lo + side;
	}
	return b;
}

/// Items whose bound is a sphere, by handle id (a box item is `on == false`).
enum { MAX_IDS = 4096 };
static struct oracle_sphere {
	bool on;
	float c[DIM], r;
} spheres[MAX_IDS];

static inline const struct oracle_sphere *sphere_of(ort_handle h) { return spheres[h.id].on ? &spheres[h.id] : NULL; }

/// Insert a box item, or for every fifth item of the random and huge scenes a
/// sphere inside that box; the model gets the box the tree indexes.
static inline ort_handle insert_item(tree_t *t, model *m, box_t b, bool sphere)
{
	ort_handle h;
	if (!sphere) {
		assert_int_equal(TU(tree_insert)(t, b, NULL, &h), ORT_OK);
	} else {
		float c[DIM], r = (b.max[0] - b.min[0]) * 0.5f;
		for (int d = 0; d < DIM; ++d) c[d] = b.min[d] + r;
		assert_int_equal(TU(tree_insert_sphere)(t, c, r, NULL, &h), ORT_OK);
		assert_int_equal(TU(tree_get_box)(t, h, &b), ORT_OK);
		memcpy(spheres[h.id].c, c, sizeof c);
		spheres[h.id].r = r;
	}
	assert_true(h.id < MAX_IDS);
	spheres[h.id].on = sphere;
	tu_model_add(m, h, b);
	return h;
}

typedef struct fixture {
	tree_t *tree;
	model m;
} fixture;

static inline void fixture_make(fixture *f, ort_placement placement, scene_kind kind, int n, uint64_t seed)
{
	def_t def = TU(tree_default_def)();
	def.placement = placement;
	def.bucket_size = 4;
	if (kind == SK_LATTICE) {
		for (int d = 0; d < DIM; ++d) {
			def.region.min[d] = 0;
			def.region.max[d] = 1024;
		}
		def.use_region = true;
	}
	assert_int_equal(TU(tree_create)(&def, &f->tree), ORT_OK);
	memset(spheres, 0, sizeof spheres);
	tu_model_init(&f->m, n);
	tu_rng r = tu_rng_make(seed);
	for (int i = 0; i < n; ++i) {
		box_t b = scene_box(kind, &r, i);
		insert_item(f->tree, &f->m, b, (kind == SK_RANDOM || kind == SK_HUGE) && i % 5 == 0);
	}
	tu_check_valid(f->tree);
}

static inline void fixture_free(fixture *f)
{
	TU(tree_destroy)(f->tree);
	tu_model_free(&f->m);
}

/// A point of an item's box: a corner, a face centre or the centre.
static inline void item_point(const model *m, tu_rng *r, float p[DIM])
{
	const box_t *b = &m->box[tu_int(r, 0, m->n - 1)];
	for (int d = 0; d < DIM; ++d) {
		int k = tu_int(r, 0, 2);
		p[d] = k == 0 ? b->min[d] : k == 1 ? b->max[d] : (b->min[d] + b->max[d]) * 0.5f;
	}
}

// ---- planes ----------------------------------------------------------------------

/// docs/QUERIES.md: the plane at the most positive vertex, left to right, offset last.
/// docs/QUERIES.md: a sphere item also needs, per plane, in double,
/// sum(normal * c) + offset >= -r * sqrt(sum(normal^2)).
static inline bool oracle_planes_sphere(const plane_t *pl, int count, const struct oracle_sphere *sp)
{
	for (int i = 0; i < count; ++i) {
		double dot = 0, n2 = 0;
		for (int d = 0; d < DIM; ++d) {
			dot += (double)pl[i].normal[d] * sp->c[d];
			n2 += (double)pl[i].normal[d] * pl[i].normal[d];
		}
		if (dot + pl[i].offset < -(double)sp->r * sqrt(n2)) return false;
	}
	return true;
}

static inline bool oracle_planes(const plane_t *pl, int count, const box_t *b)
{
	for (int i = 0; i < count; ++i) {
		float s = 0;
		for (int d = 0; d < DIM; ++d) {
			float v = pl[i].normal[d] * (pl[i].normal[d] >= 0 ? b->max[d] : b->min[d]);
			s = d == 0 ? v : s + v;
		}
		if (!(s + pl[i].offset >= 0)) return false;
	}
	return true;
}

static inline void check_planes(const tree_t *t, const model *m, const plane_t *pl, int count)
{
	tu_list got = {0}, want = {0};
	assert_int_equal(TU(tree_query_planes)(t, pl, count, ORT_MASK_ALL, tu_collect, &got), ORT_OK);
	for (int i = 0; i < m->n; ++i)
		if (oracle_planes(pl, count, &m->box[i]) &&
		    (!sphere_of(m->handle[i]) || oracle_planes_sphere(pl, count, sphere_of(m->handle[i]))))
			tu_push(&want, tu_key(m->handle[i]));
	tu_expect_same(&got, &want, "planes");
}

/// A plane through the point p with a random normal (some axis-aligned);
/// p gives exactly 0 when it is the box's most positive vertex.
static inline plane_t plane_through(tu_rng *r, const float p[DIM])
{
	plane_t pl;
	int axis = tu_int(r, -DIM, DIM - 1);
	for (int d = 0; d < DIM; ++d) pl.normal[d] = axis >= 0 ? (d == axis ? 1.0f : 0.0f) : tu_float(r, -1, 1);
	if (tu_int(r, 0, 1)) {
		for (int d = 0; d < DIM; ++d) pl.normal[d] = -pl.normal[d];
	}
	float s = 0;
	for (int d = 0; d < DIM; ++d) s = d == 0 ? pl.normal[0] * p[0] : s + pl.normal[d] * p[d];
	pl.offset = -s;
	return pl;
}

#if DIM == 3
/// A column-major view-projection (OpenGL perspective * look-at).
static inline void view_projection(const float eye[3], const float at[3], float fovy, float near, float far, float out[16])
{
	float f[3], s[3], u[3], up[3] = {0, 0, 1};
	float len = 0;
	for (int d = 0; d < 3; ++d) f[d] = at[d] - eye[d], len += f[d] * f[d];
	for (int d = 0; d < 3; ++d) f[d] /= sqrtf(len);
	if (fabsf(f[2]) > 0.99f) up[0] = 1, up[2] = 0;
	s[0] = f[1] * up[2] - f[2] * up[1], s[1] = f[2] * up[0] - f[0] * up[2], s[2] = f[0] * up[1] - f[1] * up[0];
	len = sqrtf(s[0] * s[0] + s[1] * s[1] + s[2] * s[2]);
	for (int d = 0; d < 3; ++d) s[d] /= len;
	u[0] = s[1] * f[2] - s[2] * f[1], u[1] = s[2] * f[0] - s[0] * f[2], u[2] = s[0] * f[1] - s[1] * f[0];
	float view[16] = {s[0], u[0], -f[0], 0, s[1], u[1], -f[1], 0, s[2], u[2], -f[2], 0, 0, 0, 0, 1};
	for (int d = 0; d < 3; ++d) {
		view[12] -= s[d] * eye[d];
		view[13] -= u[d] * eye[d];
		view[14] += f[d] * eye[d];
	}
	float g = 1.0f / tanf(fovy * 0.5f);
	float proj[16] = {g, 0, 0, 0, 0, g, 0, 0, 0, 0, (far + near) / (near - far), -1, 0, 0,
	                  2 * far * near / (near - far), 0};
	for (int c = 0; c < 4; ++c)
		for (int row = 0; row < 4; ++row) {
			float v = 0;
			for (int k = 0; k < 4; ++k) v += proj[k * 4 + row] * view[c * 4 + k];
			out[c * 4 + row] = v;
		}
}

/// A camera's view: the frustum of a random perspective camera.
static inline int camera_planes(tu_rng *r, const model *m, plane_t *pl)
{
	(void)m;
	float eye[3], at[3], mat[16];
	for (int d = 0; d < 3; ++d) eye[d] = tu_float(r, -300, 1300), at[d] = tu_float(r, 0, 1000);
	view_projection(eye, at, tu_float(r, 0.3f, 2.0f), tu_float(r, 0.5f, 50), tu_float(r, 100, 3000), mat);
	TU(frustum_from_matrix)(mat, pl);
	return 6;
}
#else
/// A camera's view: a random convex polygon, half the time with a vertex at
/// an item's corner; 0 if it came out degenerate.
static inline int camera_planes(tu_rng *r, const model *m, plane_t *pl)
{
	int n = tu_int(r, 3, 7);
	float pts[8][2], c[2] = {tu_float(r, 0, 1000), tu_float(r, 0, 1000)}, radius = tu_float(r, 5, 500);
	float angle = tu_float(r, 0, 1);
	for (int i = 0; i < n; ++i) {
		angle += tu_float(r, 0.2f, 6.2831853f / (float)n);
		pts[i][0] = c[0] + radius * cosf(angle);
		pts[i][1] = c[1] + radius * sinf(angle);
	}
	if (tu_int(r, 0, 1)) item_point(m, r, pts[0]);
	return TU(planes_from_polygon)((const float(*)[2])pts, n, pl) == ORT_OK ? n : 0;
}
#endif

/// A random region: a camera's view, or planes through item corners.
static inline int random_planes(tu_rng *r, const model *m, plane_t *pl)
{
	int count = tu_int(r, 0, 2) > 0 ? camera_planes(r, m, pl) : 0;
	if (count > 0) return count;
	count = tu_int(r, 1, 6);
	for (int i = 0; i < count; ++i) {
		float p[DIM];
		item_point(m, r, p);
		pl[i] = plane_through(r, p);
	}
	return count;
}

// ---- sweeps and rays -------------------------------------------------------------

/// docs/QUERIES.md: a box cast is a ray from box.min against items grown down by its size.
static inline bool oracle_sweep_sphere(const box_t *mv, const float delta[DIM], float tmax, const struct oracle_sphere *sp,
                                float *t)
{
	bool point = true;
	for (int d = 0; d < DIM; ++d) point = point && mv->min[d] == mv->max[d];
	if (point) return tu_ray_sphere(mv->min, delta, tmax, sp->c, sp->r, t);
	double r2 = (double)sp->r * sp->r, g0 = 0;
	for (int d = 0; d < DIM; ++d) {
		double v = sp->c[d] < mv->min[d] ? (double)mv->min[d] - sp->c[d]
		           : sp->c[d] > mv->max[d] ? (double)sp->c[d] - mv->max[d] : 0.0;
		g0 += v * v;
	}
	if (g0 <= r2) return *t = 0, true;
	double cuts[2 * DIM + 1];
	int n = 0;
	for (int d = 0; d < DIM; ++d) {
		if (delta[d] == 0) continue;
		double a = ((double)sp->c[d] - mv->min[d]) / delta[d], b = ((double)sp->c[d] - mv->max[d]) / delta[d];
		if (a > 0 && a < tmax) cuts[n++] = a;
		if (b > 0 && b < tmax) cuts[n++] = b;
	}
	for (int i = 1; i < n; ++i) // sort
		for (int j = i; j > 0 && cuts[j - 1] > cuts[j]; --j) {
			double x = cuts[j];
			cuts[j] = cuts[j - 1];
			cuts[j - 1] = x;
		}
	cuts[n++] = tmax;
	for (int i = 0; i < n; ++i) {
		double lo = i ? cuts[i - 1] : 0.0, hi = cuts[i];
		if (!(hi > lo)) continue;
		double mid = isinf(hi) ? lo + 1.0 : 0.5 * (lo + hi), qa = 0, qb = 0, qc = -r2;
		for (int d = 0; d < DIM; ++d) {
			double p = (double)sp->c[d] - mid * delta[d];
			if (p < mv->min[d]) {
				double al = (double)mv->min[d] - sp->c[d], be = delta[d];
				qa += be * be, qb += 2.0 * al * be, qc += al * al;
			} else if (p > mv->max[d]) {
				double al = (double)sp->c[d] - mv->max[d], be = -(double)delta[d];
				qa += be * be, qb += 2.0 * al * be, qc += al * al;
			}
		}
		double disc = qb * qb - 4.0 * qa * qc;
		if (qa == 0 || disc < 0) continue;
		double t0 = (-qb - sqrt(disc)) / (2.0 * qa), t1 = (-qb + sqrt(disc)) / (2.0 * qa);
		if (t1 < lo) continue;
		if (t0 < lo) t0 = lo;
		if (t0 <= hi) return *t = (float)t0, true;
	}
	return false;
}

static inline bool oracle_box_cast(const box_t *moving, const float delta[DIM], float tmax, const box_t *item, float *t)
{
	box_t grown = *item;
	for (int d = 0; d < DIM; ++d) grown.min[d] = item->min[d] - (moving->max[d] - moving->min[d]);
	return tu_ray_hit(moving->min, delta, tmax, &grown, t);
}

typedef struct cast_hits {
	tu_list keys;
	float *t; ///< by handle id
	float nearest;
	bool clip;
} cast_hits;

static inline float cast_collect(void *ctx, ort_handle h, void *user, float t)
{
	(void)user;
	cast_hits *c = ctx;
	tu_push(&c->keys, tu_key(h));
	c->t[h.id] = t;
	if (t < c->nearest) c->nearest = t;
	return c->clip ? t : INFINITY;
}

/// Box casts that met a sphere item after t = 0 (so the tests prove they happen).
static int sphere_contacts;

static inline void check_box_cast(const tree_t *t, const model *m, box_t box, const float delta[DIM], float tmax)
{
	uint32_t ids = 0;
	for (int i = 0; i < m->n; ++i) ids = m->handle[i].id > ids ? m->handle[i].id : ids;
	cast_hits all = {{0}, malloc((ids + 1) * sizeof(float)), INFINITY, false};
	for (uint32_t i = 0; i <= ids; ++i) all.t[i] = NAN;
	assert_int_equal(TU(tree_box_cast)(t, box, delta, tmax, ORT_MASK_ALL, cast_collect, &all), ORT_OK);
	tu_list want = {0};
	float best = INFINITY;
	for (int i = 0; i < m->n; ++i) {
		float te;
		if (!oracle_box_cast(&box, delta, tmax, &m->box[i], &te)) continue;
		const struct oracle_sphere *sp = sphere_of(m->handle[i]);
		if (sp && !oracle_sweep_sphere(&box, delta, tmax, sp, &te)) continue;
		if (sp && te > 0) {
			// Independently of the formula: at te the moved box is r from the centre.
			double g = 0;
			for (int d = 0; d < DIM; ++d) {
				double lo = box.min[d] + (double)te * delta[d], hi = box.max[d] + (double)te * delta[d];
				double v = sp->c[d] < lo ? lo - sp->c[d] : sp->c[d] > hi ? sp->c[d] - hi : 0.0;
				g += v * v;
			}
			if (fabs(sqrt(g) - sp->r) > 1e-2) TU_FAIL("box cast: sphere contact %g from the centre, r %g\n", sqrt(g), (double)sp->r);
			sphere_contacts++;
		}
		tu_push(&want, tu_key(m->handle[i]));
		if (te < best) best = te;
		// Only reported ids are compared: a missing one fails the set check below.
		if (!isnan(all.t[m->handle[i].id]) && all.t[m->handle[i].id] != te)
			TU_FAIL("box cast: id %u at t %g, brute force %g\n", m->handle[i].id, (double)all.t[m->handle[i].id],
			        (double)te);
	}
	tu_expect_same(&all.keys, &want, "box cast");
	if (all.nearest != best) TU_FAIL("box cast: nearest %g, brute force %g\n", (double)all.nearest, (double)best);
	cast_hits near = {{0}, all.t, INFINITY, true};
	assert_int_equal(TU(tree_box_cast)(t, box, delta, tmax, ORT_MASK_ALL, cast_collect, &near), ORT_OK);
	if (near.nearest != best)
		TU_FAIL("box cast (clipped): nearest %g, brute force %g\n", (double)near.nearest, (double)best);
	free(near.keys.v);
	free(all.t);
}

/// docs/QUERIES.md: the record of a ray entering b at t.
static inline hit_t oracle_record(const model *m, int i, const float o[DIM], const float dir[DIM], float t)
{
	const box_t *b = &m->box[i];
	hit_t h = {m->handle[i], NULL, t, {0}, {0}};
	const struct oracle_sphere *sp = sphere_of(m->handle[i]);
	if (sp) {
		// The point on the ray, the normal from the centre, zero from inside.
		double v[DIM], len = 0, o2 = 0;
		for (int d = 0; d < DIM; ++d) {
			h.point[d] = o[d] + t * dir[d];
			v[d] = (double)h.point[d] - sp->c[d];
			len += v[d] * v[d];
			o2 += ((double)o[d] - sp->c[d]) * ((double)o[d] - sp->c[d]);
		}
		len = sqrt(len);
		if (o2 > (double)sp->r * sp->r && len > 0)
			for (int d = 0; d < DIM; ++d) h.normal[d] = (float)(v[d] / len);
		return h;
	}
	int axis = -1;
	float best = 0;
	for (int d = 0; d < DIM; ++d) {
		if (dir[d] == 0) continue;
		float a = (b->min[d] - o[d]) / dir[d], c = (b->max[d] - o[d]) / dir[d];
		float enter = a < c ? a : c;
		if (enter >= 0 && (axis < 0 || enter > best)) axis = d, best = enter;
	}
	for (int d = 0; d < DIM; ++d) {
		float p = o[d] + t * dir[d];
		h.point[d] = p < b->min[d] ? b->min[d] : p > b->max[d] ? b->max[d] : p;
	}
	if (axis >= 0) {
		h.point[axis] = dir[axis] > 0 ? b->min[axis] : b->max[axis];
		h.normal[axis] = dir[axis] > 0 ? -1.0f : 1.0f;
	}
	return h;
}

static inline int cmp_hit(const void *a, const void *b)
{
	const hit_t *x = a, *y = b;
	if (x->t != y->t) return x->t < y->t ? -1 : 1;
	return x->handle.id < y->handle.id ? -1 : x->handle.id > y->handle.id;
}

/// Every hit of the ray, sorted; returns how many.
static inline int oracle_ray_all(const model *m, const float o[DIM], const float dir[DIM], float tmax, hit_t *out)
{
	int n = 0;
	for (int i = 0; i < m->n; ++i) {
		float t;
		if (!tu_ray_hit(o, dir, tmax, &m->box[i], &t)) continue;
		const struct oracle_sphere *sp = sphere_of(m->handle[i]);
		if (sp && !tu_ray_sphere(o, dir, tmax, sp->c, sp->r, &t)) continue;
		out[n++] = oracle_record(m, i, o, dir, t);
	}
	tu_sort(out, (size_t)n, sizeof *out, cmp_hit);
	return n;
}

static inline void expect_hit(const hit_t *got, const hit_t *want, const char *what, int k)
{
	if (!ort_handle_equal(got->handle, want->handle) || got->t != want->t)
		TU_FAIL("%s #%d: id %u at t %g, brute force id %u at t %g\n", what, k, got->handle.id, (double)got->t,
		        want->handle.id, (double)want->t);
	for (int d = 0; d < DIM; ++d)
		if (got->point[d] != want->point[d] || got->normal[d] != want->normal[d])
			TU_FAIL("%s #%d: id %u point/normal differ on axis %d (%g/%g, brute force %g/%g)\n", what, k,
			        got->handle.id, d, (double)got->point[d], (double)got->normal[d], (double)want->point[d],
			        (double)want->normal[d]);
}

static inline void check_ray_records(const tree_t *t, const model *m, const float o[DIM], const float dir[DIM],
                              float tmax, tu_rng *r)
{
	hit_t *want = malloc(sizeof *want * (size_t)(m->n + 1));
	hit_t *got = malloc(sizeof *got * (size_t)(m->n + 1));
	int n = oracle_ray_all(m, o, dir, tmax, want);
	hit_t first;
	bool found = TU(tree_ray_first)(t, o, dir, tmax, ORT_MASK_ALL, &first);
	if (found != (n > 0)) TU_FAIL("ray_first: found %d, brute force %d hits\n", found, n);
	if (found) expect_hit(&first, &want[0], "ray_first", 0);
	// Every hit, then a cap below the count: the first cap of the same order.
	int caps[3] = {m->n + 1, n / 2, tu_int(r, 0, 3)};
	for (int c = 0; c < 3; ++c) {
		int count = -1;
		assert_int_equal(TU(tree_ray_all)(t, o, dir, tmax, ORT_MASK_ALL, got, caps[c], &count), ORT_OK);
		if (count != n) TU_FAIL("ray_all: %d hits, brute force %d\n", count, n);
		for (int k = 0; k < n && k < caps[c]; ++k) expect_hit(&got[k], &want[k], "ray_all", k);
	}
	free(want);
	free(got);
}

/// A random segment: through the scene, along an item's edge, axis-parallel,
/// from inside an item, grazing a face, through a corner, or of length 0.
static inline void random_ray(tu_rng *r, const model *m, float o[DIM], float dir[DIM], float *tmax)
{
	const box_t *b = &m->box[tu_int(r, 0, m->n - 1)];
	int axis = tu_int(r, 0, DIM - 1);
	for (int d = 0; d < DIM; ++d) {
		o[d] = tu_float(r, -100, 1100);
		dir[d] = tu_float(r, -1, 1);
	}
	*tmax = tu_int(r, 0, 3) == 0 ? INFINITY : tu_float(r, 0, 2000);
	switch (tu_int(r, 0, 6)) {
	case 0: // along an edge: every other axis on the box's min face
		for (int d = 0; d < DIM; ++d) {
			o[d] = d == axis ? b->min[d] - 50.0f : b->min[d];
			dir[d] = d == axis ? 1.0f : 0.0f;
		}
		break;
	case 1: // axis-parallel
		for (int d = 0; d < DIM; ++d) dir[d] = d == axis ? (tu_int(r, 0, 1) ? 1.0f : -2.0f) : 0.0f;
		break;
	case 2: // from inside
		for (int d = 0; d < DIM; ++d) o[d] = (b->min[d] + b->max[d]) * 0.5f;
		break;
	case 3: // grazing: in the plane of a face, moving along it
		o[axis] = b->max[axis];
		dir[axis] = 0.0f;
		break;
	case 4: // diagonally into a corner: every axis enters at t = 8 at once
		for (int d = 0; d < DIM; ++d) {
			o[d] = b->min[d] - 8.0f;
			dir[d] = 1.0f;
		}
		break;
	case 5: // length 0
		*tmax = 0.0f;
		if (tu_int(r, 0, 1))
			for (int d = 0; d < DIM; ++d) o[d] = b->max[d];
		break;
	default: break;
	}
}

// ---- batches -----------------------------------------------------------------------

/// Row i of a batch against the brute force hits of query box q.
static inline void expect_row(const model *m, const box_t *q, const ort_handle *row, int n)
{
	tu_list got = {0}, want = {0};
	for (int k = 0; k < n; ++k) tu_push(&got, tu_key(row[k]));
	for (int i = 0; i < m->n; ++i) {
		const struct oracle_sphere *sp = sphere_of(m->handle[i]);
		// A sphere item: the core's exact rule, dist2(c, q) <= r^2 in double.
		if (tu_overlap(&m->box[i], q) && (!sp || tu_dist2(sp->c, q) <= (double)sp->r * sp->r))
			tu_push(&want, tu_key(m->handle[i]));
	}
	tu_expect_same(&got, &want, "batch row");
}

static inline void check_batches(const tree_t *t, const model *m, tu_rng *r)
{
	enum { NQ = 24 };
	box_t q[NQ];
	float pts[NQ][DIM], origins[NQ][DIM], dirs[NQ][DIM], tmax[NQ];
	for (int i = 0; i < NQ; ++i) {
		item_point(m, r, pts[i]);
		q[i] = scene_box(SK_RANDOM, r, i);
		if (i % 3 == 0) q[i] = m->box[tu_int(r, 0, m->n - 1)];
		random_ray(r, m, origins[i], dirs[i], &tmax[i]);
	}
	int offsets[NQ + 1], total = -1, cap = m->n * NQ + 1;
	ort_handle *out = malloc(sizeof *out * (size_t)cap);
	// Boxes and points with room for everything: each row is the query's answer.
	assert_int_equal(TU(tree_query_boxes)(t, q, NQ, ORT_MASK_ALL, out, cap, offsets, &total), ORT_OK);
	assert_int_equal(offsets[0], 0);
	assert_int_equal(offsets[NQ], total);
	for (int i = 0; i < NQ; ++i) expect_row(m, &q[i], out + offsets[i], offsets[i + 1] - offsets[i]);
	assert_int_equal(TU(tree_query_points)(t, (const float(*)[DIM])pts, NQ, ORT_MASK_ALL, out, cap, offsets, &total), ORT_OK);
	for (int i = 0; i < NQ; ++i) {
		box_t p;
		memcpy(p.min, pts[i], sizeof p.min);
		memcpy(p.max, pts[i], sizeof p.max);
		expect_row(m, &p, out + offsets[i], offsets[i + 1] - offsets[i]);
	}
	// Too small: the same offsets and total, ORT_ERROR_CAPACITY, and out holds
	// exactly the prefix of the full answer.
	int full_offsets[NQ + 1], full_total;
	assert_int_equal(TU(tree_query_boxes)(t, q, NQ, ORT_MASK_ALL, out, cap, full_offsets, &full_total), ORT_OK);
	int small = full_total / 2;
	ort_handle *part = malloc(sizeof *part * (size_t)(small + 1));
	ort_result want_r = small < full_total ? ORT_ERROR_CAPACITY : ORT_OK;
	assert_int_equal(TU(tree_query_boxes)(t, q, NQ, ORT_MASK_ALL, part, small, offsets, &total), want_r);
	assert_int_equal(total, full_total);
	assert_memory_equal(offsets, full_offsets, sizeof offsets);
	for (int k = 0; k < small; ++k) assert_true(ort_handle_equal(part[k], out[k]));
	assert_int_equal(TU(tree_query_boxes)(t, q, NQ, ORT_MASK_ALL, NULL, 0, offsets, &total),
	                 full_total ? ORT_ERROR_CAPACITY : ORT_OK);
	assert_int_equal(total, full_total);
	free(part);
	// Rays: each row is that ray's ray_all, sorted.
	hit_t *hits = malloc(sizeof *hits * (size_t)cap), *want = malloc(sizeof *want * (size_t)(m->n + 1));
	assert_int_equal(TU(tree_query_rays)(t, (const float(*)[DIM])origins, (const float(*)[DIM])dirs, tmax, NQ, ORT_MASK_ALL, hits,
	                                     cap, offsets, &total),
	                 ORT_OK);
	assert_int_equal(offsets[NQ], total);
	for (int i = 0; i < NQ; ++i) {
		int n = oracle_ray_all(m, origins[i], dirs[i], tmax[i], want);
		assert_int_equal(offsets[i + 1] - offsets[i], n);
		for (int k = 0; k < n; ++k) expect_hit(&hits[offsets[i] + k], &want[k], "ray batch", k);
	}
	free(hits);
	free(want);
	free(out);
}

#endif

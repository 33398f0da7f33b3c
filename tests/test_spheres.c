// test_spheres.c: items bounded by spheres (circles in 2D) mixed with boxes.
// Pairs, box/point/sphere queries, rays, nearest and the broad phase must
// equal a brute force that tests the exact shapes, on every placement,
// including spheres sitting on split lines and far from the origin.
#include "testutil.h"

typedef struct shape {
	ort_handle h;
	bool sphere;
	box_t box;      ///< for spheres: the box the tree reports (get_box)
	float c[DIM], r;
} shape;

static double d2_point_box(const float p[DIM], const box_t *b) { return tu_dist2(p, b); }

static double d2_points(const float a[DIM], const float b[DIM])
{
	double s = 0;
	for (int d = 0; d < DIM; ++d) s += ((double)a[d] - b[d]) * ((double)a[d] - b[d]);
	return s;
}

static bool shapes_touch(const shape *a, const shape *b)
{
	if (!a->sphere && !b->sphere) return tu_overlap(&a->box, &b->box);
	if (a->sphere && b->sphere) {
		double r = (double)a->r + b->r;
		return d2_points(a->c, b->c) <= r * r;
	}
	const shape *s = a->sphere ? a : b, *x = a->sphere ? b : a;
	return d2_point_box(s->c, &x->box) <= (double)s->r * s->r;
}

static bool shape_hits_box(const shape *s, const box_t *q)
{
	if (!s->sphere) return tu_overlap(&s->box, q);
	return d2_point_box(s->c, q) <= (double)s->r * s->r;
}

static bool shape_hits_sphere(const shape *s, const float c[DIM], float r)
{
	if (!s->sphere) return d2_point_box(c, &s->box) <= (double)r * r;
	double rr = (double)s->r + r;
	return d2_points(s->c, c) <= rr * rr;
}

static double shape_d2(const float p[DIM], const shape *s)
{
	if (!s->sphere) return tu_dist2(p, &s->box);
	double gap = sqrt(d2_points(p, s->c)) - s->r;
	return gap > 0 ? gap * gap : 0;
}

typedef struct scene {
	shape *s;
	int n;
} scene;

static void add_shape(tree_t *t, scene *sc, tu_rng *r, float extent, bool on_lines)
{
	shape x;
	memset(&x, 0, sizeof x);
	x.sphere = tu_int(r, 0, 2) != 0;
	if (x.sphere) {
		for (int d = 0; d < DIM; ++d)
			x.c[d] = on_lines ? (float)tu_int(r, 0, 8) * extent / 8 : tu_float(r, 0, extent);
		x.r = tu_int(r, 0, 9) == 0 ? 0.0f : tu_float(r, 0, extent * 0.04f);
		assert_int_equal(TU(tree_insert_sphere)(t, x.c, x.r, NULL, &x.h), ORT_OK);
		assert_int_equal(TU(tree_get_box)(t, x.h, &x.box), ORT_OK);
		float c[DIM], rr;
		assert_int_equal(TU(tree_get_sphere)(t, x.h, c, &rr), ORT_OK);
		assert_memory_equal(c, x.c, sizeof c);
		assert_true(rr == x.r);
	} else {
		for (int d = 0; d < DIM; ++d) {
			x.box.min[d] = tu_float(r, 0, extent);
			x.box.max[d] = x.box.min[d] + tu_float(r, 0, extent * 0.06f);
		}
		assert_int_equal(TU(tree_insert)(t, x.box, NULL, &x.h), ORT_OK);
		float c[DIM], rr;
		assert_int_equal(TU(tree_get_sphere)(t, x.h, c, &rr), ORT_ERROR_INVALID_ARGUMENT);
	}
	sc->s[sc->n++] = x;
}

static bool collect_pair(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)ua, (void)ub;
	uint64_t x = a.id, y = b.id;
	tu_push(ctx, x < y ? x << 32 | y : y << 32 | x);
	return true;
}

/// Every pair of the scene whose exact shapes touch (brute force).
static void touching_pairs(const scene *sc, tu_list *want)
{
	for (int i = 0; i < sc->n; ++i)
		for (int j = i + 1; j < sc->n; ++j)
			if (shapes_touch(&sc->s[i], &sc->s[j])) {
				uint64_t a = sc->s[i].h.id, b = sc->s[j].h.id;
				tu_push(want, a < b ? a << 32 | b : b << 32 | a);
			}
}

static void check_scene(tree_t *t, const scene *sc, tu_rng *r, float extent)
{
	tu_check_valid(t);
	tu_list got = {0}, want = {0};
	assert_int_equal(TU(tree_find_pairs)(t, ORT_MASK_ALL, collect_pair, &got), ORT_OK);
	touching_pairs(sc, &want);
	tu_expect_same(&got, &want, "sphere pairs");
	for (int q = 0; q < 30; ++q) {
		box_t qb;
		float c[DIM], dir[DIM];
		for (int d = 0; d < DIM; ++d) {
			qb.min[d] = tu_float(r, -extent * 0.1f, extent);
			qb.max[d] = qb.min[d] + tu_float(r, 0, extent * 0.2f);
			c[d] = q % 4 == 0 && sc->n ? sc->s[q % sc->n].c[d] : tu_float(r, 0, extent);
			dir[d] = q % 5 == 0 && d ? 0.0f : tu_float(r, -1, 1);
		}
		float radius = tu_float(r, 0, extent * 0.1f);
		tu_list g = {0}, w = {0};
		assert_int_equal(TU(tree_query_box)(t, qb, ORT_MASK_ALL, tu_collect, &g), ORT_OK);
		for (int i = 0; i < sc->n; ++i)
			if (shape_hits_box(&sc->s[i], &qb)) tu_push(&w, tu_key(sc->s[i].h));
		tu_expect_same(&g, &w, "box query on spheres");
		tu_list g2 = {0}, w2 = {0};
		assert_int_equal(TU(tree_query_sphere)(t, c, radius, ORT_MASK_ALL, tu_collect, &g2), ORT_OK);
		for (int i = 0; i < sc->n; ++i)
			if (shape_hits_sphere(&sc->s[i], c, radius)) tu_push(&w2, tu_key(sc->s[i].h));
		tu_expect_same(&g2, &w2, "sphere query on spheres");
		tu_list g3 = {0}, w3 = {0};
		assert_int_equal(TU(tree_query_point)(t, c, ORT_MASK_ALL, tu_collect, &g3), ORT_OK);
		for (int i = 0; i < sc->n; ++i)
			if (shape_hits_sphere(&sc->s[i], c, 0.0f)) tu_push(&w3, tu_key(sc->s[i].h));
		tu_expect_same(&g3, &w3, "point query on spheres");
		// Rays: all hits, with the exact entry parameter.
		tu_ray_hits rh = {{0}, INFINITY, UINT64_MAX, false, {0}};
		tu_list w4 = {0};
		float best = INFINITY;
		float tmax = q % 3 ? INFINITY : extent * 0.5f;
		for (int i = 0; i < sc->n; ++i) {
			float te;
			bool hit = sc->s[i].sphere ? tu_ray_sphere(qb.min, dir, tmax, sc->s[i].c, sc->s[i].r, &te)
			                           : tu_ray_hit(qb.min, dir, tmax, &sc->s[i].box, &te);
			// A sphere's ray must also cross its box (the tree prunes by it).
			float tb;
			if (hit && sc->s[i].sphere && !tu_ray_hit(qb.min, dir, tmax, &sc->s[i].box, &tb)) hit = false;
			if (hit) {
				tu_push(&w4, tu_key(sc->s[i].h));
				if (te < best) best = te;
			}
		}
		assert_int_equal(TU(tree_ray_cast)(t, qb.min, dir, tmax, ORT_MASK_ALL, tu_ray_collect, &rh), ORT_OK);
		float got_best = rh.nearest;
		tu_expect_same(&rh.keys, &w4, "ray on spheres");
		free(rh.at.v);
		if (got_best != best) TU_FAIL("ray on spheres: nearest %g, brute force %g\n", (double)got_best, (double)best);
		// Nearest: distance to the exact shape.
		int k = 1 + q % 8;
		tu_near *all = malloc(sizeof *all * (size_t)(sc->n + 1));
		for (int i = 0; i < sc->n; ++i) all[i] = (tu_near){shape_d2(c, &sc->s[i]), sc->s[i].h.id};
		tu_near_first(all, (size_t)sc->n, (size_t)k);
		neighbor_t out[8];
		int found;
		assert_int_equal(TU(tree_nearest)(t, c, k, INFINITY, ORT_MASK_ALL, out, &found), ORT_OK);
		assert_int_equal(found, sc->n < k ? sc->n : k);
		for (int i = 0; i < found; ++i)
			if (out[i].handle.id != all[i].id) TU_FAIL("nearest on spheres differs at #%d\n", i);
		free(all);
	}
}

static void run(ort_placement placement, bool on_lines, uint64_t seed)
{
	tree_t *t = tu_tree_make(placement, 4);
	tu_rng r = tu_rng_make(seed);
	const float extent = on_lines ? 800.0f : 1000.0f;
	scene sc = {malloc(sizeof(shape) * 400), 0};
	for (int i = 0; i < 300; ++i) add_shape(t, &sc, &r, extent, on_lines);
	TU_CONTEXT("spheres, %s%s", ort_placement_string(placement), on_lines ? ", on split lines" : "");
	check_scene(t, &sc, &r, extent);
	// Move: spheres to boxes and back, small and large steps; the broad phase
	// must agree with the exact brute force as well.
	assert_int_equal(TU(tree_update_pairs)(t, NULL, NULL, NULL), ORT_OK);
	for (int i = 0; i < sc.n; ++i) {
		shape *x = &sc.s[i];
		float step = i % 7 == 0 ? extent * 0.3f : 2.0f;
		if (i % 3 == 0) { // becomes a sphere
			x->sphere = true;
			for (int d = 0; d < DIM; ++d) x->c[d] = tu_float(&r, 0, extent);
			x->r = tu_float(&r, 0, step);
			assert_int_equal(TU(tree_move_sphere)(t, x->h, x->c, x->r), ORT_OK);
			assert_int_equal(TU(tree_get_box)(t, x->h, &x->box), ORT_OK);
		} else { // becomes (or stays) a box
			x->sphere = false;
			for (int d = 0; d < DIM; ++d) {
				float v = tu_float(&r, -step, step);
				x->box.min[d] += v;
				x->box.max[d] += v;
			}
			assert_int_equal(TU(tree_move)(t, x->h, x->box), ORT_OK);
		}
	}
	check_scene(t, &sc, &r, extent);
	tu_list cur = {0}, want = {0};
	assert_int_equal(TU(tree_update_pairs)(t, NULL, NULL, NULL), ORT_OK);
	assert_int_equal(TU(tree_current_pairs)(t, collect_pair, &cur), ORT_OK);
	touching_pairs(&sc, &want);
	tu_expect_same(&cur, &want, "broad phase with spheres");
	// Bad spheres are refused and change nothing.
	float bad[DIM] = {0};
	ort_handle h;
	assert_int_equal(TU(tree_insert_sphere)(t, bad, -1.0f, NULL, &h), ORT_ERROR_INVALID_BOX);
	assert_int_equal(TU(tree_insert_sphere)(t, bad, NAN, NULL, &h), ORT_ERROR_INVALID_BOX);
	bad[0] = INFINITY;
	assert_int_equal(TU(tree_insert_sphere)(t, bad, 1.0f, NULL, &h), ORT_ERROR_INVALID_BOX);
	assert_int_equal(TU(tree_count)(t), sc.n);
	tu_check_valid(t);
	free(sc.s);
	TU(tree_destroy)(t);
}

static void test_spheres(void **state)
{
	(void)state;
	for (int p = 0; p < ORT_PLACEMENT_COUNT; ++p) {
		run((ort_placement)p, false, 10u + (unsigned)p);
		run((ort_placement)p, true, 20u + (unsigned)p);
	}
}

/// A few movers (under one item in 32: the broad phase re-tests what each met
/// inside its enlarged box instead of querying the tree), spheres and boxes,
/// stepping small among still spheres and boxes packed close: a pair whose
/// boxes still overlap while its shapes part must end, and one whose shapes
/// meet again begin, against the exact brute force after every update.
static void few_movers(ort_placement placement, uint64_t seed)
{
	enum { N = 640, M = 12 };
	tree_t *t = tu_tree_make(placement, 4);
	tu_rng r = tu_rng_make(seed);
	const float extent = DIM == 2 ? 300.0f : 100.0f;
	scene sc = {malloc(sizeof(shape) * N), 0};
	for (int i = 0; i < N; ++i) add_shape(t, &sc, &r, extent, false);
	assert_int_equal(TU(tree_update_pairs)(t, NULL, NULL, NULL), ORT_OK);
	float dir[M][DIM];
	for (int k = 0; k < M; ++k)
		for (int d = 0; d < DIM; ++d) dir[k][d] = tu_float(&r, -0.8f, 0.8f);
	int frames = tu_size(60, 30);
	for (int f = 0; f < frames; ++f) {
		TU_CONTEXT("spheres, few movers, %s, frame %d", ort_placement_string(placement), f);
		for (int k = 0; k < M; ++k) {
			shape *x = &sc.s[k * (N / M)];
			if (f % 9 == 4) // a turn: back the way it came, and sideways
				for (int d = 0; d < DIM; ++d) dir[k][d] = d == 0 ? -dir[k][d] : tu_float(&r, -0.8f, 0.8f);
			if (x->sphere) {
				for (int d = 0; d < DIM; ++d) x->c[d] += dir[k][d];
				assert_int_equal(TU(tree_move_sphere)(t, x->h, x->c, x->r), ORT_OK);
				assert_int_equal(TU(tree_get_box)(t, x->h, &x->box), ORT_OK);
			} else {
				for (int d = 0; d < DIM; ++d) x->box.min[d] += dir[k][d], x->box.max[d] += dir[k][d];
				assert_int_equal(TU(tree_move)(t, x->h, x->box), ORT_OK);
			}
		}
		assert_int_equal(TU(tree_update_pairs)(t, NULL, NULL, NULL), ORT_OK);
		tu_list cur = {0}, want = {0};
		assert_int_equal(TU(tree_current_pairs)(t, collect_pair, &cur), ORT_OK);
		touching_pairs(&sc, &want);
		tu_expect_same(&cur, &want, "broad phase, few movers among spheres");
	}
	tu_check_valid(t);
	free(sc.s);
	TU(tree_destroy)(t);
}

static void test_few_movers(void **state)
{
	(void)state;
	for (int p = 0; p < ORT_PLACEMENT_COUNT; ++p) few_movers((ort_placement)p, 30u + (unsigned)p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_spheres), cmocka_unit_test(test_few_movers)};
	return cmocka_run_group_tests_name(TU_GROUP("spheres"), tests, NULL, NULL);
}

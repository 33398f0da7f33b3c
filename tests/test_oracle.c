// test_oracle.c: every query and the pair finder against brute force, for one
// dimension (compiled twice: TEST_DIM=2 and TEST_DIM=3), every placement, on
// random and adversarial scenes, after building, inserting and moving.
#include "testutil.h"

// ---- scenes -------------------------------------------------------------------

typedef enum scene_kind {
	SK_RANDOM,
	SK_CENTRE_LINES, ///< edges exactly on split lines at every level
	SK_DUPLICATES,   ///< many identical boxes (more than a bucket)
	SK_POINTS,       ///< zero-size boxes, some coinciding
	SK_TOUCHING,     ///< a grid of boxes sharing faces
	SK_HUGE,         ///< a few huge boxes among many small
	SK_FAR,          ///< coordinates near +-1e6
	SK_NEGATIVE,     ///< all below zero
	SK_CLUSTERED,    ///< dense clusters
	SK_COUNT
} scene_kind;

static const char *scene_names[SK_COUNT] = {"random",  "centre-lines", "duplicates", "points",   "touching",
                                            "huge",    "far",          "negative",   "clustered"};

static box_t random_box(tu_rng *r, float lo, float hi, float maxside)
{
	box_t b;
	for (int d = 0; d < DIM; ++d) {
		float c = tu_float(r, lo, hi), s = tu_float(r, 0, maxside);
		b.min[d] = c;
		b.max[d] = c + s;
	}
	return b;
}

/// Fill boxes[0..n) with a scene of the kind.
static void make_scene(scene_kind kind, box_t *boxes, int n, uint64_t seed)
{
	tu_rng r = tu_rng_make(seed);
	for (int i = 0; i < n; ++i) {
		box_t b;
		switch (kind) {
		case SK_RANDOM: b = random_box(&r, 0, 1000, 40); break;
		case SK_CENTRE_LINES: {
			// Edges on the lines 1000 * k / 2^level, the region's split lines.
			int level = tu_int(&r, 1, 7);
			float step = 1000.0f / (float)(1 << level);
			for (int d = 0; d < DIM; ++d) {
				float line = step * (float)tu_int(&r, 0, 1 << level);
				float s = tu_float(&r, 0, step);
				int mode = tu_int(&r, 0, 2);
				b.min[d] = mode == 0 ? line : mode == 1 ? line - s : line - s * 0.5f;
				b.max[d] = mode == 0 ? line + s : mode == 1 ? line : line + s * 0.5f;
			}
			break;
		}
		case SK_DUPLICATES:
			for (int d = 0; d < DIM; ++d) {
				b.min[d] = 500.0f + (float)(i % 3);
				b.max[d] = 510.0f + (float)(i % 3);
			}
			break;
		case SK_POINTS:
			for (int d = 0; d < DIM; ++d) b.min[d] = b.max[d] = (float)tu_int(&r, 0, 40) * 25.0f;
			break;
		case SK_TOUCHING: {
			int side = 10, k = i;
			for (int d = 0; d < DIM; ++d) {
				int cell = k % side;
				k /= side;
				b.min[d] = (float)cell * 100.0f;
				b.max[d] = (float)(cell + 1) * 100.0f;
			}
			break;
		}
		case SK_HUGE: b = (i % 97 == 0) ? random_box(&r, -200, 200, 1500) : random_box(&r, 0, 1000, 5); break;
		case SK_FAR:
			b = random_box(&r, -1e6f, 1e6f, 5e4f);
			if (i % 2) {
				for (int d = 0; d < DIM; ++d) {
					float c = (i % 4 == 1 ? 1e6f : -1e6f) + tu_float(&r, -100, 100);
					b.min[d] = c;
					b.max[d] = c + tu_float(&r, 0, 10);
				}
			}
			break;
		case SK_NEGATIVE: b = random_box(&r, -1000, -10, 30); break;
		case SK_CLUSTERED: {
			float c = (float)(i % 4) * 250.0f + 100.0f;
			b = random_box(&r, c - 20, c + 20, 8);
			break;
		}
		default: b = random_box(&r, 0, 1, 1);
		}
		boxes[i] = b;
	}
}

// ---- the checks -----------------------------------------------------------------

/// Compare every query kind and the pair set with brute force over the model.
static void check_all(tree_t *t, const model *m, tu_rng *r, int queries)
{
	tu_check_valid(t);
	assert_int_equal(TU(tree_count)(t), m->n);
	tu_check_pairs(t, m);
	box_t world = tu_model_bounds(m);
	for (int q = 0; q < queries; ++q) {
		// Queries around the scene, some at the exact box corners of items.
		box_t qb;
		if (m->n > 0 && q % 3 == 0) {
			qb = m->box[tu_int(r, 0, m->n - 1)];
		} else {
			for (int d = 0; d < DIM; ++d) {
				float span = world.max[d] - world.min[d] + 1.0f;
				float a = tu_float(r, world.min[d] - span * 0.1f, world.max[d] + span * 0.1f);
				float s = tu_float(r, 0, span * 0.3f);
				qb.min[d] = a;
				qb.max[d] = a + s;
			}
		}
		tu_check_box_query(t, m, qb);
		float p[DIM];
		for (int d = 0; d < DIM; ++d) p[d] = q % 2 && m->n ? m->box[q % m->n].min[d] : qb.min[d];
		tu_check_point_query(t, m, p);
		float radius = (qb.max[0] - qb.min[0]) * 0.5f;
		tu_check_sphere_query(t, m, qb.min, radius);
		float dir[DIM];
		for (int d = 0; d < DIM; ++d) dir[d] = (q % 5 == 0 && d > 0) ? 0.0f : tu_float(r, -1, 1);
		tu_check_ray(t, m, qb.min, dir, q % 4 == 0 ? INFINITY : tu_float(r, 0, 2000));
		tu_check_nearest(t, m, p, 1 + q % 12, q % 3 == 0 ? radius : INFINITY);
	}
}

static void scene_test(ort_placement placement, bool use_build, bool use_region)
{
	for (int kind = 0; kind < SK_COUNT; ++kind) {
		int n = kind == SK_TOUCHING ? (DIM == 2 ? 100 : 1000) : 600;
		box_t *boxes = malloc(sizeof *boxes * (size_t)n);
		make_scene((scene_kind)kind, boxes, n, 1000u + (unsigned)kind);
		def_t def = TU(tree_default_def)();
		def.placement = placement;
		if (use_region) {
			for (int d = 0; d < DIM; ++d) {
				def.region.min[d] = 0;
				def.region.max[d] = 1000;
			}
			def.use_region = true;
		}
		tree_t *t;
		assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
		model m;
		tu_model_init(&m, n);
		if (use_build) {
			ort_handle *h = malloc(sizeof *h * (size_t)n);
			assert_int_equal(TU(tree_build)(t, boxes, NULL, n, h), ORT_OK);
			for (int i = 0; i < n; ++i) tu_model_add(&m, h[i], boxes[i]);
			free(h);
		} else {
			for (int i = 0; i < n; ++i) {
				ort_handle h;
				assert_int_equal(TU(tree_insert)(t, boxes[i], NULL, &h), ORT_OK);
				tu_model_add(&m, h, boxes[i]);
			}
		}
		tu_rng r = tu_rng_make(7u + (unsigned)kind);
		TU_CONTEXT("scene %s, placement %s, %s%s", scene_names[kind], ort_placement_string(placement),
		           use_build ? "build" : "inserts", use_region ? ", region" : "");
		check_all(t, &m, &r, 40);
		// Move everything a little, and some far, then check again.
		for (int i = 0; i < m.n; ++i) {
			box_t b = m.box[i];
			float step = (i % 10 == 0) ? 300.0f : 3.0f;
			for (int d = 0; d < DIM; ++d) {
				float v = tu_float(&r, -step, step);
				b.min[d] += v;
				b.max[d] += v;
			}
			assert_int_equal(TU(tree_move)(t, m.handle[i], b), ORT_OK);
			m.box[i] = b;
		}
		check_all(t, &m, &r, 20);
		// Node bounds: check_all's pair pass made them exact; removals leave
		// them too large and moves outward grow them again.
		for (int i = m.n; i-- > 0;)
			if (i % 3 == 0) {
				assert_int_equal(TU(tree_remove)(t, m.handle[i]), ORT_OK);
				tu_model_remove_at(&m, i);
			}
		for (int i = 0; i < m.n; i += 2) {
			box_t b = m.box[i];
			for (int d = 0; d < DIM; ++d) {
				float v = tu_float(&r, -1.0f, 1.0f);
				b.min[d] += v;
				b.max[d] += v + 0.5f;
			}
			assert_int_equal(TU(tree_move)(t, m.handle[i], b), ORT_OK);
			m.box[i] = b;
		}
		check_all(t, &m, &r, 10);
		tu_model_free(&m);
		TU(tree_destroy)(t);
		free(boxes);
	}
}

static void test_loose_inserts(void **s) { (void)s, scene_test(ORT_PLACEMENT_LOOSE, false, false); }
static void test_tight_inserts(void **s) { (void)s, scene_test(ORT_PLACEMENT_TIGHT, false, false); }
static void test_leaves_inserts(void **s) { (void)s, scene_test(ORT_PLACEMENT_LEAVES, false, false); }
static void test_loose_build(void **s) { (void)s, scene_test(ORT_PLACEMENT_LOOSE, true, false); }
static void test_tight_build(void **s) { (void)s, scene_test(ORT_PLACEMENT_TIGHT, true, false); }
static void test_leaves_build(void **s) { (void)s, scene_test(ORT_PLACEMENT_LEAVES, true, false); }
static void test_loose_region(void **s) { (void)s, scene_test(ORT_PLACEMENT_LOOSE, false, true); }
static void test_tight_region(void **s) { (void)s, scene_test(ORT_PLACEMENT_TIGHT, true, true); }
static void test_leaves_region(void **s) { (void)s, scene_test(ORT_PLACEMENT_LEAVES, false, true); }

/// More identical boxes than the bucket: max depth must stop the splitting,
/// and everything stays findable.
static void test_identical_beyond_bucket(void **state)
{
	(void)state;
	for (int p = 0; p < ORT_PLACEMENT_COUNT; ++p) {
		def_t def = TU(tree_default_def)();
		def.placement = (ort_placement)p;
		def.bucket_size = 4;
		tree_t *t;
		assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
		model m;
		tu_model_init(&m, 200);
		box_t b;
		for (int d = 0; d < DIM; ++d) {
			b.min[d] = 1.0f;
			b.max[d] = 1.0f; // a point, repeated
		}
		for (int i = 0; i < 200; ++i) {
			ort_handle h;
			assert_int_equal(TU(tree_insert)(t, b, NULL, &h), ORT_OK);
			tu_model_add(&m, h, b);
		}
		ort_tree_stats st;
		TU(tree_get_stats)(t, &st);
		assert_true(st.depth <= def.max_depth);
		tu_rng r = tu_rng_make(3);
		TU_CONTEXT("identical points, %s", ort_placement_string(def.placement));
		check_all(t, &m, &r, 5);
		assert_int_equal((int)m.n * (m.n - 1) / 2, (int)tu_count_pairs(t));
		tu_model_free(&m);
		TU(tree_destroy)(t);
	}
}

static void largest_node(void *ctx, const box_t *cell, const box_t *bounds, int depth, int entries)
{
	(void)cell, (void)bounds, (void)depth;
	int *most = ctx;
	if (entries > *most) *most = entries;
}

/// Shape, not just answers: small boxes spread over part of a much larger
/// region (and a root grown by an ulp) must still split into small nodes in
/// every placement, by build and by inserts, so nothing degrades to a pile
/// tested pair by pair.
static void test_shape_small_in_large(void **state)
{
	(void)state;
	for (int p = 0; p < ORT_PLACEMENT_COUNT; ++p)
		for (int by_build = 0; by_build < 2; ++by_build) {
			def_t def = TU(tree_default_def)();
			def.placement = (ort_placement)p;
			def.use_region = true;
			for (int d = 0; d < DIM; ++d) {
				def.region.min[d] = 0;
				def.region.max[d] = 100; // the boxes reach exactly to 100: one ulp outside
			}
			tree_t *t;
			assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
			enum { N = 6000 };
			box_t *b = malloc(sizeof *b * N);
			tu_rng r = tu_rng_make(11u + (unsigned)p);
			for (int i = 0; i < N; ++i)
				for (int d = 0; d < DIM; ++d) {
					b[i].min[d] = tu_float(&r, 0, 99.5f);
					b[i].max[d] = i == 0 ? 100.0f : b[i].min[d] + 0.5f;
				}
			if (by_build) {
				assert_int_equal(TU(tree_build)(t, b, NULL, N, NULL), ORT_OK);
			} else {
				for (int i = 0; i < N; ++i) assert_int_equal(TU(tree_insert)(t, b[i], NULL, NULL), ORT_OK);
			}
			int most = 0;
			TU(tree_visit_nodes)(t, largest_node, &most);
			TU_CONTEXT("shape, %s, %s", ort_placement_string(def.placement), by_build ? "build" : "inserts");
			// tight keeps what straddles a split plane in that node: ~N * (0.5 /
			// 100) * DIM boxes cross the root's planes. loose and leaves have no
			// such pile.
			int bound = def.placement == ORT_PLACEMENT_TIGHT ? N / 40 : 4 * def.bucket_size;
			if (most > bound) TU_FAIL("a node holds %d entries (bucket %d)\n", most, def.bucket_size);
			tu_check_valid(t);
			free(b);
			TU(tree_destroy)(t);
		}
}

/// Rays and box queries that meet boxes only at their faces, edges and
/// corners, against brute force: a grid of boxes sharing faces (each node's
/// bound then touches its neighbours' exactly), rays along the shared faces
/// and through the grid's corners, with directions that have zero, negative
/// zero and subnormal components, from inside and from far away; box queries
/// that are faces, edges and corners of the grid. Every placement, built and
/// inserted.
static void test_grid_edges(void **state)
{
	(void)state;
	enum { SIDE = DIM == 2 ? 24 : 9 };
	int n = 1;
	for (int d = 0; d < DIM; ++d) n *= SIDE;
	box_t *boxes = malloc(sizeof *boxes * (size_t)n);
	for (int i = 0; i < n; ++i)
		for (int d = 0, k = i; d < DIM; ++d, k /= SIDE) {
			boxes[i].min[d] = (float)(k % SIDE) * 10.0f;
			boxes[i].max[d] = (float)(k % SIDE + 1) * 10.0f;
		}
	const float sub = 1e-40f; // subnormal
	for (int p = 0; p < ORT_PLACEMENT_COUNT; ++p)
		for (int by_build = 0; by_build < 2; ++by_build) {
			tree_t *t = tu_tree_make((ort_placement)p, 4);
			model m;
			tu_model_init(&m, n);
			ort_handle *h = malloc(sizeof *h * (size_t)n);
			if (by_build)
				assert_int_equal(TU(tree_build)(t, boxes, NULL, n, h), ORT_OK);
			else
				for (int i = 0; i < n; ++i) assert_int_equal(TU(tree_insert)(t, boxes[i], NULL, &h[i]), ORT_OK);
			for (int i = 0; i < n; ++i) tu_model_add(&m, h[i], boxes[i]);
			free(h);
			TU_CONTEXT("grid edges, %s, %s", ort_placement_string((ort_placement)p), by_build ? "build" : "inserts");
			tu_check_valid(t);
			tu_rng r = tu_rng_make(31u + (unsigned)p);
			for (int q = 0; q < 120; ++q) {
				float o[DIM], dir[DIM];
				// An origin on grid lines (or far outside on one axis), and a
				// direction along an axis, a diagonal or at random, with
				// components 0, -0 or subnormal.
				for (int d = 0; d < DIM; ++d) {
					o[d] = (float)tu_int(&r, 0, SIDE) * 10.0f;
					int kind = tu_int(&r, 0, 5);
					dir[d] = kind == 0 ? 0.0f
					       : kind == 1 ? -0.0f
					       : kind == 2 ? (tu_int(&r, 0, 1) ? sub : -sub)
					       : kind == 3 ? (tu_int(&r, 0, 1) ? 1.0f : -1.0f)
					                   : tu_float(&r, -1, 1);
				}
				if (q % 7 == 0) o[q % DIM] = q % 2 ? -1e7f : 1e7f;
				float tmax = q % 3 == 0 ? INFINITY : tu_float(&r, 0, 400);
				tu_check_ray(t, &m, o, dir, tmax);
				// A face, edge or corner of the grid as a box query.
				box_t qb;
				for (int d = 0; d < DIM; ++d) {
					int a = tu_int(&r, 0, SIDE), b = tu_int(&r, 0, 2) ? a : tu_int(&r, a, SIDE);
					qb.min[d] = (float)a * 10.0f;
					qb.max[d] = (float)b * 10.0f;
				}
				tu_check_box_query(t, &m, qb);
			}
			tu_model_free(&m);
			TU(tree_destroy)(t);
		}
	free(boxes);
}

/// The rays of a built tree (which walk its mirror, tree_mirror.c) against
/// brute force, and again after each kind of change: one that leaves the
/// mirror right (an in-place move inside the node's bound keeps the tree's
/// bytes) and ones that drop it (a move that grows a bound, an insert, a
/// removal that prunes), a clear and a rebuild, and in both placements that
/// have one.
static void test_built_mirror_lifetime(void **state)
{
	(void)state;
	enum { N = 3000 };
	box_t *boxes = malloc(sizeof *boxes * N);
	tu_rng r = tu_rng_make(77);
	for (int i = 0; i < N; ++i)
		boxes[i] = i % 97 == 0 ? random_box(&r, 0, 1000, 300) : random_box(&r, 0, 1000, 8); // some stay in inner nodes
	for (int p = 0; p < 2; ++p) {
		def_t def = TU(tree_default_def)();
		def.placement = p ? ORT_PLACEMENT_TIGHT : ORT_PLACEMENT_LOOSE;
		tree_t *t;
		assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
		ort_handle *h = malloc(sizeof *h * N);
		model m;
		tu_model_init(&m, N + 1);
		assert_int_equal(TU(tree_build)(t, boxes, NULL, N, h), ORT_OK);
		for (int i = 0; i < N; ++i) tu_model_add(&m, h[i], boxes[i]);
		ort_tree_stats built, now;
		TU(tree_get_stats)(t, &built);
		for (int step = 0; step < 6; ++step) {
			TU_CONTEXT("mirror, %s, step %d", ort_placement_string(def.placement), step);
			tu_check_valid(t);
			for (int q = 0; q < 60; ++q) {
				float o[DIM], dir[DIM];
				for (int d = 0; d < DIM; ++d) {
					o[d] = tu_float(&r, -50, 1050);
					dir[d] = q % 6 == 0 && d == 0 ? 0.0f : tu_float(&r, -1, 1); // some along axes: the one-box tests
				}
				tu_check_ray(t, &m, o, dir, q % 3 == 0 ? INFINITY : tu_float(&r, 0, 600));
			}
			TU(tree_get_stats)(t, &now);
			if (step == 0) {
				// Shrink a box in place: every bound still holds, the mirror stays.
				box_t b = m.box[1];
				for (int d = 0; d < DIM; ++d) b.max[d] = b.min[d] + (b.max[d] - b.min[d]) * 0.5f;
				assert_int_equal(TU(tree_move)(t, m.handle[1], b), ORT_OK);
				m.box[1] = b;
			} else if (step == 1) {
				if (now.bytes != built.bytes) TU_FAIL("an in-place move changed the bytes: %zu, built %zu\n", now.bytes, built.bytes);
				// Far out: bounds grow, the mirror goes.
				box_t b = m.box[2];
				for (int d = 0; d < DIM; ++d) b.min[d] += 2000.0f, b.max[d] += 2000.0f;
				assert_int_equal(TU(tree_move)(t, m.handle[2], b), ORT_OK);
				m.box[2] = b;
			} else if (step == 2) {
				if (now.bytes >= built.bytes) TU_FAIL("the mirror outlived a growing bound: %zu bytes, built %zu\n", now.bytes, built.bytes);
				// Rebuilt, then an insert and a removal.
				TU(tree_clear)(t);
				tu_model_free(&m);
				tu_model_init(&m, N + 1);
				assert_int_equal(TU(tree_build)(t, boxes, NULL, N, h), ORT_OK);
				for (int i = 0; i < N; ++i) tu_model_add(&m, h[i], boxes[i]);
			} else if (step == 3) {
				ort_handle x;
				box_t b = random_box(&r, 0, 1000, 8);
				assert_int_equal(TU(tree_insert)(t, b, NULL, &x), ORT_OK);
				tu_model_add(&m, x, b);
			} else if (step == 4) {
				assert_int_equal(TU(tree_build)(t, NULL, NULL, 0, NULL), ORT_OK); // nothing stored: nothing made
				for (int i = m.n; i-- > N / 2;) {
					assert_int_equal(TU(tree_remove)(t, m.handle[i]), ORT_OK);
					tu_model_remove_at(&m, i);
				}
			}
		}
		tu_model_free(&m);
		free(h);
		TU(tree_destroy)(t);
	}
	free(boxes);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_loose_inserts),  cmocka_unit_test(test_tight_inserts),
	    cmocka_unit_test(test_leaves_inserts), cmocka_unit_test(test_loose_build),
	    cmocka_unit_test(test_tight_build),    cmocka_unit_test(test_leaves_build),
	    cmocka_unit_test(test_loose_region),   cmocka_unit_test(test_tight_region),
	    cmocka_unit_test(test_leaves_region),  cmocka_unit_test(test_identical_beyond_bucket),
	    cmocka_unit_test(test_shape_small_in_large), cmocka_unit_test(test_grid_edges),
	    cmocka_unit_test(test_built_mirror_lifetime),
	};
	return cmocka_run_group_tests_name(TU_GROUP("oracle"), tests, NULL, NULL);
}

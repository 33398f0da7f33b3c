// test_shapes_exact.c: the shape queries on cases placed by hand, for one
// dimension (compiled twice: TEST_DIM=2 and TEST_DIM=3), every placement:
// the plane builders, ray records and box casts against one box with known
// answers, and trees changed from inside query and cast callbacks. The
// brute force is shapes_oracle.h's.
#include "shapes_oracle.h"

static box_t unit_box(float lo, float hi)
{
	box_t b;
	for (int d = 0; d < DIM; ++d) b.min[d] = lo, b.max[d] = hi;
	return b;
}

/// Planes built from a matrix or polygon: a corner on the boundary counts.
static void test_plane_builders(void **state)
{
	(void)state;
	plane_t pl[6];
#if DIM == 3
	// The identity matrix: the clip cube itself, x, y, z in [-1, 1].
	float id[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
	TU(frustum_from_matrix)(id, pl);
	const float want[6][4] = {{1, 0, 0, 1}, {-1, 0, 0, 1}, {0, 1, 0, 1}, {0, -1, 0, 1}, {0, 0, 1, 1}, {0, 0, -1, 1}};
	for (int k = 0; k < 6; ++k) {
		for (int d = 0; d < 3; ++d) assert_true(pl[k].normal[d] == want[k][d]);
		assert_true(pl[k].offset == want[k][3]);
	}
	// A camera at the origin looking along +x: a point ahead is inside every
	// plane, points behind, beyond the far plane or far off to the side are not.
	plane_t cam[6];
	float mat[16], eye[3] = {0, 0, 0}, at[3] = {10, 0, 0};
	view_projection(eye, at, 1.0f, 1.0f, 100.0f, mat);
	TU(frustum_from_matrix)(mat, cam);
	const float probes[4][3] = {{10, 0, 0}, {-10, 0, 0}, {150, 0, 0}, {10, 50, 0}};
	for (int i = 0; i < 4; ++i) {
		box_t pt;
		memcpy(pt.min, probes[i], sizeof pt.min);
		memcpy(pt.max, probes[i], sizeof pt.max);
		assert_int_equal(oracle_planes(cam, 6, &pt), i == 0);
	}
	int count = 6;
#else
	const float square[4][2] = {{-1, -1}, {1, -1}, {1, 1}, {-1, 1}};
	assert_int_equal(TU(planes_from_polygon)(square, 4, pl), ORT_OK);
	int count = 4;
	const float line[2][2] = {{0, 0}, {1, 1}};
	assert_int_equal(TU(planes_from_polygon)(line, 2, pl + 4), ORT_ERROR_INVALID_ARGUMENT);
	const float dup[3][2] = {{0, 0}, {0, 0}, {1, 1}};
	assert_int_equal(TU(planes_from_polygon)(dup, 3, pl + 4), ORT_ERROR_INVALID_BOX);
#endif
	// Boxes touching the region at a corner, at a face, just outside, inside.
	fixture f;
	for (int p = 0; p < ORT_PLACEMENT_COUNT; ++p) {
		fixture_make(&f, (ort_placement)p, SK_RANDOM, 0, 1);
		box_t boxes[5] = {unit_box(1, 2), unit_box(-3, -1), unit_box(1.0001f, 2), unit_box(-0.5f, 0.5f),
		                  unit_box(-5, 5)};
		boxes[1].max[0] = 0;
		for (int i = 0; i < 5; ++i) insert_item(f.tree, &f.m, boxes[i], false);
		// Spheres of radius 2 and a hair less, centred 3 from the x = 1 face:
		// the first touches it exactly (passes), the second misses.
		box_t around = unit_box(-2, 2), short_of = unit_box(-1.999f, 1.999f);
		around.min[0] = 1, around.max[0] = 5;
		short_of.min[0] = 3 - 1.999f, short_of.max[0] = 3 + 1.999f;
		insert_item(f.tree, &f.m, around, true);
		insert_item(f.tree, &f.m, short_of, true);
		tu_list got = {0};
		assert_int_equal(TU(tree_query_planes)(f.tree, pl, count, ORT_MASK_ALL, tu_collect, &got), ORT_OK);
		assert_int_equal(got.n, 5); // all but the box 0.0001 outside and the short sphere
		free(got.v);
		check_planes(f.tree, &f.m, pl, count);
		assert_int_equal(TU(tree_query_planes)(f.tree, pl, -1, ORT_MASK_ALL, tu_collect, &got), ORT_ERROR_INVALID_ARGUMENT);
		plane_t bad = pl[0];
		bad.offset = NAN;
		assert_int_equal(TU(tree_query_planes)(f.tree, &bad, 1, ORT_MASK_ALL, tu_collect, &got), ORT_ERROR_INVALID_BOX);
		fixture_free(&f);
	}
}

/// Records at faces, edges and corners, from inside, and of length 0.
/// A tree of the placement holding the one box [10, 20] on every axis, among
/// far-away boxes that make the tree split.
static void one_box(fixture *f, ort_placement placement)
{
	fixture_make(f, placement, SK_RANDOM, 0, 1);
	for (int i = 0; i < 40; ++i) {
		box_t b = i == 0 ? unit_box(10, 20) : unit_box(100.0f + 7.0f * (float)i, 104.0f + 7.0f * (float)i);
		insert_item(f->tree, &f->m, b, false);
	}
}

static void ray_records_exact(ort_placement placement)
{
	fixture f;
	one_box(&f, placement);
	hit_t hit;
	float o[DIM], dir[DIM];
	// Diagonally into the corner: every axis enters at t = 5; axis 0 wins the tie.
	for (int d = 0; d < DIM; ++d) o[d] = 5, dir[d] = 1;
	assert_true(TU(tree_ray_first)(f.tree, o, dir, INFINITY, ORT_MASK_ALL, &hit));
	assert_true(hit.t == 5.0f && hit.normal[0] == -1.0f && hit.normal[1] == 0.0f);
	for (int d = 0; d < DIM; ++d) assert_true(hit.point[d] == 10.0f);
	// From inside: t 0, zero normal, the origin itself.
	for (int d = 0; d < DIM; ++d) o[d] = 15;
	assert_true(TU(tree_ray_first)(f.tree, o, dir, INFINITY, ORT_MASK_ALL, &hit));
	assert_true(hit.t == 0.0f && hit.normal[0] == 0.0f && hit.point[0] == 15.0f);
	// Along the top edge from outside, negative direction: enters the max face.
	for (int d = 0; d < DIM; ++d) o[d] = 20, dir[d] = 0;
	o[0] = 30, dir[0] = -2;
	assert_true(TU(tree_ray_first)(f.tree, o, dir, INFINITY, ORT_MASK_ALL, &hit));
	assert_true(hit.t == 5.0f && hit.normal[0] == 1.0f && hit.point[0] == 20.0f);
	// Too short by a hair, and of length 0 outside and on the surface.
	assert_false(TU(tree_ray_first)(f.tree, o, dir, 4.999f, ORT_MASK_ALL, &hit));
	assert_false(TU(tree_ray_first)(f.tree, o, dir, 0.0f, ORT_MASK_ALL, &hit));
	o[0] = 20;
	assert_true(TU(tree_ray_first)(f.tree, o, dir, 0.0f, ORT_MASK_ALL, &hit));
	assert_true(hit.t == 0.0f && hit.normal[0] == 1.0f);
	// Leaving from a face: touching at t 0 but not entering, so zero normal.
	dir[0] = 1;
	assert_true(TU(tree_ray_first)(f.tree, o, dir, 1.0f, ORT_MASK_ALL, &hit));
	assert_true(hit.t == 0.0f && hit.normal[0] == 0.0f);
	int count;
	assert_int_equal(TU(tree_ray_all)(f.tree, o, dir, 1.0f, ORT_MASK_ALL, NULL, 0, &count), ORT_OK);
	assert_int_equal(count, 1);
	assert_int_equal(TU(tree_ray_all)(f.tree, o, dir, NAN, ORT_MASK_ALL, NULL, 0, &count), ORT_ERROR_INVALID_BOX);
	fixture_free(&f);
}

/// A box cast grazing a face, touching at a corner, and starting in contact.
static void box_cast_exact(ort_placement placement)
{
	fixture f;
	one_box(&f, placement);
	float delta[DIM] = {0};
	delta[0] = 1;
	// Slides along the min face from below on every other axis: touches from t = 5.
	box_t m = unit_box(0, 10);
	m.min[0] = 3, m.max[0] = 5;
	cast_hits c = {{0}, calloc(64, sizeof(float)), INFINITY, false};
	assert_int_equal(TU(tree_box_cast)(f.tree, m, delta, 100, ORT_MASK_ALL, cast_collect, &c), ORT_OK);
	assert_int_equal(c.keys.n, 1);
	assert_true(c.nearest == 5.0f);
	// A hair below on axis 1: never touches.
	m.max[1] = 9.999f;
	c.keys.n = 0;
	c.nearest = INFINITY;
	assert_int_equal(TU(tree_box_cast)(f.tree, m, delta, 100, ORT_MASK_ALL, cast_collect, &c), ORT_OK);
	assert_int_equal(c.keys.n, 0);
	// Overlapping at the start: t 0.
	m = unit_box(19, 25);
	assert_int_equal(TU(tree_box_cast)(f.tree, m, delta, 0, ORT_MASK_ALL, cast_collect, &c), ORT_OK);
	assert_int_equal(c.keys.n, 1);
	assert_true(c.nearest == 0.0f);
	box_t bad = unit_box(1, 0);
	assert_int_equal(TU(tree_box_cast)(f.tree, bad, delta, 1, ORT_MASK_ALL, cast_collect, &c), ORT_ERROR_INVALID_BOX);
	free(c.keys.v);
	free(c.t);
	fixture_free(&f);
}

/// Removing and inserting from inside the plane and box-cast callbacks: the
/// changes wait for the query's end (defer.c), then the tree is valid and
/// answers as the model does.
typedef struct changer {
	tree_t *tree;
	model *m;
	int removed;
} changer;

static void changer_hit(changer *c, ort_handle h)
{
	if (h.id % 2) return;
	assert_int_equal(TU(tree_remove)(c->tree, h), ORT_OK);
	for (int i = 0; i < c->m->n; ++i)
		if (ort_handle_equal(c->m->handle[i], h)) tu_model_remove_at(c->m, i);
	insert_item(c->tree, c->m, unit_box(-40.0f - (float)c->removed, -39.0f), c->removed % 2);
	c->removed++;
}

static bool change_on_query(void *ctx, ort_handle h, void *user)
{
	(void)user;
	changer_hit(ctx, h);
	return true;
}

static float change_on_cast(void *ctx, ort_handle h, void *user, float t)
{
	(void)user, (void)t;
	changer_hit(ctx, h);
	return INFINITY;
}

static void test_changes_in_callbacks(void **state)
{
	(void)state;
	for (int p = 0; p < ORT_PLACEMENT_COUNT; ++p) {
		fixture f;
		fixture_make(&f, (ort_placement)p, SK_RANDOM, 300, 7);
		tu_rng r = tu_rng_make(8);
		TU_CONTEXT("changes in callbacks, placement %s", ort_placement_string((ort_placement)p));
		changer c = {f.tree, &f.m, 0};
		for (int round = 0; round < 10; ++round) {
			plane_t pl[8];
			int count = random_planes(&r, &f.m, pl);
			assert_int_equal(TU(tree_query_planes)(f.tree, pl, count, ORT_MASK_ALL, change_on_query, &c), ORT_OK);
			tu_check_valid(f.tree);
			assert_int_equal(TU(tree_count)(f.tree), f.m.n);
			check_planes(f.tree, &f.m, pl, count);
			box_t moving = scene_box(SK_RANDOM, &r, round);
			float delta[DIM];
			for (int d = 0; d < DIM; ++d) delta[d] = tu_float(&r, -1, 1);
			assert_int_equal(TU(tree_box_cast)(f.tree, moving, delta, 800, ORT_MASK_ALL, change_on_cast, &c), ORT_OK);
			tu_check_valid(f.tree);
			assert_int_equal(TU(tree_count)(f.tree), f.m.n);
			check_box_cast(f.tree, &f.m, moving, delta, 800);
		}
		assert_true(c.removed > 20);
		fixture_free(&f);
	}
}

static void test_ray_records_exact(void **s)
{
	(void)s;
	for (int p = 0; p < ORT_PLACEMENT_COUNT; ++p) ray_records_exact((ort_placement)p);
}

static void test_box_cast_exact(void **s)
{
	(void)s;
	for (int p = 0; p < ORT_PLACEMENT_COUNT; ++p) box_cast_exact((ort_placement)p);
}
/// Case i of the slab tests: random and lattice boxes and rays (zero
/// components, origins on faces, grazing edges, zero-size boxes); half are
/// aimed at the box's centre (mostly hits, some grazing).
static void slab_case(tu_rng *r, int i, box_t *b, float o[DIM], float dir[DIM], float *tmax)
{
	bool lattice = i % 2;
	for (int d = 0; d < DIM; ++d) {
		float lo = lattice ? (float)tu_int(r, -4, 4) : tu_float(r, -10, 10);
		float size = lattice ? (float)tu_int(r, 0, 3) : tu_float(r, 0, 5);
		b->min[d] = lo, b->max[d] = lo + size;
		o[d] = lattice ? (float)tu_int(r, -6, 6) : tu_float(r, -12, 12);
		dir[d] = tu_int(r, 0, 3) == 0 ? 0.0f : lattice ? (float)tu_int(r, -2, 2) : tu_float(r, -3, 3);
	}
	if (tu_int(r, 0, 1))
		for (int d = 0; d < DIM; ++d)
			if (dir[d] != 0.0f) dir[d] = (b->min[d] + b->max[d]) * 0.5f - o[d];
	*tmax = tu_int(r, 0, 4) == 0 ? INFINITY : tu_float(r, 0, 8);
}

/// ortN_box_ray, the public slab test, against the documented formula written
/// out in testutil.h (slab_case's boxes and rays), hit and entry to the bit.
static void test_box_ray(void **s)
{
	(void)s;
	tu_rng r = tu_rng_make(11);
	int hits = 0;
	for (int i = 0; i < 200000; ++i) {
		box_t b;
		float o[DIM], dir[DIM], tmax;
		slab_case(&r, i, &b, o, dir, &tmax);
		float want = -1, got = -1;
		bool w = tu_ray_hit(o, dir, tmax, &b, &want);
		bool g = TU(box_ray)(b, o, dir, tmax, &got);
		assert_int_equal(g, w);
		if (w) assert_true(got == want), ++hits;
	}
	print_message("# %d of 200000 rays hit\n", hits);
	assert_true(hits > 20000);
}

typedef struct ray_bits {
	const model *m;
	const float *o, *dir;
	float tmax;
	int reported, wrong;
} ray_bits;

static float ray_bits_hit(void *ctx, ort_handle h, void *user, float t)
{
	ray_bits *rb = ctx;
	int i = (int)(intptr_t)user;
	float want;
	rb->reported++;
	if (!tu_ray_hit(rb->o, rb->dir, rb->tmax, &rb->m->box[i], &want) || want != t || h.id != rb->m->handle[i].id)
		rb->wrong++;
	return -1.0f; // every hit, unclipped
}

/// Ray casts through a tree of slab_case's boxes (lattice ones touch, share
/// faces and repeat): every box the formula hits is reported once, with the
/// formula's entry to the bit. The walk tests boxes its own way (four lanes
/// at once when no axis of the ray is 0), so this holds it to the formula.
static void test_ray_cast_bits(void **s)
{
	(void)s;
	tu_rng r = tu_rng_make(12);
	for (int p = 0; p < ORT_PLACEMENT_COUNT; ++p) {
		tree_t *t = tu_tree_make((ort_placement)p, 4);
		model m;
		tu_model_init(&m, 400);
		float o[DIM], dir[DIM], tmax;
		for (int i = 0; i < 400; ++i) {
			box_t b;
			ort_handle h;
			slab_case(&r, i, &b, o, dir, &tmax);
			assert_int_equal(TU(tree_insert)(t, b, (void *)(intptr_t)m.n, &h), ORT_OK);
			tu_model_add(&m, h, b);
		}
		int hits = 0;
		for (int q = 0; q < 4000; ++q) {
			box_t unused;
			slab_case(&r, q, &unused, o, dir, &tmax);
			if (q % 3 == 0) // no zero axis: the lanes' path
				for (int d = 0; d < DIM; ++d)
					if (dir[d] == 0.0f) dir[d] = q % 2 ? 1.0f : -0.5f;
			ray_bits rb = {&m, o, dir, tmax, 0, 0};
			assert_int_equal(TU(tree_ray_cast)(t, o, dir, tmax, ORT_MASK_ALL, ray_bits_hit, &rb), ORT_OK);
			int want = 0;
			for (int i = 0; i < m.n; ++i) {
				float te;
				want += tu_ray_hit(o, dir, tmax, &m.box[i], &te);
			}
			assert_int_equal(rb.wrong, 0);
			assert_int_equal(rb.reported, want);
			hits += want;
		}
		assert_true(hits > 4000);
		tu_model_free(&m);
		TU(tree_destroy)(t);
	}
}

/// First hits and every hit under a query mask, with boxes removed and
/// nodes left empty (prune delay: empty nodes keep their stale bounds), against
/// brute force: the nearest t and, on a tie, the lower id; every hit counted
/// once. The walk prunes children by the clipped segment (by lanes when no
/// axis of the ray is 0, by ray_slab otherwise): a child's bound tested even a
/// rounding too tightly there loses a hit or a tie (lattice boxes share
/// faces, so ties are common).
static void test_ray_first_masked(void **s)
{
	(void)s;
	tu_rng r = tu_rng_make(13);
	int ties = 0, firsts = 0;
	for (int p = 0; p < ORT_PLACEMENT_COUNT; ++p) {
		def_t def = TU(tree_default_def)();
		def.placement = (ort_placement)p;
		def.bucket_size = 4;
		def.prune_delay = 3;
		tree_t *t;
		assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
		enum { N = 600 };
		ort_handle h[N];
		box_t b[N];
		uint64_t cat[N];
		bool live[N];
		float o[DIM], dir[DIM], tmax;
		for (int i = 0; i < N; ++i) {
			slab_case(&r, i, &b[i], o, dir, &tmax);
			for (int d = 0; d < DIM; ++d) b[i].min[d] *= 8, b[i].max[d] *= 8; // a deeper tree
			assert_int_equal(TU(tree_insert)(t, b[i], (void *)(intptr_t)i, &h[i]), ORT_OK);
			cat[i] = 1u << tu_int(&r, 0, 3);
			ort_filter f = ORT_FILTER_DEFAULT;
			f.category = cat[i];
			assert_int_equal(TU(tree_set_filter)(t, h[i], f), ORT_OK);
			live[i] = true;
		}
		for (int i = 0; i < N; i += 3) {
			assert_int_equal(TU(tree_remove)(t, h[i]), ORT_OK);
			live[i] = false;
		}
		tu_check_valid(t);
		for (int q = 0; q < 6000; ++q) {
			box_t unused;
			slab_case(&r, q, &unused, o, dir, &tmax);
			for (int d = 0; d < DIM; ++d) o[d] *= 8;
			if (q % 4 != 0) // no zero axis: the lanes' path
				for (int d = 0; d < DIM; ++d)
					if (dir[d] == 0.0f) dir[d] = q % 2 ? 1.0f : -0.5f;
			if (tmax < INFINITY) tmax *= 8;
			uint64_t mask = q % 5 == 0 ? ORT_MASK_ALL : (uint64_t)tu_int(&r, 1, 15);
			int want = -1, hits = 0, at_best = 0;
			float best = INFINITY;
			for (int i = 0; i < N; ++i) {
				float te;
				if (!live[i] || !(cat[i] & mask) || !tu_ray_hit(o, dir, tmax, &b[i], &te)) continue;
				hits++;
				if (te < best) {
					best = te;
					want = i;
					at_best = 1;
				} else if (te == best) {
					at_best++;
					if (h[i].id < h[want].id) want = i;
				}
			}
			ties += at_best > 1;
			hit_t hit;
			bool got = TU(tree_ray_first)(t, o, dir, tmax, mask, &hit);
			assert_int_equal(got, want >= 0);
			if (got) {
				firsts++;
				if (hit.t != best || hit.handle.id != h[want].id)
					TU_FAIL("ray_first (mask %llx): id %u at %g, brute force id %u at %g\n", (unsigned long long)mask,
					        hit.handle.id, (double)hit.t, h[want].id, (double)best);
			}
			int count = -1;
			assert_int_equal(TU(tree_ray_all)(t, o, dir, tmax, mask, NULL, 0, &count), ORT_OK);
			assert_int_equal(count, hits);
		}
		TU(tree_destroy)(t);
	}
	print_message("# %d first hits, %d of them ties\n", firsts, ties);
	assert_true(firsts > 3000);
	assert_true(ties > 50);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plane_builders), cmocka_unit_test(test_ray_records_exact),
	    cmocka_unit_test(test_box_cast_exact), cmocka_unit_test(test_changes_in_callbacks),
	    cmocka_unit_test(test_box_ray), cmocka_unit_test(test_ray_cast_bits), cmocka_unit_test(test_ray_first_masked),
	};
	return cmocka_run_group_tests_name(TU_GROUP("shapes exact"), tests, NULL, NULL);
}

// test_ops.c: random operation sequences against the brute-force model, for
// one dimension (compiled twice: TEST_DIM=2 and TEST_DIM=3).
//
// Thousands of steps of insert / remove / move (near and far) / clear / build /
// tick, with misuse (stale handles, bad boxes) mixed in, over every placement,
// with and without a region, small buckets, both prune modes and several merge
// sizes. After every step the tree must validate and hold the model's count;
// every CHECK_EVERY steps every box, user pointer, pair and query kind is
// compared with the model. Then the edges on their own: stale handles, bad
// boxes, far coordinates, bad definitions, NULL arguments.
//
// ORTHANT_OPS_STEPS in the environment overrides the steps per configuration.
//
// ## Library bugs this file found
//
// Each keeps its minimal reproduction below (test_fixed_*), now a regression
// test, and the random sequences no longer steer around any of them:
//
// - prune: with prune_delay > 0, an emptied node under a waiting branch was
//   left neither waiting nor pruned.
// - leaves reserve: a leaves insert reaching several leaves split one of them
//   and spent the pool room reserved for the others (a heap overflow).
// - far distance: squared distances in float overflowed past ~1.8e19.
// - root overflow: doubling every axis at once overflowed a long axis to inf
//   while growing to reach a box along a short one; now refused with
//   ORT_ERROR_OUT_OF_RANGE, the tree unchanged.
// - get_box assert: a stale get_box did not reach the assert hook.
#include <stdlib.h>

#include "testutil.h"

#define CHECK_EVERY 50
#define STEPS_DEFAULT 400
/// Above this many items removals win over inserts, so the model stays cheap.
#define SOFT_CAP 240
#define STALE_RING 16

// ---- the harness ------------------------------------------------------------------

/// A tree, its model, the user pointers parallel to the model, and the
/// misuse bookkeeping.
typedef struct harness {
	tree_t *t;
	def_t def;
	model m;
	void **user; ///< parallel to m.handle / m.box
	tu_rng r;
	int asserts;         ///< calls of the def's assert_fn
	uintptr_t next_user; ///< user pointers are distinct small integers
	ort_handle stale[STALE_RING];
	int stale_n, stale_at;
	int steps;
} harness;

static void count_assert(void *ctx, const char *message)
{
	(void)message;
	++*(int *)ctx;
}

static void h_init(harness *h, def_t def, uint64_t seed)
{
	memset(h, 0, sizeof *h);
	def.assert_fn = count_assert;
	def.assert_ctx = &h->asserts;
	h->def = def;
	h->r = tu_rng_make(seed);
	h->next_user = 1;
	assert_int_equal(TU(tree_create)(&h->def, &h->t), ORT_OK);
	tu_model_init(&h->m, 64);
	h->user = malloc(sizeof *h->user * (size_t)h->m.cap);
}

static void h_free(harness *h)
{
	TU(tree_destroy)(h->t);
	tu_model_free(&h->m);
	free(h->user);
}

static void h_add(harness *h, ort_handle handle, box_t b, void *user)
{
	tu_model_add(&h->m, handle, b);
	h->user = realloc(h->user, sizeof *h->user * (size_t)h->m.cap);
	h->user[h->m.n - 1] = user;
}

static void h_forget(harness *h, ort_handle handle)
{
	h->stale[h->stale_at] = handle;
	h->stale_at = (h->stale_at + 1) % STALE_RING;
	if (h->stale_n < STALE_RING) h->stale_n++;
}

static void h_remove_at(harness *h, int i)
{
	h_forget(h, h->m.handle[i]);
	h->user[i] = h->user[h->m.n - 1];
	tu_model_remove_at(&h->m, i);
}

static void *h_new_user(harness *h) { return (void *)(h->next_user++ * 16); }


// ---- boxes ------------------------------------------------------------------------

static box_t box_at(const float c[DIM], float side)
{
	box_t b;
	for (int d = 0; d < DIM; ++d) {
		b.min[d] = c[d];
		b.max[d] = c[d] + side;
	}
	return b;
}

/// A box in the mix the sequences use: small, points on a grid (many coincide),
/// edges on the region's split lines, large, and now and then far away.
static box_t random_box(tu_rng *r)
{
	box_t b;
	int kind = tu_int(r, 0, 99);
	if (kind < 50) {
		for (int d = 0; d < DIM; ++d) {
			b.min[d] = tu_float(r, 0, 1000);
			b.max[d] = b.min[d] + tu_float(r, 0, 40);
		}
	} else if (kind < 65) {
		float c[DIM];
		for (int d = 0; d < DIM; ++d) c[d] = (float)tu_int(r, 0, 8) * 125.0f;
		b = box_at(c, 0.0f);
	} else if (kind < 80) {
		int level = tu_int(r, 1, 6);
		float step = 1000.0f / (float)(1 << level);
		for (int d = 0; d < DIM; ++d) {
			float line = step * (float)tu_int(r, 0, 1 << level);
			float s = tu_float(r, 0, step);
			b.min[d] = tu_int(r, 0, 1) ? line : line - s;
			b.max[d] = b.min[d] + s;
		}
	} else if (kind < 95) {
		for (int d = 0; d < DIM; ++d) {
			b.min[d] = tu_float(r, -200, 1000);
			b.max[d] = b.min[d] + tu_float(r, 50, 700);
		}
	} else {
		float c[DIM];
		for (int d = 0; d < DIM; ++d) c[d] = (tu_int(r, 0, 1) ? 1e6f : -1e6f) + tu_float(r, -500, 500);
		b = box_at(c, tu_float(r, 0, 30));
	}
	return b;
}

static box_t nudge(tu_rng *r, box_t b, float step)
{
	for (int d = 0; d < DIM; ++d) {
		float v = tu_float(r, -step, step);
		b.min[d] += v;
		b.max[d] += v;
	}
	return b;
}

/// A box the tree must refuse, and the error it must give.
static box_t bad_box(tu_rng *r, ort_result *want)
{
	box_t b = random_box(r);
	int d = tu_int(r, 0, DIM - 1);
	switch (tu_int(r, 0, 6)) {
	case 0: b.min[d] = NAN, *want = ORT_ERROR_INVALID_BOX; break;
	case 1: b.max[d] = NAN, *want = ORT_ERROR_INVALID_BOX; break;
	case 2: b.max[d] = INFINITY, *want = ORT_ERROR_INVALID_BOX; break;
	case 3: b.min[d] = -INFINITY, *want = ORT_ERROR_INVALID_BOX; break;
	case 4: b.min[d] = b.max[d] + 1.0f, *want = ORT_ERROR_INVALID_BOX; break;
	case 5: b.max[d] = ORTHANT_COORD_LIMIT * 2.0f, *want = ORT_ERROR_OUT_OF_RANGE; break;
	default: b.min[d] = -3.0e38f, *want = ORT_ERROR_OUT_OF_RANGE; break;
	}
	return b;
}

// ---- checks -----------------------------------------------------------------------

/// Every model item is in the tree with its box and user pointer.
static void check_items(const harness *h)
{
	assert_int_equal(TU(tree_count)(h->t), h->m.n);
	for (int i = 0; i < h->m.n; ++i) {
		box_t b;
		if (TU(tree_get_box)(h->t, h->m.handle[i], &b) != ORT_OK) TU_FAIL("item %d lost\n", i);
		if (memcmp(&b, &h->m.box[i], sizeof b)) TU_FAIL("item %d has another box\n", i);
		if (TU(tree_get_user_data)(h->t, h->m.handle[i]) != h->user[i]) TU_FAIL("item %d: user data differs\n", i);
	}
}

/// Pairs and every query kind against the model.
static void check_queries(harness *h, int queries)
{
	tu_rng *r = &h->r;
	const model *m = &h->m;
	tu_check_pairs(h->t, m);
	box_t world = tu_model_bounds(m);
	for (int q = 0; q < queries; ++q) {
		box_t qb;
		if (m->n > 0 && q % 3 == 0) {
			qb = m->box[tu_int(r, 0, m->n - 1)];
		} else {
			for (int d = 0; d < DIM; ++d) {
				float span = world.max[d] - world.min[d] + 1.0f;
				qb.min[d] = tu_float(r, world.min[d] - span * 0.1f, world.max[d]);
				qb.max[d] = qb.min[d] + tu_float(r, 0, span * 0.3f);
			}
		}
		tu_check_box_query(h->t, m, qb);
		float p[DIM];
		for (int d = 0; d < DIM; ++d) p[d] = q % 2 && m->n ? m->box[q % m->n].max[d] : qb.min[d];
		tu_check_point_query(h->t, m, p);
		// Radii stay below 1e18: beyond ~1.8e19 a squared radius overflows a
		// float, in the brute force too (see test_fixed_far_distances).
		float radius = fminf((qb.max[0] - qb.min[0]) * 0.5f, 1e18f);
		tu_check_sphere_query(h->t, m, p, radius);
		float dir[DIM];
		for (int d = 0; d < DIM; ++d) dir[d] = (q % 4 == 0 && d > 0) ? 0.0f : tu_float(r, -1, 1);
		tu_check_ray(h->t, m, qb.min, dir, q % 2 ? INFINITY : tu_float(r, 0, 1500));
		tu_check_nearest(h->t, m, p, 1 + q * 7 % 40, q % 3 == 1 ? qb.max[0] - qb.min[0] : INFINITY);
	}
}

static void check_step(harness *h)
{
	tu_check_valid(h->t);
	assert_int_equal(TU(tree_count)(h->t), h->m.n);
}

static void check_full(harness *h)
{
	check_step(h);
	check_items(h);
	check_queries(h, 3);
}

// ---- operations -------------------------------------------------------------------

static void op_insert(harness *h)
{
	box_t b = random_box(&h->r);
	void *u = h_new_user(h);
	ort_handle handle;
	assert_int_equal(TU(tree_insert)(h->t, b, u, &handle), ORT_OK);
	assert_false(ort_handle_is_null(handle));
	h_add(h, handle, b, u);
}

static void op_remove(harness *h)
{
	if (h->m.n == 0) return;
	int i = tu_int(&h->r, 0, h->m.n - 1);
	assert_int_equal(TU(tree_remove)(h->t, h->m.handle[i]), ORT_OK);
	h_remove_at(h, i);
}

static void op_move(harness *h, bool far)
{
	if (h->m.n == 0) return;
	int i = tu_int(&h->r, 0, h->m.n - 1);
	box_t b = far ? random_box(&h->r) : nudge(&h->r, h->m.box[i], tu_int(&h->r, 0, 3) ? 2.0f : 60.0f);
	assert_int_equal(TU(tree_move)(h->t, h->m.handle[i], b), ORT_OK);
	h->m.box[i] = b;
}

static void op_build(harness *h)
{
	int n = tu_int(&h->r, 1, 60);
	box_t *boxes = malloc(sizeof *boxes * (size_t)n);
	void **users = malloc(sizeof *users * (size_t)n);
	ort_handle *out = malloc(sizeof *out * (size_t)n);
	for (int k = 0; k < n; ++k) {
		boxes[k] = random_box(&h->r);
		users[k] = h_new_user(h);
	}
	assert_int_equal(TU(tree_build)(h->t, boxes, users, n, out), ORT_OK);
	for (int k = 0; k < n; ++k) h_add(h, out[k], boxes[k], users[k]);
	free(boxes);
	free(users);
	free(out);
}

static void op_clear(harness *h)
{
	TU(tree_clear)(h->t);
	for (int i = h->m.n; i-- > 0;) h_remove_at(h, i);
}

/// Misuse: a stale handle or a bad box. The call fails with the right error,
/// stale handles reach the assert hook, and nothing changes.
static void op_misuse(harness *h)
{
	tu_rng *r = &h->r;
	int before = h->asserts;
	int kind = tu_int(r, 0, 5);
	if (kind <= 2 && h->stale_n > 0) {
		ort_handle s = h->stale[tu_int(r, 0, h->stale_n - 1)];
		box_t b = random_box(r), got;
		assert_false(TU(tree_is_valid)(h->t, s));
		if (kind == 0) assert_int_equal(TU(tree_remove)(h->t, s), ORT_ERROR_STALE_HANDLE);
		if (kind == 1) assert_int_equal(TU(tree_move)(h->t, s, b), ORT_ERROR_STALE_HANDLE);
		if (kind == 2) {
			assert_int_equal(TU(tree_get_box)(h->t, s, &got), ORT_ERROR_STALE_HANDLE);
			assert_null(TU(tree_get_user_data)(h->t, s));
		} else {
			assert_int_equal(h->asserts, before + 1);
		}
	} else if (kind == 3) {
		ort_result want;
		box_t b = bad_box(r, &want);
		ort_handle out = {7, 7};
		assert_int_equal(TU(tree_insert)(h->t, b, NULL, &out), want);
		assert_true(ort_handle_is_null(out));
	} else if (kind == 4 && h->m.n > 0) {
		ort_result want;
		box_t b = bad_box(r, &want);
		assert_int_equal(TU(tree_move)(h->t, h->m.handle[tu_int(r, 0, h->m.n - 1)], b), want);
	} else {
		box_t boxes[8];
		ort_result want;
		for (int k = 0; k < 8; ++k) boxes[k] = random_box(r);
		boxes[tu_int(r, 0, 7)] = bad_box(r, &want);
		assert_int_equal(TU(tree_build)(h->t, boxes, NULL, 8, NULL), want);
	}
	check_items(h);
}

/// One random step.
static void h_step(harness *h)
{
	tu_rng *r = &h->r;
	int x = tu_int(r, 0, 999);
	bool grow = h->m.n < SOFT_CAP;
	if (x < 330)
		grow ? op_insert(h) : op_remove(h);
	else if (x < 480)
		op_remove(h);
	else if (x < 700)
		op_move(h, false);
	else if (x < 780)
		op_move(h, true);
	else if (x < 880)
		TU(tree_tick)(h->t);
	else if (x < 900)
		grow ? op_build(h) : op_remove(h);
	else if (x < 904)
		op_clear(h);
	else if (x < 950)
		op_misuse(h);
	else
		check_queries(h, 1);
	h->steps++;
	check_step(h);
}

// ---- the configuration matrix -------------------------------------------------------

static int steps_per_config(void)
{
	const char *s = getenv("ORTHANT_OPS_STEPS");
	int n = s ? atoi(s) : 0;
	return n > 0 ? n : STEPS_DEFAULT;
}

static void run_config(ort_placement placement, bool region, int bucket, int prune, int merge, int variant)
{
	def_t def = TU(tree_default_def)();
	def.placement = placement;
	def.bucket_size = bucket;
	def.prune_delay = prune;
	def.merge_size = merge;
	def.looseness = variant % 3 == 0 ? 2.0f : variant % 3 == 1 ? 1.25f : 4.0f;
	def.max_depth = variant % 4 == 3 ? 3 : 8;
	def.min_cell_size = variant % 5 == 4 ? 10.0f : 0.0f;
	def.item_capacity = variant % 2 ? 100 : 0;
	if (region) {
		for (int d = 0; d < DIM; ++d) {
			def.region.min[d] = 0;
			def.region.max[d] = 1000;
		}
		def.use_region = true;
	}
	harness h;
	h_init(&h, def, 0x5eedu + (uint64_t)variant * 977u);
	int steps = steps_per_config();
	for (int s = 0; s < steps; ++s) {
		TU_CONTEXT("%s%s bucket %d prune %d merge %d looseness %g depth %d min cell %g: step %d",
		           ort_placement_string(placement), region ? " region" : "", bucket, prune, merge,
		           (double)def.looseness, def.max_depth, (double)def.min_cell_size, s);
		h_step(&h);
		if (s % CHECK_EVERY == CHECK_EVERY - 1) check_full(&h);
	}
	check_full(&h);
	h_free(&h);
}

static int configs_run, steps_run;

static void run_placement(ort_placement placement)
{
	static const int buckets[] = {1, 2, 4, 16};
	int variant = 0;
	for (int region = 0; region < 2; ++region)
		for (int b = 0; b < 4; ++b)
			for (int prune = 0; prune <= 8; prune += 8)
				for (int mv = 0; mv < 3; ++mv) {
					int bucket = buckets[b];
					int merge = mv == 0 ? -1 : mv == 1 ? 0 : bucket;
					run_config(placement, region, bucket, prune, merge, variant++);
					configs_run++;
					steps_run += steps_per_config();
				}
}

static void test_ops_loose(void **s) { (void)s, run_placement(ORT_PLACEMENT_LOOSE); }
static void test_ops_tight(void **s) { (void)s, run_placement(ORT_PLACEMENT_TIGHT); }
static void test_ops_leaves(void **s) { (void)s, run_placement(ORT_PLACEMENT_LEAVES); }

// ---- edges --------------------------------------------------------------------------

static def_t placement_def(int p, bool region)
{
	def_t def = TU(tree_default_def)();
	def.placement = (ort_placement)p;
	def.bucket_size = 2;
	if (region) {
		for (int d = 0; d < DIM; ++d) {
			def.region.min[d] = -100;
			def.region.max[d] = 100;
		}
		def.use_region = true;
	}
	return def;
}

static void fill(harness *h, int n)
{
	for (int i = 0; i < n; ++i) op_insert(h);
}

/// Remove twice, move / get of a removed handle, a handle of another tree, the
/// null handle and handles from before a clear: each fails with
/// ORT_ERROR_STALE_HANDLE, and the tree keeps everything.
static void test_stale_handles(void **state)
{
	(void)state;
	for (int p = 0; p < ORT_PLACEMENT_COUNT; ++p) {
		harness h, other;
		h_init(&h, placement_def(p, false), 11);
		h_init(&other, placement_def(p, false), 12);
		TU_CONTEXT("stale handles, %s", ort_placement_string((ort_placement)p));
		fill(&h, 40);
		fill(&other, 40);
		box_t b = h.m.box[0], got;
		ort_handle gone = h.m.handle[3];
		assert_int_equal(TU(tree_remove)(h.t, gone), ORT_OK);
		h_remove_at(&h, 3);
		ort_handle bad[] = {gone, ORT_NULL_HANDLE, other.m.handle[5], {gone.id, gone.gen + 1}, {100000, 1}};
		for (size_t k = 0; k < sizeof bad / sizeof bad[0]; ++k) {
			int before = h.asserts;
			assert_false(TU(tree_is_valid)(h.t, bad[k]));
			assert_int_equal(TU(tree_remove)(h.t, bad[k]), ORT_ERROR_STALE_HANDLE);
			assert_int_equal(h.asserts, before + 1);
			assert_int_equal(TU(tree_move)(h.t, bad[k], b), ORT_ERROR_STALE_HANDLE);
			assert_int_equal(h.asserts, before + 2);
			assert_int_equal(TU(tree_get_box)(h.t, bad[k], &got), ORT_ERROR_STALE_HANDLE);
			assert_null(TU(tree_get_user_data)(h.t, bad[k]));
			check_step(&h);
			check_items(&h);
		}
		// The slot of the removed item is reused: the old handle still fails.
		op_insert(&h);
		assert_int_equal(TU(tree_remove)(h.t, gone), ORT_ERROR_STALE_HANDLE);
		// Handles from before a clear.
		ort_handle before_clear = h.m.handle[0];
		op_clear(&h);
		fill(&h, 10);
		assert_false(TU(tree_is_valid)(h.t, before_clear));
		assert_int_equal(TU(tree_move)(h.t, before_clear, b), ORT_ERROR_STALE_HANDLE);
		check_step(&h);
		check_full(&h);
		check_full(&other);
		h_free(&h);
		h_free(&other);
	}
}

/// NaN, infinities, min > max and coordinates beyond ORTHANT_COORD_LIMIT on
/// insert, move and build: the right error and the tree as it was.
static void test_bad_boxes(void **state)
{
	(void)state;
	static const float bad[] = {NAN, INFINITY, -INFINITY, 2.0e30f, -2.0e30f, 3.4e38f};
	for (int p = 0; p < ORT_PLACEMENT_COUNT; ++p) {
		for (int region = 0; region < 2; ++region) {
			harness h;
			h_init(&h, placement_def(p, region), 21);
			TU_CONTEXT("bad boxes, %s%s", ort_placement_string((ort_placement)p), region ? " region" : "");
			fill(&h, 30);
			ort_tree_stats st0;
			TU(tree_get_stats)(h.t, &st0);
			box_t root0 = TU(tree_root_cell)(h.t);
			for (size_t v = 0; v < sizeof bad / sizeof bad[0]; ++v) {
				ort_result want = isfinite(bad[v]) ? ORT_ERROR_OUT_OF_RANGE : ORT_ERROR_INVALID_BOX;
				for (int d = 0; d < DIM; ++d) {
					for (int side = 0; side < 2; ++side) {
						box_t b = h.m.box[1];
						if (side) {
							b.max[d] = bad[v];
							if (!isnan(bad[v]) && bad[v] < b.min[d]) b.min[d] = bad[v];
						} else {
							b.min[d] = bad[v];
							if (!isnan(bad[v]) && bad[v] > b.max[d]) b.max[d] = bad[v];
						}
						ort_handle out;
						assert_int_equal(TU(tree_insert)(h.t, b, NULL, &out), want);
						assert_true(ort_handle_is_null(out));
						assert_int_equal(TU(tree_move)(h.t, h.m.handle[2], b), want);
						box_t batch[5] = {h.m.box[0], h.m.box[3], b, h.m.box[4], h.m.box[5]};
						ort_handle hs[5];
						assert_int_equal(TU(tree_build)(h.t, batch, NULL, 5, hs), want);
						check_step(&h);
						check_items(&h);
					}
				}
			}
			// min > max on one axis, and at the limit exactly (accepted).
			box_t b = h.m.box[1];
			b.min[DIM - 1] = b.max[DIM - 1] + 0.5f;
			assert_int_equal(TU(tree_insert)(h.t, b, NULL, NULL), ORT_ERROR_INVALID_BOX);
			assert_int_equal(TU(tree_move)(h.t, h.m.handle[0], b), ORT_ERROR_INVALID_BOX);
			assert_int_equal(TU(tree_build)(h.t, &b, NULL, 1, NULL), ORT_ERROR_INVALID_BOX);
			ort_tree_stats st1;
			TU(tree_get_stats)(h.t, &st1);
			box_t root1 = TU(tree_root_cell)(h.t);
			assert_int_equal(st0.nodes, st1.nodes);
			assert_int_equal(st0.entries, st1.entries);
			assert_memory_equal(&root0, &root1, sizeof root0);
			check_full(&h);
			// A bad batch into an empty tree stores nothing either.
			op_clear(&h);
			box_t batch[3] = {random_box(&h.r), b, random_box(&h.r)};
			assert_int_equal(TU(tree_build)(h.t, batch, NULL, 3, NULL), ORT_ERROR_INVALID_BOX);
			assert_int_equal(TU(tree_count)(h.t), 0);
			check_full(&h);
			h_free(&h);
		}
	}
}

/// Boxes at +-1e6, +-1e20 and the coordinate limit itself: the root grows to
/// hold them, and every query still finds everything.
static void test_far_coordinates(void **state)
{
	(void)state;
	static const float far[] = {1e6f, 1e20f, ORTHANT_COORD_LIMIT};
	for (int p = 0; p < ORT_PLACEMENT_COUNT; ++p) {
		for (int region = 0; region < 2; ++region) {
			for (size_t f = 0; f < sizeof far / sizeof far[0]; ++f) {
				harness h;
				h_init(&h, placement_def(p, region), 31 + f);
				TU_CONTEXT("far %g, %s%s", (double)far[f], ort_placement_string((ort_placement)p),
				           region ? " region" : "");
				fill(&h, 50);
				// Far boxes in every orthant, small and spanning to the limit.
				for (int corner = 0; corner < (1 << DIM); ++corner) {
					float c[DIM];
					for (int d = 0; d < DIM; ++d) c[d] = (corner >> d & 1) ? far[f] : -far[f];
					box_t b = box_at(c, 0.0f);
					for (int d = 0; d < DIM; ++d) {
						if (c[d] > 0) b.min[d] = c[d] * 0.5f;
						else b.max[d] = c[d] * 0.5f;
					}
					void *u = h_new_user(&h);
					ort_handle hd;
					assert_int_equal(TU(tree_insert)(h.t, b, u, &hd), ORT_OK);
					h_add(&h, hd, b, u);
					check_step(&h);
				}
				box_t root = TU(tree_root_cell)(h.t);
				for (int i = 0; i < h.m.n; ++i)
					for (int d = 0; d < DIM; ++d)
						if (h.m.box[i].min[d] < root.min[d] || h.m.box[i].max[d] > root.max[d])
							TU_FAIL("item %d outside the root cell\n", i);
				check_full(&h);
				// Near items go far and far ones come back; then the far ones go.
				for (int i = 0; i < h.m.n; ++i) {
					box_t b = h.m.box[i];
					if (i % 7 == 0) {
						for (int d = 0; d < DIM; ++d) {
							b.min[d] = -far[f] * 0.75f;
							b.max[d] = b.min[d] + 1.0f;
						}
					} else if (fabsf(b.min[0]) > 1e5f || fabsf(b.max[0]) > 1e5f) {
						b = random_box(&h.r);
						if (fabsf(b.min[0]) > 1e5f) b = nudge(&h.r, h.m.box[1], 5.0f);
					} else {
						continue;
					}
					assert_int_equal(TU(tree_move)(h.t, h.m.handle[i], b), ORT_OK);
					h.m.box[i] = b;
					check_step(&h);
				}
				check_full(&h);
				for (int i = h.m.n; i-- > 0;) {
					if (fabsf(h.m.box[i].min[0]) < 1e5f) continue;
					assert_int_equal(TU(tree_remove)(h.t, h.m.handle[i]), ORT_OK);
					h_remove_at(&h, i);
					check_step(&h);
				}
				check_full(&h);
				// A batch spanning everything, into an empty tree.
				op_clear(&h);
				box_t batch[6];
				for (int k = 0; k < 6; ++k) batch[k] = random_box(&h.r);
				for (int d = 0; d < DIM; ++d) {
					batch[0].min[d] = batch[0].max[d] = -far[f];
					batch[1].min[d] = batch[1].max[d] = far[f];
				}
				ort_handle hs[6];
				assert_int_equal(TU(tree_build)(h.t, batch, NULL, 6, hs), ORT_OK);
				for (int k = 0; k < 6; ++k) h_add(&h, hs[k], batch[k], NULL);
				check_full(&h);
				h_free(&h);
			}
		}
	}
}

/// Every field out of its range makes tree_create refuse.
static void test_bad_definitions(void **state)
{
	(void)state;
	enum { CASES = 24 };
	for (int c = 0; c < CASES; ++c) {
		def_t def = TU(tree_default_def)();
		switch (c) {
		case 0: def.bucket_size = 0; break;
		case 1: def.bucket_size = -3; break;
		case 2: def.max_depth = -1; break;
		case 3: def.max_depth = ORTHANT_MAX_DEPTH + 1; break;
		case 4: def.min_cell_size = -1.0f; break;
		case 5: def.min_cell_size = NAN; break;
		case 6: def.min_cell_size = INFINITY; break;
		case 7: def.placement = ORT_PLACEMENT_COUNT; break;
		case 8: def.placement = (ort_placement)-1; break;
		case 9: def.looseness = 1.0f; break;
		case 10: def.looseness = 4.01f; break;
		case 11: def.looseness = NAN; break;
		case 12: def.merge_size = -2; break;
		case 13: def.merge_size = def.bucket_size + 1; break;
		case 14: def.prune_delay = -1; break;
		case 15: def.item_capacity = -1; break;
		case 16: def.allocator.alloc = (void *(*)(void *, size_t))1; break;
		case 17: def.allocator.free = (void (*)(void *, void *, size_t))1; break;
		case 18:
		case 19:
		case 20:
		case 21:
		case 22:
			def.use_region = true;
			for (int d = 0; d < DIM; ++d) {
				def.region.min[d] = 0;
				def.region.max[d] = 10;
			}
			if (c == 18) def.region.min[0] = NAN;
			if (c == 19) def.region.max[DIM - 1] = INFINITY;
			if (c == 20) def.region.min[0] = 10; // empty on one axis
			if (c == 21) def.region.min[DIM - 1] = 20;
			if (c == 22) def.region.max[0] = 2.0e30f;
			break;
		default: def.prune_delay = 1 << 20; break;
		}
		tree_t *t = (tree_t *)&def;
		TU_CONTEXT("bad definition %d", c);
		if (TU(tree_create)(&def, &t) != ORT_ERROR_INVALID_ARGUMENT) TU_FAIL("accepted\n");
		assert_null(t);
	}
	tree_t *t = NULL;
	assert_int_equal(TU(tree_create)(NULL, &t), ORT_ERROR_INVALID_ARGUMENT);
	def_t def = TU(tree_default_def)();
	assert_int_equal(TU(tree_create)(&def, NULL), ORT_ERROR_INVALID_ARGUMENT);
	// The edges of every range are accepted.
	def.bucket_size = 1;
	def.max_depth = ORTHANT_MAX_DEPTH;
	def.looseness = 4.0f;
	def.merge_size = 1;
	def.prune_delay = 4096;
	assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
	TU(tree_destroy)(t);
}

static bool never(void *ctx, ort_handle h, void *u)
{
	(void)ctx, (void)h, (void)u;
	fail();
	return false;
}

/// NULL where a pointer is required: ORT_ERROR_INVALID_ARGUMENT, nothing else.
static void test_null_arguments(void **state)
{
	(void)state;
	harness h;
	h_init(&h, placement_def(0, false), 41);
	fill(&h, 10);
	box_t b = h.m.box[0];
	float p[DIM] = {0};
	neighbor_t nb[2];
	int found;
	assert_int_equal(TU(tree_insert)(NULL, b, NULL, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_remove)(NULL, h.m.handle[0]), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_move)(NULL, h.m.handle[0], b), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_get_box)(h.t, h.m.handle[0], NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_build)(h.t, NULL, NULL, 3, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_build)(h.t, &b, NULL, -1, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_query_box)(h.t, b, ORT_MASK_ALL, NULL, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_query_point)(h.t, NULL, ORT_MASK_ALL, never, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_query_sphere)(h.t, NULL, 1.0f, ORT_MASK_ALL, never, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_nearest)(h.t, p, 2, INFINITY, ORT_MASK_ALL, NULL, &found), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_nearest)(h.t, p, 2, INFINITY, ORT_MASK_ALL, nb, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_nearest)(h.t, p, -1, INFINITY, ORT_MASK_ALL, nb, &found), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_find_pairs)(h.t, ORT_MASK_ALL, NULL, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_validate)(NULL, NULL, 0), ORT_ERROR_INVALID_ARGUMENT);
	// Bad query shapes.
	box_t q = b;
	q.min[0] = NAN;
	assert_int_equal(TU(tree_query_box)(h.t, q, ORT_MASK_ALL, never, NULL), ORT_ERROR_INVALID_BOX);
	assert_int_equal(TU(tree_query_sphere)(h.t, p, -1.0f, ORT_MASK_ALL, never, NULL), ORT_ERROR_INVALID_BOX);
	p[0] = NAN;
	assert_int_equal(TU(tree_query_point)(h.t, p, ORT_MASK_ALL, never, NULL), ORT_ERROR_INVALID_BOX);
	// And the harmless ones.
	TU(tree_destroy)(NULL);
	TU(tree_clear)(NULL);
	TU(tree_tick)(NULL);
	assert_int_equal(TU(tree_count)(NULL), 0);
	assert_false(TU(tree_is_valid)(NULL, h.m.handle[0]));
	check_full(&h);
	h_free(&h);
}

// ---- fixed bugs: their minimal reproductions ----------------------------------------------

static box_t point_box(float x, float y)
{
	float c[DIM];
	for (int d = 0; d < DIM; ++d) c[d] = d == 0 ? x : y;
	return box_at(c, 0.0f);
}

static void test_fixed_prune(void **state)
{
	(void)state;
	def_t def = placement_def(ORT_PLACEMENT_TIGHT, false);
	def.bucket_size = 1;
	def.prune_delay = 8;
	def.use_region = true;
	for (int d = 0; d < DIM; ++d) {
		def.region.min[d] = 0;
		def.region.max[d] = 100;
	}
	tree_t *t;
	ort_handle p1, p2, p3;
	assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
	assert_int_equal(TU(tree_insert)(t, point_box(10, 10), NULL, &p1), ORT_OK);
	assert_int_equal(TU(tree_insert)(t, point_box(60, 60), NULL, &p2), ORT_OK);
	assert_int_equal(TU(tree_insert)(t, point_box(40, 40), NULL, &p3), ORT_OK);
	assert_int_equal(TU(tree_remove)(t, p1), ORT_OK); // (0..25) waits
	tu_check_valid(t);
	assert_int_equal(TU(tree_remove)(t, p3), ORT_OK); // (0..50) waits, (25..50) is left empty
	TU_CONTEXT("KB_PRUNE");
	tu_check_valid(t);
	TU(tree_destroy)(t);
}

static void test_fixed_leaves_reserve(void **state)
{
	(void)state;
	def_t def = TU(tree_default_def)();
	def.placement = ORT_PLACEMENT_LEAVES;
	def.bucket_size = 1;
	def.use_region = true;
	for (int d = 0; d < DIM; ++d) {
		def.region.min[d] = 0;
		def.region.max[d] = 16;
	}
	// Found by test_ops; in 2D the sixth insert overruns the node pool.
	static const float xy[][4] = {{6, 0, 6, 2}, {11, 2, 11, 2}, {1, 12, 1, 12},
	                              {15, 1, 19, 7}, {5, 15, 6, 15}, {3, 12, 8, 16}};
	tree_t *t;
	assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
	TU_CONTEXT("KB_LEAVES_RESERVE");
	for (int i = 0; i < 6; ++i) {
		box_t b = point_box(xy[i][0], xy[i][1]);
		b.max[0] = xy[i][2];
		b.max[1] = xy[i][3];
		assert_int_equal(TU(tree_insert)(t, b, NULL, NULL), ORT_OK);
		tu_check_valid(t);
	}
	TU(tree_destroy)(t);
}

static void test_fixed_far_distance(void **state)
{
	(void)state;
	def_t def = TU(tree_default_def)();
	tree_t *t;
	assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
	ort_handle far, nearer, corner;
	assert_int_equal(TU(tree_insert)(t, point_box(1e20f, 0), NULL, &far), ORT_OK);
	assert_int_equal(TU(tree_insert)(t, point_box(2e19f, 0), NULL, &nearer), ORT_OK);
	float origin[DIM] = {0};
	neighbor_t out[1];
	int found;
	TU_CONTEXT("KB_FAR_DISTANCE");
	assert_int_equal(TU(tree_nearest)(t, origin, 1, INFINITY, ORT_MASK_ALL, out, &found), ORT_OK);
	assert_int_equal(found, 1);
	if (!ort_handle_equal(out[0].handle, nearer)) TU_FAIL("nearest: the box at 1e20 before the one at 2e19\n");
	assert_true(out[0].distance == 2e19f);
	// At distance 1.9e19 * sqrt(2) = 2.69e19, outside a sphere of radius 2e19.
	assert_int_equal(TU(tree_insert)(t, point_box(1.9e19f, 1.9e19f), NULL, &corner), ORT_OK);
	tu_list got = {0};
	assert_int_equal(TU(tree_query_sphere)(t, origin, 2e19f, ORT_MASK_ALL, tu_collect, &got), ORT_OK);
	for (size_t i = 0; i < got.n; ++i)
		if (got.v[i] == tu_key(corner)) TU_FAIL("sphere: a box 2.69e19 away within radius 2e19\n");
	free(got.v);
	TU(tree_destroy)(t);
}

static void test_fixed_root_overflow(void **state)
{
	(void)state;
	def_t def = TU(tree_default_def)();
	def.use_region = true;
	for (int d = 0; d < DIM; ++d) {
		def.region.min[d] = 0;
		def.region.max[d] = d == 0 ? 1.0f : 1e30f;
	}
	tree_t *t;
	ort_handle h;
	assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
	assert_int_equal(TU(tree_insert)(t, point_box(0.5f, 0.5f), NULL, &h), ORT_OK);
	box_t was = TU(tree_root_cell)(t);
	// The long axis would overflow before the short one reaches -1e30 (after
	// some doublings it could make): refused, and the root stays as it was.
	assert_int_equal(TU(tree_insert)(t, point_box(-1e30f, 0), NULL, NULL), ORT_ERROR_OUT_OF_RANGE);
	assert_int_equal(TU(tree_move)(t, h, point_box(-1e30f, 0)), ORT_ERROR_OUT_OF_RANGE);
	TU_CONTEXT("KB_ROOT_OVERFLOW");
	tu_check_valid(t);
	assert_int_equal(TU(tree_count)(t), 1);
	box_t root = TU(tree_root_cell)(t), got;
	if (memcmp(&root, &was, sizeof root)) TU_FAIL("a refused insert or move changed the root cell\n");
	assert_int_equal(TU(tree_get_box)(t, h, &got), ORT_OK);
	assert_true(got.min[0] == 0.5f && got.max[0] == 0.5f);
	for (int d = 0; d < DIM; ++d)
		if (!isfinite(root.min[d]) || !isfinite(root.max[d])) TU_FAIL("root cell is infinite on axis %d\n", d);
	TU(tree_destroy)(t);
}

static void test_fixed_get_box_assert(void **state)
{
	(void)state;
	harness h;
	h_init(&h, placement_def(ORT_PLACEMENT_LOOSE, false), 51);
	fill(&h, 3);
	ort_handle gone = h.m.handle[0];
	assert_int_equal(TU(tree_remove)(h.t, gone), ORT_OK);
	h_remove_at(&h, 0);
	box_t got;
	int before = h.asserts;
	TU_CONTEXT("KB_GET_BOX_ASSERT");
	assert_int_equal(TU(tree_get_box)(h.t, ORT_NULL_HANDLE, &got), ORT_ERROR_STALE_HANDLE);
	assert_int_equal(TU(tree_get_box)(h.t, gone, &got), ORT_ERROR_STALE_HANDLE);
	assert_int_equal(h.asserts, before + 2);
	h_free(&h);
}

static int report(void **state)
{
	(void)state;
	if (steps_run) printf("# %d configurations, %d random steps\n", configs_run, steps_run);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stale_handles),   cmocka_unit_test(test_bad_boxes),
	    cmocka_unit_test(test_far_coordinates), cmocka_unit_test(test_bad_definitions),
	    cmocka_unit_test(test_null_arguments),  cmocka_unit_test(test_ops_loose),
	    cmocka_unit_test(test_ops_tight),       cmocka_unit_test(test_ops_leaves),
	    cmocka_unit_test(test_fixed_prune),     cmocka_unit_test(test_fixed_leaves_reserve),
	    cmocka_unit_test(test_fixed_far_distance), cmocka_unit_test(test_fixed_root_overflow),
	    cmocka_unit_test(test_fixed_get_box_assert),
	};
	return cmocka_run_group_tests_name(TU_GROUP("ops"), tests, NULL, report);
}

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
// ORTHANT_OPS_STEPS in the environment overrides the steps per configuration
// (ORTHANT_TEST_SHRINK divides the default: testutil.h, tu_size).
// The harness is ops_harness.h; the minimal reproductions of the library bugs
// these sequences found are test_ops_fixed.c.
#include "ops_harness.h"

// ---- the configuration matrix -------------------------------------------------------

static int steps_per_config(void)
{
	const char *s = getenv("ORTHANT_OPS_STEPS");
	int n = s ? atoi(s) : 0;
	return n > 0 ? n : tu_size(STEPS_DEFAULT, 2 * CHECK_EVERY);
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
	};
	return cmocka_run_group_tests_name(TU_GROUP("ops"), tests, NULL, report);
}

// test_ops_fixed.c: the library bugs the random operation sequences of
// test_ops.c found, each kept as its minimal reproduction, now a regression
// test, for one dimension (compiled twice: TEST_DIM=2 and TEST_DIM=3). The
// random sequences no longer steer around any of them:
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
#include "ops_harness.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fixed_prune),        cmocka_unit_test(test_fixed_leaves_reserve),
	    cmocka_unit_test(test_fixed_far_distance), cmocka_unit_test(test_fixed_root_overflow),
	    cmocka_unit_test(test_fixed_get_box_assert),
	};
	return cmocka_run_group_tests_name(TU_GROUP("ops fixed"), tests, NULL, NULL);
}

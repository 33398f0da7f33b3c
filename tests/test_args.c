// test_args.c: every public call given bad arguments — NULL pointers, NaN and
// infinite coordinates, inverted boxes, negative radii and counts, bad
// definitions — answers with the documented error and leaves the tree exactly
// as it was (same items, same answers, and it validates).
#include "testutil.h"

typedef TU(plane) plane_t;
typedef TU(ray_hit) hit_t;

static bool any_hit(void *ctx, ort_handle h, void *user)
{
	(void)ctx, (void)h, (void)user;
	return true;
}

static float any_ray(void *ctx, ort_handle h, void *user, float t)
{
	(void)ctx, (void)h, (void)user, (void)t;
	return INFINITY;
}

static bool any_pair(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)ctx, (void)a, (void)b, (void)ua, (void)ub;
	return true;
}

static void free_stub(void *ctx, void *p, size_t size)
{
	(void)ctx, (void)size;
	free(p);
}

static void test_bad_arguments(void **state)
{
	(void)state;
	def_t def = TU(tree_default_def)();
	tree_t *t;
	assert_int_equal(TU(tree_create)(&def, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_create)(NULL, &t), ORT_ERROR_INVALID_ARGUMENT);
	assert_null(t);
	// Definitions out of range.
	def_t bad[12];
	for (int i = 0; i < 12; ++i) bad[i] = def;
	bad[0].bucket_size = 0;
	bad[1].max_depth = ORTHANT_MAX_DEPTH + 1;
	bad[2].min_cell_size = NAN;
	bad[3].placement = ORT_PLACEMENT_COUNT;
	bad[4].looseness = 1.0f;
	bad[5].merge_size = def.bucket_size + 1;
	bad[6].prune_delay = -1;
	bad[7].item_capacity = -5;
	bad[8].allocator.free = free_stub; // a partial override
	bad[9].use_region = true; // a zero region
	bad[10].use_region = true;
	for (int d = 0; d < DIM; ++d) bad[10].region.max[d] = NAN;
	bad[11].looseness = 5.0f;
	for (int i = 0; i < 12; ++i) {
		tree_t *x = (tree_t *)1;
		assert_int_equal(TU(tree_create)(&bad[i], &x), ORT_ERROR_INVALID_ARGUMENT);
		assert_null(x);
	}
	def.bucket_size = 2;
	assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
	model m;
	tu_model_init(&m, 8);
	for (int i = 0; i < 30; ++i) {
		box_t b;
		for (int d = 0; d < DIM; ++d) {
			b.min[d] = (float)(i * 3 % 17);
			b.max[d] = b.min[d] + 2;
		}
		ort_handle h;
		assert_int_equal(TU(tree_insert)(t, b, NULL, &h), ORT_OK);
		tu_model_add(&m, h, b);
	}
	box_t ok = m.box[0], nanbox = ok, inverted = ok, infbox = ok, farbox = ok;
	nanbox.min[0] = NAN;
	inverted.min[0] = inverted.max[0] + 1;
	infbox.max[DIM - 1] = INFINITY;
	farbox.max[0] = 2e30f;
	float p[DIM] = {0}, nanp[DIM] = {0}, dir[DIM] = {0};
	nanp[0] = NAN;
	dir[0] = 1;
	ort_handle h = m.handle[0], out;
	// Items.
	assert_int_equal(TU(tree_insert)(NULL, ok, NULL, &out), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_insert)(t, nanbox, NULL, &out), ORT_ERROR_INVALID_BOX);
	assert_true(ort_handle_is_null(out));
	assert_int_equal(TU(tree_insert)(t, inverted, NULL, &out), ORT_ERROR_INVALID_BOX);
	assert_int_equal(TU(tree_insert)(t, infbox, NULL, &out), ORT_ERROR_INVALID_BOX);
	assert_int_equal(TU(tree_insert)(t, farbox, NULL, &out), ORT_ERROR_OUT_OF_RANGE);
	assert_int_equal(TU(tree_insert_sphere)(t, NULL, 1, NULL, &out), ORT_ERROR_INVALID_BOX);
	assert_int_equal(TU(tree_insert_sphere)(t, p, INFINITY, NULL, &out), ORT_ERROR_INVALID_BOX);
	assert_int_equal(TU(tree_move)(NULL, h, ok), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_move)(t, h, nanbox), ORT_ERROR_INVALID_BOX);
	assert_int_equal(TU(tree_move_sphere)(t, h, nanp, 1), ORT_ERROR_INVALID_BOX);
	assert_int_equal(TU(tree_remove)(NULL, h), ORT_ERROR_INVALID_ARGUMENT);
	box_t got;
	assert_int_equal(TU(tree_get_box)(NULL, h, &got), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_get_box)(t, h, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_get_sphere)(t, h, NULL, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_get_filter)(t, h, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_set_filter)(NULL, h, ORT_FILTER_DEFAULT), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_get_node)(NULL, h, NULL, NULL, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_null(TU(tree_get_user_data)(NULL, h));
	assert_false(TU(tree_is_valid)(NULL, h));
	assert_int_equal(TU(tree_count)(NULL), 0);
	assert_int_equal(TU(tree_pair_count)(NULL), 0);
	assert_int_equal(TU(tree_build)(NULL, &ok, NULL, 1, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_build)(t, NULL, NULL, 3, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_build)(t, &ok, NULL, -1, NULL), ORT_ERROR_INVALID_ARGUMENT);
	box_t batch[3] = {ok, nanbox, ok};
	assert_int_equal(TU(tree_build)(t, batch, NULL, 3, NULL), ORT_ERROR_INVALID_BOX);
	TU(tree_clear)(NULL);
	TU(tree_tick)(NULL);
	TU(tree_destroy)(NULL);
	// Queries.
	assert_int_equal(TU(tree_query_box)(NULL, ok, ORT_MASK_ALL, any_hit, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_query_box)(t, ok, ORT_MASK_ALL, NULL, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_query_box)(t, nanbox, ORT_MASK_ALL, any_hit, NULL), ORT_ERROR_INVALID_BOX);
	assert_int_equal(TU(tree_query_box)(t, inverted, ORT_MASK_ALL, any_hit, NULL), ORT_ERROR_INVALID_BOX);
	assert_int_equal(TU(tree_query_point)(t, NULL, ORT_MASK_ALL, any_hit, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_query_point)(t, nanp, ORT_MASK_ALL, any_hit, NULL), ORT_ERROR_INVALID_BOX);
	assert_int_equal(TU(tree_query_sphere)(t, p, -1, ORT_MASK_ALL, any_hit, NULL), ORT_ERROR_INVALID_BOX);
	assert_int_equal(TU(tree_query_sphere)(t, p, NAN, ORT_MASK_ALL, any_hit, NULL), ORT_ERROR_INVALID_BOX);
	assert_int_equal(TU(tree_query_sphere)(NULL, p, 1, ORT_MASK_ALL, any_hit, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_ray_cast)(t, p, dir, -1, ORT_MASK_ALL, any_ray, NULL), ORT_ERROR_INVALID_BOX);
	assert_int_equal(TU(tree_ray_cast)(t, p, nanp, 1, ORT_MASK_ALL, any_ray, NULL), ORT_ERROR_INVALID_BOX);
	assert_int_equal(TU(tree_ray_cast)(t, NULL, dir, 1, ORT_MASK_ALL, any_ray, NULL), ORT_ERROR_INVALID_ARGUMENT);
	neighbor_t nb[2];
	int found = 7;
	assert_int_equal(TU(tree_nearest)(t, p, -1, INFINITY, ORT_MASK_ALL, nb, &found), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(found, 0);
	assert_int_equal(TU(tree_nearest)(t, p, 2, INFINITY, ORT_MASK_ALL, NULL, &found), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_nearest)(t, p, 2, NAN, ORT_MASK_ALL, nb, &found), ORT_ERROR_INVALID_BOX);
	assert_int_equal(TU(tree_nearest)(t, nanp, 2, 1, ORT_MASK_ALL, nb, &found), ORT_ERROR_INVALID_BOX);
	assert_int_equal(TU(tree_nearest)(t, p, 0, 1, ORT_MASK_ALL, NULL, &found), ORT_OK);
	assert_int_equal(TU(tree_find_pairs)(NULL, ORT_MASK_ALL, any_pair, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_find_pairs)(t, ORT_MASK_ALL, NULL, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_update_pairs)(NULL, NULL, NULL, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_current_pairs)(t, NULL, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_contact)(t, h, h, NULL), ORT_ERROR_INVALID_ARGUMENT);
	// Shapes: planes, sweeps, records, batches.
	plane_t pl[2] = {{{0}, 0}, {{0}, 0}};
	pl[0].normal[0] = 1;
	pl[1].normal[0] = NAN;
	assert_int_equal(TU(tree_query_planes)(t, pl, -1, ORT_MASK_ALL, any_hit, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_query_planes)(t, NULL, 2, ORT_MASK_ALL, any_hit, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_query_planes)(t, pl, 2, ORT_MASK_ALL, any_hit, NULL), ORT_ERROR_INVALID_BOX);
	assert_int_equal(TU(tree_query_planes)(t, pl, 1, ORT_MASK_ALL, NULL, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_box_cast)(t, nanbox, dir, 1, ORT_MASK_ALL, any_ray, NULL), ORT_ERROR_INVALID_BOX);
	assert_int_equal(TU(tree_box_cast)(t, ok, nanp, 1, ORT_MASK_ALL, any_ray, NULL), ORT_ERROR_INVALID_BOX);
	assert_int_equal(TU(tree_box_cast)(t, ok, dir, 1, ORT_MASK_ALL, NULL, NULL), ORT_ERROR_INVALID_ARGUMENT);
	hit_t hits[4];
	int count = -1;
	assert_false(TU(tree_ray_first)(t, p, dir, 1, ORT_MASK_ALL, NULL));
	assert_false(TU(tree_ray_first)(t, nanp, dir, 1, ORT_MASK_ALL, hits));
	assert_int_equal(TU(tree_ray_all)(t, p, dir, 1, ORT_MASK_ALL, hits, -1, &count), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_ray_all)(t, p, dir, 1, ORT_MASK_ALL, NULL, 4, &count), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_ray_all)(t, p, dir, -2, ORT_MASK_ALL, hits, 4, &count), ORT_ERROR_INVALID_BOX);
	ort_handle hs[8];
	int offsets[4], total = -1;
	float pts[3][DIM] = {{0}};
	pts[1][0] = NAN;
	float maxt[3] = {1, -1, 1};
	float dirs[3][DIM] = {{0}};
	for (int i = 0; i < 3; ++i) dirs[i][0] = 1;
	assert_int_equal(TU(tree_query_boxes)(t, batch, 3, ORT_MASK_ALL, hs, 8, offsets, &total), ORT_ERROR_INVALID_BOX);
	assert_int_equal(TU(tree_query_boxes)(t, batch, 3, ORT_MASK_ALL, hs, 8, NULL, &total), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_query_boxes)(t, batch, -1, ORT_MASK_ALL, hs, 8, offsets, &total), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_query_points)(t, (const float(*)[DIM])pts, 3, ORT_MASK_ALL, hs, 8, offsets, &total),
	                 ORT_ERROR_INVALID_BOX);
	assert_int_equal(TU(tree_query_rays)(t, (const float(*)[DIM])pts, (const float(*)[DIM])dirs, maxt, 3,
	                                     ORT_MASK_ALL, hits, 4, offsets, &total),
	                 ORT_ERROR_INVALID_BOX);
	assert_int_equal(TU(tree_query_rays)(t, (const float(*)[DIM])pts, NULL, maxt, 3, ORT_MASK_ALL, hits, 4, offsets,
	                                     &total),
	                 ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(total, -1); // refused before any query ran
	assert_int_equal(TU(tree_query_boxes)(t, batch, 1, ORT_MASK_ALL, NULL, 8, offsets, &total), ORT_ERROR_INVALID_ARGUMENT);
	// Each batch argument wrong on its own: no tree, no queries, negative
	// room, no total, no max_t; a NaN max or an inverted box among the queries.
	assert_int_equal(TU(tree_query_boxes)(NULL, batch, 1, ORT_MASK_ALL, hs, 8, offsets, &total), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_query_boxes)(t, NULL, 1, ORT_MASK_ALL, hs, 8, offsets, &total), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_query_boxes)(t, batch, 1, ORT_MASK_ALL, hs, -1, offsets, &total), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_query_boxes)(t, batch, 1, ORT_MASK_ALL, hs, 8, offsets, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_query_rays)(t, (const float(*)[DIM])pts, (const float(*)[DIM])dirs, NULL, 1, ORT_MASK_ALL,
	                                     hits, 4, offsets, &total),
	                 ORT_ERROR_INVALID_ARGUMENT);
	box_t odd[2] = {ok, ok};
	odd[1].max[DIM - 1] = NAN;
	assert_int_equal(TU(tree_query_boxes)(t, odd, 2, ORT_MASK_ALL, hs, 8, offsets, &total), ORT_ERROR_INVALID_BOX);
	odd[1] = inverted;
	assert_int_equal(TU(tree_query_boxes)(t, odd, 2, ORT_MASK_ALL, hs, 8, offsets, &total), ORT_ERROR_INVALID_BOX);
	assert_int_equal(total, -1);
	assert_int_equal(TU(tree_query_point)(NULL, p, ORT_MASK_ALL, any_hit, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_query_point)(t, p, ORT_MASK_ALL, NULL, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_query_sphere)(t, NULL, 1, ORT_MASK_ALL, any_hit, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_query_sphere)(t, nanp, 1, ORT_MASK_ALL, any_hit, NULL), ORT_ERROR_INVALID_BOX);
	assert_int_equal(TU(tree_ray_cast)(NULL, p, dir, 1, ORT_MASK_ALL, any_ray, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_ray_cast)(t, p, NULL, 1, ORT_MASK_ALL, any_ray, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_ray_cast)(t, p, dir, 1, ORT_MASK_ALL, NULL, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_ray_cast)(t, nanp, dir, 1, ORT_MASK_ALL, any_ray, NULL), ORT_ERROR_INVALID_BOX);
	assert_int_equal(TU(tree_ray_cast)(t, p, dir, NAN, ORT_MASK_ALL, any_ray, NULL), ORT_ERROR_INVALID_BOX);
	assert_int_equal(TU(tree_nearest)(NULL, p, 2, 1, ORT_MASK_ALL, nb, &found), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_nearest)(t, NULL, 2, 1, ORT_MASK_ALL, nb, &found), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_nearest)(t, p, 2, 1, ORT_MASK_ALL, nb, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_nearest)(t, p, 2, -1, ORT_MASK_ALL, nb, &found), ORT_ERROR_INVALID_BOX);
	assert_int_equal(TU(tree_box_cast)(NULL, ok, dir, 1, ORT_MASK_ALL, any_ray, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_ray_all)(NULL, p, dir, 1, ORT_MASK_ALL, hits, 4, &count), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_ray_all)(t, p, dir, 1, ORT_MASK_ALL, hits, 4, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_false(TU(tree_ray_first)(NULL, p, dir, 1, ORT_MASK_ALL, hits));
	assert_int_equal(TU(tree_current_pairs)(NULL, any_pair, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_contact)(NULL, h, h, NULL), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(TU(tree_validate)(NULL, NULL, 0), ORT_ERROR_INVALID_ARGUMENT);
	ort_tree_stats st;
	TU(tree_get_stats)(NULL, &st);
	assert_int_equal(st.items, 0);
	TU(tree_get_stats)(t, NULL);
	TU(tree_visit_nodes)(NULL, NULL, NULL);
	box_t zero = TU(tree_root_cell)(NULL);
	assert_true(zero.min[0] == 0 && zero.max[0] == 0);
	// A removed handle in every call that takes one.
	ort_handle gone;
	assert_int_equal(TU(tree_insert)(t, ok, NULL, &gone), ORT_OK);
	assert_int_equal(TU(tree_remove)(t, gone), ORT_OK);
	TU(contact) ct;
	float c[DIM], r;
	ort_filter f;
	assert_int_equal(TU(tree_contact)(t, gone, h, &ct), ORT_ERROR_STALE_HANDLE);
	assert_int_equal(TU(tree_get_node)(t, gone, NULL, NULL, NULL), ORT_ERROR_STALE_HANDLE);
	assert_int_equal(TU(tree_get_sphere)(t, gone, c, &r), ORT_ERROR_STALE_HANDLE);
	assert_int_equal(TU(tree_get_filter)(t, gone, &f), ORT_ERROR_STALE_HANDLE);
	assert_int_equal(TU(tree_set_filter)(t, gone, f), ORT_ERROR_STALE_HANDLE);
	assert_int_equal(TU(tree_move)(t, gone, ok), ORT_ERROR_STALE_HANDLE);
	assert_int_equal(TU(tree_move_sphere)(t, gone, p, 1), ORT_ERROR_STALE_HANDLE);
	assert_null(TU(tree_get_user_data)(t, gone));
	// Nothing changed.
	tu_check_valid(t);
	assert_int_equal(TU(tree_count)(t), m.n);
	tu_check_pairs(t, &m);
	tu_check_box_query(t, &m, m.box[3]);
	tu_model_free(&m);
	TU(tree_destroy)(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_bad_arguments)};
	return cmocka_run_group_tests_name(TU_GROUP("args"), tests, NULL, NULL);
}

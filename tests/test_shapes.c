// test_shapes.c: convex-region (plane) queries, box casts, ray records and
// batched queries against brute force, for one dimension (compiled for 2D and
// 3D), every placement, on random and lattice scenes whose faces lie on the
// tree's split lines, with queries that touch items exactly at faces, edges
// and corners. The brute force follows docs/QUERIES.md, written out here
// independently of src/query_planes.c, src/query_cast.c and src/query_batch.c.
// The scenes and the brute force are shapes_oracle.h; the exact cases, one
// box or a few placed by hand, are test_shapes_exact.c.
#include "shapes_oracle.h"

// ---- the scenes, every placement ----------------------------------------------------

static const char *scene_names[SK_COUNT] = {"random", "lattice", "points", "touching", "huge"};

static void check_scene(const tree_t *t, const model *m, tu_rng *r, int rounds)
{
	for (int q = 0; q < rounds; ++q) {
		plane_t pl[8];
		int count = random_planes(r, m, pl);
		check_planes(t, m, pl, count);
		float o[DIM], dir[DIM], tmax;
		random_ray(r, m, o, dir, &tmax);
		check_ray_records(t, m, o, dir, tmax, r);
		box_t moving = scene_box(SK_RANDOM, r, q);
		if (q % 3 == 0) moving = m->box[tu_int(r, 0, m->n - 1)];
		check_box_cast(t, m, moving, dir, tmax);
		// A box cast is a ray cast when the box is a point.
		box_t point;
		memcpy(point.min, o, sizeof point.min);
		memcpy(point.max, o, sizeof point.max);
		check_box_cast(t, m, point, dir, tmax);
	}
	check_planes(t, m, NULL, 0);
	check_batches(t, m, r);
}

static void scenes(ort_placement placement)
{
	for (int kind = 0; kind < SK_COUNT; ++kind) {
		fixture f;
		fixture_make(&f, placement, (scene_kind)kind, 400, 40u + (unsigned)kind);
		tu_rng r = tu_rng_make(90u + (unsigned)kind);
		TU_CONTEXT("scene %s, placement %s", scene_names[kind], ort_placement_string(placement));
		check_scene(f.tree, &f.m, &r, 60);
		// Move a third of the items (some far) and ask again.
		for (int i = 0; i < f.m.n; i += 3) {
			box_t b = f.m.box[i];
			float step = i % 10 == 0 ? 400.0f : 10.0f;
			for (int d = 0; d < DIM; ++d) {
				float v = kind == SK_LATTICE ? 62.5f * (float)tu_int(&r, -2, 2) : tu_float(&r, -step, step);
				b.min[d] += v;
				b.max[d] += v;
			}
			assert_int_equal(TU(tree_move)(f.tree, f.m.handle[i], b), ORT_OK);
			spheres[f.m.handle[i].id].on = false; // a moved item is a box item
			f.m.box[i] = b;
		}
		tu_check_valid(f.tree);
		check_scene(f.tree, &f.m, &r, 30);
		fixture_free(&f);
	}
}

static void test_loose(void **s) { (void)s, scenes(ORT_PLACEMENT_LOOSE), assert_true(sphere_contacts > 20); }
static void test_tight(void **s) { (void)s, scenes(ORT_PLACEMENT_TIGHT); }
static void test_leaves(void **s) { (void)s, scenes(ORT_PLACEMENT_LEAVES); }
int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_loose), cmocka_unit_test(test_tight), cmocka_unit_test(test_leaves),
	};
	return cmocka_run_group_tests_name(TU_GROUP("shapes"), tests, NULL, NULL);
}

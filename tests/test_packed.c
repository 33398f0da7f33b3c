// test_packed.c: the packed tree (packed_dim.h) against brute force, for one
// dimension (compiled twice: TEST_DIM=2 and TEST_DIM=3). The scenes and the
// oracle are in packed_scene.h; bad input and allocation are test_packed_fail.c's.
// Covered:
// - find_pairs and box, point, sphere, ray (all hits, clipped, first) and
//   k-nearest queries on every scene kind, sizes 0 to 5000, bucket sizes 1,
//   2, 8, 64 and max depths 1, 3 and the deepest;
// - rebuilding one tree with other scenes, larger and smaller;
// - regions: none, the bounds, a small part of them, a far point, a flat box;
// - strided input; callbacks that stop the walk.
#include "packed_scene.h"

// ---- 1-4: every scene kind, size, bucket and depth ------------------------------------

static const int sizes[] = {0, 1, 2, 17, 1000, 5000};
static const int buckets[] = {1, 2, 8, 64};
static const int depths[] = {1, 3, DEEPEST};

/// Region variants: 0 none; 1 the scene's bounds; 2 a quarter of them at their
/// centre (most boxes outside); 3 a point far from everything; 4 a region
/// flat on one axis. Answers never depend on the region.
enum { REGIONS = 5 };
static void region_for(const scene *s, int rg, pdef_t *def)
{
	def->use_region = rg != 0;
	box_t w = s->world;
	for (int d = 0; d < DIM; ++d) {
		float c = 0.5f * (w.min[d] + w.max[d]), h = 0.5f * (w.max[d] - w.min[d]);
		switch (rg) {
		case 2: w.min[d] = c - h / 4, w.max[d] = c + h / 4; break;
		case 3: w.min[d] = w.max[d] = 1e20f; break;
		case 4:
			if (d == 0) w.min[d] = w.max[d] = c;
			break;
		default: break;
		}
	}
	def->region = w;
}

static void test_kind(void **state)
{
	int kind = *(const int *)*state;
	for (size_t si = 0; si < sizeof sizes / sizeof *sizes; ++si) {
		scene s;
		scene_make(&s, kind, sizes[si], 100u * (unsigned)kind + si);
		for (size_t bi = 0; bi < sizeof buckets / sizeof *buckets; ++bi)
			for (size_t di = 0; di < sizeof depths / sizeof *depths; ++di)
				for (int rg = 0; rg < REGIONS; ++rg) {
					// Regions only with bucket 8 at the deepest depth: the cost is brute force.
					if (rg && (buckets[bi] != 8 || depths[di] != DEEPEST)) continue;
					pdef_t def = make_def(buckets[bi], depths[di]);
					region_for(&s, rg, &def);
					packed_t *t = NULL;
					EXPECT(TU(packed_create)(&def, &t), ORT_OK);
					TU_CONTEXT("%.60s, bucket %d, max_depth %d, region %d", s.name, def.bucket_size,
					           def.max_depth, rg);
					EXPECT(TU(packed_build)(t, s.box, s.n), ORT_OK);
					check_tree(t, &s, def.max_depth, NQ);
					TU(packed_destroy)(t);
				}
		scene_free(&s);
	}
}

// ---- 5: rebuilding one tree ---------------------------------------------------------

static void test_rebuild(void **state)
{
	(void)state;
	// A, smaller B, A again, nothing, a larger C, B: each answer is the latest scene's.
	static const struct {
		const char *kind;
		int n;
	} steps[] = {{"clustered", 3000}, {"points", 200},  {"clustered", 3000}, {"random", 0},
	             {"huge", 5000},      {"points", 200},  {"centre-lines", 1}};
	enum { STEPS = sizeof steps / sizeof *steps };
	scene sc[STEPS];
	for (int i = 0; i < STEPS; ++i) scene_make(&sc[i], kind_of(steps[i].kind), steps[i].n, 77u + (unsigned)i);
	for (int cfg = 0; cfg < 2; ++cfg) {
		pdef_t def = cfg ? make_def(2, 3) : TU(packed_default_def)();
		packed_t *t;
		EXPECT(TU(packed_create)(&def, &t), ORT_OK);
		TU_CONTEXT("a new tree, bucket %d, max_depth %d", def.bucket_size, def.max_depth);
		check_shape(t, &sc[3], def.max_depth); // empty before any build
		for (int i = 0; i < STEPS; ++i) {
			TU_CONTEXT("rebuild step %d: %.60s, bucket %d, max_depth %d", i, sc[i].name, def.bucket_size,
			           def.max_depth);
			EXPECT(TU(packed_build)(t, sc[i].box, sc[i].n), ORT_OK);
			check_tree(t, &sc[i], def.max_depth, 8);
		}
		TU(packed_destroy)(t);
	}
	for (int i = 0; i < STEPS; ++i) scene_free(&sc[i]);
}

// ---- 9: boxes inside the caller's records ----------------------------------------------

typedef struct record {
	char tag;
	box_t box;
	double mass;
	int flags[3];
} record;

static void test_strided(void **state)
{
	(void)state;
	for (int kind = 0; kind < KINDS; kind += 3) {
		scene s;
		scene_make(&s, kind, 1000, 940u + (unsigned)kind);
		record *rec = malloc(sizeof *rec * (size_t)s.n);
		for (int i = 0; i < s.n; ++i) rec[i] = (record){'x', s.box[i], 1.5 * i, {i, -i, 7}};
		packed_t *t;
		pdef_t def = make_def(kind % 2 ? 3 : 8, DEEPEST);
		EXPECT(TU(packed_create)(&def, &t), ORT_OK);
		TU_CONTEXT("build_strided, %.60s, stride %zu", s.name, sizeof *rec);
		EXPECT(TU(packed_build_strided)(t, &rec[0].box, sizeof *rec, s.n), ORT_OK);
		check_tree(t, &s, def.max_depth, NQ);
		// The plain array as a stride of one box, over a filled tree.
		TU_CONTEXT("build_strided, %.60s, stride %zu", s.name, sizeof(box_t));
		EXPECT(TU(packed_build_strided)(t, s.box, sizeof(box_t), s.n), ORT_OK);
		check_tree(t, &s, def.max_depth, NQ);
		// Every other record: a stride of two records.
		box_t *every_other = malloc(sizeof(box_t) * (size_t)(s.n / 2));
		for (int i = 0; i < s.n / 2; ++i) every_other[i] = s.box[2 * i];
		scene half;
		scene_init(&half, "every other box", every_other, s.n / 2, 941u);
		TU_CONTEXT("build_strided, %.60s, stride %zu", half.name, 2 * sizeof *rec);
		EXPECT(TU(packed_build_strided)(t, &rec[0].box, 2 * sizeof *rec, half.n), ORT_OK);
		check_tree(t, &half, def.max_depth, NQ);
		scene_free(&half);
		free(rec);
		TU(packed_destroy)(t);
		scene_free(&s);
	}
}

// ---- 10: a callback that says stop is not called again ----------------------------------

typedef struct stopper {
	int calls, stop_at;
} stopper;

static bool stop_id(void *ctx, uint32_t id)
{
	(void)id;
	stopper *s = ctx;
	return ++s->calls < s->stop_at;
}

static bool stop_pair(void *ctx, uint32_t a, uint32_t b)
{
	(void)a, (void)b;
	stopper *s = ctx;
	return ++s->calls < s->stop_at;
}

static float stop_ray(void *ctx, uint32_t id, float t)
{
	(void)id, (void)t;
	stopper *s = ctx;
	return ++s->calls < s->stop_at ? INFINITY : 0.0f;
}

/// How often a callback that stops at call stop_at is called, when brute
/// force has `results` results: stop_at, or all of them when fewer.
static void expect_calls(const stopper *st, size_t results, const char *what)
{
	int want = results < (size_t)st->stop_at ? (int)results : st->stop_at;
	if (st->calls != want) TU_FAIL("%s: %d calls, stop at %d of %zu results\n", what, st->calls, st->stop_at, results);
}

static void test_stop(void **state)
{
	(void)state;
	// 70 identical boxes (all overlap, all contain the centre), and points.
	for (int dup = 1; dup >= 0; --dup) {
		scene s;
		scene_make(&s, kind_of(dup ? "duplicates" : "points"), dup ? 70 : 2000, 950u);
		float c[DIM], o[DIM], dir[DIM];
		for (int d = 0; d < DIM; ++d) {
			c[d] = s.box[0].min[d] * 0.5f + s.box[0].max[d] * 0.5f;
			o[d] = s.world.min[d] - 10.0f;
			dir[d] = 1.0f;
		}
		size_t at_c = 0, from_c = 0, from_o = 0;
		for (int i = 0; i < s.n; ++i) {
			float te;
			at_c += contains_point(&s.box[i], c);
			from_c += tu_ray_hit(c, dir, INFINITY, &s.box[i], &te);
			from_o += tu_ray_hit(o, dir, INFINITY, &s.box[i], &te);
		}
		for (int b = 0; b < 2; ++b) {
			pdef_t def = make_def(b ? 1 : 64, b ? DEEPEST : 1);
			packed_t *t;
			EXPECT(TU(packed_create)(&def, &t), ORT_OK);
			EXPECT(TU(packed_build)(t, s.box, s.n), ORT_OK);
			for (int stop_at = 1; stop_at <= 3; stop_at += 2) {
				TU_CONTEXT("%.60s, bucket %d: the callback says stop at call %d", s.name, def.bucket_size, stop_at);
				stopper st = {0, stop_at};
				EXPECT(TU(packed_query_box)(t, s.world, stop_id, &st), ORT_OK);
				expect_calls(&st, (size_t)s.n, "query_box");
				st.calls = 0;
				EXPECT(TU(packed_query_point)(t, c, stop_id, &st), ORT_OK);
				expect_calls(&st, at_c, "query_point");
				st.calls = 0;
				EXPECT(TU(packed_query_sphere)(t, c, 1e4f, stop_id, &st), ORT_OK);
				expect_calls(&st, (size_t)s.n, "query_sphere");
				st.calls = 0;
				EXPECT(TU(packed_find_pairs)(t, stop_pair, &st), ORT_OK);
				expect_calls(&st, s.pairs.n, "find_pairs");
				// A ray callback returning 0 stops, from inside boxes (t = 0
				// for each: clipping alone would not end it) and from outside.
				st.calls = 0;
				EXPECT(TU(packed_ray_cast)(t, c, dir, INFINITY, stop_ray, &st), ORT_OK);
				expect_calls(&st, from_c, "ray_cast from inside");
				st.calls = 0;
				EXPECT(TU(packed_ray_cast)(t, o, dir, INFINITY, stop_ray, &st), ORT_OK);
				expect_calls(&st, from_o, "ray_cast from outside");
			}
			TU(packed_destroy)(t);
		}
		scene_free(&s);
	}
}

int main(void)
{
	static const struct CMUnitTest fixed[] = {
	    cmocka_unit_test(test_rebuild),
	    cmocka_unit_test(test_strided),
	    cmocka_unit_test(test_stop),
	};
	enum { FIXED = sizeof fixed / sizeof *fixed };
	// Then one test per scene kind, named after it.
	static int kind_ids[KINDS];
	struct CMUnitTest tests[FIXED + KINDS];
	memcpy(tests, fixed, sizeof fixed);
	for (int k = 0; k < KINDS; ++k) {
		kind_ids[k] = k;
		tests[FIXED + k] = (struct CMUnitTest){kinds[k].name, test_kind, NULL, NULL, &kind_ids[k]};
	}
	return cmocka_run_group_tests_name(TU_GROUP("packed"), tests, NULL, NULL);
}

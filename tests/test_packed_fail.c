// test_packed_fail.c: the packed tree (packed_dim.h) refusing what it must and
// failing cleanly, for one dimension (compiled twice: TEST_DIM=2 and
// TEST_DIM=3). The scenes and the oracle are in packed_scene.h. Covered:
// - bad input (NaN, infinite, inverted, out of range, bad counts and pointers)
//   refused with the documented error and the previous scene kept;
// - the test allocator refusing each allocation in turn: out of memory,
//   the previous scene kept, every byte returned with its size; rebuilds of
//   a size and shape the tree has held, queries, find_pairs and nearest up to
//   k = 64 allocate nothing;
// - the default definition and bad definitions.
#include "packed_scene.h"

// ---- 6: bad input is refused and loses nothing ----------------------------------------

static bool never_id(void *ctx, uint32_t id)
{
	(void)ctx, (void)id;
	fail();
	return false;
}

static bool never_pair(void *ctx, uint32_t a, uint32_t b)
{
	(void)ctx, (void)a, (void)b;
	fail();
	return false;
}

static float never_ray(void *ctx, uint32_t id, float t)
{
	(void)ctx, (void)id, (void)t;
	fail();
	return 0;
}

/// One way to spoil a box, and the error it must draw.
typedef struct spoil {
	const char *what;
	bool on_max;
	float value;
	ort_result want;
} spoil;

static void test_bad_boxes(void **state)
{
	(void)state;
	scene prev;
	scene_make(&prev, kind_of("random"), 300, 901u);
	packed_t *t;
	pdef_t def = make_def(4, DEEPEST);
	EXPECT(TU(packed_create)(&def, &t), ORT_OK);
	EXPECT(TU(packed_build)(t, prev.box, prev.n), ORT_OK);
	const float L = ORTHANT_COORD_LIMIT;
	const spoil spoils[] = {
	    {"NaN min", false, NAN, ORT_ERROR_INVALID_BOX},
	    {"NaN max", true, NAN, ORT_ERROR_INVALID_BOX},
	    {"+inf max", true, INFINITY, ORT_ERROR_INVALID_BOX},
	    {"-inf min", false, -INFINITY, ORT_ERROR_INVALID_BOX},
	    {"+inf min (inverted too)", false, INFINITY, ORT_ERROR_INVALID_BOX},
	    {"inverted", false, 2000.0f, ORT_ERROR_INVALID_BOX},
	    {"max past the limit", true, 2e30f, ORT_ERROR_OUT_OF_RANGE},
	    {"min past -limit", false, -2e30f, ORT_ERROR_OUT_OF_RANGE},
	    {"max one ulp past the limit", true, nextafterf(L, INFINITY), ORT_ERROR_OUT_OF_RANGE},
	    {"min one ulp past -limit", false, nextafterf(-L, -INFINITY), ORT_ERROR_OUT_OF_RANGE},
	};
	// Arrays smaller and larger than the tree's (rebuilt in place, or grown),
	// spoilt at the first, a middle and the last box, on the last axis.
	static const int counts[] = {50, 1000};
	for (size_t ci = 0; ci < 2; ++ci) {
		int n = counts[ci];
		scene other;
		scene_make(&other, kind_of("clustered"), n, 902u + ci);
		for (size_t si = 0; si < sizeof spoils / sizeof *spoils; ++si)
			for (int at = 0; at < 3; ++at) {
				int i = at == 0 ? 0 : at == 1 ? n / 2 : n - 1;
				box_t keep = other.box[i];
				float *slot = spoils[si].on_max ? &other.box[i].max[DIM - 1] : &other.box[i].min[DIM - 1];
				*slot = spoils[si].value;
				TU_CONTEXT("build of %d boxes, box %d: %.60s; the tree holds %.60s", n, i, spoils[si].what, prev.name);
				EXPECT(TU(packed_build)(t, other.box, n), spoils[si].want);
				check_tree(t, &prev, def.max_depth, 2);
				// The same through build_strided.
				EXPECT(TU(packed_build_strided)(t, other.box, sizeof(box_t), n), spoils[si].want);
				check_tree(t, &prev, def.max_depth, 1);
				other.box[i] = keep;
			}
		scene_free(&other);
	}
	// Bad counts, pointers and strides.
	TU_CONTEXT("bad arguments to build; the tree holds %.60s", prev.name);
	EXPECT(TU(packed_build)(t, prev.box, -1), ORT_ERROR_INVALID_ARGUMENT);
	EXPECT(TU(packed_build)(t, prev.box, INT32_MIN), ORT_ERROR_INVALID_ARGUMENT);
	EXPECT(TU(packed_build)(t, NULL, 5), ORT_ERROR_INVALID_ARGUMENT);
	EXPECT(TU(packed_build)(NULL, prev.box, 5), ORT_ERROR_INVALID_ARGUMENT);
	EXPECT(TU(packed_build_strided)(t, prev.box, sizeof(box_t), -1), ORT_ERROR_INVALID_ARGUMENT);
	EXPECT(TU(packed_build_strided)(t, NULL, sizeof(box_t), 5), ORT_ERROR_INVALID_ARGUMENT);
	EXPECT(TU(packed_build_strided)(t, prev.box, sizeof(box_t) - 1, 5), ORT_ERROR_INVALID_ARGUMENT);
	EXPECT(TU(packed_build_strided)(t, prev.box, 0, 5), ORT_ERROR_INVALID_ARGUMENT);
	EXPECT(TU(packed_build_strided)(NULL, prev.box, sizeof(box_t), 5), ORT_ERROR_INVALID_ARGUMENT);
	check_tree(t, &prev, def.max_depth, NQ);
	TU(packed_destroy)(t);
	scene_free(&prev);
}

static void test_null_arguments(void **state)
{
	(void)state;
	scene s;
	scene_make(&s, kind_of("duplicates"), 100, 911u);
	for (int filled = 0; filled < 2; ++filled) {
		packed_t *t;
		pdef_t def = TU(packed_default_def)();
		EXPECT(TU(packed_create)(&def, &t), ORT_OK);
		if (filled) EXPECT(TU(packed_build)(t, s.box, s.n), ORT_OK);
		TU_CONTEXT("NULL arguments, %s tree", filled ? "a filled" : "an empty");
		const float p[DIM] = {0}, dir[DIM] = {1};
		box_t b = s.box[0];
		ort_id_neighbor nb[4];
		int found = 0;
		uint32_t id = 0;
		float tt = 0;
		EXPECT(TU(packed_query_box)(NULL, b, never_id, NULL), ORT_ERROR_INVALID_ARGUMENT);
		EXPECT(TU(packed_query_box)(t, b, NULL, NULL), ORT_ERROR_INVALID_ARGUMENT);
		EXPECT(TU(packed_query_point)(NULL, p, never_id, NULL), ORT_ERROR_INVALID_ARGUMENT);
		EXPECT(TU(packed_query_point)(t, NULL, never_id, NULL), ORT_ERROR_INVALID_ARGUMENT);
		EXPECT(TU(packed_query_point)(t, p, NULL, NULL), ORT_ERROR_INVALID_ARGUMENT);
		EXPECT(TU(packed_query_sphere)(NULL, p, 1, never_id, NULL), ORT_ERROR_INVALID_ARGUMENT);
		EXPECT(TU(packed_query_sphere)(t, NULL, 1, never_id, NULL), ORT_ERROR_INVALID_ARGUMENT);
		EXPECT(TU(packed_query_sphere)(t, p, 1, NULL, NULL), ORT_ERROR_INVALID_ARGUMENT);
		EXPECT(TU(packed_ray_cast)(NULL, p, dir, 1, never_ray, NULL), ORT_ERROR_INVALID_ARGUMENT);
		EXPECT(TU(packed_ray_cast)(t, NULL, dir, 1, never_ray, NULL), ORT_ERROR_INVALID_ARGUMENT);
		EXPECT(TU(packed_ray_cast)(t, p, NULL, 1, never_ray, NULL), ORT_ERROR_INVALID_ARGUMENT);
		EXPECT(TU(packed_ray_cast)(t, p, dir, 1, NULL, NULL), ORT_ERROR_INVALID_ARGUMENT);
		assert_false(TU(packed_ray_first)(NULL, p, dir, 1, &id, &tt));
		assert_false(TU(packed_ray_first)(t, NULL, dir, 1, &id, &tt));
		assert_false(TU(packed_ray_first)(t, p, NULL, 1, &id, &tt));
		EXPECT(TU(packed_nearest)(NULL, p, 4, INFINITY, nb, &found), ORT_ERROR_INVALID_ARGUMENT);
		EXPECT(TU(packed_nearest)(t, NULL, 4, INFINITY, nb, &found), ORT_ERROR_INVALID_ARGUMENT);
		EXPECT(TU(packed_nearest)(t, p, 4, INFINITY, NULL, &found), ORT_ERROR_INVALID_ARGUMENT);
		EXPECT(TU(packed_nearest)(t, p, 4, INFINITY, nb, NULL), ORT_ERROR_INVALID_ARGUMENT);
		EXPECT(TU(packed_find_pairs)(NULL, never_pair, NULL), ORT_ERROR_INVALID_ARGUMENT);
		EXPECT(TU(packed_find_pairs)(t, NULL, NULL), ORT_ERROR_INVALID_ARGUMENT);
		// None of it touched the tree.
		scene empty;
		scene_make(&empty, kind_of("random"), 0, 1u);
		check_tree(t, filled ? &s : &empty, def.max_depth, filled ? NQ : 0);
		scene_free(&empty);
		TU(packed_destroy)(t);
	}
	TU(packed_destroy)(NULL);
	scene_free(&s);
}

// ---- 7, 8: allocation failure, and rebuilds that allocate nothing ----------------------

static void check_bytes(const packed_t *t, const tu_alloc *c)
{
	ort_tree_stats st;
	TU(packed_get_stats)(t, &st);
	if (st.bytes != c->live) TU_FAIL("stats.bytes %zu, the allocator has %zu live\n", st.bytes, c->live);
}

/// Build s into t with allocation N refused, N = 0, 1, ... (all from N on when
/// rest) until a build meets no refusal. A refused build must say out of memory
/// and leave prev, whole and valid.
static void sweep_build(packed_t *t, tu_alloc *c, const scene *s, const scene *prev, bool rest)
{
	for (long n = 0;; ++n) {
		long refused = c->refused;
		c->fail_at = c->calls + n + 1;
		c->fail_rest = rest;
		ort_result r = TU(packed_build)(t, s->box, s->n);
		c->fail_at = 0;
		TU_CONTEXT("build %.60s over %.60s, allocation %ld%.60s refused", s->name, prev->name, n, rest ? " on" : "");
		if (c->refused == refused) {
			EXPECT(r, ORT_OK);
			check_tree(t, s, DEEPEST, 4);
			check_bytes(t, c);
			return;
		}
		if (r != ORT_ERROR_OUT_OF_MEMORY) TU_FAIL("build returned %s\n", ort_result_string(r));
		check_tree(t, prev, DEEPEST, 2);
		check_bytes(t, c);
	}
}

/// A packed tree over a fresh test allocator, each of create's
/// allocations refused in turn first (rest: all from that one on).
static packed_t *create_counted(tu_alloc *c, bool rest)
{
	pdef_t def = TU(packed_default_def)();
	def.allocator = tu_allocator(c);
	validate_pauses = &c->paused;
	for (long n = 0;; ++n) {
		long refused = c->refused;
		c->fail_at = c->calls + n + 1;
		c->fail_rest = rest;
		packed_t *t = (packed_t *)c;
		ort_result r = TU(packed_create)(&def, &t);
		c->fail_at = 0;
		if (c->refused == refused) {
			EXPECT(r, ORT_OK);
			return t;
		}
		EXPECT(r, ORT_ERROR_OUT_OF_MEMORY);
		assert_null(t);
		assert_int_equal(c->live, 0);
	}
}

static void destroy_counted(packed_t *t, tu_alloc *c)
{
	TU(packed_destroy)(t);
	if (c->live != 0 || c->nblocks != 0) TU_FAIL("%zu bytes in %d blocks never freed\n", c->live, c->nblocks);
	validate_pauses = NULL;
	free(c);
}

static void test_out_of_memory(void **state)
{
	(void)state;
	scene empty, small, big, bigger;
	scene_make(&empty, kind_of("random"), 0, 1u);
	scene_make(&small, kind_of("random"), 300, 921u);
	scene_make(&big, kind_of("clustered"), 2000, 922u);
	scene_make(&bigger, kind_of("huge"), 2500, 923u);
	for (int rest = 0; rest < 2; ++rest) {
		tu_alloc *c = calloc(1, sizeof *c);
		packed_t *t = create_counted(c, rest);
		sweep_build(t, c, &small, &empty, rest);
		sweep_build(t, c, &big, &small, rest);
		sweep_build(t, c, &small, &big, rest);
		sweep_build(t, c, &bigger, &small, rest);
		destroy_counted(t, c);
	}
	scene_free(&empty);
	scene_free(&small);
	scene_free(&big);
	scene_free(&bigger);
}

/// 8: rebuilding allocates nothing once the tree has made room for a scene of
/// that size and shape: after one pass over every kind (which may allocate),
/// a second pass with an allocator that refuses everything, and counts (the
/// checks after each build run with it paused), must succeed. Rebuilding the
/// very same boxes never allocates. First built: clusters, or piles of
/// identical boxes (few nodes for their count).
static void test_rebuild_allocates_nothing(void **state)
{
	(void)state;
	static const char *const firsts[] = {"clustered", "duplicates"};
	k_cap = NO_ALLOC_K;
	for (int f = 0; f < 2; ++f) {
		tu_alloc *c = calloc(1, sizeof *c);
		packed_t *t = create_counted(c, false);
		scene first;
		scene_make(&first, kind_of(firsts[f]), 2000, 922u);
		EXPECT(TU(packed_build)(t, first.box, first.n), ORT_OK);
		for (int pass = 0; pass < 2; ++pass)
			for (int kind = 0; kind <= KINDS; ++kind) {
				scene other;
				if (kind < KINDS)
					scene_make(&other, kind, kind % 2 ? first.n : first.n / 3, 930u + (unsigned)kind);
				else
					scene_make(&other, kind_of("random"), 0, 1u);
				TU_CONTEXT("rebuild with %.60s after %.60s, pass %d", other.name, first.name, pass);
				for (int again = 0; again < 2; ++again) {
					// Pass 1 refuses every allocation; so does building the same boxes again.
					bool refuse = pass == 1 || again == 1;
					long calls = c->calls;
					if (refuse) {
						c->fail_at = c->calls + 1;
						c->fail_rest = true;
					}
					EXPECT(TU(packed_build)(t, other.box, other.n), ORT_OK);
					if (refuse && c->calls != calls) TU_FAIL("%ld allocations asked for\n", c->calls - calls);
					c->fail_at = 0;
					c->paused = true;
					check_tree(t, &other, DEEPEST, NQ);
					c->paused = false;
					check_bytes(t, c);
				}
				scene_free(&other);
			}
		scene_free(&first);
		destroy_counted(t, c);
	}
	k_cap = INT_MAX;
}

/// Queries, find_pairs and nearest (promised to allocate nothing, but for the
/// keys of a sweep over a pile the build could not spread out) with an
/// allocator that refuses everything, and counts: the answers stay right.
static void test_queries_allocate_nothing(void **state)
{
	(void)state;
	for (int kind = 0; kind < KINDS; kind += 2) {
		tu_alloc *c = calloc(1, sizeof *c);
		packed_t *t = create_counted(c, false);
		scene s;
		scene_make(&s, kind, 1000, 960u + (unsigned)kind);
		EXPECT(TU(packed_build)(t, s.box, s.n), ORT_OK);
		TU_CONTEXT("queries on %.60s, every allocation refused", s.name);
		long calls = c->calls;
		c->fail_at = c->calls + 1;
		c->fail_rest = true;
		k_cap = NO_ALLOC_K;
		check_tree(t, &s, DEEPEST, NQ);
		k_cap = INT_MAX;
		// find_pairs (once in check_tree) may ask for its sweep's keys, and
		// must ask as often again when run again; nothing else asks.
		long asked = c->calls - calls, pairs_calls = c->calls;
		tu_list got = {0};
		EXPECT(TU(packed_find_pairs)(t, collect_pair, &got), ORT_OK);
		free(got.v);
		if (asked != c->calls - pairs_calls) TU_FAIL("%ld allocations asked for\n", asked);
		// Past NO_ALLOC_K nearest borrows k records for the call and gives them back.
		if (s.n > NO_ALLOC_K) {
			ort_id_neighbor out[NO_ALLOC_K + 1];
			int found = 0;
			EXPECT(TU(packed_nearest)(t, s.npoint[0], NO_ALLOC_K + 1, INFINITY, out, &found),
			       ORT_ERROR_OUT_OF_MEMORY);
			c->fail_at = 0;
			EXPECT(TU(packed_nearest)(t, s.npoint[0], NO_ALLOC_K + 1, INFINITY, out, &found), ORT_OK);
			assert_int_equal(found, NO_ALLOC_K + 1);
			check_bytes(t, c);
		}
		c->fail_at = 0;
		scene_free(&s);
		destroy_counted(t, c);
	}
}

/// find_pairs keeps a pile's sweep keys in the tree: a second call over the
/// same tree asks the allocator for nothing, finds the same pairs (the
/// oracle's), and the stats count the kept keys until destroy gives them
/// back. With the largest bucket, the root keeps 120 strips across the
/// scene as its own items (more than the sweep's minimum, fewer than a pile
/// needs), which it sweeps; the scenes' kinds add what they have.
static void test_pairs_keep_their_keys(void **state)
{
	(void)state;
	long first_asked = 0;
	for (int kind = 0; kind < KINDS; ++kind) {
		tu_alloc *c = calloc(1, sizeof *c);
		pdef_t def = TU(packed_default_def)();
		def.allocator = tu_allocator(c);
		def.bucket_size = 64;
		packed_t *t;
		EXPECT(TU(packed_create)(&def, &t), ORT_OK);
		enum { N = 2000, STRIPS = 120 };
		box_t *boxes = malloc(sizeof *boxes * (N + STRIPS));
		tu_rng r = tu_rng_make(970u + (unsigned)kind);
		for (int i = 0; i < N; ++i) kinds[kind].gen(&r, i, N, &boxes[i]);
		box_t world = boxes[0];
		for (int i = 1; i < N; ++i)
			for (int d = 0; d < DIM; ++d) {
				world.min[d] = boxes[i].min[d] < world.min[d] ? boxes[i].min[d] : world.min[d];
				world.max[d] = boxes[i].max[d] > world.max[d] ? boxes[i].max[d] : world.max[d];
			}
		for (int i = N; i < N + STRIPS; ++i) {
			boxes[i] = world;
			boxes[i].min[1] = tu_float(&r, world.min[1], world.max[1]);
			boxes[i].max[1] = boxes[i].min[1];
		}
		scene s;
		scene_init(&s, kinds[kind].name, boxes, N + STRIPS, 971u);
		EXPECT(TU(packed_build)(t, s.box, s.n), ORT_OK);
		TU_CONTEXT("find_pairs twice on %.60s, bucket 64", s.name);
		long calls = c->calls;
		check_pairs(t, &s);
		first_asked += c->calls - calls;
		check_bytes(t, c);
		calls = c->calls;
		check_pairs(t, &s);
		if (c->calls != calls) TU_FAIL("the second find_pairs asked for %ld allocations\n", c->calls - calls);
		check_bytes(t, c);
		scene_free(&s);
		destroy_counted(t, c);
	}
	// Some scene must have swept a pile, or this tested nothing.
	assert_true(first_asked > 0);
}

/// The documented defaults: bucket 16, the deepest max_depth, malloc/free, no region.
static void test_defaults(void **state)
{
	(void)state;
	TU_CONTEXT("packed_default_def");
	pdef_t def = TU(packed_default_def)();
	if (def.bucket_size != 16 || def.max_depth != DEEPEST || def.allocator.alloc || def.allocator.free ||
	    def.use_region)
		TU_FAIL("defaults: bucket_size %d, max_depth %d, allocator %s\n", def.bucket_size, def.max_depth,
		        def.allocator.alloc || def.allocator.free ? "set" : "unset");
}

static void test_bad_defs(void **state)
{
	(void)state;
	TU_CONTEXT("bad definitions");
	pdef_t def = TU(packed_default_def)();
	packed_t *t = (packed_t *)&def; // not NULL: a failed create must clear it
	EXPECT(TU(packed_create)(NULL, &t), ORT_ERROR_INVALID_ARGUMENT);
	assert_null(t);
	EXPECT(TU(packed_create)(&def, NULL), ORT_ERROR_INVALID_ARGUMENT);
	const pdef_t bad[] = {
	    make_def(0, DEEPEST),  make_def(65, DEEPEST), make_def(-1, DEEPEST), make_def(INT32_MAX, 3),
	    make_def(8, 0),        make_def(8, -1),       make_def(8, DEEPEST + 1), make_def(8, ORTHANT_MAX_DEPTH),
	    make_def(8, INT32_MAX),
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; ++i) {
		t = (packed_t *)&def;
		if (TU(packed_create)(&bad[i], &t) != ORT_ERROR_INVALID_ARGUMENT)
			TU_FAIL("create accepts bucket_size %d, max_depth %d\n", bad[i].bucket_size, bad[i].max_depth);
		assert_null(t);
	}
	// A partial allocator override is refused, and nothing is allocated.
	tu_alloc c = {0};
	pdef_t half = def;
	half.allocator = (ort_allocator){tu_alloc_fn, NULL, &c};
	t = (packed_t *)&def;
	EXPECT(TU(packed_create)(&half, &t), ORT_ERROR_INVALID_ARGUMENT);
	assert_null(t);
	half.allocator = (ort_allocator){NULL, tu_free_fn, &c};
	EXPECT(TU(packed_create)(&half, &t), ORT_ERROR_INVALID_ARGUMENT);
	assert_int_equal(c.calls, 0);
	// The extremes are accepted.
	const pdef_t good[] = {make_def(1, 1), make_def(64, DEEPEST), make_def(1, DEEPEST), make_def(64, 1)};
	for (size_t i = 0; i < sizeof good / sizeof *good; ++i) {
		EXPECT(TU(packed_create)(&good[i], &t), ORT_OK);
		TU(packed_destroy)(t);
	}
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_bad_defs),
	    cmocka_unit_test(test_null_arguments),
	    cmocka_unit_test(test_bad_boxes),
	    cmocka_unit_test(test_out_of_memory),
	    cmocka_unit_test(test_rebuild_allocates_nothing),
	    cmocka_unit_test(test_queries_allocate_nothing),
	    cmocka_unit_test(test_pairs_keep_their_keys),
	};
	return cmocka_run_group_tests_name(TU_GROUP("packed fail"), tests, NULL, NULL);
}

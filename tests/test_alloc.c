// test_alloc.c: the out-of-memory sweep (SQLite's test_malloc idea), for one
// dimension (compiled twice: TEST_DIM=2 and TEST_DIM=3).
//
// The test allocator (testutil.h) handed in through def.allocator refuses the Nth
// allocation. For N = 1, 2, 3, ... one representative script runs every
// operation — create, inserts that split and grow the root, spheres and a
// filter (their arrays grow with the items after), build into an
// empty and a non-empty tree, moves near and far, removes that merge,
// find_pairs, queries over a tree taller than the local stacks, nearest with a
// large k — until a run meets no failure. Each call that met the failure must
// return ORT_ERROR_OUT_OF_MEMORY or succeed (a split or merge is best-effort);
// either way the tree validates and holds exactly what the model says. After
// destroy the allocator must hold no bytes, and every free must name the size
// its allocation had. A second sweep makes every allocation from the Nth on
// fail (memory that stays gone).
#include "testutil.h"

// ---- the script ---------------------------------------------------------------------

typedef struct run {
	tu_alloc a;
	tree_t *t;
	model m;
	tu_rng r;
	ort_placement placement;
	long failing_calls; ///< calls that met a refused allocation
} run;

/// Checks run with the injection paused, so they never move the count.
static void verify(run *u, bool queries)
{
	u->a.paused = true;
	tu_check_valid(u->t);
	assert_int_equal(TU(tree_count)(u->t), u->m.n);
	for (int i = 0; i < u->m.n; ++i) {
		box_t b;
		if (TU(tree_get_box)(u->t, u->m.handle[i], &b) != ORT_OK) TU_FAIL("item %d lost\n", i);
		if (memcmp(&b, &u->m.box[i], sizeof b)) TU_FAIL("item %d has another box\n", i);
	}
	ort_tree_stats st;
	TU(tree_get_stats)(u->t, &st);
	if (st.bytes != u->a.live) TU_FAIL("stats.bytes %zu, the allocator holds %zu\n", st.bytes, u->a.live);
	if (queries) {
		tu_check_pairs(u->t, &u->m);
		float p[DIM] = {0}, dir[DIM];
		for (int d = 0; d < DIM; ++d) dir[d] = 1.0f + (float)d;
		tu_check_nearest(u->t, &u->m, p, 50, INFINITY);
		tu_check_ray(u->t, &u->m, p, dir, INFINITY);
	}
	u->a.paused = false;
}

/// The result of one call: OK, or out of memory when (and only when) the call
/// met a refused allocation. Returns whether it succeeded.
static bool outcome(run *u, long refused_before, ort_result r, const char *what)
{
	bool met = u->a.refused != refused_before;
	if (met) u->failing_calls++;
	if (r == ORT_OK) return true;
	if (r != ORT_ERROR_OUT_OF_MEMORY || !met)
		TU_FAIL("%s: %s (allocation %ld refused: %s)\n", what, ort_result_string(r), u->a.fail_at,
		        met ? "yes" : "no");
	return false;
}

static box_t spread_box(tu_rng *r, int i)
{
	// Clusters that split, and a scale that doubles every 16 items so the
	// root keeps growing.
	float scale = (float)(1 << (i / 16 < 12 ? i / 16 : 12));
	box_t b;
	for (int d = 0; d < DIM; ++d) {
		float c = (i % 3 == 0 ? -1.0f : 1.0f) * scale * tu_float(r, 0, 10);
		b.min[d] = c;
		b.max[d] = c + tu_float(r, 0, 2);
	}
	return b;
}

static void do_insert(run *u, box_t b)
{
	long before = u->a.refused;
	ort_handle h;
	ort_result r = TU(tree_insert)(u->t, b, NULL, &h);
	if (outcome(u, before, r, "insert")) tu_model_add(&u->m, h, b);
	verify(u, false);
}

static void do_build(run *u, int n)
{
	box_t *boxes = calloc((size_t)n, sizeof *boxes); // calloc: at -O1 gcc cannot see the loop fill every box
	ort_handle *hs = malloc(sizeof *hs * (size_t)n);
	for (int k = 0; k < n; ++k) boxes[k] = spread_box(&u->r, k * 3);
	long before = u->a.refused;
	ort_result r = TU(tree_build)(u->t, boxes, NULL, n, hs);
	if (outcome(u, before, r, "build"))
		for (int k = 0; k < n; ++k) tu_model_add(&u->m, hs[k], boxes[k]);
	free(boxes);
	free(hs);
	verify(u, false);
}

static void do_move(run *u, int i, box_t b)
{
	long before = u->a.refused;
	ort_result r = TU(tree_move)(u->t, u->m.handle[i], b);
	if (outcome(u, before, r, "move")) u->m.box[i] = b;
	verify(u, false);
}

/// A sphere item: the model holds its box (the one the tree gives back).
static void do_insert_sphere(run *u, const box_t *around)
{
	float c[DIM];
	for (int d = 0; d < DIM; ++d) c[d] = around->min[d];
	long before = u->a.refused;
	ort_handle h;
	ort_result r = TU(tree_insert_sphere)(u->t, c, 1.5f, NULL, &h);
	if (outcome(u, before, r, "insert_sphere")) {
		box_t b;
		u->a.paused = true;
		assert_int_equal(TU(tree_get_box)(u->t, h, &b), ORT_OK);
		u->a.paused = false;
		tu_model_add(&u->m, h, b);
	}
	verify(u, false);
}

/// Item i's filter set to the default (its pairs stay as they were; the
/// tree starts keeping filters, one per item slot).
static void do_set_filter(run *u, int i)
{
	long before = u->a.refused;
	outcome(u, before, TU(tree_set_filter)(u->t, u->m.handle[i], ORT_FILTER_DEFAULT), "set_filter");
	verify(u, false);
}

static bool count_hit(void *ctx, ort_handle h, void *user)
{
	(void)h, (void)user;
	++*(int *)ctx;
	return true;
}

static bool count_pair(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)a, (void)b, (void)ua, (void)ub;
	++*(int *)ctx;
	return true;
}

static float ray_all(void *ctx, ort_handle h, void *user, float t)
{
	(void)h, (void)user, (void)t;
	++*(int *)ctx;
	return INFINITY;
}

/// Every query kind once; each may fail only by running out of memory, and
/// when it succeeds it must agree with brute force.
static void do_queries(run *u)
{
	int hits = 0;
	long before = u->a.refused;
	box_t all = tu_model_bounds(&u->m);
	float p[DIM] = {0}, dir[DIM];
	for (int d = 0; d < DIM; ++d) dir[d] = d == 0 ? 1.0f : 0.5f;
	if (outcome(u, before, TU(tree_query_box)(u->t, all, ORT_MASK_ALL, count_hit, &hits), "query_box"))
		assert_int_equal(hits, u->m.n);
	before = u->a.refused;
	hits = 0;
	outcome(u, before, TU(tree_query_point)(u->t, p, ORT_MASK_ALL, count_hit, &hits), "query_point");
	before = u->a.refused;
	outcome(u, before, TU(tree_query_sphere)(u->t, p, 100.0f, ORT_MASK_ALL, count_hit, &hits), "query_sphere");
	before = u->a.refused;
	outcome(u, before, TU(tree_ray_cast)(u->t, p, dir, INFINITY, ORT_MASK_ALL, ray_all, &hits), "ray_cast");
	int k = u->m.n + 10, found = -1;
	neighbor_t *out = malloc(sizeof *out * (size_t)k);
	before = u->a.refused;
	if (outcome(u, before, TU(tree_nearest)(u->t, p, k, INFINITY, ORT_MASK_ALL, out, &found), "nearest"))
		assert_int_equal(found, u->m.n);
	free(out);
	int pairs = 0;
	before = u->a.refused;
	if (outcome(u, before, TU(tree_find_pairs)(u->t, ORT_MASK_ALL, count_pair, &pairs), "find_pairs")) {
		u->a.paused = true;
		assert_int_equal((size_t)pairs, tu_count_pairs(u->t));
		u->a.paused = false;
	}
	verify(u, false);
}

static void bp_begin(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)a, (void)b, (void)ua, (void)ub;
	++*(long *)ctx;
}

static void bp_end(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)a, (void)b, (void)ua, (void)ub;
	--*(long *)ctx;
}

/// The broad phase: an update may run out of memory part-way and pick up on the
/// next; once one succeeds, the replayed events equal brute force.
static void do_update(run *u, long *live)
{
	long before = u->a.refused;
	if (!outcome(u, before, TU(tree_update_pairs)(u->t, bp_begin, bp_end, live), "update_pairs")) return;
	u->a.paused = true;
	long want = (long)tu_count_pairs(u->t);
	if (*live != want || TU(tree_pair_count)(u->t) != want)
		TU_FAIL("broad phase: %ld pairs replayed, brute force %ld\n", *live, want);
	u->a.paused = false;
}

/// The whole script; returns the allocations it asked for.
static long script(ort_placement placement, int bucket, long fail_at, bool persistent, long *failing_calls)
{
	run u;
	memset(&u, 0, sizeof u);
	u.a.fail_at = fail_at;
	u.a.fail_rest = persistent;
	u.r = tu_rng_make(99);
	u.placement = placement;
	def_t def = TU(tree_default_def)();
	def.placement = placement;
	def.bucket_size = bucket;
	def.item_capacity = bucket == 1 ? 8 : 0; // the pools also come with the tree
	def.allocator = tu_allocator(&u.a);
	ort_result r = TU(tree_create)(&def, &u.t);
	if (r != ORT_OK) {
		assert_int_equal(r, ORT_ERROR_OUT_OF_MEMORY);
		assert_null(u.t);
		assert_int_equal(u.a.live, 0);
		*failing_calls += 1;
		return u.a.calls;
	}
	tu_model_init(&u.m, 64);
	// Inserts: splits, and a root that grows in every direction.
	for (int i = 0; i < 80; ++i) do_insert(&u, spread_box(&u.r, i));
	do_queries(&u);
	long live = 0;
	do_update(&u, &live);
	// Spheres and filters: from now on their arrays grow with the item pool
	// (the tree is cleared of them before the queries that test boxes alone).
	for (int i = 0; i < 6 && i * 7 < u.m.n; ++i) do_insert_sphere(&u, &u.m.box[i * 7]);
	if (u.m.n > 0) do_set_filter(&u, u.m.n / 2);
	// Build into the non-empty tree (one by one, undone on failure), past the
	// item pool's capacity, so the filter and sphere arrays grow too.
	do_build(&u, 50);
	// Moves: small ones, and far ones that re-home and grow the root.
	for (int i = 0; i < 40 && u.m.n > 0; ++i) {
		int k = tu_int(&u.r, 0, u.m.n - 1);
		box_t b = u.m.box[k];
		float step = i % 4 == 0 ? 5000.0f : 0.5f;
		for (int d = 0; d < DIM; ++d) {
			float v = tu_float(&u.r, -step, step);
			b.min[d] += v;
			b.max[d] += v;
		}
		do_move(&u, k, b);
	}
	do_update(&u, &live);
	// Removes until merges fold most of the tree back (with the broad phase
	// on, a remove needs room to remember its ended pairs, so it may fail).
	// Memory gone for good: the removes stop at the first refused one.
	while (u.m.n > 20) {
		int k = tu_int(&u.r, 0, u.m.n - 1);
		long before = u.a.refused;
		bool removed = outcome(&u, before, TU(tree_remove)(u.t, u.m.handle[k]), "remove");
		if (removed) tu_model_remove_at(&u.m, k);
		verify(&u, false);
		if (!removed && u.a.fail_rest) break;
	}
	do_update(&u, &live);
	do_queries(&u);
	// Build into an empty tree.
	TU(tree_clear)(u.t);
	u.m.n = 0;
	verify(&u, false);
	do_build(&u, 100);
	// A box near the coordinate limit: the root doubles ~100 times, so the
	// query stacks outgrow their local arrays and allocate.
	box_t huge;
	for (int d = 0; d < DIM; ++d) huge.min[d] = huge.max[d] = 1e29f;
	do_insert(&u, huge);
	if (u.m.n > 0) do_move(&u, 0, huge);
	do_queries(&u);
	verify(&u, true);
	TU(tree_destroy)(u.t);
	tu_model_free(&u.m);
	if (u.a.live != 0) TU_FAIL("%zu bytes still held after destroy\n", u.a.live);
	*failing_calls += u.failing_calls;
	return u.a.calls;
}

static long points_total, calls_total;

static void sweep_one(ort_placement placement, int bucket, bool persistent)
{
	long calls = 0;
	long clean = script(placement, bucket, 0, false, &calls);
	// Under valgrind (shrink 8) every failure point costs a whole script at
	// fifty times over: there only every stride-th point is tried, from an
	// offset that differs per sweep, so the sweeps together still reach most
	// allocation sites. Every other run tries every point.
	long stride = tu_shrink() >= 8 ? tu_shrink() : 1;
	long n, points = 0;
	for (n = 1 + (bucket + 2 * persistent + placement) % stride;; n += stride, ++points) {
		TU_CONTEXT("%s, bucket %d, %s failure of allocation %ld", ort_placement_string(placement), bucket,
		           persistent ? "persistent" : "one", n);
		long used = script(placement, bucket, n, persistent, &calls);
		if (used < n) break; // the run met no failure
	}
	points_total += points;
	calls_total += calls;
	printf("# %s, bucket %d, %s: %ld allocations in a clean run, %ld failure points tried, %ld failing calls\n",
	       ort_placement_string(placement), bucket, persistent ? "persistent" : "one-shot", clean, points, calls);
}

static void sweep(ort_placement placement)
{
	for (int bucket = 1; bucket <= 4; bucket += 3) {
		sweep_one(placement, bucket, false);
		sweep_one(placement, bucket, true);
	}
}

// ---- a failed change leaves the root and the shape as they were -------------------

/// What a failed call must leave as it was besides the items: the root cell
/// and the shape of the tree (capacity may have grown).
typedef struct shape {
	box_t root;
	ort_tree_stats st;
} shape;

static shape shape_of(const tree_t *t)
{
	shape s;
	s.root = TU(tree_root_cell)(t);
	TU(tree_get_stats)(t, &s.st);
	return s;
}

static void expect_same_shape(const shape *was, const shape *now, const char *what)
{
	if (memcmp(&was->root, &now->root, sizeof was->root)) TU_FAIL("%s failed, and the root cell changed\n", what);
	const ort_tree_stats *a = &was->st, *b = &now->st;
	if (a->items != b->items || a->entries != b->entries || a->nodes != b->nodes || a->leaves != b->leaves ||
	    a->depth != b->depth || memcmp(a->items_per_level, b->items_per_level, sizeof a->items_per_level))
		TU_FAIL("%s failed, and the tree changed shape: %d nodes, %d leaves, depth %d (were %d, %d, %d)\n", what,
		        b->nodes, b->leaves, b->depth, a->nodes, a->leaves, a->depth);
}

/// Insert (or move an item) far outside the root with every allocation from
/// now on refused, over trees of 0..47 items (so the node pool is left with
/// more or less room), reaching 2, 16 and 4096 root sides away. The root must
/// grow for the box, so a failure can come after some growth was possible:
/// every failure must leave the root and the shape exactly as they were.
/// Returns how many calls failed (the caller checks some did).
static int far_failures(ort_placement placement, bool move)
{
	static const float reach[] = {2.0f, 16.0f, 4096.0f};
	int failed = 0;
	for (int k = move ? 1 : 0; k < 48; ++k)
		for (int f = 0; f < 3; ++f) {
			TU_CONTEXT("%s, %d items, %s %g root sides away", ort_placement_string(placement), k,
			           move ? "move" : "insert", (double)reach[f]);
			run u;
			memset(&u, 0, sizeof u);
			u.r = tu_rng_make(7 + (uint64_t)k);
			def_t def = TU(tree_default_def)();
			def.placement = placement;
			def.bucket_size = 2;
			def.allocator = tu_allocator(&u.a);
			assert_int_equal(TU(tree_create)(&def, &u.t), ORT_OK);
			tu_model_init(&u.m, 64);
			for (int i = 0; i < k; ++i) {
				box_t b;
				for (int d = 0; d < DIM; ++d) {
					b.min[d] = tu_float(&u.r, 0, 10);
					b.max[d] = b.min[d] + tu_float(&u.r, 0, 1);
				}
				do_insert(&u, b);
			}
			box_t far, root = TU(tree_root_cell)(u.t);
			for (int d = 0; d < DIM; ++d) {
				float side = root.max[d] - root.min[d];
				far.min[d] = far.max[d] = root.max[d] + reach[f] * (side > 0 ? side : 10.0f);
			}
			shape was = shape_of(u.t);
			u.a.fail_at = u.a.calls + 1;
			u.a.fail_rest = true;
			ort_handle h;
			ort_result r = move ? TU(tree_move)(u.t, u.m.handle[0], far) : TU(tree_insert)(u.t, far, NULL, &h);
			u.a.fail_at = 0;
			if (r == ORT_OK) {
				if (move)
					u.m.box[0] = far;
				else
					tu_model_add(&u.m, h, far);
			} else {
				assert_int_equal(r, ORT_ERROR_OUT_OF_MEMORY);
				shape now = shape_of(u.t);
				expect_same_shape(&was, &now, move ? "move" : "insert");
				failed++;
			}
			verify(&u, true);
			TU(tree_destroy)(u.t);
			tu_model_free(&u.m);
			assert_int_equal(u.a.live, 0);
		}
	return failed;
}

static void test_far_failure_keeps_shape(void **s)
{
	(void)s;
	for (int p = 0; p < ORT_PLACEMENT_COUNT; ++p)
		for (int move = 0; move < 2; ++move) {
			int failed = far_failures((ort_placement)p, move);
			printf("# %s, far %s: %d calls refused memory, shape kept\n", ort_placement_string((ort_placement)p),
			       move ? "moves" : "inserts", failed);
			if (failed == 0) TU_FAIL("no far %s met a refused allocation: the test tests nothing\n", move ? "move" : "insert");
		}
}

// ---- the all-pairs update under refused allocations -------------------------------

/// Events of one update_pairs, counted.
static void ap_event(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)a, (void)b, (void)ua, (void)ub;
	++*(long *)ctx;
}

/// The broad phase's pair set as sorted keys, read with the injection paused.
static void ap_set(run *u, tu_list *out)
{
	u->a.paused = true;
	free(out->v);
	*out = (tu_list){0};
	tu_pair_array_keys(u->t, out);
	u->a.paused = false;
}

/// Frames where every item moves (the all-pairs update: a snapshot, its pair
/// pass, the diff), the first update among them, while the pairs grow from
/// none to every pair of a pile and back: each update is tried with its Nth
/// allocation refused (one-shot, then every one from the Nth on), N = 1, 2,
/// ... until an update meets no refusal. A refused update must say so
/// (ORT_ERROR_OUT_OF_MEMORY), report nothing, and leave the pair set as it
/// was; the tree validates and holds what the model says; then an update
/// that may allocate catches up to exactly the brute-force pairs.
static void test_all_pairs_update(void **s)
{
	(void)s;
	for (int p = 0; p < ORT_PLACEMENT_COUNT; ++p)
		for (int persistent = 0; persistent < 2; ++persistent) {
			run u;
			memset(&u, 0, sizeof u);
			u.r = tu_rng_make(31 + (uint64_t)p);
			u.placement = (ort_placement)p;
			def_t def = TU(tree_default_def)();
			def.placement = u.placement;
			def.bucket_size = 4;
			def.allocator = tu_allocator(&u.a);
			assert_int_equal(TU(tree_create)(&def, &u.t), ORT_OK);
			tu_model_init(&u.m, 64);
			// Past 64 items, most of them moved sends update_pairs down the all-pairs path.
			for (int i = 0; i < 100; ++i) do_insert(&u, spread_box(&u.r, i));
			long refusals = 0;
			tu_list was = {0}, now = {0};
			// Spread out (or piled up), piled up (every pair overlaps), spread out again.
			for (int f = 0; f < 6; ++f) {
				TU_CONTEXT("all-pairs update, %s, frame %d, %s", ort_placement_string(u.placement), f,
				           persistent ? "persistent" : "one-shot");
				// The persistent runs start piled: the first update then counts
				// its pairs before it makes their room.
				bool pile = f == 2 || f == 3 || (f == 0 && persistent);
				if (f > 0 || pile)
					for (int i = 0; i < u.m.n; ++i) {
						box_t b = pile ? (box_t){{0}, {0}} : spread_box(&u.r, i + f);
						if (pile)
							for (int d = 0; d < DIM; ++d) b.max[d] = 1 + tu_float(&u.r, 0, 1);
						do_move(&u, i, b);
					}
				for (long n = 1;; ++n) {
					ap_set(&u, &was);
					long events = 0, before = u.a.refused;
					u.a.fail_at = u.a.calls + n;
					u.a.fail_rest = persistent;
					ort_result r = TU(tree_update_pairs)(u.t, ap_event, ap_event, &events);
					u.a.fail_at = 0;
					bool met = u.a.refused != before;
					if (r == ORT_OK) {
						if (met) TU_FAIL("update_pairs met a refused allocation and said nothing\n");
						break;
					}
					if (r != ORT_ERROR_OUT_OF_MEMORY || !met)
						TU_FAIL("update_pairs: %s (a refusal %s)\n", ort_result_string(r), met ? "met" : "not met");
					if (events != 0) TU_FAIL("a refused update_pairs reported %ld events\n", events);
					ap_set(&u, &now);
					tu_expect_same(&now, &was, "the pair set after a refused update_pairs"); // frees both
					now = was = (tu_list){0};
					verify(&u, false);
					refusals++;
				}
				ap_set(&u, &now);
				u.a.paused = true;
				tu_list want = {0};
				assert_int_equal(TU(tree_find_pairs)(u.t, ORT_MASK_ALL, tu_collect_pair, &want), ORT_OK);
				tu_expect_same(&now, &want, "the pair set against find_pairs"); // frees both
				now = (tu_list){0};
				u.a.paused = false;
				verify(&u, true);
			}
			printf("# all-pairs updates, %s, %s: %ld refused\n", ort_placement_string(u.placement),
			       persistent ? "persistent" : "one-shot", refusals);
			if (refusals == 0) TU_FAIL("no update met a refused allocation: the test tests nothing\n");
			free(was.v);
			free(now.v);
			TU(tree_destroy)(u.t);
			tu_model_free(&u.m);
			assert_int_equal(u.a.live, 0);
		}
}

static void test_oom_loose(void **s) { (void)s, sweep(ORT_PLACEMENT_LOOSE); }
static void test_oom_tight(void **s) { (void)s, sweep(ORT_PLACEMENT_TIGHT); }
static void test_oom_leaves(void **s) { (void)s, sweep(ORT_PLACEMENT_LEAVES); }

static int report(void **state)
{
	(void)state;
	printf("# %ld failure points, %ld calls met a refused allocation\n", points_total, calls_total);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_oom_loose),  cmocka_unit_test(test_oom_tight),
	    cmocka_unit_test(test_oom_leaves), cmocka_unit_test(test_far_failure_keeps_shape),
	    cmocka_unit_test(test_all_pairs_update),
	};
	return cmocka_run_group_tests_name(TU_GROUP("alloc"), tests, NULL, report);
}

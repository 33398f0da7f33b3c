// fuzz_ops.c: bytes become a tree definition and a sequence of operations,
// each checked against the brute-force model of tests/testutil.h; any
// disagreement aborts.
//
// One source, three compilations (fuzz/CMakeLists.txt):
//   TEST_DIM=2, TEST_DIM=3  the engine for one dimension: fuzz_ops_run2/3
//   neither                 the entry: LLVMFuzzerTestOneInput picks the
//                           dimension from the first byte; replay.c adds the
//                           main() that replays files and directories, so
//                           every corpus file and crash is a regression test.
//
// ## Input
//
//   byte 0       dimension (bit 0)
//   bytes 1-4    definition: placement, region, bucket, prune, merge, depth,
//                looseness, min cell size, item capacity
//   then ops     one byte each (op % OP_COUNT), followed by its operands;
//                running out of bytes ends the run (missing bytes read 0)
//
// Two codes of the tick op are ops of their own (ticks do nothing unless
// ORTHANT_TEST_KNOWN_BUGS lifts the zero prune delay): 0xF0 switches the
// tree's task context (operand % 3: none, a toy task system of the caller's
// with two workers, the built-in pool with two), so find_pairs, build and
// update_pairs take their parallel paths under the same oracle, and while one
// is on the tree may hold MAX_ITEMS_TASKS items; 0xF9 moves every k-th item a
// small step, enough movers at once (32 of 160) for update_pairs to query
// them in jobs, and may remove and re-insert some in between (a freed slot
// reused in the same frame). Of the codes that move every item, 0xFE moves
// them in one move_many batch.
//
// ORTHANT_FUZZ_ORACLE_EVERY=k (valgrind's replays and the fuzz run in scripts/test.sh) makes
// the brute-force pair sets, quadratic in the items, only every k-th step and
// the last: the library is called exactly as without it (find_pairs and
// update_pairs every step, their events kept), so the same paths run, and a
// wrong pair set is still caught, at most k - 1 steps late. Everything linear
// is checked every step.
//
// One code of the clear op (0xEE; the others under 0xF0 do nothing) makes a
// pile the tree cannot spread out (fuzz_input.h's fuzz_pile: a speck and a
// far box, strips, binary scales, straddlers, boxes holding one point, a
// pinwheel of strips, rods, plates, duplicates) of up to MAX_ITEMS_PILE
// items, inserted one by one or built in one batch, so the pair finders'
// sweeps of a pile (src/sweep.h: the sort and sweep, the active set on a
// second axis, the 3D segment tree) run under the oracle, and the ops after
// it churn, move and query the pile.
//
// Invalid input is part of the alphabet: bad boxes (NaN, infinities,
// min > max, beyond ORTHANT_COORD_LIMIT) from a palette of nasty floats or raw
// bits, stale, null and foreign handles. After every step the tree validates,
// holds every model item with its box and user pointer, and finds exactly the
// model's pairs.
//
// By default valid coordinates beyond 1e15 are clamped to 1e15, a steer from
// when a root that was not a cube could overflow there. That bug is fixed (the
// test_fixed_* cases of tests/test_ops_fixed.c keep it and its kin fixed);
// ORTHANT_TEST_KNOWN_BUGS=1 lifts the clamp.
#include "fuzz_input.h"

#ifdef TEST_DIM

#define FUZZ_RUN FUZZ_CAT(fuzz_ops_run, TEST_DIM)

/// Keeps the O(n^2) pair check cheap enough for thousands of runs a second.
#define MAX_ITEMS 96
/// With a task context on: room for update_pairs' movers in jobs (32 touched
/// items, under a quarter of the live ones).
#define MAX_ITEMS_TASKS 160
/// Once a pile is made (op_pile): room for a pile the pair finders sweep
/// (src/sweep.h sweeps from 96 boxes in one list, and goes on to its active
/// set or its segment tree only past many misses a box).
#define MAX_ITEMS_PILE 512
#define STALE_RING 8

int FUZZ_RUN(const uint8_t *data, size_t size);

/// A coordinate: mostly small integers on a grid (so boxes touch, coincide and
/// sit on split lines), sometimes far, sometimes from a palette of edge values
/// or raw bits (the only source of invalid coordinates).
static bool known_bugs_gated(void);

static float coord_steered(float v)
{
	// Unless lifted, valid coordinates stay within 1e15 (invalid ones pass).
	if (known_bugs_gated() && isfinite(v) && fabsf(v) > 1e15f && fabsf(v) <= ORTHANT_COORD_LIMIT)
		return copysignf(1e15f, v);
	return v;
}

static float coord(input *in, uint8_t scale) { return coord_steered(coord_raw(in, scale)); }

static box_t read_box(input *in) { return read_box_by(in, coord); }

static bool known_bugs_gated(void)
{
	const char *s = getenv("ORTHANT_TEST_KNOWN_BUGS");
	return !(s && s[0] == '1');
}

static def_t read_def(input *in)
{
	def_t def = TU(tree_default_def)();
	uint8_t a = u8(in), b = u8(in), c = u8(in), e = u8(in);
	static const int buckets[] = {1, 2, 4, 16};
	def.placement = (ort_placement)(a % 3);
	def.use_region = a >> 2 & 1;
	def.bucket_size = buckets[a >> 3 & 3];
	def.prune_delay = (a >> 5 & 1) ? (a >> 6) * 4 : 0;
	def.merge_size = b % 3 == 0 ? -1 : b % 3 == 1 ? 0 : def.bucket_size;
	def.max_depth = (b >> 2) % (ORTHANT_MAX_DEPTH + 1);
	def.looseness = 1.0f + (float)(c % 12 + 1) * 0.25f;
	def.min_cell_size = (c >> 4) & 1 ? (float)(c >> 5) : 0.0f;
	def.item_capacity = e & 1 ? e : 0;
	for (int d = 0; d < DIM; ++d) {
		def.region.min[d] = -(float)(e >> 1 & 7) * 16.0f - 1.0f;
		def.region.max[d] = (float)(e >> 4) * 16.0f + 1.0f;
	}
	if (known_bugs_gated()) {
		def.prune_delay = 0;
		if (def.placement == ORT_PLACEMENT_LEAVES) def.item_capacity = 20000;
	}
	return def;
}

typedef struct fuzz {
	tree_t *t, *other;
	model m;
	void *user[MAX_ITEMS_PILE + 16];
	ort_tasks *tasks[2]; ///< the toy system's context and the pool's, made when first switched on
	struct toy *toy;
	bool tasks_on;
	bool piled; ///< a pile was made: room for MAX_ITEMS_PILE items
	ort_handle stale[STALE_RING];
	int stale_n;
	uintptr_t next_user;
	int asserts;
	tu_list pairs;         ///< the broad phase's set as its events tell it, sorted
	tu_list begun, ended;  ///< the events of one update_pairs
	bool oracle;           ///< this step compares with the brute-force pair sets
} fuzz;

static void count_assert(void *ctx, const char *message)
{
	(void)message;
	++*(int *)ctx;
}

static void forget_at(fuzz *f, int i)
{
	f->stale[f->stale_n++ % STALE_RING] = f->m.handle[i];
	f->user[i] = f->user[f->m.n - 1];
	tu_model_remove_at(&f->m, i);
}

static void add(fuzz *f, ort_handle h, box_t b, void *u)
{
	tu_model_add(&f->m, h, b);
	f->user[f->m.n - 1] = u;
}

static int pick(fuzz *f, input *in) { return f->m.n ? u8(in) % f->m.n : -1; }

static void on_begin(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	tu_collect_pair(&((fuzz *)ctx)->begun, a, b, ua, ub);
}

static void on_end(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	tu_collect_pair(&((fuzz *)ctx)->ended, a, b, ua, ub);
}

/// k among the first n (sorted) values of l.
static bool in_sorted(const tu_list *l, size_t n, uint64_t k)
{
	return n && bsearch(&k, l->v, n, sizeof k, tu_cmp_u64) != NULL;
}

static bool count_pair(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)a, (void)b, (void)ua, (void)ub;
	++*(size_t *)ctx;
	return true;
}

/// update_pairs after every step: its events, replayed on the set of the
/// steps before, give the brute-force pairs; current_pairs, pair_count and
/// the dense pair_array agree.
static void check_broadphase(fuzz *f)
{
	f->begun.n = f->ended.n = 0;
	assert_int_equal(TU(tree_update_pairs)(f->t, on_begin, on_end, f), ORT_OK);
	// Ended: each must be in the set; a sorted walk of both drops them.
	tu_sort(f->ended.v, f->ended.n, sizeof *f->ended.v, tu_cmp_u64);
	size_t w = 0, e = 0;
	for (size_t i = 0; i < f->pairs.n; ++i) {
		if (e < f->ended.n && f->ended.v[e] == f->pairs.v[i])
			e++;
		else if (e < f->ended.n && f->ended.v[e] < f->pairs.v[i])
			break; // an ended pair that is not in the set
		else
			f->pairs.v[w++] = f->pairs.v[i];
	}
	if (e < f->ended.n) TU_FAIL("update_pairs: ended %llx, not a pair\n", (unsigned long long)f->ended.v[e]);
	f->pairs.n = w;
	// Begun: none may be in the set; sorted, they merge into it from the back.
	tu_sort(f->begun.v, f->begun.n, sizeof *f->begun.v, tu_cmp_u64);
	size_t kept = f->pairs.n;
	for (size_t i = 0; i < f->begun.n; ++i) {
		if (in_sorted(&f->pairs, kept, f->begun.v[i]) || (i && f->begun.v[i] == f->begun.v[i - 1]))
			TU_FAIL("update_pairs: began %llx, already a pair\n", (unsigned long long)f->begun.v[i]);
		tu_push(&f->pairs, 0);
	}
	for (size_t i = kept, j = f->begun.n, o = f->pairs.n; j;) {
		if (i && f->pairs.v[i - 1] > f->begun.v[j - 1])
			f->pairs.v[--o] = f->pairs.v[--i];
		else
			f->pairs.v[--o] = f->begun.v[--j];
	}
	assert_int_equal(TU(tree_pair_count)(f->t), (int)f->pairs.n);
	if (!f->oracle) { // the same calls, their sizes checked
		size_t n = 0, n_ids = 0;
		assert_int_equal(TU(tree_current_pairs)(f->t, count_pair, &n), ORT_OK);
		assert_int_equal(n, f->pairs.n);
		(void)TU(tree_pair_ids)(f->t, &n_ids);
		(void)TU(tree_pair_array)(f->t, &n);
		assert_int_equal(n_ids, f->pairs.n);
		assert_int_equal(n, f->pairs.n);
		return;
	}
	tu_list replayed = {0}, want = {0}, current = {0};
	for (size_t i = 0; i < f->pairs.n; ++i) tu_push(&replayed, f->pairs.v[i]);
	for (int i = 0; i < f->m.n; ++i)
		for (int j = i + 1; j < f->m.n; ++j)
			if (tu_overlap(&f->m.box[i], &f->m.box[j])) {
				uint64_t a = f->m.handle[i].id, b = f->m.handle[j].id;
				tu_push(&want, a < b ? a << 32 | b : b << 32 | a);
			}
	tu_expect_same(&replayed, &want, "update_pairs events");
	want = (tu_list){0}; // handed back by tu_expect_same
	assert_int_equal(TU(tree_current_pairs)(f->t, tu_collect_pair, &current), ORT_OK);
	for (size_t i = 0; i < f->pairs.n; ++i) tu_push(&want, f->pairs.v[i]);
	tu_expect_same(&current, &want, "current_pairs");
	tu_list dense = {0};
	tu_pair_array_keys(f->t, &dense);
	want = (tu_list){0};
	for (size_t i = 0; i < f->pairs.n; ++i) tu_push(&want, f->pairs.v[i]);
	tu_expect_same(&dense, &want, "pair_array");
}

/// The tree and the model agree on everything cheap enough to ask every step.
static void check(fuzz *f)
{
	tu_check_valid(f->t);
	assert_int_equal(TU(tree_count)(f->t), f->m.n);
	for (int i = 0; i < f->m.n; ++i) {
		box_t b;
		assert_int_equal(TU(tree_get_box)(f->t, f->m.handle[i], &b), ORT_OK);
		assert_true(memcmp(&b, &f->m.box[i], sizeof b) == 0);
		assert_true(TU(tree_get_user_data)(f->t, f->m.handle[i]) == f->user[i]);
	}
	if (f->oracle) {
		tu_check_pairs(f->t, &f->m);
	} else {
		tu_list got = {0};
		assert_int_equal(TU(tree_find_pairs)(f->t, ORT_MASK_ALL, tu_collect_pair, &got), ORT_OK);
		free(got.v);
	}
	check_broadphase(f);
}

static int max_items(const fuzz *f) { return f->piled ? MAX_ITEMS_PILE : f->tasks_on ? MAX_ITEMS_TASKS : MAX_ITEMS; }

/// A task system of the caller's: remembers the task at enqueue and runs it
/// in finish, last range first, under worker numbers 1, 0, 1, ...
typedef struct toy {
	ort_task_fn *task;
	void *task_ctx;
	int count, min_range;
} toy;

static void *toy_enqueue(ort_task_fn *task, int count, int min_range, void *task_ctx, void *user)
{
	toy *s = user;
	assert_null(s->task); // one task at a time
	*s = (toy){task, task_ctx, count, min_range < 1 ? 1 : min_range};
	return s;
}

static void toy_finish(void *handle, void *user)
{
	toy *s = user;
	assert_true(handle == s);
	for (int k = (s->count + s->min_range - 1) / s->min_range - 1; k >= 0; --k) {
		int begin = k * s->min_range, end = begin + s->min_range < s->count ? begin + s->min_range : s->count;
		s->task(begin, end, k % 2, s->task_ctx);
	}
	s->task = NULL;
}

/// Switch the tree's task context: none, the toy system, or the pool.
static void op_tasks(fuzz *f, input *in)
{
	int how = u8(in) % 3;
	if (tracing) fprintf(stderr, "tasks %s\n", how == 0 ? "off" : how == 1 ? "toy" : "pool");
	if (how && !f->tasks[how - 1]) {
		ort_tasks_def def = ort_tasks_default_def();
		def.workers = 2;
		if (how == 1) {
			f->toy = calloc(1, sizeof *f->toy);
			def.enqueue = toy_enqueue;
			def.finish = toy_finish;
			def.user_ctx = f->toy;
		}
		assert_int_equal(ort_tasks_create(&def, &f->tasks[how - 1]), ORT_OK);
	}
	TU(tree_set_tasks)(f->t, how ? f->tasks[how - 1] : NULL);
	f->tasks_on = how != 0;
}

static void op_move(fuzz *f, int i, box_t b);

/// Item i's box a step of v, its direction by item and axis (some stay put).
static box_t stepped(const fuzz *f, int i, float v)
{
	box_t b = f->m.box[i];
	for (int d = 0; d < DIM; ++d) {
		float s = v * (float)((i + d) % 3 - 1);
		b.min[d] += s;
		b.max[d] += s;
	}
	return b;
}

/// Every k-th item (k = 2..9, from an offset) a small step: a few dozen
/// movers in one update. With churn (the operand's top bit) every other one
/// is then removed and a box inserted in its place, which takes the freed
/// slot, and moved: the touched list names that slot twice.
static void op_move_some(fuzz *f, input *in)
{
	uint8_t how = u8(in);
	int k = how % 8 + 2, at = u8(in) % k;
	bool churn = how & 0x80;
	float v = small(in) * 0.125f;
	if (tracing) fprintf(stderr, "move every %dth from %d by %g%s\n", k, at, (double)v, churn ? ", churn" : "");
	for (int i = at; i < f->m.n; i += k) {
		box_t b;
		op_move(f, i, stepped(f, i, v));
		if (!churn || (i / k) % 2) continue;
		ort_handle h;
		void *u = f->user[i];
		b = f->m.box[i];
		assert_int_equal(TU(tree_remove)(f->t, f->m.handle[i]), ORT_OK);
		assert_int_equal(TU(tree_insert)(f->t, b, u, &h), ORT_OK);
		f->stale[f->stale_n++ % STALE_RING] = f->m.handle[i];
		f->m.handle[i] = h; // the model keeps its place
		for (int d = 0; d < DIM; ++d) b.max[d] += 0.5f;
		op_move(f, i, b);
	}
}

static void op_insert(fuzz *f, box_t b)
{
	trace_box("insert", f->m.n, &b);
	if (f->m.n >= max_items(f)) return;
	void *u = (void *)(f->next_user++ * 8);
	ort_handle h;
	ort_result r = TU(tree_insert)(f->t, b, u, &h);
	if (!result_fits_box(&b, r)) TU_FAIL("insert: %s\n", ort_result_string(r));
	if (r == ORT_OK) add(f, h, b, u);
	else assert_true(ort_handle_is_null(h));
}

static void op_move(fuzz *f, int i, box_t b)
{
	if (i < 0) return;
	trace_box("move", i, &b);
	ort_result r = TU(tree_move)(f->t, f->m.handle[i], b);
	if (!result_fits_box(&b, r)) TU_FAIL("move: %s\n", ort_result_string(r));
	if (r == ORT_OK) f->m.box[i] = b;
}

/// Every item a small step, the step and its direction by item and axis
/// from one operand (some stay put): most of the world moves in one frame.
/// batch: in one move_many call, last item first (its bulk path from 64
/// items on); a box out of range fails the whole batch and changes nothing.
static void op_move_all(fuzz *f, input *in, bool batch)
{
	float v = small(in) * 0.25f;
	if (tracing) fprintf(stderr, "move all by %g%s\n", (double)v, batch ? " in one batch" : "");
	if (!batch) {
		for (int i = 0; i < f->m.n; ++i) op_move(f, i, stepped(f, i, v));
		return;
	}
	ort_handle hs[MAX_ITEMS_PILE + 16];
	box_t bs[MAX_ITEMS_PILE + 16];
	int n = f->m.n, bad = -1;
	for (int k = 0; k < n; ++k) {
		hs[k] = f->m.handle[n - 1 - k];
		bs[k] = stepped(f, n - 1 - k, v);
		if (bad < 0 && !box_ok(&bs[k])) bad = k;
	}
	ort_result r = TU(tree_move_many)(f->t, hs, bs, n);
	if (bad >= 0) {
		if (r == ORT_OK || !result_fits_box(&bs[bad], r)) TU_FAIL("move_many: %s\n", ort_result_string(r));
		return;
	}
	assert_int_equal(r, ORT_OK);
	for (int k = 0; k < n; ++k) f->m.box[n - 1 - k] = bs[k];
}

static void op_build(fuzz *f, input *in)
{
	int n = u8(in) % 24 + 1;
	if (f->m.n + n > max_items(f)) return;
	box_t boxes[24];
	void *users[24];
	ort_handle hs[24];
	bool all_ok = true;
	for (int k = 0; k < n; ++k) {
		boxes[k] = read_box(in);
		users[k] = (void *)(f->next_user++ * 8);
		all_ok &= box_ok(&boxes[k]);
	}
	ort_result r = TU(tree_build)(f->t, boxes, users, n, hs);
	if (all_ok) {
		assert_int_equal(r, ORT_OK);
		for (int k = 0; k < n; ++k) {
			trace_box("build", f->m.n, &boxes[k]);
			add(f, hs[k], boxes[k], users[k]);
		}
	} else {
		bool fits = false;
		for (int k = 0; k < n; ++k) fits |= !box_ok(&boxes[k]) && result_fits_box(&boxes[k], r);
		if (!fits) TU_FAIL("build of a bad batch: %s\n", ort_result_string(r));
	}
}

/// A pile (fuzz_input.h's fuzz_pile: operands kind, count, seed, how) added
/// to the tree: 2 (count + 1) boxes, at most up to MAX_ITEMS_PILE items,
/// shifted by a small step (how >> 2, times 1/8), inserted one by one (how
/// bit 0) or in one build (with bit 1: their order reversed).
static void op_pile(fuzz *f, input *in)
{
	uint8_t kind = u8(in), count = u8(in), seed = u8(in), how = u8(in);
	int n = 2 * (count + 1);
	f->piled = true;
	if (n > MAX_ITEMS_PILE - f->m.n) n = MAX_ITEMS_PILE - f->m.n;
	if (tracing) fprintf(stderr, "pile %d of %d, seed %d, how %d\n", kind % FUZZ_PILES, n, seed, how);
	if (n <= 0) return;
	tu_rng r = tu_rng_make((uint64_t)seed << 8 | kind);
	box_t *boxes = malloc(sizeof *boxes * (size_t)n);
	void **users = malloc(sizeof *users * (size_t)n);
	ort_handle *hs = malloc(sizeof *hs * (size_t)n);
	float shift = (float)(how >> 2) * 0.125f;
	for (int k = 0; k < n; ++k) {
		box_t b = fuzz_pile(&r, kind % FUZZ_PILES, k);
		for (int d = 0; d < DIM; ++d) b.min[d] += shift, b.max[d] += shift;
		boxes[how & 2 ? n - 1 - k : k] = b;
		users[k] = (void *)(f->next_user++ * 8);
	}
	if (how & 1) {
		for (int k = 0; k < n; ++k) op_insert(f, boxes[k]);
	} else {
		assert_int_equal(TU(tree_build)(f->t, boxes, users, n, hs), ORT_OK);
		for (int k = 0; k < n; ++k) {
			trace_box("build", f->m.n, &boxes[k]);
			add(f, hs[k], boxes[k], users[k]);
		}
	}
	free(boxes);
	free(users);
	free(hs);
}

/// A handle that names nothing here: removed, null, made up, or another tree's.
static void op_stale(fuzz *f, input *in)
{
	uint8_t how = u8(in);
	ort_handle h;
	switch (how % 4) {
	case 0: h = f->stale_n ? f->stale[how / 4 % (f->stale_n < STALE_RING ? f->stale_n : STALE_RING)] : ORT_NULL_HANDLE; break;
	case 1: h = ORT_NULL_HANDLE; break;
	case 2: TU(tree_insert)(f->other, read_box(in), NULL, &h); break;
	default: h.id = u8(in) + 1u, h.gen = u8(in); break;
	}
	for (int i = 0; i < f->m.n; ++i)
		if (ort_handle_equal(f->m.handle[i], h)) return; // a made-up handle that is live
	box_t b = read_box(in), got;
	int before = f->asserts;
	assert_false(TU(tree_is_valid)(f->t, h));
	assert_int_equal(TU(tree_remove)(f->t, h), ORT_ERROR_STALE_HANDLE);
	assert_int_equal(TU(tree_move)(f->t, h, b), ORT_ERROR_STALE_HANDLE);
	assert_int_equal(f->asserts, before + 2);
	assert_int_equal(TU(tree_get_box)(f->t, h, &got), ORT_ERROR_STALE_HANDLE);
	assert_null(TU(tree_get_user_data)(f->t, h));
}

/// A sphere query in double precision, lenient within rounding of the
/// surface: the library decides boxes there by its exact bounding-box test and
/// a float distance, tu_check_sphere_query by the float distance alone, and
/// exactly on the surface neither is the truth (found by this fuzzer).
static void check_sphere(fuzz *f, const float c[DIM], float r)
{
	tu_list got = {0};
	assert_int_equal(TU(tree_query_sphere)(f->t, c, r, ORT_MASK_ALL, tu_collect, &got), ORT_OK);
	tu_sort(got.v, got.n, sizeof *got.v, tu_cmp_u64);
	for (size_t i = 1; i < got.n; ++i) assert_true(got.v[i] != got.v[i - 1]);
	size_t matched = 0;
	for (int i = 0; i < f->m.n; ++i) {
		double d2 = 0, scale = r;
		for (int d = 0; d < DIM; ++d) {
			const box_t *b = &f->m.box[i];
			double v = c[d] < b->min[d] ? (double)b->min[d] - c[d] : c[d] > b->max[d] ? (double)c[d] - b->max[d] : 0;
			d2 += v * v;
			scale = fmax(scale, fmax(fabs(c[d]), fmax(fabs(b->min[d]), fabs(b->max[d]))));
		}
		double slack = scale * 1e-6, dist = sqrt(d2);
		uint64_t key = tu_key(f->m.handle[i]);
		bool found = got.n && bsearch(&key, got.v, got.n, sizeof *got.v, tu_cmp_u64) != NULL;
		matched += found;
		if (dist < r - slack && !found) TU_FAIL("sphere: item %d at %g inside radius %g missed\n", i, dist, (double)r);
		if (dist > r + slack && found) TU_FAIL("sphere: item %d at %g outside radius %g found\n", i, dist, (double)r);
	}
	if (matched != got.n) TU_FAIL("sphere: %zu results are no items\n", got.n - matched);
	free(got.v);
}

/// Every query kind around operands read from the input.
static void op_query(fuzz *f, input *in)
{
	box_t q;
	for (int d = 0; d < DIM; ++d) {
		q.min[d] = small(in);
		q.max[d] = q.min[d] + (float)u8(in);
	}
	float p[DIM], dir[DIM];
	for (int d = 0; d < DIM; ++d) {
		p[d] = small(in) * 0.5f;
		dir[d] = small(in) / 16.0f;
	}
	uint8_t k = u8(in);
	if (tracing) {
		trace_box("query box", 0, &q);
		fprintf(stderr, "point/centre/origin");
		for (int d = 0; d < DIM; ++d) fprintf(stderr, " %a", (double)p[d]);
		fprintf(stderr, ", radius %d, k %d\n", k & 63, k);
	}
	tu_check_box_query(f->t, &f->m, q);
	tu_check_point_query(f->t, &f->m, p);
	check_sphere(f, p, (float)(k & 63));
	tu_check_ray(f->t, &f->m, p, dir, k & 64 ? INFINITY : (float)k);
	tu_check_nearest(f->t, &f->m, p, k % 20 + 1, k & 128 ? INFINITY : (float)(k & 63));
}

enum { OP_INSERT, OP_REMOVE, OP_MOVE_NEAR, OP_MOVE_FAR, OP_CLEAR, OP_BUILD, OP_TICK, OP_STALE, OP_QUERY, OP_COUNT };

int FUZZ_RUN(const uint8_t *data, size_t size)
{
	input in = {data, data + size};
	fuzz f;
	memset(&f, 0, sizeof f);
	f.next_user = 1;
	def_t def = read_def(&in);
	tracing = getenv("FUZZ_TRACE") != NULL;
	if (tracing)
		fprintf(stderr, "%s region %d (%g..%g) bucket %d prune %d merge %d depth %d looseness %g min cell %g capacity %d\n",
		        ort_placement_string(def.placement), def.use_region, (double)def.region.min[0], (double)def.region.max[0],
		        def.bucket_size, def.prune_delay, def.merge_size, def.max_depth, (double)def.looseness,
		        (double)def.min_cell_size, def.item_capacity);
	def.assert_fn = count_assert;
	def.assert_ctx = &f.asserts;
	assert_int_equal(TU(tree_create)(&def, &f.t), ORT_OK);
	assert_int_equal(TU(tree_create)(&def, &f.other), ORT_OK);
	tu_model_init(&f.m, MAX_ITEMS_PILE + 16);
	const char *every_env = getenv("ORTHANT_FUZZ_ORACLE_EVERY");
	int every = every_env ? atoi(every_env) : 1;
	if (every < 1) every = 1;
	for (int steps = 0; in.p < in.end && steps < 4096; ++steps) {
		uint8_t op = u8(&in);
		switch (op % OP_COUNT) {
		case OP_INSERT: op_insert(&f, read_box(&in)); break;
		case OP_REMOVE: {
			int i = pick(&f, &in);
			if (i < 0) break;
			assert_int_equal(TU(tree_remove)(f.t, f.m.handle[i]), ORT_OK);
			if (tracing) fprintf(stderr, "remove %d\n", i);
			forget_at(&f, i);
			break;
		}
		case OP_MOVE_NEAR: {
			if (op >= 0xF0) { // rarer: every item moves, so update_pairs finds all pairs at once
				op_move_all(&f, &in, op == 0xFE);
				break;
			}
			int i = pick(&f, &in);
			if (i < 0) break;
			box_t b = f.m.box[i];
			for (int d = 0; d < DIM; ++d) {
				float v = small(&in) * (op & 16 ? 1.0f : 0.0625f);
				b.min[d] += v;
				b.max[d] += v;
			}
			op_move(&f, i, b);
			break;
		}
		case OP_MOVE_FAR: {
			int i = pick(&f, &in); // operands in input order, whatever the compiler
			op_move(&f, i, read_box(&in));
			break;
		}
		case OP_CLEAR:
			if (op == 0xEE) {
				op_pile(&f, &in);
				break;
			}
			if (op < 0xF0) break; // rarer than the rest
			if (tracing) fprintf(stderr, "clear\n");
			TU(tree_clear)(f.t);
			f.pairs.n = 0; // the broad phase starts over, without end events
			while (f.m.n) forget_at(&f, f.m.n - 1);
			break;
		case OP_BUILD: op_build(&f, &in); break;
		case OP_TICK:
			if (op == 0xF0) {
				op_tasks(&f, &in);
				break;
			}
			if (op == 0xF9) {
				op_move_some(&f, &in);
				break;
			}
			if (tracing) fprintf(stderr, "tick\n");
			TU(tree_tick)(f.t);
			break;
		case OP_STALE: op_stale(&f, &in); break;
		default: op_query(&f, &in); break;
		}
		f.oracle = steps % every == every - 1 || in.p >= in.end || steps == 4095;
		check(&f);
	}
	TU(tree_destroy)(f.t);
	TU(tree_destroy)(f.other);
	ort_tasks_destroy(f.tasks[0]);
	ort_tasks_destroy(f.tasks[1]);
	free(f.toy);
	tu_model_free(&f.m);
	free(f.pairs.v);
	free(f.begun.v);
	free(f.ended.v);
	return 0;
}

#else

FUZZ_ENTRY(fuzz_ops_run)

#endif

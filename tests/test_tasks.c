// test_tasks.c: calls split over workers (include/orthant/task.h) give the
// serial answer, in the serial order, for every worker count and task system.
//
// For 1, 2, 3 and 8 workers of the built-in pool and for a toy task system of
// the caller's (which runs the ranges it is given backwards, under made-up
// worker numbers, only when finish is called), each parallel call must return
// the serial call's sequence — packed build and find_pairs, the tree's build
// (the same tree: handles, nodes, entry order), find_pairs, update_pairs (many
// movers or few), batched queries — with the pairs a sweep finds. An allocator
// failing the Nth request proves a refused job buffer changes nothing.
#define _POSIX_C_SOURCE 200809L
#include "testutil.h"

typedef TU(packed) packed_t;
typedef TU(ray_hit) ray_hit_t;

/// The scenes' sizes: the uniform one keeps two build pieces (16384 boxes
/// each) however it is shrunk (tu_size).
#define N_UNIFORM tu_size(30000, 17000)
#define N_CLUSTER tu_size(9000, 4000) // test_alloc_failure takes 4000 of them
#define N_PILES tu_size(3000, 1500)      // about n * n / 9 pairs

// ---- scenes ------------------------------------------------------------------------

typedef struct scene {
	box_t *box;
	int n;
} scene;

/// kind 0: uniform small boxes; 1: a few dense clusters of equal and nested
/// boxes plus some large ones (every subtree's crosses are busy); 2: points
/// on a line (many items share one key); 3: piles whose boxes all meet — a
/// third identical, a third a speck of overlapping tiny boxes — among
/// uniform ones.
static scene scene_make(int kind, uint64_t seed)
{
	tu_rng r = tu_rng_make(seed);
	scene s = {NULL, kind == 0 ? N_UNIFORM : kind == 3 ? N_PILES : N_CLUSTER};
	s.box = malloc(sizeof *s.box * (size_t)s.n);
	for (int i = 0; i < s.n; ++i) {
		box_t *b = &s.box[i];
		for (int d = 0; d < DIM; ++d) {
			float lo, size;
			if (kind == 0) {
				lo = tu_float(&r, 0, 1000);
				size = tu_float(&r, 0, 6);
			} else if (kind == 1) {
				float c = (float)(i % 5) * 200.0f;
				lo = c + tu_float(&r, 0, 40);
				size = i % 97 == 0 ? tu_float(&r, 100, 600) : i % 3 == 0 ? 0.0f : tu_float(&r, 0, 4);
			} else if (kind == 2) {
				lo = d == 0 ? (float)(i % 3000) * 0.25f : 5.0f;
				size = 0.0f;
			} else {
				lo = i % 3 == 0 ? 100.0f : i % 3 == 1 ? 500.0f + tu_float(&r, 0, 0.01f) : tu_float(&r, 0, 1000);
				size = i % 3 == 0 ? 2.0f : i % 3 == 1 ? 0.02f : tu_float(&r, 0, 6);
			}
			b->min[d] = lo;
			b->max[d] = lo + size;
		}
	}
	return s;
}

typedef struct pair_list {
	uint64_t *v;
	size_t n, cap;
} pair_list;

static void pl_push(pair_list *l, uint64_t v)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 1024;
		l->v = realloc(l->v, l->cap * sizeof *l->v);
		assert_non_null(l->v);
	}
	l->v[l->n++] = v;
}

static uint64_t pair_key(uint32_t a, uint32_t b) { return a < b ? (uint64_t)a << 32 | b : (uint64_t)b << 32 | a; }

static bool collect_id_pair(void *ctx, uint32_t a, uint32_t b)
{
	pl_push(ctx, (uint64_t)a << 32 | b); // as reported: the order of a and b counts too
	return true;
}

static const box_t *g_sort_boxes;
static int cmp_min0(const void *a, const void *b)
{
	float x = g_sort_boxes[*(const int *)a].min[0], y = g_sort_boxes[*(const int *)b].min[0];
	return (x > y) - (x < y);
}

/// Every overlapping pair by a sweep on axis 0, as sorted pair keys.
static pair_list sweep_pairs(const scene *s)
{
	int *order = malloc(sizeof *order * (size_t)s->n);
	for (int i = 0; i < s->n; ++i) order[i] = i;
	g_sort_boxes = s->box;
	tu_sort(order, (size_t)s->n, sizeof *order, cmp_min0);
	pair_list l = {0};
	for (int i = 0; i < s->n; ++i) {
		const box_t *a = &s->box[order[i]];
		for (int j = i + 1; j < s->n && s->box[order[j]].min[0] <= a->max[0]; ++j)
			if (tu_overlap(a, &s->box[order[j]])) pl_push(&l, pair_key((uint32_t)order[i], (uint32_t)order[j]));
	}
	free(order);
	tu_sort(l.v, l.n, sizeof *l.v, tu_cmp_u64);
	return l;
}

static void expect_same_sequence(const pair_list *got, const pair_list *want, const char *what)
{
	if (got->n != want->n) TU_FAIL("%s: %zu results, serially %zu\n", what, got->n, want->n);
	for (size_t i = 0; i < got->n; ++i)
		if (got->v[i] != want->v[i]) fail_msg("%s: result %zu differs from the serial order", what, i);
}

/// The reported pairs, as a set, are the sweep's.
static void expect_pairs_are(const pair_list *got, const pair_list *sweep, const char *what)
{
	pair_list s = {0};
	for (size_t i = 0; i < got->n; ++i) pl_push(&s, pair_key((uint32_t)(got->v[i] >> 32), (uint32_t)got->v[i]));
	tu_sort(s.v, s.n, sizeof *s.v, tu_cmp_u64);
	if (s.n != sweep->n) fail_msg("%s: %zu pairs, the sweep finds %zu", what, s.n, sweep->n);
	for (size_t i = 0; i < s.n; ++i)
		if (s.v[i] != sweep->v[i]) fail_msg("%s: pair set differs from the sweep at %zu", what, i);
	free(s.v);
}

// ---- a toy task system of the caller's -------------------------------------------------

/// Remembers one task at enqueue and runs it in finish: ranges of min_range,
/// last range first, under worker numbers counting down.
typedef struct toy_system {
	ort_task_fn *task;
	void *task_ctx;
	int count, min_range, workers;
	int enqueued, finished;
} toy_system;

static void *toy_enqueue(ort_task_fn *task, int count, int min_range, void *task_ctx, void *user)
{
	toy_system *s = user;
	assert_true(s->enqueued == s->finished); // one task at a time
	*s = (toy_system){task, task_ctx, count, min_range < 1 ? 1 : min_range, s->workers, s->enqueued + 1,
	                  s->finished};
	return s;
}

static void toy_finish(void *handle, void *user)
{
	toy_system *s = user;
	assert_ptr_equal(handle, s);
	int ranges = (s->count + s->min_range - 1) / s->min_range;
	for (int k = ranges - 1; k >= 0; --k) {
		int begin = k * s->min_range, end = begin + s->min_range < s->count ? begin + s->min_range : s->count;
		s->task(begin, end, k % s->workers, s->task_ctx);
	}
	s->finished++;
}

// ---- the contexts under test -------------------------------------------------------

enum { CONTEXTS = 6 };
static const int k_workers[CONTEXTS] = {1, 2, 3, 8, 3, 2};

/// Context c: the built-in pool with k_workers[c] workers, or (c = 4) the
/// toy system; c = 5 is the pool again, made with the failing allocator.
static ort_tasks *context_make(int c, toy_system *toy, tu_alloc *alloc)
{
	ort_tasks_def def = ort_tasks_default_def();
	def.workers = k_workers[c];
	if (c == 4) {
		*toy = (toy_system){.workers = def.workers};
		def.enqueue = toy_enqueue;
		def.finish = toy_finish;
		def.user_ctx = toy;
	}
	if (c == 5) def.allocator = tu_allocator(alloc);
	ort_tasks *t = NULL;
	assert_int_equal(ort_tasks_create(&def, &t), ORT_OK);
	assert_non_null(t);
	return t;
}

// ---- packed ---------------------------------------------------------------------------

static pair_list packed_pairs(const packed_t *p)
{
	pair_list l = {0};
	assert_int_equal(TU(packed_find_pairs)(p, collect_id_pair, &l), ORT_OK);
	return l;
}

/// Every node of a packed tree in walk order: bounds, depth and own items.
static void walk_node(void *ctx, const box_t *cell, const box_t *bounds, int depth, int items)
{
	(void)cell;
	pair_list *l = ctx;
	uint32_t w[2 * DIM];
	memcpy(w, bounds, sizeof w);
	for (int k = 0; k < 2 * DIM; ++k) pl_push(l, w[k]);
	pl_push(l, (uint64_t)depth << 32 | (uint32_t)items);
}

static pair_list packed_walk(const packed_t *p)
{
	pair_list l = {0};
	TU(packed_visit_nodes)(p, walk_node, &l);
	return l;
}

/// Build and find pairs serially and with each context: the same tree, the
/// same sequence. A shallow max_depth (0: the default) leaves piles the pair
/// finder sweeps.
static void packed_scene(int kind, int max_depth)
{
	scene s = scene_make(kind, 40u + (uint64_t)kind);
	pair_list sweep = sweep_pairs(&s);
	TU(packed_def) def = TU(packed_default_def)();
	if (max_depth) def.max_depth = max_depth;
	packed_t *serial;
	assert_int_equal(TU(packed_create)(&def, &serial), ORT_OK);
	assert_int_equal(TU(packed_build)(serial, s.box, s.n), ORT_OK);
	pair_list want = packed_pairs(serial), want_walk = packed_walk(serial);
	expect_pairs_are(&want, &sweep, "serial packed pairs");
	tu_alloc alloc = {0};
	for (int c = 0; c < CONTEXTS; ++c) {
		toy_system toy;
		ort_tasks *tasks = context_make(c, &toy, &alloc);
		def.tasks = tasks;
		packed_t *p;
		assert_int_equal(TU(packed_create)(&def, &p), ORT_OK);
		for (int round = 0; round < 2; ++round) { // the second reuses every buffer
			TU_CONTEXT("scene %d, context %d, round %d", kind, c, round);
			assert_int_equal(TU(packed_build)(p, s.box, s.n), ORT_OK);
			char msg[128];
			assert_int_equal(TU(packed_validate)(p, msg, sizeof msg), ORT_OK);
			pair_list got = packed_pairs(p), walk = packed_walk(p);
			expect_same_sequence(&got, &want, "packed pairs");
			expect_same_sequence(&walk, &want_walk, "packed nodes");
			free(got.v);
			free(walk.v);
		}
		if (c == 4) assert_true(toy.finished > 0 && toy.finished == toy.enqueued);
		// The same tree serially again: the context changes nothing stored.
		TU(packed_set_tasks)(p, NULL);
		pair_list again = packed_pairs(p);
		expect_same_sequence(&again, &want, "packed pairs without tasks");
		free(again.v);
		TU(packed_destroy)(p);
		ort_tasks_destroy(tasks);
	}
	free(want.v);
	free(want_walk.v);
	free(sweep.v);
	free(s.box);
	TU(packed_destroy)(serial);
}

static void test_packed_uniform(void **st) { (void)st, packed_scene(0, 0); }
static void test_packed_clusters(void **st) { (void)st, packed_scene(1, 0); }
static void test_packed_line(void **st) { (void)st, packed_scene(2, 0); }
static void test_packed_piles(void **st) { (void)st, packed_scene(1, 2); }
static void test_packed_meeting_piles(void **st) { (void)st, packed_scene(3, 0); }

/// A callback that stops: the parallel call stops at the same pair.
static bool stop_after(void *ctx, uint32_t a, uint32_t b)
{
	(void)a, (void)b;
	return --*(int *)ctx > 0;
}

static void test_packed_stop(void **st)
{
	(void)st;
	scene s = scene_make(0, 7);
	ort_tasks_def tdef = ort_tasks_default_def();
	tdef.workers = 2;
	ort_tasks *tasks;
	assert_int_equal(ort_tasks_create(&tdef, &tasks), ORT_OK);
	TU(packed_def) def = TU(packed_default_def)();
	def.tasks = tasks;
	packed_t *p;
	assert_int_equal(TU(packed_create)(&def, &p), ORT_OK);
	assert_int_equal(TU(packed_build)(p, s.box, s.n), ORT_OK);
	pair_list all = packed_pairs(p);
	assert_true(all.n >= 2);
	int left = (int)all.n / 2;
	assert_int_equal(TU(packed_find_pairs)(p, stop_after, &left), ORT_OK);
	assert_int_equal(left, 0); // called exactly until it said stop
	free(all.v);
	TU(packed_destroy)(p);
	ort_tasks_destroy(tasks);
	free(s.box);
}

// ---- the tree: find_pairs and batches ----------------------------------------------------

static bool collect_handle_pair(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)ua, (void)ub;
	pl_push(ctx, (uint64_t)(a.id - 1) << 32 | (b.id - 1));
	return true;
}

typedef struct batch_result {
	int *offsets;
	void *out;
	int total;
	ort_result r;
} batch_result;

/// Boxes (kind 0), points (1) or rays (2) over a tree, into room for out_cap results.
static batch_result run_batch(const tree_t *t, int kind, const scene *q, int out_cap)
{
	batch_result b = {calloc((size_t)q->n + 1, sizeof(int)), NULL, -1, ORT_OK};
	size_t rec = kind == 2 ? sizeof(ray_hit_t) : sizeof(ort_handle);
	b.out = calloc((size_t)out_cap + 1, rec);
	float(*pts)[DIM] = malloc(sizeof *pts * (size_t)q->n);
	float(*dirs)[DIM] = malloc(sizeof *dirs * (size_t)q->n);
	float *tmax = malloc(sizeof *tmax * (size_t)q->n);
	for (int i = 0; i < q->n; ++i) {
		for (int d = 0; d < DIM; ++d) {
			pts[i][d] = q->box[i].min[d];
			dirs[i][d] = q->box[i].max[d] - q->box[i].min[d] - 2.0f;
		}
		tmax[i] = 40.0f;
	}
	if (kind == 0) b.r = TU(tree_query_boxes)(t, q->box, q->n, ORT_MASK_ALL, b.out, out_cap, b.offsets, &b.total);
	if (kind == 1) b.r = TU(tree_query_points)(t, (const float(*)[DIM])pts, q->n, ORT_MASK_ALL, b.out, out_cap, b.offsets, &b.total);
	if (kind == 2)
		b.r = TU(tree_query_rays)(t, (const float(*)[DIM])pts, (const float(*)[DIM])dirs, tmax, q->n, ORT_MASK_ALL,
		                          b.out, out_cap, b.offsets, &b.total);
	free(pts);
	free(dirs);
	free(tmax);
	return b;
}

static void expect_same_batch(const batch_result *got, const batch_result *want, int kind, int nq, int out_cap)
{
	assert_int_equal(got->r, want->r);
	assert_int_equal(got->total, want->total);
	assert_memory_equal(got->offsets, want->offsets, sizeof(int) * (size_t)(nq + 1));
	int n = want->total < out_cap ? want->total : out_cap;
	if (kind != 2) {
		if (n > 0) assert_memory_equal(got->out, want->out, sizeof(ort_handle) * (size_t)n);
		return;
	}
	const ray_hit_t *g = got->out, *w = want->out; // field by field: records have padding
	for (int i = 0; i < n; ++i) {
		assert_true(ort_handle_equal(g[i].handle, w[i].handle));
		assert_true(g[i].t == w[i].t);
		assert_memory_equal(g[i].point, w[i].point, sizeof g[i].point);
		assert_memory_equal(g[i].normal, w[i].normal, sizeof g[i].normal);
	}
}

static void batch_free(batch_result *b)
{
	free(b->offsets);
	free(b->out);
}

/// The default tree with this placement and max_depth (-1: the default's).
static def_t def_of(ort_placement placement, int max_depth)
{
	def_t def = TU(tree_default_def)();
	def.placement = placement;
	if (max_depth >= 0) def.max_depth = max_depth;
	return def;
}

static void tree_scene(int kind, ort_placement placement, int max_depth)
{
	scene s = scene_make(kind, 90u + (uint64_t)kind);
	pair_list sweep = sweep_pairs(&s);
	def_t def = def_of(placement, max_depth);
	tree_t *t;
	assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
	for (int i = 0; i < s.n; ++i) assert_int_equal(TU(tree_insert)(t, s.box[i], NULL, NULL), ORT_OK);
	tu_check_valid(t);
	pair_list want = {0};
	assert_int_equal(TU(tree_find_pairs)(t, ORT_MASK_ALL, collect_handle_pair, &want), ORT_OK);
	expect_pairs_are(&want, &sweep, "serial tree pairs");
	scene q = scene_make(0, 300u + (uint64_t)kind);
	q.n = 1500;
	batch_result serial[3][2];
	int caps[2] = {1 << 20, 700};
	for (int k = 0; k < 3; ++k)
		for (int c = 0; c < 2; ++c) serial[k][c] = run_batch(t, k, &q, caps[c]);
	tu_alloc alloc = {0};
	for (int c = 0; c < CONTEXTS; ++c) {
		toy_system toy;
		ort_tasks *tasks = context_make(c, &toy, &alloc);
		TU(tree_set_tasks)(t, tasks);
		for (int round = 0; round < 2; ++round) {
			TU_CONTEXT("scene %d, %s, context %d, round %d", kind, ort_placement_string(placement), c, round);
			pair_list got = {0};
			assert_int_equal(TU(tree_find_pairs)(t, ORT_MASK_ALL, collect_handle_pair, &got), ORT_OK);
			expect_same_sequence(&got, &want, "tree pairs");
			free(got.v);
			for (int k = 0; k < 3; ++k)
				for (int cc = 0; cc < 2; ++cc) {
					batch_result b = run_batch(t, k, &q, caps[cc]);
					expect_same_batch(&b, &serial[k][cc], k, q.n, caps[cc]);
					batch_free(&b);
				}
		}
		TU(tree_set_tasks)(t, NULL);
		ort_tasks_destroy(tasks);
	}
	tu_check_valid(t);
	for (int k = 0; k < 3; ++k)
		for (int c = 0; c < 2; ++c) batch_free(&serial[k][c]);
	free(q.box);
	free(want.v);
	free(sweep.v);
	free(s.box);
	TU(tree_destroy)(t);
}

/// A root that holds every entry and has no children (max_depth 0): no
/// subtree is small enough to be a job of its own.
static void test_tree_flat(void **st)
{
	(void)st;
	scene s = scene_make(0, 5);
	s.n = 3000;
	def_t def = TU(tree_default_def)();
	def.max_depth = 0;
	tree_t *t;
	assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
	for (int i = 0; i < s.n; ++i) assert_int_equal(TU(tree_insert)(t, s.box[i], NULL, NULL), ORT_OK);
	pair_list want = {0}, got = {0};
	assert_int_equal(TU(tree_find_pairs)(t, ORT_MASK_ALL, collect_handle_pair, &want), ORT_OK);
	ort_tasks_def tdef = ort_tasks_default_def();
	tdef.workers = 2;
	ort_tasks *tasks;
	assert_int_equal(ort_tasks_create(&tdef, &tasks), ORT_OK);
	TU(tree_set_tasks)(t, tasks);
	assert_int_equal(TU(tree_find_pairs)(t, ORT_MASK_ALL, collect_handle_pair, &got), ORT_OK);
	expect_same_sequence(&got, &want, "pairs of a flat tree");
	TU(tree_destroy)(t);
	ort_tasks_destroy(tasks);
	free(want.v);
	free(got.v);
	free(s.box);
}

static void record_event(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)ua, (void)ub;
	pl_push(ctx, (uint64_t)a.id << 32 | b.id);
}

/// update_pairs when most items moved makes one find_pairs pass: with tasks
/// its begin and end events are the serial ones, in the same order.
static void test_update_pairs(void **st)
{
	(void)st;
	scene s = scene_make(0, 12);
	s.n = 12000;
	ort_tasks_def tdef = ort_tasks_default_def();
	tdef.workers = 3;
	ort_tasks *tasks;
	assert_int_equal(ort_tasks_create(&tdef, &tasks), ORT_OK);
	pair_list ev[2] = {{0}, {0}};
	for (int w = 0; w < 2; ++w) {
		def_t def = TU(tree_default_def)();
		def.tasks = w ? tasks : NULL;
		tree_t *t;
		assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
		ort_handle *h = malloc(sizeof *h * (size_t)s.n);
		for (int i = 0; i < s.n; ++i) assert_int_equal(TU(tree_insert)(t, s.box[i], NULL, &h[i]), ORT_OK);
		for (int frame = 0; frame < 3; ++frame) {
			for (int i = 0; i < s.n; ++i) {
				box_t b = s.box[i];
				for (int d = 0; d < DIM; ++d) b.min[d] += (float)frame, b.max[d] += (float)frame * (i % 2 ? 1.5f : 1.0f);
				assert_int_equal(TU(tree_move)(t, h[i], b), ORT_OK);
			}
			assert_int_equal(TU(tree_update_pairs)(t, record_event, record_event, &ev[w]), ORT_OK);
			pl_push(&ev[w], UINT64_MAX); // the frame's end
		}
		tu_check_valid(t);
		free(h);
		TU(tree_destroy)(t);
	}
	expect_same_sequence(&ev[1], &ev[0], "update_pairs events");
	free(ev[0].v);
	free(ev[1].v);
	ort_tasks_destroy(tasks);
	free(s.box);
}

/// The events (each frame ended by its result) of update_pairs with few movers
/// (every 23rd item; on odd frames all on one spot, so the set must grow) on
/// context c (-1: serial), the tree's allocator refusing its fail-th
/// allocation of frame 3 (0: none); each set is checked against the sweep.
static pair_list movers_events(int c, ort_placement placement, long fail)
{
	scene s = scene_make(1, 21);
	s.n = 3000;
	toy_system toy;
	tu_alloc talloc = {0}, alloc = {0};
	def_t def = def_of(placement, -1);
	def.allocator = tu_allocator(&alloc);
	def.tasks = c < 0 ? NULL : context_make(c, &toy, &talloc);
	tree_t *t = NULL;
	assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
	ort_handle *h = malloc(sizeof *h * (size_t)s.n);
	for (int i = 0; i < s.n; ++i) assert_int_equal(TU(tree_insert)(t, s.box[i], NULL, &h[i]), ORT_OK);
	pair_list ev = {0};
	assert_int_equal(TU(tree_update_pairs)(t, record_event, record_event, &ev), ORT_OK);
	for (int frame = 0; frame < 5; ++frame) {
		for (int i = frame % 23; i < s.n; i += 23) {
			for (int d = 0; d < DIM; ++d) {
				float lo = frame % 2 ? 300.0f + (float)(i % 3) : s.box[i].min[d] + (float)(i % 7) - 3.0f;
				s.box[i].max[d] += lo - s.box[i].min[d], s.box[i].min[d] = lo;
			}
			assert_int_equal(TU(tree_move)(t, h[i], s.box[i]), ORT_OK);
		}
		if (fail && frame == 3) tu_alloc_fail_in(&alloc, fail, false);
		if (c == 5) tu_alloc_fail_in(&talloc, 1 + frame % 3, frame == 2); // refuse a job buffer
		ort_result r = TU(tree_update_pairs)(t, record_event, record_event, &ev);
		tu_alloc_disarm(&alloc);
		assert_true(r == ORT_OK || (fail && r == ORT_ERROR_OUT_OF_MEMORY));
		pl_push(&ev, UINT64_MAX - (uint64_t)r), tu_check_valid(t);
		pair_list now = {0}, sweep = r == ORT_OK ? sweep_pairs(&s) : now;
		assert_int_equal(TU(tree_current_pairs)(t, collect_handle_pair, &now), ORT_OK);
		if (r == ORT_OK) expect_pairs_are(&now, &sweep, "update_pairs with few movers");
		free(now.v), free(sweep.v);
	}
	TU(tree_destroy)(t), ort_tasks_destroy(def.tasks), free(h), free(s.box);
	return ev;
}

/// Movers queried in jobs: the serial events, in order, on every context.
static void test_update_movers(void **st)
{
	(void)st;
	const ort_placement placements[] = {ORT_PLACEMENT_LOOSE, ORT_PLACEMENT_TIGHT, ORT_PLACEMENT_LEAVES};
	for (int p = 0; p < 3; ++p)
		for (long fail = 0; fail < 3; ++fail) {
			pair_list want = movers_events(-1, placements[p], fail);
			// Under valgrind and ThreadSanitizer (ORTHANT_TEST_SHRINK=8) the
			// contexts that differ most: 8 workers, the toy system, the
			// failing allocator; the ctest runs try every one.
			int first = fail ? 2 : tu_shrink() >= 8 ? 3 : 0;
			for (int c = first; c < (fail ? 3 : CONTEXTS); ++c) {
				pair_list got = movers_events(c, placements[p], fail);
				expect_same_sequence(&got, &want, "update_pairs events with few movers"), free(got.v);
			}
			free(want.v);
		}
}

static void test_tree_loose(void **st) { (void)st, tree_scene(0, ORT_PLACEMENT_LOOSE, -1); }
static void test_tree_clusters(void **st) { (void)st, tree_scene(1, ORT_PLACEMENT_LOOSE, -1); }
static void test_tree_tight(void **st) { (void)st, tree_scene(0, ORT_PLACEMENT_TIGHT, -1); }
static void test_tree_leaves(void **st) { (void)st, tree_scene(1, ORT_PLACEMENT_LEAVES, -1); }
/// Shallow trees: piles the pair finder sweeps, in jobs too.
static void test_tree_piles(void **st)
{
	(void)st;
	tree_scene(1, ORT_PLACEMENT_LOOSE, 1);
	tree_scene(1, ORT_PLACEMENT_LEAVES, 1);
}

// ---- the tree's build -------------------------------------------------------------------

/// Every node of a tree in visit order: cell, depth and own entries.
static void tree_walk_node(void *ctx, const box_t *cell, const box_t *bounds, int depth, int entries)
{
	(void)bounds;
	walk_node(ctx, NULL, cell, depth, entries);
}

/// What a built tree answers: its handles, nodes, pairs, a batch of box
/// queries (the order of the entries in each node) and its shape.
typedef struct built {
	ort_handle *h;
	pair_list walk, pairs;
	batch_result boxes;
	ort_tree_stats stats;
} built;

static built built_of(tree_t *t, const scene *s, const scene *q)
{
	built b = {malloc(sizeof *b.h * (size_t)s->n), {0}, {0}, {0}, {0}};
	TU(tree_clear)(t); // a build into an empty tree (the second round reuses its pools)
	void **user = malloc(sizeof *user * (size_t)s->n);
	for (int i = 0; i < s->n; ++i) user[i] = &s->box[i];
	assert_int_equal(TU(tree_build)(t, s->box, user, s->n, b.h), ORT_OK);
	free(user);
	tu_check_valid(t);
	// Each handle names its box's item: its box and its user data.
	for (int i = 0; i < s->n; ++i) {
		box_t got;
		assert_int_equal(TU(tree_get_box)(t, b.h[i], &got), ORT_OK);
		assert_memory_equal(&got, &s->box[i], sizeof got);
		assert_ptr_equal(TU(tree_get_user_data)(t, b.h[i]), &s->box[i]);
	}
	TU(tree_visit_nodes)(t, tree_walk_node, &b.walk);
	assert_int_equal(TU(tree_find_pairs)(t, ORT_MASK_ALL, collect_handle_pair, &b.pairs), ORT_OK);
	// The pairs as batch indices (a build numbers its items in the tree's order).
	uint32_t *batch_of = malloc(sizeof *batch_of * (size_t)s->n);
	for (int i = 0; i < s->n; ++i) batch_of[b.h[i].id - 1] = (uint32_t)i;
	for (size_t i = 0; i < b.pairs.n; ++i)
		b.pairs.v[i] = (uint64_t)batch_of[b.pairs.v[i] >> 32] << 32 | batch_of[(uint32_t)b.pairs.v[i]];
	free(batch_of);
	b.boxes = run_batch(t, 0, q, 1 << 20);
	ort_handle *hit = b.boxes.out; // by slot: a rebuild bumps the generations
	for (int i = 0; i < b.boxes.total; ++i) hit[i].gen = 0;
	TU(tree_get_stats)(t, &b.stats);
	return b;
}

static void built_free(built *b)
{
	free(b->h);
	free(b->walk.v);
	free(b->pairs.v);
	batch_free(&b->boxes);
}

/// Build serially and with each context, into a new tree and again into the
/// same one: the same handles, nodes, entry order and pairs, and the pairs
/// are the sweep's. n_max (0: all) shortens the scene (few boxes: one job).
static void tree_build_scene(int kind, ort_placement placement, int max_depth, int n_max)
{
	scene s = scene_make(kind, 40u + (uint64_t)kind);
	if (n_max > 0 && n_max < s.n) s.n = n_max;
	scene q = scene_make(0, 500u + (uint64_t)kind);
	q.n = 800;
	pair_list sweep = sweep_pairs(&s);
	def_t def = def_of(placement, max_depth);
	tree_t *t;
	assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
	built want = built_of(t, &s, &q);
	TU(tree_destroy)(t);
	expect_pairs_are(&want.pairs, &sweep, "pairs of the serial build");
	assert_int_equal(want.stats.items, s.n);
	tu_alloc alloc = {0};
	for (int c = 0; c < CONTEXTS; ++c) {
		toy_system toy;
		ort_tasks *tasks = context_make(c, &toy, &alloc);
		def.tasks = tasks;
		assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
		for (int round = 0; round < 2; ++round) {
			TU_CONTEXT("scene %d, %d boxes, %s, max_depth %d, context %d, round %d", kind, s.n,
			           ort_placement_string(placement), def.max_depth, c, round);
			built got = built_of(t, &s, &q);
			for (int i = 0; i < s.n; ++i) assert_int_equal(got.h[i].id, want.h[i].id); // trees salt generations apart
			expect_same_sequence(&got.walk, &want.walk, "nodes of the build");
			expect_same_sequence(&got.pairs, &want.pairs, "pairs of the build");
			expect_same_batch(&got.boxes, &want.boxes, 0, q.n, 1 << 20);
			assert_int_equal(got.stats.nodes, want.stats.nodes);
			assert_int_equal(got.stats.leaves, want.stats.leaves);
			assert_int_equal(got.stats.depth, want.stats.depth);
			assert_memory_equal(got.stats.items_per_level, want.stats.items_per_level, sizeof want.stats.items_per_level);
			built_free(&got);
		}
		TU(tree_destroy)(t);
		ort_tasks_destroy(tasks);
	}
	built_free(&want);
	free(sweep.v);
	free(q.box);
	free(s.box);
}

static void test_build_uniform(void **st)
{
	(void)st;
	tree_build_scene(0, ORT_PLACEMENT_LOOSE, -1, 0);
	tree_build_scene(0, ORT_PLACEMENT_TIGHT, -1, 0);
	tree_build_scene(0, ORT_PLACEMENT_LOOSE, -1, 700);
}

/// Clusters of equal and nested boxes, points on a line, and shallow trees:
/// piles past max_depth, cells no key level reaches.
static void test_build_piles(void **st)
{
	(void)st;
	tree_build_scene(1, ORT_PLACEMENT_LOOSE, -1, 0);
	tree_build_scene(1, ORT_PLACEMENT_TIGHT, 1, 0);
	tree_build_scene(2, ORT_PLACEMENT_LOOSE, -1, 0);
	tree_build_scene(2, ORT_PLACEMENT_TIGHT, 2, 0);
	tree_build_scene(1, ORT_PLACEMENT_LOOSE, 0, 0);
}

// ---- allocation failure ---------------------------------------------------------------------

/// Fail the context's Nth allocation, for every N until a call needs none:
/// each call either succeeds with the serial answer or reports
/// ORT_ERROR_OUT_OF_MEMORY, and the trees stay valid and whole.
static void test_alloc_failure(void **st)
{
	(void)st;
	scene s = scene_make(1, 11);
	s.n = 4000; // enough for several jobs, few enough for a quick sweep
	TU(packed_def) pdef = TU(packed_default_def)();
	packed_t *p;
	assert_int_equal(TU(packed_create)(&pdef, &p), ORT_OK);
	assert_int_equal(TU(packed_build)(p, s.box, s.n), ORT_OK);
	pair_list want = packed_pairs(p);
	def_t def = TU(tree_default_def)();
	tree_t *t;
	assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
	for (int i = 0; i < s.n; ++i) assert_int_equal(TU(tree_insert)(t, s.box[i], NULL, NULL), ORT_OK);
	pair_list want_tree = {0};
	assert_int_equal(TU(tree_find_pairs)(t, ORT_MASK_ALL, collect_handle_pair, &want_tree), ORT_OK);
	tree_t *tb;
	assert_int_equal(TU(tree_create)(&def, &tb), ORT_OK);
	assert_int_equal(TU(tree_build)(tb, s.box, NULL, s.n, NULL), ORT_OK);
	pair_list want_built = {0};
	assert_int_equal(TU(tree_find_pairs)(tb, ORT_MASK_ALL, collect_handle_pair, &want_built), ORT_OK);
	bool clean = false;
	long last = 0;
	for (long fail = 1; !clean && fail < 2000; ++fail) {
		last = fail;
		tu_alloc alloc = {0};
		ort_tasks_def tdef = ort_tasks_default_def();
		tdef.workers = 2;
		tdef.allocator = tu_allocator(&alloc);
		ort_tasks *tasks;
		tu_alloc_fail_in(&alloc, fail, false);
		ort_result cr = ort_tasks_create(&tdef, &tasks);
		if (cr != ORT_OK) {
			assert_int_equal(cr, ORT_ERROR_OUT_OF_MEMORY);
			continue;
		}
		TU(packed_set_tasks)(p, tasks);
		TU(tree_set_tasks)(t, tasks);
		TU(tree_set_tasks)(tb, tasks);
		ort_result rb = TU(packed_build)(p, s.box, s.n);
		assert_true(rb == ORT_OK || rb == ORT_ERROR_OUT_OF_MEMORY);
		char msg[128];
		assert_int_equal(TU(packed_validate)(p, msg, sizeof msg), ORT_OK);
		pair_list got = {0};
		ort_result r = TU(packed_find_pairs)(p, collect_id_pair, &got);
		assert_true(r == ORT_OK || r == ORT_ERROR_OUT_OF_MEMORY);
		if (r == ORT_OK) expect_same_sequence(&got, &want, "packed pairs under failing allocation");
		pair_list got_tree = {0};
		ort_result rt = TU(tree_find_pairs)(t, ORT_MASK_ALL, collect_handle_pair, &got_tree);
		assert_true(rt == ORT_OK || rt == ORT_ERROR_OUT_OF_MEMORY);
		if (rt == ORT_OK) expect_same_sequence(&got_tree, &want_tree, "tree pairs under failing allocation");
		tu_check_valid(t);
		// A build on the tasks: the serial tree, or (refused) an empty one.
		TU(tree_clear)(tb);
		ort_result rbt = TU(tree_build)(tb, s.box, NULL, s.n, NULL);
		assert_true(rbt == ORT_OK || rbt == ORT_ERROR_OUT_OF_MEMORY);
		tu_check_valid(tb);
		pair_list got_built = {0};
		ort_result rbp = TU(tree_find_pairs)(tb, ORT_MASK_ALL, collect_handle_pair, &got_built);
		assert_true(rbp == ORT_OK || rbp == ORT_ERROR_OUT_OF_MEMORY);
		if (rbt == ORT_OK && rbp == ORT_OK) expect_same_sequence(&got_built, &want_built, "pairs of a build under failing allocation");
		if (rbt != ORT_OK) assert_int_equal(got_built.n, 0);
		free(got_built.v);
		clean = rb == ORT_OK && r == ORT_OK && rt == ORT_OK && rbt == ORT_OK && rbp == ORT_OK;

		free(got.v);
		free(got_tree.v);
		TU(packed_set_tasks)(p, NULL);
		TU(tree_set_tasks)(t, NULL);
		TU(tree_set_tasks)(tb, NULL);
		ort_tasks_destroy(tasks);
	}
	if (!clean) fail_msg("still failing after %ld allocations", last);
	free(want.v);
	free(want_tree.v);
	free(want_built.v);
	free(s.box);
	TU(packed_destroy)(p);
	TU(tree_destroy)(t);
	TU(tree_destroy)(tb);
}

static void test_bad_definitions(void **st)
{
	(void)st;
	ort_tasks_def def = ort_tasks_default_def();
	ort_tasks *t = (ort_tasks *)&def;
	def.enqueue = toy_enqueue; // finish missing
	assert_int_equal(ort_tasks_create(&def, &t), ORT_ERROR_INVALID_ARGUMENT);
	assert_null(t);
	assert_int_equal(ort_tasks_create(NULL, &t), ORT_ERROR_INVALID_ARGUMENT);
	def = ort_tasks_default_def();
	assert_int_equal(ort_tasks_create(&def, &t), ORT_OK);
	assert_int_equal(ort_tasks_workers(t), 1);
	ort_tasks_destroy(t);
	assert_int_equal(ort_tasks_workers(NULL), 1);
	ort_tasks_destroy(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bad_definitions), cmocka_unit_test(test_packed_uniform),
	    cmocka_unit_test(test_packed_clusters), cmocka_unit_test(test_packed_line),
	    cmocka_unit_test(test_packed_stop),     cmocka_unit_test(test_packed_meeting_piles),
	    cmocka_unit_test(test_tree_loose),
	    cmocka_unit_test(test_tree_clusters),   cmocka_unit_test(test_tree_tight),
	    cmocka_unit_test(test_tree_leaves),     cmocka_unit_test(test_alloc_failure),
	    cmocka_unit_test(test_tree_flat),       cmocka_unit_test(test_packed_piles),
	    cmocka_unit_test(test_tree_piles),      cmocka_unit_test(test_update_pairs),
	    cmocka_unit_test(test_update_movers),
	    cmocka_unit_test(test_build_uniform),   cmocka_unit_test(test_build_piles),
	};
	return cmocka_run_group_tests_name(TU_GROUP("tasks"), tests, NULL, NULL);
}

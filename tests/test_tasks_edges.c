// test_tasks_edges.c: the calls split over workers (include/orthant/task.h)
// at their edges, against brute force and against the serial call.
//
// test_tasks.c proves the parallel answers equal the serial ones on plain
// scenes; this file takes the paths those scenes do not: update_pairs on
// workers with sphere items, filters and statics (few movers and most items
// moving), more than two thousand movers, callbacks that stop find_pairs and
// current_pairs part-way (the pairs reported must be the first k of the full
// sequence, also inside the sweeps of piles), a context whose allocator
// refuses every request from the Nth on (each call then either gives the
// serial answer or says ORT_ERROR_OUT_OF_MEMORY, and answers again once
// memory is back), a tree allocator that fails while the movers' pairs are
// replayed (the next update must still reach the brute-force set), a task
// system that runs each task inside enqueue, and the contexts' definitions.
#define _POSIX_C_SOURCE 200809L
#include <limits.h>

#include "testutil.h"

typedef TU(packed) packed_t;
typedef TU(ray_hit) ray_hit_t;

// ---- task systems ------------------------------------------------------------------

/// A task system of the caller's: `inline_run` runs the whole task inside
/// enqueue and returns NULL (finish is then not called); otherwise it
/// remembers the task and runs it in finish, last range first.
typedef struct toy_system {
	ort_task_fn *task;
	void *task_ctx;
	int count, min_range, workers;
	bool inline_run;
	int enqueued, finished;
} toy_system;

static void toy_run(toy_system *s)
{
	int ranges = (s->count + s->min_range - 1) / s->min_range;
	for (int k = ranges - 1; k >= 0; --k) {
		int begin = k * s->min_range, end = begin + s->min_range < s->count ? begin + s->min_range : s->count;
		s->task(begin, end, k % s->workers, s->task_ctx);
	}
}

static void *toy_enqueue(ort_task_fn *task, int count, int min_range, void *task_ctx, void *user)
{
	toy_system *s = user;
	assert_true(s->enqueued == s->finished); // one task at a time
	assert_true(count > 0);
	s->task = task, s->task_ctx = task_ctx, s->count = count, s->min_range = min_range < 1 ? 1 : min_range;
	s->enqueued++;
	if (!s->inline_run) return s;
	toy_run(s);
	s->finished++;
	return NULL;
}

static void toy_finish(void *handle, void *user)
{
	toy_system *s = user;
	assert_false(s->inline_run); // a task that ran inside enqueue is not finished
	assert_ptr_equal(handle, s);
	toy_run(s);
	s->finished++;
}

enum { CONTEXTS = 4 };

/// Context c: 0 none (serial), 1 the built-in pool with two workers, 2 the
/// toy system with three, 3 the toy system running inline with two; alloc
/// (may be NULL) is its allocator.
static ort_tasks *context_make(int c, toy_system *toy, tu_alloc *alloc, ort_result *result)
{
	if (c == 0) return NULL;
	ort_tasks_def def = ort_tasks_default_def();
	def.workers = c == 2 ? 3 : 2;
	if (c >= 2) {
		*toy = (toy_system){.workers = def.workers, .inline_run = c == 3};
		def.enqueue = toy_enqueue;
		def.finish = toy_finish;
		def.user_ctx = toy;
	}
	if (alloc) def.allocator = tu_allocator(alloc);
	ort_tasks *t = NULL;
	ort_result r = ort_tasks_create(&def, &t);
	if (result) {
		*result = r;
	} else {
		assert_int_equal(r, ORT_OK);
		assert_int_equal(ort_tasks_workers(t), def.workers);
	}
	return t;
}

// ---- bodies: boxes or spheres, with filters -------------------------------------------

typedef struct body {
	ort_handle h;
	box_t box; ///< as the tree gives it (a sphere's widened box)
	bool sphere;
	float c[DIM], r;
	ort_filter f;
} body;

typedef struct world {
	body *b;
	int n, cap;
} world;

static ort_filter rand_filter(tu_rng *r)
{
	ort_filter f = ORT_FILTER_DEFAULT;
	int kind = tu_int(r, 0, 5);
	if (kind == 1) f.is_static = true;
	if (kind == 2) f.category = 2;
	if (kind == 3) f.mask = ~(uint64_t)2;
	if (kind == 4) f.category = f.mask = 4;
	return f;
}

/// Give body x (new when it has no handle) a random box or sphere about `at`.
static void body_place(tree_t *t, body *x, tu_rng *r, const float at[DIM], float size, bool sphere)
{
	ort_result res;
	bool fresh = !x->h.id;
	if (sphere) {
		for (int d = 0; d < DIM; ++d) x->c[d] = at[d] + tu_float(r, 0, size);
		x->r = tu_float(r, 0, size * 0.5f);
		res = x->h.id ? TU(tree_move_sphere)(t, x->h, x->c, x->r) : TU(tree_insert_sphere)(t, x->c, x->r, NULL, &x->h);
	} else {
		box_t b;
		for (int d = 0; d < DIM; ++d) {
			b.min[d] = at[d] + tu_float(r, 0, size);
			b.max[d] = b.min[d] + tu_float(r, 0, size);
		}
		res = x->h.id ? TU(tree_move)(t, x->h, b) : TU(tree_insert)(t, b, NULL, &x->h);
	}
	assert_int_equal(res, ORT_OK);
	if (fresh) x->f = ORT_FILTER_DEFAULT;
	x->sphere = sphere;
	assert_int_equal(TU(tree_get_box)(t, x->h, &x->box), ORT_OK);
}

static void world_add(world *w, body x)
{
	if (w->n == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 256;
		w->b = realloc(w->b, sizeof *w->b * (size_t)w->cap);
		assert_non_null(w->b);
	}
	w->b[w->n++] = x;
}

static double dist2_pts(const float a[DIM], const float b[DIM])
{
	double s = 0;
	for (int d = 0; d < DIM; ++d) s += ((double)a[d] - b[d]) * ((double)a[d] - b[d]);
	return s;
}

/// The documented rule: boxes overlap, filters allow, and exact bounds meet.
static bool bodies_pair(const body *x, const body *y)
{
	if (x->f.is_static && y->f.is_static) return false;
	if (!(x->f.category & y->f.mask) || !(y->f.category & x->f.mask)) return false;
	if (!tu_overlap(&x->box, &y->box)) return false;
	if (x->sphere && y->sphere) return dist2_pts(x->c, y->c) <= ((double)x->r + y->r) * ((double)x->r + y->r);
	if (x->sphere) return tu_dist2(x->c, &y->box) <= (double)x->r * x->r;
	if (y->sphere) return tu_dist2(y->c, &x->box) <= (double)y->r * y->r;
	return true;
}

static uint64_t pair_key(ort_handle a, ort_handle b)
{
	uint64_t x = a.id, y = b.id;
	return x < y ? x << 32 | y : y << 32 | x;
}

static const body *g_sort;
static int cmp_by_min0(const void *a, const void *b)
{
	float x = g_sort[*(const int *)a].box.min[0], y = g_sort[*(const int *)b].box.min[0];
	return (x > y) - (x < y);
}

/// Every pair of the world by brute force (a sweep on axis 0), as keys.
static tu_list brute_pairs(const world *w)
{
	int *order = malloc(sizeof *order * (size_t)(w->n + 1));
	for (int i = 0; i < w->n; ++i) order[i] = i;
	g_sort = w->b;
	tu_sort(order, (size_t)w->n, sizeof *order, cmp_by_min0);
	tu_list l = {0};
	for (int i = 0; i < w->n; ++i) {
		const body *x = &w->b[order[i]];
		for (int j = i + 1; j < w->n && w->b[order[j]].box.min[0] <= x->box.max[0]; ++j)
			if (bodies_pair(x, &w->b[order[j]])) tu_push(&l, pair_key(x->h, w->b[order[j]].h));
	}
	free(order);
	return l;
}

// ---- events ---------------------------------------------------------------------------

/// The events of update_pairs as reported (begin: a.id << 32 | b.id; end:
/// the same with the top bit set), and the pair set they replay to.
typedef struct events {
	tu_list seq, set;     ///< every event; the set as of the last settle (sorted)
	tu_list began, ended; ///< pair keys since then
} events;

static void on_begin(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)ua, (void)ub;
	events *e = ctx;
	tu_push(&e->seq, (uint64_t)a.id << 32 | b.id);
	tu_push(&e->began, pair_key(a, b));
}

static void on_end(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)ua, (void)ub;
	events *e = ctx;
	tu_push(&e->seq, 1ull << 63 | (uint64_t)a.id << 32 | b.id);
	tu_push(&e->ended, pair_key(a, b));
}

static bool has_key(const tu_list *sorted, uint64_t k)
{
	return sorted->n && bsearch(&k, sorted->v, sorted->n, sizeof k, tu_cmp_u64) != NULL;
}

/// Replay one update's events onto the set: every ended pair was in it (ends
/// come first), no pair begins that is in it.
static void events_settle(events *e)
{
	tu_sort_u64(e->ended.v, e->ended.n);
	size_t keep = 0;
	for (size_t i = 0; i < e->set.n; ++i)
		if (!has_key(&e->ended, e->set.v[i])) e->set.v[keep++] = e->set.v[i];
	if (e->set.n - keep != e->ended.n) TU_FAIL("%zu pairs ended that had not begun (or twice)\n", e->ended.n - (e->set.n - keep));
	e->set.n = keep;
	for (size_t i = 0; i < e->began.n; ++i) {
		if (has_key(&e->set, e->began.v[i])) TU_FAIL("a pair began that had begun already\n");
		tu_push(&e->set, e->began.v[i]);
	}
	tu_sort_u64(e->set.v, e->set.n);
	for (size_t i = 1; i < e->set.n; ++i)
		if (e->set.v[i] == e->set.v[i - 1]) TU_FAIL("a pair began twice in one update\n");
	e->began.n = e->ended.n = 0;
}

/// The replayed set is the brute-force set.
static void expect_set(events *e, const world *w, const char *what)
{
	events_settle(e);
	tu_list got = {0}, want = brute_pairs(w);
	for (size_t i = 0; i < e->set.n; ++i) tu_push(&got, e->set.v[i]);
	tu_expect_same(&got, &want, what);
}

static void events_free(events *e)
{
	free(e->set.v);
	free(e->began.v);
	free(e->ended.v);
}

static void expect_same_list(const tu_list *got, const tu_list *want, size_t n, const char *what)
{
	if (got->n != n) TU_FAIL("%s: %zu results, %zu wanted\n", what, got->n, n);
	for (size_t i = 0; i < n; ++i)
		if (got->v[i] != want->v[i]) TU_FAIL("%s: result %zu differs from the serial sequence\n", what, i);
}

// ---- update_pairs on workers with spheres, filters and statics -------------------------

/// Frames of changes to a world of boxes and spheres with random filters:
/// even frames move a few items (the movers' queries, in jobs from 32), odd
/// ones most (the all-pairs pass), each frame also removes, inserts and
/// re-filters some. Returns the events of every frame, each checked against
/// brute force.
static tu_list sphere_frames(int c, ort_placement placement, int n, uint64_t seed)
{
	toy_system toy;
	def_t def = TU(tree_default_def)();
	def.placement = placement;
	def.tasks = context_make(c, &toy, NULL, NULL);
	tree_t *t;
	assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
	tu_rng r = tu_rng_make(seed);
	world w = {0};
	const float extent = 400.0f;
	for (int i = 0; i < n; ++i) {
		body x = {0};
		float at[DIM];
		for (int d = 0; d < DIM; ++d) at[d] = tu_float(&r, 0, extent);
		body_place(t, &x, &r, at, 8.0f, i % 3 == 0);
		x.f = i % 4 ? ORT_FILTER_DEFAULT : rand_filter(&r);
		assert_int_equal(TU(tree_set_filter)(t, x.h, x.f), ORT_OK);
		world_add(&w, x);
	}
	events e = {0};
	for (int frame = 0; frame < 8; ++frame) {
		TU_CONTEXT("spheres and filters, %s, context %d, frame %d", ort_placement_string(placement), c, frame);
		int movers = frame % 2 ? w.n / 2 : w.n / 20;
		for (int k = 0; k < movers; ++k) {
			body *x = &w.b[tu_int(&r, 0, w.n - 1)];
			float at[DIM];
			for (int d = 0; d < DIM; ++d) at[d] = x->box.min[d] + tu_float(&r, -6.0f, 6.0f);
			body_place(t, x, &r, at, 8.0f, tu_int(&r, 0, 2) == 0);
		}
		for (int k = 0; k < 5; ++k) { // remove one, insert one, re-filter one
			int i = tu_int(&r, 0, w.n - 1);
			assert_int_equal(TU(tree_remove)(t, w.b[i].h), ORT_OK);
			w.b[i] = w.b[--w.n];
			body x = {0};
			float at[DIM];
			for (int d = 0; d < DIM; ++d) at[d] = tu_float(&r, 0, extent);
			body_place(t, &x, &r, at, 8.0f, k % 2 == 0);
			x.f = ORT_FILTER_DEFAULT;
			world_add(&w, x);
			body *y = &w.b[tu_int(&r, 0, w.n - 1)];
			y->f = rand_filter(&r);
			assert_int_equal(TU(tree_set_filter)(t, y->h, y->f), ORT_OK);
		}
		assert_int_equal(TU(tree_update_pairs)(t, on_begin, on_end, &e), ORT_OK);
		tu_push(&e.seq, UINT64_MAX);
		tu_check_valid(t);
		expect_set(&e, &w, "update_pairs with spheres and filters");
	}
	if (c >= 2) assert_true(toy.enqueued > 0 && toy.finished == toy.enqueued);
	TU(tree_destroy)(t);
	ort_tasks_destroy(def.tasks);
	free(w.b);
	events_free(&e);
	return e.seq;
}

static void test_update_spheres_filters(void **st)
{
	(void)st;
	const ort_placement placements[] = {ORT_PLACEMENT_LOOSE, ORT_PLACEMENT_TIGHT, ORT_PLACEMENT_LEAVES};
	for (int p = 0; p < 3; ++p) {
		tu_list want = sphere_frames(0, placements[p], 900, 7u + (uint64_t)p);
		for (int c = 1; c < CONTEXTS; ++c) {
			tu_list got = sphere_frames(c, placements[p], 900, 7u + (uint64_t)p);
			expect_same_list(&got, &want, want.n, "events on workers");
			free(got.v);
		}
		free(want.v);
	}
}

/// More than 2048 movers but under a quarter of the items: the movers'
/// queries are cut into more than 256 jobs' worth of rows (and, loose, they
/// prune by content bounds made in jobs). Events as serial, set as brute force.
static void test_update_many_movers(void **st)
{
	(void)st;
	const int n = 9000, movers = 2100;
	tu_list seq[2] = {{0}, {0}};
	for (int c = 0; c < 2; ++c) {
		def_t def = TU(tree_default_def)();
		def.tasks = context_make(c, NULL, NULL, NULL);
		tree_t *t;
		assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
		tu_rng r = tu_rng_make(99);
		world w = {0};
		for (int i = 0; i < n; ++i) {
			body x = {0};
			float at[DIM];
			for (int d = 0; d < DIM; ++d) at[d] = tu_float(&r, 0, 1000);
			body_place(t, &x, &r, at, 5.0f, false);
			world_add(&w, x);
		}
		events e = {0};
		assert_int_equal(TU(tree_update_pairs)(t, on_begin, on_end, &e), ORT_OK);
		expect_set(&e, &w, "the first update");
		for (int frame = 0; frame < 2; ++frame) {
			TU_CONTEXT("many movers, context %d, frame %d", c, frame);
			for (int k = 0; k < movers; ++k) {
				body *x = &w.b[(k * 4 + frame) % n];
				float at[DIM];
				for (int d = 0; d < DIM; ++d) at[d] = x->box.min[d] + tu_float(&r, -3.0f, 3.0f);
				body_place(t, x, &r, at, 5.0f, false);
			}
			assert_int_equal(TU(tree_update_pairs)(t, on_begin, on_end, &e), ORT_OK);
			tu_push(&e.seq, UINT64_MAX);
			expect_set(&e, &w, "update_pairs with many movers");
		}
		tu_check_valid(t);
		seq[c] = e.seq;
		events_free(&e);
		free(w.b);
		TU(tree_destroy)(t);
		ort_tasks_destroy(def.tasks);
	}
	expect_same_list(&seq[1], &seq[0], seq[0].n, "events of many movers on workers");
	free(seq[0].v);
	free(seq[1].v);
}

// ---- callbacks that stop ---------------------------------------------------------------

/// Collects pairs as reported, and stops when `left` reaches 0.
typedef struct stopper {
	tu_list seq;
	long left;
} stopper;

static bool stop_pair(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)ua, (void)ub;
	stopper *s = ctx;
	tu_push(&s->seq, (uint64_t)a.id << 32 | b.id);
	return --s->left > 0;
}

static bool stop_id_pair(void *ctx, uint32_t a, uint32_t b)
{
	stopper *s = ctx;
	tu_push(&s->seq, (uint64_t)a << 32 | b);
	return --s->left > 0;
}

/// Stop after k = 1, 2 and every ninth of the total: exactly k calls, the
/// first k of the full sequence.
static void expect_prefixes(const tu_list *all, const char *what, void *tree, bool packed)
{
	for (int s = -1; s < 9; ++s) {
		long k = s < 0 ? 1 : s == 0 ? 2 : (long)all->n * s / 9;
		if (k < 1 || k > (long)all->n) continue;
		stopper st = {{0}, k};
		ort_result r = packed ? TU(packed_find_pairs)(tree, stop_id_pair, &st)
		                      : TU(tree_find_pairs)(tree, ORT_MASK_ALL, stop_pair, &st);
		assert_int_equal(r, ORT_OK);
		expect_same_list(&st.seq, all, (size_t)k, what);
		free(st.seq.v);
	}
}

/// Clusters of equal and nested boxes plus spheres and (big) a few large
/// boxes: at max_depth 1 the own lists are piles the pair finder sweeps;
/// without the large ones no leaves entry goes over the copy cap.
static void stop_scene(ort_placement placement, int max_depth, bool big)
{
	tu_rng r = tu_rng_make(5);
	const int n = 2500;
	box_t *boxes = malloc(sizeof *boxes * (size_t)n);
	for (int i = 0; i < n; ++i) {
		float at = (float)(i % 5) * 120.0f;
		for (int d = 0; d < DIM; ++d) {
			boxes[i].min[d] = at + tu_float(&r, 0, 30);
			boxes[i].max[d] = boxes[i].min[d] + (big && i % 89 == 0 ? tu_float(&r, 50, 400) : tu_float(&r, 0, 3));
		}
	}
	def_t def = TU(tree_default_def)();
	def.placement = placement;
	def.max_depth = max_depth;
	tree_t *t;
	assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
	world w = {0};
	for (int i = 0; i < n; ++i) {
		body x = {0};
		if (i % 7 == 0) {
			body_place(t, &x, &r, boxes[i].min, 3.0f, true);
		} else {
			assert_int_equal(TU(tree_insert)(t, boxes[i], NULL, &x.h), ORT_OK);
			x.box = boxes[i];
		}
		x.f = i % 11 == 0 ? rand_filter(&r) : ORT_FILTER_DEFAULT;
		assert_int_equal(TU(tree_set_filter)(t, x.h, x.f), ORT_OK);
		world_add(&w, x);
	}
	stopper all = {{0}, LONG_MAX};
	assert_int_equal(TU(tree_find_pairs)(t, ORT_MASK_ALL, stop_pair, &all), ORT_OK);
	tu_list keys = {0}, want = brute_pairs(&w);
	for (size_t i = 0; i < all.seq.n; ++i) tu_push(&keys, pair_key((ort_handle){(uint32_t)(all.seq.v[i] >> 32), 0}, (ort_handle){(uint32_t)all.seq.v[i], 0}));
	tu_expect_same(&keys, &want, "find_pairs of the stop scene");
	for (int c = 0; c < CONTEXTS; ++c) {
		TU_CONTEXT("stop, %s, max_depth %d, context %d", ort_placement_string(placement), max_depth, c);
		toy_system toy;
		ort_tasks *tasks = context_make(c, &toy, NULL, NULL);
		TU(tree_set_tasks)(t, tasks);
		expect_prefixes(&all.seq, "find_pairs stopped", t, false);
		TU(tree_set_tasks)(t, NULL);
		ort_tasks_destroy(tasks);
	}
	// current_pairs stops too, after the first update took the set.
	assert_int_equal(TU(tree_update_pairs)(t, NULL, NULL, NULL), ORT_OK);
	stopper cur = {{0}, LONG_MAX};
	assert_int_equal(TU(tree_current_pairs)(t, stop_pair, &cur), ORT_OK);
	assert_int_equal(cur.seq.n, all.seq.n);
	stopper part = {{0}, (long)cur.seq.n / 2 + 1};
	assert_int_equal(TU(tree_current_pairs)(t, stop_pair, &part), ORT_OK);
	expect_same_list(&part.seq, &cur.seq, cur.seq.n / 2 + 1, "current_pairs stopped");
	free(part.seq.v);
	free(cur.seq.v);
	// The packed tree of the same boxes, shallow (piles) and default.
	TU(packed_def) pdef = TU(packed_default_def)();
	if (max_depth > 0) pdef.max_depth = max_depth;
	tu_list pw = {0}; // the packed pairs by brute force, as sorted index pairs
	for (int i = 0; i < n; ++i)
		for (int j = i + 1; j < n; ++j)
			if (tu_overlap(&boxes[i], &boxes[j])) tu_push(&pw, (uint64_t)i << 32 | (uint64_t)j);
	for (int c = 0; c < CONTEXTS; ++c) {
		toy_system toy;
		pdef.tasks = context_make(c, &toy, NULL, NULL);
		packed_t *p;
		assert_int_equal(TU(packed_create)(&pdef, &p), ORT_OK);
		assert_int_equal(TU(packed_build)(p, boxes, n), ORT_OK);
		stopper pall = {{0}, LONG_MAX};
		assert_int_equal(TU(packed_find_pairs)(p, stop_id_pair, &pall), ORT_OK);
		tu_list pk = {0}, want_pk = {0};
		for (size_t i = 0; i < pall.seq.n; ++i) {
			uint64_t a = pall.seq.v[i] >> 32, b = (uint32_t)pall.seq.v[i];
			tu_push(&pk, a < b ? a << 32 | b : b << 32 | a);
		}
		for (size_t i = 0; i < pw.n; ++i) tu_push(&want_pk, pw.v[i]);
		tu_expect_same(&pk, &want_pk, "packed pairs of the stop scene");
		expect_prefixes(&pall.seq, "packed find_pairs stopped", p, true);
		free(pall.seq.v);
		TU(packed_destroy)(p);
		ort_tasks_destroy(pdef.tasks);
	}
	free(pw.v);
	free(all.seq.v);
	free(w.b);
	free(boxes);
	TU(tree_destroy)(t);
}

static void test_stop_loose(void **st)
{
	(void)st;
	stop_scene(ORT_PLACEMENT_LOOSE, 1, true);
	stop_scene(ORT_PLACEMENT_LOOSE, 8, true);
}

static void test_stop_tight(void **st) { (void)st, stop_scene(ORT_PLACEMENT_TIGHT, 1, true); }

static void test_stop_leaves(void **st)
{
	(void)st;
	stop_scene(ORT_PLACEMENT_LEAVES, 1, true);
	stop_scene(ORT_PLACEMENT_LEAVES, 8, true);
	stop_scene(ORT_PLACEMENT_LEAVES, 8, false); // no box over the copy cap: the leaves' own job plan
}

// ---- failing allocators ------------------------------------------------------------------

/// The scene the failure sweeps run on: clusters of small, equal and nested
/// boxes and a few large ones (every subtree's crosses are busy).
static box_t *g_boxes;
static int g_n;

static void sweep_scene(void)
{
	g_n = 1500;
	g_boxes = malloc(sizeof *g_boxes * (size_t)g_n);
	tu_rng r = tu_rng_make(17);
	for (int i = 0; i < g_n; ++i)
		for (int d = 0; d < DIM; ++d) {
			float lo = (float)(i % 6) * 150.0f + tu_float(&r, 0, 60);
			float size = i % 97 == 0 ? tu_float(&r, 100, 500) : i % 3 == 0 ? 0.0f : tu_float(&r, 0, 5);
			g_boxes[i].min[d] = lo;
			g_boxes[i].max[d] = lo + size;
		}
}

static bool push_pair(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)ua, (void)ub;
	tu_push(ctx, (uint64_t)a.id << 32 | b.id);
	return true;
}

static bool push_id_pair(void *ctx, uint32_t a, uint32_t b)
{
	tu_push(ctx, (uint64_t)a << 32 | b);
	return true;
}

enum { OP_PACKED, OP_PACKED_PILES, OP_PAIRS_LOOSE, OP_PAIRS_LEAVES, OP_BUILD_TIGHT, OP_BATCHES, OP_UPDATE, OPS };

/// One parallel call (or several, for the batches) on the sweep scene with
/// these tasks (NULL: serially), its answer appended to out: pairs in order,
/// a build's pairs, a batch's offsets and results, update_pairs' events.
static ort_result run_op(int op, ort_tasks *tasks, tu_list *out)
{
	if (op == OP_PACKED || op == OP_PACKED_PILES) {
		TU(packed_def) def = TU(packed_default_def)();
		if (op == OP_PACKED_PILES) def.max_depth = 2;
		def.tasks = tasks;
		packed_t *p;
		assert_int_equal(TU(packed_create)(&def, &p), ORT_OK);
		ort_result r = TU(packed_build)(p, g_boxes, g_n);
		char msg[128];
		assert_int_equal(TU(packed_validate)(p, msg, sizeof msg), ORT_OK);
		if (r == ORT_OK) r = TU(packed_find_pairs)(p, push_id_pair, out);
		TU(packed_destroy)(p);
		return r;
	}
	def_t def = TU(tree_default_def)();
	def.placement = op == OP_PAIRS_LEAVES ? ORT_PLACEMENT_LEAVES : op == OP_BUILD_TIGHT ? ORT_PLACEMENT_TIGHT
	                                                                                    : ORT_PLACEMENT_LOOSE;
	tree_t *t;
	assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
	ort_handle *h = malloc(sizeof *h * (size_t)g_n);
	if (op != OP_BUILD_TIGHT)
		for (int i = 0; i < g_n; ++i) assert_int_equal(TU(tree_insert)(t, g_boxes[i], NULL, &h[i]), ORT_OK);
	if (op == OP_UPDATE) assert_int_equal(TU(tree_update_pairs)(t, NULL, NULL, NULL), ORT_OK);
	TU(tree_set_tasks)(t, tasks);
	ort_result r = ORT_OK;
	if (op == OP_PAIRS_LOOSE || op == OP_PAIRS_LEAVES) r = TU(tree_find_pairs)(t, ORT_MASK_ALL, push_pair, out);
	if (op == OP_BUILD_TIGHT) {
		r = TU(tree_build)(t, g_boxes, NULL, g_n, NULL);
		if (r != ORT_OK) assert_int_equal(TU(tree_count)(t), 0);
		TU(tree_set_tasks)(t, NULL);
		assert_int_equal(TU(tree_find_pairs)(t, ORT_MASK_ALL, push_pair, out), ORT_OK);
	}
	if (op == OP_BATCHES) {
		int nq = 5000, cap = 1 << 16, total = -1;
		float(*pts)[DIM] = malloc(sizeof *pts * (size_t)nq), (*dirs)[DIM] = malloc(sizeof *dirs * (size_t)nq);
		float *tmax = malloc(sizeof *tmax * (size_t)nq);
		box_t *q = malloc(sizeof *q * (size_t)nq);
		int *offsets = calloc((size_t)nq + 1, sizeof *offsets);
		ort_handle *hits = malloc(sizeof *hits * (size_t)cap);
		ray_hit_t *rays = malloc(sizeof *rays * (size_t)cap);
		tu_rng rq = tu_rng_make(8);
		for (int i = 0; i < nq; ++i) {
			for (int d = 0; d < DIM; ++d) {
				q[i].min[d] = q[i].max[d] = pts[i][d] = tu_float(&rq, 0, 900);
				dirs[i][d] = (float)((i + d) % 3) - 1.0f;
				q[i].max[d] += 2.0f;
			}
			dirs[i][0] = 1.0f;
			tmax[i] = 30.0f;
		}
		for (int k = 0; k < 3 && r == ORT_OK; ++k) {
			if (k == 0) r = TU(tree_query_boxes)(t, q, nq, ORT_MASK_ALL, hits, cap, offsets, &total);
			if (k == 1)
				r = TU(tree_query_points)(t, (const float(*)[DIM])pts, nq, ORT_MASK_ALL, hits, cap, offsets, &total);
			if (k == 2)
				r = TU(tree_query_rays)(t, (const float(*)[DIM])pts, (const float(*)[DIM])dirs, tmax, nq, ORT_MASK_ALL,
				                        rays, cap, offsets, &total);
			if (r != ORT_OK) break;
			tu_push(out, (uint64_t)total);
			for (int i = 0; i <= nq; ++i) tu_push(out, (uint64_t)offsets[i]);
			for (int i = 0; i < total && i < cap; ++i) tu_push(out, k == 2 ? rays[i].handle.id : hits[i].id);
		}
		if (r == ORT_OK) { // and a batch of rays too small to split
			r = TU(tree_query_rays)(t, (const float(*)[DIM])pts, (const float(*)[DIM])dirs, tmax, 10, ORT_MASK_ALL,
			                        rays, cap, offsets, &total);
			for (int i = 0; r == ORT_OK && i < total; ++i) tu_push(out, rays[i].handle.id);
		}
		free(pts), free(dirs), free(tmax), free(q), free(offsets), free(hits), free(rays);
	}
	if (op == OP_UPDATE) {
		// A few hundred movers (jobs, pruned by content bounds), half onto one spot.
		for (int i = 0; i < g_n; i += 12) {
			box_t b = g_boxes[i];
			for (int d = 0; d < DIM; ++d) {
				float to = i % 24 ? b.min[d] + 3.0f : 200.0f;
				b.max[d] += to - b.min[d], b.min[d] = to;
			}
			assert_int_equal(TU(tree_move)(t, h[i], b), ORT_OK);
		}
		events e = {0};
		r = TU(tree_update_pairs)(t, on_begin, on_end, &e);
		assert_int_equal(r, ORT_OK); // a refused job buffer leaves it to the serial step
		for (size_t i = 0; i < e.seq.n; ++i) tu_push(out, e.seq.v[i]);
		free(e.seq.v);
		events_free(&e);
	}
	tu_check_valid(t);
	free(h);
	TU(tree_destroy)(t);
	return r;
}

/// Each call on a context of the caller's whose allocator refuses every
/// request from the Nth on, for N up to one that needs none: the serial
/// answer or ORT_ERROR_OUT_OF_MEMORY, then (memory back) the serial answer,
/// and the context's bytes are what its allocator holds.
static void test_context_alloc_sweep(void **st)
{
	(void)st;
	sweep_scene();
	for (int op = 0; op < OPS; ++op) {
		tu_list want = {0};
		TU_CONTEXT("op %d serially", op);
		assert_int_equal(run_op(op, NULL, &want), ORT_OK);
		bool clean = false;
		for (long fail = 1; !clean && fail < 5000; fail += fail < 12 ? 1 : fail / 2) { // every N, then half again each step
			TU_CONTEXT("op %d, allocations refused from %ld on", op, fail);
			tu_alloc alloc = {0};
			tu_alloc_fail_in(&alloc, fail, true);
			toy_system toy;
			ort_result cr;
			ort_tasks *tasks = context_make(2, &toy, &alloc, &cr);
			if (cr != ORT_OK) {
				assert_int_equal(cr, ORT_ERROR_OUT_OF_MEMORY);
				assert_null(tasks);
				continue;
			}
			tu_list got = {0};
			ort_result r = run_op(op, tasks, &got);
			if (r == ORT_OK) {
				expect_same_list(&got, &want, want.n, "a call on a context short of memory");
				clean = true;
			} else {
				assert_int_equal(r, ORT_ERROR_OUT_OF_MEMORY);
			}
			assert_int_equal(ort_tasks_bytes(tasks), alloc.live);
			free(got.v);
			tu_alloc_disarm(&alloc);
			tu_list again = {0};
			assert_int_equal(run_op(op, tasks, &again), ORT_OK);
			expect_same_list(&again, &want, want.n, "the call again once memory is back");
			assert_int_equal(ort_tasks_bytes(tasks), alloc.live);
			free(again.v);
			ort_tasks_destroy(tasks);
			assert_int_equal(alloc.live, 0);
		}
		if (!clean) fail_msg("op %d still failing after 5000 allocations", op);
		free(want.v);
	}
	free(g_boxes);
}

/// The tree's allocator refuses every request from the Nth on during an
/// update whose movers crowd onto one spot (the pair set must grow while
/// their pairs are replayed), serially and on two workers: the update
/// succeeds or says out of memory, the tree stays valid, and the next update
/// (memory back) reaches the brute-force set.
static void test_tree_alloc_update(void **st)
{
	(void)st;
	for (int c = 0; c < 2; ++c) {
		bool clean = false;
		for (long fail = 1; !clean && fail < 60; ++fail) {
			TU_CONTEXT("update, context %d, tree allocations refused from %ld on", c, fail);
			tu_alloc alloc = {0};
			def_t def = TU(tree_default_def)();
			def.allocator = tu_allocator(&alloc);
			def.tasks = context_make(c, NULL, NULL, NULL);
			tree_t *t;
			assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
			tu_rng r = tu_rng_make(3);
			world w = {0};
			for (int i = 0; i < 600; ++i) {
				body x = {0};
				float at[DIM];
				for (int d = 0; d < DIM; ++d) at[d] = tu_float(&r, 0, 300);
				body_place(t, &x, &r, at, 4.0f, i % 5 == 0);
				world_add(&w, x);
			}
			events e = {0};
			assert_int_equal(TU(tree_update_pairs)(t, on_begin, on_end, &e), ORT_OK);
			expect_set(&e, &w, "the first update");
			for (int i = 0; i < w.n; i += 6) {
				float at[DIM];
				for (int d = 0; d < DIM; ++d) at[d] = 100.0f + (float)(i % 4);
				body_place(t, &w.b[i], &r, at, 4.0f, i % 4 == 0);
			}
			tu_alloc_fail_in(&alloc, fail, true);
			ort_result res = TU(tree_update_pairs)(t, on_begin, on_end, &e);
			tu_alloc_disarm(&alloc);
			if (res == ORT_OK) clean = true;
			else assert_int_equal(res, ORT_ERROR_OUT_OF_MEMORY);
			tu_check_valid(t);
			assert_int_equal(TU(tree_update_pairs)(t, on_begin, on_end, &e), ORT_OK);
			tu_check_valid(t);
			expect_set(&e, &w, "the update after memory came back");
			events_free(&e);
			free(e.seq.v);
			free(w.b);
			TU(tree_destroy)(t);
			ort_tasks_destroy(def.tasks);
		}
		assert_true(clean);
	}
}

// ---- builds at the edges -------------------------------------------------------------------

/// Builds on every context: of nothing; of identical points (a cell of no
/// size) into a tree that keeps filters (the built items get the default);
/// into a tree emptied by removals; of points far out, closer than an ulp
/// of the root apart; and into a non-empty tree without handles out. Each
/// against brute force.
static void test_build_edges(void **st)
{
	(void)st;
	for (int c = 0; c < CONTEXTS; ++c) {
		TU_CONTEXT("builds at the edges, context %d", c);
		toy_system toy;
		def_t def = TU(tree_default_def)();
		def.tasks = context_make(c, &toy, NULL, NULL);
		tree_t *t;
		assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
		box_t none;
		assert_int_equal(TU(tree_build)(t, &none, NULL, 0, NULL), ORT_OK);
		assert_int_equal(TU(tree_count)(t), 0);
		ort_handle h;
		ort_filter f = ORT_FILTER_DEFAULT;
		f.is_static = true;
		assert_int_equal(TU(tree_insert)(t, tu_cube(0.0f, 1.0f), NULL, &h), ORT_OK);
		assert_int_equal(TU(tree_set_filter)(t, h, f), ORT_OK);
		TU(tree_clear)(t);
		enum { N = 300 };
		box_t *b = malloc(sizeof *b * N);
		ort_handle *hs = malloc(sizeof *hs * N);
		for (int i = 0; i < N; ++i) b[i] = tu_cube(7.0f, 7.0f);
		assert_int_equal(TU(tree_build)(t, b, NULL, N, hs), ORT_OK);
		tu_check_valid(t);
		for (int i = 0; i < N; i += 37) {
			assert_int_equal(TU(tree_get_filter)(t, hs[i], &f), ORT_OK);
			assert_false(f.is_static);
		}
		assert_int_equal(tu_count_pairs(t), (size_t)N * (N - 1) / 2);
		for (int i = 0; i < N; ++i) assert_int_equal(TU(tree_remove)(t, hs[i]), ORT_OK);
		tu_rng r = tu_rng_make(4);
		for (int i = 0; i < N; ++i) {
			b[i] = tu_cube(1.0e6f, 1.0e6f);
			b[i].max[0] = b[i].min[0] = 1.0e6f + (float)(i % 3) * 0.0625f; // a few ulps apart
			if (i % 2) b[i] = tu_cube(tu_float(&r, 0, 50), 60.0f);
		}
		assert_int_equal(TU(tree_build)(t, b, NULL, N, hs), ORT_OK);
		tu_check_valid(t);
		model m;
		tu_model_init(&m, N + 10);
		for (int i = 0; i < N; ++i) tu_model_add(&m, hs[i], b[i]);
		tu_check_pairs(t, &m);
		assert_int_equal(TU(tree_build)(t, b, NULL, 10, NULL), ORT_OK); // into a non-empty tree
		assert_int_equal(TU(tree_count)(t), N + 10);
		tu_check_valid(t);
		tu_model_free(&m);
		free(b), free(hs);
		TU(tree_destroy)(t);
		ort_tasks_destroy(def.tasks);
	}
}

// ---- definitions --------------------------------------------------------------------------

static void test_definitions(void **st)
{
	(void)st;
	ort_tasks_def def = ort_tasks_default_def();
	ort_tasks *t = (ort_tasks *)&def;
	assert_int_equal(ort_tasks_create(&def, NULL), ORT_ERROR_INVALID_ARGUMENT);
	def.workers = 1025;
	assert_int_equal(ort_tasks_create(&def, &t), ORT_ERROR_INVALID_ARGUMENT);
	assert_null(t);
	tu_alloc alloc = {0};
	def = ort_tasks_default_def();
	def.allocator = tu_allocator(&alloc);
	def.allocator.free = NULL; // half an allocator
	assert_int_equal(ort_tasks_create(&def, &t), ORT_ERROR_INVALID_ARGUMENT);
	def.allocator = tu_allocator(&alloc);
	for (int workers = -3; workers <= 1; ++workers) { // serial contexts: one worker
		def.workers = workers;
		assert_int_equal(ort_tasks_create(&def, &t), ORT_OK);
		assert_int_equal(ort_tasks_workers(t), 1);
		assert_int_equal(ort_tasks_bytes(t), alloc.live);
		ort_tasks_destroy(t);
		assert_int_equal(alloc.live, 0);
	}
	assert_int_equal(ort_tasks_bytes(NULL), 0);
	// A serial context on a tree runs everything on the calling thread.
	def.workers = 0;
	assert_int_equal(ort_tasks_create(&def, &t), ORT_OK);
	sweep_scene();
	tu_list want = {0}, got = {0};
	assert_int_equal(run_op(OP_PAIRS_LOOSE, NULL, &want), ORT_OK);
	assert_int_equal(run_op(OP_PAIRS_LOOSE, t, &got), ORT_OK);
	expect_same_list(&got, &want, want.n, "pairs on a serial context");
	assert_int_equal(ort_tasks_bytes(t), alloc.live);
	free(got.v), free(want.v), free(g_boxes);
	ort_tasks_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_update_spheres_filters),
	    cmocka_unit_test(test_update_many_movers),
	    cmocka_unit_test(test_stop_loose),
	    cmocka_unit_test(test_stop_tight),
	    cmocka_unit_test(test_stop_leaves),
	    cmocka_unit_test(test_context_alloc_sweep),
	    cmocka_unit_test(test_tree_alloc_update),
	    cmocka_unit_test(test_definitions),
	    cmocka_unit_test(test_build_edges),
	};
	return cmocka_run_group_tests_name(TU_GROUP("tasks at the edges"), tests, NULL, NULL);
}

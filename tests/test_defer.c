// test_defer.c: changing the tree from inside its own callbacks. Inside every
// kind of callback, insert, remove, move and re-filter at random; the changes
// must be queued (readable at once through get_box, double removes refused),
// applied when the outermost query returns, and leave a tree that validates and
// answers exactly like brute force. Also: destroy inside a callback, and the
// calls refused there (clear, build, find_pairs, update_pairs); changes
// refused for memory inside a callback (refused whole, nothing else lost), a
// tick queued alone, and inserts into a tree emptied before the events came.
#include "testutil.h"

typedef struct mut {
	tree_t *t;
	model *m;
	tu_rng r;
	int budget; ///< changes left to make in this query
	int calls;
	int asserts;
} mut;

static box_t rand_box(tu_rng *r)
{
	box_t b;
	for (int d = 0; d < DIM; ++d) {
		b.min[d] = tu_float(r, 0, 200);
		b.max[d] = b.min[d] + tu_float(r, 0, 20);
	}
	return b;
}

/// One random change, made from inside a callback, mirrored in the model.
static void mutate(mut *u)
{
	u->calls++;
	if (u->budget <= 0) return;
	u->budget--;
	model *m = u->m;
	int kind = tu_int(&u->r, 0, 3);
	if (kind == 0 || m->n == 0) {
		ort_handle h;
		box_t b = rand_box(&u->r);
		assert_int_equal(TU(tree_insert)(u->t, b, NULL, &h), ORT_OK);
		box_t back;
		assert_int_equal(TU(tree_get_box)(u->t, h, &back), ORT_OK); // readable at once
		assert_memory_equal(&back, &b, sizeof b);
		assert_true(TU(tree_is_valid)(u->t, h));
		tu_model_add(m, h, b);
	} else if (kind == 1) {
		int i = tu_int(&u->r, 0, m->n - 1);
		ort_handle h = m->handle[i];
		assert_int_equal(TU(tree_remove)(u->t, h), ORT_OK);
		assert_int_equal(TU(tree_remove)(u->t, h), ORT_ERROR_STALE_HANDLE); // removed once only
		assert_int_equal(TU(tree_move)(u->t, h, m->box[i]), ORT_ERROR_STALE_HANDLE);
		tu_model_remove_at(m, i);
	} else if (kind == 2) {
		int i = tu_int(&u->r, 0, m->n - 1);
		box_t b = rand_box(&u->r);
		assert_int_equal(TU(tree_move)(u->t, m->handle[i], b), ORT_OK);
		m->box[i] = b;
	} else {
		int i = tu_int(&u->r, 0, m->n - 1);
		box_t b = m->box[i];
		for (int d = 0; d < DIM; ++d) b.max[d] += 1.0f;
		assert_int_equal(TU(tree_move)(u->t, m->handle[i], b), ORT_OK);
		m->box[i] = b;
	}
	// What cannot be deferred is refused, and the tree is untouched by it.
	box_t one = rand_box(&u->r);
	assert_int_equal(TU(tree_build)(u->t, &one, NULL, 1, NULL), ORT_ERROR_BUSY);
	TU(tree_clear)(u->t); // ignored, reported through the hook
}

static bool on_hit(void *ctx, ort_handle h, void *user)
{
	(void)h, (void)user;
	mutate(ctx);
	return true;
}

static bool on_pair(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)a, (void)b, (void)ua, (void)ub;
	mutate(ctx);
	mut *u = ctx;
	assert_int_equal(TU(tree_find_pairs)(u->t, ORT_MASK_ALL, on_pair, ctx), ORT_ERROR_BUSY);
	return true;
}

static void on_event(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)a, (void)b, (void)ua, (void)ub;
	mutate(ctx);
	mut *u = ctx;
	assert_int_equal(TU(tree_update_pairs)(u->t, NULL, NULL, NULL), ORT_ERROR_BUSY);
	// The pair array may be read from a callback; changes made there wait.
	size_t n = 0;
	const TU(pair) *p = TU(tree_pair_array)(u->t, &n);
	assert_int_equal((int)n, TU(tree_pair_count)(u->t));
	assert_true(n == 0 || (p && p[n - 1].a.id != 0));
}

static float on_ray(void *ctx, ort_handle h, void *user, float t)
{
	(void)h, (void)user, (void)t;
	mutate(ctx);
	return INFINITY;
}

static void on_node(void *ctx, const box_t *cell, const box_t *bounds, int depth, int entries)
{
	(void)cell, (void)bounds, (void)depth, (void)entries;
	mutate(ctx);
}

static void count_assert(void *ctx, const char *msg)
{
	(void)msg;
	++*(int *)ctx;
}

/// The queue was applied: the tree validates, holds the model's items and
/// pairs, and the broad phase, caught up with the changes, holds exactly the
/// brute-force pairs in its dense array.
static void expect_model(tree_t *t, const model *m)
{
	tu_check_valid(t);
	assert_int_equal(TU(tree_count)(t), m->n);
	tu_check_pairs(t, m);
	assert_int_equal(TU(tree_update_pairs)(t, NULL, NULL, NULL), ORT_OK);
	tu_list dense = {0}, want = {0};
	tu_pair_array_keys(t, &dense);
	for (int i = 0; i < m->n; ++i)
		for (int j = i + 1; j < m->n; ++j)
			if (tu_overlap(&m->box[i], &m->box[j])) tu_collect_pair(&want, m->handle[i], m->handle[j], NULL, NULL);
	tu_expect_same(&dense, &want, "pair_array after changes made in callbacks");
}

enum { CB_BOX, CB_POINT, CB_SPHERE, CB_RAY, CB_PAIRS, CB_UPDATE, CB_CURRENT, CB_VISIT, CB_NESTED, CB_COUNT };

static bool nested_outer(void *ctx, ort_handle h, void *user)
{
	(void)h, (void)user;
	mut *u = ctx;
	// A query inside a query: changes wait for the outermost one.
	box_t all = {{0}, {0}};
	for (int d = 0; d < DIM; ++d) all.max[d] = 300;
	assert_int_equal(TU(tree_query_box)(u->t, all, ORT_MASK_ALL, on_hit, ctx), ORT_OK);
	return false;
}

static void run_kind(ort_placement placement, int kind, uint64_t seed)
{
	def_t def = TU(tree_default_def)();
	def.placement = placement;
	def.bucket_size = 4;
	int asserts = 0;
	def.assert_fn = count_assert;
	def.assert_ctx = &asserts;
	tree_t *t;
	assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
	model m;
	tu_model_init(&m, 64);
	mut u = {t, &m, tu_rng_make(seed), 0, 0, 0};
	for (int i = 0; i < 150; ++i) {
		ort_handle h;
		box_t b = rand_box(&u.r);
		assert_int_equal(TU(tree_insert)(t, b, NULL, &h), ORT_OK);
		tu_model_add(&m, h, b);
	}
	assert_int_equal(TU(tree_update_pairs)(t, NULL, NULL, NULL), ORT_OK);
	for (int round = 0; round < 12; ++round) {
		TU_CONTEXT("defer, %s, callback kind %d, round %d", ort_placement_string(placement), kind, round);
		u.budget = 25;
		box_t q = rand_box(&u.r);
		for (int d = 0; d < DIM; ++d) q.max[d] += 60;
		float p[DIM], dir[DIM];
		// The point sits on an item, so point queries always have a hit.
		const box_t *on = &m.box[tu_int(&u.r, 0, m.n - 1)];
		for (int d = 0; d < DIM; ++d) {
			p[d] = on->min[d];
			dir[d] = tu_float(&u.r, -1, 1);
		}
		switch (kind) {
		case CB_BOX: assert_int_equal(TU(tree_query_box)(t, q, ORT_MASK_ALL, on_hit, &u), ORT_OK); break;
		case CB_POINT: tu_check_point_query(t, &m, p); assert_int_equal(TU(tree_query_point)(t, p, ORT_MASK_ALL, on_hit, &u), ORT_OK); break;
		case CB_SPHERE: assert_int_equal(TU(tree_query_sphere)(t, p, 40, ORT_MASK_ALL, on_hit, &u), ORT_OK); break;
		case CB_RAY: assert_int_equal(TU(tree_ray_cast)(t, p, dir, INFINITY, ORT_MASK_ALL, on_ray, &u), ORT_OK); break;
		case CB_PAIRS: assert_int_equal(TU(tree_find_pairs)(t, ORT_MASK_ALL, on_pair, &u), ORT_OK); break;
		case CB_UPDATE:
			// Moves made outside any callback make the events to change things
			// from: a few (one query per mover), or most items (the all-pairs
			// update through a snapshot) on odd rounds.
			for (int k = 0; k < (round % 2 ? m.n : 10) && m.n > 0; ++k) {
				int i = tu_int(&u.r, 0, m.n - 1);
				m.box[i] = rand_box(&u.r);
				assert_int_equal(TU(tree_move)(t, m.handle[i], m.box[i]), ORT_OK);
			}
			assert_int_equal(TU(tree_update_pairs)(t, on_event, on_event, &u), ORT_OK);
			break;
		case CB_CURRENT: assert_int_equal(TU(tree_current_pairs)(t, on_pair, &u), ORT_OK); break;
		case CB_VISIT: TU(tree_visit_nodes)(t, on_node, &u); break;
		case CB_NESTED: assert_int_equal(TU(tree_query_box)(t, q, ORT_MASK_ALL, nested_outer, &u), ORT_OK); break;
		}
		// Applied now: the tree equals the model.
		tu_rng r2 = tu_rng_make(seed + (uint64_t)round);
		expect_model(t, &m);
		for (int k = 0; k < 5; ++k) {
			box_t qb = rand_box(&r2);
			tu_check_box_query(t, &m, qb);
			tu_check_ray(t, &m, qb.min, dir, INFINITY);
		}
	}
	if (u.calls == 0) TU_FAIL("no callback ran\n");
	assert_true(asserts > 0); // every clear inside a callback was reported
	tu_model_free(&m);
	TU(tree_destroy)(t);
}

static void test_every_callback(void **state)
{
	(void)state;
	for (int p = 0; p < ORT_PLACEMENT_COUNT; ++p)
		for (int k = 0; k < CB_COUNT; ++k) run_kind((ort_placement)p, k, 100u * (unsigned)p + (unsigned)k);
}

static bool destroy_in_callback(void *ctx, ort_handle h, void *user)
{
	(void)h, (void)user;
	tree_t *t = ctx;
	TU(tree_destroy)(t); // deferred: the query still runs on a live tree
	box_t b;
	assert_int_equal(TU(tree_get_box)(t, h, &b), ORT_OK);
	return true;
}

/// Destroying the tree from its own callback frees it when the query returns
/// (ASan and valgrind prove nothing touches it after, and nothing leaks).
static void test_destroy_inside(void **state)
{
	(void)state;
	def_t def = TU(tree_default_def)();
	tree_t *t;
	assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
	box_t b = {{0}, {0}};
	for (int d = 0; d < DIM; ++d) b.max[d] = 1;
	for (int i = 0; i < 40; ++i) assert_int_equal(TU(tree_insert)(t, b, NULL, NULL), ORT_OK);
	assert_int_equal(TU(tree_query_box)(t, b, ORT_MASK_ALL, destroy_in_callback, t), ORT_OK);
}

/// Spheres, filters, ticks and out-of-memory from inside a callback.
typedef struct odd_ctx {
	tree_t *t;
	int done;
} odd_ctx;

/// The allocator of test_odd_changes' tree.
static tu_alloc odd_alloc;

static bool odd_hit(void *ctx, ort_handle h, void *user)
{
	(void)user;
	odd_ctx *o = ctx;
	if (o->done++) return false;
	tree_t *t = o->t;
	float c[DIM] = {0};
	ort_handle s;
	assert_int_equal(TU(tree_insert_sphere)(t, c, 2.0f, NULL, &s), ORT_OK);
	float back[DIM], r;
	assert_int_equal(TU(tree_get_sphere)(t, s, back, &r), ORT_OK); // pending, read from the queue
	assert_true(r == 2.0f);
	box_t b;
	assert_int_equal(TU(tree_get_box)(t, s, &b), ORT_OK);
	assert_int_equal(TU(tree_get_node)(t, s, NULL, NULL, NULL), ORT_ERROR_BUSY); // not stored yet
	c[0] = 50;
	assert_int_equal(TU(tree_move_sphere)(t, s, c, 1.0f), ORT_OK);
	assert_int_equal(TU(tree_get_sphere)(t, s, back, &r), ORT_OK);
	assert_true(r == 1.0f && back[0] == 50);
	assert_int_equal(TU(tree_move)(t, s, b), ORT_OK); // a pending sphere becomes a box
	assert_int_equal(TU(tree_get_sphere)(t, s, back, &r), ORT_ERROR_INVALID_ARGUMENT);
	ort_filter f = ORT_FILTER_DEFAULT;
	f.is_static = true;
	assert_int_equal(TU(tree_set_filter)(t, h, f), ORT_OK);
	TU(tree_tick)(t);
	// Memory runs out: the change is refused now, and nothing is queued.
	tu_alloc_fail_in(&odd_alloc, 1, true);
	box_t far;
	for (int d = 0; d < DIM; ++d) {
		far.min[d] = 1e6f;
		far.max[d] = 1e6f + 1;
	}
	ort_handle lost;
	ort_result rr = TU(tree_insert)(t, far, NULL, &lost);
	assert_true(rr == ORT_OK || rr == ORT_ERROR_OUT_OF_MEMORY);
	tu_alloc_disarm(&odd_alloc);
	return true;
}

static void test_odd_changes(void **state)
{
	(void)state;
	odd_ctx o = {NULL, 0};
	def_t def = TU(tree_default_def)();
	def.prune_delay = 2;
	def.allocator = tu_allocator(&odd_alloc);
	tree_t *t;
	assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
	o.t = t;
	box_t b = {{0}, {0}};
	for (int d = 0; d < DIM; ++d) b.max[d] = 4;
	ort_handle h;
	assert_int_equal(TU(tree_insert)(t, b, NULL, &h), ORT_OK);
	assert_int_equal(TU(tree_query_box)(t, b, ORT_MASK_ALL, odd_hit, &o), ORT_OK);
	tu_check_valid(t);
	ort_filter f;
	assert_int_equal(TU(tree_get_filter)(t, h, &f), ORT_OK);
	assert_true(f.is_static);
	assert_true(TU(tree_count)(t) >= 2);
	TU(tree_destroy)(t);
	assert_int_equal(odd_alloc.live, 0);
}

/// A fixed run of changes made from one callback while the tree's allocator
/// refuses every request from the Nth on.
typedef struct refuse_ctx {
	tree_t *t;
	model *m;
	tu_alloc *alloc;
	long fail;
	int done, refused;
} refuse_ctx;

/// A change refused for memory is refused whole: the model keeps what it had.
static bool refused_or_ok(refuse_ctx *c, ort_result r)
{
	if (r == ORT_ERROR_OUT_OF_MEMORY) c->refused++;
	else assert_int_equal(r, ORT_OK);
	return r == ORT_OK;
}

static bool refuse_hit(void *ctx, ort_handle h, void *user)
{
	(void)h, (void)user;
	refuse_ctx *c = ctx;
	if (c->done++) return false;
	tree_t *t = c->t;
	model *m = c->m;
	tu_alloc_fail_in(c->alloc, c->fail, true);
	tu_rng r = tu_rng_make(77);
	int first_new = m->n;
	for (int k = 0; k < 40; ++k) { // inserts (far ones grow the root), moves, removes
		box_t b = rand_box(&r);
		if (k % 10 == 9)
			for (int d = 0; d < DIM; ++d) b.min[d] -= 5000.0f, b.max[d] -= 4000.0f;
		ort_handle nh;
		if (refused_or_ok(c, TU(tree_insert)(t, b, NULL, &nh))) tu_model_add(m, nh, b);
		int i = tu_int(&r, 0, m->n - 1);
		box_t mb = rand_box(&r);
		if (refused_or_ok(c, TU(tree_move)(t, m->handle[i], mb))) m->box[i] = mb;
		if (k % 3 == 0) {
			int j = tu_int(&r, 0, first_new - 1);
			if (refused_or_ok(c, TU(tree_remove)(t, m->handle[j]))) { // the model keeps its order
				memmove(&m->handle[j], &m->handle[j + 1], sizeof *m->handle * (size_t)(m->n - j - 1));
				memmove(&m->box[j], &m->box[j + 1], sizeof *m->box * (size_t)(m->n - j - 1));
				m->n--;
				first_new--;
			}
		}
		if (k % 4 == 0 && m->n > 0)
			refused_or_ok(c, TU(tree_set_filter)(t, m->handle[tu_int(&r, 0, m->n - 1)], ORT_FILTER_DEFAULT));
	}
	tu_alloc_disarm(c->alloc);
	// Pending items read their latest queued box (later changes queued after them).
	for (int i = first_new; i < m->n; ++i) {
		box_t back;
		assert_int_equal(TU(tree_get_box)(t, m->handle[i], &back), ORT_OK);
		assert_memory_equal(&back, &m->box[i], sizeof back);
	}
	// An insert that does not want its handle, at a spot of its own.
	box_t lone = tu_cube(900.0f, 901.0f);
	assert_int_equal(TU(tree_insert)(t, lone, NULL, NULL), ORT_OK);
	return true;
}

/// Changes from a callback under a failing allocator (loose and leaves, with
/// a broad phase): each is refused with ORT_ERROR_OUT_OF_MEMORY when called
/// or applied later, never lost in between; the tree then equals the model.
static void test_refused_in_callback(void **state)
{
	(void)state;
	for (int p = 0; p < ORT_PLACEMENT_COUNT; p += 2)
		for (long fail = 1; fail < 40; fail += fail < 8 ? 1 : 5) {
			TU_CONTEXT("changes in a callback, %s, refused from allocation %ld", ort_placement_string((ort_placement)p), fail);
			tu_alloc alloc = {0};
			def_t def = TU(tree_default_def)();
			def.placement = (ort_placement)p;
			def.bucket_size = 4;
			def.allocator = tu_allocator(&alloc);
			tree_t *t;
			assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
			model m;
			tu_model_init(&m, 64);
			tu_rng r = tu_rng_make(5);
			for (int i = 0; i < 60; ++i) {
				ort_handle h;
				box_t b = rand_box(&r);
				assert_int_equal(TU(tree_insert)(t, b, NULL, &h), ORT_OK);
				tu_model_add(&m, h, b);
			}
			assert_int_equal(TU(tree_update_pairs)(t, NULL, NULL, NULL), ORT_OK);
			refuse_ctx c = {t, &m, &alloc, fail, 0, 0};
			box_t all = tu_cube(0.0f, 300.0f);
			assert_int_equal(TU(tree_query_box)(t, all, ORT_MASK_ALL, refuse_hit, &c), ORT_OK);
			// The lone insert, found where it went.
			box_t lone = tu_cube(900.0f, 901.0f);
			tu_list at = {0};
			assert_int_equal(TU(tree_query_box)(t, lone, ORT_MASK_ALL, tu_collect, &at), ORT_OK);
			assert_int_equal(at.n, 1);
			tu_model_add(&m, (ort_handle){(uint32_t)(at.v[0] >> 32), (uint32_t)at.v[0]}, lone);
			free(at.v);
			for (int i = 0; i < m.n; ++i) {
				box_t b;
				assert_int_equal(TU(tree_get_box)(t, m.handle[i], &b), ORT_OK);
				assert_memory_equal(&b, &m.box[i], sizeof b);
			}
			expect_model(t, &m);
			if (fail == 1) assert_true(c.refused > 0);
			tu_model_free(&m);
			TU(tree_destroy)(t);
			assert_int_equal(alloc.live, 0);
		}
}

static bool tick_hit(void *ctx, ort_handle h, void *user)
{
	(void)h, (void)user;
	TU(tree_tick)(ctx); // queued alone: applied when the query returns
	return false;
}

static void pending_sphere_pair(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)a, (void)b, (void)ua, (void)ub;
	tree_t *t = ctx;
	// Into a tree whose items were all removed: a sphere, then a box.
	float c[DIM] = {0}, back[DIM], r = -1;
	ort_handle s, x;
	assert_int_equal(TU(tree_insert_sphere)(t, c, 3.0f, NULL, &s), ORT_OK);
	assert_int_equal(TU(tree_insert)(t, tu_cube(1.0f, 2.0f), NULL, &x), ORT_OK);
	assert_int_equal(TU(tree_get_sphere)(t, s, back, &r), ORT_OK); // found past the box's entry
	assert_true(r == 3.0f && back[0] == 0.0f);
	assert_int_equal(TU(tree_get_sphere)(t, x, back, &r), ORT_ERROR_INVALID_ARGUMENT);
}

/// A tick queued alone, and items inserted from update_pairs' end events
/// after every item was removed.
static void test_tick_and_empty(void **state)
{
	(void)state;
	// Twin trees, one ticked from a callback: the same nodes afterwards.
	tree_t *tw[2];
	for (int k = 0; k < 2; ++k) {
		def_t def = TU(tree_default_def)();
		def.prune_delay = 1;
		def.bucket_size = 1;
		assert_int_equal(TU(tree_create)(&def, &tw[k]), ORT_OK);
		ort_handle h[32];
		for (int i = 0; i < 32; ++i)
			assert_int_equal(TU(tree_insert)(tw[k], tu_cube((float)i * 8.0f, (float)i * 8.0f + 1.0f), NULL, &h[i]), ORT_OK);
		for (int i = 1; i < 32; ++i) assert_int_equal(TU(tree_remove)(tw[k], h[i]), ORT_OK);
		if (k == 0) TU(tree_tick)(tw[k]);
		else assert_int_equal(TU(tree_query_box)(tw[k], tu_cube(0.0f, 1.0f), ORT_MASK_ALL, tick_hit, tw[k]), ORT_OK);
	}
	ort_tree_stats s0, s1;
	TU(tree_get_stats)(tw[0], &s0);
	TU(tree_get_stats)(tw[1], &s1);
	assert_int_equal(s1.nodes, s0.nodes);
	for (int k = 0; k < 2; ++k) tu_check_valid(tw[k]), TU(tree_destroy)(tw[k]);
	// End events of removed items, with nothing left in the tree.
	tree_t *t = tu_tree_make(ORT_PLACEMENT_LOOSE, 4);
	ort_handle a, b;
	assert_int_equal(TU(tree_insert)(t, tu_cube(0.0f, 2.0f), NULL, &a), ORT_OK);
	assert_int_equal(TU(tree_insert)(t, tu_cube(1.0f, 3.0f), NULL, &b), ORT_OK);
	assert_int_equal(TU(tree_update_pairs)(t, NULL, NULL, NULL), ORT_OK);
	assert_int_equal(TU(tree_pair_count)(t), 1);
	assert_int_equal(TU(tree_remove)(t, a), ORT_OK);
	assert_int_equal(TU(tree_remove)(t, b), ORT_OK);
	assert_int_equal(TU(tree_update_pairs)(t, NULL, pending_sphere_pair, t), ORT_OK);
	assert_int_equal(TU(tree_count)(t), 2);
	tu_check_valid(t);
	assert_int_equal(TU(tree_update_pairs)(t, NULL, NULL, NULL), ORT_OK);
	assert_int_equal(TU(tree_pair_count)(t), 1); // the sphere reaches the box: |(1,1..)| <= 3
	TU(tree_destroy)(t);
}

/// Every result and placement has a name.
static void test_names(void **state)
{
	(void)state;
	for (int r = 0; r <= ORT_RESULT_COUNT; ++r) assert_non_null(ort_result_string((ort_result)r));
	assert_string_equal(ort_result_string(ORT_ERROR_BUSY), "ORT_ERROR_BUSY");
	assert_string_equal(ort_result_string(ORT_RESULT_COUNT), "ORT_ERROR_UNKNOWN");
	for (int p = 0; p <= ORT_PLACEMENT_COUNT; ++p) assert_non_null(ort_placement_string((ort_placement)p));
	assert_string_equal(ort_placement_string(ORT_PLACEMENT_LEAVES), "leaves");
	assert_string_equal(ort_placement_string(ORT_PLACEMENT_COUNT), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_callback),
	    cmocka_unit_test(test_destroy_inside),
	    cmocka_unit_test(test_odd_changes),
	    cmocka_unit_test(test_refused_in_callback),
	    cmocka_unit_test(test_tick_and_empty),
	    cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests_name(TU_GROUP("defer"), tests, NULL, NULL);
}

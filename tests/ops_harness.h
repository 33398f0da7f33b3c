// ops_harness.h: a tree and its brute-force model side by side, the
// operations that change both and the checks that compare them, for one
// dimension (included by test_ops.c and test_ops_fixed.c, each compiled
// twice: TEST_DIM=2 and TEST_DIM=3).
#ifndef ORTHANT_TEST_OPS_HARNESS_H
#define ORTHANT_TEST_OPS_HARNESS_H

#include <stdlib.h>

#include "testutil.h"

#define CHECK_EVERY 50
#define STEPS_DEFAULT 400
/// Above this many items removals win over inserts, so the model stays cheap.
#define SOFT_CAP 240
#define STALE_RING 16

// ---- the harness ------------------------------------------------------------------

/// A tree, its model, the user pointers parallel to the model, and the
/// misuse bookkeeping.
typedef struct harness {
	tree_t *t;
	def_t def;
	model m;
	void **user; ///< parallel to m.handle / m.box
	tu_rng r;
	int asserts;         ///< calls of the def's assert_fn
	uintptr_t next_user; ///< user pointers are distinct small integers
	ort_handle stale[STALE_RING];
	int stale_n, stale_at;
	int steps;
} harness;

static inline void count_assert(void *ctx, const char *message)
{
	(void)message;
	++*(int *)ctx;
}

static inline void h_init(harness *h, def_t def, uint64_t seed)
{
	memset(h, 0, sizeof *h);
	def.assert_fn = count_assert;
	def.assert_ctx = &h->asserts;
	h->def = def;
	h->r = tu_rng_make(seed);
	h->next_user = 1;
	assert_int_equal(TU(tree_create)(&h->def, &h->t), ORT_OK);
	tu_model_init(&h->m, 64);
	h->user = malloc(sizeof *h->user * (size_t)h->m.cap);
}

static inline void h_free(harness *h)
{
	TU(tree_destroy)(h->t);
	tu_model_free(&h->m);
	free(h->user);
}

static inline void h_add(harness *h, ort_handle handle, box_t b, void *user)
{
	tu_model_add(&h->m, handle, b);
	h->user = realloc(h->user, sizeof *h->user * (size_t)h->m.cap);
	h->user[h->m.n - 1] = user;
}

static inline void h_forget(harness *h, ort_handle handle)
{
	h->stale[h->stale_at] = handle;
	h->stale_at = (h->stale_at + 1) % STALE_RING;
	if (h->stale_n < STALE_RING) h->stale_n++;
}

static inline void h_remove_at(harness *h, int i)
{
	h_forget(h, h->m.handle[i]);
	h->user[i] = h->user[h->m.n - 1];
	tu_model_remove_at(&h->m, i);
}

static inline void *h_new_user(harness *h) { return (void *)(h->next_user++ * 16); }


// ---- boxes ------------------------------------------------------------------------

static inline box_t box_at(const float c[DIM], float side)
{
	box_t b;
	for (int d = 0; d < DIM; ++d) {
		b.min[d] = c[d];
		b.max[d] = c[d] + side;
	}
	return b;
}

/// A box in the mix the sequences use: small, points on a grid (many coincide),
/// edges on the region's split lines, large, and now and then far away.
static inline box_t random_box(tu_rng *r)
{
	box_t b;
	int kind = tu_int(r, 0, 99);
	if (kind < 50) {
		for (int d = 0; d < DIM; ++d) {
			b.min[d] = tu_float(r, 0, 1000);
			b.max[d] = b.min[d] + tu_float(r, 0, 40);
		}
	} else if (kind < 65) {
		float c[DIM];
		for (int d = 0; d < DIM; ++d) c[d] = (float)tu_int(r, 0, 8) * 125.0f;
		b = box_at(c, 0.0f);
	} else if (kind < 80) {
		int level = tu_int(r, 1, 6);
		float step = 1000.0f / (float)(1 << level);
		for (int d = 0; d < DIM; ++d) {
			float line = step * (float)tu_int(r, 0, 1 << level);
			float s = tu_float(r, 0, step);
			b.min[d] = tu_int(r, 0, 1) ? line : line - s;
			b.max[d] = b.min[d] + s;
		}
	} else if (kind < 95) {
		for (int d = 0; d < DIM; ++d) {
			b.min[d] = tu_float(r, -200, 1000);
			b.max[d] = b.min[d] + tu_float(r, 50, 700);
		}
	} else {
		float c[DIM];
		for (int d = 0; d < DIM; ++d) c[d] = (tu_int(r, 0, 1) ? 1e6f : -1e6f) + tu_float(r, -500, 500);
		b = box_at(c, tu_float(r, 0, 30));
	}
	return b;
}

static inline box_t nudge(tu_rng *r, box_t b, float step)
{
	for (int d = 0; d < DIM; ++d) {
		float v = tu_float(r, -step, step);
		b.min[d] += v;
		b.max[d] += v;
	}
	return b;
}

/// A box the tree must refuse, and the error it must give.
static inline box_t bad_box(tu_rng *r, ort_result *want)
{
	box_t b = random_box(r);
	int d = tu_int(r, 0, DIM - 1);
	switch (tu_int(r, 0, 6)) {
	case 0: b.min[d] = NAN, *want = ORT_ERROR_INVALID_BOX; break;
	case 1: b.max[d] = NAN, *want = ORT_ERROR_INVALID_BOX; break;
	case 2: b.max[d] = INFINITY, *want = ORT_ERROR_INVALID_BOX; break;
	case 3: b.min[d] = -INFINITY, *want = ORT_ERROR_INVALID_BOX; break;
	case 4: b.min[d] = b.max[d] + 1.0f, *want = ORT_ERROR_INVALID_BOX; break;
	case 5: b.max[d] = ORTHANT_COORD_LIMIT * 2.0f, *want = ORT_ERROR_OUT_OF_RANGE; break;
	default: b.min[d] = -3.0e38f, *want = ORT_ERROR_OUT_OF_RANGE; break;
	}
	return b;
}

// ---- checks -----------------------------------------------------------------------

/// Every model item is in the tree with its box and user pointer.
static inline void check_items(const harness *h)
{
	assert_int_equal(TU(tree_count)(h->t), h->m.n);
	for (int i = 0; i < h->m.n; ++i) {
		box_t b;
		if (TU(tree_get_box)(h->t, h->m.handle[i], &b) != ORT_OK) TU_FAIL("item %d lost\n", i);
		if (memcmp(&b, &h->m.box[i], sizeof b)) TU_FAIL("item %d has another box\n", i);
		if (TU(tree_get_user_data)(h->t, h->m.handle[i]) != h->user[i]) TU_FAIL("item %d: user data differs\n", i);
	}
}

/// Pairs and every query kind against the model.
static inline void check_queries(harness *h, int queries)
{
	tu_rng *r = &h->r;
	const model *m = &h->m;
	tu_check_pairs(h->t, m);
	box_t world = tu_model_bounds(m);
	for (int q = 0; q < queries; ++q) {
		box_t qb;
		if (m->n > 0 && q % 3 == 0) {
			qb = m->box[tu_int(r, 0, m->n - 1)];
		} else {
			for (int d = 0; d < DIM; ++d) {
				float span = world.max[d] - world.min[d] + 1.0f;
				qb.min[d] = tu_float(r, world.min[d] - span * 0.1f, world.max[d]);
				qb.max[d] = qb.min[d] + tu_float(r, 0, span * 0.3f);
			}
		}
		tu_check_box_query(h->t, m, qb);
		float p[DIM];
		for (int d = 0; d < DIM; ++d) p[d] = q % 2 && m->n ? m->box[q % m->n].max[d] : qb.min[d];
		tu_check_point_query(h->t, m, p);
		// Radii stay below 1e18: beyond ~1.8e19 a squared radius overflows a
		// float, in the brute force too (see test_fixed_far_distances).
		float radius = fminf((qb.max[0] - qb.min[0]) * 0.5f, 1e18f);
		tu_check_sphere_query(h->t, m, p, radius);
		float dir[DIM];
		for (int d = 0; d < DIM; ++d) dir[d] = (q % 4 == 0 && d > 0) ? 0.0f : tu_float(r, -1, 1);
		tu_check_ray(h->t, m, qb.min, dir, q % 2 ? INFINITY : tu_float(r, 0, 1500));
		tu_check_nearest(h->t, m, p, 1 + q * 7 % 40, q % 3 == 1 ? qb.max[0] - qb.min[0] : INFINITY);
	}
}

static inline void check_step(harness *h)
{
	tu_check_valid(h->t);
	assert_int_equal(TU(tree_count)(h->t), h->m.n);
}

static inline void check_full(harness *h)
{
	check_step(h);
	check_items(h);
	check_queries(h, 3);
}

// ---- operations -------------------------------------------------------------------

static inline void op_insert(harness *h)
{
	box_t b = random_box(&h->r);
	void *u = h_new_user(h);
	ort_handle handle;
	assert_int_equal(TU(tree_insert)(h->t, b, u, &handle), ORT_OK);
	assert_false(ort_handle_is_null(handle));
	h_add(h, handle, b, u);
}

static inline void op_remove(harness *h)
{
	if (h->m.n == 0) return;
	int i = tu_int(&h->r, 0, h->m.n - 1);
	assert_int_equal(TU(tree_remove)(h->t, h->m.handle[i]), ORT_OK);
	h_remove_at(h, i);
}

static inline void op_move(harness *h, bool far)
{
	if (h->m.n == 0) return;
	int i = tu_int(&h->r, 0, h->m.n - 1);
	box_t b = far ? random_box(&h->r) : nudge(&h->r, h->m.box[i], tu_int(&h->r, 0, 3) ? 2.0f : 60.0f);
	assert_int_equal(TU(tree_move)(h->t, h->m.handle[i], b), ORT_OK);
	h->m.box[i] = b;
}

static inline void op_build(harness *h)
{
	int n = tu_int(&h->r, 1, 60);
	box_t *boxes = malloc(sizeof *boxes * (size_t)n);
	void **users = malloc(sizeof *users * (size_t)n);
	ort_handle *out = malloc(sizeof *out * (size_t)n);
	for (int k = 0; k < n; ++k) {
		boxes[k] = random_box(&h->r);
		users[k] = h_new_user(h);
	}
	assert_int_equal(TU(tree_build)(h->t, boxes, users, n, out), ORT_OK);
	for (int k = 0; k < n; ++k) h_add(h, out[k], boxes[k], users[k]);
	free(boxes);
	free(users);
	free(out);
}

static inline void op_clear(harness *h)
{
	TU(tree_clear)(h->t);
	for (int i = h->m.n; i-- > 0;) h_remove_at(h, i);
}

/// Misuse: a stale handle or a bad box. The call fails with the right error,
/// stale handles reach the assert hook, and nothing changes.
static inline void op_misuse(harness *h)
{
	tu_rng *r = &h->r;
	int before = h->asserts;
	int kind = tu_int(r, 0, 5);
	if (kind <= 2 && h->stale_n > 0) {
		ort_handle s = h->stale[tu_int(r, 0, h->stale_n - 1)];
		box_t b = random_box(r), got;
		assert_false(TU(tree_is_valid)(h->t, s));
		if (kind == 0) assert_int_equal(TU(tree_remove)(h->t, s), ORT_ERROR_STALE_HANDLE);
		if (kind == 1) assert_int_equal(TU(tree_move)(h->t, s, b), ORT_ERROR_STALE_HANDLE);
		if (kind == 2) {
			assert_int_equal(TU(tree_get_box)(h->t, s, &got), ORT_ERROR_STALE_HANDLE);
			assert_null(TU(tree_get_user_data)(h->t, s));
		} else {
			assert_int_equal(h->asserts, before + 1);
		}
	} else if (kind == 3) {
		ort_result want;
		box_t b = bad_box(r, &want);
		ort_handle out = {7, 7};
		assert_int_equal(TU(tree_insert)(h->t, b, NULL, &out), want);
		assert_true(ort_handle_is_null(out));
	} else if (kind == 4 && h->m.n > 0) {
		ort_result want;
		box_t b = bad_box(r, &want);
		assert_int_equal(TU(tree_move)(h->t, h->m.handle[tu_int(r, 0, h->m.n - 1)], b), want);
	} else {
		box_t boxes[8];
		ort_result want;
		for (int k = 0; k < 8; ++k) boxes[k] = random_box(r);
		boxes[tu_int(r, 0, 7)] = bad_box(r, &want);
		assert_int_equal(TU(tree_build)(h->t, boxes, NULL, 8, NULL), want);
	}
	check_items(h);
}

/// One random step.
static inline void h_step(harness *h)
{
	tu_rng *r = &h->r;
	int x = tu_int(r, 0, 999);
	bool grow = h->m.n < SOFT_CAP;
	if (x < 330)
		grow ? op_insert(h) : op_remove(h);
	else if (x < 480)
		op_remove(h);
	else if (x < 700)
		op_move(h, false);
	else if (x < 780)
		op_move(h, true);
	else if (x < 880)
		TU(tree_tick)(h->t);
	else if (x < 900)
		grow ? op_build(h) : op_remove(h);
	else if (x < 904)
		op_clear(h);
	else if (x < 950)
		op_misuse(h);
	else
		check_queries(h, 1);
	h->steps++;
	check_step(h);
}

// ---- definitions --------------------------------------------------------------------

static inline def_t placement_def(int p, bool region)
{
	def_t def = TU(tree_default_def)();
	def.placement = (ort_placement)p;
	def.bucket_size = 2;
	if (region) {
		for (int d = 0; d < DIM; ++d) {
			def.region.min[d] = -100;
			def.region.max[d] = 100;
		}
		def.use_region = true;
	}
	return def;
}

static inline void fill(harness *h, int n)
{
	for (int i = 0; i < n; ++i) op_insert(h);
}

#endif

// testutil.h: the brute-force oracle and helpers every test shares, written
// once for any dimension: a test defines TEST_DIM (2 or 3) before including.
//
// The model is the truth: a plain array of (handle, box). Every check asks the
// tree and the model the same question and compares the answers as sets.
#ifndef ORTHANT_TESTUTIL_H
#define ORTHANT_TESTUTIL_H

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "orthant/orthant.h"

#ifndef TEST_DIM
#error "define TEST_DIM (2 or 3)"
#endif
#define DIM TEST_DIM
#define TU_CAT_(a, b, c) a##b##_##c
#define TU_CAT(a, b, c) TU_CAT_(a, b, c)
/// TU(tree_insert) is ort2_tree_insert or ort3_tree_insert.
#define TU(x) TU_CAT(ort, TEST_DIM, x)
#define TU_STR_(x) #x
#define TU_STR(x) TU_STR_(x)
#define TU_GROUP(name) name " " TU_STR(TEST_DIM) "d"

typedef TU(box) box_t;
typedef TU(tree) tree_t;
typedef TU(tree_def) def_t;
typedef TU(neighbor) neighbor_t;

/// What the failing check was looking at, printed with any failure.
static char tu_context[256];
#define TU_CONTEXT(...) snprintf(tu_context, sizeof tu_context, __VA_ARGS__)
#define TU_FAIL(...)                                                                                              \
	do {                                                                                                          \
		print_error("context: %s\n", tu_context);                                                                 \
		print_error(__VA_ARGS__);                                                                                 \
		fail();                                                                                                   \
	} while (0)

// ---- sizes ------------------------------------------------------------------------

/// A heavy suite's scene size or step count: n, or with ORTHANT_TEST_SHRINK=k
/// (an integer > 1) in the environment n / k, but not below floor (nor above n).
/// scripts/test.sh sets it where every instruction costs several to fifty
/// times over: 8 under valgrind and ThreadSanitizer, 4 for coverage, 2
/// under ASan + UBSan. The suites still walk every path there, on smaller
/// scenes; its optimised ctest run has them full. Sizes a check depends on
/// (failure sweeps, job thresholds) pass a floor that keeps it.
static inline int tu_shrink(void)
{
	const char *s = getenv("ORTHANT_TEST_SHRINK");
	int k = s ? atoi(s) : 1;
	return k > 1 ? k : 1;
}

static inline int tu_size(int n, int floor)
{
	int k = tu_shrink();
	if (k <= 1) return n;
	int m = n / k;
	return m > floor ? m : floor < n ? floor : n;
}

// ---- random -----------------------------------------------------------------------

typedef struct tu_rng {
	uint64_t s;
} tu_rng;

static inline tu_rng tu_rng_make(uint64_t seed)
{
	tu_rng r = {seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull};
	return r;
}

static inline uint64_t tu_next(tu_rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545F4914F6CDD1Dull;
}

static inline float tu_float(tu_rng *r, float lo, float hi)
{
	return lo + (hi - lo) * (float)(tu_next(r) >> 40) * (1.0f / 16777216.0f);
}

/// tu_float for support/scene.h's generators (scn_draw_fn), r a tu_rng.
static inline float tu_draw(void *r, float lo, float hi) { return tu_float(r, lo, hi); }

static inline int tu_int(tu_rng *r, int lo, int hi) { return lo + (int)(tu_next(r) % (uint64_t)(hi - lo + 1)); }

// ---- the model ----------------------------------------------------------------------

typedef struct model {
	ort_handle *handle;
	box_t *box;
	int n, cap;
} model;

static inline void tu_model_init(model *m, int cap)
{
	m->n = 0;
	m->cap = cap > 0 ? cap : 1;
	m->handle = malloc(sizeof *m->handle * (size_t)m->cap);
	m->box = malloc(sizeof *m->box * (size_t)m->cap);
}

static inline void tu_model_free(model *m)
{
	free(m->handle);
	free(m->box);
}

static inline void tu_model_add(model *m, ort_handle h, box_t b)
{
	if (m->n == m->cap) {
		m->cap *= 2;
		m->handle = realloc(m->handle, sizeof *m->handle * (size_t)m->cap);
		m->box = realloc(m->box, sizeof *m->box * (size_t)m->cap);
	}
	m->handle[m->n] = h;
	m->box[m->n] = b;
	m->n++;
}

static inline void tu_model_remove_at(model *m, int i)
{
	m->n--;
	m->handle[i] = m->handle[m->n];
	m->box[i] = m->box[m->n];
}

static inline box_t tu_model_bounds(const model *m)
{
	box_t w;
	for (int d = 0; d < DIM; ++d) {
		w.min[d] = 0;
		w.max[d] = 1;
	}
	for (int i = 0; i < m->n; ++i)
		for (int d = 0; d < DIM; ++d) {
			if (i == 0 || m->box[i].min[d] < w.min[d]) w.min[d] = m->box[i].min[d];
			if (i == 0 || m->box[i].max[d] > w.max[d]) w.max[d] = m->box[i].max[d];
		}
	return w;
}

// ---- brute-force geometry (written independently of the library) ------------------

static inline bool tu_overlap(const box_t *a, const box_t *b)
{
	for (int d = 0; d < DIM; ++d)
		if (a->min[d] > b->max[d] || b->min[d] > a->max[d]) return false;
	return true;
}

/// Squared distance in double (the documented rule: float squares overflow).
static inline double tu_dist2(const float p[DIM], const box_t *b)
{
	double s = 0;
	for (int d = 0; d < DIM; ++d) {
		double v = 0;
		if (p[d] < b->min[d]) v = (double)b->min[d] - p[d];
		if (p[d] > b->max[d]) v = (double)p[d] - b->max[d];
		s += v * v;
	}
	return s;
}

/// The documented ray formula (tree_dim.h): per axis (lo - o) / d, (hi - o) / d.
static inline bool tu_ray_hit(const float o[DIM], const float dir[DIM], float tmax, const box_t *b, float *enter)
{
	float t0 = 0, t1 = tmax;
	for (int d = 0; d < DIM; ++d) {
		if (dir[d] == 0) {
			if (o[d] < b->min[d] || o[d] > b->max[d]) return false;
			continue;
		}
		float a = (b->min[d] - o[d]) / dir[d], c = (b->max[d] - o[d]) / dir[d];
		float lo = a < c ? a : c, hi = a < c ? c : a;
		if (lo > t0) t0 = lo;
		if (hi < t1) t1 = hi;
	}
	if (t0 > t1) return false;
	*enter = t0;
	return true;
}

/// The documented ray-sphere rule (tree_dim.h), in double: the segment
/// o + t * dir, t in [0, tmax], against the sphere (c, r).
static inline bool tu_ray_sphere(const float o[DIM], const float dir[DIM], float tmax, const float c[DIM], float r,
                                 float *enter)
{
	double a = 0, b = 0, k = 0;
	for (int d = 0; d < DIM; ++d) {
		double oc = (double)o[d] - c[d];
		a += (double)dir[d] * dir[d];
		b += (double)dir[d] * oc;
		k += oc * oc;
	}
	k -= (double)r * r;
	if (k <= 0) {
		*enter = 0;
		return true;
	}
	double disc = b * b - a * k;
	if (a == 0 || disc < 0) return false;
	double t0 = (-b - sqrt(disc)) / a;
	if (t0 < 0 || t0 > tmax) return false;
	*enter = (float)t0;
	return true;
}

// ---- sorting ---------------------------------------------------------------------------

/// qsort for lists that may be empty: qsort's pointer is declared non-null, so
/// qsort(NULL, 0, ...) (a result list that never got an array) is undefined,
/// and UBSan says so.
static inline void tu_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1) qsort(base, n, size, cmp);
}

// ---- the test allocator -----------------------------------------------------------------
//
// Handed to a tree as its allocator (tu_allocator(&a)), it counts the
// allocations, refuses the one numbered fail_at (with fail_rest, every one
// from it on), and remembers every block it hands out: a test can compare the
// bytes a tree reports with what it holds, read or damage the tree's memory
// block by block, and every free must name a block it handed out with that
// block's size (anything else fails the test at once). Paused, it neither
// counts nor refuses: checks between the calls under test run that way.

/// The most blocks a test allocator tracks at once.
#define TU_BLOCKS_MAX 1024

typedef struct tu_block {
	void *p;
	size_t size;
} tu_block;

typedef struct tu_alloc {
	long calls;       ///< allocations asked for while not paused
	long fail_at;     ///< the call to refuse, 1-based; 0: none
	bool fail_rest;   ///< refuse every call from fail_at on
	bool paused;      ///< neither count nor refuse
	long refused;     ///< calls refused so far
	size_t live;      ///< bytes handed out and not yet freed
	int nblocks;      ///< blocks live now: blocks[0..nblocks), in the order handed out
	int nblocks_peak; ///< the most blocks live at once
	size_t live_peak; ///< the most bytes live at once (a test may lower it to live to start over)
	size_t asked;     ///< bytes asked for, in all
	bool zeroed;      ///< hand out zeroed blocks (for a test that reads every byte the tree holds)
	tu_block blocks[TU_BLOCKS_MAX]; ///< a freed block's place goes to the last one
} tu_alloc;

static inline void *tu_alloc_fn(void *ctx, size_t size)
{
	tu_alloc *a = ctx;
	if (!a->paused) {
		a->calls++;
		if (a->fail_at && (a->calls == a->fail_at || (a->fail_rest && a->calls > a->fail_at))) {
			a->refused++;
			return NULL;
		}
	}
	if (a->nblocks == TU_BLOCKS_MAX) TU_FAIL("test allocator: more than %d blocks live at once\n", TU_BLOCKS_MAX);
	void *p = malloc(size ? size : 1);
	if (!p) abort();
	if (a->zeroed) memset(p, 0, size);
	a->blocks[a->nblocks++] = (tu_block){p, size};
	if (a->nblocks > a->nblocks_peak) a->nblocks_peak = a->nblocks;
	a->live += size;
	a->asked += size;
	if (a->live > a->live_peak) a->live_peak = a->live;
	return p;
}

static inline void tu_free_fn(void *ctx, void *p, size_t size)
{
	tu_alloc *a = ctx;
	if (!p) return;
	int i = 0;
	while (i < a->nblocks && a->blocks[i].p != p) i++;
	if (i == a->nblocks) TU_FAIL("test allocator: a block it never handed out freed\n");
	if (a->blocks[i].size != size)
		TU_FAIL("test allocator: %zu bytes freed of a %zu-byte block\n", size, a->blocks[i].size);
	a->live -= size;
	a->blocks[i] = a->blocks[--a->nblocks];
	free(p);
}

static inline ort_allocator tu_allocator(tu_alloc *a) { return (ort_allocator){tu_alloc_fn, tu_free_fn, a}; }

/// Refuse the n-th allocation from now (n >= 1), and with rest every one after.
static inline void tu_alloc_fail_in(tu_alloc *a, long n, bool rest)
{
	a->fail_at = a->calls + n;
	a->fail_rest = rest;
}

static inline void tu_alloc_disarm(tu_alloc *a)
{
	a->fail_at = 0;
	a->fail_rest = false;
}

// ---- set comparison ------------------------------------------------------------------

static inline uint64_t tu_key(ort_handle h) { return (uint64_t)h.id << 32 | h.gen; }

static int tu_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/// Sorts keys ascending: least significant digit first, 16 bits a pass, a
/// pass skipped when every key has the same digit there (pair keys hold ids
/// far below 2^32). The oracles sort whole pair sets every frame; qsort with
/// a comparator was a fifth of test_tasks under valgrind.
static inline void tu_sort_u64(uint64_t *v, size_t n)
{
	if (n < 64) {
		for (size_t i = 1; i < n; ++i) {
			uint64_t k = v[i];
			size_t j = i;
			for (; j > 0 && v[j - 1] > k; --j) v[j] = v[j - 1];
			v[j] = k;
		}
		return;
	}
	uint64_t *tmp = malloc(sizeof *tmp * n);
	size_t *count = malloc(sizeof *count * 65536);
	if (!tmp || !count) {
		free(tmp), free(count);
		qsort(v, n, sizeof *v, tu_cmp_u64);
		return;
	}
	uint64_t *from = v, *to = tmp;
	for (int shift = 0; shift < 64; shift += 16) {
		memset(count, 0, sizeof *count * 65536);
		for (size_t i = 0; i < n; ++i) count[from[i] >> shift & 0xffff]++;
		if (count[from[0] >> shift & 0xffff] == n) continue; // one digit: the order stands
		size_t sum = 0;
		for (size_t d = 0; d < 65536; ++d) {
			size_t c = count[d];
			count[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; ++i) to[count[from[i] >> shift & 0xffff]++] = from[i];
		uint64_t *swap = from;
		from = to, to = swap;
	}
	if (from != v) memcpy(v, from, sizeof *v * n);
	free(count);
	free(tmp);
}

typedef struct tu_list {
	uint64_t *v;
	size_t n, cap;
} tu_list;

static inline void tu_push(tu_list *l, uint64_t v)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->v = realloc(l->v, l->cap * sizeof *l->v);
	}
	l->v[l->n++] = v;
}

/// Sorted equality; a duplicate in got fails too (results must be unique).
static inline void tu_expect_same(tu_list *got, tu_list *want, const char *what)
{
	tu_sort_u64(got->v, got->n);
	tu_sort_u64(want->v, want->n);
	for (size_t i = 1; i < got->n; ++i)
		if (got->v[i] == got->v[i - 1]) TU_FAIL("%s: result %llx reported twice\n", what, (unsigned long long)got->v[i]);
	if (got->n != want->n) TU_FAIL("%s: %zu results, brute force has %zu\n", what, got->n, want->n);
	for (size_t i = 0; i < got->n; ++i)
		if (got->v[i] != want->v[i]) TU_FAIL("%s: result sets differ at %zu\n", what, i);
	free(got->v);
	free(want->v);
}

static bool tu_collect(void *ctx, ort_handle h, void *user)
{
	(void)user;
	tu_push(ctx, tu_key(h));
	return true;
}

static bool tu_collect_pair(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)ua, (void)ub;
	uint64_t x = tu_key(a), y = tu_key(b);
	// A pair as one number: the two 32-bit ids, smaller first (ids are unique).
	uint64_t lo = a.id < b.id ? a.id : b.id, hi = a.id < b.id ? b.id : a.id;
	(void)x, (void)y;
	tu_push(ctx, lo << 32 | hi);
	return true;
}

/// A tree of the default definition with this placement and bucket size.
static inline tree_t *tu_tree_make(ort_placement placement, int bucket_size)
{
	def_t def = TU(tree_default_def)();
	def.placement = placement;
	def.bucket_size = bucket_size;
	tree_t *t;
	assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
	return t;
}

/// The cube [lo, hi] on every axis.
static inline box_t tu_cube(float lo, float hi)
{
	box_t b;
	for (int d = 0; d < DIM; ++d) {
		b.min[d] = lo;
		b.max[d] = hi;
	}
	return b;
}

/// Strip i: long along x (about 0 to 1000), 0.5 thick, in row i % rows on y
/// (i / rows on z), rows gap apart.
static inline box_t tu_strip(tu_rng *r, int i, int rows, float gap)
{
	box_t b;
	b.min[0] = tu_float(r, 0.0f, 10.0f);
	b.max[0] = tu_float(r, 990.0f, 1000.0f);
	for (int d = 1; d < DIM; ++d) {
		int row = d == 1 ? i % rows : i / rows;
		b.min[d] = (float)row * gap;
		b.max[d] = b.min[d] + 0.5f;
	}
	return b;
}

/// A straddler of the centre line x = 500 (the split of [0, 1000]): side
/// wide across it, thick on the other axes, at random places there.
static inline box_t tu_straddler(tu_rng *r, float side, float thick)
{
	box_t b;
	b.min[0] = 500.0f - side * 0.5f;
	b.max[0] = 500.0f + side * 0.5f;
	for (int d = 1; d < DIM; ++d) {
		b.min[d] = tu_float(r, 0.0f, 1000.0f);
		b.max[d] = b.min[d] + thick;
	}
	return b;
}

/// Insert boxes b[0..n) into t, recording each in m (initialised for n).
static inline void tu_insert_all(tree_t *t, model *m, const box_t *b, int n)
{
	tu_model_init(m, n);
	for (int i = 0; i < n; ++i) {
		ort_handle h;
		assert_int_equal(TU(tree_insert)(t, b[i], NULL, &h), ORT_OK);
		tu_model_add(m, h, b[i]);
	}
}

static inline void tu_check_valid(const tree_t *t)
{
	char msg[256];
	ort_result r = TU(tree_validate)(t, msg, sizeof msg);
	if (r != ORT_OK) TU_FAIL("validate: %s\n", msg);
}

/// Brute force's pairs of box[0..n): emit(ctx, i, j) for every i != j whose
/// boxes overlap, each pair once. Every pair is tested whole, over the boxes
/// in order of min x: once j's min x is past i's max x, neither j nor any box
/// after it in that order can meet i (the only pruning; the loop over every
/// pair was up to a fifth of a suite's time, more under valgrind).
static inline void tu_brute_pairs(const box_t *box, int n, void (*emit)(void *ctx, int i, int j), void *ctx)
{
	tu_list order = {0}; // (min x as ordered bits << 32 | index), sorted
	for (int i = 0; i < n; ++i) {
		uint32_t bits;
		memcpy(&bits, &box[i].min[0], sizeof bits);
		bits = bits >> 31 ? ~bits : bits | 0x80000000u; // floats ordered as unsigned integers
		tu_push(&order, (uint64_t)bits << 32 | (uint32_t)i);
	}
	tu_sort_u64(order.v, order.n);
	for (int a = 0; a < n; ++a) {
		int i = (int)(uint32_t)order.v[a];
		for (int b = a + 1; b < n; ++b) {
			int j = (int)(uint32_t)order.v[b];
			if (box[j].min[0] > box[i].max[0]) break;
			if (tu_overlap(&box[i], &box[j])) emit(ctx, i, j);
		}
	}
	free(order.v);
}

typedef struct tu_model_pairs {
	const model *m;
	tu_list *out;
} tu_model_pairs;

static inline void tu_emit_model_pair(void *ctx, int i, int j)
{
	const tu_model_pairs *c = ctx;
	uint64_t a = c->m->handle[i].id, b = c->m->handle[j].id;
	tu_push(c->out, a < b ? a << 32 | b : b << 32 | a);
}

static inline void tu_check_pairs(tree_t *t, const model *m)
{
	tu_list got = {0}, want = {0};
	assert_int_equal(TU(tree_find_pairs)(t, ORT_MASK_ALL, tu_collect_pair, &got), ORT_OK);
	tu_brute_pairs(m->box, m->n, tu_emit_model_pair, &(tu_model_pairs){m, &want});
	tu_expect_same(&got, &want, "pairs");
}

/// The broad phase's dense pair array as sorted keys (as tu_collect_pair
/// makes them): every record names two live items by their current handles,
/// with their user data, no pair twice, as many as pair_count, in the order
/// current_pairs reports them, and record by record the pair of handle ids
/// that pair_ids holds.
static inline void tu_pair_array_keys(const tree_t *t, tu_list *out)
{
	size_t n = 0, n_ids = 0;
	const ort_id_pair *ids = TU(tree_pair_ids)(t, &n_ids);
	const TU(pair) *p = TU(tree_pair_array)(t, &n);
	assert_int_equal((int)n, TU(tree_pair_count)(t));
	assert_int_equal(n_ids, n);
	assert_true(n == 0 || (p != NULL && ids != NULL));
	// A second call hands out the same records (made once).
	assert_true(TU(tree_pair_array)(t, NULL) == p);
	for (size_t k = 0; k < n; ++k) assert_true(ids[k].a == p[k].a.id && ids[k].b == p[k].b.id);
	tu_list order = {0};
	assert_int_equal(TU(tree_current_pairs)(t, tu_collect_pair, &order), ORT_OK);
	assert_int_equal(order.n, n);
	for (size_t k = 0; k < n; ++k) {
		assert_true(p[k].a.id != p[k].b.id);
		assert_true(TU(tree_get_user_data)(t, p[k].a) == p[k].user_a);
		assert_true(TU(tree_get_user_data)(t, p[k].b) == p[k].user_b);
		box_t ba, bb;
		assert_int_equal(TU(tree_get_box)(t, p[k].a, &ba), ORT_OK);
		assert_int_equal(TU(tree_get_box)(t, p[k].b, &bb), ORT_OK);
		size_t before = out->n;
		tu_collect_pair(out, p[k].a, p[k].b, p[k].user_a, p[k].user_b);
		assert_true(out->v[before] == order.v[k]);
	}
	free(order.v);
	tu_sort_u64(out->v, out->n);
	for (size_t k = 1; k < out->n; ++k) assert_true(out->v[k - 1] < out->v[k]);
}

static inline size_t tu_count_pairs(tree_t *t)
{
	tu_list got = {0};
	assert_int_equal(TU(tree_find_pairs)(t, ORT_MASK_ALL, tu_collect_pair, &got), ORT_OK);
	free(got.v);
	return got.n;
}

static inline void tu_check_box_query(const tree_t *t, const model *m, box_t q)
{
	tu_list got = {0}, want = {0};
	assert_int_equal(TU(tree_query_box)(t, q, ORT_MASK_ALL, tu_collect, &got), ORT_OK);
	for (int i = 0; i < m->n; ++i)
		if (tu_overlap(&m->box[i], &q)) tu_push(&want, tu_key(m->handle[i]));
	tu_expect_same(&got, &want, "box query");
}

static inline void tu_check_point_query(const tree_t *t, const model *m, const float p[DIM])
{
	tu_list got = {0}, want = {0};
	assert_int_equal(TU(tree_query_point)(t, p, ORT_MASK_ALL, tu_collect, &got), ORT_OK);
	box_t q;
	for (int d = 0; d < DIM; ++d) q.min[d] = q.max[d] = p[d];
	for (int i = 0; i < m->n; ++i)
		if (tu_overlap(&m->box[i], &q)) tu_push(&want, tu_key(m->handle[i]));
	tu_expect_same(&got, &want, "point query");
}

static inline void tu_check_sphere_query(const tree_t *t, const model *m, const float c[DIM], float r)
{
	tu_list got = {0}, want = {0};
	assert_int_equal(TU(tree_query_sphere)(t, c, r, ORT_MASK_ALL, tu_collect, &got), ORT_OK);
	for (int i = 0; i < m->n; ++i)
		if (tu_dist2(c, &m->box[i]) <= (double)r * r) tu_push(&want, tu_key(m->handle[i]));
	tu_expect_same(&got, &want, "sphere query");
}

typedef struct tu_ray_hits {
	tu_list keys;
	float nearest;
	uint64_t nearest_key;
	bool clip; ///< return t (nearest-hit mode) instead of going on
	tu_list at; ///< each hit's handle id and t (tu_ray_at)
} tu_ray_hits;

/// A hit as a handle id and the bits of its t, so two lists of hits compare
/// equal only if every t agrees to the bit.
static inline uint64_t tu_ray_at(uint32_t id, float t)
{
	uint32_t bits;
	memcpy(&bits, &t, sizeof bits);
	return (uint64_t)id << 32 | bits;
}

static float tu_ray_collect(void *ctx, ort_handle h, void *user, float t)
{
	(void)user;
	tu_ray_hits *rh = ctx;
	tu_push(&rh->keys, tu_key(h));
	tu_push(&rh->at, tu_ray_at(h.id, t));
	if (t < rh->nearest || (t == rh->nearest && tu_key(h) < rh->nearest_key)) {
		rh->nearest = t;
		rh->nearest_key = tu_key(h);
	}
	return rh->clip ? t : INFINITY;
}

static inline void tu_check_ray(const tree_t *t, const model *m, const float o[DIM], const float dir[DIM], float tmax)
{
	// All hits, each with its t to the bit.
	tu_ray_hits rh = {{0}, INFINITY, UINT64_MAX, false, {0}};
	tu_list want = {0}, want_at = {0};
	float best = INFINITY;
	uint32_t best_id = UINT32_MAX;
	for (int i = 0; i < m->n; ++i) {
		float te;
		if (tu_ray_hit(o, dir, tmax, &m->box[i], &te)) {
			tu_push(&want, tu_key(m->handle[i]));
			tu_push(&want_at, tu_ray_at(m->handle[i].id, te));
			if (te < best || (te == best && m->handle[i].id < best_id)) best = te, best_id = m->handle[i].id;
		}
	}
	assert_int_equal(TU(tree_ray_cast)(t, o, dir, tmax, ORT_MASK_ALL, tu_ray_collect, &rh), ORT_OK);
	float got_best = rh.nearest;
	tu_expect_same(&rh.keys, &want, "ray (all hits)");
	tu_expect_same(&rh.at, &want_at, "ray (every hit's t)");
	if (got_best != best) TU_FAIL("ray: nearest t %g, brute force %g\n", (double)got_best, (double)best);
	// Nearest hit by clipping: the smallest t reported must be the true nearest.
	tu_ray_hits nh = {{0}, INFINITY, UINT64_MAX, true, {0}};
	assert_int_equal(TU(tree_ray_cast)(t, o, dir, tmax, ORT_MASK_ALL, tu_ray_collect, &nh), ORT_OK);
	free(nh.keys.v);
	free(nh.at.v);
	if (nh.nearest != best) TU_FAIL("ray (clipped): nearest t %g, brute force %g\n", (double)nh.nearest, (double)best);
	// ray_first: the nearest, the lowest id among equally near ones.
	TU(ray_hit) first;
	bool found = TU(tree_ray_first)(t, o, dir, tmax, ORT_MASK_ALL, &first);
	if (found != (best_id != UINT32_MAX)) TU_FAIL("ray_first: found %d, brute force %d\n", found, best_id != UINT32_MAX);
	if (found && (first.handle.id != best_id || first.t != best))
		TU_FAIL("ray_first: id %u at t %g, brute force id %u at %g\n", first.handle.id, (double)first.t, best_id,
		        (double)best);
}

typedef struct tu_near {
	double d2;
	uint32_t id;
} tu_near;

/// The documented result order: distance as reported (sqrt(d2) rounded to
/// float, infinity past FLT_MAX), then id.
static int tu_cmp_near(const void *a, const void *b)
{
	const tu_near *x = a, *y = b;
	float dx = (float)sqrt(x->d2), dy = (float)sqrt(y->d2);
	if (dx != dy) return dx < dy ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/// Puts the k smallest of a[0..n) under tu_cmp_near first, in that order (the
/// rest after them, in no order): brute force's k nearest by selection, not
/// by sorting every distance, which made the oracle most of the time of the
/// tests that ask it many times (test_threads under valgrind: 40 % in qsort).
static inline void tu_near_first(tu_near *a, size_t n, size_t k)
{
	if (k < n) {
		// Quickselect; the invariant: a[0..lo) < a[lo..hi) < a[hi..n), and lo <= k < hi.
		size_t lo = 0, hi = n;
		while (hi - lo > 1) {
			tu_near tmp = a[lo + (hi - lo) / 2];
			a[lo + (hi - lo) / 2] = a[hi - 1];
			a[hi - 1] = tmp;
			const tu_near pivot = tmp;
			size_t s = lo;
			for (size_t i = lo; i + 1 < hi; ++i)
				if (tu_cmp_near(&a[i], &pivot) < 0) tmp = a[i], a[i] = a[s], a[s++] = tmp;
			a[hi - 1] = a[s], a[s] = pivot;
			if (s == k) break;
			if (s < k) lo = s + 1;
			else hi = s;
		}
		n = k;
	}
	tu_sort(a, n, sizeof *a, tu_cmp_near);
}

static inline void tu_check_nearest(const tree_t *t, const model *m, const float p[DIM], int k, float maxd)
{
	tu_near *all = malloc(sizeof *all * (size_t)(m->n + 1));
	int n = 0;
	for (int i = 0; i < m->n; ++i) {
		double d2 = tu_dist2(p, &m->box[i]);
		if (d2 <= (double)maxd * maxd || isinf(maxd)) all[n++] = (tu_near){d2, m->handle[i].id};
	}
	int want = n < k ? n : k;
	tu_near_first(all, (size_t)n, (size_t)want);
	neighbor_t *out = malloc(sizeof *out * (size_t)k);
	int found = -1;
	assert_int_equal(TU(tree_nearest)(t, p, k, maxd, ORT_MASK_ALL, out, &found), ORT_OK);
	if (found != want) TU_FAIL("nearest: %d found, brute force %d (k %d)\n", found, want, k);
	for (int i = 0; i < found; ++i) {
		if (out[i].handle.id != all[i].id)
			TU_FAIL("nearest: #%d is id %u at %g, brute force id %u at %g\n", i, out[i].handle.id,
			        (double)out[i].distance, all[i].id, sqrt(all[i].d2));
		if (out[i].distance != (float)sqrt(all[i].d2)) TU_FAIL("nearest: distance differs at #%d\n", i);
	}
	free(out);
	free(all);
}

#endif

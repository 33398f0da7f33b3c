// test_threads.c: concurrent readers. Several threads query one tree at once
// (box, point, sphere, ray cast, ray records, nearest, planes, box cast and
// batches) and compare every answer with brute force, for each placement; and
// find_pairs on one packed tree from several threads (the tree keeps a sweep's
// keys for one call at a time). The
// queries only read the tree, so this must be race-free: the ORTHANT_TSAN
// build (scripts/tsan.sh) runs it under ThreadSanitizer against an
// instrumented library.
//
// cmocka is not thread-safe, so readers count mismatches and the main thread
// asserts there were none.
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>

#include "testutil.h"

enum { THREADS = 4, ITEMS = 1500, ROUNDS = 150 };

typedef struct reader {
	const tree_t *tree;
	const model *m;
	pthread_barrier_t *start;
	uint64_t seed;
	int mismatches;
	const char *first; ///< the first query kind that disagreed
	int rounds;
} reader;

/// Whether two result lists hold the same keys, each once; empties both.
static bool same_set(tu_list *got, tu_list *want)
{
	tu_sort_u64(got->v, got->n);
	tu_sort_u64(want->v, want->n);
	bool same = got->n == want->n && (got->n == 0 || memcmp(got->v, want->v, got->n * sizeof *got->v) == 0);
	free(got->v);
	free(want->v);
	*got = *want = (tu_list){0};
	return same;
}

static void expect(reader *rd, bool ok, const char *what)
{
	if (ok) return;
	if (rd->mismatches++ == 0) rd->first = what;
}

static float collect_ray(void *ctx, ort_handle h, void *user, float t)
{
	(void)user, (void)t;
	tu_push(ctx, tu_key(h));
	return INFINITY;
}

static void random_query_box(tu_rng *r, box_t *q)
{
	for (int d = 0; d < DIM; ++d) {
		q->min[d] = tu_float(r, -50, 1050);
		q->max[d] = q->min[d] + tu_float(r, 0, 150);
	}
}

/// One round of every query kind against brute force.
static void reader_round(reader *rd, tu_rng *r)
{
	const tree_t *t = rd->tree;
	const model *m = rd->m;
	box_t q;
	random_query_box(r, &q);
	if (tu_int(r, 0, 3) == 0) q = m->box[tu_int(r, 0, m->n - 1)];
	tu_list got = {0}, want = {0};

	// Boxes, points, spheres.
	expect(rd, TU(tree_query_box)(t, q, ORT_MASK_ALL, tu_collect, &got) == ORT_OK, "box status");
	for (int i = 0; i < m->n; ++i)
		if (tu_overlap(&m->box[i], &q)) tu_push(&want, tu_key(m->handle[i]));
	expect(rd, same_set(&got, &want), "box");
	expect(rd, TU(tree_query_point)(t, q.min, ORT_MASK_ALL, tu_collect, &got) == ORT_OK, "point status");
	box_t p = q;
	memcpy(p.max, p.min, sizeof p.max);
	for (int i = 0; i < m->n; ++i)
		if (tu_overlap(&m->box[i], &p)) tu_push(&want, tu_key(m->handle[i]));
	expect(rd, same_set(&got, &want), "point");
	float radius = q.max[0] - q.min[0];
	expect(rd, TU(tree_query_sphere)(t, q.min, radius, ORT_MASK_ALL, tu_collect, &got) == ORT_OK, "sphere status");
	for (int i = 0; i < m->n; ++i)
		if (tu_dist2(q.min, &m->box[i]) <= (double)radius * radius) tu_push(&want, tu_key(m->handle[i]));
	expect(rd, same_set(&got, &want), "sphere");

	// Rays: every hit, and the first one with its t.
	float dir[DIM], tmax = tu_int(r, 0, 2) ? tu_float(r, 0, 1500) : INFINITY, best = INFINITY;
	uint32_t best_id = 0;
	for (int d = 0; d < DIM; ++d) dir[d] = tu_int(r, 0, 4) ? tu_float(r, -1, 1) : 0.0f;
	expect(rd, TU(tree_ray_cast)(t, q.min, dir, tmax, ORT_MASK_ALL, collect_ray, &got) == ORT_OK, "ray status");
	for (int i = 0; i < m->n; ++i) {
		float te;
		if (!tu_ray_hit(q.min, dir, tmax, &m->box[i], &te)) continue;
		tu_push(&want, tu_key(m->handle[i]));
		if (te < best || (te == best && m->handle[i].id < best_id)) best = te, best_id = m->handle[i].id;
	}
	expect(rd, same_set(&got, &want), "ray");
	TU(ray_hit) hit;
	bool found = TU(tree_ray_first)(t, q.min, dir, tmax, ORT_MASK_ALL, &hit);
	expect(rd, found == (best_id != 0) && (!found || (hit.handle.id == best_id && hit.t == best)), "ray_first");

	// Box cast: the Minkowski rule of docs/QUERIES.md.
	expect(rd, TU(tree_box_cast)(t, q, dir, tmax, ORT_MASK_ALL, collect_ray, &got) == ORT_OK, "box cast status");
	for (int i = 0; i < m->n; ++i) {
		box_t grown = m->box[i];
		float te;
		for (int d = 0; d < DIM; ++d) grown.min[d] -= q.max[d] - q.min[d];
		if (tu_ray_hit(q.min, dir, tmax, &grown, &te)) tu_push(&want, tu_key(m->handle[i]));
	}
	expect(rd, same_set(&got, &want), "box cast");

	// Planes: a half-space through the query's corner, the most positive
	// vertex rule of docs/QUERIES.md.
	TU(plane) pl;
	float s = 0;
	for (int d = 0; d < DIM; ++d) {
		pl.normal[d] = tu_float(r, -1, 1);
		s = d == 0 ? pl.normal[0] * q.min[0] : s + pl.normal[d] * q.min[d];
	}
	pl.offset = -s;
	expect(rd, TU(tree_query_planes)(t, &pl, 1, ORT_MASK_ALL, tu_collect, &got) == ORT_OK, "planes status");
	for (int i = 0; i < m->n; ++i) {
		float v = 0;
		for (int d = 0; d < DIM; ++d) {
			float x = pl.normal[d] * (pl.normal[d] >= 0 ? m->box[i].max[d] : m->box[i].min[d]);
			v = d == 0 ? x : v + x;
		}
		if (v + pl.offset >= 0) tu_push(&want, tu_key(m->handle[i]));
	}
	expect(rd, same_set(&got, &want), "planes");

	// Nearest: the first K of the brute force order (distance, then id).
	enum { K = 8 };
	neighbor_t out[K];
	int n = -1;
	expect(rd, TU(tree_nearest)(t, q.min, K, INFINITY, ORT_MASK_ALL, out, &n) == ORT_OK, "nearest status");
	tu_near *all = malloc(sizeof *all * (size_t)m->n);
	for (int i = 0; i < m->n; ++i) all[i] = (tu_near){tu_dist2(q.min, &m->box[i]), m->handle[i].id};
	tu_near_first(all, (size_t)m->n, K);
	expect(rd, n == (m->n < K ? m->n : K), "nearest count");
	for (int k = 0; k < n && k < m->n; ++k)
		expect(rd, out[k].handle.id == all[k].id && out[k].distance == (float)sqrt(all[k].d2), "nearest");
	free(all);

	// A batch of two boxes: rows equal the single queries.
	box_t qs[2] = {q, m->box[tu_int(r, 0, m->n - 1)]};
	ort_handle rows[2 * ITEMS];
	int offsets[3], total;
	expect(rd, TU(tree_query_boxes)(t, qs, 2, ORT_MASK_ALL, rows, 2 * ITEMS, offsets, &total) == ORT_OK, "batch status");
	for (int row = 0; row < 2; ++row) {
		for (int k = offsets[row]; k < offsets[row + 1]; ++k) tu_push(&got, tu_key(rows[k]));
		for (int i = 0; i < m->n; ++i)
			if (tu_overlap(&m->box[i], &qs[row])) tu_push(&want, tu_key(m->handle[i]));
		expect(rd, same_set(&got, &want), "batch");
	}
}

static void *reader_main(void *arg)
{
	reader *rd = arg;
	tu_rng r = tu_rng_make(rd->seed);
	pthread_barrier_wait(rd->start);
	for (int round = 0; round < rd->rounds; ++round) reader_round(rd, &r);
	return NULL;
}

/// Several threads query t at once; detach: first every item moves in one
/// move_many batch (the tree detaches, tree_detach.c), so the threads' first
/// queries race to attach it, one attaching and the others waiting; four
/// times, with fewer rounds each.
static void readers(ort_placement placement, bool detach)
{
	def_t def = TU(tree_default_def)();
	def.placement = placement;
	tree_t *t;
	assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
	model m;
	tu_model_init(&m, ITEMS);
	tu_rng r = tu_rng_make(5);
	for (int i = 0; i < ITEMS; ++i) {
		box_t b;
		random_query_box(&r, &b);
		for (int d = 0; d < DIM; ++d) b.max[d] = b.min[d] + (b.max[d] - b.min[d]) * (i % 7 == 0 ? 1.0f : 0.2f);
		ort_handle h;
		assert_int_equal(TU(tree_insert)(t, b, NULL, &h), ORT_OK);
		tu_model_add(&m, h, b);
	}
	tu_check_valid(t);
	for (int epoch = 0; epoch < (detach ? 4 : 1); ++epoch) {
		if (detach) {
			for (int i = 0; i < m.n; ++i) {
				float step = tu_int(&r, 0, 9) == 0 ? 60.0f : 1.0f; // a tenth re-home
				for (int d = 0; d < DIM; ++d) {
					float v = tu_float(&r, -step, step);
					m.box[i].min[d] += v;
					m.box[i].max[d] += v;
				}
			}
			assert_int_equal(TU(tree_move_many)(t, m.handle, m.box, m.n), ORT_OK);
		}
		pthread_barrier_t start;
		assert_int_equal(pthread_barrier_init(&start, NULL, THREADS), 0);
		pthread_t threads[THREADS];
		reader rd[THREADS];
		for (int i = 0; i < THREADS; ++i) {
			rd[i] = (reader){t, &m, &start, 100u + (uint64_t)(i + THREADS * epoch), 0, NULL, tu_shrink() >= 8 ? 30 : detach ? ROUNDS / 4 : ROUNDS};
			assert_int_equal(pthread_create(&threads[i], NULL, reader_main, &rd[i]), 0);
		}
		for (int i = 0; i < THREADS; ++i) assert_int_equal(pthread_join(threads[i], NULL), 0);
		pthread_barrier_destroy(&start);
		for (int i = 0; i < THREADS; ++i)
			if (rd[i].mismatches)
				fail_msg("%s%s: reader %d: %d mismatches, first in %s", ort_placement_string(placement),
				         detach ? ", detached" : "", i, rd[i].mismatches, rd[i].first);
		tu_check_valid(t);
	}
	tu_model_free(&m);
	TU(tree_destroy)(t);
}

// ---- the packed tree's pair finder, from several threads at once ----------------------

/// What a call reported: how many pairs, and a sum that depends on their order.
typedef struct pk_tally {
	uint64_t n, sum;
} pk_tally;

static bool pk_tally_pair(void *ctx, uint32_t a, uint32_t b)
{
	pk_tally *t = ctx;
	t->n++;
	t->sum = t->sum * 1000003u + ((uint64_t)a << 32 | b);
	return true;
}

typedef struct pk_reader {
	const TU(packed) * p;
	pthread_barrier_t *start;
	pk_tally want;
	int mismatches;
} pk_reader;

static void *pk_reader_main(void *arg)
{
	pk_reader *rd = arg;
	pthread_barrier_wait(rd->start);
	for (int round = 0; round < 20; ++round) {
		pk_tally got = {0, 0};
		if (TU(packed_find_pairs)(rd->p, pk_tally_pair, &got) != ORT_OK || got.n != rd->want.n ||
		    got.sum != rd->want.sum)
			rd->mismatches++;
	}
	return NULL;
}

/// find_pairs keeps a sweep's keys in the tree, held by one call at a time:
/// calls from several threads (the root of this tree owns strips it sweeps)
/// must each find the serial sequence, race-free.
static void test_packed_pairs(void **s)
{
	(void)s;
	enum { N = 1500, STRIPS = 120 };
	box_t *boxes = malloc(sizeof *boxes * (N + STRIPS));
	tu_rng r = tu_rng_make(9);
	for (int i = 0; i < N + STRIPS; ++i) {
		for (int d = 0; d < DIM; ++d) {
			boxes[i].min[d] = tu_float(&r, 0.0f, 1000.0f);
			boxes[i].max[d] = boxes[i].min[d] + tu_float(&r, 0.0f, 8.0f);
		}
		if (i >= N) { // across the whole scene, thin in y
			boxes[i].min[0] = 0.0f;
			boxes[i].max[0] = 1008.0f;
			boxes[i].max[1] = boxes[i].min[1];
		}
	}
	TU(packed_def) def = TU(packed_default_def)();
	def.bucket_size = 64;
	TU(packed) * p;
	assert_int_equal(TU(packed_create)(&def, &p), ORT_OK);
	assert_int_equal(TU(packed_build)(p, boxes, N + STRIPS), ORT_OK);
	ort_tree_stats before, after;
	TU(packed_get_stats)(p, &before);
	pk_tally want = {0, 0};
	assert_int_equal(TU(packed_find_pairs)(p, pk_tally_pair, &want), ORT_OK);
	TU(packed_get_stats)(p, &after);
	assert_true(after.bytes > before.bytes); // it swept, and kept the keys
	pthread_barrier_t start;
	assert_int_equal(pthread_barrier_init(&start, NULL, THREADS), 0);
	pthread_t threads[THREADS];
	pk_reader rd[THREADS];
	for (int i = 0; i < THREADS; ++i) {
		rd[i] = (pk_reader){p, &start, want, 0};
		assert_int_equal(pthread_create(&threads[i], NULL, pk_reader_main, &rd[i]), 0);
	}
	for (int i = 0; i < THREADS; ++i) assert_int_equal(pthread_join(threads[i], NULL), 0);
	pthread_barrier_destroy(&start);
	for (int i = 0; i < THREADS; ++i)
		if (rd[i].mismatches) fail_msg("packed reader %d: %d calls differ from the serial one", i, rd[i].mismatches);
	TU(packed_destroy)(p);
	free(boxes);
}

static void test_loose(void **s) { (void)s, readers(ORT_PLACEMENT_LOOSE, false); }
static void test_tight(void **s) { (void)s, readers(ORT_PLACEMENT_TIGHT, false); }
static void test_leaves(void **s) { (void)s, readers(ORT_PLACEMENT_LEAVES, false); }
static void test_detached(void **s)
{
	(void)s;
	for (int p = 0; p < ORT_PLACEMENT_COUNT; ++p) readers((ort_placement)p, true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_loose),
	    cmocka_unit_test(test_tight),
	    cmocka_unit_test(test_leaves),
	    cmocka_unit_test(test_detached),
	    cmocka_unit_test(test_packed_pairs),
	};
	return cmocka_run_group_tests_name(TU_GROUP("threads"), tests, NULL, NULL);
}

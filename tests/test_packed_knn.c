// test_packed_knn.c: the packed tree's batched k nearest (ortN_packed_nearest_batch)
// against brute force, for one dimension (compiled twice: TEST_DIM=2 and 3).
// Covered:
// - every scene kind of packed_scene.h (duplicates, specks, far and huge
//   boxes, coordinates at the limit, flat scenes...), sizes 0 to 1000;
// - points that lie on box corners and faces, at centres, repeated, moved by
//   one ulp, far outside and at -FLT_MAX, in an order that jumps about (so
//   the bound each search inherits is often far too small or too large);
// - k from 1 past the count (and past the 64 the stack heap holds), max
//   distances infinite, small and 0, with and without an id left out per
//   point (the point's own item, another, none);
// - each row equal to brute force and, with nothing left out, to
//   ortN_packed_nearest for that point alone; the same rows with two workers;
// - bad arguments and a refused allocation change nothing.
#include <float.h>

#include "packed_scene.h"

static const int sizes[] = {0, 1, 2, 17, 300, 1000};
enum { MAXK = 4 };
static const int kvals[MAXK] = {1, 3, 8, 70}; ///< and the count + 2, below

/// What brute force ranks for one point: every item not left out, by
/// (distance as reported, id).
typedef struct ranked {
	near_item *v;
	int n;
} ranked;

static void rank_point(const scene *s, const float p[DIM], uint32_t skip, ranked *out)
{
	out->v = malloc(sizeof *out->v * (size_t)(s->n ? s->n : 1));
	out->n = 0;
	for (int i = 0; i < s->n; ++i) {
		if ((uint32_t)i == skip) continue;
		double d2 = tu_dist2(p, &s->box[i]);
		out->v[out->n++] = (near_item){d2, (float)sqrt(d2), (uint32_t)i};
	}
	tu_sort(out->v, (size_t)out->n, sizeof *out->v, cmp_near);
}

/// m query points for scene s, with the item each was made from (UINT32_MAX: none).
static void make_points(const scene *s, tu_rng *r, int m, float (*pts)[DIM], uint32_t *from)
{
	for (int i = 0; i < m; ++i) {
		int mode = tu_int(r, 0, 7);
		if (!s->n && (mode < 2 || mode == 5)) mode = 2;
		if (i == 0 && mode >= 4 && mode != 6) mode = 2;
		float *p = pts[i];
		from[i] = UINT32_MAX;
		switch (mode) {
		case 0: // a corner of an item
		case 1: // a point on a face of an item (one axis on the face, the others inside)
		case 5: { // the centre of an item
			uint32_t id = (uint32_t)tu_int(r, 0, s->n - 1);
			const box_t *b = &s->box[id];
			int face = tu_int(r, 0, DIM - 1);
			for (int d = 0; d < DIM; ++d) {
				bool hi = tu_int(r, 0, 1);
				if (mode == 5) p[d] = b->min[d] * 0.5f + b->max[d] * 0.5f;
				else if (mode == 0 || d == face) p[d] = hi ? b->max[d] : b->min[d];
				else p[d] = fminf(b->max[d], fmaxf(b->min[d], tu_float(r, b->min[d], b->max[d])));
			}
			from[i] = id;
			break;
		}
		case 2: world_point(s, r, p, false); break;
		case 3: world_point(s, r, p, true); break;
		case 4: // the previous point again, or one ulp from it
			memcpy(p, pts[i - 1], sizeof(float) * DIM);
			from[i] = from[i - 1];
			if (tu_int(r, 0, 1)) p[0] = nextafterf(p[0], INFINITY);
			break;
		default: // far below everything on one axis
			world_point(s, r, p, false);
			p[tu_int(r, 0, DIM - 1)] = tu_int(r, 0, 1) ? -FLT_MAX : -1e6f;
			break;
		}
	}
}

static void expect_row(const scene *s, int i, const float p[DIM], const ranked *want, int k, float maxd,
                       const ort_id_neighbor *row, int found)
{
	int w = 0;
	for (int j = 0; j < want->n && w < k; ++j) {
		const near_item *it = &want->v[j];
		if (!(isinf(maxd) || it->d2 <= (double)maxd * maxd)) continue;
		if (row[w].id != it->id || row[w].distance != it->dist) {
			print_floats("point", p, DIM);
			print_box(s, row[w].id);
			print_box(s, it->id);
			TU_FAIL("point %d, k %d, max_distance %g: #%d is id %u at %.9g, brute force id %u at %.9g\n", i, k,
			        (double)maxd, w, row[w].id, (double)row[w].distance, it->id, (double)it->dist);
		}
		w++;
	}
	if (found != w) TU_FAIL("point %d, k %d, max_distance %g: %d found, brute force %d\n", i, k, (double)maxd, found, w);
	for (int j = w; j < k; ++j)
		if (row[j].id != UINT32_MAX || !isinf(row[j].distance))
			TU_FAIL("point %d, k %d: slot %d past the answer is id %u at %g\n", i, k, j, row[j].id,
			        (double)row[j].distance);
}

/// One scene: every k, limit and exclusion against brute force, serial and
/// with two workers.
static void check_scene(const scene *s, ort_tasks *tasks, uint64_t seed)
{
	tu_rng r = tu_rng_make(seed);
	// Big scenes take fewer points; the small ones keep enough for two jobs.
	int m = s->n > 300 ? tu_size(200, 40) : 400;
	float(*pts)[DIM] = malloc(sizeof *pts * (size_t)m);
	uint32_t *from = malloc(sizeof *from * (size_t)m), *skip = malloc(sizeof *skip * (size_t)m);
	make_points(s, &r, m, pts, from);
	for (int i = 0; i < m; ++i) {
		int how = tu_int(&r, 0, 2);
		skip[i] = how == 0 ? from[i] : how == 1 && s->n ? (uint32_t)tu_int(&r, 0, s->n - 1) : UINT32_MAX;
	}
	ranked *plain = malloc(sizeof *plain * (size_t)m), *left = malloc(sizeof *left * (size_t)m);
	for (int i = 0; i < m; ++i) {
		rank_point(s, pts[i], UINT32_MAX, &plain[i]);
		rank_point(s, pts[i], skip[i], &left[i]);
	}
	pdef_t def = TU(packed_default_def)();
	packed_t *t = NULL;
	EXPECT(TU(packed_create)(&def, &t), ORT_OK);
	EXPECT(TU(packed_build)(t, s->box, s->n), ORT_OK);
	const float limits[] = {INFINITY, world_span(s) * 0.01f, 0.0f};
	int kmost = s->n + 2 > kvals[MAXK - 1] ? s->n + 2 : kvals[MAXK - 1];
	ort_id_neighbor *out = malloc(sizeof *out * (size_t)m * (size_t)kmost);
	ort_id_neighbor *again = malloc(sizeof *again * (size_t)m * (size_t)kmost);
	ort_id_neighbor *one = malloc(sizeof *one * (size_t)kmost);
	int *found = malloc(sizeof *found * (size_t)m), *found2 = malloc(sizeof *found2 * (size_t)m);
	for (int ki = 0; ki <= MAXK; ++ki) {
		int k = ki < MAXK ? kvals[ki] : s->n + 2;
		for (int li = 0; li < 3; ++li) {
			for (int ex = 0; ex < 2; ++ex) {
				float maxd = limits[li];
				TU_CONTEXT("%s, k %d, max_distance %g, %s", s->name, k, (double)maxd, ex ? "exclude" : "no exclude");
				const uint32_t *exclude = ex ? skip : NULL;
				EXPECT(TU(packed_nearest_batch)(t, (const float(*)[DIM])pts, m, k, maxd, exclude, out, found), ORT_OK);
				for (int i = 0; i < m; ++i) {
					const ort_id_neighbor *row = out + (size_t)i * (size_t)k;
					expect_row(s, i, pts[i], ex ? &left[i] : &plain[i], k, maxd, row, found[i]);
					if (ex || i % 4) continue;
					// The same as the one-point search, every field.
					int n1 = -1;
					EXPECT(TU(packed_nearest)(t, pts[i], k, maxd, one, &n1), ORT_OK);
					if (n1 != found[i] || (n1 && memcmp(one, row, sizeof *one * (size_t)n1)))
						TU_FAIL("point %d: the batch's row differs from packed_nearest's\n", i);
				}
				// Two workers: the same rows, byte for byte.
				TU(packed_set_tasks)(t, tasks);
				EXPECT(TU(packed_nearest_batch)(t, (const float(*)[DIM])pts, m, k, maxd, exclude, again, found2),
				       ORT_OK);
				TU(packed_set_tasks)(t, NULL);
				if (memcmp(out, again, sizeof *out * (size_t)m * (size_t)k) || memcmp(found, found2, sizeof *found * (size_t)m))
					TU_FAIL("two workers: rows differ from one\n");
			}
		}
	}
	TU(packed_destroy)(t);
	for (int i = 0; i < m; ++i) {
		free(plain[i].v);
		free(left[i].v);
	}
	free(plain);
	free(left);
	free(out);
	free(again);
	free(one);
	free(found);
	free(found2);
	free(pts);
	free(from);
	free(skip);
}

static void test_kind(void **state)
{
	int kind = *(const int *)*state;
	ort_tasks_def td = ort_tasks_default_def();
	td.workers = 2;
	ort_tasks *tasks = NULL;
	EXPECT(ort_tasks_create(&td, &tasks), ORT_OK);
	for (size_t si = 0; si < sizeof sizes / sizeof *sizes; ++si) {
		scene s;
		uint64_t seed = 0x4B4E4E00u + (uint64_t)kind * 64 + si;
		scene_make(&s, kind, sizes[si], seed);
		check_scene(&s, tasks, seed * 7 + 1);
		scene_free(&s);
	}
	ort_tasks_destroy(tasks);
}

/// Piles in a world: four piles of identical boxes (300, 120, 40 and 9
/// copies; the build flags their leaves as ordered), nested groups round one
/// centre and random boxes around them, 1500 in all. Points in a pile find
/// more ties than k before anything else, with pile leaves still waiting on
/// the depth-first stack beside other subtrees (the hand-over to best-first
/// takes them), and k past the frontier's room; against brute force, each
/// row alone and in the batch, with max distances 0, small and infinite.
static void test_piles_in_world(void **state)
{
	(void)state;
	enum { N = 1500 };
	static const int pile[4] = {300, 120, 40, 9};
	box_t *b = malloc(sizeof *b * N);
	tu_rng r = tu_rng_make(0x9113);
	int i = 0;
	for (int p = 0; p < 4; ++p) {
		box_t one;
		for (int d = 0; d < DIM; ++d) set_axis(&one, d, 100.0f + 250.0f * (float)p, p == 3 ? 0.0f : 2.0f);
		for (int c = 0; c < pile[p]; ++c) b[i++] = one;
	}
	for (int g = 0; g < 12; ++g) // nested: sides 1..12 round the centre (500, ...)
		for (int d = 0; d < DIM; ++d) set_axis(&b[i + g], d, 500.0f - 0.5f * (float)(g + 1), (float)(g + 1));
	i += 12;
	for (; i < N; ++i) gen_random(&r, i, N, &b[i]);
	// Shuffled, so that a pile's ids are spread over the whole range.
	for (int k = N - 1; k > 0; --k) {
		int j = tu_int(&r, 0, k);
		box_t tmp = b[k];
		b[k] = b[j], b[j] = tmp;
	}
	ort_tasks_def td = ort_tasks_default_def();
	td.workers = 2;
	ort_tasks *tasks = NULL;
	EXPECT(ort_tasks_create(&td, &tasks), ORT_OK);
	scene s;
	scene_init(&s, "piles in a world", b, N, 0x9114);
	check_scene(&s, tasks, 0x9115);
	scene_free(&s);
	ort_tasks_destroy(tasks);
}

/// Bad arguments are refused and write nothing; so does a refused allocation.
static void test_bad_input(void **state)
{
	(void)state;
	tu_alloc a;
	memset(&a, 0, sizeof a);
	pdef_t def = TU(packed_default_def)();
	def.allocator = tu_allocator(&a);
	packed_t *t = NULL;
	EXPECT(TU(packed_create)(&def, &t), ORT_OK);
	box_t boxes[40];
	tu_rng r = tu_rng_make(99);
	for (int i = 0; i < 40; ++i) gen_random(&r, i, 40, &boxes[i]);
	EXPECT(TU(packed_build)(t, boxes, 40), ORT_OK);
	float pts[3][DIM] = {{0}};
	ort_id_neighbor out[3 * 2];
	int found[3] = {7, 7, 7};
	for (int i = 0; i < 6; ++i) out[i] = (ort_id_neighbor){12345, 1.0f};
	pts[2][DIM - 1] = NAN;
	TU_CONTEXT("bad input");
	EXPECT(TU(packed_nearest_batch)(t, (const float(*)[DIM])pts, 3, 2, INFINITY, NULL, out, found), ORT_ERROR_INVALID_BOX);
	pts[2][DIM - 1] = INFINITY;
	EXPECT(TU(packed_nearest_batch)(t, (const float(*)[DIM])pts, 3, 2, INFINITY, NULL, out, found), ORT_ERROR_INVALID_BOX);
	pts[2][DIM - 1] = 0.0f;
	EXPECT(TU(packed_nearest_batch)(t, (const float(*)[DIM])pts, 3, 2, -1.0f, NULL, out, found), ORT_ERROR_INVALID_BOX);
	EXPECT(TU(packed_nearest_batch)(t, (const float(*)[DIM])pts, 3, 2, NAN, NULL, out, found), ORT_ERROR_INVALID_BOX);
	EXPECT(TU(packed_nearest_batch)(t, (const float(*)[DIM])pts, 3, 0, INFINITY, NULL, out, found),
	       ORT_ERROR_INVALID_ARGUMENT);
	EXPECT(TU(packed_nearest_batch)(t, (const float(*)[DIM])pts, -1, 2, INFINITY, NULL, out, found),
	       ORT_ERROR_INVALID_ARGUMENT);
	EXPECT(TU(packed_nearest_batch)(t, NULL, 3, 2, INFINITY, NULL, out, found), ORT_ERROR_INVALID_ARGUMENT);
	EXPECT(TU(packed_nearest_batch)(NULL, (const float(*)[DIM])pts, 3, 2, INFINITY, NULL, out, found),
	       ORT_ERROR_INVALID_ARGUMENT);
	tu_alloc_fail_in(&a, 1, true);
	EXPECT(TU(packed_nearest_batch)(t, (const float(*)[DIM])pts, 3, 2, INFINITY, NULL, out, found),
	       ORT_ERROR_OUT_OF_MEMORY);
	tu_alloc_disarm(&a);
	for (int i = 0; i < 6; ++i)
		if (out[i].id != 12345 || out[i].distance != 1.0f) TU_FAIL("a refused call wrote row slot %d\n", i);
	for (int i = 0; i < 3; ++i)
		if (found[i] != 7) TU_FAIL("a refused call wrote found[%d]\n", i);
	// No points: nothing to do, and nothing is read.
	EXPECT(TU(packed_nearest_batch)(t, NULL, 0, 2, INFINITY, NULL, NULL, NULL), ORT_OK);
	EXPECT(TU(packed_nearest_batch)(t, (const float(*)[DIM])pts, 3, 2, INFINITY, NULL, out, found), ORT_OK);
	TU(packed_destroy)(t);
	if (a.live) TU_FAIL("%zu bytes still held\n", a.live);
}

int main(void)
{
	static int kind_ids[KINDS];
	struct CMUnitTest tests[2 + KINDS];
	tests[0] = (struct CMUnitTest)cmocka_unit_test(test_bad_input);
	tests[1] = (struct CMUnitTest)cmocka_unit_test(test_piles_in_world);
	for (int k = 0; k < KINDS; ++k) {
		kind_ids[k] = k;
		tests[2 + k] = (struct CMUnitTest){kinds[k].name, test_kind, NULL, NULL, &kind_ids[k]};
	}
	return cmocka_run_group_tests_name(TU_GROUP("packed_knn"), tests, NULL, NULL);
}

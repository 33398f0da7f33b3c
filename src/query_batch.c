// query_batch.c: batched queries — many boxes, points or rays in one call,
// their hits written as compact rows (offsets into one output array), with no
// callback and no allocation. Each row is one query of query.c or
// query_cast.c, run through the public function.
#include "tree_int.h"

typedef ORTHANT_NAME(ray_hit) ray_hit_t;

/// Hits of a batch: written while their position is below cap, always counted.
typedef struct batch {
	ort_handle *out;
	int64_t cap, n;
} batch;

static bool batch_put(void *ctx, ort_handle h, void *user)
{
	(void)user;
	batch *b = ctx;
	if (b->n < b->cap) b->out[b->n] = h;
	b->n++;
	return true;
}

/// Close row i at position n (offsets[i + 1] = n); false when n outgrows an int.
static bool batch_row(int *offsets, int i, int64_t n)
{
	offsets[i + 1] = n > INT32_MAX ? INT32_MAX : (int)n;
	return n <= INT32_MAX;
}

static ort_result batch_end(int64_t n, int64_t cap, int *total)
{
	*total = n > INT32_MAX ? INT32_MAX : (int)n;
	return n > cap ? ORT_ERROR_CAPACITY : ORT_OK;
}

static bool batch_args_ok(const tree_t *t, const void *queries, int nq, const void *out, int out_cap,
                          const int *offsets, const int *total)
{
	return t && nq >= 0 && (nq == 0 || queries) && out_cap >= 0 && (out_cap == 0 || out) && offsets && total;
}

/// Box rows when boxes is set, else point rows. Every query is checked first,
/// so an invalid one leaves out, offsets and *total untouched.
static ort_result batch_regions(const tree_t *t, const box_t *boxes, const float (*points)[DIM], int nq,
                                uint64_t mask, ort_handle *out, int out_cap, int *offsets, int *total)
{
	if (!batch_args_ok(t, boxes ? (const void *)boxes : (const void *)points, nq, out, out_cap, offsets, total))
		return ORT_ERROR_INVALID_ARGUMENT;
	for (int i = 0; i < nq; ++i) {
		if (!boxes) {
			if (point_check(points[i]) != ORT_OK) return ORT_ERROR_INVALID_BOX;
			continue;
		}
		for (int d = 0; d < DIM; ++d)
			if (isnan(boxes[i].min[d]) || isnan(boxes[i].max[d]) || !(boxes[i].min[d] <= boxes[i].max[d]))
				return ORT_ERROR_INVALID_BOX;
	}
	batch b = {out, out_cap, 0};
	offsets[0] = 0;
	for (int i = 0; i < nq; ++i) {
		ort_result r = boxes ? ORTHANT_NAME(tree_query_box)(t, boxes[i], mask, batch_put, &b)
		                     : ORTHANT_NAME(tree_query_point)(t, points[i], mask, batch_put, &b);
		if (r != ORT_OK) return r;
		if (!batch_row(offsets, i, b.n)) return ORT_ERROR_CAPACITY;
	}
	return batch_end(b.n, out_cap, total);
}

ort_result ORTHANT_NAME(tree_query_boxes)(const tree_t *t, const box_t *queries, int nq, uint64_t mask,
                                          ort_handle *out, int out_cap, int *offsets, int *total)
{
	return batch_regions(t, queries, NULL, nq, mask, out, out_cap, offsets, total);
}

ort_result ORTHANT_NAME(tree_query_points)(const tree_t *t, const float (*points)[DIM], int np, uint64_t mask,
                                           ort_handle *out, int out_cap, int *offsets, int *total)
{
	return batch_regions(t, NULL, points, np, mask, out, out_cap, offsets, total);
}

ort_result ORTHANT_NAME(tree_query_rays)(const tree_t *t, const float (*origins)[DIM], const float (*dirs)[DIM],
                                         const float *max_t, int nr, uint64_t mask, ray_hit_t *out, int out_cap,
                                         int *offsets, int *total)
{
	if (!batch_args_ok(t, origins, nr, out, out_cap, offsets, total) || (nr > 0 && (!dirs || !max_t)))
		return ORT_ERROR_INVALID_ARGUMENT;
	for (int i = 0; i < nr; ++i) {
		ort_result r = ray_args_check(origins[i], dirs[i], max_t[i]);
		if (r != ORT_OK) return r;
	}
	int64_t n = 0;
	offsets[0] = 0;
	for (int i = 0; i < nr; ++i) {
		int64_t room = out_cap > n ? out_cap - n : 0;
		int cap = room > INT32_MAX ? INT32_MAX : (int)room, count;
		ort_result r = ORTHANT_NAME(tree_ray_all)(t, origins[i], dirs[i], max_t[i], mask, cap ? out + n : NULL, cap, &count);
		if (r != ORT_OK) return r;
		n += count;
		if (!batch_row(offsets, i, n)) return ORT_ERROR_CAPACITY;
	}
	return batch_end(n, out_cap, total);
}

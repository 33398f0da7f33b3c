// query_batch.c: batched queries — many boxes, points or rays in one call,
// their hits written as compact rows (offsets into one output array), with no
// callback and no allocation. Each row is one query of query.c or
// query_cast.c, run through the public function.
//
// With tasks (task.h) the rows are cut into jobs of consecutive rows (by the
// number of rows alone); each job writes its rows' hits into its own buffer
// and each row's count into offsets[i + 1]; the calling thread then turns the
// counts into offsets and copies the buffers into out in row order, as the
// serial loop would have written them.
#include "task_int.h"
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

// ---- in jobs ---------------------------------------------------------------------

/// What the jobs of one batch share.
typedef struct batch_jobs {
	const tree_t *t;
	const box_t *boxes;
	const float (*points)[DIM];
	const float (*dirs)[DIM];
	const float *max_t;
	uint64_t mask;
	int nq, rows; ///< queries, rows per job
	int *offsets;
	atomic_int failed; ///< the first error a query returned (0: none)
} batch_jobs;

static bool batch_job_put(void *ctx, ort_handle h, void *user)
{
	(void)user;
	tk_put(ctx, &h, sizeof h);
	return true;
}

static void batch_fail(batch_jobs *b, ort_result r)
{
	int none = 0;
	if (r != ORT_OK) atomic_compare_exchange_strong(&b->failed, &none, (int)r);
}

/// Rows [job * rows, ...) of a box, point or ray batch into out; row i's count into offsets[i + 1].
static void batch_job(void *ctx, int job, tk_out *out)
{
	batch_jobs *b = ctx;
	int begin = job * b->rows, end = b->nq - begin > b->rows ? begin + b->rows : b->nq;
	for (int i = begin; i < end; ++i) {
		size_t before = out->used;
		ort_result r;
		if (b->dirs) {
			size_t room = out->used < out->cap ? (out->cap - out->used) / sizeof(ray_hit_t) : 0;
			int cap = room > INT32_MAX ? INT32_MAX : (int)room, count = 0;
			r = ORTHANT_NAME(tree_ray_all)(b->t, b->points[i], b->dirs[i], b->max_t[i], b->mask,
			                               cap ? (ray_hit_t *)(void *)(out->data + out->used) : NULL, cap, &count);
			out->used += (size_t)count * sizeof(ray_hit_t);
			b->offsets[i + 1] = count;
		} else {
			r = b->boxes ? ORTHANT_NAME(tree_query_box)(b->t, b->boxes[i], b->mask, batch_job_put, out)
			             : ORTHANT_NAME(tree_query_point)(b->t, b->points[i], b->mask, batch_job_put, out);
			size_t n = (out->used - before) / sizeof(ort_handle);
			b->offsets[i + 1] = n > INT32_MAX ? INT32_MAX : (int)n;
		}
		batch_fail(b, r);
	}
}

/// A batch of nq rows through tasks: run the jobs, then lay their rows into
/// out (records of size `rec`) and offsets as the serial loop would.
static ort_result batch_in_jobs(ort_tasks *tasks, batch_jobs *b, void *out, size_t rec, int out_cap, int *total)
{
	b->rows = b->nq / TK_JOBS_TARGET < 16 ? 16 : b->nq / TK_JOBS_TARGET;
	atomic_init(&b->failed, 0);
	int jobs = (b->nq + b->rows - 1) / b->rows;
	ort_result r = ort_tk_run(tasks, jobs, 1, batch_job, b);
	if (r == ORT_OK) r = (ort_result)atomic_load(&b->failed);
	if (r != ORT_OK) return r;
	int64_t n = 0;
	b->offsets[0] = 0;
	for (int j = 0; j < jobs; ++j) {
		const unsigned char *src = ort_tk_output(tasks, j)->data;
		int begin = j * b->rows, end = b->nq - begin > b->rows ? begin + b->rows : b->nq;
		for (int i = begin; i < end; ++i) {
			int64_t count = b->offsets[i + 1], fit = out_cap > n ? out_cap - n : 0;
			if (fit > count) fit = count;
			if (fit) memcpy((char *)out + (size_t)n * rec, src, (size_t)fit * rec);
			src += (size_t)count * rec;
			n += count;
			if (!batch_row(b->offsets, i, n)) return ORT_ERROR_CAPACITY;
		}
	}
	return batch_end(n, out_cap, total);
}

/// Box rows when boxes is set, else point rows. Every query is checked first,
/// so an invalid one leaves out, offsets and *total untouched.
static ort_result batch_regions(const tree_t *t, const box_t *boxes, const float (*points)[DIM], int nq,
                                uint64_t mask, ort_handle *out, int out_cap, int *offsets, int *total)
{
	if (!batch_args_ok(t, boxes ? (const void *)boxes : (const void *)points, nq, out, out_cap, offsets, total))
		return ORT_ERROR_INVALID_ARGUMENT;
	ort_result attached = detached_read(t);
	if (attached != ORT_OK) return attached;
	for (int i = 0; i < nq; ++i) {
		if (!boxes) {
			if (point_check(points[i]) != ORT_OK) return ORT_ERROR_INVALID_BOX;
			continue;
		}
		for (int d = 0; d < DIM; ++d)
			if (isnan(boxes[i].min[d]) || isnan(boxes[i].max[d]) || !(boxes[i].min[d] <= boxes[i].max[d]))
				return ORT_ERROR_INVALID_BOX;
	}
	ort_tasks *tasks = t->def.tasks;
	if (nq > 16 && ort_tk_acquire(tasks)) {
		batch_jobs bj = {.t = t, .boxes = boxes, .points = points, .mask = mask, .nq = nq, .offsets = offsets};
		ort_result r = batch_in_jobs(tasks, &bj, out, sizeof *out, out_cap, total);
		ort_tk_release(tasks);
		return r;
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
	ort_result attached = detached_read(t);
	if (attached != ORT_OK) return attached;
	for (int i = 0; i < nr; ++i) {
		ort_result r = ray_args_check(origins[i], dirs[i], max_t[i]);
		if (r != ORT_OK) return r;
	}
	ort_tasks *tasks = t->def.tasks;
	if (nr > 16 && ort_tk_acquire(tasks)) {
		batch_jobs bj = {.t = t, .points = origins, .dirs = dirs, .max_t = max_t, .mask = mask, .nq = nr, .offsets = offsets};
		ort_result r = batch_in_jobs(tasks, &bj, out, sizeof *out, out_cap, total);
		ort_tk_release(tasks);
		return r;
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

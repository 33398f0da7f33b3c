// packed_knn_batch.c: the k nearest items of many points in one call, on the
// packed tree (ortN_packed_nearest_batch). Each answer is the one
// ortN_packed_nearest gives for that point alone (with the excluded id left
// out); what the batch adds is speed, from two things:
//
// - Spatial order. The points are visited in the Morton order of their
//   positions on a grid over the tree's bounds (morton.h: a radix sort of
//   their keys, skipped when they already come in that order), so
//   consecutive searches walk the same blocks, still in cache.
// - A seeded bound. Distance to a box is 1-Lipschitz in the point, so the k-th
//   distance of the previous point plus the distance between the two points
//   bounds this point's k-th distance. The search starts with that bound (a
//   little wider, for rounding) instead of infinity, so it prunes from its
//   first block instead of descending into the nearest-looking subtree and
//   widening from there. Whether the bound was wide enough is then checked
//   exactly: everything the search did not see lies beyond the bound, and if
//   the k-th result ranks before anything that far away the answer is
//   complete; otherwise (a bound too tight, or fewer than k found within it)
//   the point is searched again without it. So the bound changes the work
//   alone, never a result.
//
// Each search is packed_nearest's own (packed_query.c pk_knn_search), with
// the bound as its limit and the excluded id skipped.
//
// With tasks (task.h) the ordered points are cut into jobs of consecutive
// points (by the number of points alone); each job writes its points' rows of
// the output, which are the same whoever runs them, so the output does not
// depend on the workers.
#include <float.h>

#include "knn_heap.h"
#include "morton.h"
#include "packed_int.h"
#include "sweep.h" // WORK_TESTS: the counting build's box tests
#include "task_int.h"

/// The heap of one search kept on the stack up to this k; larger k borrow it
/// from the call's scratch.
#define KB_LOCAL_K 64
/// Points per job: at least this many, so each job's first bound (unseeded)
/// is amortised over many seeded ones.
#define KB_JOB_MIN 256

/// What the jobs of one batch share.
typedef struct kb_batch {
	const packed_t *p;
	const float (*points)[DIM];
	const uint32_t *exclude;
	const uint32_t *order; ///< the points in visiting order
	int count, k, kk;      ///< points; k asked for; kk = min(k, items)
	double lim_up; ///< squared max_distance, the next double up: the first that fails
	knn_best *heaps;       ///< kk per job when kk > KB_LOCAL_K, else NULL
	int per_job;
	ort_id_neighbor *out;
	int *found;
} kb_batch;

static void kb_job(void *ctx, int job, tk_out *unused)
{
	(void)unused;
	const kb_batch *kb = ctx;
	knn_best local[KB_LOCAL_K];
	knn_best *best = kb->heaps ? kb->heaps + (size_t)job * (size_t)kb->kk : local;
	int begin = job * kb->per_job, end = kb->count - begin > kb->per_job ? begin + kb->per_job : kb->count;
	float prev[DIM];
	double prev_k = INFINITY; ///< the previous point's k-th distance (INFINITY: no bound from it)
	for (int t = begin; t < end; ++t) {
		uint32_t i = kb->order[t];
		const float *pt = kb->points[i];
		uint32_t skip = kb->exclude ? kb->exclude[i] : NIL;
		double bound2 = INFINITY;
		if (prev_k < INFINITY) {
			double move = 0.0;
			for (int d = 0; d < DIM; ++d) {
				double g = (double)pt[d] - prev[d];
				move += g * g;
			}
			// Widened past every rounding of the distances it comes from; the
			// check below makes the answer exact whatever this comes to.
			double b = (prev_k + sqrt(move)) * (1.0 + 0x1p-20) + 0x1p-140;
			bound2 = b * b;
		}
		int n;
		if (bound2 < kb->lim_up) {
			n = pk_knn_search(kb->p, pt, kb->kk, bound2, skip, best);
			// Complete when k were found and nothing at bound2 or beyond (all
			// the search did not see) ranks before the k-th.
			if (n < kb->kk || knn_beyond(best[0].dist) > bound2)
				n = pk_knn_search(kb->p, pt, kb->kk, kb->lim_up, skip, best);
		} else {
			n = pk_knn_search(kb->p, pt, kb->kk, kb->lim_up, skip, best);
		}
		knn_heap_sort(best, n);
		ort_id_neighbor *row = kb->out + (size_t)i * (size_t)kb->k;
		for (int j = 0; j < n; ++j) row[j] = (ort_id_neighbor){best[j].id, best[j].dist};
		for (int j = n; j < kb->k; ++j) row[j] = (ort_id_neighbor){NIL, INFINITY};
		if (kb->found) kb->found[i] = n;
		memcpy(prev, pt, sizeof prev);
		prev_k = n == kb->kk ? best[n - 1].dist : INFINITY;
	}
}

/// order[0..count) gets the points in the Morton order of their cells on
/// morton.h's point grid over the tree's bounds (points outside clamp to the
/// edge), equal cells in input order; keys and tmp are scratch of count
/// entries. Points that come in that order already (the Python package hands
/// them over so) are not sorted again.
static void kb_order(const packed_t *p, const float (*points)[DIM], int count, uint64_t *keys, uint64_t *tmp,
                     uint32_t *order)
{
	morton_grid g = morton_grid_make(p->bounds.min, p->bounds.max, DIM);
	bool sorted = true;
	for (int i = 0; i < count; ++i) {
		double x[DIM];
		for (int d = 0; d < DIM; ++d) x[d] = points[i][d];
		keys[i] = (uint64_t)morton_point_key(&g, x) << 32 | (uint32_t)i;
		if (i && keys[i] < keys[i - 1]) sorted = false;
	}
	if (!sorted) morton_sort(&keys, &tmp, (size_t)count);
	for (int i = 0; i < count; ++i) order[i] = (uint32_t)keys[i];
}

ort_result ORTHANT_NAME(packed_nearest_batch)(const packed_t *p, const float (*points)[DIM], int count, int k,
                                              float max_distance, const uint32_t *exclude, ort_id_neighbor *out,
                                              int *found)
{
	if (!p || count < 0 || k < 1 || (count > 0 && (!points || !out))) return ORT_ERROR_INVALID_ARGUMENT;
	if (isnan(max_distance) || max_distance < 0.0f) return ORT_ERROR_INVALID_BOX;
	for (int i = 0; i < count; ++i)
		if (point_check(points[i]) != ORT_OK) return ORT_ERROR_INVALID_BOX;
	if (count == 0) return ORT_OK;
	int kk = (uint32_t)k > p->count ? (int)p->count : k;
	if (kk == 0) { // an empty tree: every row missing
		for (size_t j = 0; j < (size_t)count * (size_t)k; ++j) out[j] = (ort_id_neighbor){NIL, INFINITY};
		if (found) memset(found, 0, (size_t)count * sizeof *found);
		return ORT_OK;
	}
	int per_job = count / TK_JOBS_TARGET < KB_JOB_MIN ? KB_JOB_MIN : count / TK_JOBS_TARGET;
	int jobs = (count + per_job - 1) / per_job;
	// Scratch: the keys and their sort buffer, the order, and the jobs' heaps
	// when they do not fit on the stack.
	size_t heaps = kk > KB_LOCAL_K ? (size_t)jobs * (size_t)kk * sizeof(knn_best) : 0;
	size_t bytes = (size_t)count * (2 * sizeof(uint64_t) + sizeof(uint32_t)) + heaps;
	unsigned char *scratch = allocator_alloc(&p->def.allocator, bytes);
	if (!scratch) return ORT_ERROR_OUT_OF_MEMORY;
	uint64_t *keys = (uint64_t *)(void *)scratch, *tmp = keys + count;
	knn_best *heap = heaps ? (knn_best *)(void *)(tmp + count) : NULL;
	uint32_t *order = (uint32_t *)(void *)(scratch + (size_t)count * 2 * sizeof(uint64_t) + heaps);
	pk_reading_begin(p);
	kb_order(p, points, count, keys, tmp, order);
	kb_batch kb = {
	    .p = p,
	    .points = points,
	    .exclude = exclude,
	    .order = order,
	    .count = count,
	    .k = k,
	    .kk = kk,
	    .lim_up = isinf(max_distance) ? INFINITY : nextafter((double)max_distance * max_distance, INFINITY),
	    .heaps = heap,
	    .per_job = per_job,
	    .out = out,
	    .found = found,
	};
	ort_tasks *tasks = p->def.tasks;
	if (jobs > 1 && ort_tk_acquire(tasks)) {
		ort_tk_for(tasks, jobs, kb_job, &kb);
		ort_tk_release(tasks);
	} else {
		for (int j = 0; j < jobs; ++j) kb_job(&kb, j, NULL);
	}
	pk_reading_end(p);
	allocator_free(&p->def.allocator, scratch, bytes);
	return ORT_OK;
}

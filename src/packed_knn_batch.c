// packed_knn_batch.c: the k nearest items of many points in one call, on the
// packed tree (ortN_packed_nearest_batch). Each answer is the one
// ortN_packed_nearest gives for that point alone (with the excluded id left
// out); what the batch adds is speed, from three things:
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
// - A lean loop. A block's lanes are measured at once over its axis-by-axis
//   arrays, in float (SSE), against a cut widened past float's rounding; the
//   boxes themselves by the distance every other query ranks by
//   (dist2_point_box, in double).
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

/// (next float up from dist)^2: knn_beyond without the library call.
/// dist is a reported distance: >= 0, possibly +inf.
static inline double kb_beyond(float dist)
{
	if (!(dist < INFINITY)) return INFINITY;
	uint32_t u;
	memcpy(&u, &dist, sizeof u);
	u += 1; // dist >= 0: the next representable float up
	float up;
	memcpy(&up, &u, sizeof up);
	double d = up;
	return d * d;
}

/// The least float >= v (v >= 0; +inf past FLT_MAX).
static inline float kb_float_up(double v)
{
	float f = (float)v;
	if ((double)f < v) {
		uint32_t u;
		memcpy(&u, &f, sizeof u);
		u += 1;
		memcpy(&f, &u, sizeof f);
	}
	return f;
}

/// A node's cut in float: a lane is kept while its float distance is at most
/// this. The float distance of a lane (a rounded difference per axis, squared
/// and summed: relative error under 2^-21, or under 2^-147 absolute where the
/// squares are subnormal) may come out above the exact one, so the cut is
/// widened past both; a lane kept that need not be costs work, never a result.
static inline float kb_node_cut(double cut) { return kb_float_up(cut * (1.0 + 0x1p-20) + 0x1p-140); }

/// Each lane's squared distance from pt, in float, all lanes at once:
/// per axis max(lo - x, x - hi, 0), squared, summed. Unused lanes (inverted
/// bounds) come out infinite.
static inline void kb_lanes_d2(const pblock *c, const float pt[DIM], float out[NCHILD])
{
#if defined(__SSE2__)
	for (int h = 0; h < NCHILD; h += 4) {
		__m128 acc = _mm_setzero_ps();
		for (int d = 0; d < DIM; ++d) {
			__m128 x = _mm_set1_ps(pt[d]);
			__m128 g = _mm_max_ps(_mm_sub_ps(_mm_loadu_ps(&c->lo[d][h]), x), _mm_sub_ps(x, _mm_loadu_ps(&c->hi[d][h])));
			g = _mm_max_ps(g, _mm_setzero_ps());
			acc = _mm_add_ps(acc, _mm_mul_ps(g, g));
		}
		_mm_storeu_ps(&out[h], acc);
	}
#else
	for (int l = 0; l < NCHILD; ++l) {
		float acc = 0.0f;
		for (int d = 0; d < DIM; ++d) {
			float g = c->lo[d][l] - pt[d], h = pt[d] - c->hi[d][l];
			g = g > h ? g : h;
			g = g > 0.0f ? g : 0.0f;
			acc += g * g;
		}
		out[l] = acc;
	}
#endif
}

/// dist2_point_box without branches (which side of a box a point lies on is
/// rarely predictable): the same differences in double, so the same value.
static inline double kb_dist2(const float pt[DIM], const box_t *b)
{
	double s = 0.0;
	for (int d = 0; d < DIM; ++d) {
		double lo = (double)b->min[d] - pt[d], hi = (double)pt[d] - b->max[d];
		double v = lo > hi ? lo : hi;
		v = v > 0.0 ? v : 0.0;
		s += v * v;
	}
	return s;
}

/// What a search lets in, from the k-th it holds.
///
/// A box enters when its d2 < cut (below lim_up, and before beyond once k are
/// held). A lane is dropped as packed_nearest drops it: when its distance
/// reaches the cut, or when k are held, it is no nearer than the k-th (every
/// box in it is reported at the k-th's distance or beyond) and its least id
/// is above the k-th's (an equal distance loses on the id: boxes that all
/// hold the point, or near-ties seen from afar, are parted by ids alone).
/// Lanes are measured in float, which may come out above or below the exact
/// distance (kb_node_cut): a float distance below `near` is below both
/// thresholds whatever its rounding, and one from `near` up to the widened
/// cut is measured again in double and asked exactly. Far from the point,
/// near-ties all fall in that band; without the second look every one of
/// them would be opened.
typedef struct kb_gate {
	double cut;
	float ncut;  ///< a lane above it is beyond the cut
	float near;  ///< a lane below it is let in (negative: none is)
	float dist;  ///< the k-th's reported distance (before k: +inf)
	uint32_t id; ///< the k-th's id (before k: none above it)
} kb_gate;

static inline void kb_gate_set(kb_gate *g, double lim_up, const knn_best *kth)
{
	double cut = lim_up;
	if (kth) {
		double beyond = kb_beyond(kth->dist);
		cut = beyond < lim_up ? beyond : lim_up;
	}
	g->cut = cut;
	g->ncut = kb_node_cut(cut);
	g->dist = kth ? kth->dist : INFINITY;
	g->id = kth ? kth->id : UINT32_MAX;
	// Below both the cut and kb_lane_out's tie_low, past float's rounding:
	// tie_low is dist^2 (1 - 2^-22), and cut at most (next float up from
	// dist)^2 <= dist^2 (1 + 2^-22), so a margin of 2^-17 clears both. A k-th
	// under FLT_MIN (tie_low 0) measures every lane again.
	g->near = kth && kth->dist < FLT_MIN ? -1.0f : (float)(cut * (1.0 - 0x1p-17) - 0x1p-139);
}

/// Whether lane l of block c, at float distance f from pt, holds nothing
/// that may enter.
static inline bool kb_lane_out(const kb_gate *g, const pblock *c, uint32_t l, float f, const float pt[DIM])
{
	if (!(f <= g->ncut)) return true;
	if (!(f >= g->near)) return false; // the common case, decided
	double d2 = pk_lane_d2(c, l, pt);
	if (!(d2 < g->cut)) return true;
	if (c->least[l] <= g->id) return false;
	// (float)sqrt(d2) >= dist needs sqrt(d2) within half an ulp below dist
	// (relative 2^-24 for normal floats): a cheap filter first, as in packed_nearest.
	double dist = g->dist, tie_low = dist >= FLT_MIN ? dist * dist * (1.0 - 0x1p-22) : 0.0;
	return d2 >= tie_low && (float)sqrt(d2) >= g->dist;
}

/// One search: the k (>= 1) nearest to pt with squared distance below
/// lim_up, skipping id skip (NIL: none), into the max-heap best; returns how
/// many were found. Boxes are measured exactly as packed_nearest measures
/// them (dist2_point_box's value, in double); lanes in float, then in double
/// where that decides (kb_gate). Lanes at one distance are visited in order
/// of least id, so that boxes parted by ids alone give up the least first.
static int kb_search(const packed_t *p, const float pt[DIM], int k, double lim_up, uint32_t skip, knn_best *best)
{
	const pblock *blocks = p->blocks;
	const box_t *boxes = p->boxes;
	int n = 0;
	kb_gate g;
	kb_gate_set(&g, lim_up, NULL);
	struct {
		uint32_t block;
		uint32_t lane;
		float d2;
	} stack[PK_STACK];
	int top = 0;
	float root[NCHILD];
	kb_lanes_d2(&blocks[0], pt, root);
	stack[top].block = 0;
	stack[top].lane = 0;
	stack[top++].d2 = root[0];
	while (top > 0) {
		--top;
		const pblock *b = &blocks[stack[top].block];
		uint32_t lane = stack[top].lane;
		// Asked again: the k-th may have been found since it was pushed.
		// Equal distances are still visited: they may hold a tie with a lower id.
		if (kb_lane_out(&g, b, lane, stack[top].d2, pt)) continue;
		double cut = g.cut; // in a register through the loop
		uint32_t e = b->first[lane], end = e + b->own[lane];
		bool by_id = b->ordered >> lane & 1u;
		for (; e < end; ++e) {
			// An ordered lane's ids ascend (packed_int.h: pblock.ordered): once
			// the k-th is at distance 0, nothing after one above its id can enter.
			if (by_id && p->ids[e] > g.id && g.dist == 0.0f) break;
			double d2 = kb_dist2(pt, &boxes[e]);
			if (!(d2 < cut) || p->ids[e] == skip) continue;
			if (knn_offer(best, &n, k, knn_make(d2, p->ids[e])) && n == k) {
				kb_gate_set(&g, lim_up, &best[0]);
				cut = g.cut;
			}
		}
		WORK_TESTS(e - b->first[lane]);
		uint32_t ci = b->child[lane];
		if (ci == NIL) continue;
		const pblock *c = &blocks[ci];
		float d2[NCHILD];
		WORK_TESTS(c->kids);
		kb_lanes_d2(c, pt, d2);
		// Push the lanes let in, farthest first (of equal distances the
		// greater least id first), so the nearest pops next.
		int first = top;
		for (uint32_t l = 0; l < c->kids; ++l) {
			if (kb_lane_out(&g, c, l, d2[l], pt)) continue;
			int j = top++;
			for (; j > first && (stack[j - 1].d2 < d2[l] || (stack[j - 1].d2 == d2[l] &&
			                                                   c->least[stack[j - 1].lane] < c->least[l]));
			     --j)
				stack[j] = stack[j - 1];
			stack[j].block = ci;
			stack[j].lane = l;
			stack[j].d2 = d2[l];
		}
		assert(top <= PK_STACK);
	}
	return n;
}

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
			n = kb_search(kb->p, pt, kb->kk, bound2, skip, best);
			// Complete when k were found and nothing at bound2 or beyond (all
			// the search did not see) ranks before the k-th.
			if (n < kb->kk || kb_beyond(best[0].dist) > bound2)
				n = kb_search(kb->p, pt, kb->kk, kb->lim_up, skip, best);
		} else {
			n = kb_search(kb->p, pt, kb->kk, kb->lim_up, skip, best);
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

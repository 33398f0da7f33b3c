// packed_query.c: the packed tree's queries — boxes, points, spheres, rays
// (near-first) and k nearest (best-first). They only read the tree, so any
// number of threads may query it at once while nobody builds it.
#include <float.h>

#include "knn_heap.h"
#include "packed_int.h"
#include "sweep.h" // WORK_TESTS: the counting build's box tests

// ---- region queries ----------------------------------------------------------

/// What a region query tests: a box or a sphere.
typedef struct pk_region {
	box_t box;
	float centre[DIM];
	double r2;
	bool sphere;
} pk_region;

static inline bool pk_region_meets(const pk_region *q, const box_t *b)
{
	if (!box_overlap(&q->box, b)) return false;
	return !q->sphere || dist2_point_box(q->centre, b) <= q->r2;
}

static void pk_query_walk(const packed_t *p, const pk_region *q, ort_id_fn *fn, void *ctx)
{
	const pblock *blocks = p->blocks;
	const box_t *boxes = p->boxes;
	uint32_t stack[PK_STACK];
	int top = 0;
	stack[top++] = 0;
	while (top > 0) {
		const pblock *b = &blocks[stack[--top]];
		WORK_TESTS(b->kids);
		unsigned m = pk_lanes_meeting(b, &q->box);
		while (m) {
			int k = pk_next_lane(&m);
			WORK_TESTS(b->own[k]);
			if (q->sphere) {
				box_t lb = pk_lane_box(b, k);
				if (dist2_point_box(q->centre, &lb) > q->r2) continue;
			}
			uint32_t i = b->first[k], e = i + b->own[k];
			if (!q->sphere) {
				// Whether a box meets the query is rarely predictable: each
				// test advances an index instead of taking a branch, and
				// only the hits (a predictable few) call back.
				while (i < e) {
					uint32_t hit[32], nh = 0, stop = e - i > 32 ? i + 32 : e;
					for (; i < stop; ++i) {
						hit[nh] = i;
						nh += pk_overlap(&q->box, &boxes[i]);
					}
					for (uint32_t h = 0; h < nh; ++h)
						if (!fn(ctx, p->ids[hit[h]])) return;
				}
			}
			for (; i < e; ++i)
				if (pk_region_meets(q, &boxes[i]) && !fn(ctx, p->ids[i])) return;
			if (b->child[k] != NIL) {
				__builtin_prefetch(&blocks[b->child[k]]);
				stack[top++] = b->child[k];
			}
		}
		assert(top <= PK_STACK);
	}
}

static ort_result pk_query(const packed_t *p, const pk_region *q, ort_id_fn *fn, void *ctx)
{
	if (p->block_count == 0) return ORT_OK;
	pk_reading_begin(p);
	pk_query_walk(p, q, fn, ctx);
	pk_reading_end(p);
	return ORT_OK;
}

ort_result ORTHANT_NAME(packed_query_box)(const packed_t *p, box_t box, ort_id_fn *fn, void *ctx)
{
	if (!p || !fn) return ORT_ERROR_INVALID_ARGUMENT;
	for (int d = 0; d < DIM; ++d)
		if (isnan(box.min[d]) || isnan(box.max[d]) || box.min[d] > box.max[d]) return ORT_ERROR_INVALID_BOX;
	pk_region q = {.box = box};
	return pk_query(p, &q, fn, ctx);
}

ort_result ORTHANT_NAME(packed_query_point)(const packed_t *p, const float point[DIM], ort_id_fn *fn, void *ctx)
{
	if (!p || !fn || !point) return ORT_ERROR_INVALID_ARGUMENT;
	if (point_check(point) != ORT_OK) return ORT_ERROR_INVALID_BOX;
	pk_region q;
	memset(&q, 0, sizeof q);
	memcpy(q.box.min, point, sizeof q.box.min);
	memcpy(q.box.max, point, sizeof q.box.max);
	return pk_query(p, &q, fn, ctx);
}

ort_result ORTHANT_NAME(packed_query_sphere)(const packed_t *p, const float centre[DIM], float radius,
                                             ort_id_fn *fn, void *ctx)
{
	if (!p || !fn || !centre) return ORT_ERROR_INVALID_ARGUMENT;
	if (point_check(centre) != ORT_OK || !isfinite(radius) || radius < 0.0f) return ORT_ERROR_INVALID_BOX;
	pk_region q;
	memset(&q, 0, sizeof q);
	// The sphere's box, holding whatever the distance test accepts, prunes first.
	for (int d = 0; d < DIM; ++d) q.centre[d] = centre[d];
	sphere_prune_box(centre, radius, &q.box);
	q.r2 = (double)radius * radius;
	q.sphere = true;
	return pk_query(p, &q, fn, ctx);
}

// ---- rays -----------------------------------------------------------------------

/// A node on a near-first stack: lane k of block b, entered at `at`
/// (a ray's t or a squared distance).
typedef struct pk_visit {
	uint32_t block;
	int lane;
	double at;
} pk_visit;

/// Push the lanes of block bi in mask m, farthest (largest at[k]) first, so
/// the nearest comes off the stack next; of equal ones, given least (the
/// block's least ids: nearest), the least id comes off first, so boxes that
/// only ids part (duplicates, boxes holding the point) give up the least first.
static inline int pk_push_near_first(pk_visit *stack, int top, uint32_t bi, const double *at, unsigned m,
                                     const uint32_t *least)
{
	pk_visit kids[NCHILD];
	int nk = 0;
	while (m) {
		int k = pk_next_lane(&m);
		int j = nk++;
		for (; j > 0 && (kids[j - 1].at < at[k] || (least && kids[j - 1].at == at[k] && least[kids[j - 1].lane] < least[k]));
		     --j)
			kids[j] = kids[j - 1];
		kids[j] = (pk_visit){bi, k, at[k]};
	}
	assert(top + nk <= PK_STACK);
	for (int j = 0; j < nk; ++j) stack[top++] = kids[j];
	return top;
}

static void pk_ray_walk(const packed_t *p, const float origin[DIM], const float dir[DIM], float max_t,
                        ort_id_ray_fn *fn, void *ctx)
{
	pk_visit stack[PK_STACK];
	int top = 0;
	float tmax = max_t;
	const pblock *blocks = p->blocks;
	double at[NCHILD];
	unsigned m = 0;
	float enter;
	box_t rb = pk_lane_box(&blocks[0], 0);
	if (ray_slab(origin, dir, tmax, rb.min, rb.max, &enter)) {
		at[0] = enter;
		m = 1;
	}
	top = pk_push_near_first(stack, top, 0, at, m, NULL);
	while (top > 0) {
		pk_visit v = stack[--top];
		if (v.at > tmax) continue;
		const pblock *b = &blocks[v.block];
		WORK_TESTS(b->own[v.lane]);
		for (uint32_t k = b->first[v.lane], e = k + b->own[v.lane]; k < e; ++k) {
			float te;
			if (!ray_slab(origin, dir, tmax, p->boxes[k].min, p->boxes[k].max, &te)) continue;
			float ret = fn(ctx, p->ids[k], te);
			if (ret < 0.0f || isnan(ret)) continue;
			if (ret == 0.0f) return;
			if (ret < tmax) tmax = ret;
		}
		uint32_t ci = b->child[v.lane];
		if (ci == NIL) continue;
		const pblock *c = &blocks[ci];
		WORK_TESTS(c->kids);
		m = 0;
		for (uint32_t k = 0; k < c->kids; ++k) {
			box_t cb = pk_lane_box(c, (int)k);
			if (!ray_slab(origin, dir, tmax, cb.min, cb.max, &enter)) continue;
			at[k] = enter;
			m |= 1u << k;
		}
		top = pk_push_near_first(stack, top, ci, at, m, NULL);
	}
}

ort_result ORTHANT_NAME(packed_ray_cast)(const packed_t *p, const float origin[DIM], const float dir[DIM],
                                         float max_t, ort_id_ray_fn *fn, void *ctx)
{
	if (!p || !fn) return ORT_ERROR_INVALID_ARGUMENT;
	ort_result r = ray_args_check(origin, dir, max_t);
	if (r != ORT_OK || p->block_count == 0) return r;
	pk_reading_begin(p);
	pk_ray_walk(p, origin, dir, max_t, fn, ctx);
	pk_reading_end(p);
	return ORT_OK;
}

typedef struct pk_first {
	uint32_t id;
	float t;
	bool hit;
} pk_first;

static float pk_first_cb(void *ctx, uint32_t id, float t)
{
	pk_first *f = ctx;
	if (!f->hit || t < f->t || (t == f->t && id < f->id)) {
		f->id = id;
		f->t = t;
		f->hit = true;
	}
	// Only hits as near or nearer matter now. A hit at 0 clips to the least
	// positive float instead, because 0 would stop the cast before a tie at 0
	// with a lower id is seen; nothing lies strictly between the two.
	return t > 0.0f ? t : FLT_TRUE_MIN;
}

bool ORTHANT_NAME(packed_ray_first)(const packed_t *p, const float origin[DIM], const float dir[DIM], float max_t,
                                    uint32_t *id, float *t)
{
	pk_first f = {0, INFINITY, false};
	if (ORTHANT_NAME(packed_ray_cast)(p, origin, dir, max_t, pk_first_cb, &f) != ORT_OK || !f.hit) return false;
	if (id) *id = f.id;
	if (t) *t = f.t;
	return true;
}

// ---- k nearest ----------------------------------------------------------------

ort_result ORTHANT_NAME(packed_nearest)(const packed_t *p, const float point[DIM], int k, float max_distance,
                                        ort_id_neighbor *out, int *found)
{
	if (found) *found = 0;
	if (!p || !point || !found || k < 0 || (k > 0 && !out)) return ORT_ERROR_INVALID_ARGUMENT;
	if (point_check(point) != ORT_OK || isnan(max_distance) || max_distance < 0.0f) return ORT_ERROR_INVALID_BOX;
	if ((uint32_t)k > p->count) k = (int)p->count;
	if (k == 0) return ORT_OK;
	double limit2 = isinf(max_distance) ? INFINITY : (double)max_distance * max_distance;
	knn_best local[64];
	knn_best *best = local;
	if (k > 64) {
		best = allocator_alloc(&p->def.allocator, (size_t)k * sizeof *best);
		if (!best) return ORT_ERROR_OUT_OF_MEMORY;
	}
	int n = 0;
	double beyond = INFINITY; ///< knn_beyond of the worst of k found: nothing that far can enter
	double tie_low = INFINITY; ///< below this no distance is reported as the k-th's: the id check is skipped
	uint32_t stop = UINT32_MAX; ///< with the k-th at distance 0 its id: no item with a greater id can enter
	pk_visit stack[PK_STACK];
	int top = 0;
	const pblock *blocks = p->blocks;
	double at[NCHILD];
	box_t rb = pk_lane_box(&blocks[0], 0);
	at[0] = dist2_point_box(point, &rb);
	top = pk_push_near_first(stack, top, 0, at, 1u, NULL);
	while (top > 0) {
		pk_visit v = stack[--top];
		// Equal distances are still visited: they may hold a tie with a lower
		// id, unless every id there is above the k-th's (all at distance 0
		// when the boxes hold the point: ids alone part them).
		if (v.at > limit2 || v.at >= beyond) continue;
		const pblock *b = &blocks[v.block];
		if (v.at >= tie_low && b->least[v.lane] > best[0].id && (float)sqrt(v.at) >= best[0].dist) continue;
		uint32_t e = b->first[v.lane], end = e + b->own[v.lane];
		for (; e < end; ++e) {
			// A lane's ids ascend (packed_int.h: pblock.own): once the k-th is at
			// distance 0, nothing after one above its id can enter.
			if (p->ids[e] > stop) break;
			double d2 = dist2_point_box(point, &p->boxes[e]);
			if (d2 > limit2 || d2 >= beyond) continue;
			knn_best c = knn_make(d2, p->ids[e]);
			if (n < k) {
				best[n] = c;
				knn_sift_up(best, n++);
			} else if (knn_before(&c, &best[0])) {
				best[0] = c;
				knn_sift_down(best, n, 0);
			}
			if (n == k) {
				beyond = knn_beyond(best[0].dist);
				// (float)sqrt(d2) >= dist needs sqrt(d2) within half an ulp
				// below dist (relative 2^-24 for normal floats): a cheap filter
				// before the exact test.
				double dist = best[0].dist;
				tie_low = dist >= FLT_MIN ? dist * dist * (1.0 - 0x1p-22) : 0.0;
				if (best[0].dist == 0.0f) stop = best[0].id;
			}
		}
		WORK_TESTS(e - b->first[v.lane]);
		uint32_t ci = b->child[v.lane];
		if (ci == NIL) continue;
		const pblock *c = &blocks[ci];
		WORK_TESTS(c->kids);
		unsigned m = 0;
		double worst = limit2;
		for (uint32_t l = 0; l < c->kids; ++l) {
			double d2 = 0.0;
			for (int d = 0; d < DIM; ++d) {
				double lo = c->lo[d][l], hi = c->hi[d][l], x = point[d];
				double gap = x < lo ? lo - x : x > hi ? x - hi : 0.0;
				d2 += gap * gap;
			}
			if (d2 > worst || d2 >= beyond) continue;
			if (d2 >= tie_low && c->least[l] > best[0].id && (float)sqrt(d2) >= best[0].dist) continue;
			at[l] = d2;
			m |= 1u << l;
		}
		top = pk_push_near_first(stack, top, ci, at, m, c->least);
	}
	knn_heap_sort(best, n); // the result order of ortN_tree_nearest: distance, then id
	for (int i = 0; i < n; ++i) out[i] = (ort_id_neighbor){best[i].id, best[i].dist};
	*found = n;
	if (best != local) allocator_free(&p->def.allocator, best, (size_t)k * sizeof *best);
	return ORT_OK;
}

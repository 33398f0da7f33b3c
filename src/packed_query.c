// packed_query.c: the packed tree's queries — boxes, points, spheres, rays
// (near-first) and k nearest (best-first). They only read the tree, so any
// number of threads may query it at once while nobody builds it.
#include <float.h>
#include <limits.h>

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
//
// One search serves ortN_packed_nearest and every point of
// ortN_packed_nearest_batch (pk_knn_search). Depth first, nearest child
// first (cheap: a small stack, no heap), until ties take over: boxes that
// all hold the point are parted by their ids alone, and crossing rods put a
// number of them that grows with n at distance 0 from a rod's corner,
// spread over a pile's leaves whose boxes mostly do not hold it. Depth
// first, each leaf at distance 0 was opened while its least id was below
// the k-th's, which stays high until the search has seen most of them: 2D
// rods tested 99, 186 and 351 boxes and lanes a search at 25k, 100k and
// 400k. So once more than PK_KNN_TIES ordered leaves (a pile's, where ties
// pile up: packed_int.h pblock.ordered) were searched for ties alone, the
// lanes not yet searched go to a best-first frontier ordered by (squared
// distance, least id), in a fixed array (KNN_LOCAL lanes: no allocation),
// and an ordered leaf there is scanned lazily: its ids ascend, and once its
// next id ranks after the frontier's top (the same distance, a lower least
// id) it goes back on the frontier keyed by that id. Lanes at one distance
// thus give up their boxes in id order, as one merged run, and the search
// stops at the k-th id (94, 137 and 213 at those sizes; best-first from the
// start read 77, 106, 179 but cost a uniform scene's search a third more
// instructions). The grid's leaves are not ordered (ordering them cost a
// uniform scene's build 14 % more): they never start the best-first search
// and are scanned whole. A frontier that fills up searches the lane it
// cannot take depth first on its own, so the answer never depends on the
// frontier's size. Depth first, a block's lanes are measured at once in
// float (SSE) and again in double only near the cut (pk_knn_bound); boxes
// and the frontier's lanes in double.

/// The state of one k nearest search.
typedef struct pk_knn {
	const packed_t *p;
	const float *point;
	double lim;     ///< a box enters only below this squared distance (the limit's next double up)
	double cut;     ///< the lesser of lim and knn_beyond of the worst of k found
	double tie_low; ///< below this no distance is reported as the k-th's: the id check is skipped
	float ncut;     ///< pk_node_cut(cut): a lane whose float distance is above it is beyond the cut
	float near;     ///< a lane whose float distance is below it is let in (negative: none is)
	uint32_t stop;  ///< with the k-th at distance 0 its id: no item with a greater id can enter
	uint32_t skip;  ///< an id never offered (NIL: none)
	knn_best *best; ///< the k best so far, a max-heap: best[0] the worst of them
	int n, k;
} pk_knn;

/// Whether a lane at squared distance at, of ids `least` or more, holds
/// nothing that may enter: beyond the limit or the k-th, or (k found) no
/// nearer than the k-th as reported with every id above the k-th's.
static inline bool pk_knn_tie_out(const pk_knn *s, double at, uint32_t least)
{
	// (float)sqrt(at) >= dist needs sqrt(at) within half an ulp below dist
	// (relative 2^-24 for normal floats): tie_low is a cheap filter before
	// the exact test.
	return at >= s->tie_low && least > s->best[0].id && (float)sqrt(at) >= s->best[0].dist;
}

static inline bool pk_knn_out(const pk_knn *s, double at, uint32_t least)
{
	return !(at < s->cut) || pk_knn_tie_out(s, at, least);
}

/// The least float >= v (v >= 0; +inf past FLT_MAX).
static inline float pk_float_up(double v)
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
static inline float pk_node_cut(double cut) { return pk_float_up(cut * (1.0 + 0x1p-20) + 0x1p-140); }

/// Each lane's squared distance from pt, in float, all lanes at once:
/// per axis max(lo - x, x - hi, 0), squared, summed. Unused lanes (inverted
/// bounds) come out infinite.
static inline void pk_lanes_d2f(const pblock *c, const float pt[DIM], float out[NCHILD])
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

/// The bounds from the k-th held, or (none yet) the limit's.
///
/// Lanes are measured in float (pk_lanes_d2f), which may come out above or
/// below the exact distance (pk_node_cut): a float distance below `near` is
/// below both cut and tie_low whatever its rounding, and one from `near` up
/// to ncut is measured again in double and asked exactly (pk_knn_lane_out).
/// Far from the point, near-ties all fall in that band; without the second
/// look every one of them would be opened.
static inline void pk_knn_bound(pk_knn *s)
{
	double cut = s->lim;
	if (s->n == s->k) {
		float dist = s->best[0].dist;
		double beyond = knn_beyond(dist);
		cut = beyond < cut ? beyond : cut;
		s->tie_low = dist >= FLT_MIN ? (double)dist * dist * (1.0 - 0x1p-22) : 0.0;
		if (dist == 0.0f) s->stop = s->best[0].id;
	}
	s->cut = cut;
	s->ncut = pk_node_cut(cut);
	// tie_low is dist^2 (1 - 2^-22), and cut at most (next float up from
	// dist)^2 <= dist^2 (1 + 2^-22), so a margin of 2^-17 below the cut clears
	// both. A k-th under FLT_MIN (tie_low 0) measures every lane again.
	s->near = s->n == s->k && s->best[0].dist < FLT_MIN ? -1.0f : (float)(cut * (1.0 - 0x1p-17) - 0x1p-139);
}

/// Whether lane l of block c, at float distance f from the point, holds
/// nothing that may enter (pk_knn_out, decided in float where it can be).
static inline bool pk_knn_lane_out(const pk_knn *s, const pblock *c, uint32_t l, float f)
{
	if (!(f <= s->ncut)) return true;
	if (!(f >= s->near)) return false; // the common case, decided
	return pk_knn_out(s, pk_lane_d2(c, l, s->point), c->least[l]);
}

/// Offer box e, at squared distance d2 (below the cut), to the k best; true
/// when k are held after (the bounds may have moved: the caller reloads
/// what it keeps in registers).
static inline bool pk_knn_offer(pk_knn *s, uint32_t e, double d2)
{
	uint32_t id = s->p->ids[e];
	if (id == s->skip) return false;
	knn_best c = knn_make(d2, id);
	if (s->n < s->k) {
		s->best[s->n] = c;
		knn_sift_up(s->best, s->n++);
	} else if (knn_before(&c, &s->best[0])) {
		s->best[0] = c;
		knn_sift_down(s->best, s->n, 0);
	} else {
		return false;
	}
	if (s->n < s->k) return false;
	pk_knn_bound(s);
	return true;
}

/// Offer lane `lane` of block b's own items from e on; returns where it
/// stopped. by_id (an ordered lane) stops at the first id above s->stop,
/// since none after it can enter; an unordered lane is scanned whole.
ORT_INLINE uint32_t pk_knn_scan(pk_knn *s, const pblock *b, int lane, uint32_t e,
                                                                  bool by_id)
{
	const box_t *boxes = s->p->boxes;
	const uint32_t *ids = s->p->ids;
	uint32_t end = b->first[lane] + b->own[lane];
	// The bounds in registers: stores to the k best may alias the state.
	double cut = s->cut;
	uint32_t stop = by_id ? s->stop : UINT32_MAX;
	for (; e < end && (!by_id || ids[e] <= stop); ++e) {
		double d2 = dist2_point_box(s->point, &boxes[e]);
		if (!(d2 < cut)) continue;
		if (pk_knn_offer(s, e, d2)) {
			cut = s->cut;
			stop = by_id ? s->stop : UINT32_MAX;
		}
	}
	return e;
}

/// A lane on the frontier: at squared distance at, its items from `from` on
/// (an ordered leaf scanned in part: its next one), whose ids are `least`
/// or more.
typedef struct pk_near {
	double at;
	uint32_t least, block, lane, from;
} pk_near;

static inline bool pk_near_before(const pk_near *a, const pk_near *b)
{
	return a->at < b->at || (a->at == b->at && a->least < b->least);
}

KNN_HEAP(pk_frontier, pk_near, pk_near_before)

/// Ordered leaves a depth-first search may search for ties alone before it
/// starts over best-first.
#define PK_KNN_TIES 2

/// A lane on the depth-first stack, at float distance at.
typedef struct pk_knn_visit {
	uint32_t block, lane;
	float at;
} pk_knn_visit;

/// Search lane `lane` of block bi (at float distance at) and all below it,
/// depth first, nearest child first (of equal distances the least id
/// first). Ordered leaves searched only for a tie (at distance 0, or about
/// as far as the k-th with a least id below its) are counted: past `ties`
/// of them it stops and hands what it has not searched to the frontier fr
/// (which must be empty), measured in double, returning false.
ORT_INLINE bool pk_knn_dfs(pk_knn *s, uint32_t bi, uint32_t lane, float at, int ties,
                                                             pk_frontier *fr)
{
	const pblock *blocks = s->p->blocks;
	pk_knn_visit stack[PK_STACK];
	int top = 0;
	stack[top++] = (pk_knn_visit){bi, lane, at};
	while (top > 0) {
		pk_knn_visit v = stack[--top];
		const pblock *b = &blocks[v.block];
		// Asked again: the k-th may have been found since it was pushed.
		if (pk_knn_lane_out(s, b, v.lane, v.at)) continue;
		uint32_t ci = b->child[v.lane];
		bool by_id = b->ordered >> v.lane & 1u;
		if (ci == NIL && by_id && (v.at == 0.0f || v.at >= s->near) && --ties < 0) {
			static_assert(PK_STACK <= KNN_LOCAL, "a depth-first stack fits the frontier");
			assert(fr->n == 0);
			for (int i = 0; i <= top; ++i) {
				pk_knn_visit w = i < top ? stack[i] : v;
				const pblock *wb = &blocks[w.block];
				pk_frontier_push(&s->p->def.allocator, fr,
				                 (pk_near){pk_lane_d2(wb, w.lane, s->point), wb->least[w.lane], w.block, w.lane,
				                           wb->first[w.lane]});
			}
			return false;
		}
		// Until the k-th is at distance 0 no id stops a scan (the common case).
		uint32_t e = b->first[v.lane];
		e = by_id && s->stop != UINT32_MAX ? pk_knn_scan(s, b, (int)v.lane, e, true)
		                                   : pk_knn_scan(s, b, (int)v.lane, e, false);
		WORK_TESTS(e - b->first[v.lane]);
		if (ci == NIL) continue;
		const pblock *c = &blocks[ci];
		WORK_TESTS(c->kids);
		float f[NCHILD];
		pk_lanes_d2f(c, s->point, f);
		// Push the lanes let in, farthest first (of equal distances the
		// greater least id first), so the nearest pops next.
		int first = top;
		for (uint32_t l = 0; l < c->kids; ++l) {
			if (pk_knn_lane_out(s, c, l, f[l])) continue;
			int j = top++;
			for (; j > first && (stack[j - 1].at < f[l] || (stack[j - 1].at == f[l] && c->least[stack[j - 1].lane] < c->least[l]));
			     --j)
				stack[j] = stack[j - 1];
			stack[j] = (pk_knn_visit){ci, l, f[l]};
		}
		assert(top <= PK_STACK);
	}
	return true;
}

/// Best-first from the lanes on fr.
static void pk_knn_best_first(pk_knn *s, pk_frontier *fr)
{
	const pblock *blocks = s->p->blocks;
	const uint32_t *ids = s->p->ids;
	const ort_allocator *never = &s->p->def.allocator; // pushes only below KNN_LOCAL: none allocates
	while (fr->n > 0) {
		pk_near v = pk_frontier_pop(fr);
		// Nothing after it is nearer. Equal distances are still visited: they
		// may hold a tie with a lower id.
		if (!(v.at < s->cut)) break;
		if (pk_knn_out(s, v.at, v.least)) continue; // the k-th found since it was offered
		const pblock *b = &blocks[v.block];
		uint32_t ci = b->child[v.lane];
		uint32_t e = v.from, end = b->first[v.lane] + b->own[v.lane];
		assert(e == end || ids[e] >= v.least);
		if (b->ordered >> v.lane & 1u) {
			// An ordered leaf yields to the frontier's top at its distance once
			// its next id is above the top's least (none when the frontier is
			// full).
			uint32_t yield = UINT32_MAX;
			if (ci == NIL && fr->n > 0 && fr->n < KNN_LOCAL && fr->data[0].at == v.at) yield = fr->data[0].least;
			for (; e < end && ids[e] <= s->stop; ++e) {
				if (ids[e] > yield) {
					pk_frontier_push(never, fr, (pk_near){v.at, ids[e], v.block, v.lane, e});
					break;
				}
				double d2 = dist2_point_box(s->point, &s->p->boxes[e]);
				if (d2 < s->cut) pk_knn_offer(s, e, d2);
			}
		} else {
			e = pk_knn_scan(s, b, (int)v.lane, e, false);
		}
		WORK_TESTS(e - v.from);
		if (ci == NIL) continue;
		const pblock *c = &blocks[ci];
		WORK_TESTS(c->kids);
		for (uint32_t l = 0; l < c->kids; ++l) {
			double d2 = pk_lane_d2(c, l, s->point);
			if (pk_knn_out(s, d2, c->least[l])) continue;
			if (fr->n < KNN_LOCAL)
				pk_frontier_push(never, fr, (pk_near){d2, c->least[l], ci, l, c->first[l]});
			else
				pk_knn_dfs(s, ci, l, (float)d2, INT_MAX, NULL);
		}
	}
	assert(fr->data == fr->local);
}

static int pk_knn_search(const packed_t *p, const float point[DIM], int k, double lim, uint32_t skip, knn_best *best)
{
	assert(k >= 1 && p->count > 0);
	pk_knn s = {.p = p, .point = point, .lim = lim, .tie_low = INFINITY, .stop = UINT32_MAX, .skip = skip, .best = best,
	            .k = k};
	pk_knn_bound(&s);
	float root[NCHILD];
	pk_lanes_d2f(&p->blocks[0], point, root);
	// Depth first while few ordered leaves are searched for ties alone (a
	// uniform scene's search, at a fraction of the best-first one's cost);
	// past PK_KNN_TIES of them, what is left best-first.
	pk_frontier fr;
	pk_frontier_init(&fr);
	if (!pk_knn_dfs(&s, 0, 0, root[0], PK_KNN_TIES, &fr)) pk_knn_best_first(&s, &fr);
	return s.n;
}

ort_result ORTHANT_NAME(packed_nearest)(const packed_t *p, const float point[DIM], int k, float max_distance,
                                        ort_id_neighbor *out, int *found)
{
	if (found) *found = 0;
	if (!p || !point || !found || k < 0 || (k > 0 && !out)) return ORT_ERROR_INVALID_ARGUMENT;
	if (point_check(point) != ORT_OK || isnan(max_distance) || max_distance < 0.0f) return ORT_ERROR_INVALID_BOX;
	if ((uint32_t)k > p->count) k = (int)p->count;
	if (k == 0) return ORT_OK;
	knn_best local[64];
	knn_best *best = local;
	if (k > 64) {
		best = allocator_alloc(&p->def.allocator, (size_t)k * sizeof *best);
		if (!best) return ORT_ERROR_OUT_OF_MEMORY;
	}
	double lim = isinf(max_distance) ? INFINITY : nextafter((double)max_distance * max_distance, INFINITY);
	int n = pk_knn_search(p, point, k, lim, NIL, best);
	knn_heap_sort(best, n); // the result order of ortN_tree_nearest: distance, then id
	for (int i = 0; i < n; ++i) out[i] = (ort_id_neighbor){best[i].id, best[i].dist};
	*found = n;
	if (best != local) allocator_free(&p->def.allocator, best, (size_t)k * sizeof *best);
	return ORT_OK;
}

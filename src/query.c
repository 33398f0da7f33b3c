// query.c: box, point and sphere queries, ray casts and k nearest.
//
// Every query walks the tree with an explicit stack sized from the tree's
// height (dim.h: node_stack), skipping subtrees that hold nothing and those
// whose bounds miss the query. Queries only read the tree, so any number may
// run at once on one tree from several threads, as long as none mutates it.
//
// leaves placement stores an item in every leaf it touches; a query reports it
// only from the leaf that owns one canonical point of item ∩ query (leaf_owns),
// a point that lies in both, so that leaf is always visited and the item is
// reported exactly once.
#ifndef ORTHANT_DIM
#error "compiled through dim2.c or dim3.c"
#endif

/// Squared distance from p to the box [lo, hi] (0 inside), in double: float
/// squares overflow beyond ~1.8e19, and every distance query ranks by this.
static inline double dist2_point_bounds(const float p[DIM], const float lo[DIM], const float hi[DIM])
{
	double s = 0.0;
	for (int d = 0; d < DIM; ++d) {
		double v = p[d] < lo[d] ? (double)lo[d] - p[d] : p[d] > hi[d] ? (double)p[d] - hi[d] : 0.0;
		s += v * v;
	}
	return s;
}

static inline void clamp_point(const float p[DIM], const box_t *b, float out[DIM])
{
	for (int d = 0; d < DIM; ++d) out[d] = p[d] < b->min[d] ? b->min[d] : p[d] > b->max[d] ? b->max[d] : p[d];
}

/// The shapes a region query can test: a box, or a sphere (radius2 >= 0).
typedef struct region {
	uint64_t mask; ///< items whose category meets it; subtrees whose categories miss it are skipped
	box_t box;     ///< the query box, or the sphere's bounding box
	float centre[DIM];
	float radius;
	double radius2; ///< < 0 for a box query
	/// Prune by each node's content bounds (t->content, just computed by
	/// pairs_content) instead of its cell: tighter, above all for loose cells.
	bool by_content;
} region;

/// Item i's box passed region_hits_bounds: does its exact bound meet q?
static inline bool region_hits_item(const tree_t *t, const region *q, uint32_t i)
{
	const sphere_t *s = item_sphere(t, i);
	if (!s) return true;
	if (q->radius2 < 0.0) return dist2_point_box(s->c, &q->box) <= (double)s->r * s->r;
	double r = (double)s->r + q->radius;
	return dist2_points(s->c, q->centre) <= r * r;
}

static inline bool region_hits_bounds(const region *q, const float lo[DIM], const float hi[DIM])
{
	if (!box_overlaps_bounds(&q->box, lo, hi)) return false;
	return q->radius2 < 0.0f || dist2_point_bounds(q->centre, lo, hi) <= q->radius2;
}

static ort_result query_region(const tree_t *t, const region *q, ORTHANT_NAME(query_fn) * fn, void *ctx)
{
	if (t->root == NIL) return ORT_OK;
	node_stack s;
	if (!stack_init(t, &s)) return ORT_ERROR_OUT_OF_MEMORY;
	bool leaves = t->def.placement == ORT_PLACEMENT_LEAVES;
	stack_push(&s, t->root);
	while (s.top > 0) {
		uint32_t ni = s.data[--s.top];
		const node *n = &t->nodes[ni];
		if (n->total == 0 || !(n->cats & q->mask)) continue;
		float lo[DIM], hi[DIM];
		if (q->by_content) {
			memcpy(lo, t->content[ni].min, sizeof lo);
			memcpy(hi, t->content[ni].max, sizeof hi);
		} else {
			node_bounds(t, n, lo, hi);
		}
		if (!region_hits_bounds(q, lo, hi)) continue;
		const node cell = *n; // a copy: callbacks' deferred changes may move the pool
		ENTRY_LOOP(t, n, c, k)
		{
			const entry *e = &t->chunks[c].e[k];
			if (!region_hits_bounds(q, e->box.min, e->box.max)) continue;
			if (q->mask != ORT_MASK_ALL && !(item_cat(t, e->item) & q->mask)) continue;
			if (t->spheres && !region_hits_item(t, q, e->item)) continue;
			if (leaves) {
				float p[DIM];
				if (q->radius2 < 0.0f)
					overlap_corner(&e->box, &q->box, p);
				else
					clamp_point(q->centre, &e->box, p);
				if (!leaf_owns(&cell, p)) continue;
			}
			if (!fn(ctx, make_handle(t, e->item), t->items[e->item].user)) {
				stack_free(t, &s);
				return ORT_OK;
			}
		}
		n = &t->nodes[ni]; // a callback's deferred change may have moved the pool
		for (int c = 0; c < NCHILD; ++c)
			if (n->child[c] != NIL) stack_push(&s, n->child[c]);
	}
	stack_free(t, &s);
	return ORT_OK;
}

/// query_region inside the readers' bracket (defer.c).
static ort_result query_run(const tree_t *t, const region *q, ORTHANT_NAME(query_fn) * fn, void *ctx)
{
	reading_begin(t);
	ort_result r = query_region(t, q, fn, ctx);
	reading_end(t);
	return r;
}

ort_result ORTHANT_NAME(tree_query_box)(const tree_t *t, box_t box, uint64_t mask, ORTHANT_NAME(query_fn) * fn,
                                        void *ctx)
{
	if (!t || !fn) return ORT_ERROR_INVALID_ARGUMENT;
	for (int d = 0; d < DIM; ++d)
		if (isnan(box.min[d]) || isnan(box.max[d]) || !(box.min[d] <= box.max[d])) return ORT_ERROR_INVALID_BOX;
	region q;
	q.mask = mask;
	q.box = box;
	q.radius2 = -1.0f;
	q.by_content = false;
	return query_run(t, &q, fn, ctx);
}

/// A box query pruned by content bounds, for callers that have just computed
/// them (pairs_content) and change nothing before the query ends.
static ort_result query_box_by_content(const tree_t *t, const box_t *box, ORTHANT_NAME(query_fn) * fn, void *ctx)
{
	region q;
	q.mask = ORT_MASK_ALL;
	q.box = *box;
	q.radius2 = -1.0f;
	q.by_content = true;
	return query_run(t, &q, fn, ctx);
}

ort_result ORTHANT_NAME(tree_query_point)(const tree_t *t, const float point[DIM], uint64_t mask,
                                          ORTHANT_NAME(query_fn) * fn, void *ctx)
{
	if (!t || !fn || !point) return ORT_ERROR_INVALID_ARGUMENT;
	if (point_check(point) != ORT_OK) return ORT_ERROR_INVALID_BOX;
	region q;
	q.mask = mask;
	memcpy(q.box.min, point, sizeof q.box.min);
	memcpy(q.box.max, point, sizeof q.box.max);
	q.radius2 = -1.0f;
	q.by_content = false;
	return query_run(t, &q, fn, ctx);
}

ort_result ORTHANT_NAME(tree_query_sphere)(const tree_t *t, const float centre[DIM], float radius, uint64_t mask,
                                           ORTHANT_NAME(query_fn) * fn, void *ctx)
{
	if (!t || !fn || !centre) return ORT_ERROR_INVALID_ARGUMENT;
	if (point_check(centre) != ORT_OK || !isfinite(radius) || radius < 0.0f) return ORT_ERROR_INVALID_BOX;
	region q;
	q.mask = mask;
	// The bounding box must hold whatever the distance test accepts, or
	// pruning would drop it.
	for (int d = 0; d < DIM; ++d) q.centre[d] = centre[d];
	sphere_prune_box(centre, radius, &q.box);
	q.radius = radius;
	q.radius2 = (double)radius * radius;
	q.by_content = false;
	return query_run(t, &q, fn, ctx);
}

// ---- rays -------------------------------------------------------------------

/// Slab test of the segment origin + t * dir, t in [0, tmax], against [lo, hi]
/// (closed). On a hit *enter is where the segment enters (0 when it starts
/// inside). An axis with dir 0 is a slab the origin is in or not; otherwise the
/// parameters are (lo - o) / d and (hi - o) / d, exactly as written here, so a
/// brute-force oracle using this formula agrees to the bit.
static inline bool ray_slab(const float o[DIM], const float dir[DIM], float tmax, const float lo[DIM],
                            const float hi[DIM], float *enter)
{
	float t0 = 0.0f, t1 = tmax;
	for (int d = 0; d < DIM; ++d) {
		if (dir[d] == 0.0f) {
			if (o[d] < lo[d] || o[d] > hi[d]) return false;
			continue;
		}
		float a = (lo[d] - o[d]) / dir[d], b = (hi[d] - o[d]) / dir[d];
		if (a > b) {
			float x = a;
			a = b;
			b = x;
		}
		if (a > t0) t0 = a;
		if (b < t1) t1 = b;
		if (t0 > t1) return false;
	}
	*enter = t0;
	return true;
}

/// The segment origin + t * dir, t in [0, tmax], against a sphere, in double:
/// with a = dir.dir, b = dir.(o - c), k = |o - c|^2 - r^2, the entry is 0 when
/// k <= 0 (inside), else (-b - sqrt(b^2 - a k)) / a when that is real and in
/// [0, tmax].
static inline bool ray_sphere(const float o[DIM], const float dir[DIM], float tmax, const sphere_t *s, float *enter)
{
	double a = 0.0, b = 0.0, k = 0.0;
	for (int d = 0; d < DIM; ++d) {
		double oc = (double)o[d] - s->c[d];
		a += (double)dir[d] * dir[d];
		b += (double)dir[d] * oc;
		k += oc * oc;
	}
	k -= (double)s->r * s->r;
	if (k <= 0.0) {
		*enter = 0.0f;
		return true;
	}
	double disc = b * b - a * k;
	if (a == 0.0 || disc < 0.0) return false;
	double t0 = (-b - sqrt(disc)) / a;
	if (t0 < 0.0 || t0 > tmax) return false;
	*enter = (float)t0;
	return true;
}

typedef struct ray_node {
	uint32_t node;
	float enter;
} ray_node;

// ---- sweeps ---------------------------------------------------------------------

/// A sweep: the ray origin + t * dir, t in [0, max_t], against boxes grown
/// downwards by size (all zero for a plain ray); `moving` is the swept box
/// ([origin, origin] for a ray).
typedef struct sweep {
	float origin[DIM], dir[DIM], size[DIM];
	float max_t;
	box_t moving;
	uint64_t mask; ///< the query mask
} sweep;

/// Called for each entry whose box a sweep touches, with the entry parameter
/// of that box and the current clip; returns the parameter to clip to, with
/// ortN_ray_fn's meaning.
typedef float sweep_fn(void *ctx, const tree_t *t, const entry *e, float te, float tmax);

static inline bool sweep_hits(const sweep *w, float tmax, const float lo[DIM], const float hi[DIM], float *enter)
{
	float grown[DIM];
	for (int d = 0; d < DIM; ++d) grown[d] = lo[d] - w->size[d];
	return ray_slab(w->origin, w->dir, tmax, grown, hi, enter);
}

/// Whether the sweep reaches the node, and where. Leaves placement widens the
/// cell by a hair (as ray_cast does) so the leaf owning an item's contact point
/// is reached even when that point rounds onto its face.
static bool sweep_node(const tree_t *t, const sweep *w, float tmax, const node *n, float *enter)
{
	float lo[DIM], hi[DIM];
	node_bounds(t, n, lo, hi);
	if (t->def.placement == ORT_PLACEMENT_LEAVES)
		for (int d = 0; d < DIM; ++d) {
			float m = (hi[d] - lo[d]) * 1e-5f;
			lo[d] -= m;
			hi[d] += m;
		}
	return sweep_hits(w, tmax, lo, hi, enter);
}

/// Every entry the sweep touches, each item once, children near-first, the
/// segment clipped by what fn returns.
static ort_result sweep_walk(const tree_t *t, const sweep *w, sweep_fn *fn, void *ctx)
{
	if (t->root == NIL) return ORT_OK;
	bool leaves = t->def.placement == ORT_PLACEMENT_LEAVES;
	size_t cap = (size_t)(NCHILD - 1) * (size_t)(t->height + 1) + 1;
	ray_node local[LOCAL_STACK];
	ray_node *stack = cap <= LOCAL_STACK ? local : query_alloc(t, cap * sizeof *stack);
	if (!stack) return ORT_ERROR_OUT_OF_MEMORY;
	size_t top = 0;
	float tmax = w->max_t, enter;
	if (sweep_node(t, w, tmax, &t->nodes[t->root], &enter)) stack[top++] = (ray_node){t->root, enter};
	while (top > 0) {
		ray_node rn = stack[--top];
		const node *n = &t->nodes[rn.node];
		if (rn.enter > tmax || n->total == 0 || !(n->cats & w->mask)) continue;
		const node cell = *n; // a copy: a callback's deferred change may move the pool
		ENTRY_LOOP(t, n, c, k)
		{
			const entry *e = &t->chunks[c].e[k];
			float te;
			if (w->mask != ORT_MASK_ALL && !(item_cat(t, e->item) & w->mask)) continue;
			if (!sweep_hits(w, tmax, e->box.min, e->box.max, &te)) continue;
			if (leaves) {
				// The contact point: the moving min corner at te, pushed into the item.
				float p[DIM];
				for (int d = 0; d < DIM; ++d) p[d] = w->origin[d] + te * w->dir[d];
				clamp_point(p, &e->box, p);
				if (!leaf_owns(&cell, p)) continue;
			}
			float r = fn(ctx, t, e, te, tmax);
			if (r < 0.0f || isnan(r)) continue;
			if (r == 0.0f) goto done;
			if (r < tmax) tmax = r;
		}
		// Children sorted farthest first, so the nearest is popped next.
		ray_node kids[NCHILD];
		int nk = 0;
		for (int c = 0; c < NCHILD; ++c) {
			uint32_t ci = cell.child[c];
			if (ci == NIL || t->nodes[ci].total == 0 || !(t->nodes[ci].cats & w->mask) ||
			    !sweep_node(t, w, tmax, &t->nodes[ci], &enter))
				continue;
			int j = nk++;
			for (; j > 0 && kids[j - 1].enter < enter; --j) kids[j] = kids[j - 1];
			kids[j] = (ray_node){ci, enter};
		}
		for (int j = 0; j < nk; ++j) {
			assert(top < cap);
			stack[top++] = kids[j];
		}
	}
done:
	if (stack != local) query_free(t, stack, cap * sizeof *stack);
	return ORT_OK;
}

/// ORT_OK when origin, dir and max_t make a segment ray_cast accepts.
static ort_result ray_args_check(const float origin[DIM], const float dir[DIM], float max_t)
{
	if (!origin || !dir) return ORT_ERROR_INVALID_ARGUMENT;
	if (point_check(origin) != ORT_OK || point_check(dir) != ORT_OK || isnan(max_t) || max_t < 0.0f)
		return ORT_ERROR_INVALID_BOX;
	return ORT_OK;
}

/// A sweep of the box (NULL: the ray from origin) along dir.
static void sweep_make(sweep *w, const box_t *box, const float origin[DIM], const float dir[DIM], float max_t)
{
	for (int d = 0; d < DIM; ++d) {
		w->origin[d] = box ? box->min[d] : origin[d];
		w->dir[d] = dir[d];
		w->size[d] = box ? box->max[d] - box->min[d] : 0.0f;
		w->moving.min[d] = w->origin[d];
		w->moving.max[d] = box ? box->max[d] : origin[d];
	}
	w->max_t = max_t;
	w->mask = ORT_MASK_ALL;
}

/// A sweep with the caller's callback (ray casts here, box casts in shapes.c).
typedef struct sweep_user {
	const sweep *w;
	ORTHANT_NAME(ray_fn) * fn;
	void *ctx;
} sweep_user;

/// A ray cast is a sweep of a point: each box it touches, tested exactly if
/// the item is a sphere, goes to the caller's callback.
static float ray_cast_visit(void *ctx, const tree_t *t, const entry *e, float te, float tmax)
{
	sweep_user *rc = ctx;
	const sphere_t *sph = t->spheres ? item_sphere(t, e->item) : NULL;
	if (sph && !ray_sphere(rc->w->origin, rc->w->dir, tmax, sph, &te)) return -1.0f;
	return rc->fn(rc->ctx, make_handle(t, e->item), t->items[e->item].user, te);
}

ort_result ORTHANT_NAME(tree_ray_cast)(const tree_t *t, const float origin[DIM], const float dir[DIM], float max_t,
                                       uint64_t mask, ORTHANT_NAME(ray_fn) * fn, void *ctx)
{
	if (!t || !fn || !origin || !dir) return ORT_ERROR_INVALID_ARGUMENT;
	if (point_check(origin) != ORT_OK || point_check(dir) != ORT_OK || isnan(max_t) || max_t < 0.0f)
		return ORT_ERROR_INVALID_BOX;
	sweep w;
	sweep_make(&w, NULL, origin, dir, max_t);
	w.mask = mask;
	sweep_user rc = {&w, fn, ctx};
	reading_begin(t);
	ort_result r = sweep_walk(t, &w, ray_cast_visit, &rc);
	reading_end(t);
	return r;
}

// ---- k nearest ------------------------------------------------------------------

typedef struct knn_node {
	double d2;
	uint32_t node;
} knn_node;

/// A growable min-heap of nodes by distance, local first.
typedef struct knn_heap {
	knn_node local[LOCAL_STACK];
	knn_node *data;
	size_t n, cap;
} knn_heap;

static bool knn_push(const tree_t *t, knn_heap *h, knn_node v)
{
	if (h->n == h->cap) {
		size_t cap = h->cap * 2;
		knn_node *p = query_alloc(t, cap * sizeof *p);
		if (!p) return false;
		memcpy(p, h->data, h->n * sizeof *p);
		if (h->data != h->local) query_free(t, h->data, h->cap * sizeof *p);
		h->data = p;
		h->cap = cap;
	}
	size_t i = h->n++;
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (h->data[parent].d2 <= v.d2) break;
		h->data[i] = h->data[parent];
		i = parent;
	}
	h->data[i] = v;
	return true;
}

static knn_node knn_pop(knn_heap *h)
{
	knn_node top = h->data[0], last = h->data[--h->n];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= h->n) break;
		if (c + 1 < h->n && h->data[c + 1].d2 < h->data[c].d2) c++;
		if (h->data[c].d2 >= last.d2) break;
		h->data[i] = h->data[c];
		i = c;
	}
	if (h->n) h->data[i] = last;
	return top;
}

/// A result candidate: the k best so far form a max-heap on (d2, id).
typedef struct knn_best {
	double d2;
	uint32_t id; ///< handle id (item + 1), the tie-break
} knn_best;

/// Result order: nearer first, then lower handle id.
static inline bool knn_before(const knn_best *a, const knn_best *b)
{
	return a->d2 < b->d2 || (a->d2 == b->d2 && a->id < b->id);
}

static void knn_sift_down(knn_best *h, int n, int i)
{
	knn_best v = h[i];
	for (;;) {
		int c = 2 * i + 1;
		if (c >= n) break;
		if (c + 1 < n && knn_before(&h[c], &h[c + 1])) c++;
		if (!knn_before(&v, &h[c])) break;
		h[i] = h[c];
		i = c;
	}
	h[i] = v;
}

static void knn_sift_up(knn_best *h, int i)
{
	knn_best v = h[i];
	while (i > 0) {
		int p = (i - 1) / 2;
		if (!knn_before(&h[p], &v)) break;
		h[i] = h[p];
		i = p;
	}
	h[i] = v;
}

/// The max-heap best[0..n) in ascending result order.
static void knn_heap_sort(knn_best *best, int n)
{
	for (int m = n; m > 1; --m) {
		knn_best x = best[0];
		best[0] = best[m - 1];
		best[m - 1] = x;
		knn_sift_down(best, m - 1, 0);
	}
}

ort_result ORTHANT_NAME(tree_nearest)(const tree_t *t, const float point[DIM], int k, float max_distance,
                                      uint64_t mask, ORTHANT_NAME(neighbor) * out, int *found)
{
	if (found) *found = 0;
	if (!t || !point || !found || k < 0 || (k > 0 && !out)) return ORT_ERROR_INVALID_ARGUMENT;
	if (point_check(point) != ORT_OK || isnan(max_distance) || max_distance < 0.0f) return ORT_ERROR_INVALID_BOX;
	if (k == 0 || t->root == NIL) return ORT_OK;
	bool leaves = t->def.placement == ORT_PLACEMENT_LEAVES;
	double limit2 = isinf(max_distance) ? INFINITY : (double)max_distance * max_distance;
	if ((uint32_t)k > t->live) k = (int)t->live;
	if (k == 0) return ORT_OK;
	knn_best local_best[64];
	knn_best *best = k <= 64 ? local_best : query_alloc(t, (size_t)k * sizeof *best);
	if (!best) return ORT_ERROR_OUT_OF_MEMORY;
	knn_heap h;
	h.data = h.local;
	h.n = 0;
	h.cap = LOCAL_STACK;
	int n = 0;
	ort_result result = ORT_OK;
	knn_push(t, &h, (knn_node){0.0, t->root});
	while (h.n > 0) {
		knn_node kn = knn_pop(&h);
		if (kn.d2 > limit2) break;
		// Visit equal distances too: they may hold a tie with a lower id.
		if (n == k && kn.d2 > best[0].d2) break;
		const node *nd = &t->nodes[kn.node];
		ENTRY_LOOP(t, nd, c, e_k)
		{
			const entry *e = &t->chunks[c].e[e_k];
			if (mask != ORT_MASK_ALL && !(item_cat(t, e->item) & mask)) continue;
			knn_best v = {dist2_point_bounds(point, e->box.min, e->box.max), e->item + 1};
			const sphere_t *sph = t->spheres ? item_sphere(t, e->item) : NULL;
			if (sph) {
				double gap = sqrt(dist2_points(point, sph->c)) - sph->r;
				v.d2 = gap > 0.0 ? gap * gap : 0.0;
			}
			if (v.d2 > limit2) continue;
			if (n == k && !knn_before(&v, &best[0])) continue;
			if (leaves) {
				float p[DIM];
				clamp_point(point, &e->box, p);
				if (!leaf_owns(nd, p)) continue;
			}
			if (n < k) {
				best[n] = v;
				knn_sift_up(best, n++);
			} else {
				best[0] = v;
				knn_sift_down(best, n, 0);
			}
		}
		for (int c = 0; c < NCHILD; ++c) {
			uint32_t ci = nd->child[c];
			if (ci == NIL || t->nodes[ci].total == 0 || !(t->nodes[ci].cats & mask)) continue;
			float lo[DIM], hi[DIM];
			node_bounds(t, &t->nodes[ci], lo, hi);
			double d2 = dist2_point_bounds(point, lo, hi);
			if (d2 > limit2 || (n == k && d2 > best[0].d2)) continue;
			if (!knn_push(t, &h, (knn_node){d2, ci})) {
				result = ORT_ERROR_OUT_OF_MEMORY;
				goto done;
			}
		}
	}
	knn_heap_sort(best, n);
	for (int i = 0; i < n; ++i) {
		uint32_t item_index = best[i].id - 1;
		out[i] = (ORTHANT_NAME(neighbor)){make_handle(t, item_index), t->items[item_index].user, (float)sqrt(best[i].d2)};
	}
	*found = n;
done:
	if (h.data != h.local) query_free(t, h.data, h.cap * sizeof *h.data);
	if (best != local_best) query_free(t, best, (size_t)k * sizeof *best);
	return result;
}

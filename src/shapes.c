// shapes.c: convex-region (frustum) queries, swept boxes, ray intersection
// records and batched queries.
//
// Included after query.c, so it shares its helpers (ray_slab, clamp_point).
// Like every query these only read the tree: any number may run at once.
//
// ## Convex regions and the leaves placement
//
// A box passes the plane test when, for every plane, its most positive vertex
// is on the inner side. The test is monotone: a box that contains another
// reaches at least as far along every normal (float products and sums round
// monotonically), so a node whose bounds fail holds no passing item in loose
// and tight placement, and those prune by every plane.
//
// The leaves placement cannot: an item there is cut into the leaves it
// touches, and the test is not decomposable. An item may pass while every
// piece fails, because each plane is met by a different piece (a box near a
// corner of the region, outside it). What does decompose is one plane: the
// item's most positive vertex for plane j lies in a leaf that reaches plane j,
// as do all its ancestors. So leaves placement prunes by one key plane, the one
// that cuts the most off the root cell, reports an item only from the leaf
// owning its most positive vertex for that plane, and tests every plane on the
// item itself. The answer is the same; the pruning is weaker.
//
// ## Sweeps
//
// A box moving along delta touches an item's box exactly when its min corner,
// moving along the same ray, touches the item's box grown downwards by the
// moving box's size (the Minkowski difference). A ray is the sweep of a box of
// size 0, so ray records and box casts share one near-first traversal, the
// same as ortN_tree_ray_cast's, with node bounds grown the same way (which
// keeps the containment that makes pruning sound).
#ifndef ORTHANT_DIM
#error "compiled through dim2.c or dim3.c"
#endif

#include <float.h>

typedef ORTHANT_NAME(plane) plane_t;
typedef ORTHANT_NAME(ray_hit) ray_hit_t;

// ---- planes -------------------------------------------------------------------

/// The plane's value at the box's most positive vertex, summed left to right
/// and the offset last, as docs/QUERIES.md writes it.
static inline float plane_reach(const plane_t *pl, const float lo[DIM], const float hi[DIM])
{
	float s = pl->normal[0] * (pl->normal[0] >= 0.0f ? hi[0] : lo[0]);
	for (int d = 1; d < DIM; ++d) s += pl->normal[d] * (pl->normal[d] >= 0.0f ? hi[d] : lo[d]);
	return s + pl->offset;
}

/// Whether [lo, hi] passes every plane. For node bounds (`node_test`) a value
/// that overflowed to NaN passes, so pruning stays conservative; an item's box
/// must reach a number >= 0.
static inline bool planes_pass(const plane_t *pl, int count, const float lo[DIM], const float hi[DIM],
                               bool node_test)
{
	for (int i = 0; i < count; ++i) {
		float v = plane_reach(&pl[i], lo, hi);
		if (node_test ? v < 0.0f : !(v >= 0.0f)) return false;
	}
	return true;
}

/// A sphere item (whose box passed) against every plane, exactly, in double:
/// sum(normal[i] * c[i]) + offset >= -r * sqrt(sum(normal[i]^2)).
static bool planes_pass_sphere(const plane_t *pl, int count, const sphere_t *sph)
{
	for (int i = 0; i < count; ++i) {
		double v = 0.0, len2 = 0.0;
		for (int d = 0; d < DIM; ++d) {
			v += (double)pl[i].normal[d] * sph->c[d];
			len2 += (double)pl[i].normal[d] * pl[i].normal[d];
		}
		if (!(v + pl[i].offset >= -(double)sph->r * sqrt(len2))) return false;
	}
	return true;
}

/// The box's most positive vertex for the plane (its min corner without one).
static inline void plane_vertex(const plane_t *pl, const box_t *b, float p[DIM])
{
	for (int d = 0; d < DIM; ++d) p[d] = pl && pl->normal[d] >= 0.0f ? b->max[d] : b->min[d];
}

/// The plane that leaves the smallest share of the root cell inside, the key
/// of a leaves-placement walk; NULL without planes.
static const plane_t *key_plane(const tree_t *t, const plane_t *pl, int count)
{
	const node *root = &t->nodes[t->root];
	const plane_t *best = NULL;
	float best_share = INFINITY;
	for (int i = 0; i < count; ++i) {
		plane_t neg = pl[i];
		for (int d = 0; d < DIM; ++d) neg.normal[d] = -neg.normal[d];
		float most = plane_reach(&pl[i], root->lo, root->hi);
		float least = -plane_reach(&neg, root->lo, root->hi) + 2.0f * pl[i].offset;
		float share = most <= 0.0f ? 0.0f : least >= 0.0f ? 1.0f : most / (most - least);
		if (best == NULL || share < best_share) {
			best = &pl[i];
			best_share = share;
		}
	}
	return best;
}

/// The plane query's traversal (arguments checked).
static ort_result planes_walk(const tree_t *t, const plane_t *planes, int count, uint64_t mask,
                              ORTHANT_NAME(query_fn) * fn, void *ctx)
{
	if (t->root == NIL) return ORT_OK;
	bool leaves = t->def.placement == ORT_PLACEMENT_LEAVES;
	const plane_t *key = leaves ? key_plane(t, planes, count) : NULL;
	const plane_t *prune = leaves ? key : planes;
	int nprune = leaves ? (key != NULL) : count;
	node_stack s;
	if (!stack_init(t, &s)) return ORT_ERROR_OUT_OF_MEMORY;
	stack_push(&s, t->root);
	while (s.top > 0) {
		uint32_t ni = s.data[--s.top];
		const node *n = &t->nodes[ni];
		if (n->total == 0 || !(n->cats & mask)) continue;
		float lo[DIM], hi[DIM];
		node_bounds(t, n, lo, hi);
		if (!planes_pass(prune, nprune, lo, hi, true)) continue;
		const node cell = *n; // a copy: a callback's deferred change may move the pool
		ENTRY_LOOP(t, n, c, k)
		{
			const entry *e = &t->chunks[c].e[k];
			if (mask != ORT_MASK_ALL && !(item_cat(t, e->item) & mask)) continue;
			if (!planes_pass(planes, count, e->box.min, e->box.max, false)) continue;
			const sphere_t *sph = t->spheres ? item_sphere(t, e->item) : NULL;
			if (sph && !planes_pass_sphere(planes, count, sph)) continue;
			if (leaves) {
				float p[DIM];
				plane_vertex(key, &e->box, p);
				if (!leaf_owns(&cell, p)) continue;
			}
			if (!fn(ctx, make_handle(t, e->item), t->items[e->item].user)) {
				stack_free(t, &s);
				return ORT_OK;
			}
		}
		for (int c = 0; c < NCHILD; ++c)
			if (cell.child[c] != NIL) stack_push(&s, cell.child[c]);
	}
	stack_free(t, &s);
	return ORT_OK;
}

ort_result ORTHANT_NAME(tree_query_planes)(const tree_t *t, const plane_t *planes, int count, uint64_t mask,
                                           ORTHANT_NAME(query_fn) * fn, void *ctx)
{
	if (!t || !fn || count < 0 || (count > 0 && !planes)) return ORT_ERROR_INVALID_ARGUMENT;
	for (int i = 0; i < count; ++i)
		if (point_check(planes[i].normal) != ORT_OK || !isfinite(planes[i].offset)) return ORT_ERROR_INVALID_BOX;
	reading_begin(t);
	ort_result r = planes_walk(t, planes, count, mask, fn, ctx);
	reading_end(t); // may apply changes the callback made, or destroy the tree
	return r;
}

/// Scale the plane to a unit normal; a zero normal is left as is.
static void plane_normalise(plane_t *pl)
{
	float len2 = 0.0f;
	for (int d = 0; d < DIM; ++d) len2 += pl->normal[d] * pl->normal[d];
	if (!(len2 > 0.0f)) return;
	float inv = 1.0f / sqrtf(len2);
	for (int d = 0; d < DIM; ++d) pl->normal[d] *= inv;
	pl->offset *= inv;
}

#if DIM == 3
void ORTHANT_NAME(frustum_from_matrix)(const float m[16], plane_t out[6])
{
	// Plane k combines row 3 with row k / 2, added for even k, subtracted for odd.
	for (int k = 0; k < 6; ++k) {
		int r = k / 2;
		float sign = k % 2 ? -1.0f : 1.0f;
		for (int d = 0; d < 3; ++d) out[k].normal[d] = m[4 * d + 3] + sign * m[4 * d + r];
		out[k].offset = m[15] + sign * m[12 + r];
		plane_normalise(&out[k]);
	}
}
#else
ort_result ORTHANT_NAME(planes_from_polygon)(const float (*pts)[2], int n, plane_t *out)
{
	if (!pts || !out || n < 3) return ORT_ERROR_INVALID_ARGUMENT;
	for (int i = 0; i < n; ++i) {
		const float *a = pts[i], *b = pts[(i + 1) % n];
		if (point_check(a) != ORT_OK) return ORT_ERROR_INVALID_BOX;
		float ex = b[0] - a[0], ey = b[1] - a[1];
		if (!(ex * ex + ey * ey > 0.0f) || !isfinite(ex * ex + ey * ey)) return ORT_ERROR_INVALID_BOX;
		out[i] = (plane_t){{-ey, ex}, 0.0f};
		plane_normalise(&out[i]);
		out[i].offset = -(out[i].normal[0] * a[0] + out[i].normal[1] * a[1]);
	}
	return ORT_OK;
}
#endif

// ---- sweeps (the walk itself is in query.c: a ray is a sweep of a point) ----------

/// The first t in [0, tmax] at which the moving box touches the sphere item,
/// in double: the sphere's centre moves by -t * dir relative to the box, and
/// g(t) = dist2(c - t * dir, box) is convex and piecewise quadratic between
/// the t where a coordinate crosses a face. 0 when g(0) <= r^2; otherwise the
/// smaller root of g(t) = r^2 on the first piece that has one at or after
/// its start (the start itself when rounding puts the root just before it).
static bool sweep_sphere(const sweep *w, float tmax, const sphere_t *s, float *enter)
{
	double r2 = (double)s->r * s->r;
	if (dist2_point_box(s->c, &w->moving) <= r2) {
		*enter = 0.0f;
		return true;
	}
	double cut[2 * DIM + 1];
	int n = 0;
	for (int d = 0; d < DIM; ++d)
		for (int f = 0; f < 2 && w->dir[d] != 0.0f; ++f) {
			double tc = ((double)s->c[d] - (f ? w->moving.max[d] : w->moving.min[d])) / w->dir[d];
			if (tc > 0.0 && tc < tmax) {
				int j = n++;
				for (; j > 0 && cut[j - 1] > tc; --j) cut[j] = cut[j - 1];
				cut[j] = tc;
			}
		}
	cut[n++] = tmax;
	double start = 0.0;
	for (int i = 0; i < n; start = cut[i++]) {
		double end = cut[i];
		if (!(end > start)) continue;
		double mid = isinf(end) ? start + 1.0 : 0.5 * (start + end);
		double a = 0.0, b = 0.0, c = -r2;
		for (int d = 0; d < DIM; ++d) {
			double p = (double)s->c[d] - mid * w->dir[d], al, be;
			if (p < w->moving.min[d]) {
				al = (double)w->moving.min[d] - s->c[d];
				be = w->dir[d];
			} else if (p > w->moving.max[d]) {
				al = (double)s->c[d] - w->moving.max[d];
				be = -(double)w->dir[d];
			} else {
				continue;
			}
			a += be * be;
			b += 2.0 * al * be;
			c += al * al;
		}
		double disc = b * b - 4.0 * a * c;
		if (a == 0.0 || disc < 0.0) continue;
		double root = sqrt(disc), t0 = (-b - root) / (2.0 * a), t1 = (-b + root) / (2.0 * a);
		if (t1 < start) continue;
		if (t0 < start) t0 = start;
		if (t0 <= end) {
			*enter = (float)t0;
			return true;
		}
	}
	return false;
}

/// The exact entry of the sweep into entry e's item: its box's te, or for a
/// sphere item the sphere's (false when the sweep misses the sphere).
static bool sweep_item(const tree_t *t, const sweep *w, const entry *e, float tmax, float *te)
{
	const sphere_t *sph = t->spheres ? item_sphere(t, e->item) : NULL;
	if (!sph) return true;
	bool ray = true;
	for (int d = 0; d < DIM; ++d) ray = ray && w->size[d] == 0.0f;
	return ray ? ray_sphere(w->origin, w->dir, tmax, sph, te) : sweep_sphere(w, tmax, sph, te);
}

static float box_cast_visit(void *ctx, const tree_t *t, const entry *e, float te, float tmax)
{
	sweep_user *bc = ctx;
	if (!sweep_item(t, bc->w, e, tmax, &te)) return -1.0f;
	return bc->fn(bc->ctx, make_handle(t, e->item), t->items[e->item].user, te);
}

ort_result ORTHANT_NAME(tree_box_cast)(const tree_t *t, box_t box, const float delta[DIM], float max_t, uint64_t mask,
                                       ORTHANT_NAME(ray_fn) * fn, void *ctx)
{
	if (!t || !fn) return ORT_ERROR_INVALID_ARGUMENT;
	ort_result r = ray_args_check(box.min, delta, max_t);
	if (r != ORT_OK) return r;
	if (box_check(&box) == ORT_ERROR_INVALID_BOX) return ORT_ERROR_INVALID_BOX;
	sweep w;
	sweep_make(&w, &box, NULL, delta, max_t);
	w.mask = mask;
	sweep_user bc = {&w, fn, ctx};
	reading_begin(t);
	r = sweep_walk(t, &w, box_cast_visit, &bc);
	reading_end(t); // may apply changes the callback made, or destroy the tree
	return r;
}

// ---- ray records ----------------------------------------------------------------

/// The record of a ray entering a sphere item at te: the point origin + te *
/// dir, the normal (point - c) / |point - c| in double, zero when the origin
/// is inside or on the sphere (|o - c|^2 <= r^2).
static void sphere_record(const sphere_t *s, const sweep *w, float te, ray_hit_t *h)
{
	double v[DIM], len2 = 0.0;
	for (int d = 0; d < DIM; ++d) {
		h->point[d] = w->origin[d] + te * w->dir[d];
		v[d] = (double)h->point[d] - s->c[d];
		len2 += v[d] * v[d];
	}
	bool inside = dist2_points(w->origin, s->c) <= (double)s->r * s->r;
	double len = sqrt(len2);
	for (int d = 0; d < DIM; ++d) h->normal[d] = inside || !(len > 0.0) ? 0.0f : (float)(v[d] / len);
}

/// The record of a ray entering box b at te: the entered face's normal (the
/// axis with the largest slab entry parameter >= 0, the first on a tie) and the
/// point on the box.
static void ray_record(const tree_t *t, const entry *e, const sweep *w, float te, ray_hit_t *h)
{
	h->handle = make_handle(t, e->item);
	h->user_data = t->items[e->item].user;
	h->t = te;
	const sphere_t *sph = t->spheres ? item_sphere(t, e->item) : NULL;
	if (sph) {
		sphere_record(sph, w, te, h);
		return;
	}
	const box_t *b = &e->box;
	int axis = -1;
	float best = 0.0f;
	for (int d = 0; d < DIM; ++d) {
		if (w->dir[d] == 0.0f) continue;
		float a = (b->min[d] - w->origin[d]) / w->dir[d], c = (b->max[d] - w->origin[d]) / w->dir[d];
		float in = a < c ? a : c;
		if (in >= 0.0f && (axis < 0 || in > best)) {
			axis = d;
			best = in;
		}
	}
	for (int d = 0; d < DIM; ++d) {
		h->point[d] = w->origin[d] + te * w->dir[d];
		h->normal[d] = 0.0f;
	}
	clamp_point(h->point, b, h->point);
	if (axis >= 0) {
		h->point[axis] = w->dir[axis] > 0.0f ? b->min[axis] : b->max[axis];
		h->normal[axis] = w->dir[axis] > 0.0f ? -1.0f : 1.0f;
	}
}

/// Sorted order of hits: nearer first, then lower handle id.
static inline bool hit_before(float ta, uint32_t ida, float tb, uint32_t idb)
{
	return ta < tb || (ta == tb && ida < idb);
}

typedef struct ray_first_ctx {
	const sweep *w;
	const entry *best;
	float t;
} ray_first_ctx;

static float ray_first_visit(void *ctx, const tree_t *t, const entry *e, float te, float tmax)
{
	ray_first_ctx *rf = ctx;
	if (!sweep_item(t, rf->w, e, tmax, &te)) return -1.0f;
	if (!rf->best || hit_before(te, e->item, rf->t, rf->best->item)) {
		rf->best = e;
		rf->t = te;
	}
	// Keep only hits at least as near, since a tie may have a lower id; 0 would
	// stop the walk, so a nearest hit at 0 clips to the smallest float instead.
	return rf->t > 0.0f ? rf->t : FLT_TRUE_MIN;
}

bool ORTHANT_NAME(tree_ray_first)(const tree_t *t, const float origin[DIM], const float dir[DIM], float max_t,
                                  uint64_t mask, ray_hit_t *out)
{
	if (!t || !out || ray_args_check(origin, dir, max_t) != ORT_OK) return false;
	sweep w;
	sweep_make(&w, NULL, origin, dir, max_t);
	w.mask = mask;
	ray_first_ctx rf = {&w, NULL, 0.0f};
	if (sweep_walk(t, &w, ray_first_visit, &rf) != ORT_OK || !rf.best) return false;
	ray_record(t, rf.best, &w, rf.t, out);
	return true;
}

/// The cap best hits so far, a max-heap on (t, id) in out while searching.
typedef struct ray_all_ctx {
	const sweep *w;
	ray_hit_t *out;
	int cap, n;
	int64_t count;
} ray_all_ctx;

static inline bool hit_less(const ray_hit_t *a, const ray_hit_t *b)
{
	return hit_before(a->t, a->handle.id, b->t, b->handle.id);
}

/// Restore the max-heap below i in out[0..n).
static void hit_sift_down(ray_hit_t *out, int n, int i)
{
	ray_hit_t v = out[i];
	for (int c; (c = 2 * i + 1) < n; i = c) {
		if (c + 1 < n && hit_less(&out[c], &out[c + 1])) c++;
		if (!hit_less(&v, &out[c])) break;
		out[i] = out[c];
	}
	out[i] = v;
}

static float ray_all_visit(void *ctx, const tree_t *t, const entry *e, float te, float tmax)
{
	ray_all_ctx *ra = ctx;
	if (!sweep_item(t, ra->w, e, tmax, &te)) return -1.0f;
	ra->count++;
	if (ra->n == ra->cap && (ra->n == 0 || !hit_before(te, e->item + 1, ra->out[0].t, ra->out[0].handle.id)))
		return INFINITY;
	ray_hit_t h;
	ray_record(t, e, ra->w, te, &h);
	if (ra->n < ra->cap) {
		int i = ra->n++;
		for (int p; i > 0 && hit_less(&ra->out[p = (i - 1) / 2], &h); i = p) ra->out[i] = ra->out[p];
		ra->out[i] = h;
	} else {
		ra->out[0] = h;
		hit_sift_down(ra->out, ra->n, 0);
	}
	return INFINITY;
}

ort_result ORTHANT_NAME(tree_ray_all)(const tree_t *t, const float origin[DIM], const float dir[DIM], float max_t,
                                      uint64_t mask, ray_hit_t *out, int cap, int *count)
{
	if (count) *count = 0;
	if (!t || !count || cap < 0 || (cap > 0 && !out)) return ORT_ERROR_INVALID_ARGUMENT;
	ort_result r = ray_args_check(origin, dir, max_t);
	if (r != ORT_OK) return r;
	sweep w;
	sweep_make(&w, NULL, origin, dir, max_t);
	w.mask = mask;
	ray_all_ctx ra = {&w, out, cap, 0, 0};
	r = sweep_walk(t, &w, ray_all_visit, &ra);
	if (r != ORT_OK) return r;
	// Heap to ascending order.
	for (int m = ra.n; m > 1; --m) {
		ray_hit_t x = out[0];
		out[0] = out[m - 1];
		out[m - 1] = x;
		hit_sift_down(out, m - 1, 0);
	}
	*count = ra.count > INT32_MAX ? INT32_MAX : (int)ra.count;
	return ORT_OK;
}

// ---- batches ----------------------------------------------------------------------

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

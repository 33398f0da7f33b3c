// query_planes.c: convex-region queries — ortN_tree_query_planes (a 3D view
// frustum, a 2D convex polygon) and the planes of a frustum or polygon.
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
#include "tree_int.h"
#include "tree_ownidx.h"

typedef ORTHANT_NAME(plane) plane_t;

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

/// The planes, for an own-list index walk (tree_ownidx.h): a group passes
/// when some box inside it might.
typedef struct planes_reach {
	const plane_t *planes;
	int count;
} planes_reach;

static bool planes_group(const void *q, const box_t *b, float *key)
{
	const planes_reach *r = q;
	*key = 0.0f;
	return planes_pass(r->planes, r->count, b->min, b->max, true);
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
		if (n->total == 0 || !(node_cats(t, ni) & mask)) continue;
		// leaves prune by the cell, which holds the key point; the others by
		// the bound, which holds every entry.
		const float *lo = leaves ? n->lo : n->bound.min, *hi = leaves ? n->hi : n->bound.max;
		if (!planes_pass(prune, nprune, lo, hi, true)) continue;
		const node cell = *n; // a copy: a callback's deferred change may move the pool
		own_iter it;
		planes_reach reach = {planes, count};
		own_iter_init(t, ni, &it, planes_group, &reach);
		for (uint32_t fill, c = own_iter_next(t, &it, &fill); c != NIL; c = own_iter_next(t, &it, &fill))
			for (uint32_t k = it.from; k < fill; ++k) {
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
	ort_result attached = detached_read(t);
	if (attached != ORT_OK) return attached;
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

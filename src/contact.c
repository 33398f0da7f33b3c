// contact.c: intersection records for a pair (as the classic game octree keeps them):
// the direction to push b out of a, how deep they overlap, and a point in
// both. Exact for box-box, sphere-sphere and box-sphere, in double.
#include "tree_int.h"

/// The box-box record: on each axis b leaves a either upwards (push
/// a.max - b.min) or downwards (b.max - a.min); the record takes the shortest
/// push over all axes (not the overlap's extent, which is shorter than the way
/// out when one box holds the other). The point is the overlap's centre.
static void contact_boxes(const box_t *a, const box_t *b, ORTHANT_NAME(contact) * out)
{
	double best = INFINITY;
	int axis = 0;
	float sign = 1.0f;
	for (int d = 0; d < DIM; ++d) {
		double lo = fmax(a->min[d], b->min[d]), hi = fmin(a->max[d], b->max[d]);
		out->point[d] = (float)(lo + (hi - lo) * 0.5);
		double up = (double)a->max[d] - b->min[d], down = (double)b->max[d] - a->min[d];
		if (up < best) best = up, axis = d, sign = 1.0f;
		if (down < best) best = down, axis = d, sign = -1.0f;
	}
	for (int d = 0; d < DIM; ++d) out->normal[d] = 0.0f;
	out->normal[axis] = sign;
	out->depth = (float)best;
}

static void contact_spheres(const sphere_t *a, const sphere_t *b, ORTHANT_NAME(contact) * out)
{
	double v[DIM], len = sqrt(dist2_points(a->c, b->c));
	for (int d = 0; d < DIM; ++d) v[d] = len > 0.0 ? ((double)b->c[d] - a->c[d]) / len : (d == 0 ? 1.0 : 0.0);
	double depth = (double)a->r + b->r - len;
	// The point halfway through the overlap, on the line between the centres.
	double reach = (double)a->r - depth * 0.5;
	for (int d = 0; d < DIM; ++d) {
		out->normal[d] = (float)v[d];
		out->point[d] = (float)(a->c[d] + v[d] * reach);
	}
	out->depth = (float)depth;
}

/// Box a against sphere b; the normal points from the box to the sphere.
static void contact_box_sphere(const box_t *a, const sphere_t *b, ORTHANT_NAME(contact) * out)
{
	double q[DIM], v[DIM], len2 = 0.0;
	for (int d = 0; d < DIM; ++d) {
		q[d] = fmin(fmax(b->c[d], a->min[d]), a->max[d]);
		v[d] = (double)b->c[d] - q[d];
		len2 += v[d] * v[d];
	}
	if (len2 > 0.0) { // centre outside the box: the nearest point is the contact
		double len = sqrt(len2);
		for (int d = 0; d < DIM; ++d) {
			out->normal[d] = (float)(v[d] / len);
			out->point[d] = (float)q[d];
		}
		out->depth = (float)((double)b->r - len);
		return;
	}
	// Centre inside: push out through the nearest face.
	double best = INFINITY;
	int axis = 0, side = 1;
	for (int d = 0; d < DIM; ++d) {
		double down = (double)b->c[d] - a->min[d], up = (double)a->max[d] - b->c[d];
		if (up < best) best = up, axis = d, side = 1;
		if (down < best) best = down, axis = d, side = -1;
	}
	for (int d = 0; d < DIM; ++d) {
		out->normal[d] = d == axis ? (float)side : 0.0f;
		out->point[d] = b->c[d];
	}
	out->point[axis] = side > 0 ? a->max[axis] : a->min[axis];
	out->depth = (float)(best + b->r);
}

ort_result ORTHANT_NAME(tree_contact)(const tree_t *t, ort_handle ha, ort_handle hb, ORTHANT_NAME(contact) * out)
{
	if (!t || !out) return ORT_ERROR_INVALID_ARGUMENT;
	uint32_t a = handle_index(t, ha), b = handle_index(t, hb);
	if (a == NIL || b == NIL) return misuse(t, ORT_ERROR_STALE_HANDLE, "orthant: contact of a stale or foreign handle");
	memset(out, 0, sizeof *out);
	out->a = ha;
	out->b = hb;
	box_t ba, bb;
	ORTHANT_NAME(tree_get_box)(t, ha, &ba);
	ORTHANT_NAME(tree_get_box)(t, hb, &bb);
	const sphere_t *sa = (t->items[a].flags & ITEM_PENDING) ? pending_sphere(t, a) : item_sphere(t, a);
	const sphere_t *sb = (t->items[b].flags & ITEM_PENDING) ? pending_sphere(t, b) : item_sphere(t, b);
	if (sa && sb) {
		contact_spheres(sa, sb, out);
	} else if (!sa && sb) {
		contact_box_sphere(&ba, sb, out);
	} else if (sa && !sb) {
		contact_box_sphere(&bb, sa, out);
		for (int d = 0; d < DIM; ++d) out->normal[d] = -out->normal[d];
	} else {
		if (!box_overlap(&ba, &bb)) {
			out->touching = false;
			out->depth = -1.0f;
			return ORT_OK;
		}
		contact_boxes(&ba, &bb, out);
	}
	out->touching = out->depth >= 0.0f;
	return ORT_OK;
}

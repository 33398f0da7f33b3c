// tree_build.c: ortN_tree_build — many items in one pass. Into an empty tree
// the whole batch is partitioned top-down (build_node, build_leaves_node): a
// root around the batch, then each node's boxes split among its children by a
// counting sort, O(n * depth) and no per-item descent. Into a tree that holds
// items the batch is inserted one by one, undone on failure.
#include <float.h>

#include "tree_int.h"

/// Past max_depth, whether boxes idx[0..n) are one box repeated: split()
/// refuses such a pile, and so does build.
static bool deep_pile_of_one(const tree_t *t, const node *nd, const box_t *boxes, const uint32_t *idx, uint32_t n)
{
	if (node_depth(t, nd) < t->def.max_depth) return false;
	for (uint32_t k = 1; k < n; ++k)
		if (memcmp(&boxes[idx[k]], &boxes[idx[0]], sizeof boxes[0]) != 0) return false;
	return true;
}

/// (all inside node ni's bounds) between ni and its children, recursively.
/// tmp and cls have room for n. Returns false when a pool cannot grow.
static bool build_node(tree_t *t, uint32_t ni, const box_t *boxes, const uint32_t *item_of, uint32_t *idx,
                       uint32_t *tmp, uint8_t *cls, uint32_t n)
{
	node *nd = &t->nodes[ni];
	nd->total = n;
	if (n <= (uint32_t)t->def.bucket_size || !can_split(t, nd) || deep_pile_of_one(t, nd, boxes, idx, n)) {
		if (!chunks_reserve(t, n / CHUNK_CAP + 1)) return false;
		for (uint32_t k = 0; k < n; ++k) entry_append(t, ni, &boxes[idx[k]], item_of[idx[k]]);
		// A refused pile waits, as after a split that could not help.
		nd = &t->nodes[ni];
		if (n > (uint32_t)t->def.bucket_size && can_split(t, nd)) nd->retry_at = n > UINT32_MAX / 2 ? UINT32_MAX : n * 2;
		return true;
	}
	nd->flags |= NODE_DIVIDED;
	// Counting sort by destination: class 0 stays here, class c + 1 goes to child c.
	uint32_t counts[NCHILD + 1] = {0};
	fitter f;
	fitter_init(t, nd, &f);
	for (uint32_t k = 0; k < n; ++k) {
		int c = fitter_child(&f, &boxes[idx[k]]) + 1;
		cls[k] = (uint8_t)c;
		counts[c]++;
	}
	uint32_t start[NCHILD + 2], pos[NCHILD + 1];
	start[0] = 0;
	for (int c = 0; c <= NCHILD; ++c) start[c + 1] = start[c] + counts[c];
	memcpy(pos, start, sizeof pos);
	for (uint32_t k = 0; k < n; ++k) tmp[pos[cls[k]]++] = idx[k];
	memcpy(idx, tmp, (size_t)n * sizeof *idx);
	if (!chunks_reserve(t, counts[0] / CHUNK_CAP + 1)) return false;
	for (uint32_t k = 0; k < counts[0]; ++k) entry_append(t, ni, &boxes[idx[k]], item_of[idx[k]]);
	for (int c = 0; c < NCHILD; ++c) {
		uint32_t m = counts[c + 1], s0 = start[c + 1];
		if (!m) continue;
		if (!nodes_reserve(t, 1)) return false;
		uint32_t ci = child_make(t, ni, c);
		if (!build_node(t, ci, boxes, item_of, idx + s0, tmp + s0, cls + s0, m)) return false;
		t->nodes[ni].cats |= t->nodes[ci].cats;
	}
	return true;
}

static box_t boxes_bounds(const box_t *boxes, uint32_t n)
{
	box_t all = boxes[0];
	for (uint32_t k = 1; k < n; ++k)
		for (int d = 0; d < DIM; ++d) {
			if (boxes[k].min[d] < all.min[d]) all.min[d] = boxes[k].min[d];
			if (boxes[k].max[d] > all.max[d]) all.max[d] = boxes[k].max[d];
		}
	return all;
}

/// A root for a batch into an empty tree: a cube around all of it, so cells
/// stay square and no growth is needed (root_cover still fixes rounding).
static bool root_for_batch(tree_t *t, const box_t *all)
{
	float side = 0.0f, lo[DIM], hi[DIM];
	for (int d = 0; d < DIM; ++d)
		if (all->max[d] - all->min[d] > side) side = all->max[d] - all->min[d];
	if (!(side > 0.0f)) side = 1.0f;
	for (int d = 0; d < DIM; ++d) {
		float c = all->min[d] + (all->max[d] - all->min[d]) * 0.5f;
		float s = side * 0.5f * 1.001f;
		float ulp = fabsf(c) * 1.2e-7f * 4.0f;
		if (s < ulp) s = ulp;
		if (s < FLT_MIN) s = FLT_MIN; // as in root_cell_for
		lo[d] = c - s;
		hi[d] = c + s;
	}
	if (!nodes_reserve(t, 1)) return false;
	if (t->root != NIL) empty_free(t, t->root);
	root_set(t, lo, hi);
	return true;
}

/// The top-down build of leaves trees: the n box indices at scratch[at..]
/// (item of box k at scratch[k]) all touch node ni's cell; each child gets the
/// ones touching its cell, written on top of the scratch stack (which may
/// move, so it is indexed, never held). Returns false when memory runs out.
static bool build_leaves_node(tree_t *t, uint32_t ni, const box_t *boxes, size_t at, uint32_t n, size_t top)
{
	uint32_t per[NCHILD] = {0};
	node *nd = &t->nodes[ni];
	nd->total = n; // what can_split weighs past max_depth
	bool split_it = n > (uint32_t)t->def.bucket_size && can_split(t, nd);
	if (split_it) {
		const uint32_t *S = t->scratch;
		for (uint32_t k = 0; k < n; ++k)
			for (int c = 0; c < NCHILD; ++c) {
				float lo[DIM], hi[DIM];
				child_cell(nd, c, lo, hi);
				if (cell_touches(lo, hi, &boxes[S[at + k]])) per[c]++;
			}
		split_it = leaves_split_helps(per, n); // as split() decides
		if (split_it && node_depth(t, nd) >= t->def.max_depth) {
			bool one = true; // past max_depth one box repeated is refused
			for (uint32_t k = 1; k < n && one; ++k) one = memcmp(&boxes[S[at + k]], &boxes[S[at]], sizeof boxes[0]) == 0;
			split_it = !one;
		}
	}
	if (!split_it) {
		if (!chunks_reserve(t, n / CHUNK_CAP + 1)) return false;
		const uint32_t *S = t->scratch;
		for (uint32_t k = 0; k < n; ++k) entry_append(t, ni, &boxes[S[at + k]], S[S[at + k]]);
		nd = &t->nodes[ni];
		nd->total = n;
		if (n > (uint32_t)t->def.bucket_size && can_split(t, nd)) nd->retry_at = n > UINT32_MAX / 2 ? UINT32_MAX : n * 2;
		return true;
	}
	nd->flags |= NODE_DIVIDED;
	uint64_t total = 0;
	for (int c = 0; c < NCHILD; ++c) {
		if (!per[c]) continue;
		if (!scratch_reserve(t, (top + per[c]) * sizeof(uint32_t)) || !nodes_reserve(t, 1)) return false;
		uint32_t *S = t->scratch;
		float lo[DIM], hi[DIM];
		child_cell(&t->nodes[ni], c, lo, hi);
		size_t w = top;
		for (uint32_t k = 0; k < n; ++k)
			if (cell_touches(lo, hi, &boxes[S[at + k]])) S[w++] = S[at + k];
		uint32_t ci = child_make(t, ni, c);
		if (!build_leaves_node(t, ci, boxes, top, per[c], top + per[c])) return false;
		total += t->nodes[ci].total;
		t->nodes[ni].cats |= t->nodes[ci].cats;
	}
	t->nodes[ni].total = (uint32_t)total;
	return true;
}

/// build into a tree holding no items: one pass, no per-item descent.
static ort_result build_empty(tree_t *t, const box_t *boxes, void *const *user, uint32_t n, ort_handle *out)
{
	ORTHANT_NAME(tree_clear)(t);
	box_t all = boxes_bounds(boxes, n);
	if (!t->def.use_region && !root_for_batch(t, &all)) return ORT_ERROR_OUT_OF_MEMORY;
	ort_result r = root_grow(t, &all);
	if (r == ORT_OK) {
		// Growth may have left a chain of empty cells: start from the grown cell.
		float lo[DIM], hi[DIM];
		memcpy(lo, t->nodes[t->root].lo, sizeof lo);
		memcpy(hi, t->nodes[t->root].hi, sizeof hi);
		ORTHANT_NAME(tree_clear)(t);
		root_set(t, lo, hi); // a node freed by clear is still reserved
	}
	if (r == ORT_OK) r = items_reserve(t, n);
	if (r == ORT_OK && t->bp && !bp_reserve(t, n, NIL)) r = ORT_ERROR_OUT_OF_MEMORY;
	if (r == ORT_OK && !scratch_reserve(t, (size_t)n * (3 * sizeof(uint32_t) + 1))) r = ORT_ERROR_OUT_OF_MEMORY;
	if (r != ORT_OK) {
		ORTHANT_NAME(tree_clear)(t);
		return r;
	}
	uint32_t *item_of = t->scratch;
	uint32_t *idx = item_of + n;
	uint32_t *tmp = idx + n;
	uint8_t *cls = (uint8_t *)(tmp + n);
	for (uint32_t k = 0; k < n; ++k) {
		item_of[k] = item_new(t, user ? user[k] : NULL, true);
		idx[k] = k;
	}
	bool built;
	if (t->def.placement == ORT_PLACEMENT_LEAVES)
		built = build_leaves_node(t, t->root, boxes, n, n, 2 * (size_t)n);
	else
		built = build_node(t, t->root, boxes, item_of, idx, tmp, cls, n);
	if (!built) {
		ORTHANT_NAME(tree_clear)(t);
		return ORT_ERROR_OUT_OF_MEMORY;
	}
	item_of = t->scratch; // the leaves build may have moved the scratch
	if (out)
		for (uint32_t k = 0; k < n; ++k) out[k] = make_handle(t, item_of[k]);
	return ORT_OK;
}

ort_result ORTHANT_NAME(tree_build)(tree_t *t, const box_t *boxes, void *const *user, int count, ort_handle *out)
{
	if (!t || count < 0 || (count > 0 && !boxes)) return ORT_ERROR_INVALID_ARGUMENT;
	if (in_callback(t)) return misuse(t, ORT_ERROR_BUSY, "orthant: build from inside a callback");
	for (int k = 0; k < count; ++k) {
		ort_result r = box_check(&boxes[k]);
		if (r != ORT_OK) return r;
	}
	if (out)
		for (int k = 0; k < count; ++k) out[k] = ORT_NULL_HANDLE;
	if (count == 0) return ORT_OK;
	if (count > INT32_MAX / 4) return ORT_ERROR_CAPACITY;
	if (t->live == 0) return build_empty(t, boxes, user, (uint32_t)count, out);
	// Into a non-empty tree, one by one; undone on failure with the handles
	// kept in scratch.
	ort_result r = items_reserve(t, (uint32_t)count);
	if (r != ORT_OK) return r;
	if (!scratch_reserve(t, (size_t)count * sizeof(ort_handle))) return ORT_ERROR_OUT_OF_MEMORY;
	ort_handle *made = t->scratch;
	for (int k = 0; k < count; ++k) {
		r = ORTHANT_NAME(tree_insert)(t, boxes[k], user ? user[k] : NULL, &made[k]);
		if (r != ORT_OK) {
			for (int j = k; j-- > 0;) ORTHANT_NAME(tree_remove)(t, made[j]);
			return r;
		}
	}
	if (out) memcpy(out, made, (size_t)count * sizeof *out);
	return ORT_OK;
}

// defer.c: changing the tree from inside its own callbacks.
//
// A game removes the bullet that hit and inserts the debris from inside the
// pair or query callback that found the hit. Changing the links a traversal is
// walking would be undefined behaviour, so every query counts
// itself in `readers`, and while any query runs:
//
// - insert gives out a handle at once (the item exists, ITEM_PENDING, and its
//   box and user data can be read) but the item enters the tree later;
// - remove marks the item ITEM_DOOMED: later changes to it are refused as
//   stale, but queries still running may report it;
// - move, set_filter and tick are queued;
// - destroy is queued last: the tree goes when the outermost query returns;
// - clear and build, which would replace everything, are refused (the
//   assert hook for clear, ORT_ERROR_BUSY for build), as are find_pairs and
//   update_pairs (they use the tree's scratch memory).
//
// When the outermost query returns, the queue is applied in call order. The
// room the changes can need in the pools is reserved when they are queued, so
// a change reports ORT_ERROR_OUT_OF_MEMORY when called, not later. Queued work
// only grows the pools; the traversals index the pools afresh after every
// callback, so growth under them is safe.
#include "tree_int.h"

/// Room in the queue for one more change, and in the pools for what applying
/// the queue may need once it holds it (a descent: descent_nodes,
/// growth steps, a chunk, or every leaf a leaves box touches).
static ort_result defer_reserve(tree_t *t, const box_t *box)
{
	if (t->pending_len == t->pending_cap) {
		uint32_t cap = t->pending_cap ? t->pending_cap * 2 : 16;
		if (!array_resize(t, (void **)&t->pending, t->pending_cap * sizeof(struct deferred),
		                  cap * sizeof(struct deferred)))
			return ORT_ERROR_OUT_OF_MEMORY;
		t->pending_cap = cap;
	}
	if (!box) return ORT_OK;
	uint64_t nodes = descent_nodes(t), chunks = 1;
	if (t->root != NIL) {
		// Growth steps: each doubles the root, so count them on its span.
		const node *r = &t->nodes[t->root];
		for (int d = 0; d < DIM; ++d) {
			double span = (double)r->hi[d] - r->lo[d];
			double reach = fmax((double)r->lo[d] - box->min[d], (double)box->max[d] - r->hi[d]);
			for (; reach >= 0.0 && nodes < 4096; span *= 2.0, reach -= span) nodes++;
		}
		if (t->def.placement == ORT_PLACEMENT_LEAVES) leaves_need(t, t->root, box, &nodes, &chunks);
	}
	uint64_t want_nodes = t->pending_nodes + nodes, want_chunks = t->pending_chunks + chunks;
	if (want_nodes > UINT32_MAX / 2 || want_chunks > UINT32_MAX / 2) return ORT_ERROR_OUT_OF_MEMORY;
	if (!nodes_reserve(t, (uint32_t)want_nodes) || !chunks_reserve(t, (uint32_t)want_chunks))
		return ORT_ERROR_OUT_OF_MEMORY;
	if (t->bp && !bp_reserve(t, 1, NIL)) return ORT_ERROR_OUT_OF_MEMORY;
	t->pending_nodes = (uint32_t)want_nodes;
	t->pending_chunks = (uint32_t)want_chunks;
	return ORT_OK;
}

static void defer_push(tree_t *t, uint8_t kind, uint32_t index, const box_t *box, const sphere_t *sph,
                       const ort_filter *filter)
{
	struct deferred *d = &t->pending[t->pending_len++];
	memset(d, 0, sizeof *d);
	d->kind = kind;
	d->item = index;
	if (box) d->box = *box;
	if (sph) {
		d->is_sphere = true;
		d->sphere = *sph;
	}
	if (filter) d->filter = *filter;
}

static ort_result defer_insert(tree_t *t, const box_t *box, const sphere_t *sph, void *user, ort_handle *out)
{
	ort_result r = items_reserve(t, 1);
	if (r == ORT_OK) r = defer_reserve(t, box);
	if (r != ORT_OK) return r;
	uint32_t i = item_new(t, user, false);
	t->items[i].flags |= ITEM_PENDING;
	t->pending_items++;
	defer_push(t, DEFER_INSERT, i, box, sph, NULL);
	if (out) *out = make_handle(t, i);
	return ORT_OK;
}

static ort_result defer_remove(tree_t *t, uint32_t i)
{
	ort_result r = defer_reserve(t, NULL);
	if (r != ORT_OK) return r;
	t->items[i].flags |= ITEM_DOOMED;
	defer_push(t, DEFER_REMOVE, i, NULL, NULL, NULL);
	return ORT_OK;
}

static ort_result defer_move(tree_t *t, uint32_t i, const box_t *box, const sphere_t *sph)
{
	ort_result r = defer_reserve(t, box);
	if (r != ORT_OK) return r;
	defer_push(t, DEFER_MOVE, i, box, sph, NULL);
	return ORT_OK;
}

static ort_result defer_filter(tree_t *t, uint32_t i, const ort_filter *filter)
{
	ort_result r = defer_reserve(t, NULL);
	if (r != ORT_OK) return r;
	defer_push(t, DEFER_FILTER, i, NULL, NULL, filter);
	return ORT_OK;
}

/// The box of a pending item: its latest queued insert or move.
static const box_t *pending_box(const tree_t *t, uint32_t i)
{
	for (uint32_t k = t->pending_len; k-- > 0;) {
		const struct deferred *d = &t->pending[k];
		if (d->item == i && (d->kind == DEFER_INSERT || d->kind == DEFER_MOVE)) return &d->box;
	}
	return NULL;
}

/// The sphere of a pending item, if its latest queued bound is one.
static const sphere_t *pending_sphere(const tree_t *t, uint32_t i)
{
	for (uint32_t k = t->pending_len; k-- > 0;) {
		const struct deferred *d = &t->pending[k];
		if (d->item == i && (d->kind == DEFER_INSERT || d->kind == DEFER_MOVE)) return d->is_sphere ? &d->sphere : NULL;
	}
	return NULL;
}

/// Apply the queue. Room was reserved as it filled, so the changes cannot
/// fail for memory, short of a broad phase whose pairs grew meanwhile; such a
/// change is reported through the assert hook and dropped (the tree stays valid).
static void defer_apply(tree_t *t)
{
	// An attach that fails here leaves the tree detached and whole; each
	// change below settles (or stores its new item beside the marked ones).
	(void)detached_settle(t, true);
	for (uint32_t k = 0; k < t->pending_len; ++k) {
		struct deferred d = t->pending[k];
		item *it = &t->items[d.item];
		ort_result r = ORT_OK;
		switch (d.kind) {
		case DEFER_INSERT:
			it->flags &= ~(uint32_t)ITEM_PENDING;
			t->pending_items--;
			r = store_item(t, d.item, &d.box, d.is_sphere ? &d.sphere : NULL);
			if (r != ORT_OK) item_release(t, d.item);
			break;
		case DEFER_REMOVE:
			it->flags &= ~(uint32_t)ITEM_DOOMED;
			r = ORTHANT_NAME(tree_remove)(t, make_handle(t, d.item));
			break;
		case DEFER_MOVE: r = move_item(t, make_handle(t, d.item), d.box, d.is_sphere ? &d.sphere : NULL); break;
		case DEFER_FILTER: r = ORTHANT_NAME(tree_set_filter)(t, make_handle(t, d.item), d.filter); break;
		}
		if (r != ORT_OK) misuse(t, r, "orthant: a change made inside a callback failed when applied");
	}
	t->pending_len = 0;
	t->pending_nodes = t->pending_chunks = 0;
	for (; t->pending_ticks > 0; t->pending_ticks--) ORTHANT_NAME(tree_tick)(t);
	if (t->destroy_pending) {
		t->destroy_pending = false;
		ORTHANT_NAME(tree_destroy)(t);
	}
}

static void reading_end(const tree_t *ct)
{
	tree_t *t = (tree_t *)ct;
	if (atomic_fetch_sub_explicit(&t->readers, 1, memory_order_release) != 1) return;
	if (t->pending_len || t->pending_ticks || t->destroy_pending) defer_apply(t);
}

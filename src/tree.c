// tree.c: the tree's items — create and destroy, insert, remove, move,
// filters, accessors, clear and tick. The layout and its invariants are in
// tree_int.h; the pools in tree_pool.c; splits, merges, pruning and root
// growth in tree_shape.c; the batched build in tree_build.c; validation and
// statistics in tree_check.c.
//
// ## How an item finds its node
//
// loose and tight: from the start node, while the node is divided, go to the
// child the item fits (fit_child); store it where it stops. A leaf that then
// holds more than bucket_size entries splits: every entry that fits a child
// moves down, and children that end up over-full split in turn. An item in a
// divided node therefore never fits one of its children — the generic
// quadtree's "smallest node that fully contains it" for tight, and for loose
// "the deepest loose cell that holds it, the cell chosen by its centre", which
// never refuses an item for straddling a split line.
//
// leaves: the item goes down every child its box touches and is stored in each
// leaf reached (as the quadtree that rebuilds every frame does). Splits copy
// entries into every child they touch. An item that would be copied into more
// than LEAVES_CAP leaves is stored once instead, at the smallest node holding
// it (tree_cap.c).
//
// ## Failure leaves the tree as it was
//
// Every mutation first makes sure the pools hold what it can need (the
// *_reserve functions; insert_reserve works out the root's growth on a copy
// first), so once it starts changing links it cannot fail half-way: a failed
// call changes nothing but capacity. Splits and merges only make the tree
// better, never more correct: when one cannot get memory it is skipped (it
// is tried again once the node holds twice as many entries: node_retry_after),
// and the operation that triggered it still succeeds.
#include "tree_int.h"

// ---- create / destroy ---------------------------------------------------------

def_t ORTHANT_NAME(tree_default_def)(void)
{
	return (def_t){
	    .bucket_size = 16,
	    .max_depth = 8,
	    .min_cell_size = 0.0f,
	    .placement = ORT_PLACEMENT_LOOSE,
	    .looseness = 2.0f,
	    .merge_size = -1,
	    .prune_delay = 0,
	};
}

static bool def_ok(const def_t *d)
{
	if (d->bucket_size < 1 || d->max_depth < 0 || d->max_depth > ORTHANT_MAX_DEPTH) return false;
	if (!(d->min_cell_size >= 0.0f) || !isfinite(d->min_cell_size)) return false;
	if ((unsigned)d->placement >= ORT_PLACEMENT_COUNT) return false;
	if (!(d->looseness > 1.0f && d->looseness <= 4.0f)) return false;
	if (d->merge_size < -1 || d->merge_size > d->bucket_size) return false;
	if (d->prune_delay < 0 || d->prune_delay > 4096 || d->item_capacity < 0) return false;
	if ((d->allocator.alloc == NULL) != (d->allocator.free == NULL)) return false;
	if (d->use_region) {
		if (box_check(&d->region) != ORT_OK) return false;
		for (int i = 0; i < DIM; ++i)
			if (!(d->region.min[i] < d->region.max[i])) return false;
	}
	return true;
}

ort_result ORTHANT_NAME(tree_create)(const def_t *def, tree_t **out)
{
	if (!out) return ORT_ERROR_INVALID_ARGUMENT;
	*out = NULL;
	if (!def || !def_ok(def)) return ORT_ERROR_INVALID_ARGUMENT;
	tree_t *t = allocator_alloc(&def->allocator, sizeof *t);
	if (!t) return ORT_ERROR_OUT_OF_MEMORY;
	memset(t, 0, sizeof *t);
	t->def = *def;
	// (tree_shape.c: tidy says why.) Leaves placement keeps half a bucket:
	// there a node's total counts copies, and folding at a whole bucket made
	// the 2D build of test_memory's boxes hold 121.6 B/object, not 107.1.
	if (t->def.merge_size < 0)
		t->def.merge_size = t->def.placement == ORT_PLACEMENT_LEAVES ? t->def.bucket_size / 2 : t->def.bucket_size - 1;
	t->alloc = def->allocator;
	t->bytes = t->bytes_peak = sizeof *t;
	// A per-tree tag in every handle, so one tree's handles fail in another.
	uint64_t a = (uint64_t)(uintptr_t)t * 0x9E3779B97F4A7C15ull;
	t->salt = (uint32_t)(a >> 32) & 0xFFFF0000u;
	t->item_free = t->node_free = t->chunk_free = t->own_free = NIL;
	t->root = NIL;
	if (def->item_capacity > 0) {
		uint32_t n = (uint32_t)def->item_capacity;
		if (items_reserve(t, n) != ORT_OK || !chunks_reserve(t, n / CHUNK_CAP + 1) || !nodes_reserve(t, n / 4 + 1)) {
			ORTHANT_NAME(tree_destroy)(t);
			return ORT_ERROR_OUT_OF_MEMORY;
		}
	}
	*out = t;
	return ORT_OK;
}

void ORTHANT_NAME(tree_destroy)(tree_t *t)
{
	if (!t) return;
	if (in_callback(t)) {
		t->destroy_pending = true; // the outermost query's end destroys it
		return;
	}
	mem_free(t, t->items, (size_t)t->item_cap * sizeof(item));
	mem_free(t, t->nodes, (size_t)t->node_cap * sizeof(node));
	mem_free(t, t->chunks, (size_t)t->chunk_cap * sizeof(chunk));
	mem_free(t, t->scratch, t->scratch_bytes);
	mem_free(t, t->filters, (size_t)t->filter_cap * sizeof(ort_filter));
	mem_free(t, t->node_cats, (size_t)t->node_cats_cap * sizeof(uint64_t));
	mem_free(t, t->node_waits, (size_t)t->node_waits_cap * sizeof *t->node_waits);
	mem_free(t, t->odd_mids, (size_t)t->odd_mids_cap * sizeof *t->odd_mids);
	mem_free(t, t->spheres, (size_t)t->sphere_cap * sizeof(sphere_t));
	mem_free(t, t->pending, (size_t)t->pending_cap * sizeof(struct deferred));
	own_free_all(t);
	mirror_release(t);
	mem_free(t, t->overcap, (size_t)t->overcap_cap * sizeof *t->overcap);
	bp_free(t);
	detached_free(t);
	mem_free(t, t->mlog, (size_t)t->mlog_cap * sizeof *t->mlog);
	assert(t->bytes == sizeof *t);
	ort_allocator a = t->alloc;
	allocator_free(&a, t, sizeof *t);
}

// ---- insert -----------------------------------------------------------------

/// leaves_need's walk, which stops once past LEAVES_CAP + 1 leaves.
static void leaves_need_walk(const tree_t *t, uint32_t ni, const box_t *box, uint64_t *nodes, uint64_t *chunks)
{
	const node *n = &t->nodes[ni];
	if (!(n->flags & NODE_DIVIDED)) {
		*chunks += 1;
		return;
	}
	for (int c = 0; c < NCHILD && *chunks <= LEAVES_CAP; ++c) {
		float lo[DIM], hi[DIM];
		child_cell(t, n, c, lo, hi);
		if (!cell_touches(lo, hi, box)) continue;
		if (n->child[c] == NIL) {
			*nodes += 1;
			*chunks += 1;
		} else {
			leaves_need_walk(t, n->child[c], box, nodes, chunks);
		}
	}
}

/// Pools an insertion of box below start may need, leaves placement: a node
/// and a chunk per leaf it reaches, counted by walking the same path — at most
/// LEAVES_CAP + 1 of them: past the cap the item takes one chunk (tree_cap.c).
static void leaves_need(const tree_t *t, uint32_t ni, const box_t *box, uint64_t *nodes, uint64_t *chunks)
{
	uint64_t n = 0, c = 0;
	leaves_need_walk(t, ni, box, &n, &c);
	*nodes += n;
	*chunks += c;
}

/// Room for all that storing box from the root takes: the root's growth
/// towards it (root_cover), then the descent. Reserved before either starts,
/// so neither can fail half-way, and a failure changes nothing but capacity.
/// ORT_ERROR_OUT_OF_RANGE when the root cannot grow to hold the box.
static ort_result insert_reserve(tree_t *t, const box_t *box)
{
	root_plan p;
	if (!root_plan_for(t, box, &p)) return ORT_ERROR_OUT_OF_RANGE;
	if (!odd_mids_reserve(t, p.doublings)) return ORT_ERROR_OUT_OF_MEMORY;
	uint64_t nodes = p.nodes, chunks = 1;
	if (t->def.placement != ORT_PLACEMENT_LEAVES) {
		nodes += descent_nodes(t);
	} else if (!p.fresh) {
		// leaves: the leaves the box reaches now, and for each doubling the
		// new root's other children it may touch, a node and a chunk each.
		// (A fresh root is one empty leaf: one chunk.)
		chunks = (uint64_t)p.doublings * (NCHILD - 1);
		nodes += chunks;
		leaves_need(t, t->root, box, &nodes, &chunks);
	}
	if (nodes > UINT32_MAX / 2 || chunks > UINT32_MAX / 2) return ORT_ERROR_OUT_OF_MEMORY;
	if (!nodes_reserve(t, (uint32_t)nodes) || !chunks_reserve(t, (uint32_t)chunks)) return ORT_ERROR_OUT_OF_MEMORY;
	return ORT_OK;
}

/// leaves: store item index in every leaf under ni that box touches. Splits
/// wait for split_region: a split here would spend pool room reserved for the
/// leaves still to come.
static void insert_leaves(tree_t *t, uint32_t ni, const box_t *box, uint32_t index)
{
	node *n = &t->nodes[ni];
	if (!(n->flags & NODE_DIVIDED)) {
		entry_append(t, ni, box, index);
		total_add(t, ni, 1);
		cats_up(t, ni, item_cat(t, index));
		return;
	}
	for (int c = 0; c < NCHILD; ++c) {
		float lo[DIM], hi[DIM];
		child_cell(t, &t->nodes[ni], c, lo, hi);
		if (!cell_touches(lo, hi, box)) continue;
		uint32_t ci = t->nodes[ni].child[c];
		if (ci == NIL) ci = child_make(t, ni, c);
		insert_leaves(t, ci, box, index);
	}
}

/// leaves: split every over-full leaf under ni that box touches.
static void split_region(tree_t *t, uint32_t ni, const box_t *box)
{
	node *n = &t->nodes[ni];
	if (!(n->flags & NODE_DIVIDED)) {
		if (wants_split(t, n)) split(t, ni);
		return;
	}
	for (int c = 0; c < NCHILD; ++c) {
		uint32_t ci = t->nodes[ni].child[c];
		if (ci != NIL && cell_touches(t->nodes[ci].lo, t->nodes[ci].hi, box)) split_region(t, ci, box);
	}
}

/// Store item index under start (pools reserved).
static void insert_at(tree_t *t, uint32_t start, const box_t *box, uint32_t index)
{
	t->items[index].addr = NIL;
	if (t->def.placement == ORT_PLACEMENT_LEAVES) {
		assert(start == t->root);
		cap_insert(t, box, index);
		return;
	}
	uint32_t ni = start;
	for (;;) {
		node *n = &t->nodes[ni];
		WORK_CHURN(1);
		if (!(n->flags & NODE_DIVIDED)) break;
		int c = fit_child(t, n, box);
		if (c < 0) break;
		uint32_t ci = n->child[c];
		if (ci == NIL) ci = child_make(t, ni, c);
		ni = ci;
	}
	entry_append(t, ni, box, index);
	total_add(t, ni, 1);
	cats_up(t, ni, item_cat(t, index));
	node *n = &t->nodes[ni];
	if (wants_split(t, n)) split(t, ni);
}

/// Give item i its bound: a sphere (sph) or just its box (sph NULL).
static void item_set_shape(tree_t *t, uint32_t i, const sphere_t *sph)
{
	if (sph) {
		t->spheres[i] = *sph;
		t->items[i].flags |= ITEM_SPHERE;
	} else {
		t->items[i].flags &= ~(uint32_t)ITEM_SPHERE;
	}
}

/// The box of a sphere, widened by an ulp each way so it holds the exact
/// sphere whatever c - r and c + r round to.
static ort_result sphere_box(const float centre[DIM], float radius, sphere_t *sph, box_t *box)
{
	if (!centre || point_check(centre) != ORT_OK || !isfinite(radius) || !(radius >= 0.0f))
		return ORT_ERROR_INVALID_BOX;
	for (int d = 0; d < DIM; ++d) {
		sph->c[d] = centre[d];
		box->min[d] = nextafterf(centre[d] - radius, -INFINITY);
		box->max[d] = nextafterf(centre[d] + radius, INFINITY);
	}
	sph->r = radius;
	return box_check(box);
}

static ort_result insert_item(tree_t *t, box_t box, const sphere_t *sph, void *user_data, ort_handle *out)
{
	if (out) *out = ORT_NULL_HANDLE;
	if (!t) return ORT_ERROR_INVALID_ARGUMENT;
	ort_result r = box_check(&box);
	if (r != ORT_OK) return r;
	if ((r = detached_settle(t, true)) != ORT_OK) return r;
	if ((r = items_reserve(t, 1)) != ORT_OK) return r;
	if (sph && !spheres_reserve(t)) return ORT_ERROR_OUT_OF_MEMORY;
	if (in_callback(t)) return defer_insert(t, &box, sph, user_data, out);
	if (t->bp && !bp_reserve(t, 1, NIL)) return ORT_ERROR_OUT_OF_MEMORY;
	if ((r = insert_reserve(t, &box)) != ORT_OK) return r;
	root_cover(t, &box);
	uint32_t i = item_new(t, user_data, true);
	item_set_shape(t, i, sph);
	insert_at(t, t->root, &box, i);
	own_settle_pending(t);
	if (out) *out = make_handle(t, i);
	return ORT_OK;
}

ort_result ORTHANT_NAME(tree_insert)(tree_t *t, box_t box, void *user_data, ort_handle *out)
{
	return insert_item(t, box, NULL, user_data, out);
}

ort_result ORTHANT_NAME(tree_insert_sphere)(tree_t *t, const float centre[DIM], float radius, void *user_data,
                                            ort_handle *out)
{
	if (out) *out = ORT_NULL_HANDLE;
	sphere_t sph;
	box_t box;
	ort_result r = sphere_box(centre, radius, &sph, &box);
	if (r != ORT_OK) return r;
	return insert_item(t, box, &sph, user_data, out);
}

/// Store an item that already has its slot (a deferred insert being applied).
static ort_result store_item(tree_t *t, uint32_t i, const box_t *box, const sphere_t *sph)
{
	ort_result r;
	item_set_shape(t, i, sph);
	if (t->bp && !bp_reserve(t, 1, NIL)) return ORT_ERROR_OUT_OF_MEMORY;
	if ((r = insert_reserve(t, box)) != ORT_OK) return r;
	root_cover(t, box);
	insert_at(t, t->root, box, i);
	own_settle_pending(t);
	if (t->bp) bp_touch(t, i);
	return ORT_OK;
}

// ---- remove -----------------------------------------------------------------

/// leaves: take item index out of every leaf under ni its box touches; returns
/// how many entries went.
static uint32_t remove_leaves(tree_t *t, uint32_t ni, const box_t *box, uint32_t index)
{
	node *n = &t->nodes[ni];
	uint32_t gone = 0;
	if (!(n->flags & NODE_DIVIDED)) {
		ENTRY_LOOP(t, n, c, k)
		{
			WORK_CHURN(1);
			if (t->chunks[c].e[k].item == index) {
				entry_remove(t, ni, c * CHUNK_CAP + k);
				gone = 1;
				goto done;
			}
		}
	done:
		t->nodes[ni].total -= gone;
		return gone;
	}
	for (int c = 0; c < NCHILD; ++c) {
		uint32_t ci = t->nodes[ni].child[c];
		if (ci == NIL) continue;
		if (!cell_touches(t->nodes[ci].lo, t->nodes[ci].hi, box)) continue;
		gone += remove_leaves(t, ci, box, index);
	}
	t->nodes[ni].total -= gone;
	return gone;
}

/// The deepest node under which every entry of the item lies.
static uint32_t detach(tree_t *t, uint32_t index)
{
	item *it = &t->items[index];
	if (it->flags & ITEM_CAPPED) return cap_detach(t, index);
	if (t->def.placement == ORT_PLACEMENT_LEAVES) {
		box_t box = entry_at(t, it->addr)->box;
		uint32_t gone = remove_leaves(t, t->root, &box, index);
		(void)gone;
		assert(gone >= 1);
		// Leaves placement can empty several branches; tidy from each leaf
		// the box touched is costly, so tidy walks the box's region once.
		return NIL;
	}
	uint32_t ni = item_node(t, index);
	entry_remove(t, ni, it->addr);
	total_add(t, ni, -1);
	return ni;
}

/// loose: move items (entries of node ni, just split) whose box centres lie
/// outside ni's cell to where an insert would store them, as a build would
/// have. A move keeps an entry in place while its node's loose cell holds it,
/// so a leaf gathers entries centred in its neighbours' cells; when it splits
/// they fit none of its children (the child a centre picks is the nearest,
/// and its loose cell reaches half as far past the parent's cell) and would
/// stay in the divided node, a chunk of their own in most. Moves of 20k small
/// boxes, a twentieth moving 0.3 a frame, left 177 such entries after 200
/// frames, nearly a chunk each. Best effort: an item whose move finds no
/// memory stays (still valid), and ni keeps at least one entry, so the
/// rehomes never leave an empty node for a tidy (which the split's caller
/// may not expect) to prune. The splits a rehome's insert causes rehome
/// nothing (t->rehoming), so the recursion is a split deeper at most.
static void rehome_astray(tree_t *t, uint32_t ni, const uint32_t *items, uint32_t n)
{
	if (ni == t->root || t->rehoming) return; // (the root's loose cell is the tree's: nowhere else to go)
	t->rehoming = true;
	for (uint32_t k = 0; k < n && t->nodes[ni].total > 1; ++k) {
		uint32_t i = items[k];
		box_t box = entry_at(t, t->items[i].addr)->box;
		if (insert_reserve(t, &box) != ORT_OK) break;
		assert(item_node(t, i) == ni);
		uint32_t start = ni;
		while (start != t->root && !cell_holds(t->nodes[start].lo, t->nodes[start].hi, &box))
			start = t->nodes[start].parent;
		detach(t, i);
		insert_at(t, start, &box, i);
	}
	t->rehoming = false;
}

/// Prune and merge after a leaves removal: every emptied leaf under the box.
static void tidy_region(tree_t *t, uint32_t ni, const box_t *box)
{
	node *n = &t->nodes[ni];
	if (!(n->flags & NODE_DIVIDED)) {
		tidy(t, ni);
		return;
	}
	for (int c = 0; c < NCHILD; ++c) {
		uint32_t ci = t->nodes[ni].child[c];
		if (ci == NIL || !cell_touches(t->nodes[ci].lo, t->nodes[ci].hi, box)) continue;
		tidy_region(t, ci, box);
		if (t->nodes[ni].flags & NODE_FREE || !(t->nodes[ni].flags & NODE_DIVIDED)) return;
	}
}

static void tidy_after(tree_t *t, uint32_t ni, const box_t *box)
{
	if (ni != NIL)
		tidy(t, ni);
	else
		tidy_region(t, t->root, box);
}

ort_result ORTHANT_NAME(tree_remove)(tree_t *t, ort_handle h)
{
	if (!t) return ORT_ERROR_INVALID_ARGUMENT;
	uint32_t i = handle_index(t, h);
	if (i == NIL || (t->items[i].flags & ITEM_DOOMED))
		return misuse(t, ORT_ERROR_STALE_HANDLE, "orthant: remove of a stale or foreign handle");
	ort_result r = detached_settle(t, false);
	if (r != ORT_OK) return r;
	if (in_callback(t) || (t->items[i].flags & ITEM_PENDING)) return defer_remove(t, i);
	if (t->bp) {
		if (!bp_reserve(t, 0, i)) return ORT_ERROR_OUT_OF_MEMORY;
		bp_detach(t, i);
	}
	box_t box = entry_at(t, t->items[i].addr)->box;
	uint32_t ni = detach(t, i);
	item_release(t, i);
	tidy_after(t, ni, &box);
	own_settle_pending(t);
	return ORT_OK;
}

// ---- move -------------------------------------------------------------------

static ort_result move_item(tree_t *t, ort_handle h, box_t box, const sphere_t *sph);
static ort_result move_steps(tree_t *t, ort_handle h, box_t box, const sphere_t *sph);
static ort_result move_now(tree_t *t, ort_handle h, box_t box, const sphere_t *sph);

ort_result ORTHANT_NAME(tree_move)(tree_t *t, ort_handle h, box_t box)
{
	// While most items move, a move is a write of the dense array
	// (tree_detach.c): that path is all this function holds, the other steps
	// are out of line, so a world moving every item one call at a time pays
	// for no more than it uses.
	if (t && detached_move_quick(t, h, &box)) return ORT_OK;
	return move_item(t, h, box, NULL);
}

ort_result ORTHANT_NAME(tree_move_sphere)(tree_t *t, ort_handle h, const float centre[DIM], float radius)
{
	sphere_t sph;
	box_t box;
	ort_result r = sphere_box(centre, radius, &sph, &box);
	if (r != ORT_OK) return r;
	return move_item(t, h, box, &sph);
}

ort_result ORTHANT_NAME(tree_get_sphere)(const tree_t *t, ort_handle h, float centre[DIM], float *radius)
{
	if (!t || !centre || !radius) return ORT_ERROR_INVALID_ARGUMENT;
	uint32_t i = handle_index(t, h);
	if (i == NIL) return misuse(t, ORT_ERROR_STALE_HANDLE, "orthant: get_sphere of a stale or foreign handle");
	const sphere_t *s = item_sphere(t, i);
	if (t->items[i].flags & ITEM_PENDING) s = pending_sphere(t, i);
	if (!s) return ORT_ERROR_INVALID_ARGUMENT; // a box item
	memcpy(centre, s->c, sizeof s->c);
	*radius = s->r;
	return ORT_OK;
}

/// Give item h a new bound: box, and sph when it is a sphere. Out of line:
/// see ortN_tree_move.
static __attribute__((noinline)) ort_result move_item(tree_t *t, ort_handle h, box_t box, const sphere_t *sph)
{
	ort_result r;
	if (t && detached_move(t, h, &box, sph, &r)) return r; // a write of the dense array
	return move_steps(t, h, box, sph);
}

/// Moves looked ahead in the previous round's log (move_ahead).
#define MOVE_AHEAD 16u

/// The fetches of a move's misses ahead of time, for four moves to come
/// (item slots, NIL for none; a slot that is not a live item is skipped, so a
/// wrong guess costs a few wasted fetches): item a's item record, the entry
/// and chunk of item b (whose item was fetched earlier), the node of item c
/// (whose chunk was), and the parent of item d's node (whose node was: a
/// move that grows its node's bound grows the parent's too when it passes
/// it, 1 move in 8 of S10's).
/// Always inlined, as fetch_span is (GCC 12 -O3 found this function pure
/// and deleted its calls: move_ahead and det_apply_waits held no prefetch).
ORT_INLINE void move_fetch(const tree_t *t, uint32_t a, uint32_t b, uint32_t c,
                                                             uint32_t d)
{
	if (a < t->item_len) __builtin_prefetch(&t->items[a]);
	if (b < t->item_len && (t->items[b].flags & ITEM_LIVE) && t->items[b].addr != NIL) {
		uint32_t addr = t->items[b].addr;
		__builtin_prefetch(&t->chunks[addr / CHUNK_CAP]); // its owner (item_node)
		fetch_span(entry_at(t, addr), sizeof(entry));
	}
	if (c < t->item_len && (t->items[c].flags & ITEM_LIVE)) {
		uint32_t ni = item_node(t, c);
		if (ni != NIL) fetch_span(&t->nodes[ni], sizeof(node));
	}
	if (d < t->item_len && (t->items[d].flags & ITEM_LIVE)) {
		uint32_t ni = item_node(t, d);
		uint32_t up = ni != NIL ? t->nodes[ni].parent : NIL;
		if (up != NIL) fetch_span(&t->nodes[up], sizeof(node));
	}
}

/// A per-item move of item slot i while a broad phase runs: a game moves its
/// objects in the same order every frame, an order that has nothing to do
/// with the item slots, so each move misses the caches on its item, its
/// entry's chunk and its node, one after another, and one call cannot see
/// the next. The previous round's moves, logged in call order, foretell this
/// round's: the item MOVE_AHEAD moves on is fetched now, the entry and chunk
/// of the one half as far (its item fetched a round of calls ago), the
/// node of the one a quarter as far (its chunk fetched) and the parent of
/// the node of the one an eighth as far (its node fetched). Then i is
/// logged.
/// Only prefetches read the log's slots (each checked live before its item
/// is read), so a wrong forecast costs a few wasted fetches, never a wrong
/// result. The log grows to the most moves a round makes, at most item_len
/// (a round longer than that starts it over); without memory to grow it,
/// the move goes on unlogged.
static void move_ahead(tree_t *t, uint32_t i)
{
	uint32_t p = t->mlog_pos, len = t->mlog_len;
	move_fetch(t, p + MOVE_AHEAD < len ? t->mlog[p + MOVE_AHEAD] : NIL,
	           p + MOVE_AHEAD / 2 < len ? t->mlog[p + MOVE_AHEAD / 2] : NIL,
	           p + MOVE_AHEAD / 4 < len ? t->mlog[p + MOVE_AHEAD / 4] : NIL,
	           p + MOVE_AHEAD / 8 < len ? t->mlog[p + MOVE_AHEAD / 8] : NIL);
	if (p == t->mlog_cap) {
		if (p >= t->item_len && p > 0) {
			t->mlog_len = p; // a round longer than the items: start over
			p = 0;
		} else {
			uint64_t want = (uint64_t)p * 2 < 64 ? 64 : (uint64_t)p * 2;
			if (want > t->item_len && t->item_len >= 64) want = t->item_len;
			uint32_t *m = mem_alloc(t, (size_t)want * sizeof *m);
			if (!m) return;
			if (p) memcpy(m, t->mlog, (size_t)p * sizeof *m);
			mem_free(t, t->mlog, (size_t)t->mlog_cap * sizeof *t->mlog);
			t->mlog = m;
			t->mlog_cap = (uint32_t)want;
		}
	}
	t->mlog[p] = i;
	t->mlog_pos = p + 1;
}

/// move_item's steps after the detached mode's: the entry moves (or the move
/// waits in the deferred queue).
static inline ort_result move_steps(tree_t *t, ort_handle h, box_t box, const sphere_t *sph)
{
	if (t && t->bp && h.id - 1 < t->item_len) move_ahead(t, h.id - 1);
	ort_result r = t ? detached_settle(t, false) : ORT_OK;
	if (r != ORT_OK) return r;
	r = move_now(t, h, box, sph);
	if (t) {
		if (r == ORT_OK) detached_moved(t, h, &box);
		own_settle_pending(t);
	}
	return r;
}

static ort_result move_now(tree_t *t, ort_handle h, box_t box, const sphere_t *sph)
{
	if (!t) return ORT_ERROR_INVALID_ARGUMENT;
	uint32_t i = handle_index(t, h);
	if (i == NIL || (t->items[i].flags & ITEM_DOOMED))
		return misuse(t, ORT_ERROR_STALE_HANDLE, "orthant: move of a stale or foreign handle");
	ort_result r = box_check(&box);
	if (r != ORT_OK) return r;
	if (sph && !spheres_reserve(t)) return ORT_ERROR_OUT_OF_MEMORY;
	// The detached mode's attach moves now, even from inside a callback.
	if ((in_callback(t) && !t->det_attaching) || (t->items[i].flags & ITEM_PENDING)) return defer_move(t, i, &box, sph);
	// harmless if the move fails below: the touch is re-checked
	if (t->bp && !t->det_attaching && !bp_reserve_touch(t, i)) return ORT_ERROR_OUT_OF_MEMORY;
	// Read once: nothing below the reservation moves the pools before the
	// in-place write (the item, its entry and node stay where they are).
	item *it = &t->items[i];
	uint32_t addr = it->addr, ni = item_node(t, i);
	node *n = &t->nodes[ni];
	entry *e = entry_at(t, addr);
	if (it->flags & ITEM_CAPPED) {
		if (cap_move_in_place(t, i, &box)) {
			item_set_shape(t, i, sph);
			return ORT_OK;
		}
	} else if (t->def.placement == ORT_PLACEMENT_LEAVES
	                   // A box inside one half-open leaf cell touches no other leaf.
	                   ? cell_holds(n->lo, n->hi, &e->box) && cell_holds(n->lo, n->hi, &box)
	                   : node_holds(t, n, &box) && (!(n->flags & NODE_DIVIDED) || fit_child(t, n, &box) < 0)) {
		e->box = box;
		bound_grow(t, ni, &box);
		own_on_write(t, ni, addr, &box);
		item_set_shape(t, i, sph);
		return ORT_OK;
	}
	// Re-home: everything the new place needs is reserved before the item
	// leaves the old one, so a failure leaves it untouched.
	if ((r = insert_reserve(t, &box)) != ORT_OK) return r;
	root_cover(t, &box);
	uint32_t start = t->root;
	if (t->def.placement != ORT_PLACEMENT_LEAVES) {
		// As the game octree moves items: climb to the first ancestor that
		// holds the new box.
		// The cell itself must hold it (not only the loose cell): a descent
		// from there goes where an insert from the root would.
		start = item_node(t, i);
		while (start != t->root && !cell_holds(t->nodes[start].lo, t->nodes[start].hi, &box))
			start = t->nodes[start].parent;
	}
	box_t old = entry_at(t, t->items[i].addr)->box;
	bool was_capped = (t->items[i].flags & ITEM_CAPPED) != 0;
	uint32_t from = detach(t, i);
	// A leaves insert may tidy (cap_fixup), which could free the old home:
	// tidy that first.
	if (was_capped) tidy(t, from);
	insert_at(t, start, &box, i);
	item_set_shape(t, i, sph);
	if (!was_capped) tidy_after(t, from, &old);
	return ORT_OK;
}

// ---- accessors ----------------------------------------------------------------

ort_result ORTHANT_NAME(tree_get_box)(const tree_t *t, ort_handle h, box_t *out)
{
	if (!t || !out) return ORT_ERROR_INVALID_ARGUMENT;
	uint32_t i = handle_index(t, h);
	if (i == NIL) return misuse(t, ORT_ERROR_STALE_HANDLE, "orthant: get_box of a stale or foreign handle");
	ort_result attached = detached_read(t);
	if (attached != ORT_OK) return attached;
	const box_t *pb = (t->items[i].flags & ITEM_PENDING) ? pending_box(t, i) : NULL;
	*out = pb ? *pb : entry_at(t, t->items[i].addr)->box;
	return ORT_OK;
}

void *ORTHANT_NAME(tree_get_user_data)(const tree_t *t, ort_handle h)
{
	if (!t) return NULL;
	uint32_t i = handle_index(t, h);
	return i == NIL ? NULL : t->items[i].user;
}

/// OR a re-filtered item's new category into every node holding its entries.
static void cats_region(tree_t *t, uint32_t i, uint64_t cat)
{
	if (t->def.placement != ORT_PLACEMENT_LEAVES || (t->items[i].flags & ITEM_CAPPED)) {
		cats_up(t, item_node(t, i), cat);
		return;
	}
	// leaves: every leaf its box touches, and their ancestors.
	const box_t box = entry_at(t, t->items[i].addr)->box;
	cats_leaves(t, t->root, &box, cat);
}

ort_result ORTHANT_NAME(tree_set_filter)(tree_t *t, ort_handle h, ort_filter filter)
{
	if (!t) return ORT_ERROR_INVALID_ARGUMENT;
	uint32_t i = handle_index(t, h);
	if (i == NIL || (t->items[i].flags & ITEM_DOOMED))
		return misuse(t, ORT_ERROR_STALE_HANDLE, "orthant: set_filter of a stale or foreign handle");
	ort_result settled = detached_settle(t, false);
	if (settled != ORT_OK) return settled;
	if (in_callback(t) || (t->items[i].flags & ITEM_PENDING)) return defer_filter(t, i, &filter);
	if (t->bp && !bp_reserve(t, 1, NIL)) return ORT_ERROR_OUT_OF_MEMORY;
	bool plain = filter.category == 1u && filter.mask == ORT_MASK_ALL;
	if (!t->filters && !plain) {
		// The first custom filter: every other item keeps the default, and
		// every node's categories are what node_cats said without filters.
		uint32_t ncap = t->node_cap ? t->node_cap : 1;
		ort_filter *f = mem_alloc(t, (size_t)t->item_cap * sizeof *f);
		uint64_t *nc = f ? mem_alloc(t, (size_t)ncap * sizeof *nc) : NULL;
		if (!nc) {
			mem_free(t, f, (size_t)t->item_cap * sizeof *f);
			return ORT_ERROR_OUT_OF_MEMORY;
		}
		for (uint32_t k = 0; k < t->item_cap; ++k) f[k] = ORT_FILTER_DEFAULT;
		for (uint32_t k = 0; k < ncap; ++k) nc[k] = node_cats(t, k);
		t->filters = f;
		t->filter_cap = t->item_cap;
		t->node_cats = nc;
		t->node_cats_cap = ncap;
	}
	if (t->filters) {
		t->filters[i] = filter;
		t->filters[i].is_static = false; // kept in the item's flags
		cats_region(t, i, filter.category);
	}
	item *it = &t->items[i];
	if ((it->flags & ITEM_STATIC) && !filter.is_static) t->statics--;
	if (!(it->flags & ITEM_STATIC) && filter.is_static) t->statics++;
	it->flags = filter.is_static ? it->flags | ITEM_STATIC : it->flags & ~(uint32_t)ITEM_STATIC;
	if (t->bp) bp_refilter(t, i);
	return ORT_OK;
}

ort_result ORTHANT_NAME(tree_get_filter)(const tree_t *t, ort_handle h, ort_filter *out)
{
	if (!t || !out) return ORT_ERROR_INVALID_ARGUMENT;
	uint32_t i = handle_index(t, h);
	if (i == NIL) return misuse(t, ORT_ERROR_STALE_HANDLE, "orthant: get_filter of a stale or foreign handle");
	*out = t->filters ? t->filters[i] : ORT_FILTER_DEFAULT;
	out->is_static = (t->items[i].flags & ITEM_STATIC) != 0;
	return ORT_OK;
}

bool ORTHANT_NAME(tree_is_valid)(const tree_t *t, ort_handle h) { return t && handle_index(t, h) != NIL; }

int ORTHANT_NAME(tree_count)(const tree_t *t) { return t ? (int)t->live : 0; }

box_t ORTHANT_NAME(tree_root_cell)(const tree_t *t)
{
	box_t b;
	memset(&b, 0, sizeof b);
	if (t) (void)detached_read(t); // a re-home may grow the root
	if (t && t->root != NIL) {
		memcpy(b.min, t->nodes[t->root].lo, sizeof b.min);
		memcpy(b.max, t->nodes[t->root].hi, sizeof b.max);
	} else if (t && t->def.use_region) {
		region_cell(t, b.min, b.max);
	}
	return b;
}

ort_result ORTHANT_NAME(tree_get_node)(const tree_t *t, ort_handle h, box_t *cell, box_t *bounds, int *depth)
{
	if (!t) return ORT_ERROR_INVALID_ARGUMENT;
	uint32_t i = handle_index(t, h);
	if (i == NIL) return misuse(t, ORT_ERROR_STALE_HANDLE, "orthant: get_node of a stale or foreign handle");
	ort_result attached = detached_read(t);
	if (attached != ORT_OK) return attached;
	if (t->items[i].flags & ITEM_PENDING) return ORT_ERROR_BUSY; // not stored until the queries end
	const node *n = &t->nodes[item_node(t, i)];
	if (cell) {
		memcpy(cell->min, n->lo, sizeof cell->min);
		memcpy(cell->max, n->hi, sizeof cell->max);
	}
	if (bounds) node_bounds(t, n, bounds->min, bounds->max);
	if (depth) *depth = node_depth(t, n);
	return ORT_OK;
}

// ---- clear / build / tick -------------------------------------------------------

void ORTHANT_NAME(tree_clear)(tree_t *t)
{
	if (!t) return;
	if (in_callback(t)) {
		misuse(t, ORT_ERROR_BUSY, "orthant: clear from inside a callback is ignored");
		return;
	}
	// Every slot goes back to its free list in index order, generations bumped
	// so old handles fail; the arrays themselves stay for the next frame.
	t->item_free = NIL;
	for (uint32_t i = t->item_len; i-- > 0;) {
		item *it = &t->items[i];
		if (it->flags & ITEM_LIVE) it->gen++;
		it->flags = 0;
		it->user = NULL;
		it->addr = t->item_free;
		t->item_free = i;
	}
	t->live = 0;
	t->node_free = NIL;
	for (uint32_t i = t->node_len; i-- > 0;) {
		t->nodes[i].flags = NODE_FREE;
		t->nodes[i].parent = t->node_free;
		t->node_free = i;
	}
	t->node_live = 0;
	own_clear(t);
	mirror_forget(t); // its block stays for the next build
	t->mirror_keep |= t->built; // a tree built again: from now on through changes too
	t->chunk_free = NIL;
	for (uint32_t i = t->chunk_len; i-- > 0;) t->chunks[i].next = i + 1 < t->chunk_len ? i + 1 : NIL;
	t->chunk_free = t->chunk_len ? 0 : NIL;
	t->chunk_free_count = t->chunk_len;
	t->root = NIL;
	t->entries = 0;
	t->height = 0;
	t->statics = 0;
	t->capped = 0;
	t->overcap_len = 0;
	detached_clear(t);
	if (t->bp) bp_reset(t);
}

/// The top-down build of loose and tight trees: partition boxes idx[0..n)
void ORTHANT_NAME(tree_tick)(tree_t *t)
{
	if (!t || t->def.prune_delay == 0) return;
	if (in_callback(t)) {
		t->pending_ticks++;
		return;
	}
	if (detached_settle(t, false) != ORT_OK) return; // the next tick prunes
	for (uint32_t i = 0; i < t->node_len; ++i) {
		node *n = &t->nodes[i];
		if (!(n->flags & NODE_WAITING) || (n->flags & NODE_FREE)) continue;
		struct node_wait *w = &t->node_waits[i];
		if (w->countdown > 0) w->countdown--;
		if (w->countdown == 0) {
			uint32_t parent = n->parent;
			prune(t, i);
			tidy(t, parent);
		}
	}
	own_settle_pending(t);
}

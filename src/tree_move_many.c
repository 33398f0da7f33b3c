// tree_move_many.c: ortN_tree_move_many — new boxes for many items in one
// call, as a game hands its physics engine every moved body of a frame at once.
//
// Most moves in a moving world are small: the box stays in its node's cell
// (loose: the loose cell, and it fits no child; tight: the cell; leaves: one
// leaf cell, before and after). Such a move is a write of the item's entry and
// nothing else when the box also lies inside the node's content bound and the
// node keeps no own-list index; with the bound grown or an index to tell, it
// is that write and a short serial fix-up. Only the rest re-home (climb to the
// first ancestor that holds the box, go down), each as ortN_tree_move does.
//
// So the call runs in three steps:
//   1. serial, changing nothing: every handle live, every box valid (else the
//      error, nothing changed), and the broad phase's room for the touches;
//   2. the in-place writes, over ranges of the batch: on the tree's workers
//      when it has any (each job writes only its own items' entries and
//      flags; nodes are only read, as nothing re-homes until step 3), else
//      on the calling thread;
//   3. serial, in batch order: the fix-ups, then every move that must re-home.
// An item named twice is moved in batch order (the last box wins): with
// workers, step 1 marks each item (ITEM_MARK) and sends every repeat to step 3,
// so no two jobs write one entry, and step 3 runs after every job.
//
// The result is the same for any worker count: step 2 decides each move from
// the item, its node and its box alone, and nothing that step 2 reads changes
// before step 3. The broad phase sees every moved item as touched, or, when
// the batch is a quarter of the items or more, counts every item as touched
// (the all-pairs update the next update_pairs would choose anyway).
//
// A batch of a quarter of the items or more takes the bulk path instead
// (below): it detaches the tree, and the entries take the boxes later.
#include "tree_int.h"
#include "tree_ownidx.h"

/// What step 2 left for step 3, per batch entry.
enum {
	MM_DONE,   ///< moved in place: nothing left
	MM_JOB,    ///< (before step 2) an item's first entry: step 2 tries it in place
	MM_BOUND,  ///< moved in place; its node's bound and own-list index to fix
	MM_REHOME, ///< not moved: step 3 moves it (as ortN_tree_move)
};

/// Batch entries per range of step 2, at least.
#define MM_MIN_ROWS 256u

/// Item i's new box when it can stay in its entry: writes it and says what is
/// left (MM_DONE or MM_BOUND); MM_REHOME, changing nothing, when it cannot.
/// Reads the item, its node and entry, writes the entry and the item's flags.
static int mm_in_place(tree_t *t, uint32_t i, const box_t *box)
{
	item *it = &t->items[i];
	if (it->flags & (ITEM_CAPPED | ITEM_PENDING)) return MM_REHOME;
	const node *n = &t->nodes[item_node(t, i)];
	entry *e = entry_at(t, it->addr);
	bool here;
	if (t->def.placement == ORT_PLACEMENT_LEAVES)
		// A box inside one half-open leaf cell touches no other leaf.
		here = cell_holds(n->lo, n->hi, &e->box) && cell_holds(n->lo, n->hi, box);
	else
		here = node_holds(t, n, box) && (!(n->flags & NODE_DIVIDED) || fit_child(t, n, box) < 0);
	if (!here) return MM_REHOME;
	e->box = *box;
	it->flags &= ~(uint32_t)(ITEM_SPHERE | ITEM_MARK); // a box move makes a box item
	// Without an index (and below the size that earns one) the node has no
	// own-list work to mark.
	bool quiet = box_within(box, n->bound.min, n->bound.max) && !(n->flags & NODE_OWNIDX) && n->count < OWN_MIN;
	return quiet ? MM_DONE : MM_BOUND;
}

/// Step 3 for an in-place move: what ortN_tree_move does after its write
/// (a node whose own-list index this makes due work is marked, and settled
/// before the call returns).
static void mm_fix(tree_t *t, uint32_t i, const box_t *box)
{
	uint32_t ni = item_node(t, i);
	bound_grow(t, ni, box);
	own_on_write(t, ni, t->items[i].addr, box);
}

typedef struct mm_ctx {
	tree_t *t;
	const ort_handle *handles;
	const box_t *boxes;
	uint8_t *status;
} mm_ctx;

/// Step 2 over batch entries [lo, hi).
static void mm_range(void *ctx, uint32_t lo, uint32_t hi)
{
	const mm_ctx *c = ctx;
	for (uint32_t k = lo; k < hi; ++k)
		if (c->status[k] == MM_JOB) c->status[k] = (uint8_t)mm_in_place(c->t, c->handles[k].id - 1, &c->boxes[k]);
}

/// Step 1: every handle live and every box valid, each item marked
/// (ITEM_MARK) and its first entry sent to step 2, a repeat to step 3 (with
/// status NULL: the check alone). On a fault, the marks are taken back and the
/// fault returned: nothing changed.
static ort_result mm_check(tree_t *t, const ort_handle *handles, const box_t *boxes, uint8_t *status, uint32_t count)
{
	ort_result r = ORT_OK;
	uint32_t k = 0;
	for (; k < count; ++k) {
		uint32_t i = handle_index(t, handles[k]);
		if (i == NIL || (t->items[i].flags & ITEM_DOOMED)) {
			r = misuse(t, ORT_ERROR_STALE_HANDLE, "orthant: move_many of a stale or foreign handle");
			break;
		}
		if ((r = box_check(&boxes[k])) != ORT_OK) break;
		if (!status) continue;
		item *it = &t->items[i];
		status[k] = (it->flags & ITEM_MARK) ? MM_REHOME : MM_JOB;
		it->flags |= ITEM_MARK;
	}
	if (r != ORT_OK && status)
		while (k-- > 0) t->items[handles[k].id - 1].flags &= ~(uint32_t)ITEM_MARK;
	return r;
}

/// Whether the broad phase takes the batch as "every item touched": a quarter
/// of the items or more, where the next update would find every pair anyway.
static bool mm_touch_all(const tree_t *t, uint32_t count) { return (uint64_t)count * BP_ALL_SHARE >= t->live; }

/// Tell the broad phase about the batch (room reserved by the caller).
static void mm_touch(tree_t *t, const ort_handle *handles, uint32_t count)
{
	struct broadphase *bp = t->bp;
	if (!bp || bp->all) return;
	if (mm_touch_all(t, count)) {
		bp->all = true; // listed items keep their flag until the update clears it
		return;
	}
	for (uint32_t k = 0; k < count; ++k) bp_touch(t, handles[k].id - 1);
}

// ---- the bulk path: a batch of a quarter of the items or more -----------------------
//
// A big batch names most entries of the tree, in an order that has nothing to
// do with where they are stored. It detaches the tree (tree_detach.c): every
// handle and box is checked, each box written into a dense array by item
// slot, and the entries take them in one walk of the tree in memory order
// when something next reads or changes the tree itself; the broad phase's
// all-pairs update reads the array directly. The result depends on the batch
// and the tree alone (no workers), so it is the same for any worker count;
// each item ends with the box the batch gave it (the last, if named twice).

/// Whether move_many takes the bulk path: a batch the broad phase counts as
/// every item touched (mm_touch_all), of a tree big enough to be worth a walk.
static bool mm_bulk_wanted(const tree_t *t, uint32_t count) { return t->live >= 64 && mm_touch_all(t, count); }

static bool detached_move_many(tree_t *t, const ort_handle *handles, const box_t *boxes, uint32_t count,
                               ort_result *result);

ort_result ORTHANT_NAME(tree_move_many)(tree_t *t, const ort_handle *handles, const box_t *boxes, int count)
{
	if (!t || count < 0 || (count > 0 && (!handles || !boxes))) return ORT_ERROR_INVALID_ARGUMENT;
	uint32_t n = (uint32_t)count;
	if (n == 0) return ORT_OK;
	if (in_callback(t)) {
		// Each move waits in the deferred queue, as one ortN_tree_move's
		// would. (The scratch may be a running pair finder's: not used.)
		ort_result r = mm_check(t, handles, boxes, NULL, n);
		for (uint32_t k = 0; k < n && r == ORT_OK; ++k) r = move_item(t, handles[k], boxes[k], NULL);
		return r;
	}
	ort_result bulk;
	if (mm_bulk_wanted(t, n) && detached_move_many(t, handles, boxes, n, &bulk)) return bulk;
	if ((bulk = detached_settle(t, true)) != ORT_OK) return bulk;
	// Capacity first (a refusal changes nothing else): the status bytes in the
	// tree's scratch (no move below uses it), the broad phase's touches.
	if (!scratch_reserve(t, n)) return ORT_ERROR_OUT_OF_MEMORY;
	if (t->bp && !t->bp->all && !mm_touch_all(t, n) && !bp_reserve(t, n, NIL)) return ORT_ERROR_OUT_OF_MEMORY;
	uint8_t *status = t->scratch;
	ort_result r = mm_check(t, handles, boxes, status, n);
	if (r != ORT_OK) return r;
	mm_touch(t, handles, n);
	// Step 2, in ranges cut by the batch alone (bp_snapshot.c).
	mm_ctx c = {t, handles, boxes, status};
	bp_ranges(t, n, MM_MIN_ROWS, mm_range, &c);
	// Step 3, in batch order, once every mark is gone (leaves splits use the
	// bit). The fix-ups first: they only grow bounds, which a re-homing
	// move's tidying may read.
	for (uint32_t k = 0; k < n; ++k) {
		uint32_t i = handles[k].id - 1;
		if (status[k] == MM_BOUND) mm_fix(t, i, &boxes[k]);
		if (status[k] == MM_REHOME) t->items[i].flags &= ~(uint32_t)ITEM_MARK;
	}
	for (uint32_t k = 0; k < n; ++k) {
		if (status[k] != MM_REHOME) continue;
		ort_result m = move_now(t, handles[k], boxes[k], NULL);
		if (r == ORT_OK) r = m;
	}
	own_settle_pending(t);
	return r;
}

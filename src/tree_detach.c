// tree_detach.c: the detached mode — a move_many batch of most items writes
// its boxes into a dense array, and the tree's entries take them later.
//
// When most items move every frame, a game moves them all, runs the broad
// phase and often queries nothing else. Writing each box into its entry reads
// the item, its node and its entry from scattered memory (or walks the whole
// tree once), and the broad phase's all-pairs update then copies every box
// out of the entries again for its packed snapshot (bp_snapshot.c). In the
// detached mode the batch does neither: a big batch (move_many's bulk size, a
// quarter of the items or more) checks its handles and boxes and writes each
// box into a dense array by item slot, marking the item. The broad phase
// builds its snapshot straight from that array. The entries take the boxes
// (attach) only when something reads or changes the tree itself:
//
// - every const entry point that reads nodes or entries (queries, batched
//   queries, casts, kNN, get_box, get_node, validate, stats, visit_nodes)
//   calls detached_read first, which attaches when the tree is detached;
// - every mutation other than a big batch (insert, remove, move, set_filter,
//   move_many's small path, build, tick, the deferred queue) calls
//   detached_settle first, which attaches too.
//
// The dense array (`box`) holds every live item's current box while `valid`:
// it is filled from the entries once, when a big batch finds it invalid, and
// kept true by big batches (which write it) and attaches (which write the
// entries from it); any other change of a box or of the item slots makes it
// invalid. So a world that moves everything each frame and queries in between
// fills it once; the attach then walks the tree as move_many's bulk path did.
//
// Per-item moves (ortN_tree_move) write the array too while the broad phase
// expects its next update to find every pair (bp_expects_all): a quarter of
// the items moved since the last update, or the last update found every pair
// (a world moving everything keeps doing so). A frame that moves only a few
// after all is attached by moving those few, not by the walk below.
//
// Before the array exists, in the frame after the first update (which made
// the pair set by the tree's own walk) or after a clear, a world whose
// objects all move cannot yet be told from one that moves a few: per-item
// moves wait instead (det_wait_move). Each is checked, touched for the broad
// phase and logged with its box in call order, a write at the end of a list
// where ortN_tree_move would read the item's node and entry from scattered
// memory and perhaps re-home it (S3's first frame: 25k such moves, 5.4
// cache misses each, before the quarter filled the array). Once a quarter of
// the items are touched (the next update finds every pair), the array is
// filled from the entries and the waiting boxes written over it
// (det_convert); the tree is detached as after a big batch. If something
// else comes first (an incremental update, a query, another mutation), the
// attach makes the waiting moves in call order, as ortN_tree_move would
// have, fetching each one's item, entry and node ahead from the list.
//
// Attaching: one walk of the nodes and their entries in pool order: an entry
// of a marked item moves in place when its node keeps it (the rules of
// ortN_tree_move, against the node's bounds computed once per node); the
// others stay marked (2) and re-home afterwards in item order, each as
// ortN_tree_move re-homes it. A re-home may need memory: when it cannot get
// it, that item and the ones not yet re-homed stay marked and the tree stays
// detached and whole (every entry a box its item had, the marked items' new
// boxes in the array); the caller returns ORT_ERROR_OUT_OF_MEMORY and a later
// call tries again.
//
// Threads: a const entry point may attach. Concurrent readers are allowed,
// so det_state is atomic: the first reader to find the tree detached moves it
// to DET_ATTACHING, attaches and publishes DET_ATTACHED (release); the others
// wait for that (acquire) before they read. Nothing detaches while readers
// run: only a big batch detaches, and a mutation may not run beside readers.
// The attach runs its moves immediately even inside a callback
// (det_attaching): no traversal is under way then (each one attached before
// it started), only update_pairs' reports, which read no node or entry.
#include "tree_int.h"
#include "tree_ownidx.h"

/// The marks are bit sets by item slot, 1/8 byte an item each: a moving
/// world's per-item moves test and set a mark for every item in an order that
/// has nothing to do with the slots, and 100k items' bits (12.5 KB) stay in
/// the first-level cache where a byte each (100 KB) missed it once a move.
///
/// `moved` is the broad phase's touched list for detached moves: a detached
/// move sets its item's bit where ortN_tree_move would append the item to the
/// list and flag it (ITEM_TOUCHED, a write of the item's line, and another
/// when the update clears it). Before anything reads the list or changes the
/// tree otherwise (update_pairs, detached_settle), the bits are handed over
/// (detached_flush): as "every item touched" when a quarter or more are set
/// (the all-pairs update that many touched items choose anyway) or when the
/// list has no room for them, else as touches in slot order.
struct detached {
	box_t *box;      ///< [cap]: per item slot, its current box (while valid)
	uint64_t *mark;  ///< [cap bits]: moved since the entries took it (its box waits in box)
	uint64_t *home;  ///< [cap bits], beside mark: marked and to re-home (the attach's second step)
	uint64_t *moved; ///< [cap bits], beside home: moved since the broad phase last heard
	uint32_t cap;    ///< a multiple of 64
	uint32_t moved_count; ///< bits set in moved
	uint32_t marked; ///< items marked
	bool valid;      ///< box[i] is the box of every live item i
	/// [cap]: the item slots of the detached moves since the last rewind
	/// (an update_pairs), in call order, written over the previous round's:
	/// a move reads the previous round's slot DET_AHEAD places on to fetch
	/// that item early (see detached_move).
	uint32_t *order;
	uint32_t order_len; ///< entries of the previous round
	uint32_t order_pos; ///< entries of this round so far
	/// [wait_cap]: per-item moves waiting while there is no valid array (and
	/// no marks), in call order: each item live, a box item, touched for the
	/// broad phase. A repeat of an item is a second entry (the last wins).
	struct det_wait {
		uint32_t item;
		box_t box;
	} *wait;
	uint32_t wait_len, wait_cap;
};

static inline bool det_bit(const uint64_t *bits, uint32_t i) { return bits[i >> 6] >> (i & 63) & 1; }
static inline void det_bit_set(uint64_t *bits, uint32_t i) { bits[i >> 6] |= 1ull << (i & 63); }
static inline void det_bit_clear(uint64_t *bits, uint32_t i) { bits[i >> 6] &= ~(1ull << (i & 63)); }

/// Bytes of the three bit sets (one block: mark, home, moved) for cap slots.
static size_t det_bits_bytes(uint32_t cap) { return (size_t)cap / 64 * 3 * sizeof(uint64_t); }

/// Mark item i (moved: its box waits in the dense array).
static inline void det_mark(struct detached *d, uint32_t i)
{
	uint64_t *w = &d->mark[i >> 6], bit = 1ull << (i & 63);
	d->marked += !(*w & bit);
	*w |= bit;
}

static void detached_free(tree_t *t)
{
	struct detached *d = t->det;
	if (!d) return;
	mem_free(t, d->box, (size_t)d->cap * sizeof *d->box);
	mem_free(t, d->mark, det_bits_bytes(d->cap));
	mem_free(t, d->order, (size_t)d->cap * sizeof *d->order);
	mem_free(t, d->wait, (size_t)d->wait_cap * sizeof *d->wait);
	mem_free(t, d, sizeof *d);
	t->det = NULL;
	atomic_store_explicit(&t->det_state, DET_ATTACHED, memory_order_relaxed);
}

/// Room for every item slot (a quarter to spare). False, as it was, without
/// memory. New marks are clear.
/// The detached mode's header, made when first wanted (no arrays yet).
/// NULL without memory.
static struct detached *det_get(tree_t *t)
{
	struct detached *d = t->det;
	if (!d) {
		if (!(d = mem_alloc(t, sizeof *d))) return NULL;
		memset(d, 0, sizeof *d);
		t->det = d;
	}
	return d;
}

static bool det_reserve(tree_t *t)
{
	struct detached *d = det_get(t);
	if (!d) return false;
	if (d->cap >= t->item_len) return true;
	// Only an invalid array with no marks grows (slots are added only by
	// inserts, which invalidate it after attaching and flushing): nothing to
	// copy.
	assert(!d->valid && d->marked == 0 && d->moved_count == 0);
	uint64_t want = (uint64_t)t->item_len + t->item_len / 4 + 64;
	if (want > t->item_cap) want = t->item_cap;
	want = (want + 63) & ~(uint64_t)63; // whole words of bits
	box_t *box = mem_alloc(t, (size_t)want * sizeof *box);
	uint64_t *mark = box ? mem_alloc(t, det_bits_bytes((uint32_t)want)) : NULL;
	uint32_t *order = mark ? mem_alloc(t, (size_t)want * sizeof *order) : NULL;
	if (!order) {
		mem_free(t, box, (size_t)want * sizeof *box);
		mem_free(t, mark, det_bits_bytes((uint32_t)want));
		return false;
	}
	memset(mark, 0, det_bits_bytes((uint32_t)want));
	mem_free(t, d->box, (size_t)d->cap * sizeof *d->box);
	mem_free(t, d->mark, det_bits_bytes(d->cap));
	mem_free(t, d->order, (size_t)d->cap * sizeof *d->order);
	d->box = box;
	d->mark = mark;
	d->order = order;
	d->order_len = d->order_pos = 0;
	d->home = mark + want / 64;
	d->moved = mark + 2 * (want / 64);
	d->cap = (uint32_t)want;
	return true;
}

/// The attach's walk over node ni: its marked entries move in place, or are
/// marked 2 to re-home.
static void det_node(tree_t *t, struct detached *d, uint32_t ni)
{
	const node *n = &t->nodes[ni];
	bool leaves = t->def.placement == ORT_PLACEMENT_LEAVES, tight = t->def.placement == ORT_PLACEMENT_TIGHT;
	float lo[DIM], hi[DIM];
	node_bounds(t, n, lo, hi);
	fitter f;
	bool fitted = false;
	ENTRY_LOOP(t, n, c, j)
	{
		entry *e = &t->chunks[c].e[j];
		uint32_t i = e->item;
		// Marked and not yet sent to re-home: a leaves item of several
		// entries is met once.
		if (!det_bit(d->mark, i) || det_bit(d->home, i)) continue;
		const box_t *box = &d->box[i];
		bool here;
		if (leaves)
			// Divided nodes hold capped entries only (re-homed, as their cap
			// rules say); a box inside one half-open leaf cell touches no other
			// leaf, so the entry is the item's only one.
			here = !(n->flags & NODE_DIVIDED) && cell_holds(n->lo, n->hi, &e->box) && cell_holds(n->lo, n->hi, box);
		else {
			here = tight ? cell_holds(lo, hi, box) : box_within(box, lo, hi);
			if (here && (n->flags & NODE_DIVIDED)) {
				if (!fitted) fitter_init(t, n, &f), fitted = true;
				here = fitter_child(&f, box) < 0;
			}
		}
		if (!here) {
			det_bit_set(d->home, i);
			continue;
		}
		assert(t->items[i].addr == c * CHUNK_CAP + j && !(t->items[i].flags & ITEM_CAPPED));
		det_bit_clear(d->mark, i);
		d->marked--;
		e->box = *box;
		bound_grow(t, ni, box);
		if (n->flags & NODE_OWNIDX) own_on_write(t, ni, c * CHUNK_CAP + j, box);
	}
}

/// Below one marked item in DET_FEW_SHARE live ones, the attach moves each
/// marked item as ortN_tree_move does instead of walking every node: a move
/// costs a few times what the walk spends on one entry.
#define DET_FEW_SHARE 16

/// Waiting moves looked ahead to fetch their item, entry and node early.
#define DET_WAIT_AHEAD 16u

/// The waiting moves, made in call order as ortN_tree_move makes them (their
/// touches were made when they waited). One that cannot get memory to
/// re-home stops the run: it and the rest wait for the next attach.
static ort_result det_apply_waits(tree_t *t, struct detached *d)
{
	ort_result r = ORT_OK;
	uint32_t k = 0, n = d->wait_len;
	for (; k < n; ++k) {
		uint32_t a = k + DET_WAIT_AHEAD, b = k + DET_WAIT_AHEAD / 2, c = k + DET_WAIT_AHEAD / 4,
		         e = k + DET_WAIT_AHEAD / 8;
		move_fetch(t, a < n ? d->wait[a].item : NIL, b < n ? d->wait[b].item : NIL, c < n ? d->wait[c].item : NIL,
		           e < n ? d->wait[e].item : NIL);
		const struct det_wait *w = &d->wait[k];
		if ((r = move_now(t, make_handle(t, w->item), w->box, NULL)) != ORT_OK) break;
	}
	memmove(d->wait, d->wait + k, (size_t)(n - k) * sizeof *d->wait);
	d->wait_len = n - k;
	return r;
}

/// det_apply's first step: the marked items' boxes (the walk, then the
/// re-homes).
static ort_result det_apply_marks(tree_t *t, struct detached *d)
{
	// Few marked (a frame that moved less than the last): each takes
	// ortN_tree_move's steps, where the walk would read every entry.
	bool few = (uint64_t)d->marked * DET_FEW_SHARE < t->live;
	if (few)
		memcpy(d->home, d->mark, (size_t)d->cap / 64 * sizeof *d->home);
	else
		for (uint32_t ni = 0; ni < t->node_len; ++ni)
			if (!(t->nodes[ni].flags & NODE_FREE) && t->nodes[ni].count) det_node(t, d, ni);
	ort_result r = ORT_OK;
	for (uint32_t w = 0; w < d->cap / 64; ++w)
		for (uint64_t bits = d->home[w]; bits; bits &= bits - 1) {
			uint32_t i = w * 64 + (uint32_t)__builtin_ctzll(bits);
			if (r == ORT_OK) r = move_now(t, make_handle(t, i), d->box[i], NULL);
			if (r == ORT_OK) {
				det_bit_clear(d->mark, i);
				d->marked--;
			} // else it stays marked: it waits for the next attach
			det_bit_clear(d->home, i);
		}
	return r;
}

/// Write every marked item's box into the tree (the walk, then the re-homes),
/// then make the waiting moves (none wait while items are marked, but a
/// failed attach may leave marks that a later move's wait would follow: the
/// marks' boxes are the older).
static ort_result det_apply(tree_t *t)
{
	struct detached *d = t->det;
	if (!d || (d->marked == 0 && d->wait_len == 0)) return ORT_OK;
	t->det_attaching = true;
	ort_result r = d->marked ? det_apply_marks(t, d) : ORT_OK;
	if (r == ORT_OK && d->wait_len) r = det_apply_waits(t, d);
	own_settle_pending(t);
	t->det_attaching = false;
	return r;
}

static ort_result detached_attach(const tree_t *ct)
{
	tree_t *t = (tree_t *)ct;
	for (unsigned spins = 0;; ++spins) {
		int s = atomic_load_explicit(&t->det_state, memory_order_acquire);
		if (s == DET_ATTACHED) return ORT_OK;
		if (s == DET_DETACHED && atomic_compare_exchange_weak_explicit(&t->det_state, &s, DET_ATTACHING,
		                                                               memory_order_acquire, memory_order_relaxed)) {
			ort_result r = det_apply(t);
			atomic_store_explicit(&t->det_state, r == ORT_OK ? DET_ATTACHED : DET_DETACHED, memory_order_release);
			return r;
		}
		// Another reader is attaching: its release publishes the entries.
		ort_tk_backoff(spins);
	}
}

/// A round of moves ends (update_pairs): the next one's moves read the
/// order of this one's (see detached_move).
static void detached_rewind(tree_t *t)
{
	struct detached *d = t->det;
	if (!d) return;
	d->order_len = d->order_pos;
	d->order_pos = 0;
}

/// Hand the moved bits to the broad phase (see struct detached): after it,
/// the touched list (or `all`) holds every item moved, as if each detached
/// move had touched it. Needs no memory it cannot do without: a list that
/// cannot grow for them becomes "every item touched".
static void detached_flush(tree_t *t)
{
	struct detached *d = t->det;
	if (!d || d->moved_count == 0) return;
	struct broadphase *bp = t->bp;
	uint32_t words = d->cap / 64;
	if (bp && !bp->all) {
		if ((t->live >= 64 && (uint64_t)d->moved_count * BP_ALL_SHARE >= t->live) || !bp_reserve(t, d->moved_count, NIL))
			bp->all = true;
		else
			for (uint32_t w = 0; w < words; ++w)
				for (uint64_t bits = d->moved[w]; bits; bits &= bits - 1) {
					uint32_t i = w * 64 + (uint32_t)__builtin_ctzll(bits);
					if (t->items[i].flags & ITEM_LIVE) bp_touch(t, i); // each removal flushed first: all are
				}
	}
	memset(d->moved, 0, (size_t)words * sizeof *d->moved);
	d->moved_count = 0;
}

/// Before a mutation: the moved bits handed over, then attach; and when the
/// mutation changes boxes or item slots (boxes_change), the dense array
/// stops being the boxes' truth.
static ort_result detached_settle(tree_t *t, bool boxes_change)
{
	if (!t->det) return ORT_OK;
	detached_flush(t);
	ort_result r = detached_read(t);
	// Even when the attach failed: the caller may go on (the deferred queue).
	if (boxes_change) t->det->valid = false;
	return r;
}

/// ortN_tree_clear: the boxes waiting are dropped with the items.
static void detached_clear(tree_t *t)
{
	struct detached *d = t->det;
	if (!d) return;
	if (d->marked || d->moved_count) memset(d->mark, 0, det_bits_bytes(d->cap));
	d->marked = d->moved_count = d->wait_len = 0;
	d->valid = false;
	atomic_store_explicit(&t->det_state, DET_ATTACHED, memory_order_relaxed);
}

/// Fill the dense array from the entries (entries that hold every item's
/// box but its waiting moves'): a walk in pool order, each item's box taken
/// at the entry it names as its own. Only leaves items have more than one
/// entry (all with one box); loose and tight ones have one, so the walk does
/// not read the item to tell (a scattered read an entry: 64k of S3's 100k
/// entries missed a 1 MiB cache on it).
static void det_fill(tree_t *t, struct detached *d)
{
	assert(d->marked == 0);
	bool copies = t->def.placement == ORT_PLACEMENT_LEAVES;
	for (uint32_t ni = 0; ni < t->node_len; ++ni) {
		const node *n = &t->nodes[ni];
		if (n->flags & NODE_FREE) continue;
		ENTRY_LOOP(t, n, c, j)
		{
			const entry *e = &t->chunks[c].e[j];
			if (!copies || t->items[e->item].addr == c * CHUNK_CAP + j) d->box[e->item] = e->box;
		}
	}
	d->valid = true;
}

/// Batch entries looked ahead to start their item's read early.
#define DET_AHEAD 16u

/// move_many's bulk path: the batch detaches. False, with nothing changed,
/// when it is not taken (no memory for the array, an item waiting in the
/// deferred queue): the caller takes its own steps. True with *result set
/// otherwise (a fault: nothing changed).
static bool detached_move_many(tree_t *t, const ort_handle *handles, const box_t *boxes, uint32_t count,
                               ort_result *result)
{
	if (t->det && !t->det->valid && (*result = detached_read(t)) != ORT_OK) return true;
	if (!det_reserve(t)) return false;
	struct detached *d = t->det;
	uint32_t len = t->item_len;
	// Every handle and box first: a fault changes nothing.
	for (uint32_t k = 0; k < count; ++k) {
		// The item is read here: its read starts early. (Its slot of the
		// array is written in the second pass, which starts its own: a
		// big batch's slots would leave the caches before then.)
		if (k + DET_AHEAD < count) {
			uint32_t ahead = handles[k + DET_AHEAD].id - 1;
			if (ahead < len) __builtin_prefetch(&t->items[ahead]);
		}
		uint32_t i = handle_index(t, handles[k]);
		if (i == NIL || (t->items[i].flags & ITEM_DOOMED)) {
			*result = misuse(t, ORT_ERROR_STALE_HANDLE, "orthant: move_many of a stale or foreign handle");
			return true;
		}
		if ((*result = box_check(&boxes[k])) != ORT_OK) return true;
		// An item waiting in the deferred queue has no entry (none should
		// outside callbacks): the caller's steps move it.
		if (t->items[i].flags & ITEM_PENDING) return false;
	}
	if (!d->valid) det_fill(t, d);
	// Every item of the batch becomes a box item (only a tree that has had
	// spheres has any to clear).
	if (t->spheres)
		for (uint32_t k = 0; k < count; ++k) t->items[handles[k].id - 1].flags &= ~(uint32_t)ITEM_SPHERE;
	for (uint32_t k = 0; k < count; ++k) {
		if (k + DET_AHEAD < count) __builtin_prefetch(&d->box[handles[k + DET_AHEAD].id - 1], 1);
		uint32_t i = handles[k].id - 1; // checked above
		d->box[i] = boxes[k];
		det_mark(d, i);
	}
	mm_touch(t, handles, count);
	if (d->marked) atomic_store_explicit(&t->det_state, DET_DETACHED, memory_order_release);
	*result = ORT_OK;
	return true;
}

/// A detached move's write: item i (live, not waiting in the deferred
/// queue) takes box, in the array, marked and logged for the next round.
/// A game moves its objects in the same order every frame, an order that has
/// nothing to do with the item slots: each move reads an item and writes a
/// box at scattered places, and one call cannot see the next. The last
/// round's moves, logged in call order, foretell this round's: the item
/// DET_AHEAD moves on is fetched now, as move_many's bulk path fetches ahead
/// in its batch (the caller reads item i after this fetch is issued: see
/// det_log_ahead). A round longer than the log starts over.
static inline uint32_t det_log_ahead(const tree_t *t, struct detached *d)
{
	uint32_t p = d->order_pos;
	if (p == d->cap) {
		d->order_len = p;
		p = 0;
	}
	if (p + DET_AHEAD < d->order_len) {
		uint32_t a = d->order[p + DET_AHEAD];
		__builtin_prefetch(&t->items[a]);
		__builtin_prefetch(&d->box[a], 1);
	}
	return p;
}

static inline void det_write(tree_t *t, struct detached *d, uint32_t i, const box_t *box, uint32_t p)
{
	// A box move makes a box item (only a tree that has had spheres has any).
	if (t->spheres) t->items[i].flags &= ~(uint32_t)ITEM_SPHERE;
	d->box[i] = *box;
	// Marks are on live items only (a removal attaches first; detached_check):
	// with as many marks as live items, i's is set already (a world moving
	// everything each frame, in every frame after its first).
	if (d->marked < t->live)
		det_mark(d, i);
	else
		assert(det_bit(d->mark, i));
	d->order[p] = i;
	d->order_pos = p + 1;
}

/// Item i moved: its bit tells the broad phase (detached_flush). Once a
/// quarter of the items have one, the hand-over would say "every item
/// touched" whenever it ran: it runs now, and the frame's other moves set no
/// bits.
static inline void det_moved_set(struct detached *d, uint32_t i)
{
	uint64_t *w = &d->moved[i >> 6], bit = 1ull << (i & 63);
	d->moved_count += !(*w & bit);
	*w |= bit;
}

static inline void det_moved_bit(tree_t *t, struct detached *d, uint32_t i)
{
	det_moved_set(d, i);
	if (t->live >= 64 && (uint64_t)d->moved_count * BP_ALL_SHARE >= t->live) detached_flush(t);
}

/// detached_move's usual case in a world moving everything one call at a
/// time, with no call of its own (so ortN_tree_move, which holds it inline,
/// saves no registers for it: 32 instructions a move were its entry and
/// exit, S3 callgrind): the tree detached already, a live item, a plain box,
/// and a moved bit that does not make the hand-over due (or none wanted).
/// False, changing nothing, for anything else: detached_move then decides.
static inline bool detached_move_quick(tree_t *t, ort_handle h, const box_t *box)
{
	struct detached *d = t->det;
	if (!d || !d->valid || in_callback(t) || atomic_load_explicit(&t->det_state, memory_order_relaxed) != DET_DETACHED)
		return false;
	uint32_t p = det_log_ahead(t, d);
	uint32_t i = handle_index(t, h);
	if (i == NIL || (t->items[i].flags & (ITEM_DOOMED | ITEM_PENDING)) || !box_plain(box)) return false;
	if (t->bp && !t->bp->all) {
		if (t->live < 64 || ((uint64_t)d->moved_count + 1) * BP_ALL_SHARE >= t->live) return false;
		det_moved_set(d, i); // no hand-over: the count stays below the quarter
	}
	det_write(t, d, i, box, p);
	return true;
}

/// The waiting moves (det_wait_move) become the detached mode's: the array
/// filled from the entries (each waiting item's old box), the waiting boxes
/// written over it in call order, each item marked and logged for the next
/// round's fetches, and the broad phase told every item is touched (a
/// quarter is, so its next update finds every pair anyway). False, with
/// the moves still waiting, without memory for the array.
static bool det_convert(tree_t *t)
{
	struct detached *d = t->det;
	assert(d && d->wait_len && !d->valid && d->marked == 0);
	if (!det_reserve(t)) return false;
	det_fill(t, d);
	uint32_t n = d->wait_len, logged = n < d->cap ? n : d->cap;
	for (uint32_t k = 0; k < n; ++k) {
		const struct det_wait *w = &d->wait[k];
		if (k + DET_AHEAD < n) __builtin_prefetch(&d->box[d->wait[k + DET_AHEAD].item], 1);
		d->box[w->item] = w->box;
		det_mark(d, w->item);
		if (k < logged) d->order[k] = w->item;
	}
	d->order_pos = logged;
	d->wait_len = 0;
	if (t->bp) t->bp->all = true; // the touched items keep their flag until the update clears it
	assert(d->marked > 0 && atomic_load_explicit(&t->det_state, memory_order_relaxed) == DET_DETACHED);
	return true;
}

/// Waiting moves a round may hold: past a quarter of the items touched they
/// become the array's (det_convert), so only repeats of one item fill it.
static uint32_t det_wait_limit(const tree_t *t) { return t->live / BP_ALL_SHARE + 64; }

/// detached_move before the array exists (see the top of the file): item h
/// (a live box item, outside every callback) waits with its new box. False,
/// changing nothing, when the move takes ortN_tree_move's own steps (a sphere,
/// marks left by a failed attach, a full list, no memory); true with *r set
/// otherwise.
static bool det_wait_move(tree_t *t, ort_handle h, const box_t *box, ort_result *r)
{
	uint32_t i = handle_index(t, h);
	if (i == NIL || (t->items[i].flags & (ITEM_DOOMED | ITEM_PENDING | ITEM_SPHERE))) return false;
	struct detached *d = det_get(t);
	if (!d || d->marked) return false;
	if ((*r = box_check(box)) != ORT_OK) return true;
	if (d->wait_len == d->wait_cap) {
		uint64_t want = d->wait_cap ? (uint64_t)d->wait_cap * 2 : 64, limit = det_wait_limit(t);
		if (d->wait_cap >= limit) return false;
		if (want > limit) want = limit;
		if (!array_resize(t, (void **)&d->wait, (size_t)d->wait_cap * sizeof *d->wait, (size_t)want * sizeof *d->wait))
			return false;
		d->wait_cap = (uint32_t)want;
	}
	if (!bp_reserve_touch(t, i)) return false;
	move_ahead(t, i); // the log ortN_tree_move's own steps keep (tree.c)
	d->wait[d->wait_len++] = (struct det_wait){i, *box};
	if (atomic_load_explicit(&t->det_state, memory_order_relaxed) != DET_DETACHED)
		atomic_store_explicit(&t->det_state, DET_DETACHED, memory_order_release);
	return true;
}

/// ortN_tree_move while most items are moving: when the tree is detached
/// already, or the broad phase expects its next update to find every pair (a
/// quarter or more moved since its last update, or the last update found
/// every pair: bp_expects_all), a box move is a write of the array, as in a
/// big batch. False, changing
/// nothing, when the move takes ortN_tree_move's own steps (no valid array
/// and none filled below,
/// a sphere, inside a callback, a handle for those steps to refuse).
static bool detached_move(tree_t *t, ort_handle h, const box_t *box, const sphere_t *sph, ort_result *r)
{
	struct detached *d = t->det;
	if (sph || in_callback(t)) return false;
	if (!d || !d->valid) {
		// No dense array (the first update took the tree's own walk, or
		// a change since made it stale): until a quarter of the items have
		// moved one by one this round, each move waits (det_wait_move); then
		// the array is filled and the waiting boxes written over it
		// (detached_boxes), when the next update will find every pair
		// anyway, and the rest of the round's moves are writes. A world that
		// moves few never pays for the fill: the next update makes its
		// waiting moves. (Not while the deferred queue applies: its waiting
		// items have no entries yet.)
		if (!t->bp || t->pending_len || !bp_expects_all(t)) return false;
		if (!bp_wants_all(t)) return det_wait_move(t, h, box, r);
		if (!detached_boxes(t)) return false;
		d = t->det;
	}
	bool detached = atomic_load_explicit(&t->det_state, memory_order_relaxed) == DET_DETACHED;
	if (!detached && !(t->bp && bp_expects_all(t))) return false;
	uint32_t p = det_log_ahead(t, d);
	uint32_t i = handle_index(t, h);
	if (i == NIL) return false;
	item *it = &t->items[i];
	if (it->flags & (ITEM_DOOMED | ITEM_PENDING)) return false;
	if ((*r = box_check(box)) != ORT_OK) return true;
	if (t->bp && !t->bp->all) det_moved_bit(t, d, i); // the broad phase hears of the move
	det_write(t, d, i, box, p);
	if (!detached) atomic_store_explicit(&t->det_state, DET_DETACHED, memory_order_release);
	return true;
}

/// After ortN_tree_move's own steps moved item h to box (its entry's box):
/// the dense array follows, so it stays valid (a move queued inside a
/// callback, applied later, makes it invalid instead).
static void detached_moved(tree_t *t, ort_handle h, const box_t *box)
{
	struct detached *d = t->det;
	if (!d || !d->valid) return;
	if (in_callback(t))
		d->valid = false;
	else
		d->box[h.id - 1] = *box;
}

/// The dense array holding every live item's box (bp_snapshot.c): filled
/// from the entries when it is not valid (attaching first). NULL, changing
/// nothing, without memory for it.
static const box_t *detached_boxes(tree_t *t)
{
	struct detached *d = t->det;
	if (d && d->valid) return d->box;
	// Waiting moves become the array's (never beside marks: det_wait_move).
	if (d && d->wait_len && !d->marked && det_convert(t)) return d->box;
	if (detached_read(t) != ORT_OK || !det_reserve(t)) return NULL;
	det_fill(t, t->det);
	return t->det->box;
}

/// The broad phase gave back its all-pairs memory (it has run incremental
/// updates for a while): the dense array goes too, unless boxes wait in it.
static void detached_release(tree_t *t)
{
	if (!t->det || t->det->marked || t->det->moved_count || t->det->wait_len) return;
	detached_free(t);
}

/// tree_validate: an attached tree whose dense array is valid holds its
/// boxes in the entries; a detached one has as many marks as it counts.
static const char *detached_check(const tree_t *t)
{
	const struct detached *d = t->det;
	if (!d) return NULL;
	int s = atomic_load_explicit(&((tree_t *)t)->det_state, memory_order_acquire);
	uint32_t marks = 0, moved = 0;
	for (uint32_t w = 0; w < d->cap / 64; ++w) {
		// A mark is on a live item (detached_move_quick relies on it: as many
		// marks as live items means every live item is marked).
		for (uint64_t bits = d->mark[w]; bits; bits &= bits - 1) {
			uint32_t i = w * 64 + (uint32_t)__builtin_ctzll(bits);
			if (i >= t->item_len || !(t->items[i].flags & ITEM_LIVE)) return "detached: a mark on a free item slot";
		}
		marks += (uint32_t)__builtin_popcountll(d->mark[w]);
		moved += (uint32_t)__builtin_popcountll(d->moved[w]);
		if (d->home[w]) return "detached: an item left to re-home outside an attach";
	}
	if (marks != d->marked) return "detached: mark count differs from the marks";
	if (moved != d->moved_count) return "detached: moved count differs from the moved bits";
	if ((s == DET_ATTACHED) != (marks == 0 && d->wait_len == 0)) return "detached: state differs from the marks";
	if (d->wait_len && (marks || d->valid)) return "detached: moves wait beside marks or a valid array";
	for (uint32_t k = 0; k < d->wait_len; ++k) {
		uint32_t i = d->wait[k].item;
		if (i >= t->item_len || (t->items[i].flags & (ITEM_LIVE | ITEM_SPHERE | ITEM_PENDING)) != ITEM_LIVE)
			return "detached: a waiting move of a free, sphere or pending item";
	}
	if (!d->valid) return NULL;
	if (d->cap < t->item_len) return "detached: dense array shorter than the items";
	for (uint32_t i = 0; i < t->item_len; ++i) {
		const item *it = &t->items[i];
		if (!(it->flags & ITEM_LIVE) || (it->flags & ITEM_PENDING) || det_bit(d->mark, i)) continue;
		if (memcmp(&entry_at(t, it->addr)->box, &d->box[i], sizeof(box_t)) != 0)
			return "detached: an item's entry and dense box differ";
	}
	return NULL;
}

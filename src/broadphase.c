// broadphase.c: the incremental broad phase — which pairs began and which
// ended since the last call, at a cost that grows with what changed.
//
// ## The pair set
//
// The current pairs are one dense array of public records (ortN_pair: both
// handles and user data, cached at the pair's start, which cannot change while
// the items live), without holes: a pair that ends takes the last record into
// its slot (swap-remove). Reporting the set (current_pairs, pair_array) walks
// this array alone, at memory speed, never the items.
//
// Beside it, the index: per pair a link record (next/prev in each of its two
// items' lists), per item the head of its list. A link names a record and the
// side the item is on (ref = index << 1 | side), so unlinking and fixing the
// links of a moved record never read the pair records. There is no hash of
// pairs: "is (i, o) already a pair?" is answered by flagging i's partners
// (ITEM_PAIRED) before i's query and clearing them after, at the cost of a walk
// of i's list.
//
// The index is built only when needed (`linked`): an all-pairs update (below)
// leaves it unbuilt, and the first incremental update, removal or linking
// need builds it in one pass over the array. A world where most things move
// every frame never builds it.
//
// ## Updates
//
// The tree tells the broad phase which items changed (bp_touch: inserted,
// moved, re-filtered) in a touched list, each item once (ITEM_TOUCHED). The
// list holds at most about a quarter of the items; past that, or before the
// first update, `all` stands for "every item touched". An incremental update:
//
//   1. ended: for each touched item, every pair in its list whose boxes no
//      longer overlap (or whose filters now forbid it) is reported and
//      removed; pairs of removed items were removed at removal and wait in the
//      ended list, with the handles and user data they had;
//   2. begun: for each touched item, its partners are flagged, a box query
//      finds what it overlaps now, and an unflagged partner begins a pair.
//
// A pair of two touched items is met twice and counted once (the second item
// finds the first one flagged); an untouched pair cannot change. Events come
// in touched order and tree order: deterministic for the same calls.
//
// When `all` holds or a quarter or more of the items are touched, per-item
// queries would walk the tree once per item and meet most pairs twice; then
// one find_pairs pass collects every current pair into a staging array, in
// bulk (when the array is too small the pass only counts, the array gets that
// size plus a quarter, and a second pass fills it). With the set empty (the first update) the staging array becomes the
// set as it is: every pair begins, in find_pairs order. Otherwise both arrays'
// pair keys (lower item, higher item) are radix sorted with their indices and
// merged in one linear pass: a key only in the old set ended, one only in the
// new set began; both are reported in ascending key order, ended first. The
// found array becomes the set (bp_update_all).
//
// In steady state nothing is allocated: every array keeps its capacity, and
// the tree reserves room before it mutates (bp_reserve).
#include "tree_int.h"

typedef ORTHANT_NAME(pair) bp_rec;

/// A pair's place in its two items' lists: next/prev refs per side.
typedef struct bp_link {
	uint32_t next[2], prev[2];
} bp_link;

/// Room for this many pairs at most: refs (index << 1 | side) stay below NIL.
#define BP_MAX_PAIRS (UINT32_MAX / 2 - 1)

struct broadphase {
	bp_rec *pairs; ///< the current set, dense: [0, len)
	uint32_t len, cap;
	bool linked; ///< head and links index every pair of the set
	bool all;    ///< every item counts as touched
	bp_link *links; ///< parallel to pairs while linked
	uint32_t link_cap;
	uint32_t *head; ///< per item slot: first ref of its list, or NIL (while linked)
	uint32_t head_cap;
	uint32_t *touched;
	uint32_t touched_len, touched_cap;
	bp_rec *ended; ///< pairs of removed items, waiting for the next update
	uint32_t ended_len, ended_cap;
	/// The all-pairs update's scratch: the pairs found, then the old set.
	bp_rec *stage;
	uint32_t stage_len, stage_cap;
	/// Radix sort keys and indices: [0] the old set, [1] the new, [2] spare.
	uint64_t *key[3];
	uint32_t *idx[3];
	uint32_t sort_cap;
};

static inline uint32_t rec_item(const bp_rec *r, int side) { return (side ? r->b.id : r->a.id) - 1; }

/// Make *arr hold exactly want elements (want > *cap), keeping the first *cap.
static bool bp_resize(tree_t *t, void **arr, uint32_t *cap, size_t elem, uint64_t want)
{
	// Not array_resize: nothing here reads a slot before writing it, so the
	// new part is left as the allocator gives it (untouched pages of a large
	// block cost nothing until used).
	void *p = mem_alloc(t, (size_t)want * elem);
	if (!p) return false;
	if (*arr) memcpy(p, *arr, (size_t)*cap * elem);
	mem_free(t, *arr, (size_t)*cap * elem);
	*arr = p;
	*cap = (uint32_t)want;
	return true;
}

/// Room for need elements, doubling (amortised growth).
static bool bp_grow_array(tree_t *t, void **arr, uint32_t *cap, size_t elem, uint64_t need)
{
	if (need <= *cap) return true;
	uint64_t want = (uint64_t)*cap * 2;
	if (want < need) want = need;
	if (want < 64) want = 64;
	if (want > BP_MAX_PAIRS) want = BP_MAX_PAIRS;
	if (need > want) return false;
	return bp_resize(t, arr, cap, elem, want);
}

// ---- the index: per-item lists of refs -----------------------------------------------

static inline void bp_link_in(struct broadphase *bp, uint32_t p, int side, uint32_t it)
{
	uint32_t ref = p << 1 | (uint32_t)side, h = bp->head[it];
	bp->links[p].prev[side] = NIL;
	bp->links[p].next[side] = h;
	if (h != NIL) bp->links[h >> 1].prev[h & 1] = ref;
	bp->head[it] = ref;
}

static inline void bp_unlink(struct broadphase *bp, uint32_t p, int side, uint32_t it)
{
	const bp_link *l = &bp->links[p];
	uint32_t prev = l->prev[side], next = l->next[side];
	if (prev != NIL)
		bp->links[prev >> 1].next[prev & 1] = next;
	else
		bp->head[it] = next;
	if (next != NIL) bp->links[next >> 1].prev[next & 1] = prev;
}

/// The record now at p moved there: point its neighbours (or its item's head) at it.
static inline void bp_relink(struct broadphase *bp, uint32_t p, int side, uint32_t it)
{
	uint32_t ref = p << 1 | (uint32_t)side;
	const bp_link *l = &bp->links[p];
	if (l->prev[side] != NIL)
		bp->links[l->prev[side] >> 1].next[l->prev[side] & 1] = ref;
	else
		bp->head[it] = ref;
	if (l->next[side] != NIL) bp->links[l->next[side] >> 1].prev[l->next[side] & 1] = ref;
}

static bool bp_items_grow(tree_t *t, uint32_t old_cap, uint32_t new_cap)
{
	struct broadphase *bp = t->bp;
	(void)old_cap;
	if (!bp->head || bp->head_cap >= new_cap) return true;
	if (!array_resize(t, (void **)&bp->head, bp->head_cap * sizeof(uint32_t), new_cap * sizeof(uint32_t))) return false;
	for (uint32_t i = bp->head_cap; i < new_cap; ++i) bp->head[i] = NIL;
	bp->head_cap = new_cap;
	return true;
}

/// Memory for the index of a set of up to pair_cap pairs.
static bool bp_index_reserve(tree_t *t, uint32_t pair_cap)
{
	struct broadphase *bp = t->bp;
	uint32_t need = t->item_cap > 64 ? t->item_cap : 64;
	if (bp->head_cap < need) {
		if (!array_resize(t, (void **)&bp->head, bp->head_cap * sizeof(uint32_t), need * sizeof(uint32_t)))
			return false;
		bp->head_cap = need;
	}
	return bp->link_cap >= pair_cap || bp_resize(t, (void **)&bp->links, &bp->link_cap, sizeof(bp_link), pair_cap);
}

/// Build the index over the whole set in one pass (a no-op while linked).
/// False, with nothing changed, when its memory is not there.
static bool bp_link_all(tree_t *t)
{
	struct broadphase *bp = t->bp;
	if (bp->linked) return true;
	if (!bp_index_reserve(t, bp->cap)) return false;
	for (uint32_t i = 0; i < bp->head_cap; ++i) bp->head[i] = NIL;
	for (uint32_t p = 0; p < bp->len; ++p) {
		bp_link_in(bp, p, 0, rec_item(&bp->pairs[p], 0));
		bp_link_in(bp, p, 1, rec_item(&bp->pairs[p], 1));
	}
	bp->linked = true;
	return true;
}

// ---- pair records --------------------------------------------------------------------

/// Room for one more pair in the set and its links (while linked).
static bool bp_pair_reserve(tree_t *t)
{
	struct broadphase *bp = t->bp;
	uint64_t need = (uint64_t)bp->len + 1;
	if (!bp_grow_array(t, (void **)&bp->pairs, &bp->cap, sizeof(bp_rec), need)) return false;
	return !bp->linked || bp_index_reserve(t, bp->cap);
}

/// Add the pair (a, b) at the end of the set; room reserved, index built.
static uint32_t bp_add(tree_t *t, uint32_t a, uint32_t b)
{
	struct broadphase *bp = t->bp;
	assert(bp->linked && bp->len < bp->cap && bp->len < bp->link_cap);
	uint32_t p = bp->len++;
	bp->pairs[p] = (bp_rec){make_handle(t, a), make_handle(t, b), t->items[a].user, t->items[b].user};
	bp_link_in(bp, p, 0, a);
	bp_link_in(bp, p, 1, b);
	return p;
}

/// Remove pair p; the last record takes its slot.
static void bp_del(struct broadphase *bp, uint32_t p)
{
	assert(bp->linked && p < bp->len);
	bp_unlink(bp, p, 0, rec_item(&bp->pairs[p], 0));
	bp_unlink(bp, p, 1, rec_item(&bp->pairs[p], 1));
	uint32_t last = --bp->len;
	if (p == last) return;
	bp->pairs[p] = bp->pairs[last];
	bp->links[p] = bp->links[last];
	bp_relink(bp, p, 0, rec_item(&bp->pairs[p], 0));
	bp_relink(bp, p, 1, rec_item(&bp->pairs[p], 1));
}

/// A ref saved before bp_del(p) names the same record after it.
static inline uint32_t bp_ref_after_del(uint32_t ref, uint32_t p, uint32_t old_last)
{
	return ref != NIL && ref >> 1 == old_last ? p << 1 | (ref & 1) : ref;
}

static inline void bp_report(ORTHANT_NAME(pair_event_fn) * fn, void *ctx, const bp_rec *r)
{
	if (fn) fn(ctx, r->a, r->b, r->user_a, r->user_b);
}

// ---- the tree's hooks ------------------------------------------------------------------

/// Room to touch n more items and to end every pair of item `removing` (NIL
/// for none), so the mutation that follows cannot fail half-way. The touched
/// list is kept to about a quarter of the items: past that, bp_touch turns to
/// the all-pairs update, which that many touched items would choose anyway.
static bool bp_reserve(tree_t *t, uint32_t n, uint32_t removing)
{
	struct broadphase *bp = t->bp;
	uint64_t need = (uint64_t)bp->touched_len + n, limit = (uint64_t)t->live / 4 + 64;
	if (!bp->all && need > bp->touched_cap && bp->touched_cap < limit &&
	    !bp_grow_array(t, (void **)&bp->touched, &bp->touched_cap, sizeof(uint32_t), need < limit ? need : limit))
		return false;
	// Nothing to end without pairs. With pairs and no index, the index's
	// memory was taken by the update that made the set (bp_update_all), so
	// building it here allocates nothing.
	if (removing == NIL || bp->len == 0) return true;
	if (!bp_link_all(t)) return false;
	uint64_t k = 0;
	for (uint32_t r = bp->head[removing]; r != NIL; r = bp->links[r >> 1].next[r & 1]) k++;
	return bp_grow_array(t, (void **)&bp->ended, &bp->ended_cap, sizeof(bp_rec), bp->ended_len + k);
}

static void bp_touch(tree_t *t, uint32_t index)
{
	struct broadphase *bp = t->bp;
	item *it = &t->items[index];
	if (bp->all || (it->flags & ITEM_TOUCHED)) return;
	if (bp->touched_len == bp->touched_cap) {
		bp->all = true; // the listed items keep their flag until the update clears it
		return;
	}
	it->flags |= ITEM_TOUCHED;
	bp->touched[bp->touched_len++] = index;
}

/// The item is being removed: its pairs end now, remembered for the update
/// (bp_reserve built the index and made the room).
static void bp_detach(tree_t *t, uint32_t index)
{
	struct broadphase *bp = t->bp;
	assert(bp->linked || bp->len == 0);
	while (bp->linked && bp->head[index] != NIL) {
		uint32_t p = bp->head[index] >> 1;
		assert(bp->ended_len < bp->ended_cap);
		bp->ended[bp->ended_len++] = bp->pairs[p];
		bp_del(bp, p);
	}
	// A touched entry of this slot is skipped at update: the flag goes with the item.
	t->items[index].flags &= ~(uint32_t)ITEM_TOUCHED;
}

static void bp_reset(tree_t *t)
{
	struct broadphase *bp = t->bp;
	bp->len = 0;
	bp->linked = false;
	bp->all = true;
	bp->touched_len = bp->ended_len = bp->stage_len = 0;
}

static void bp_free(tree_t *t)
{
	struct broadphase *bp = t->bp;
	if (!bp) return;
	mem_free(t, bp->pairs, bp->cap * sizeof *bp->pairs);
	mem_free(t, bp->links, bp->link_cap * sizeof *bp->links);
	mem_free(t, bp->head, bp->head_cap * sizeof *bp->head);
	mem_free(t, bp->touched, bp->touched_cap * sizeof *bp->touched);
	mem_free(t, bp->ended, bp->ended_cap * sizeof *bp->ended);
	mem_free(t, bp->stage, bp->stage_cap * sizeof *bp->stage);
	for (int k = 0; k < 3; ++k) {
		mem_free(t, bp->key[k], bp->sort_cap * sizeof *bp->key[k]);
		mem_free(t, bp->idx[k], bp->sort_cap * sizeof *bp->idx[k]);
	}
	mem_free(t, bp, sizeof *bp);
	t->bp = NULL;
}

/// Start the broad phase: every item counts as touched, so the first update
/// reports every pair as begun.
static ort_result bp_start(tree_t *t)
{
	struct broadphase *bp = mem_alloc(t, sizeof *bp);
	if (!bp) return ORT_ERROR_OUT_OF_MEMORY;
	memset(bp, 0, sizeof *bp);
	bp->all = true;
	t->bp = bp;
	return ORT_OK;
}

// ---- the incremental update ------------------------------------------------------------

typedef struct bp_run {
	tree_t *t;
	uint32_t self;
	box_t box;
	ORTHANT_NAME(pair_event_fn) * begin;
	void *ctx;
	ort_result result;
} bp_run;

static bool bp_partner(void *ctx, ort_handle h, void *user)
{
	(void)user;
	bp_run *run = ctx;
	tree_t *t = run->t;
	uint32_t o = h.id - 1;
	if (o == run->self || (t->items[o].flags & ITEM_PAIRED) || !items_pair(t, run->self, o)) return true;
	if (t->spheres && !items_touch(t, run->self, o, &run->box, &entry_at(t, t->items[o].addr)->box)) return true;
	if (!bp_pair_reserve(t)) {
		run->result = ORT_ERROR_OUT_OF_MEMORY;
		return false;
	}
	t->items[o].flags |= ITEM_PAIRED;
	uint32_t p = bp_add(t, run->self, o);
	bp_report(run->begin, run->ctx, &t->bp->pairs[p]);
	return true;
}

/// Set or clear ITEM_PAIRED on every partner of item i.
static void bp_flag_partners(tree_t *t, uint32_t i, bool on)
{
	struct broadphase *bp = t->bp;
	for (uint32_t r = bp->head[i]; r != NIL; r = bp->links[r >> 1].next[r & 1]) {
		uint32_t o = rec_item(&bp->pairs[r >> 1], 1 - (int)(r & 1));
		if (on)
			t->items[o].flags |= ITEM_PAIRED;
		else
			t->items[o].flags &= ~(uint32_t)ITEM_PAIRED;
	}
}

/// The begun step on the tree's tasks (broadphase_jobs.c): false when it did
/// not run (no tasks, few movers, or a failure that changed nothing).
static bool bp_begun_in_jobs(tree_t *t, bool by_content, ORTHANT_NAME(pair_event_fn) * begin, void *ctx,
                             ort_result *result);

/// update_pairs inside the readers' bracket: its callbacks may change the tree.
static ort_result bp_update(tree_t *t, ORTHANT_NAME(pair_event_fn) * begin, ORTHANT_NAME(pair_event_fn) * end,
                            void *ctx)
{
	struct broadphase *bp = t->bp;
	if (!bp_link_all(t)) return ORT_ERROR_OUT_OF_MEMORY;
	// 1. ended: pairs of removed items, then touched items' pairs that broke.
	for (uint32_t k = 0; k < bp->ended_len; ++k) bp_report(end, ctx, &bp->ended[k]);
	bp->ended_len = 0;
	for (uint32_t k = 0; k < bp->touched_len; ++k) {
		uint32_t i = bp->touched[k];
		if (!(t->items[i].flags & ITEM_TOUCHED)) continue;
		box_t bi = entry_at(t, t->items[i].addr)->box; // a copy: end callbacks may grow the pools
		for (uint32_t r = bp->head[i]; r != NIL;) {
			uint32_t p = r >> 1, next = bp->links[p].next[r & 1];
			uint32_t o = rec_item(&bp->pairs[p], 1 - (int)(r & 1));
			const box_t *bo = &entry_at(t, t->items[o].addr)->box;
			if (!items_pair(t, i, o) || !box_overlap(&bi, bo) || !items_touch(t, i, o, &bi, bo)) {
				bp_rec e = bp->pairs[p];
				uint32_t last = bp->len - 1;
				bp_del(bp, p);
				next = bp_ref_after_del(next, p, last);
				bp_report(end, ctx, &e);
			}
			r = next;
		}
	}
	// 2. begun: what each touched item overlaps now. With loose cells and many
	// items touched, one pass over the tree for its content bounds pays for
	// itself: queries pruned by them skip the overlapping loose cells that hold
	// nothing near (3.6x fewer instructions in the queries of S4, callgrind).
	// Tight and leaves cells do not overlap; there the pass would only cost.
	// Without the memory for the bounds, queries prune by cells as ever.
	bool by_content = t->def.placement == ORT_PLACEMENT_LOOSE && t->root != NIL &&
	                  (size_t)bp->touched_len * 8 >= t->node_len && content_reserve(t);
	ort_result split;
	if (bp_begun_in_jobs(t, by_content, begin, ctx, &split)) return split;
	if (by_content) pairs_content(t, t->root);
	bp_run run = {t, NIL, {{0}, {0}}, begin, ctx, ORT_OK};
	uint32_t k = 0;
	for (; k < bp->touched_len && run.result == ORT_OK; ++k) {
		uint32_t i = bp->touched[k];
		if (!(t->items[i].flags & ITEM_TOUCHED)) continue;
		run.self = i;
		run.box = entry_at(t, t->items[i].addr)->box;
		bp_flag_partners(t, i, true);
		ort_result r = by_content ? query_box_by_content(t, &run.box, bp_partner, &run)
		                          : ORTHANT_NAME(tree_query_box)(t, run.box, ORT_MASK_ALL, bp_partner, &run);
		bp_flag_partners(t, i, false);
		if (r != ORT_OK) run.result = r;
		if (run.result == ORT_OK) t->items[i].flags &= ~(uint32_t)ITEM_TOUCHED;
	}
	if (run.result != ORT_OK) {
		// Out of memory part-way: what was not finished stays touched, so the
		// next update picks up where this one stopped.
		uint32_t keep = 0;
		for (uint32_t j = k - 1; j < bp->touched_len; ++j)
			if (t->items[bp->touched[j]].flags & ITEM_TOUCHED) bp->touched[keep++] = bp->touched[j];
		bp->touched_len = keep;
		return run.result;
	}
	bp->touched_len = 0;
	return ORT_OK;
}

// ---- the all-pairs update ---------------------------------------------------------------

/// Store the pair while the stage has room; count it always. A stage that
/// was too small is grown to the count and the pass run again: growing it
/// while collecting would copy it at every doubling and leave pages to the
/// allocator each time (the first update of 50M pairs spent most of its time
/// so), while a second pass costs one find_pairs and is needed only when the
/// pairs outgrow every earlier frame.
static bool bp_collect(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	struct broadphase *bp = ctx;
	if (bp->stage_len < bp->stage_cap) bp->stage[bp->stage_len] = (bp_rec){a, b, ua, ub};
	if (++bp->stage_len == BP_MAX_PAIRS) return false;
	return true;
}

/// One find_pairs pass into the stage, two when it must grow first.
static ort_result bp_find_all(tree_t *t)
{
	struct broadphase *bp = t->bp;
	for (int pass = 0; pass < 2; ++pass) {
		bp->stage_len = 0;
		ort_result r = ORTHANT_NAME(tree_find_pairs)(t, ORT_MASK_ALL, bp_collect, bp);
		if (r != ORT_OK) return r;
		if (bp->stage_len == BP_MAX_PAIRS) return ORT_ERROR_CAPACITY;
		if (bp->stage_len <= bp->stage_cap) return ORT_OK;
		// A quarter more than found: the count of a moving world wanders, and
		// pages of the headroom cost nothing until written.
		uint64_t want = (uint64_t)bp->stage_len + bp->stage_len / 4 + 64;
		if (want > BP_MAX_PAIRS) want = BP_MAX_PAIRS;
		if (!bp_resize(t, (void **)&bp->stage, &bp->stage_cap, sizeof(bp_rec), want))
			return ORT_ERROR_OUT_OF_MEMORY;
	}
	assert(!"a second find_pairs pass found more pairs than the first");
	return ORT_ERROR_OUT_OF_MEMORY;
}

/// A pair's sort key: its lower item above `shift` bits, its higher below.
static inline uint64_t bp_key(const bp_rec *r, int shift)
{
	uint64_t x = r->a.id - 1, y = r->b.id - 1;
	return x < y ? x << shift | y : y << shift | x;
}

/// Sort n (key, index) pairs of `bits`-bit keys, least significant digit
/// first, ping-ponging between (*k, *ix) and (*tk, *ti); the result ends in
/// (*k, *ix) (the pointers are swapped, never the contents copied back).
static void bp_radix(uint64_t **k, uint32_t **ix, uint64_t **tk, uint32_t **ti, uint32_t n, int bits)
{
	enum { MAX_DIGIT = 12 };
	uint32_t count[1u << MAX_DIGIT];
	int passes = (bits + MAX_DIGIT - 1) / MAX_DIGIT;
	if (passes == 0) return;
	int width = (bits + passes - 1) / passes;
	uint32_t buckets = 1u << width, mask = buckets - 1;
	for (int pass = 0, shift = 0; pass < passes; ++pass, shift += width) {
		const uint64_t *sk = *k;
		const uint32_t *si = *ix;
		uint64_t *dk = *tk;
		uint32_t *di = *ti;
		memset(count, 0, buckets * sizeof *count);
		for (uint32_t j = 0; j < n; ++j) count[(sk[j] >> shift) & mask]++;
		uint32_t sum = 0;
		for (uint32_t b = 0; b < buckets; ++b) {
			uint32_t c = count[b];
			count[b] = sum;
			sum += c;
		}
		for (uint32_t j = 0; j < n; ++j) {
			uint32_t at = count[(sk[j] >> shift) & mask]++;
			dk[at] = sk[j];
			di[at] = si[j];
		}
		uint64_t *swk = *k;
		*k = *tk;
		*tk = swk;
		uint32_t *swi = *ix;
		*ix = *ti;
		*ti = swi;
	}
}

/// Room for sorting `need` keys: all six arrays share sort_cap, so the sort
/// may swap them. False, with the old arrays kept, when memory is short.
static bool bp_sort_reserve(tree_t *t, uint64_t need)
{
	struct broadphase *bp = t->bp;
	if (need <= bp->sort_cap) return true;
	uint64_t want = need; // the pair arrays' capacities, which carry the headroom
	if (want > BP_MAX_PAIRS) return false;
	uint64_t *key[3] = {0};
	uint32_t *idx[3] = {0};
	bool ok = true;
	for (int k = 0; k < 3 && ok; ++k) {
		key[k] = mem_alloc(t, (size_t)want * sizeof *key[k]);
		idx[k] = key[k] ? mem_alloc(t, (size_t)want * sizeof *idx[k]) : NULL;
		ok = key[k] && idx[k];
	}
	uint32_t drop_cap = ok ? bp->sort_cap : (uint32_t)want;
	for (int k = 0; k < 3; ++k) {
		uint64_t *dk = ok ? bp->key[k] : key[k];
		uint32_t *di = ok ? bp->idx[k] : idx[k];
		mem_free(t, dk, drop_cap * sizeof *dk);
		mem_free(t, di, drop_cap * sizeof *di);
		if (ok) {
			bp->key[k] = key[k];
			bp->idx[k] = idx[k];
		}
	}
	if (ok) bp->sort_cap = (uint32_t)want;
	return ok;
}

/// Keys and identity indices of recs[0, n) into slot s, sorted.
static void bp_sort_keys(struct broadphase *bp, int s, const bp_rec *recs, uint32_t n, int shift)
{
	for (uint32_t j = 0; j < n; ++j) {
		bp->key[s][j] = bp_key(&recs[j], shift);
		bp->idx[s][j] = j;
	}
	bp_radix(&bp->key[s], &bp->idx[s], &bp->key[2], &bp->idx[2], n, 2 * shift);
}

/// Share of live items that must be touched for the all-pairs update: at 1/4,
/// one query per touched item already costs about what one pass over all
/// items does.
#define BP_ALL_SHARE 4

static bool bp_wants_all(const tree_t *t)
{
	const struct broadphase *bp = t->bp;
	return bp->all || (t->live >= 64 && (uint64_t)bp->touched_len * BP_ALL_SHARE >= t->live);
}

static ort_result bp_update_all(tree_t *t, ORTHANT_NAME(pair_event_fn) * begin, ORTHANT_NAME(pair_event_fn) * end,
                                void *ctx)
{
	struct broadphase *bp = t->bp;
	bp->stage_len = 0;
	// The set and the stage trade places every time: keep their capacities
	// (and the sort's) equal, so memory grows only when the pairs outgrow it,
	// not whenever the smaller of the two takes its turn.
	ort_result r = ORT_OK;
	if (bp->len > 0 && bp->stage_cap < bp->cap &&
	    !bp_resize(t, (void **)&bp->stage, &bp->stage_cap, sizeof(bp_rec), bp->cap))
		r = ORT_ERROR_OUT_OF_MEMORY;
	if (r == ORT_OK) r = bp_find_all(t);
	uint32_t n_old = bp->len, n_new = bp->stage_len;
	if (r == ORT_OK && n_old > 0 && !bp_sort_reserve(t, bp->stage_cap > bp->cap ? bp->stage_cap : bp->cap))
		r = ORT_ERROR_OUT_OF_MEMORY;
	// The index is built later, when needed, but its memory is taken now: a
	// removal made from a callback of this update cannot then fail for it.
	if (r == ORT_OK && !bp_index_reserve(t, bp->stage_cap)) r = ORT_ERROR_OUT_OF_MEMORY;
	if (r != ORT_OK) {
		// Out of memory: nothing changed and nothing was reported; everything
		// stays touched, and the ended pairs of removed items wait.
		bp->stage_len = 0;
		return r;
	}
	// The diff: ended old indices compacted into idx[0], begun new ones into
	// idx[1], each in ascending key order (a write never passes the read).
	uint32_t ended = 0, begun = 0;
	if (n_old > 0) {
		int shift = 1;
		while (shift < 32 && (uint64_t)t->item_len > (1ull << shift)) shift++;
		bp_sort_keys(bp, 0, bp->pairs, n_old, shift);
		bp_sort_keys(bp, 1, bp->stage, n_new, shift);
		const uint64_t *ko = bp->key[0], *kn = bp->key[1];
		uint32_t *io = bp->idx[0], *in = bp->idx[1];
		uint32_t i = 0, j = 0;
		while (i < n_old && j < n_new) {
			if (ko[i] == kn[j]) {
				i++, j++;
			} else if (ko[i] < kn[j]) {
				io[ended++] = io[i++];
			} else {
				in[begun++] = in[j++];
			}
		}
		while (i < n_old) io[ended++] = io[i++];
		while (j < n_new) in[begun++] = in[j++];
	}
	// The pairs found become the set; the old set stays in stage for its reports.
	bp_rec *sw = bp->pairs;
	bp->pairs = bp->stage;
	bp->stage = sw;
	uint32_t swc = bp->cap;
	bp->cap = bp->stage_cap;
	bp->stage_cap = swc;
	bp->len = n_new;
	bp->stage_len = n_old;
	bp->linked = false;
	for (uint32_t k = 0; k < bp->touched_len; ++k) t->items[bp->touched[k]].flags &= ~(uint32_t)ITEM_TOUCHED;
	bp->touched_len = 0;
	bp->all = false;
	reading_begin(t);
	for (uint32_t k = 0; k < bp->ended_len; ++k) bp_report(end, ctx, &bp->ended[k]);
	bp->ended_len = 0;
	if (n_old > 0) {
		for (uint32_t k = 0; k < ended; ++k) bp_report(end, ctx, &bp->stage[bp->idx[0][k]]);
		for (uint32_t k = 0; k < begun; ++k) bp_report(begin, ctx, &bp->pairs[bp->idx[1][k]]);
	} else {
		for (uint32_t p = 0; p < n_new; ++p) bp_report(begin, ctx, &bp->pairs[p]);
	}
	bp->stage_len = 0;
	reading_end(t);
	return ORT_OK;
}

ort_result ORTHANT_NAME(tree_update_pairs)(tree_t *t, ORTHANT_NAME(pair_event_fn) * begin,
                                           ORTHANT_NAME(pair_event_fn) * end, void *ctx)
{
	if (!t) return ORT_ERROR_INVALID_ARGUMENT;
	if (in_callback(t)) return misuse(t, ORT_ERROR_BUSY, "orthant: update_pairs from inside a callback");
	if (!t->bp) {
		ort_result r = bp_start(t);
		if (r != ORT_OK) return r;
	}
	if (bp_wants_all(t)) return bp_update_all(t, begin, end, ctx);
	reading_begin(t);
	ort_result r = bp_update(t, begin, end, ctx);
	reading_end(t);
	return r;
}

ort_result ORTHANT_NAME(tree_current_pairs)(const tree_t *t, ORTHANT_NAME(pair_fn) * fn, void *ctx)
{
	if (!t || !fn) return ORT_ERROR_INVALID_ARGUMENT;
	if (!t->bp) return ORT_OK;
	reading_begin(t);
	const struct broadphase *bp = t->bp;
	for (uint32_t p = 0; p < bp->len; ++p) {
		const bp_rec *r = &bp->pairs[p];
		assert(r->a.gen == make_handle(t, r->a.id - 1).gen && r->b.gen == make_handle(t, r->b.id - 1).gen);
		if (!fn(ctx, r->a, r->b, r->user_a, r->user_b)) break;
	}
	reading_end(t);
	return ORT_OK;
}

const ORTHANT_NAME(pair) * ORTHANT_NAME(tree_pair_array)(const tree_t *t, size_t *count)
{
	if (count) *count = t && t->bp ? t->bp->len : 0;
	return t && t->bp && t->bp->len ? t->bp->pairs : NULL;
}

int ORTHANT_NAME(tree_pair_count)(const tree_t *t) { return t && t->bp ? (int)t->bp->len : 0; }

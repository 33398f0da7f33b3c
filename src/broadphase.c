// broadphase.c: the incremental broad phase — which pairs began and which
// ended since the last call, at a cost that grows with what changed.
//
// ## How it works
//
// The broad phase keeps the current pair set as pair records in a pool. Each
// record sits in two intrusive doubly linked lists, one per item (head[item]),
// so an item's pairs are found without scanning the set, and in an open
// addressing hash table keyed by the two item indices, so "is (a, b) already a
// pair?" is O(1).
//
// The tree tells it which items changed (bp_touch: inserted, moved,
// re-filtered) in a touched list, each item once (ITEM_TOUCHED). An update:
//
//   1. ended: for each touched item, every pair in its list whose boxes no
//      longer overlap (or whose filters now forbid it) is reported and freed;
//      pairs of removed items were moved to the ended list at removal, with the
//      handles and user data they had;
//   2. begun: for each touched item, a box query finds what it overlaps now;
//      a partner not yet paired with it begins a pair.
//
// A pair of two touched items is met twice and counted once (the table), and
// an untouched pair cannot change, so nothing else needs looking at. The
// events come in touched order and tree order: deterministic for the same
// sequence of calls.
//
// When a quarter or more of the items are touched (always on the first
// update), per-item queries would walk the tree once per item and meet most
// pairs twice; then one find_pairs pass finds every current pair once and the
// set is diffed against it (bp_update_all): ended pairs come in pool order,
// then begun ones, also deterministic.
//
// A pair record caches both items' handle generations and user data, which
// cannot change while the items live: reporting the set (current_pairs) walks
// the record array alone, at memory speed, never the items. In steady state nothing is allocated: every array keeps
// its capacity, and the tree reserves room before it mutates (bp_reserve).
#include "tree_int.h"

typedef struct bp_pair {
	uint32_t item[2];
	uint32_t next[2], prev[2]; ///< links in item[0]'s and item[1]'s lists
	// What a report of the pair needs, copied at its start so current_pairs
	// walks this array alone, never the items: an item's handle generation and
	// user data cannot change while it lives, and its pairs end before it dies.
	uint32_t gen[2]; ///< the items' handle generations
	void *user[2];
} bp_pair;

/// A pair's state in one all-pairs update (bp_update_all), in bp->mark.
enum { BP_UNSEEN = 0, BP_SEEN = 1, BP_NEW = 2 };

typedef struct bp_event {
	ort_handle a, b;
	void *ua, *ub;
} bp_event;

struct broadphase {
	uint32_t *head; ///< per item slot: first pair record, or NIL
	uint32_t head_cap;
	bp_pair *pairs;
	uint8_t *mark; ///< per pair record: BP_UNSEEN/SEEN/NEW, all BP_UNSEEN between updates
	uint32_t mark_cap; ///< >= pair_cap
	uint32_t pair_cap, pair_len, pair_free, live;
	uint32_t *table; ///< pair indices, NIL for empty; size a power of two
	uint32_t table_cap;
	uint32_t *touched;
	uint32_t touched_len, touched_cap;
	bp_event *ended;
	uint32_t ended_len, ended_cap;
};

// ---- the hash table -----------------------------------------------------------

static inline uint32_t bp_hash(uint32_t a, uint32_t b)
{
	uint64_t k = a < b ? (uint64_t)a << 32 | b : (uint64_t)b << 32 | a;
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return (uint32_t)k;
}

static inline bool bp_is(const bp_pair *p, uint32_t a, uint32_t b)
{
	return (p->item[0] == a && p->item[1] == b) || (p->item[0] == b && p->item[1] == a);
}

static uint32_t bp_find(const struct broadphase *bp, uint32_t a, uint32_t b)
{
	if (!bp->table_cap) return NIL;
	uint32_t m = bp->table_cap - 1;
	for (uint32_t s = bp_hash(a, b) & m;; s = (s + 1) & m) {
		uint32_t p = bp->table[s];
		if (p == NIL) return NIL;
		if (bp_is(&bp->pairs[p], a, b)) return p;
	}
}

static void bp_table_put(struct broadphase *bp, uint32_t p)
{
	uint32_t m = bp->table_cap - 1;
	uint32_t s = bp_hash(bp->pairs[p].item[0], bp->pairs[p].item[1]) & m;
	while (bp->table[s] != NIL) s = (s + 1) & m;
	bp->table[s] = p;
}

/// Remove p from the table, shifting later entries of its probe run back so
/// lookups never stop early at the hole.
static void bp_table_del(struct broadphase *bp, uint32_t p)
{
	uint32_t m = bp->table_cap - 1;
	uint32_t s = bp_hash(bp->pairs[p].item[0], bp->pairs[p].item[1]) & m;
	while (bp->table[s] != p) s = (s + 1) & m;
	uint32_t hole = s;
	for (s = (s + 1) & m; bp->table[s] != NIL; s = (s + 1) & m) {
		uint32_t q = bp->table[s];
		uint32_t home = bp_hash(bp->pairs[q].item[0], bp->pairs[q].item[1]) & m;
		// q may fill the hole unless its home lies cyclically in (hole, s].
		bool stays = hole <= s ? (home > hole && home <= s) : (home > hole || home <= s);
		if (!stays) {
			bp->table[hole] = q;
			hole = s;
		}
	}
	bp->table[hole] = NIL;
}

// ---- pair records ------------------------------------------------------------------

static inline int bp_side(const bp_pair *p, uint32_t it) { return p->item[0] == it ? 0 : 1; }

static void bp_link(struct broadphase *bp, uint32_t p, int side)
{
	bp_pair *r = &bp->pairs[p];
	uint32_t it = r->item[side];
	r->prev[side] = NIL;
	r->next[side] = bp->head[it];
	if (bp->head[it] != NIL) {
		bp_pair *h = &bp->pairs[bp->head[it]];
		h->prev[bp_side(h, it)] = p;
	}
	bp->head[it] = p;
}

static void bp_unlink(struct broadphase *bp, uint32_t p, int side)
{
	bp_pair *r = &bp->pairs[p];
	uint32_t it = r->item[side];
	if (r->prev[side] != NIL) {
		bp_pair *q = &bp->pairs[r->prev[side]];
		q->next[bp_side(q, it)] = r->next[side];
	} else {
		bp->head[it] = r->next[side];
	}
	if (r->next[side] != NIL) {
		bp_pair *q = &bp->pairs[r->next[side]];
		q->prev[bp_side(q, it)] = r->prev[side];
	}
}

/// Add the pair (a, b); room reserved by bp_pair_reserve.
static uint32_t bp_add(tree_t *t, uint32_t a, uint32_t b)
{
	struct broadphase *bp = t->bp;
	uint32_t p;
	if (bp->pair_free != NIL) {
		p = bp->pair_free;
		bp->pair_free = bp->pairs[p].next[0];
	} else {
		p = bp->pair_len++;
	}
	bp->pairs[p].item[0] = a;
	bp->pairs[p].item[1] = b;
	bp->pairs[p].gen[0] = make_handle(t, a).gen;
	bp->pairs[p].gen[1] = make_handle(t, b).gen;
	bp->pairs[p].user[0] = t->items[a].user;
	bp->pairs[p].user[1] = t->items[b].user;
	bp_link(bp, p, 0);
	bp_link(bp, p, 1);
	bp_table_put(bp, p);
	bp->live++;
	return p;
}

/// The pair's report: handles and user data as cached at its start.
static inline bp_event bp_event_of(const tree_t *t, const bp_pair *r)
{
	(void)t;
	ort_handle a = {r->item[0] + 1, r->gen[0]}, b = {r->item[1] + 1, r->gen[1]};
	assert(a.gen == make_handle(t, r->item[0]).gen && b.gen == make_handle(t, r->item[1]).gen);
	return (bp_event){a, b, r->user[0], r->user[1]};
}

static void bp_del(struct broadphase *bp, uint32_t p)
{
	bp_table_del(bp, p);
	bp_unlink(bp, p, 0);
	bp_unlink(bp, p, 1);
	bp->pairs[p].item[0] = bp->pairs[p].item[1] = NIL;
	bp->pairs[p].next[0] = bp->pair_free;
	bp->pair_free = p;
	bp->live--;
}

/// Room for one more pair: the pool, and a table at most half full.
static bool bp_pair_reserve(tree_t *t)
{
	struct broadphase *bp = t->bp;
	if (bp->pair_free == NIL && bp->pair_len == bp->pair_cap) {
		uint32_t cap = bp->pair_cap ? bp->pair_cap * 2 : 64;
		// mark first (new bytes are zero: BP_UNSEEN); if the pool then fails,
		// the larger mark array simply stays for the next attempt.
		if (bp->mark_cap < cap) {
			if (!array_resize(t, (void **)&bp->mark, bp->mark_cap, cap)) return false;
			bp->mark_cap = cap;
		}
		if (!array_resize(t, (void **)&bp->pairs, bp->pair_cap * sizeof(bp_pair), cap * sizeof(bp_pair))) return false;
		bp->pair_cap = cap;
	}
	if ((uint64_t)(bp->live + 1) * 2 > bp->table_cap) {
		uint32_t cap = bp->table_cap ? bp->table_cap * 2 : 128;
		uint32_t *table = mem_alloc(t, cap * sizeof *table);
		if (!table) return false;
		for (uint32_t s = 0; s < cap; ++s) table[s] = NIL;
		uint32_t *old = bp->table, old_cap = bp->table_cap;
		bp->table = table;
		bp->table_cap = cap;
		for (uint32_t s = 0; s < old_cap; ++s)
			if (old[s] != NIL) bp_table_put(bp, old[s]);
		mem_free(t, old, old_cap * sizeof *old);
	}
	return true;
}

// ---- the tree's hooks ------------------------------------------------------------------

static bool bp_items_grow(tree_t *t, uint32_t old_cap, uint32_t new_cap)
{
	struct broadphase *bp = t->bp;
	(void)old_cap;
	if (bp->head_cap >= new_cap) return true;
	if (!array_resize(t, (void **)&bp->head, bp->head_cap * sizeof(uint32_t), new_cap * sizeof(uint32_t))) return false;
	for (uint32_t i = bp->head_cap; i < new_cap; ++i) bp->head[i] = NIL;
	bp->head_cap = new_cap;
	return true;
}

static bool bp_grow_array(tree_t *t, void **arr, uint32_t *cap, size_t elem, uint64_t need)
{
	if (need <= *cap) return true;
	uint64_t want = (uint64_t)*cap * 2;
	if (want < need) want = need;
	if (want < 64) want = 64;
	if (want > UINT32_MAX / 2) return false;
	if (!array_resize(t, arr, *cap * elem, (size_t)want * elem)) return false;
	*cap = (uint32_t)want;
	return true;
}

/// Room to touch n more items and to end every pair of item `removing` (NIL
/// for none), so the mutation that follows cannot fail half-way.
static bool bp_reserve(tree_t *t, uint32_t n, uint32_t removing)
{
	struct broadphase *bp = t->bp;
	if (!bp_grow_array(t, (void **)&bp->touched, &bp->touched_cap, sizeof(uint32_t), (uint64_t)bp->touched_len + n))
		return false;
	if (removing == NIL) return true;
	uint64_t k = 0;
	for (uint32_t p = bp->head[removing]; p != NIL; p = bp->pairs[p].next[bp_side(&bp->pairs[p], removing)]) k++;
	return bp_grow_array(t, (void **)&bp->ended, &bp->ended_cap, sizeof(bp_event), bp->ended_len + k);
}

static void bp_touch(tree_t *t, uint32_t index)
{
	struct broadphase *bp = t->bp;
	item *it = &t->items[index];
	if (it->flags & ITEM_TOUCHED) return;
	it->flags |= ITEM_TOUCHED;
	assert(bp->touched_len < bp->touched_cap);
	bp->touched[bp->touched_len++] = index;
}

/// The item is being removed: its pairs end now, remembered for the update.
static void bp_detach(tree_t *t, uint32_t index)
{
	struct broadphase *bp = t->bp;
	while (bp->head[index] != NIL) {
		uint32_t p = bp->head[index];
		bp->ended[bp->ended_len++] = bp_event_of(t, &bp->pairs[p]);
		bp_del(bp, p);
	}
	// A touched entry of this slot is skipped at update: the flag goes with the item.
	t->items[index].flags &= ~(uint32_t)ITEM_TOUCHED;
}

static void bp_reset(tree_t *t)
{
	struct broadphase *bp = t->bp;
	for (uint32_t i = 0; i < bp->head_cap; ++i) bp->head[i] = NIL;
	for (uint32_t s = 0; s < bp->table_cap; ++s) bp->table[s] = NIL;
	bp->pair_len = bp->live = 0;
	bp->pair_free = NIL;
	bp->touched_len = bp->ended_len = 0;
}

static void bp_free(tree_t *t)
{
	struct broadphase *bp = t->bp;
	if (!bp) return;
	mem_free(t, bp->head, bp->head_cap * sizeof *bp->head);
	mem_free(t, bp->pairs, bp->pair_cap * sizeof *bp->pairs);
	mem_free(t, bp->mark, bp->mark_cap);
	mem_free(t, bp->table, bp->table_cap * sizeof *bp->table);
	mem_free(t, bp->touched, bp->touched_cap * sizeof *bp->touched);
	mem_free(t, bp->ended, bp->ended_cap * sizeof *bp->ended);
	mem_free(t, bp, sizeof *bp);
	t->bp = NULL;
}

/// Start the broad phase: every live item is touched, so the first update
/// reports every pair as begun.
static ort_result bp_start(tree_t *t)
{
	struct broadphase *bp = mem_alloc(t, sizeof *bp);
	if (!bp) return ORT_ERROR_OUT_OF_MEMORY;
	memset(bp, 0, sizeof *bp);
	bp->pair_free = NIL;
	t->bp = bp;
	if (!bp_items_grow(t, 0, t->item_cap) || !bp_reserve(t, t->live, NIL)) {
		bp_free(t);
		return ORT_ERROR_OUT_OF_MEMORY;
	}
	for (uint32_t i = 0; i < t->item_len; ++i)
		if (t->items[i].flags & ITEM_LIVE) bp_touch(t, i);
	return ORT_OK;
}

// ---- update -------------------------------------------------------------------------

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
	if (o == run->self || !items_pair(t, run->self, o)) return true;
	if (t->spheres && !items_touch(t, run->self, o, &run->box, &entry_at(t, t->items[o].addr)->box)) return true;
	struct broadphase *bp = t->bp;
	if (bp_find(bp, run->self, o) != NIL) return true;
	if (!bp_pair_reserve(t)) {
		run->result = ORT_ERROR_OUT_OF_MEMORY;
		return false;
	}
	bp_add(t, run->self, o);
	if (run->begin)
		run->begin(run->ctx, make_handle(t, run->self), h, t->items[run->self].user, t->items[o].user);
	return true;
}

static ort_result bp_update(tree_t *t, ORTHANT_NAME(pair_event_fn) * begin, ORTHANT_NAME(pair_event_fn) * end,
                            void *ctx);

// ---- the all-pairs update ---------------------------------------------------------------
//
// When a large share of the items changed (the first update, a world where
// most things move), one query per changed item finds each pair of two changed
// items twice and walks the tree once per item. One pass of find_pairs over
// the whole tree finds each current pair once instead; the set is then diffed
// against it: a found pair already in the set is marked seen, a new one is
// added and marked new; afterwards every unseen pair has ended (an unchanged
// pair is always found again) and every new one has begun.

typedef struct bp_all_run {
	tree_t *t;
	ort_result result;
} bp_all_run;

static bool bp_all_pair(void *ctx, ort_handle ha, ort_handle hb, void *ua, void *ub)
{
	(void)ua;
	(void)ub;
	bp_all_run *run = ctx;
	tree_t *t = run->t;
	struct broadphase *bp = t->bp;
	uint32_t a = ha.id - 1, b = hb.id - 1;
	uint32_t p = bp_find(bp, a, b);
	if (p != NIL) {
		bp->mark[p] = BP_SEEN;
		return true;
	}
	if (!bp_pair_reserve(t)) {
		run->result = ORT_ERROR_OUT_OF_MEMORY;
		return false;
	}
	bp->mark[bp_add(t, a, b)] = BP_NEW;
	return true;
}

/// Share of live items that must be touched for the all-pairs update: at 1/4,
/// one query per touched item already costs about what one pass over all
/// items does.
#define BP_ALL_SHARE 4

static bool bp_wants_all(const tree_t *t)
{
	const struct broadphase *bp = t->bp;
	return t->live >= 64 && (uint64_t)bp->touched_len * BP_ALL_SHARE >= t->live;
}

static ort_result bp_update_all(tree_t *t, ORTHANT_NAME(pair_event_fn) * begin, ORTHANT_NAME(pair_event_fn) * end,
                                void *ctx)
{
	struct broadphase *bp = t->bp;
	bp_all_run run = {t, ORT_OK};
	ort_result r = ORTHANT_NAME(tree_find_pairs)(t, ORT_MASK_ALL, bp_all_pair, &run);
	if (r == ORT_OK) r = run.result;
	if (r != ORT_OK) {
		// Out of memory: the pairs added here never began; drop them and the
		// marks. Nothing was reported, everything stays touched, and the ended
		// pairs of removed items wait for the next update.
		for (uint32_t p = 0; p < bp->pair_len; ++p) {
			if (bp->mark[p] == BP_NEW) bp_del(bp, p);
			bp->mark[p] = BP_UNSEEN;
		}
		return r;
	}
	reading_begin(t);
	for (uint32_t k = 0; k < bp->ended_len; ++k) {
		const bp_event *e = &bp->ended[k];
		if (end) end(ctx, e->a, e->b, e->ua, e->ub);
	}
	bp->ended_len = 0;
	for (uint32_t p = 0; p < bp->pair_len; ++p) {
		if (bp->mark[p] != BP_UNSEEN || bp->pairs[p].item[0] == NIL) continue;
		bp_event e = bp_event_of(t, &bp->pairs[p]);
		bp_del(bp, p);
		if (end) end(ctx, e.a, e.b, e.ua, e.ub);
	}
	for (uint32_t p = 0; p < bp->pair_len; ++p) {
		if (bp->mark[p] == BP_NEW && begin) {
			bp_event e = bp_event_of(t, &bp->pairs[p]);
			begin(ctx, e.a, e.b, e.ua, e.ub);
		}
		bp->mark[p] = BP_UNSEEN;
	}
	for (uint32_t k = 0; k < bp->touched_len; ++k) t->items[bp->touched[k]].flags &= ~(uint32_t)ITEM_TOUCHED;
	bp->touched_len = 0;
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

/// update_pairs inside the readers' bracket: its callbacks may change the tree.
static ort_result bp_update(tree_t *t, ORTHANT_NAME(pair_event_fn) * begin, ORTHANT_NAME(pair_event_fn) * end,
                            void *ctx)
{
	struct broadphase *bp = t->bp;
	// 1. ended: pairs of removed items, then touched items' pairs that broke.
	for (uint32_t k = 0; k < bp->ended_len; ++k) {
		const bp_event *e = &bp->ended[k];
		if (end) end(ctx, e->a, e->b, e->ua, e->ub);
	}
	bp->ended_len = 0;
	for (uint32_t k = 0; k < bp->touched_len; ++k) {
		uint32_t i = bp->touched[k];
		if (!(t->items[i].flags & ITEM_TOUCHED)) continue;
		box_t bi = entry_at(t, t->items[i].addr)->box; // a copy: end callbacks may grow the pools
		for (uint32_t p = bp->head[i]; p != NIL;) {
			bp_pair *r = &bp->pairs[p];
			int side = bp_side(r, i);
			uint32_t next = r->next[side], o = r->item[1 - side];
			const box_t *bo = &entry_at(t, t->items[o].addr)->box;
			if (!items_pair(t, i, o) || !box_overlap(&bi, bo) || !items_touch(t, i, o, &bi, bo)) {
				bp_event e = bp_event_of(t, r);
				bp_del(bp, p);
				if (end) end(ctx, e.a, e.b, e.ua, e.ub);
			}
			p = next;
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
	if (by_content) pairs_content(t, t->root);
	bp_run run = {t, NIL, {{0}, {0}}, begin, ctx, ORT_OK};
	uint32_t k = 0;
	for (; k < bp->touched_len && run.result == ORT_OK; ++k) {
		uint32_t i = bp->touched[k];
		if (!(t->items[i].flags & ITEM_TOUCHED)) continue;
		run.self = i;
		run.box = entry_at(t, t->items[i].addr)->box;
		ort_result r = by_content ? query_box_by_content(t, &run.box, bp_partner, &run)
		                          : ORTHANT_NAME(tree_query_box)(t, run.box, ORT_MASK_ALL, bp_partner, &run);
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

ort_result ORTHANT_NAME(tree_current_pairs)(const tree_t *t, ORTHANT_NAME(pair_fn) * fn, void *ctx)
{
	if (!t || !fn) return ORT_ERROR_INVALID_ARGUMENT;
	if (!t->bp) return ORT_OK;
	reading_begin(t);
	for (uint32_t p = 0; p < t->bp->pair_len; ++p) {
		const bp_pair *r = &t->bp->pairs[p];
		if (r->item[0] == NIL) continue;
		bp_event e = bp_event_of(t, r);
		if (!fn(ctx, e.a, e.b, e.ua, e.ub)) break;
	}
	reading_end(t);
	return ORT_OK;
}

int ORTHANT_NAME(tree_pair_count)(const tree_t *t) { return t && t->bp ? (int)t->bp->live : 0; }

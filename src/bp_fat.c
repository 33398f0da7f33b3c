// bp_fat.c: the movers' shortcut of the incremental broad phase. A mover that
// stays inside its enlarged ("fat") box re-tests the few items it met there
// instead of querying the tree, and its pairs stay exact.
//
// In a big world where few things move, an update's cost is its movers'
// queries, and a query is a walk from the root that misses the cache at every
// level (about 30 misses a mover in a 2M-box world). Box2D stores fat boxes in
// its tree and re-queries a proxy only when it leaves its fat box; the tree
// here must keep the true boxes (its queries are exact), so the broad phase
// keeps the fat boxes beside it.
//
// ## Records
//
// An item touched by a recent update has a record (`rec`, found through a
// small hash table, `hot`, not an array over every item: 4 bytes an item of
// the tree, and a cache miss a look-up where the table stays cached): its box at its last change (the true box: its entries hold the
// same), the update that saw that change (`stamp`), and, when it has one, a
// candidate list: the fat box `fat` and a copy of every other item whose box
// met `fat` at update `made`, with that box. The records form the hot set:
// every item changed within the last FAT_AGE updates (an older record is
// dropped at the next update's refresh), and more: an item's record stays
// while it keeps changing, so the hot set holds every item changed since
// update `since`, the update after the last stamp of a record dropped (or
// after the last time all were dropped). While the same few items move, no
// record is dropped and `since` stays: their lists stay usable until they
// leave their fat boxes, however old.
//
// The records are also where the update reads its touched items: the
// refresh, its first step, reads each touched item and its entry once (cache
// misses apart, started early) and keeps the box in the record; the ended and
// begun steps read the record (fat_touched). The ended step takes a
// partner's box from the hot set or the mover's list when they know it
// (fat_known_box: the same reasoning as below), so a pair that holds costs no
// read of the partner's item and entry; only when a filter changed or spheres
// exist does it read them (the filters and the exact shapes are not kept
// here).
//
// ## Why a list is enough
//
// Let item i be touched now (update `now`), its box inside its fat box, its
// list made at update U with U >= since. An item j meets i now when:
//   - j did not change since U: its box then is its box now, and it met i's
//     box, so it met the fat box: j is in the list, with its box of now;
//   - j changed after U: its stamp is after U, so at or after `since`, so j
//     is in the hot set, whose records hold every box of now.
// So each update first finds every overlapping pair of hot items of which one
// changed now (a sweep along x over the hot set: fat_hot_pairs), then each
// touched item tests its list. A list entry's box may be stale (its item
// moved, or was removed and its slot reused): an entry that meets the item is
// checked against the item's own entry before it begins a pair, and one that
// misses is either right or a hot item the sweep covers. A touched item
// outside its fat box, or whose list was made before `since`, or has none,
// queries the tree with a new fat box, grown by its last step on each axis
// (FAT_AHEAD steps on the side it moved to, FAT_BACK on the other) and an
// eighth of its size, and keeps what it met as its new list.
//
// ## Failures and limits
//
// Nothing here may make the pair set wrong, so every shortfall falls back to
// the tree query, which needs none of this: without memory for the records
// (fat_refresh) every record is dropped and the update queries; a sweep that
// meets too many x-overlaps (a column of hot items) or cannot get memory for
// its pairs turns the lists off for the update; a list that would exceed
// FAT_MAX_CAND entries, or lacks room, is not kept. Memory is kept between
// updates: in steady state nothing is allocated (the candidate lists live in
// one arena, compacted into its spare when full). An all-pairs update and a
// reset drop every record: they do not see the touched items one by one.
//
// An update that touches more than one item in FAT_SHARE does not use the
// shortcut, and keeping records for it would cost the most (a record is ~100
// bytes with its sweep keys, touched slot and table room, and a tenth of the
// items hot is 8 B/object):
// such an update drops every record instead, which the reasoning above
// allows (no records, no lists). After FAT_IDLE such updates in a row the
// memory goes back too (fat_release) and is not reserved again until an
// update wants the shortcut: a world where many things move does not keep
// it, and one whose movers come and go around the share does not allocate
// every frame. The update that turns the shortcut back on runs without it
// (its records have no room yet) and reserves for the next.

/// Updates a record stays without a change of its item: items changed
/// within as many updates are hot (and those changed since `since`).
#define FAT_AGE 8u
/// The oldest list kept usable, in updates: `now - since` stays below it, so
/// the distances compared never wrap.
#define FAT_SPAN_MAX (1u << 30)
/// The shortcut serves updates that touch at most one item in this many: a
/// few movers in a big world. More movers query the tree (in jobs, when the
/// tree has tasks), as the records would be most of what they read.
#define FAT_SHARE 32u
/// A list longer than this is not kept: the item queries the tree each time.
#define FAT_MAX_CAND 32u
/// Updates in a row without the shortcut after which its memory goes back.
#define FAT_IDLE 8u
/// How many of its last steps a new fat box looks ahead, on each axis on the
/// side the item moved to (up to FAT_REACH times its size). In a big world a
/// list's gather is a walk from the root, its misses most of what a mover's
/// frame costs, and a list stays usable for as long as its mover stays
/// inside: 16 steps gather 2.4 times less often than 4 (S10, callgrind), for
/// a list of 6 candidates where there were 2, which cost a compare each; 24
/// steps (and a reach of 3 sizes) gather 129 -> 79 times a frame, lists of
/// 4.0 -> 4.9 hits, 6 % fewer instructions and 9 % fewer L2 misses in
/// update_pairs (S10's steady state, 2k movers, callgrind); 32 steps and 4
/// sizes gathered 67 times but read more than they saved.
#define FAT_AHEAD 24.0f
/// How many of its last steps a new fat box reaches back, on the side the
/// item came from (up to a quarter of the reach ahead): an item that keeps
/// its course never goes there, so looking back as far as ahead made lists
/// and gathers larger for nothing (S10, callgrind: 5 % fewer instructions
/// and 8 % fewer cache misses in update_pairs with 2 steps than with 16); two
/// steps keep an item that turns back, or jitters, inside for a while.
#define FAT_BACK 2.0f
/// The reach ahead, in the item's size (its largest extent).
#define FAT_REACH 3.0f
/// No candidate list.
#define FAT_NONE UINT32_MAX

/// A slot of the table from item to record: open addressing, linear probing,
/// removals by backward shift (no tombstones). 8 bytes a slot, at most half
/// full: a few thousand movers keep it in the cache, where a per-item array
/// cost 4 bytes an item of the tree and a cache miss per look-up.
typedef struct fat_hot {
	uint32_t item; ///< NIL: free
	uint32_t rec;
} fat_hot;

typedef struct fat_rec {
	box_t box;         ///< the item's box at its last change; inverted once removed
	box_t fat;         ///< the box the candidates were gathered in
	float step[DIM];   ///< how far its centre moved at its last change, per axis (signed: its direction)
	uint32_t item;
	uint32_t stamp;    ///< the update that saw its last change
	uint32_t made;     ///< the update its list was gathered at, or FAT_NONE
	uint32_t off, len; ///< its list: cand[off, off + len)
} fat_rec;

struct bp_fat {
	uint32_t now;        ///< incremental updates so far
	uint32_t since;      ///< every item changed at this update or later has a record
	bool broken;         ///< this update runs without records (memory ran short)
	bool on;             ///< this update uses the shortcut
	bool full;           ///< this update found the arena full: no more lists
	bool lists;          ///< this update may use the candidate lists (the sweep ran)
	fat_hot *hot;        ///< item -> its record, for the records only (hot_cap > 2 cap)
	uint32_t hot_mask;   ///< hot_cap - 1, hot_cap a power of two (0: no table)
	fat_rec *rec;        ///< the hot set
	uint32_t len, cap;
	uint64_t *key, *tmp; ///< the sweep's order, cap each
	uint32_t keys;       ///< the last sweep's keys: key[0, keys)
	bool order;          ///< those keys name the records the sweep takes now (fat_sweep_order)
	uint32_t *tslot;     ///< fat_refresh's: the record of touched[k], or NIL (no longer touched); cap
	entry *cand, *spare; ///< the candidate lists, and the room compaction copies into
	uint32_t cand_len, cand_cap;
	uint32_t cand_want; ///< the arena was found short: grow it to this at the next reserve
	uint32_t idle;      ///< updates in a row that did not want the shortcut (at most FAT_IDLE)
};

// ---- the table from item to record ---------------------------------------------------

static inline uint32_t hot_home(const struct bp_fat *f, uint32_t index)
{
	return (uint32_t)(((uint64_t)index * 0x9E3779B97F4A7C15ull) >> 32) & f->hot_mask;
}

/// The record of item `index`, or NIL when it has none.
static inline uint32_t hot_find(const struct bp_fat *f, uint32_t index)
{
	if (!f->hot) return NIL;
	for (uint32_t h = hot_home(f, index);; h = (h + 1) & f->hot_mask) {
		if (f->hot[h].item == index) return f->hot[h].rec;
		if (f->hot[h].item == NIL) return NIL;
	}
}

/// Item `index` (without a record in the table) now has record rec; room assured
/// (hot_cap > 2 cap > 2 len).
static inline void hot_add(struct bp_fat *f, uint32_t index, uint32_t rec)
{
	uint32_t h = hot_home(f, index);
	while (f->hot[h].item != NIL) h = (h + 1) & f->hot_mask;
	f->hot[h] = (fat_hot){index, rec};
}

/// Item `index`'s record is now rec.
static inline void hot_set(struct bp_fat *f, uint32_t index, uint32_t rec)
{
	uint32_t h = hot_home(f, index);
	while (f->hot[h].item != index) h = (h + 1) & f->hot_mask;
	f->hot[h].rec = rec;
}

/// Item `index` (in the table) has no record now: its slot is freed and the entries
/// after it in its run move back over the gap when their home allows.
static void hot_remove(struct bp_fat *f, uint32_t index)
{
	uint32_t gap = hot_home(f, index);
	while (f->hot[gap].item != index) gap = (gap + 1) & f->hot_mask;
	for (uint32_t j = (gap + 1) & f->hot_mask; f->hot[j].item != NIL; j = (j + 1) & f->hot_mask) {
		// The entry at j may fill the gap when its home is not in (gap, j]
		// (cyclically): a look-up from its home then still meets it.
		uint32_t home = hot_home(f, f->hot[j].item);
		if (((j - home) & f->hot_mask) >= ((j - gap) & f->hot_mask)) {
			f->hot[gap] = f->hot[j];
			gap = j;
		}
	}
	f->hot[gap].item = NIL;
}

/// Every record's entry gone from the table (the records are being dropped).
static void hot_clear(struct bp_fat *f)
{
	if (f->hot)
		for (uint32_t h = 0; h <= f->hot_mask; ++h) f->hot[h].item = NIL;
}

/// Give back the records' memory (every record dropped first); f stays.
static void fat_release(tree_t *t, struct bp_fat *f)
{
	assert(f->len == 0 && f->cand_len == 0);
	mem_free(t, f->hot, f->hot ? ((size_t)f->hot_mask + 1) * sizeof *f->hot : 0);
	mem_free(t, f->rec, f->cap * sizeof *f->rec);
	mem_free(t, f->key, f->cap * sizeof *f->key);
	mem_free(t, f->tmp, f->cap * sizeof *f->tmp);
	mem_free(t, f->tslot, f->cap * sizeof *f->tslot);
	mem_free(t, f->cand, f->cand_cap * sizeof *f->cand);
	mem_free(t, f->spare, f->cand_cap * sizeof *f->spare);
	f->hot = NULL;
	f->hot_mask = 0;
	f->rec = NULL;
	f->key = f->tmp = NULL;
	f->tslot = NULL;
	f->cand = f->spare = NULL;
	f->cap = f->cand_cap = f->cand_want = 0;
}

static void fat_free(tree_t *t, struct bp_fat *f)
{
	if (!f) return;
	fat_drop(f);
	fat_release(t, f);
	mem_free(t, f, sizeof *f);
}

/// Drop every record (their lists with them); the memory stays.
static void fat_drop(struct bp_fat *f)
{
	if (!f) return;
	if (f->len) hot_clear(f);
	f->len = f->cand_len = 0;
	f->order = false;
	f->since = f->now + 1; // the next update's touched items are the first recorded
}

/// Whether a list made at update `made` may be used now: every item changed
/// since has a record.
static inline bool fat_list_live(const struct bp_fat *f, uint32_t made)
{
	uint32_t span = f->now - f->since; // wraps to above FAT_SPAN_MAX just after a drop: none is
	return made != FAT_NONE && span <= FAT_SPAN_MAX && f->now - made <= span;
}

/// Item index is being removed: its list goes, and its box meets nothing (a
/// slot reused before the next update gets its record refreshed).
static void fat_forget(struct bp_fat *f, uint32_t index)
{
	uint32_t s = f ? hot_find(f, index) : NIL;
	if (s == NIL) return;
	fat_rec *r = &f->rec[s];
	r->made = FAT_NONE;
	bound_clear(&r->box);
	f->order = false; // the sweep leaves it out now
}

/// Room for n records (their sweep keys, their touched slots and their
/// table); false, with the old arrays kept, when memory is short.
static bool fat_rec_room(tree_t *t, struct bp_fat *f, uint64_t n)
{
	if (n <= f->cap) return true;
	uint64_t want = n + n / 2 + 64, hot_cap = 64;
	if (want > UINT32_MAX / 8) return false;
	while (hot_cap <= 2 * want) hot_cap *= 2;
	fat_rec *rec = mem_alloc(t, (size_t)want * sizeof *rec);
	uint64_t *key = mem_alloc(t, (size_t)want * sizeof *key), *tmp = mem_alloc(t, (size_t)want * sizeof *tmp);
	uint32_t *tslot = mem_alloc(t, (size_t)want * sizeof *tslot);
	fat_hot *hot = mem_alloc(t, (size_t)hot_cap * sizeof *hot);
	if (!rec || !key || !tmp || !tslot || !hot) {
		mem_free(t, rec, (size_t)want * sizeof *rec);
		mem_free(t, key, (size_t)want * sizeof *key);
		mem_free(t, tmp, (size_t)want * sizeof *tmp);
		mem_free(t, tslot, (size_t)want * sizeof *tslot);
		mem_free(t, hot, (size_t)hot_cap * sizeof *hot);
		return false;
	}
	if (f->len) memcpy(rec, f->rec, f->len * sizeof *rec);
	mem_free(t, f->rec, f->cap * sizeof *f->rec);
	mem_free(t, f->key, f->cap * sizeof *f->key);
	mem_free(t, f->tmp, f->cap * sizeof *f->tmp);
	mem_free(t, f->tslot, f->cap * sizeof *f->tslot);
	mem_free(t, f->hot, f->hot ? ((size_t)f->hot_mask + 1) * sizeof *f->hot : 0);
	f->rec = rec;
	f->key = key;
	f->tmp = tmp;
	f->tslot = tslot;
	f->order = false;
	f->cap = (uint32_t)want;
	f->hot = hot;
	f->hot_mask = (uint32_t)hot_cap - 1;
	for (uint64_t h = 0; h < hot_cap; ++h) hot[h].item = NIL;
	for (uint32_t s = 0; s < f->len; ++s) hot_add(f, f->rec[s].item, s);
	return true;
}

/// The arena holds cand_want entries (twice, with its spare), the live lists
/// kept; false, with the old arena kept, when memory is short.
static bool fat_cand_grow(tree_t *t, struct bp_fat *f)
{
	uint64_t want = f->cand_want;
	entry *to = mem_alloc(t, (size_t)want * sizeof *to), *other = mem_alloc(t, (size_t)want * sizeof *other);
	if (!to || !other) {
		mem_free(t, to, (size_t)want * sizeof *to);
		mem_free(t, other, (size_t)want * sizeof *other);
		return false;
	}
	if (f->cand_len) memcpy(to, f->cand, f->cand_len * sizeof *to);
	mem_free(t, f->cand, f->cand_cap * sizeof *f->cand);
	mem_free(t, f->spare, f->cand_cap * sizeof *f->spare);
	f->cand = to;
	f->spare = other;
	f->cand_cap = (uint32_t)want;
	f->cand_want = 0;
	return true;
}

/// Memory the next update will want, taken where the tree reserves before it
/// changes (bp_reserve: n more items to be touched), so an update allocates
/// nothing. Best effort: what it cannot get, the update does without (its
/// items query the tree), so a refusal here fails nothing.
static void fat_reserve(tree_t *t, uint32_t n)
{
	struct broadphase *bp = t->bp;
	struct bp_fat *f = bp->fat;
	// From a callback (a deferred change reserving), an update may be reading
	// the records and the candidate arena: they must not move. The next
	// reserve outside callbacks takes the room.
	if (in_callback(t)) return;
	if (!f) {
		if (!(f = mem_alloc(t, sizeof *f))) return;
		memset(f, 0, sizeof *f);
		f->since = 1;
		bp->fat = f;
	}
	if (f->idle == FAT_IDLE) return; // given back: an update that wants the shortcut asks again
	if (!fat_rec_room(t, f, (uint64_t)f->len + bp->touched_len + n)) return;
	if (f->cand_want > f->cand_cap) (void)fat_cand_grow(t, f);
}

/// Whether fat_reserve(t, n) would take nothing: the records have room for
/// n more touches and the arena is as large as wanted (or the shortcut's
/// memory is given back, or the call comes from a callback, where it takes
/// nothing either).
static inline bool fat_roomy(const tree_t *t, uint32_t n)
{
	const struct broadphase *bp = t->bp;
	const struct bp_fat *f = bp->fat;
	if (!f) return false;
	if (f->idle == FAT_IDLE || in_callback(t)) return true;
	return (uint64_t)f->len + bp->touched_len + n <= f->cap && f->cand_want <= f->cand_cap;
}

/// The update's first step: the hot set brought up to date with the touched
/// items (records made, boxes and stamps renewed, old records dropped).
/// Without the room (fat_reserve did not get it) every record is dropped and
/// `broken` holds for the update. Returns whether the update uses the
/// shortcut: a choice made from the items and the tree's memory alone, never
/// from its tasks, so the events come in the same order with and without
/// them (the update's jobs query the tree for every mover).
static bool fat_refresh(tree_t *t)
{
	struct broadphase *bp = t->bp;
	struct bp_fat *f = bp->fat;
	if (!f) return false;
	f->now++;
	f->lists = f->on = f->full = false;
	f->broken = true;
	if ((uint64_t)bp->touched_len * FAT_SHARE > t->live) { // too many movers for the shortcut
		fat_drop(f);
		if (f->idle < FAT_IDLE && ++f->idle == FAT_IDLE) fat_release(t, f);
		return false;
	}
	f->idle = 0;
	assert(f->now - f->since <= FAT_SPAN_MAX + 1); // since <= now here: a drop set it to this update
	if (f->now - f->since > FAT_SPAN_MAX) f->since = f->now - FAT_SPAN_MAX;
	for (uint32_t s = 0; s < f->len;) { // old records go: a swap-remove
		uint32_t stamp = f->rec[s].stamp;
		if (f->now - stamp < FAT_AGE) {
			s++;
			continue;
		}
		// Its item's changes at `stamp` are no longer recorded.
		if (f->now - (stamp + 1) < f->now - f->since) f->since = stamp + 1;
		hot_remove(f, f->rec[s].item);
		f->order = false;
		f->rec[s] = f->rec[--f->len];
		if (s < f->len) hot_set(f, f->rec[s].item, s);
	}
	if ((uint64_t)f->len + bp->touched_len > f->cap) {
		fat_drop(f);
		return false;
	}
	// The one pass of the update that reads the touched items and their
	// entries: the steps after it read the records (tslot). In a big world
	// each is a cache miss, and those of items further on are started early
	// (items 16 ahead, their entries and pair lists 8 ahead) so they overlap.
	const uint32_t *touched = bp->touched;
	uint32_t n = bp->touched_len;
	for (uint32_t k = 0; k < n; ++k) {
		if (k + 16 < n) __builtin_prefetch(&t->items[touched[k + 16]]);
		if (k + 8 < n) {
			const item *ahead = &t->items[touched[k + 8]];
			if (ahead->addr != NIL) __builtin_prefetch(entry_at(t, ahead->addr));
			if (bp->linked) __builtin_prefetch(&bp->head[touched[k + 8]]);
		}
		uint32_t i = touched[k];
		f->tslot[k] = NIL;
		if (!(t->items[i].flags & ITEM_TOUCHED)) continue;
		box_t box = entry_at(t, t->items[i].addr)->box;
		uint32_t s = hot_find(f, i);
		if (s != NIL && f->rec[s].stamp == f->now) continue; // listed twice (removed, its slot reused)
		if (s == NIL) {
			s = f->len++;
			f->order = false;
			hot_add(f, i, s);
			f->rec[s].item = i;
			f->rec[s].made = FAT_NONE;
			f->rec[s].box = box;
		}
		f->tslot[k] = s;
		fat_rec *r = &f->rec[s];
		bool was = r->box.min[0] <= r->box.max[0]; // not inverted: a step is known
		for (int d = 0; d < DIM; ++d)
			r->step[d] = was ? ((box.min[d] + box.max[d]) - (r->box.min[d] + r->box.max[d])) * 0.5f : 0.0f;
		r->box = box;
		r->stamp = f->now;
	}
	f->broken = false;
	f->on = true;
	return true;
}

/// The record of the update's k-th touched item (NIL when it is no longer
/// touched, or is listed twice: the first takes it), its item and its box of
/// now. The records do not move during the update: a callback's change
/// reserves nothing (fat_reserve).
static uint32_t fat_touched(const struct bp_fat *f, uint32_t k, uint32_t *index, box_t *box)
{
	uint32_t s = f->tslot[k];
	if (s != NIL) {
		*index = f->rec[s].item;
		*box = f->rec[s].box;
	}
	return s;
}

/// The box of now of item o, a partner of touched item i (record `slot`),
/// when it is known without reading o's item and entry: o's record holds it
/// when o is hot; otherwise o has not changed since i's list was made (at or
/// after `since`), and the list holds it if o met i's fat box then, as a
/// partner of i inside its fat box did. False when neither knows it.
static bool fat_known_box(const struct bp_fat *f, uint32_t slot, uint32_t o, box_t *box)
{
	uint32_t so = hot_find(f, o);
	if (so != NIL) {
		*box = f->rec[so].box;
		return true;
	}
	const fat_rec *r = &f->rec[slot];
	if (!fat_list_live(f, r->made)) return false;
	for (uint32_t k = r->off, end = r->off + r->len; k < end; ++k)
		if (f->cand[k].item == o) {
			*box = f->cand[k].box;
			return true;
		}
	return false;
}

/// A key of the sweep's order: the record's slot above min x, as bits that
/// sort like the float, a clear bit between. Only the low FAT_SORT_BITS bits
/// are sorted, min x and the clear bit (three radix passes of 11 bits, no
/// more): the slot rides along unsorted (the sort is stable: ties keep slot
/// order). Sorting the slot's bits too cost a fourth pass. Slots stay below
/// 2^31 (fat_rec_room), so the key holds them.
enum { FAT_SORT_BITS = 33, FAT_SLOT_SHIFT = 33 };
static inline uint64_t fat_sweep_key(float x, uint32_t slot)
{
	uint32_t u;
	memcpy(&u, &x, sizeof u);
	u ^= (u >> 31) ? UINT32_MAX : 0x80000000u;
	return (uint64_t)slot << FAT_SLOT_SHIFT | u;
}

/// The sweep's keys of the hot set now, in min x order (returns their
/// count). While the same records stay hot, which is the steady state of a
/// few movers, the last sweep's order is nearly right: its keys are renewed
/// in that order and put right by insertion, a pass and a few shifts where a
/// radix sort makes three passes and clears its counts each time. Past a
/// budget of shifts (movers jumping) the radix sort finishes the job.
static uint32_t fat_sweep_order(struct bp_fat *f)
{
	const uint64_t low = (1ull << FAT_SORT_BITS) - 1;
	uint32_t n = 0;
	if (f->order) {
		n = f->keys;
		for (uint32_t k = 0; k < n; ++k) {
			uint32_t s = (uint32_t)(f->key[k] >> FAT_SLOT_SHIFT);
			f->key[k] = fat_sweep_key(f->rec[s].box.min[0], s);
		}
		uint64_t shifts = 0, budget = 4 * (uint64_t)n + 64;
		for (uint32_t k = 1; k < n && shifts <= budget; ++k) {
			uint64_t v = f->key[k];
			uint32_t j = k;
			for (; j > 0 && (f->key[j - 1] & low) > (v & low); --j) f->key[j] = f->key[j - 1];
			f->key[j] = v;
			shifts += k - j;
		}
		if (shifts > budget) bp_radix(&f->key, &f->tmp, n, FAT_SORT_BITS); // stable from any order
	} else {
		for (uint32_t s = 0; s < f->len; ++s)
			if (f->rec[s].box.min[0] <= f->rec[s].box.max[0]) f->key[n++] = fat_sweep_key(f->rec[s].box.min[0], s);
		bp_radix(&f->key, &f->tmp, n, FAT_SORT_BITS);
	}
	f->keys = n;
	f->order = true;
	return n;
}

/// Whether items a and b are a pair of the set (a walk of a's list).
static bool fat_paired(const struct broadphase *bp, uint32_t a, uint32_t b)
{
	for (uint32_t r = bp->head[a]; r != NIL; r = bp->links[r >> 1].next[r & 1])
		if (rec_item(&bp->pairs[r >> 1], 1 - (int)(r & 1)) == b) return true;
	return false;
}

/// Hot items a and b overlap and one changed now: begin their pair unless it
/// is one. False without memory for it.
static bool fat_hot_pair(tree_t *t, const fat_rec *a, const fat_rec *b, ORTHANT_NAME(pair_event_fn) * begin,
                         void *ctx)
{
	struct broadphase *bp = t->bp;
	if (!items_pair(t, a->item, b->item) || fat_paired(bp, a->item, b->item)) return true;
	if (t->spheres && !items_touch(t, a->item, b->item, &a->box, &b->box)) return true;
	if (!bp_pair_reserve(t)) return false;
	bp_report(t, begin, ctx, &bp->pairs[bp_add(t, a->item, b->item)]);
	return true;
}

/// The begun pairs among hot items, before the touched items' own step: every
/// overlapping pair of hot items of which one changed now, found by a sweep
/// along x over the hot set in min x order. Sets `lists` when the sweep ran
/// to its end, so the lists may be used; past a budget of x-overlaps it stops
/// (the tree queries find the rest). Out of memory for a pair: the update
/// stops there, everything still touched, and the next one finds the rest.
static ort_result fat_hot_pairs(tree_t *t, ORTHANT_NAME(pair_event_fn) * begin, void *ctx)
{
	struct bp_fat *f = t->bp->fat;
	if (!f || !f->on) return ORT_OK;
	uint32_t n = fat_sweep_order(f);
	uint64_t budget = 16 * (uint64_t)n + 4096, steps = 0;
	for (uint32_t k = 0; k < n; ++k) {
		// Copies: a begin callback may insert (deferred), which leaves these alone,
		// but the records are read after reports all the same.
		fat_rec a = f->rec[f->key[k] >> FAT_SLOT_SHIFT];
		for (uint32_t m = k + 1; m < n; ++m) {
			const fat_rec *b = &f->rec[f->key[m] >> FAT_SLOT_SHIFT];
			if (b->box.min[0] > a.box.max[0]) break;
			if (++steps > budget) return ORT_OK;
			if ((a.stamp == f->now || b->stamp == f->now) && box_overlap(&a.box, &b->box) &&
			    !fat_hot_pair(t, &a, b, begin, ctx))
				return ORT_ERROR_OUT_OF_MEMORY;
		}
	}
	f->lists = true;
	return ORT_OK;
}

/// Room for one more list of FAT_MAX_CAND entries in the arena: the lists
/// still usable are compacted into the spare. When they fill more than half
/// of it, the next fat_reserve grows it. Allocates nothing; false when there
/// is no room (the item keeps no list, and neither do the update's next ones:
/// a compaction that cannot help is not tried again).
static bool fat_cand_room(struct bp_fat *f)
{
	if (f->cand_len + FAT_MAX_CAND <= f->cand_cap) return true;
	if (f->full) return false;
	uint64_t live = 0;
	for (uint32_t s = 0; s < f->len; ++s) {
		fat_rec *r = &f->rec[s];
		if (!fat_list_live(f, r->made)) r->made = FAT_NONE;
		if (r->made != FAT_NONE) live += r->len;
	}
	if (2 * live + FAT_MAX_CAND > f->cand_cap) {
		uint64_t want = 2 * live + 4 * FAT_MAX_CAND;
		if (want < 2 * (uint64_t)f->cand_cap) want = 2 * (uint64_t)f->cand_cap;
		if (want < 1024) want = 1024;
		if (want < 8 * (uint64_t)f->len) want = 8 * (uint64_t)f->len; // lists average a few entries
		if (want <= UINT32_MAX / 2 && want > f->cand_want) f->cand_want = (uint32_t)want;
	}
	if (live + FAT_MAX_CAND > f->cand_cap) {
		f->full = true;
		return false;
	}
	uint32_t at = 0;
	for (uint32_t s = 0; s < f->len; ++s) {
		fat_rec *r = &f->rec[s];
		if (r->made == FAT_NONE) continue;
		memcpy(&f->spare[at], &f->cand[r->off], r->len * sizeof *f->spare);
		r->off = at;
		at += r->len;
	}
	entry *old = f->cand;
	f->cand = f->spare;
	f->spare = old;
	f->cand_len = at;
	if (2 * live + FAT_MAX_CAND > f->cand_cap) f->full = true; // too little freed to try again
	return true;
}

/// A tree query gathering a new list while it pairs the item.
typedef struct fat_gather {
	bp_run *run;
	box_t box; ///< the item's own box
	entry *out;
	uint32_t len;
	bool keep; ///< room for the list, and not past FAT_MAX_CAND
} fat_gather;

static bool fat_gather_hit(void *ctx, ort_handle h, void *user)
{
	fat_gather *g = ctx;
	tree_t *t = g->run->t;
	uint32_t o = h.id - 1;
	if (o == g->run->self) return true;
	box_t bo = entry_at(t, t->items[o].addr)->box;
	if (g->keep) {
		if (g->len == FAT_MAX_CAND)
			g->keep = false;
		else
			g->out[g->len++] = (entry){bo, o};
	}
	return !box_overlap(&bo, &g->box) || bp_partner(g->run, h, user);
}

/// How item run->self takes its begun step.
static enum fat_way fat_route(const tree_t *t, const bp_run *run)
{
	const struct bp_fat *f = t->bp->fat;
	if (!f || !f->on || run->slot == NIL) return FAT_QUERY;
	const fat_rec *rec = &f->rec[run->slot];
	bool usable = f->lists && fat_list_live(f, rec->made) &&
	              box_within(&run->box, rec->fat.min, rec->fat.max);
	return usable ? FAT_LIST : FAT_GATHER;
}

/// Item run->self's begun step from its candidate list (FAT_LIST), run
/// before its partners are flagged and without flagging them: a candidate
/// already paired with it is found by a walk of its own pair list, which the
/// ended step has just read, so a partner's item and entry, far apart in a big
/// world, are not read at all (most candidates that meet the item are its
/// partners). A candidate that meets it and is not one is checked against its
/// own entry (the list's box may be stale) before its pair begins.
static void fat_list_begun(tree_t *t, bp_run *run)
{
	struct bp_fat *f = t->bp->fat;
	uint32_t i = run->self;
	const fat_rec *rec = &f->rec[run->slot];
	for (uint32_t k = rec->off, end = rec->off + rec->len; k < end && run->result == ORT_OK; ++k) {
		const entry *c = &f->cand[k];
		if (!box_overlap(&c->box, &run->box) || fat_paired(t->bp, i, c->item)) continue;
		uint32_t o = c->item;
		const item *it = &t->items[o];
		if ((it->flags & (ITEM_LIVE | ITEM_PENDING)) != ITEM_LIVE) continue;
		box_t bo = entry_at(t, it->addr)->box;
		if (!box_overlap(&bo, &run->box)) continue; // it moved: the sweep's
		if (!items_pair(t, i, o) || (t->spheres && !items_touch(t, i, o, &run->box, &bo))) continue;
		if (!bp_pair_reserve(t)) {
			run->result = ORT_ERROR_OUT_OF_MEMORY;
			return;
		}
		// A begin callback may insert (deferred): the arena and records stay.
		bp_report(t, run->begin, run->ctx, &t->bp->pairs[bp_add(t, i, o)]);
	}
}

/// Item run->self's begun step when its list may not be used (FAT_GATHER): a
/// query with a new fat box that makes the list; returns the query's result.
static ort_result fat_gather_begun(tree_t *t, bp_run *run)
{
	struct bp_fat *f = t->bp->fat;
	fat_gather g = {run, run->box, NULL, 0, fat_cand_room(f)};
	fat_rec *rec = &f->rec[run->slot];
	rec->made = FAT_NONE;
	float ext = 0.0f;
	for (int d = 0; d < DIM; ++d)
		if (run->box.max[d] - run->box.min[d] > ext) ext = run->box.max[d] - run->box.min[d];
	for (int d = 0; d < DIM; ++d) {
		float step = fabsf(rec->step[d]), ahead = FAT_AHEAD * step, back = FAT_BACK * step;
		ahead = (ahead < FAT_REACH * ext ? ahead : FAT_REACH * ext) + 0.125f * ext;
		back = (back < 0.25f * FAT_REACH * ext ? back : 0.25f * FAT_REACH * ext) + 0.125f * ext;
		rec->fat.min[d] = run->box.min[d] - (rec->step[d] < 0.0f ? ahead : back);
		rec->fat.max[d] = run->box.max[d] + (rec->step[d] < 0.0f ? back : ahead);
	}
	if (g.keep) g.out = &f->cand[f->cand_len];
	ort_result r = query_box_by_content(t, &rec->fat, fat_gather_hit, &g);
	rec = &f->rec[run->slot];
	if (r == ORT_OK && run->result == ORT_OK && g.keep) {
		rec->made = f->now;
		rec->off = f->cand_len;
		rec->len = g.len;
		f->cand_len += g.len;
	}
	return r;
}


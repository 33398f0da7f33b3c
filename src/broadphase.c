// broadphase.c: the incremental broad phase — which pairs began and which
// ended since the last call, at a cost that grows with what changed.
//
// ## The pair set
//
// The current pairs are one dense array of 8-byte records (the two items'
// handle ids), without holes: a pair that ends takes the last record into its
// slot (swap-remove). pair_ids hands this array out as it is, read at memory
// speed. The public records (ortN_pair: handles and user data, which cannot
// change while the items live, and every item of the set is live) are made
// from it when asked: by each event and current_pairs call as it reports, and
// by pair_array into an array of its own, made once per change of the set. A
// 32-byte record kept per pair would cost four times the memory traffic to
// write (50M pairs of a pile: 1.6 GB), diff and read.
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
//      finds what it overlaps now, and an unflagged partner begins a pair
//      (a mover re-testing its fat-box list finds its partners by a walk of
//      its own pair list instead, and flags nothing: bp_fat.c).
//
// A pair of two touched items is met twice and counted once (the second item
// finds the first one flagged); an untouched pair cannot change. Events come
// in touched order and tree order: deterministic for the same calls.
//
// When `all` holds or a quarter or more of the items are touched, per-item
// queries would walk the tree once per item and meet most pairs twice; then
// every current pair is found in one pass over a packed snapshot of the
// items' boxes (bp_snapshot.c: built fresh, in Morton order, so it is not
// hurt by the shape the tree's history gave it; built straight from the
// dense array of boxes a detached tree keeps, tree_detach.c, so a world that
// moves everything never walks the tree). The first update of a tree whose
// entries hold its boxes takes the tree's own walk instead (bp_snap_build:
// about find_pairs' work on any scene, where the snapshot first copies and
// sorts every box). The pass writes 8-byte pair
// keys (lower item, higher item) into a key array, growing it (at least
// doubling) when full: one pass, where counting first would cost a second.
// On the first update (the set empty) the pass writes the set's records, in
// the order it finds them: every pair begins. The tree's walk writes them
// into blocks that are never copied as they grow, the first sized from an
// estimate of the count (box queries for a few items): when it held, that
// block is the set, else the set is made once at its final size from them
// (bp_walk_first); the snapshot's pass writes
// straight into the set's array, and a pile (past 8 pairs per item) stops
// that array's growth: the pass then counts, and a second one fills an array
// made once for the count, so 50M pairs write their pages once. Otherwise
// both sets'
// keys are radix sorted and merged in one linear pass: a key only in the old
// set ended, one only in the new set began, both reported in ascending key
// order, ended first, and the set is rewritten from the sorted keys (a pair's
// record is made from its items, which cannot have changed while they
// lived) (bp_update_all).
//
// In steady state nothing is allocated: every array keeps its capacity, and
// the tree reserves room before it mutates (bp_reserve). The all-pairs
// update's snapshot, keys and dense array of boxes are the exception by
// design: after 8 incremental updates in a row they are given back
// (bp_release_all_pairs), so a world that moves few things does not keep ~70
// bytes an item it no longer uses.
#include "tree_int.h"
#include "mem_os.h"

/// A pair of the set: its items' handle ids (slot + 1), a the item whose
/// query found it (in an all-pairs update: the lower one). 8 bytes, where the
/// public record (handles and user data) is 32: the set is written, diffed and
/// read four times faster, and the public records are made from it only when
/// pair_array asks (their handles and user data cannot change while the items
/// live, and every item of the set is live).
typedef ort_id_pair bp_rec;
typedef ORTHANT_NAME(pair) bp_pub;

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
	bool refiltered; ///< some touched item's filter changed since the last update
	bp_link *links; ///< parallel to pairs while linked
	uint32_t link_cap;
	uint32_t *head; ///< per item slot: first ref of its list, or NIL (while linked)
	uint32_t head_cap;
	uint32_t *touched;
	uint32_t touched_len, touched_cap;
	bp_pub *pub; ///< pair_array's records, made from pairs when it asks
	uint32_t pub_cap;
	bool pub_ok; ///< pub[0, len) are the set's records
	bp_pub *ended; ///< pairs of removed items, waiting for the next update
	uint32_t ended_len, ended_cap;
	/// The all-pairs update's: a packed snapshot of the items (bp_snapshot.c)
	/// and the sort keys, [0] the old set, [1] the found, [2] spare.
	struct bp_snap *snap;
	uint64_t *key[3];
	uint32_t key_cap;
	/// key[0][0, len) are the set's keys (made with key_shift), ascending:
	/// the all-pairs update that made the set left them there, and the set
	/// has not changed since (bp_add, bp_del and bp_reset clear it). The
	/// next all-pairs update diffs against them as they are.
	bool keyed;
	int key_shift;
	struct bp_fat *fat; ///< the movers' fat boxes and candidate lists (bp_fat.c)
	uint32_t quiet; ///< incremental updates since the last all-pairs one
};

static inline uint32_t rec_item(const bp_rec *r, int side) { return (side ? r->b : r->a) - 1; }

/// The pair of items a and b.
static inline bp_rec bp_make(uint32_t a, uint32_t b) { return (bp_rec){a + 1, b + 1}; }

/// The pair of items x and y, the lower one first (as an all-pairs update keeps them).
static inline bp_rec bp_make_sorted(uint32_t x, uint32_t y) { return x < y ? bp_make(x, y) : bp_make(y, x); }

/// The public record of a pair of live items.
static inline bp_pub bp_public(const tree_t *t, const bp_rec *r)
{
	uint32_t a = rec_item(r, 0), b = rec_item(r, 1);
	return (bp_pub){make_handle(t, a), make_handle(t, b), t->items[a].user, t->items[b].user};
}

// The snapshot (bp_snapshot.c).
struct bp_snap;
typedef bool bp_item_pair_fn(void *ctx, uint32_t a, uint32_t b);
static ort_result bp_snap_build(tree_t *t, struct bp_snap **sp, bool walk);
static ort_result bp_snap_pairs(tree_t *t, const struct bp_snap *s, bp_item_pair_fn *fn, void *ctx, pair_sink *sink);
static void bp_snap_free(tree_t *t, struct bp_snap *s);
static bool bp_snap_walks(const struct bp_snap *s);
typedef void bp_range_fn(void *ctx, uint32_t lo, uint32_t hi);
static void bp_ranges(tree_t *t, uint32_t n, uint32_t min_rows, bp_range_fn *fn, void *ctx);

// The movers' fat boxes (bp_fat.c).
struct bp_fat;
typedef struct bp_run bp_run;
static void fat_free(tree_t *t, struct bp_fat *f);
static void fat_drop(struct bp_fat *f);
static void fat_forget(struct bp_fat *f, uint32_t index);
static bool fat_refresh(tree_t *t);
static bool fat_known_box(const struct bp_fat *f, uint32_t slot, uint32_t o, box_t *box);
static uint32_t fat_touched(const struct bp_fat *f, uint32_t k, uint32_t *item, box_t *box);
static ort_result fat_hot_pairs(tree_t *t, ORTHANT_NAME(pair_event_fn) * begin, void *ctx);
static void fat_reserve(tree_t *t, uint32_t n);
/// How a touched item takes its begun step (fat_route).
enum fat_way {
	FAT_QUERY,  ///< no record: a tree query, as without the shortcut
	FAT_LIST,   ///< from its candidate list (fat_list_begun)
	FAT_GATHER, ///< a query with a new fat box that makes its list (fat_gather_begun)
};
static enum fat_way fat_route(const tree_t *t, const bp_run *run);
static void fat_list_begun(tree_t *t, bp_run *run);
static ort_result fat_gather_begun(tree_t *t, bp_run *run);

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

/// Pairs past which the room made for a set grows by a sixteenth, not a
/// quarter: 50M pairs (10k identical boxes) with a quarter to spare held
/// 300 MB of records and links never used.
#define BP_ROOM_BIG (1u << 20)

/// The room made for a set (or its sort keys) of n pairs: a quarter to spare
/// up to BP_ROOM_BIG pairs, a sixteenth of what is past it (a moving world's
/// count wanders above its first one, and growing later would allocate in
/// what is already a steady state; the wander of a huge set is a smaller
/// share of it).
static uint64_t bp_set_room(uint64_t n)
{
	uint64_t spare = n <= BP_ROOM_BIG ? n / 4 : BP_ROOM_BIG / 4 + (n - BP_ROOM_BIG) / 16;
	uint64_t want = n + spare + 64;
	return want < BP_MAX_PAIRS ? want : BP_MAX_PAIRS;
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
	if (bp->link_cap >= pair_cap) return true;
	if (bp->linked && bp->len) return bp_resize(t, (void **)&bp->links, &bp->link_cap, sizeof(bp_link), pair_cap);
	// No index built: the links hold nothing to keep, so nothing is copied.
	bp_link *links = mem_alloc(t, (size_t)pair_cap * sizeof *links);
	if (!links) return false;
	mem_free(t, bp->links, (size_t)bp->link_cap * sizeof *bp->links);
	bp->links = links;
	bp->link_cap = pair_cap;
	return true;
}

/// Build the index over the whole set in one pass (a no-op while linked).
/// False, with nothing changed, when its memory is not there.
static bool bp_link_all(tree_t *t)
{
	struct broadphase *bp = t->bp;
	if (bp->linked) return true;
	if (!bp_index_reserve(t, bp->cap)) return false;
	// bp_link_in of both sides of each record in turn, with the arrays held
	// in locals: stores through head and links could otherwise be the
	// broad phase's own fields, read again after each (a record's two items
	// differ, so its two heads are read before either is written).
	uint32_t *head = bp->head, n = bp->len;
	bp_link *links = bp->links;
	const bp_rec *pairs = bp->pairs;
	memset(head, 0xff, (size_t)bp->head_cap * sizeof *head); // NIL: every bit set
	for (uint32_t p = 0; p < n; ++p) {
		uint32_t a = rec_item(&pairs[p], 0), b = rec_item(&pairs[p], 1);
		assert(a != b);
		uint32_t ha = head[a], hb = head[b];
		links[p] = (bp_link){{ha, hb}, {NIL, NIL}};
		if (ha != NIL) links[ha >> 1].prev[ha & 1] = p << 1;
		if (hb != NIL) links[hb >> 1].prev[hb & 1] = p << 1 | 1;
		head[a] = p << 1;
		head[b] = p << 1 | 1;
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
	return !bp->linked || need <= bp->link_cap || bp_index_reserve(t, bp->cap);
}

/// Add the pair (a, b) at the end of the set; room reserved, index built.
static uint32_t bp_add(tree_t *t, uint32_t a, uint32_t b)
{
	struct broadphase *bp = t->bp;
	assert(bp->linked && bp->len < bp->cap && bp->len < bp->link_cap);
	uint32_t p = bp->len++;
	bp->pairs[p] = bp_make(a, b);
	bp->pub_ok = bp->keyed = false;
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
	bp->pub_ok = bp->keyed = false;
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

static inline void bp_report_pub(ORTHANT_NAME(pair_event_fn) * fn, void *ctx, const bp_pub *r)
{
	if (fn) fn(ctx, r->a, r->b, r->user_a, r->user_b);
}

/// Report pair r of two live items (made afresh: a callback may move the item pool).
static inline void bp_report(const tree_t *t, ORTHANT_NAME(pair_event_fn) * fn, void *ctx, const bp_rec *r)
{
	if (!fn) return;
	// Not through bp_public: the record it builds on the stack, read back
	// for the call, was the hottest instruction of the first update's
	// report of 12.5M pairs (100k 2D crossing rods, perf).
	uint32_t a = rec_item(r, 0), b = rec_item(r, 1);
	fn(ctx, make_handle(t, a), make_handle(t, b), t->items[a].user, t->items[b].user);
}

/// Fetch element p + BP_AHEAD of an array of len 8-byte records or keys, if
/// it has one, for a loop that calls out for each element (events,
/// current_pairs): the hardware's stream prefetch does not keep ahead of
/// such a loop, and each new line of an array past the caches was a miss
/// (100k 2D crossing rods, first update: 12.5M events, 42% of their time on
/// the record's load; fetched 1 KB ahead, the update takes 168 -> 151 ms).
/// (The test is written as a sum: as `len - p > BP_AHEAD`, GCC 12 -O2 left
/// the prefetch out of these loops.)
#define BP_AHEAD 128u
static_assert(sizeof(bp_rec) == 8 && sizeof(uint64_t) == 8, "bp_ahead steps 8 bytes");
static inline void bp_ahead(const void *a, uint32_t p, uint32_t len)
{
	if ((uint64_t)p + BP_AHEAD < len) __builtin_prefetch((const uint64_t *)a + p + BP_AHEAD);
}

// ---- the tree's hooks ------------------------------------------------------------------

/// Room to touch n more items and to end every pair of item `removing` (NIL
/// for none), so the mutation that follows cannot fail half-way. The touched
/// list is kept to about a quarter of the items: past that, bp_touch turns to
/// the all-pairs update, which that many touched items would choose anyway.
static bool bp_reserve(tree_t *t, uint32_t n, uint32_t removing)
{
	struct broadphase *bp = t->bp;
	if (n) fat_reserve(t, n);
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
	return bp_grow_array(t, (void **)&bp->ended, &bp->ended_cap, sizeof(bp_pub), bp->ended_len + k);
}

static bool fat_roomy(const tree_t *t, uint32_t n);

/// bp_reserve(t, 1, NIL), then bp_touch(t, index): a move's. The usual case
/// inline, reserving nothing: an item touched already (or every item counts
/// as touched) adds no touch, and one that does finds room in the touched
/// list and the fat records (fat_roomy) left by the last reserve; a per-item
/// move in a big world paid ~55 instructions a call for the full reserve.
static inline bool bp_reserve_touch(tree_t *t, uint32_t index)
{
	const struct broadphase *bp = t->bp;
	if (!bp->all && !(t->items[index].flags & ITEM_TOUCHED) &&
	    !(bp->touched_len < bp->touched_cap && fat_roomy(t, 1)) && !bp_reserve(t, 1, NIL))
		return false;
	bp_touch(t, index);
	return true;
}

static void bp_refilter(tree_t *t, uint32_t index)
{
	t->bp->refiltered = true;
	bp_touch(t, index);
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
		bp->ended[bp->ended_len++] = bp_public(t, &bp->pairs[p]);
		bp_del(bp, p);
	}
	fat_forget(bp->fat, index);
	// A touched entry of this slot is skipped at update: the flag goes with the item.
	t->items[index].flags &= ~(uint32_t)ITEM_TOUCHED;
}

static void bp_reset(tree_t *t)
{
	struct broadphase *bp = t->bp;
	bp->len = 0;
	bp->pub_ok = bp->keyed = false;
	bp->linked = false;
	bp->all = true;
	bp->refiltered = false;
	bp->touched_len = bp->ended_len = 0;
	fat_drop(bp->fat);
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
	mem_free(t, bp->pub, bp->pub_cap * sizeof *bp->pub);
	bp_snap_free(t, bp->snap);
	fat_free(t, bp->fat);
	for (int k = 0; k < 3; ++k) mem_free(t, bp->key[k], bp->key_cap * sizeof *bp->key[k]);
	mem_free(t, bp, sizeof *bp);
	t->bp = NULL;
}

/// Bytes that grow with the pairs: their records (both forms), their index's
/// links, the ended pairs waiting and the all-pairs update's three key arrays;
/// not the per-item heads, touched list and snapshot, which follow the items.
static size_t bp_pair_bytes(const tree_t *t)
{
	const struct broadphase *bp = t->bp;
	return (size_t)bp->cap * sizeof *bp->pairs + (size_t)bp->pub_cap * sizeof *bp->pub +
	       (size_t)bp->link_cap * sizeof *bp->links + (size_t)bp->ended_cap * sizeof *bp->ended +
	       3 * (size_t)bp->key_cap * sizeof *bp->key[0];
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

struct bp_run {
	tree_t *t;
	uint32_t self;
	uint32_t slot; ///< self's record in the hot set (bp_fat.c), or NIL
	box_t box;
	ORTHANT_NAME(pair_event_fn) * begin;
	void *ctx;
	ort_result result;
};

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
	bp_report(t, run->begin, run->ctx, &t->bp->pairs[p]);
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
	// 0. The hot set (bp_fat.c) takes the touched items' boxes of now. While
	// it is on, the steps below read a touched item's record (tslot), not the
	// item and its entry, which in a big world are cache misses apart.
	bool fat = fat_refresh(t);
	// With no filter changed and no spheres, only the boxes can end a pair, and
	// a partner's box may come from the hot set or the mover's list instead
	// of its entry (fat_known_box).
	bool known = fat && !bp->refiltered && !t->spheres;
	// 1. ended: pairs of removed items, then touched items' pairs that broke.
	for (uint32_t k = 0; k < bp->ended_len; ++k) bp_report_pub(end, ctx, &bp->ended[k]);
	bp->ended_len = 0;
	for (uint32_t k = 0; k < bp->touched_len; ++k) {
		uint32_t i, s = NIL;
		box_t bi; // a copy: end callbacks may grow the pools
		if (fat) {
			if ((s = fat_touched(bp->fat, k, &i, &bi)) == NIL) continue;
		} else {
			i = bp->touched[k];
			if (!(t->items[i].flags & ITEM_TOUCHED)) continue;
			bi = entry_at(t, t->items[i].addr)->box;
		}
		for (uint32_t r = bp->head[i]; r != NIL;) {
			uint32_t p = r >> 1, next = bp->links[p].next[r & 1];
			uint32_t o = rec_item(&bp->pairs[p], 1 - (int)(r & 1));
			box_t bo;
			bool holds;
			if (known && fat_known_box(bp->fat, s, o, &bo)) {
				holds = box_overlap(&bi, &bo);
			} else {
				const box_t *eo = &entry_at(t, t->items[o].addr)->box;
				holds = items_pair(t, i, o) && box_overlap(&bi, eo) && items_touch(t, i, o, &bi, eo);
			}
			if (!holds) {
				bp_rec e = bp->pairs[p];
				uint32_t last = bp->len - 1;
				bp_del(bp, p);
				next = bp_ref_after_del(next, p, last);
				bp_report(t, end, ctx, &e);
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
	if (!fat && bp_begun_in_jobs(t, by_content, begin, ctx, &split)) {
		if (split == ORT_OK) bp->refiltered = false;
		return split;
	}
	if (by_content) pairs_content(t, t->root);
	ort_result hot = fat_hot_pairs(t, begin, ctx);
	if (hot != ORT_OK) return hot; // every item still touched: the next update goes on
	bp_run run = {t, NIL, NIL, {{0}, {0}}, begin, ctx, ORT_OK};
	uint32_t k = 0;
	for (; k < bp->touched_len && run.result == ORT_OK; ++k) {
		uint32_t i = bp->touched[k];
		if (fat) {
			if ((run.slot = fat_touched(bp->fat, k, &i, &run.box)) == NIL) continue;
		} else {
			if (!(t->items[i].flags & ITEM_TOUCHED)) continue;
			run.box = entry_at(t, t->items[i].addr)->box;
		}
		run.self = i;
		enum fat_way way = fat_route(t, &run);
		if (way == FAT_LIST) {
			fat_list_begun(t, &run); // finds partners without flagging them
		} else {
			bp_flag_partners(t, i, true);
			ort_result r = way == FAT_GATHER ? fat_gather_begun(t, &run)
			               : by_content      ? query_box_by_content(t, &run.box, bp_partner, &run)
			                                 : ORTHANT_NAME(tree_query_box)(t, run.box, ORT_MASK_ALL, bp_partner, &run);
			bp_flag_partners(t, i, false);
			if (r != ORT_OK) run.result = r;
		}
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
	bp->refiltered = false;
	return ORT_OK;
}

// ---- the all-pairs update ---------------------------------------------------------------

/// A pair's sort key: its lower item above `shift` bits, its higher below.
static inline uint64_t bp_key(uint32_t a, uint32_t b, int shift)
{
	return a < b ? (uint64_t)a << shift | b : (uint64_t)b << shift | a;
}

/// Bits an item index of this tree needs (at least 1).
static int bp_key_shift(const tree_t *t)
{
	int shift = 1;
	while (shift < 32 && (uint64_t)t->item_len > (1ull << shift)) shift++;
	return shift;
}

/// Room for n sort keys in each of the three key arrays, keeping the first
/// `keep` keys of key[1] and, while keyed, the set's keys in key[0] (the
/// others are refilled by every use). False, with the old arrays kept, when
/// memory is short.
static bool bp_keys_reserve(tree_t *t, uint64_t n, uint32_t keep)
{
	struct broadphase *bp = t->bp;
	if (n <= bp->key_cap) return true;
	uint64_t want = bp_set_room(n); // the count of a moving world wanders
	if (want < 2 * (uint64_t)bp->key_cap) want = 2 * (uint64_t)bp->key_cap;
	if (want > BP_MAX_PAIRS) want = BP_MAX_PAIRS;
	if (n > want) return false;
	uint64_t *key[3] = {0};
	int k = 0;
	for (; k < 3; ++k)
		if (!(key[k] = mem_alloc(t, (size_t)want * sizeof *key[k]))) break;
	if (k == 3 && keep) memcpy(key[1], bp->key[1], (size_t)keep * sizeof *key[1]);
	if (k == 3 && bp->keyed) memcpy(key[0], bp->key[0], (size_t)bp->len * sizeof *key[0]);
	for (int j = 0; j < 3; ++j) {
		uint64_t **drop = k == 3 ? &bp->key[j] : &key[j];
		mem_free(t, *drop, (size_t)(k == 3 ? bp->key_cap : want) * sizeof **drop);
		if (k == 3) bp->key[j] = key[j];
	}
	if (k < 3) return false;
	bp->key_cap = (uint32_t)want;
	return true;
}

/// The empty set's array, grown to at least `need` records as the first
/// update writes them (the first `keep` kept). False, with the array as it
/// was, without memory.
static bool bp_stage_in_set(tree_t *t, uint64_t need, uint32_t keep)
{
	struct broadphase *bp = t->bp;
	assert(bp->len == 0);
	if (need <= bp->cap) return true;
	uint64_t want = need + need / 8 + 64;
	if (want < 2 * (uint64_t)bp->cap) want = 2 * (uint64_t)bp->cap;
	if (want > BP_MAX_PAIRS) want = BP_MAX_PAIRS;
	if (need > want) return false;
	bp_rec *p = mem_alloc(t, (size_t)want * sizeof *p);
	if (!p) return false;
	// Only the records written so far are copied, never the whole old array.
	if (keep) memcpy(p, bp->pairs, (size_t)keep * sizeof *p);
	mem_free(t, bp->pairs, (size_t)bp->cap * sizeof *bp->pairs);
	bp->pairs = p;
	bp->cap = (uint32_t)want;
	return true;
}

/// One pass over every current pair: its keys into key[1], or on the first
/// update its records straight into the empty set; either grows (at least
/// doubling) when full. The first update's set stops growing at 8 pairs per item:
/// past that (a pile), it only counts, and a second pass fills an array
/// made once for the count, so the records' pages are written once and no
/// earlier, smaller array's are.
///
/// The first update's pass over the tree's own walk (bp_snap_build) takes
/// blocks instead (bp_walk_first), on every scene: a second walk would cost
/// about as much as the first (crossing rods meet 25 to 125 pairs an item),
/// and blocks write each record at most twice.
typedef struct bp_collect_run {
	tree_t *t;
	uint64_t *keys; ///< key[1] (bp_collect_key), with room for `room` keys
	uint32_t n, room;
	int shift;
	bool counting; ///< the first update's array is full: count only
	bool failed;   ///< no memory to grow: the pass stopped
} bp_collect_run;

/// The first update's: the pair's record into the set.
static bool bp_collect(void *ctx, uint32_t x, uint32_t y)
{
	bp_collect_run *c = ctx;
	struct broadphase *bp = c->t->bp;
	if (!c->counting && c->n == bp->cap) {
		if (bp->cap >= 8u * (uint64_t)c->t->live + 256) {
			c->counting = true;
		} else if (!bp_stage_in_set(c->t, (uint64_t)c->n + 1, c->n)) {
			c->failed = true;
			return false;
		}
	}
	if (!c->counting) bp->pairs[c->n] = bp_make_sorted(x, y);
	return ++c->n < BP_MAX_PAIRS;
}

/// The key array is full: grow it and put the key in. Out of line, so that
/// bp_collect_key, called once a pair, saves no registers for it.
static __attribute__((noinline)) bool bp_collect_grow(bp_collect_run *c, uint64_t key)
{
	struct broadphase *bp = c->t->bp;
	if (!bp_keys_reserve(c->t, (uint64_t)c->n + 1, c->n)) {
		c->failed = true;
		return false;
	}
	c->keys = bp->key[1];
	c->room = bp->key_cap;
	c->keys[c->n] = key;
	return ++c->n < BP_MAX_PAIRS;
}

/// A later update's: the pair's key into key[1] (its array and room held
/// in the run, not read through the broad phase at every pair).
static bool bp_collect_key(void *ctx, uint32_t x, uint32_t y)
{
	bp_collect_run *c = ctx;
	uint64_t key = bp_key(x, y, c->shift);
	if (c->n == c->room) return bp_collect_grow(c, key);
	c->keys[c->n] = key;
	return ++c->n < BP_MAX_PAIRS;
}

/// The first update's pass over the tree's own walk (bp_snap_walks) cannot
/// count first (a second walk would cost about as much as the first) and
/// should not grow one array by doubling either: each doubling copies every
/// record written so far into pages never touched before, so a record was
/// written up to four times (the last growth, to leave room, copied them all
/// again), and the page faults of the fresh memory cost more than the copies
/// (20k 2D crossing rods: 3000 of them). So the walk writes into blocks: the
/// first sized from an estimate of the count (bp_estimate), with room to
/// spare, then blocks each as large as all before it (at most BP_BLOCKS of
/// them, at most twice the records in all). When the estimate held, the
/// first block is the set: every record written once, where the page faults
/// of fresh memory (a record's 8 bytes in a page never touched before) cost
/// as much as the walk's own work that found it on crowded scenes. Else the
/// set is made once at its final size and the blocks copied into it in
/// order: every record is written twice, sequentially. No scene makes the
/// walk stop and start over: what it wrote is always kept.
/// The pages a block's records are about to fill are mapped a window at a
/// time ahead of the writes (ort_mem_prefault, BP_FAULT_WINDOW records): one
/// call a window, where each page's first write would otherwise fault on its
/// own. On this VM a fault cost about 2 us, 4 ns a record: 20k boxes in
/// groups of 32 identical ones (606k pairs) spent 2.5 of the first update's
/// 7.1 ms on them, against find_pairs' 2.9 ms. Only the window being written
/// is mapped, so the spare room of a block never written costs no memory.
#define BP_BLOCKS 34
#define BP_BLOCK_MIN 4096u
#define BP_FAULT_WINDOW 32768u
typedef struct bp_blocks {
	/// The block being written: next record and end of the mapped window (the
	/// fast path's bound, which the pair walk writes through itself:
	/// pairs.c), end of its room. First, so the walk's sink is the blocks.
	pair_sink w;
	bp_rec *stop;
	tree_t *t;
	bp_rec *at[BP_BLOCKS]; ///< at[0] is the set's array (bp->pairs) when it had room for the estimate
	uint32_t cap[BP_BLOCKS];
	uint32_t nb;    ///< blocks begun
	uint64_t room;  ///< records the blocks before the current one hold (all full)
	bool failed;    ///< no memory for a block: the walk stopped
	bool full;      ///< BP_MAX_PAIRS records: the walk stopped
} bp_blocks;

/// Begin block k->nb, of `want` records (at most what keeps the total under
/// BP_MAX_PAIRS). False, with failed or full set, when it cannot be had.
static bool bp_blocks_begin(bp_blocks *k, uint64_t want)
{
	if (k->nb) k->room += k->cap[k->nb - 1];
	if (k->room >= BP_MAX_PAIRS - 1) {
		k->full = true;
		return false;
	}
	if (want > BP_MAX_PAIRS - 1 - k->room) want = BP_MAX_PAIRS - 1 - k->room;
	bp_rec *b = k->nb < BP_BLOCKS ? mem_alloc(k->t, (size_t)want * sizeof *b) : NULL;
	if (!b) {
		k->failed = true;
		return false;
	}
	k->at[k->nb] = b;
	k->cap[k->nb++] = (uint32_t)want;
	k->w.cur = k->w.end = b;
	k->stop = b + want;
	return true;
}

/// Map the next window of the current block (cur < stop), and make it the
/// fast path's bound.
static void bp_blocks_window(bp_blocks *k)
{
	assert(k->w.cur == k->w.end && k->w.cur < k->stop);
	size_t left = (size_t)(k->stop - k->w.cur), m = left < BP_FAULT_WINDOW ? left : BP_FAULT_WINDOW;
	ort_mem_prefault(k->w.cur, m * sizeof *k->w.cur);
	k->w.end = k->w.cur + m;
}

/// The current block is full: begin the next, as large as all before it,
/// and put the pair (x, y) in it. False (failed or full set) when the walk
/// must stop. Kept out of bp_blocks_put (noinline, a tail call there), whose
/// every call would otherwise save and restore the registers this needs.
static __attribute__((noinline)) bool bp_blocks_next(bp_blocks *k, uint32_t x, uint32_t y)
{
	if (k->w.cur == k->stop) {
		uint64_t before = k->room + (k->nb ? k->cap[k->nb - 1] : 0);
		if (!bp_blocks_begin(k, before > BP_BLOCK_MIN ? before : BP_BLOCK_MIN)) return false;
	}
	bp_blocks_window(k);
	*k->w.cur++ = bp_make_sorted(x, y);
	return true;
}

static bool bp_blocks_put(void *ctx, uint32_t x, uint32_t y)
{
	bp_blocks *k = ctx;
	if (k->w.cur == k->w.end) return bp_blocks_next(k, x, y);
	*k->w.cur++ = bp_make_sorted(x, y);
	return true;
}

/// Records the blocks hold.
static uint64_t bp_blocks_len(const bp_blocks *k)
{
	return k->nb ? k->room + (uint64_t)(k->w.cur - k->at[k->nb - 1]) : 0;
}

/// Give back the blocks the walk took (not the set's own array).
static void bp_blocks_free(bp_blocks *k)
{
	for (uint32_t j = 0; j < k->nb; ++j)
		if (k->at[j] != k->t->bp->pairs) mem_free(k->t, k->at[j], (size_t)k->cap[j] * sizeof *k->at[j]);
	k->nb = 0;
}

/// Item slots between two of the estimate's samples, at most, when pairs
/// are many: 1 in 64 items queried costs a few percent of the walk (a box
/// query finds what one item's share of the walk does, from the root), and
/// the count it gives is at most BP_SAMPLE_STEP times the true one on any
/// scene (each sample's partners are pairs of its own, counted
/// BP_SAMPLE_STEP / 2 times), so a wrong estimate costs bounded memory,
/// given back before the update returns.
#define BP_SAMPLE_STEP 64u

typedef struct bp_sample {
	tree_t *t;
	uint32_t self;
	box_t box;
	uint64_t met; ///< partners the samples found, each pair once per sampled item
} bp_sample;

/// A partner of the sampled item that the walk would pair with it (bp_partner's tests).
static bool bp_sample_partner(void *ctx, ort_handle h, void *user)
{
	(void)user;
	bp_sample *s = ctx;
	const tree_t *t = s->t;
	uint32_t o = h.id - 1;
	if (o != s->self && items_pair(t, s->self, o) &&
	    (!t->spheres || items_touch(t, s->self, o, &s->box, &entry_at(t, t->items[o].addr)->box)))
		s->met++;
	return true;
}

/// The pairs of an attached tree estimated from the partners of every
/// step-th item slot (from half a step), by a box query each, scaled to all
/// items and halved (each pair has two items), into *e, and three standard
/// errors of it into *err (from the spread of the samples' partner counts;
/// none when every item was sampled, or every sample met as many). A query
/// the tree cannot finish (out of memory for its stack) counts what it
/// found.
static void bp_estimate_at(tree_t *t, uint32_t step, uint64_t *e, uint64_t *err)
{
	bp_sample s = {t, 0, {{0}, {0}}, 0};
	uint64_t sampled = 0;
	double squares = 0.0;
	for (uint32_t i = step / 2; i < t->item_len; i += step) {
		if (!(t->items[i].flags & ITEM_LIVE)) continue;
		s.self = i;
		s.box = entry_at(t, t->items[i].addr)->box;
		uint64_t before = s.met;
		(void)ORTHANT_NAME(tree_query_box)(t, s.box, ORT_MASK_ALL, bp_sample_partner, &s);
		double c = (double)(s.met - before);
		squares += c * c;
		sampled++;
	}
	*e = *err = 0;
	if (!sampled) return;
	double m = (double)sampled, live = (double)t->live, mean = (double)s.met / m;
	// The variance of the partner counts, and that of their mean over m
	// samples of the live items (none when none is left out).
	double var = sampled > 1 ? (squares - m * mean * mean) / (m - 1.0) : mean * mean;
	double left = live > m ? (live - m) / live : 0.0, se = var > 0.0 ? sqrt(var / m * left) : 0.0;
	double est = mean * live / 2.0, off = 3.0 * se * live / 2.0;
	*e = est < (double)BP_MAX_PAIRS ? (uint64_t)est : BP_MAX_PAIRS;
	*err = off < (double)BP_MAX_PAIRS ? (uint64_t)off : BP_MAX_PAIRS;
}

/// The count the first update makes room for: bp_estimate_at's estimate
/// raised by its error and a 32nd (the samples are evenly spaced slots, not
/// drawn at random). From 64 items evenly spaced first; when those say more
/// than 2 pairs an item (where a copy of the records would cost what the
/// walk does) and their error is over an eighth, one in BP_SAMPLE_STEP
/// (100k 2D crossing rods: 64 samples estimate 3% high with an error of
/// 12%, and one in 64, 1562 long queries, cost 28 ms of a 330 ms update).
/// 10k identical boxes: every sample meets every other item, so the room
/// is the count and a 32nd, where a fixed eighth more (and a quarter on
/// top, the set's spare) held 40% more than the set's need. A scene of few
/// pairs an item pays 64 queries (3D crossing rods at 20k, 0.08 pairs an
/// item: one in 64 cost 15% of the walk), and its estimate, at most 2 an
/// item, costs bounded memory whatever the truth. Deterministic; only where
/// the first update puts its records depends on it, never what it finds.
static uint64_t bp_estimate(tree_t *t)
{
	uint32_t step = t->item_len / 64 > 1 ? t->item_len / 64 : 1;
	uint64_t e, err;
	bp_estimate_at(t, step, &e, &err);
	if (step > BP_SAMPLE_STEP && e > 2 * (uint64_t)t->live && err > e / 8)
		bp_estimate_at(t, BP_SAMPLE_STEP, &e, &err);
	// At most the eighth the room once had (few samples of a small tree can
	// say more): a count past the room costs a copy, never an answer, and
	// the links are reserved for all of the room.
	uint64_t margin = err + e / 32 < e / 8 ? err + e / 32 : e / 8, high = e + margin;
	return high < BP_MAX_PAIRS ? high : BP_MAX_PAIRS;
}

/// The first update's walk into blocks, then the set made from them: *n
/// records, with room to spare (bp_set_room's, or the estimate's when its
/// block became the set). Out of memory or past BP_MAX_PAIRS, the set as it
/// was (empty) and every block given back.
static ort_result bp_walk_first(tree_t *t, uint32_t *n)
{
	struct broadphase *bp = t->bp;
	bp_blocks k = {0};
	k.t = t;
	// The set's room for the estimate raised by its error (bp_estimate).
	// A detached tree walked (the packed tree refused its boxes:
	// bp_snap_build) is not queried: a query would attach it.
	bool attached = atomic_load_explicit(&t->det_state, memory_order_relaxed) == DET_ATTACHED;
	uint64_t first = bp_set_room(attached ? bp_estimate(t) : 0);
	if (bp->cap >= first) { // an earlier set's room holds the estimate: block 0
		k.at[0] = k.w.cur = k.w.end = bp->pairs;
		k.cap[0] = bp->cap;
		k.stop = bp->pairs + bp->cap;
		k.nb = 1;
	} else if (!bp_blocks_begin(&k, first)) {
		return k.full ? ORT_ERROR_CAPACITY : ORT_ERROR_OUT_OF_MEMORY;
	}
	ort_result r = bp_snap_pairs(t, bp->snap, bp_blocks_put, &k, &k.w);
	if (k.failed || k.full || r != ORT_OK) {
		bp_blocks_free(&k);
		return k.failed ? ORT_ERROR_OUT_OF_MEMORY : k.full ? ORT_ERROR_CAPACITY : r;
	}
	uint64_t len = bp_blocks_len(&k);
	assert(len < BP_MAX_PAIRS);
	WORK_FIRST_RECORDS(len);
	// Block 0 is the set when it holds every record and is at most the room
	// made for half as many again (the estimate raised by its error was not
	// too high by more than that): then nothing is copied. Else the set is
	// made at its size. Its unwritten part costs no page; the links are
	// reserved for all of it (below), so that a count wandering up within
	// the set's room allocates nothing in the steady state.
	if (k.nb == 1 && k.cap[0] <= bp_set_room(len + len / 2)) {
		if (k.at[0] != bp->pairs) {
			mem_free(t, bp->pairs, (size_t)bp->cap * sizeof *bp->pairs);
			bp->pairs = k.at[0];
			bp->cap = k.cap[0];
		}
	} else if (len) {
		uint64_t want = bp_set_room(len);
		bp_rec *p = mem_alloc(t, (size_t)want * sizeof *p);
		if (!p) {
			bp_blocks_free(&k);
			return ORT_ERROR_OUT_OF_MEMORY;
		}
		ort_mem_prefault(p, (size_t)len * sizeof *p); // every record is copied in: map them at once
		uint64_t at = 0;
		for (uint32_t j = 0; j < k.nb; ++j) {
			uint64_t m = j + 1 < k.nb ? k.cap[j] : len - at;
			memcpy(p + at, k.at[j], (size_t)m * sizeof *p);
			at += m;
		}
		WORK_FIRST_RECORDS(len);
		bp_blocks_free(&k);
		mem_free(t, bp->pairs, (size_t)bp->cap * sizeof *bp->pairs);
		bp->pairs = p;
		bp->cap = (uint32_t)want;
	} else {
		bp_blocks_free(&k);
	}
	*n = (uint32_t)len;
	return ORT_OK;
}

/// Sort n keys of `bits` bits, least significant digit first, ping-ponging
/// between *k and *tmp; the result ends in *k (the pointers are swapped,
/// never the contents copied back).
static void bp_radix(uint64_t **k, uint64_t **tmp, uint32_t n, int bits)
{
	enum { MAX_DIGIT = 12 };
	uint32_t count[1u << MAX_DIGIT];
	int passes = (bits + MAX_DIGIT - 1) / MAX_DIGIT;
	if (passes == 0) return;
	int width = (bits + passes - 1) / passes;
	uint32_t buckets = 1u << width, mask = buckets - 1;
	for (int pass = 0, shift = 0; pass < passes; ++pass, shift += width) {
		const uint64_t *src = *k;
		uint64_t *dst = *tmp;
		memset(count, 0, buckets * sizeof *count);
		for (uint32_t j = 0; j < n; ++j) count[(src[j] >> shift) & mask]++;
		uint32_t sum = 0;
		for (uint32_t b = 0; b < buckets; ++b) {
			uint32_t c = count[b];
			count[b] = sum;
			sum += c;
		}
		for (uint32_t j = 0; j < n; ++j) dst[count[(src[j] >> shift) & mask]++] = src[j];
		*tmp = *k;
		*k = dst;
	}
}

/// The record of the pair a key names.
static inline bp_rec bp_key_rec(uint64_t key, int shift)
{
	return bp_make((uint32_t)(key >> shift), (uint32_t)(key & ((1ull << shift) - 1)));
}

/// Pairs per range of the passes below, at least: fewer cost more to hand
/// out than they save.
#define BP_PASS_ROWS 4096u

/// The all-pairs update's linear passes over the pairs, cut into ranges
/// (bp_ranges: on the tree's workers when it has any). Each range writes its
/// own slots only, from what it alone reads: the same for any worker count.
typedef struct bp_pass {
	tree_t *t;
	int shift;
	const uint64_t *keys; ///< records from: the sorted found keys
	uint64_t *out;        ///< keys of: the old set's records
} bp_pass;

static void bp_pass_keys(void *ctx, uint32_t lo, uint32_t hi)
{
	const bp_pass *c = ctx;
	const bp_rec *pairs = c->t->bp->pairs;
	for (uint32_t j = lo; j < hi; ++j) c->out[j] = bp_key(rec_item(&pairs[j], 0), rec_item(&pairs[j], 1), c->shift);
}

static void bp_pass_recs(void *ctx, uint32_t lo, uint32_t hi)
{
	const bp_pass *c = ctx;
	bp_rec *pairs = c->t->bp->pairs;
	for (uint32_t p = lo; p < hi; ++p) pairs[p] = bp_key_rec(c->keys[p], c->shift);
}

/// The set is now what was found: every item counts as updated.
static void bp_all_done(tree_t *t, uint32_t n)
{
	struct broadphase *bp = t->bp;
	bp->len = n;
	bp->pub_ok = bp->keyed = false;
	bp->linked = false;
	for (uint32_t k = 0; k < bp->touched_len; ++k) t->items[bp->touched[k]].flags &= ~(uint32_t)ITEM_TOUCHED;
	bp->touched_len = 0;
	bp->all = false;
	bp->refiltered = false;
}

/// Pairs of removed items, waiting since they were removed: reported first.
static void bp_report_removed(tree_t *t, ORTHANT_NAME(pair_event_fn) * end, void *ctx)
{
	struct broadphase *bp = t->bp;
	for (uint32_t k = 0; k < bp->ended_len; ++k) bp_report_pub(end, ctx, &bp->ended[k]);
	bp->ended_len = 0;
}

/// Share of live items that must be touched for the all-pairs update: at 1/4,
/// one query per touched item already costs about what one pass over all
/// items does.
#define BP_ALL_SHARE 4

/// The next update is expected to take the all-pairs path: it will count
/// every item touched, or the last update took that path (a world that
/// moved most things last frame likely does again). A move may then skip
/// the tree and write the detached mode's dense array (tree_detach.c);
/// were the guess wrong, the attach of the next incremental update moves
/// the few items one by one.
static bool bp_expects_all(const tree_t *t)
{
	const struct broadphase *bp = t->bp;
	return bp->all || (bp->snap && bp->quiet == 0);
}

static bool bp_wants_all(const tree_t *t)
{
	const struct broadphase *bp = t->bp;
	return bp->all || (t->live >= 64 && (uint64_t)bp->touched_len * BP_ALL_SHARE >= t->live);
}

static ort_result bp_update_all(tree_t *t, ORTHANT_NAME(pair_event_fn) * begin, ORTHANT_NAME(pair_event_fn) * end,
                                void *ctx)
{
	struct broadphase *bp = t->bp;
	// Every step before the reports writes only memory that is not the set
	// (or, on the first update, the set's unused room): out of memory, nothing
	// changed and nothing was reported; everything stays touched and the
	// ended pairs of removed items wait.
	bool first = bp->len == 0;
	ort_result r = bp_snap_build(t, &bp->snap, first);
	if (r != ORT_OK) return r;
	uint32_t n_old = bp->len;
	if (!first && !bp_keys_reserve(t, n_old, 0)) return ORT_ERROR_OUT_OF_MEMORY;
	// One pass: growing the keys while collecting copies 8 bytes a pair at
	// each doubling, less than a second pass to count them first would cost.
	bp_collect_run c = {t, bp->key[1], 0, bp->key_cap, bp_key_shift(t), false, false};
	bool walked = first && bp_snap_walks(bp->snap);
	if (walked) {
		r = bp_walk_first(t, &c.n);
	} else {
		r = bp_snap_pairs(t, bp->snap, first ? bp_collect : bp_collect_key, &c, NULL);
		if (c.failed) return ORT_ERROR_OUT_OF_MEMORY;
	}
	if (r != ORT_OK) return r;
	if (c.n >= BP_MAX_PAIRS) return ORT_ERROR_CAPACITY;
	bool pile = c.counting;
	if (c.counting) {
		// The room for the count, made once (nothing written is kept), and the
		// pass again to fill it.
		uint32_t count = c.n;
		if (!bp_stage_in_set(t, count, 0)) return ORT_ERROR_OUT_OF_MEMORY;
		c.n = 0;
		c.counting = false;
		r = bp_snap_pairs(t, bp->snap, bp_collect, &c, NULL);
		if (c.failed) return ORT_ERROR_OUT_OF_MEMORY;
		if (r != ORT_OK) return r;
		assert(c.n == count && !c.counting);
	}
	uint32_t n_new = c.n;
	// The set is rebuilt in place from the keys, keeping its contents until
	// then (on the first update: it holds the new set already). The first
	// update leaves bp_set_room's spare (a pile excepted, sized by its
	// count, and the walk, which sized it). The links are reserved for the
	// whole array: sized for the count's room alone (smaller when the walk's
	// estimate was high), a count that later wandered past it grew them in
	// the steady state (the soak).
	if (first ? !bp_stage_in_set(t, pile || walked ? n_new : bp_set_room(n_new), n_new)
	          : n_new > bp->cap &&
	                !bp_resize(t, (void **)&bp->pairs, &bp->cap, sizeof(bp_rec), bp_set_room(n_new)))
		return ORT_ERROR_OUT_OF_MEMORY;
	// The index is built later, when needed, but its memory is taken now: a
	// removal made from a callback of this update cannot then fail for it.
	if (!bp_index_reserve(t, bp->cap)) return ORT_ERROR_OUT_OF_MEMORY;
	int shift = c.shift;
	if (first) {
		// Every pair begins, in the order the pass found them (and wrote them).
		bp_all_done(t, n_new);
		reading_begin(t);
		bp_report_removed(t, end, ctx);
		for (uint32_t p = 0; p < n_new && begin; ++p) {
			bp_ahead(bp->pairs, p, n_new);
			bp_report(t, begin, ctx, &bp->pairs[p]);
		}
		reading_end(t);
		return ORT_OK;
	}
	// The diff: both sets' keys sorted, merged in one linear pass. Ended keys
	// are compacted into key[0], begun ones into key[2] (free once the sorts
	// are done), each in ascending order (a write never passes the read).
	// The old set's keys are where the all-pairs update that made the set
	// left them when nothing changed it since (keyed: the usual case when
	// most items move every frame). Else they are made from its records, and
	// sorted unless those are in key order already.
	bp_pass pass = {t, shift, bp->key[1], bp->key[0]};
	if (!bp->keyed || bp->key_shift != shift) {
		bp_ranges(t, n_old, BP_PASS_ROWS, bp_pass_keys, &pass);
		bool sorted = true;
		for (uint32_t j = 1; j < n_old && sorted; ++j) sorted = bp->key[0][j - 1] < bp->key[0][j];
		if (!sorted) bp_radix(&bp->key[0], &bp->key[2], n_old, 2 * shift);
	}
	bp_radix(&bp->key[1], &bp->key[2], n_new, 2 * shift);
	uint64_t *ko = bp->key[0], *kn = bp->key[1], *kb = bp->key[2];
	uint32_t ended = 0, begun = 0, i = 0, j = 0;
	while (i < n_old && j < n_new) {
		if (ko[i] == kn[j])
			i++, j++;
		else if (ko[i] < kn[j])
			ko[ended++] = ko[i++];
		else
			kb[begun++] = kn[j++];
	}
	while (i < n_old) ko[ended++] = ko[i++];
	while (j < n_new) kb[begun++] = kn[j++];
	// The set, in ascending key order. A pair's record is the same whenever it
	// is made: both items are live throughout (removals took theirs out), and
	// neither handles nor user data change while an item lives.
	pass.keys = kn;
	bp_ranges(t, n_new, BP_PASS_ROWS, bp_pass_recs, &pass);
	bp_all_done(t, n_new);
	reading_begin(t);
	bp_report_removed(t, end, ctx);
	// The keys are read through bp: a callback changes nothing here (its
	// changes wait for reading_end), but the records are made afresh as
	// the item pool may move under a deferred insert.
	for (uint32_t k = 0; k < ended && end; ++k) {
		bp_ahead(bp->key[0], k, ended);
		bp_rec e = bp_key_rec(bp->key[0][k], shift);
		bp_report(t, end, ctx, &e);
	}
	for (uint32_t k = 0; k < begun && begin; ++k) {
		bp_ahead(bp->key[2], k, begun);
		bp_rec e = bp_key_rec(bp->key[2][k], shift);
		bp_report(t, begin, ctx, &e);
	}
	// The found keys, sorted, are the set's: the next all-pairs update reads
	// them as the old set's. (Before reading_end, whose deferred changes
	// clear keyed if they change the set.)
	uint64_t *found = bp->key[1];
	bp->key[1] = bp->key[0];
	bp->key[0] = found;
	bp->keyed = true;
	bp->key_shift = shift;
	reading_end(t);
	return ORT_OK;
}

/// Incremental updates in a row after which the all-pairs update's memory
/// (the snapshot and the dense array of boxes, ~70 bytes an item, and the
/// diff's keys, 24 bytes a pair) is
/// given back: a world that moves few things keeps only what its frames use.
/// A world switching between the two kinds of update more often keeps it (no
/// allocation per frame); one switching less often takes it anew once per
/// switch.
#define BP_QUIET_RELEASE 8

static void bp_release_all_pairs(tree_t *t)
{
	struct broadphase *bp = t->bp;
	bp_snap_free(t, bp->snap);
	bp->snap = NULL;
	detached_release(t);
	for (int k = 0; k < 3; ++k) {
		mem_free(t, bp->key[k], (size_t)bp->key_cap * sizeof *bp->key[k]);
		bp->key[k] = NULL;
	}
	bp->key_cap = 0;
	bp->keyed = false;
}

/// After the update that made the set from nothing (the first, or the first
/// after a clear): build the index now, while nothing waits on it. The next
/// update is usually incremental (a world where a few things move), and it
/// would otherwise pay one pass over the whole set on its own: in a 2M-box
/// world with 1M pairs that pass cost five times a steady frame. A world where
/// most things move pays the pass once, here. Its memory was taken by the
/// update, so this allocates nothing; without it the index waits, as before.
/// A crowded scene (past BP_LINK_FIRST pairs an item) waits too: there the
/// links, 16 bytes and a few dozen instructions a pair in memory never
/// touched before, would cost about what the walk that found the pairs did
/// (20k 2D duplicates, 4 pairs an item: 2.9M instructions and 320 page
/// faults, against find_pairs' 9.4M and none), for an incremental update
/// that may never come; the first one that does builds them.
#define BP_LINK_FIRST 2u
static void bp_link_first(tree_t *t)
{
	const struct broadphase *bp = t->bp;
	if (bp->len > 0 && !bp->linked && bp->len <= BP_LINK_FIRST * (uint64_t)t->live + 256) (void)bp_link_all(t);
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
	struct broadphase *bp = t->bp;
	detached_flush(t); // the touches of detached moves (tree_detach.c)
	detached_rewind(t);
	move_rewind(t);
	if (bp_wants_all(t)) {
		fat_drop(bp->fat); // the all-pairs update does not see the movers one by one
		bool first = bp->len == 0;
		bp->quiet = 0;
		ort_result r = bp_update_all(t, begin, end, ctx);
		if (r == ORT_OK && first) bp_link_first(t);
		return r;
	}
	ort_result r = detached_read(t); // an incremental update queries the tree
	if (r != ORT_OK) return r;
	reading_begin(t);
	r = bp_update(t, begin, end, ctx);
	reading_end(t);
	if (r == ORT_OK && bp->quiet < BP_QUIET_RELEASE && ++bp->quiet == BP_QUIET_RELEASE) bp_release_all_pairs(t);
	return r;
}

ort_result ORTHANT_NAME(tree_current_pairs)(const tree_t *t, ORTHANT_NAME(pair_fn) * fn, void *ctx)
{
	if (!t || !fn) return ORT_ERROR_INVALID_ARGUMENT;
	if (!t->bp) return ORT_OK;
	reading_begin(t);
	// Read through bp: a callback's changes wait for reading_end.
	const struct broadphase *bp = t->bp;
	for (uint32_t p = 0; p < bp->len; ++p) {
		bp_ahead(bp->pairs, p, bp->len);
		bp_pub r = bp_public(t, &bp->pairs[p]);
		if (!fn(ctx, r.a, r.b, r.user_a, r.user_b)) break;
	}
	reading_end(t);
	return ORT_OK;
}

const ort_id_pair *ORTHANT_NAME(tree_pair_ids)(const tree_t *t, size_t *count)
{
	if (count) *count = t && t->bp ? t->bp->len : 0;
	return t && t->bp && t->bp->len ? t->bp->pairs : NULL;
}

const ORTHANT_NAME(pair) * ORTHANT_NAME(tree_pair_array)(const tree_t *t, size_t *count)
{
	if (count) *count = t && t->bp ? t->bp->len : 0;
	if (!t || !t->bp || !t->bp->len) return NULL;
	// The records are a cache of the set, made here (see the header: this
	// call counts as a mutation for threads). Their room grows with the
	// set's and is kept, so a steady frame allocates nothing.
	tree_t *w = (tree_t *)t;
	struct broadphase *bp = w->bp;
	if (bp->pub_ok) return bp->pub;
	if (bp->pub_cap < bp->len && !bp_resize(w, (void **)&bp->pub, &bp->pub_cap, sizeof(bp_pub), bp->cap)) return NULL;
	for (uint32_t p = 0; p < bp->len; ++p) bp->pub[p] = bp_public(t, &bp->pairs[p]);
	bp->pub_ok = true;
	return bp->pub;
}

int ORTHANT_NAME(tree_pair_count)(const tree_t *t) { return t && t->bp ? (int)t->bp->len : 0; }

// tree_ownidx.c: the upkeep of big own lists' indexes — making, merging and
// rebuilding runs, and the hooks that keep them right as entries come and go.
// The layout, its invariants and the walk queries make are in tree_ownidx.h.
//
// ## Spatial order
//
// A run's entries are laid out by a kd split of the boxes as points in
// 2 * DIM dimensions (min and max per axis): the coordinate of largest spread,
// cut at a power of two chunks so every group of OWN_GROUP chunks (its
// square, ...) is one subtree of the split. Splitting on max as well as min keeps apart what
// centres alone would mix: strips along x and strips along y through one
// point, a box holding the node's centre and the small ones around it.
//
// A merge with families (tree_ownidx.h: Families) lays out each family's
// block with its first chunk at the block's position, and cuts where the
// run's group edges fall inside it (own_order's `at`).
//
// ## Cost
//
// A run of s chunks is laid out in O(s log s); an entry joins log_FAN m merges
// (and up to OWN_BASE layouts of the small newest run, of at most OWN_BASE
// chunks), so an append costs O(log² m / log OWN_FAN) amortised, and a full
// rebuild, after Θ(m) removals or grown bounds, O(log m) per change. Most of
// a layout is own_axis' scoring of the cuts (two thirds of a strips build's
// instructions), then the selections. (When own_axis still selected its
// sample per coordinate: with a binary counter, 20,000 3D pinwheel strips
// inserted one by one cost 4.3 times a uniform scene's instructions and
// their remove + insert 6.2 times; with fan 4, 3.3 and 5.1.)
// A query tests at most OWN_TAIL + 1 tail chunks, then descends O(log m) runs.
//
// ## Settling
//
// The hooks keep an index right as entries come and go, and own_note marks a
// node whose index is due work (made, folded, rebuilt, dropped) in a short
// list on the tree. Every public mutation (insert, remove, move, the batched
// build, tick, a deferred change applied) settles the marked nodes before it
// returns, so no path that appends (a split, a merge, a capped store) has to
// remember to, and none settles half-way through a change that holds entry
// addresses. validate fails on an unmarked node that is due work, and on a
// marked one after a public call unless the settle was refused memory.
//
// ## Failure
//
// Every rebuild reserves its memory first (the header, the position arrays,
// the scratch the entries are sorted in) and changes nothing when it cannot
// get it: the index stays as it was (a longer tail, stale bounds), still
// right, its node stays marked, and the next mutation tries again.
#include "tree_ownidx.h"

static inline void pairs_grow(box_t *into, const box_t *e); // pairs.c

static inline struct ownidx *own_mut(tree_t *t, uint32_t ni) { return &t->own[t->own_of[ni]]; }

// ---- finding a chunk ---------------------------------------------------------------

/// Where id ci (a chunk, or in a foreign run an address) is in run r's
/// ascending ids (r walk-numbered), or would be.
static uint32_t own_search(const tree_t *t, const struct ownidx *ix, uint32_t r, uint32_t ci)
{
	const own_run *rn = own_run_at(ix, r);
	const uint32_t *ids = &t->own_ids[own_run_start(ix, r)];
	uint32_t lo = 0, hi = rn->size;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (ids[mid] < ci)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/// Whether chunk ci is at a live position of run r, which is then *pos.
static bool own_in_run(const tree_t *t, const struct ownidx *ix, uint32_t r, uint32_t ci, uint32_t *pos)
{
	const own_run *rn = &ix->run[r];
	WORK_CHURN(1);
	uint32_t p = own_search(t, ix, r, ci);
	*pos = p;
	return p < rn->size && own_ids(t, ix)[rn->first + p] == ci && !box_inverted(&own_bounds(t, ix)[2 * rn->first + p]);
}

/// The run and position of a live run chunk, or false (a tail chunk).
///
/// The head, when the tail holds it (the tail is the chain's first chunks), is
/// no search: a removal refills its hole from the head, so half the lookups
/// are it. The runs are searched oldest first, as their sizes fall
/// geometrically (the oldest holds most chunks). A released chunk's id may
/// come back as a tail chunk or in another run, its old position dead (an
/// inverted bound): only a live position answers, so the order is free.
static bool own_find(const tree_t *t, const struct ownidx *ix, uint32_t ci, uint32_t *run, uint32_t *pos)
{
	if (ix->tail > 0 && ci == t->nodes[ix->node].head) return false;
	for (uint32_t r = 0; r < ix->nruns; ++r) {
		if (own_in_run(t, ix, r, ci, pos)) {
			*run = r;
			return true;
		}
	}
	return false;
}

/// Grow position pos of run r and the groups above it to hold box, an entry of
/// handle id `id` (their least ids fall to it).
static void own_grow(tree_t *t, struct ownidx *ix, uint32_t r, uint32_t pos, const box_t *box, uint32_t id)
{
	const own_run *rn = own_run_at(ix, r);
	box_t *base = &t->own_bounds[2 * (size_t)own_run_start(ix, r)];
	uint32_t *least = &t->own_least[2 * (size_t)own_run_start(ix, r)];
	for (uint32_t l = 0; l < rn->levels; ++l, pos /= OWN_GROUP) {
		box_t *b = &base[rn->off[l] + pos];
		bool grew = false, fell = id < least[rn->off[l] + pos];
		for (int d = 0; d < DIM; ++d) {
			if (box->min[d] < b->min[d]) b->min[d] = box->min[d], grew = true;
			if (box->max[d] > b->max[d]) b->max[d] = box->max[d], grew = true;
		}
		if (fell) least[rn->off[l] + pos] = id;
		if (!grew && !fell) return;
		if (l == 0 && grew) ix->stale++;
	}
}

// ---- foreign slots -----------------------------------------------------------------

static bool own_room_in(tree_t *t, uint32_t *base, uint32_t *cap, uint32_t positions, uint32_t keep);

/// The skip mask of position pos of chunk run r.
static inline uint8_t *own_skip_at(const tree_t *t, const struct ownidx *ix, uint32_t r, uint32_t pos)
{
	return &t->own_skip[ix->base + ix->run[r].first + pos];
}

/// Where the live record of foreign address a is: 1 with *at its index in the
/// foreign tail, 2 with foreign run *fr (walk-numbered) and position *at, or 0.
static int own_ffind(const tree_t *t, const struct ownidx *ix, uint32_t a, uint32_t *fr, uint32_t *at)
{
	const uint32_t *ft = &t->own_ids[own_ftail_start(ix)];
	WORK_CHURN(ix->ftail + ix->nfruns);
	for (uint32_t f = 0; f < ix->ftail; ++f)
		if (ft[f] == a) return *at = f, 1;
	// An address may have a dead record in an older run and the live one in a newer.
	for (uint32_t r = ix->nfruns; r-- > 0;) {
		const own_run *rn = &ix->frun[r];
		const uint32_t *ids = &t->own_ids[ix->fbase + rn->first];
		uint32_t lo = own_search(t, ix, OWN_RUNS + r, a);
		if (lo < rn->size && ids[lo] == a && !box_inverted(&t->own_bounds[2 * ((size_t)ix->fbase + rn->first) + lo])) {
			*fr = OWN_RUNS + r;
			*at = lo;
			return 2;
		}
	}
	return 0;
}

/// Foreign slot a (marked in *skip) is one no more: its mark and record go.
static void own_unforeign(tree_t *t, struct ownidx *ix, uint32_t a, uint8_t *skip)
{
	assert(*skip >> (a % CHUNK_CAP) & 1);
	*skip = (uint8_t)(*skip & ~(1u << (a % CHUNK_CAP)));
	ix->flive--;
	uint32_t fr, at;
	int where = own_ffind(t, ix, a, &fr, &at);
	assert(where);
	if (where == 1) {
		uint32_t *ft = &t->own_ids[own_ftail_start(ix)];
		ft[at] = ft[--ix->ftail];
	} else if (where == 2) {
		own_run *rn = &ix->frun[fr - OWN_RUNS];
		bound_clear(&t->own_bounds[2 * (size_t)own_run_start(ix, fr) + at]);
		rn->live--;
		ix->fdead++;
	}
}

/// Make the entry at a, in position pos of chunk run r, foreign: marked, its
/// address in the foreign tail. False, nothing changed, without memory.
static bool own_foreign(tree_t *t, struct ownidx *ix, uint32_t a, uint32_t r, uint32_t pos)
{
	uint32_t end = own_ftail_start(ix) - ix->fbase + ix->ftail;
	if (!own_room_in(t, &ix->fbase, &ix->fcap, end + 1, end)) return false;
	t->own_ids[ix->fbase + end] = a;
	ix->ftail++;
	*own_skip_at(t, ix, r, pos) |= (uint8_t)(1u << (a % CHUNK_CAP));
	ix->flive++;
	uint32_t id = entry_at(t, a)->item + 1;
	if (id < ix->tail_least) ix->tail_least = id;
	return true;
}

// ---- owing a settle -------------------------------------------------------------

/// Whether ix, over a list of `chunks` chunks, is due a full rebuild: released
/// chunks past a quarter, as many grown bounds as chunks, or foreign slots
/// past half the entries. (At a quarter, a remove + insert of every item of a
/// big list rebuilt it three times a pass; the foreign runs index what the
/// chunks' bounds no longer hold, so box queries after such a pass stay
/// within twice a fresh index's work, tests/test_ownidx.c.)
static bool own_rebuild_due(const struct ownidx *ix, uint32_t chunks)
{
	return ix->dead * 4 > chunks + 4 * OWN_BASE || ix->stale > chunks + OWN_BASE || ix->flive > chunks * (CHUNK_CAP / 2) + OWN_BASE;
}

/// Whether the foreign records are due a fold (a tail past OWN_FTAIL) or a
/// rebuild of all of them (more dead records than live).
static bool own_ffold_due(const struct ownidx *ix)
{
	return ix->ftail > OWN_FTAIL || ix->fdead > ix->flive + OWN_FTAIL;
}

/// Whether own_settle would change node ni's index: make it (a list of
/// OWN_MIN), drop it (below half), rebuild it, or fold a tail past OWN_TAIL.
static bool own_owes(const tree_t *t, uint32_t ni)
{
	const node *n = &t->nodes[ni];
	if (!(n->flags & NODE_OWNIDX)) return n->count >= OWN_MIN;
	if (n->count < OWN_MIN / 2) return true;
	const struct ownidx *ix = own_get(t, ni);
	return ix->tail > OWN_TAIL || own_ffold_due(ix) || own_rebuild_due(ix, (n->count + CHUNK_CAP - 1) / CHUNK_CAP);
}

/// Mark node ni if its index owes a settle. Called wherever its list changes,
/// so no caller has to remember to settle: the mutation's end does it.
static void own_note(tree_t *t, uint32_t ni)
{
	if ((t->nodes[ni].flags & NODE_OWED) || !own_owes(t, ni)) return;
	t->nodes[ni].flags |= NODE_OWED;
	if (t->own_owed_len < OWN_OWED)
		t->own_owed[t->own_owed_len++] = ni;
	else
		t->own_owed_all = true;
}

// ---- hooks --------------------------------------------------------------------

static void own_on_write(tree_t *t, uint32_t ni, uint32_t addr, const box_t *box)
{
	if (!(t->nodes[ni].flags & NODE_OWNIDX)) return;
	struct ownidx *ix = own_mut(t, ni);
	uint32_t r, pos, id = entry_at(t, addr)->item + 1;
	if (own_find(t, ix, addr / CHUNK_CAP, &r, &pos)) {
		uint32_t fr, at;
		if (!(*own_skip_at(t, ix, r, pos) >> (addr % CHUNK_CAP) & 1))
			own_grow(t, ix, r, pos, box, id);
		else if (own_ffind(t, ix, addr, &fr, &at) == 2)
			own_grow(t, ix, fr, at, box, id); // a foreign run's record
		else if (id < ix->tail_least)
			ix->tail_least = id; // the foreign tail's
	} else if (id < ix->tail_least) {
		ix->tail_least = id; // a tail chunk
	}
	own_note(t, ni);
}

/// An entry left node ni from addr, and (addr != last) the entry at last,
/// the head's last, took its place (entry_remove). A foreign slot's record
/// goes with its entry; an entry moved into a run chunk it is not from is
/// made foreign there (its bound stays as laid out), or, without memory for
/// the record, grows the bound.
static void own_on_take(tree_t *t, uint32_t ni, uint32_t addr, uint32_t last)
{
	if (!(t->nodes[ni].flags & NODE_OWNIDX)) return;
	struct ownidx *ix = own_mut(t, ni);
	uint32_t r, pos, lr, lpos;
	bool in_run = own_find(t, ix, addr / CHUNK_CAP, &r, &pos);
	uint8_t *skip = in_run ? own_skip_at(t, ix, r, pos) : NULL;
	if (skip && (*skip >> (addr % CHUNK_CAP) & 1)) own_unforeign(t, ix, addr, skip);
	if (last == addr) return;
	bool native = false; // the moved entry belongs to addr's chunk's bound
	if (own_find(t, ix, last / CHUNK_CAP, &lr, &lpos)) {
		uint8_t *lskip = own_skip_at(t, ix, lr, lpos);
		if (*lskip >> (last % CHUNK_CAP) & 1)
			own_unforeign(t, ix, last, lskip);
		else
			native = last / CHUNK_CAP == addr / CHUNK_CAP;
	}
	const entry *e = entry_at(t, addr);
	if (!in_run) {
		if (e->item + 1 < ix->tail_least) ix->tail_least = e->item + 1; // a tail chunk
		return;
	}
	// An entry the chunk's bound holds (a neighbour of the one it replaces)
	// needs no record: at most its least id falls.
	const box_t *b = &own_bounds(t, ix)[2 * ix->run[r].first + pos];
	if (native || box_within(&e->box, b->min, b->max))
		own_grow(t, ix, r, pos, &e->box, e->item + 1);
	else if (!own_foreign(t, ix, addr, r, pos))
		own_grow(t, ix, r, pos, &e->box, e->item + 1);
}

static void own_on_append(tree_t *t, uint32_t ni, uint32_t addr, bool fresh_chunk)
{
	if (!(t->nodes[ni].flags & NODE_OWNIDX)) {
		if (t->nodes[ni].count >= OWN_MIN) own_note(t, ni);
		return;
	}
	struct ownidx *ix = own_mut(t, ni);
	uint32_t id = entry_at(t, addr)->item + 1;
	if (fresh_chunk || ix->tail > 0) { // the head is a tail chunk
		if (fresh_chunk) ix->tail++;
		if (id < ix->tail_least) ix->tail_least = id;
		if (fresh_chunk) own_note(t, ni);
		return;
	}
	// The head is a run chunk: the entry is foreign to its bound.
	uint32_t r, pos;
	if (own_find(t, ix, addr / CHUNK_CAP, &r, &pos) && own_foreign(t, ix, addr, r, pos)) {
		own_note(t, ni);
		return;
	}
	own_on_write(t, ni, addr, &entry_at(t, addr)->box);
}

static void own_on_release(tree_t *t, uint32_t ni, uint32_t ci)
{
	if (!(t->nodes[ni].flags & NODE_OWNIDX)) return;
	struct ownidx *ix = own_mut(t, ni);
	if (ix->tail > 0) {
		ix->tail--;
		return;
	}
	uint32_t r, pos;
	bool found = own_find(t, ix, ci, &r, &pos);
	assert(found);
	if (!found) return;
	assert(*own_skip_at(t, ix, r, pos) == 0); // each slot's mark went as it emptied
	bound_clear(&own_bounds(t, ix)[2 * ix->run[r].first + pos]);
	ix->run[r].live--;
	ix->dead++;
}

/// After an entry left node ni (entry_remove): a list that shrank below half
/// of OWN_MIN, or released chunks, may make its index due.
static void own_on_remove(tree_t *t, uint32_t ni)
{
	if (t->nodes[ni].flags & NODE_OWNIDX) own_note(t, ni);
}

// ---- headers and memory ---------------------------------------------------------------

/// A header for node ni (flagged), or false without memory.
static bool own_attach(tree_t *t, uint32_t ni)
{
	if (t->own_of_cap < t->node_cap) {
		if (!array_resize(t, (void **)&t->own_of, t->own_of_cap * sizeof(uint32_t), t->node_cap * sizeof(uint32_t)))
			return false;
		t->own_of_cap = t->node_cap;
	}
	if (t->own_free == NIL && t->own_len == t->own_cap) {
		uint32_t cap = t->own_cap ? t->own_cap * 2 : 4;
		if (!array_resize(t, (void **)&t->own, t->own_cap * sizeof(struct ownidx), cap * sizeof(struct ownidx)))
			return false;
		t->own_cap = cap;
	}
	uint32_t h;
	if (t->own_free != NIL) {
		h = t->own_free;
		t->own_free = t->own[h].node;
	} else {
		h = t->own_len++;
	}
	struct ownidx *ix = &t->own[h];
	ix->node = ni;
	ix->tail = (t->nodes[ni].count + CHUNK_CAP - 1) / CHUNK_CAP; // every chunk, until a run takes them
	ix->dead = ix->stale = ix->nruns = 0;
	ix->tail_least = 0; // unknown until a run takes the tail
	ix->base = ix->cap = 0;
	ix->fbase = ix->fcap = ix->nfruns = ix->ftail = ix->flive = ix->fdead = 0;
	t->own_of[ni] = h;
	t->nodes[ni].flags |= NODE_OWNIDX;
	return true;
}

/// Give the header and its region back.
static void own_drop(tree_t *t, uint32_t ni)
{
	node *n = &t->nodes[ni];
	if (!(n->flags & NODE_OWNIDX)) return;
	n->flags &= (uint8_t)~NODE_OWNIDX;
	uint32_t h = t->own_of[ni];
	t->own_pool_used -= t->own[h].cap + t->own[h].fcap;
	t->own[h].cap = t->own[h].fcap = 0;
	t->own[h].node = t->own_free;
	t->own_free = h;
}

static void own_clear(tree_t *t)
{
	// Nodes are all freed by the caller; the headers go back to the free list.
	t->own_free = NIL;
	for (uint32_t h = t->own_len; h-- > 0;) {
		t->own[h].node = t->own_free;
		t->own[h].cap = t->own[h].fcap = 0;
		t->own_free = h;
	}
	t->own_pool_len = t->own_pool_used = 0;
	t->own_owed_len = 0;
	t->own_owed_all = t->own_refused = false;
}

static void own_free_all(tree_t *t)
{
	mem_free(t, t->own_ids, (size_t)t->own_pool_cap * sizeof(uint32_t));
	mem_free(t, t->own_bounds, (size_t)t->own_pool_cap * 2 * sizeof(box_t));
	mem_free(t, t->own_least, (size_t)t->own_pool_cap * 2 * sizeof(uint32_t));
	mem_free(t, t->own_skip, t->own_pool_cap);
	mem_free(t, t->own, (size_t)t->own_cap * sizeof(struct ownidx));
	mem_free(t, t->own_of, (size_t)t->own_of_cap * sizeof(uint32_t));
	mem_free(t, t->own_scratch, t->own_scratch_bytes);
}

/// Copy region (base, cap) of the old pools to position len of the new ones.
static void own_region_copy(const tree_t *t, uint32_t *ids, box_t *bounds, uint32_t *least, uint8_t *skip, uint32_t *base,
                            uint32_t cap, uint32_t *len)
{
	if (cap == 0) return;
	memcpy(&ids[*len], &t->own_ids[*base], (size_t)cap * sizeof(uint32_t));
	memcpy(&bounds[2 * (size_t)*len], &t->own_bounds[2 * (size_t)*base], (size_t)cap * 2 * sizeof(box_t));
	memcpy(&least[2 * (size_t)*len], &t->own_least[2 * (size_t)*base], (size_t)cap * 2 * sizeof(uint32_t));
	memcpy(&skip[*len], &t->own_skip[*base], cap);
	*base = *len;
	*len += cap;
}

/// Room for `positions` positions in the region (*base, *cap) of a header
/// (its chunk runs' or its foreign records'), keeping its first `keep`: a new
/// region at the pools' end, the pools grown (and compacted: regions left
/// behind dropped) when they have no room. False, nothing changed, without
/// memory.
static bool own_room_in(tree_t *t, uint32_t *base_of, uint32_t *cap_of, uint32_t positions, uint32_t keep)
{
	if (positions <= *cap_of) return true;
	uint64_t cap = (uint64_t)*cap_of * 2;
	if (cap < positions) cap = positions;
	if (cap < 16) cap = 16;
	if ((uint64_t)t->own_pool_len + cap > t->own_pool_cap) {
		uint64_t need = (uint64_t)t->own_pool_used + cap, pool = (uint64_t)t->own_pool_cap * 2;
		if (pool < need) pool = need;
		if (pool > UINT32_MAX / 4) return false;
		uint32_t *ids = mem_alloc(t, (size_t)pool * sizeof(uint32_t));
		box_t *bounds = ids ? mem_alloc(t, (size_t)pool * 2 * sizeof(box_t)) : NULL;
		uint32_t *least = bounds ? mem_alloc(t, (size_t)pool * 2 * sizeof(uint32_t)) : NULL;
		uint8_t *skip = least ? mem_alloc(t, (size_t)pool) : NULL;
		if (!skip) {
			mem_free(t, ids, (size_t)pool * sizeof(uint32_t));
			mem_free(t, bounds, (size_t)pool * 2 * sizeof(box_t));
			mem_free(t, least, (size_t)pool * 2 * sizeof(uint32_t));
			return false;
		}
		uint32_t len = 0;
		for (uint32_t h = 0; h < t->own_len; ++h) {
			struct ownidx *o = &t->own[h];
			own_region_copy(t, ids, bounds, least, skip, &o->base, o->cap, &len);
			own_region_copy(t, ids, bounds, least, skip, &o->fbase, o->fcap, &len);
		}
		mem_free(t, t->own_ids, (size_t)t->own_pool_cap * sizeof(uint32_t));
		mem_free(t, t->own_bounds, (size_t)t->own_pool_cap * 2 * sizeof(box_t));
		mem_free(t, t->own_least, (size_t)t->own_pool_cap * 2 * sizeof(uint32_t));
		mem_free(t, t->own_skip, t->own_pool_cap);
		t->own_ids = ids;
		t->own_bounds = bounds;
		t->own_least = least;
		t->own_skip = skip;
		t->own_pool_cap = (uint32_t)pool;
		t->own_pool_len = len;
	}
	uint32_t base = t->own_pool_len;
	if (keep) {
		memcpy(&t->own_ids[base], &t->own_ids[*base_of], (size_t)keep * sizeof(uint32_t));
		memcpy(&t->own_bounds[2 * (size_t)base], &t->own_bounds[2 * (size_t)*base_of], (size_t)keep * 2 * sizeof(box_t));
		memcpy(&t->own_least[2 * (size_t)base], &t->own_least[2 * (size_t)*base_of], (size_t)keep * 2 * sizeof(uint32_t));
		memcpy(&t->own_skip[base], &t->own_skip[*base_of], keep);
	}
	t->own_pool_used += (uint32_t)cap - *cap_of;
	t->own_pool_len += (uint32_t)cap;
	*base_of = base;
	*cap_of = (uint32_t)cap;
	return true;
}

/// Room for `positions` chunk positions in ix, keeping its first `keep`.
static bool own_room(tree_t *t, struct ownidx *ix, uint32_t positions, uint32_t keep)
{
	return own_room_in(t, &ix->base, &ix->cap, positions, keep);
}

static bool own_scratch_reserve(tree_t *t, size_t bytes)
{
	if (bytes <= t->own_scratch_bytes) return true;
	size_t want = t->own_scratch_bytes * 2 > bytes ? t->own_scratch_bytes * 2 : bytes;
	void *p = mem_alloc(t, want);
	if (!p) return false;
	mem_free(t, t->own_scratch, t->own_scratch_bytes);
	t->own_scratch = p;
	t->own_scratch_bytes = want;
	return true;
}

// ---- spatial order -----------------------------------------------------------------

/// Entries whose spread picks a split's axis in a big part. The sample is
/// parted once per coordinate at every cut, which with the real cut is most
/// of a layout's work, and a list of strips inserted one by one lays out each
/// entry O(log^2 m) times: at 64 such inserts cost 5.7 times a uniform
/// scene's instructions (2D, 20000 boxes), at 16 4.2, while 10 nearest among
/// 3D boxes all holding one point test 5% more boxes.
#define OWN_SAMPLE 16

/// Coordinate a of a box as a point in 2 * DIM dimensions.
static inline float own_key(const entry *e, int a)
{
	_Static_assert(sizeof(box_t) == 2 * DIM * sizeof(float), "a box is min then max, packed");
	return ((const float *)&e->box)[a];
}

/// Sift e[i] down the max-heap e[0, n) (by coordinate a).
static void own_sift(entry *e, uint32_t i, uint32_t n, int a)
{
	entry x = e[i];
	for (;;) {
		uint32_t c = 2 * i + 1;
		WORK_CHURN(1);
		if (c >= n) break;
		if (c + 1 < n && own_key(&e[c + 1], a) > own_key(&e[c], a)) ++c;
		if (!(own_key(&e[c], a) > own_key(&x, a))) break;
		e[i] = e[c];
		i = c;
	}
	e[i] = x;
}

/// Sort e[0, n) by coordinate a: heapsort, O(n log n) whatever the order.
static void own_heapsort(entry *e, uint32_t n, int a)
{
	for (uint32_t i = n / 2; i-- > 0;) own_sift(e, i, n, a);
	for (uint32_t m = n; m-- > 1;) {
		entry tmp = e[0];
		e[0] = e[m];
		e[m] = tmp;
		own_sift(e, 0, m, a);
	}
}

/// Reorder e[0, n) so e[k] holds the entry of rank k by coordinate a, none
/// before it greater and none after it smaller (Hoare's selection).
///
/// The pivot is the median of three entries at pseudo-random places, not the
/// first, middle and last: a list laid out by an earlier selection on the
/// same coordinate comes back rotated (own_merge makes the last chunk the
/// head, and a rebuild reads from the head), its greatest entries first, and
/// the median of the ends and the middle of a rotated sorted list is near its
/// top: each round then parted off a few entries, and a churned list of
/// centre-line straddlers scanned 400 times its length a rebuild. Should the
/// scan still pass OWN_SELECT_SCANS times the length (an order built against
/// the generator), what is left is heapsorted: O(n log n) at worst.
#define OWN_SELECT_SCANS 8
static void own_select(entry *e, uint32_t n, uint32_t k, int a)
{
	int64_t lo = 0, hi = (int64_t)n - 1;
	uint64_t rng = ((uint64_t)n * 0x9E3779B97F4A7C15ull ^ k) | 1u, left = (uint64_t)OWN_SELECT_SCANS * n;
	while (hi > lo) {
		uint64_t len = (uint64_t)(hi - lo + 1);
		WORK_CHURN(len);
		if (len > left) {
			own_heapsort(&e[lo], (uint32_t)len, a);
			return;
		}
		left -= len;
		float v[3];
		for (int q = 0; q < 3; ++q) {
			rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17; // xorshift64
			v[q] = own_key(&e[lo + (int64_t)(rng % len)], a);
		}
		float x = v[0], y = v[1], z = v[2];
		float p = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y)); // median of three
		int64_t i = lo, j = hi;
		while (i <= j) {
			while (own_key(&e[i], a) < p) ++i;
			while (own_key(&e[j], a) > p) --j;
			if (i <= j) {
				entry tmp = e[i];
				e[i++] = e[j];
				e[j--] = tmp;
			}
		}
		if ((int64_t)k <= j)
			hi = j;
		else if ((int64_t)k >= i)
			lo = i;
		else
			return;
	}
}

/// The coordinate (of the 2 * DIM a box is as a point; one of those set in
/// the bits of `coords`) to cut e[0, n) on at rank `cut`, or -1 when the
/// boxes are all one point: the cut whose two sides'
/// bounds are smallest, each axis measured against the whole's extent on it
/// (a sum of relative shrinks: about the volume the cut saves). Measured on a
/// sample of at most OWN_SAMPLE entries, each side the samples below or
/// above the cut's rank by the coordinate: their keys are insertion-sorted
/// (floats and a byte each), not the entries selected (own_select moved 28
/// bytes an entry in 3D, three times a coordinate: the scoring was 60% of a
/// one-by-one build of 3D rods, and the binary counter's extra layouts, Layout
/// in tree_ownidx.h, cost 3D rods 28% more time to build; with the sort they
/// build as fast as with fan 4). The choice only steers the layout's quality.
///
/// Relative, not absolute: boxes that all hold one point and are long on
/// different axes leave a cut on their long ends a side as long as the whole,
/// while a cut on the thin axes (where they differ by a hair) parts those
/// whose near faces are nearest a point off that axis, which is what a
/// nearest search among such near-ties must tell apart. Strips stacked along
/// y are still cut on y (each side half the whole's height).
///
/// Cost: O(DIM * OWN_SAMPLE) a cut, about chunks cuts a layout. (It was the
/// bulk of a churned list's upkeep when each coordinate was insertion-sorted.)
static int own_axis(const entry *e, uint32_t n, uint32_t cut, unsigned coords)
{
	entry s[OWN_SAMPLE];
	uint32_t step = n > OWN_SAMPLE ? n / OWN_SAMPLE : 1, m = 0;
	for (uint32_t i = 0; i < n && m < OWN_SAMPLE; i += step) s[m++] = e[i];
	WORK_CHURN(2 * DIM * m);
	uint32_t r = (uint32_t)((uint64_t)cut * m / n);
	if (r < 1) r = 1;
	if (r > m - 1) r = m - 1;
	box_t whole;
	bound_clear(&whole);
	for (uint32_t i = 0; i < m; ++i) pairs_grow(&whole, &s[i].box);
	const float *wk = (const float *)&whole; // the sample's least mins and greatest maxes
	int best = -1;
	double best_score = -1.0;
	for (int a = 0; a < 2 * DIM; ++a) {
		if (!(coords >> a & 1)) continue;
		// One value: no cut parts it. The whole holds the least min and the
		// greatest max; the other end of each is a pass over the sample.
		// The sample's order by a: an insertion sort of its keys (a few
		// dozen compares of floats, where a selection moved whole entries).
		float key[OWN_SAMPLE];
		uint8_t ord[OWN_SAMPLE];
		float lo = wk[a], hi = wk[a];
		for (uint32_t i = 0; i < m; ++i) {
			float k = own_key(&s[i], a);
			if (k > hi) hi = k;
			if (k < lo) lo = k;
			uint32_t j = i;
			for (; j > 0 && key[j - 1] > k; --j) {
				key[j] = key[j - 1];
				ord[j] = ord[j - 1];
			}
			key[j] = k;
			ord[j] = (uint8_t)i;
		}
		if (!(lo < hi)) continue;
		box_t side[2];
		bound_clear(&side[0]);
		bound_clear(&side[1]);
		for (uint32_t i = 0; i < m; ++i) pairs_grow(&side[i >= r], &s[ord[i]].box);
		double score = 0.0;
		for (int d = 0; d < DIM; ++d) {
			double w = (double)whole.max[d] - whole.min[d];
			if (!(w > 0.0)) continue;
			for (int h = 0; h < 2; ++h) score += (w - ((double)side[h].max[d] - side[h].min[d])) / w;
		}
		if (score > best_score) best = a, best_score = score;
	}
	if (best < 0 && m < n) {
		// The sample is one point; the whole may not be: cut on any coordinate that varies.
		for (int a = 0; a < 2 * DIM && best < 0; ++a)
			for (uint32_t i = 1; i < n; ++i)
				if (own_key(&e[i], a) != own_key(&e[0], a)) {
					best = a;
					break;
				}
	}
	return best;
}

/// The least and greatest of each coordinate a over e[0, n) (n > 0), into
/// lo[a] and hi[a].
static void own_key_span(const entry *e, uint32_t n, float *lo, float *hi)
{
	for (int a = 0; a < 2 * DIM; ++a) lo[a] = hi[a] = own_key(&e[0], a);
	for (uint32_t i = 1; i < n; ++i)
		for (int a = 0; a < 2 * DIM; ++a) {
			float k = own_key(&e[i], a);
			if (k < lo[a]) lo[a] = k;
			if (k > hi[a]) hi[a] = k;
		}
}

/// Coordinates own_axis weighs at a cut of two chunks or less (the last cut
/// of a layout, about half of all it makes).
#define OWN_LAST_COORDS 2

/// The OWN_LAST_COORDS coordinates (a bit each) whose spread over e[0, n) is
/// widest against the whole's extent on their axis: own_axis weighs only
/// them at a layout's last cuts, in O(DIM n) more, not 2 DIM parts of the
/// sample. (Choosing by the spread alone cost box queries among 2D boxes all
/// holding one point 22% more work, tight; weighing all, 2D rods, tight,
/// spent 45% of a remove + insert in own_axis.)
static unsigned own_axis_candidates(const entry *e, uint32_t n)
{
	float lo[2 * DIM], hi[2 * DIM], score[2 * DIM];
	own_key_span(e, n, lo, hi);
	for (int a = 0; a < 2 * DIM; ++a) {
		float w = hi[DIM + a % DIM] - lo[a % DIM];
		score[a] = w > 0.0f ? (hi[a] - lo[a]) / w : 0.0f;
	}
	unsigned coords = 0;
	for (int c = 0; c < OWN_LAST_COORDS; ++c) {
		int best = -1;
		for (int a = 0; a < 2 * DIM; ++a)
			if (!(coords >> a & 1) && (best < 0 || score[a] > score[best])) best = a;
		coords |= 1u << best;
	}
	return coords;
}

/// The kd layout's smallest part, in entries: a multiple of CHUNK_CAP, so
/// every cut is at a chunk boundary. It is 8 whatever the chunk size: with
/// 2D chunks of 4, cutting down to single chunks made a pile of straddlers
/// (20,000 boxes across the centre line, tight) cost 1.41x the instructions
/// of chunks of 8 to build and churn, for a box query's pruning inside
/// parts the size of one 8-entry chunk's.
#define OWN_GRAIN (CHUNK_CAP > 8 ? CHUNK_CAP : 8)
_Static_assert(OWN_GRAIN % CHUNK_CAP == 0, "the layout cuts at chunk boundaries");

/// Lay out e[0, n) in kd order (see the top), cut at chunk boundaries, the
/// first of its chunks at position `at` of a run: each cut at the position
/// inside that is a multiple of the greatest power of two, so each side
/// fills whole groups of the run's hierarchy where it can. At 0 that is the
/// greatest power of two below the chunks (a multiple of OWN_GRAIN entries:
/// OWN_GRAIN / CHUNK_CAP is 1 or 2); a family's block (Families) starts
/// further in.
static void own_order(entry *e, uint32_t n, uint32_t at)
{
	while (n > OWN_GRAIN) {
		uint32_t last = at + (n + CHUNK_CAP - 1) / CHUNK_CAP - 1, high = 1;
		while ((at ^ last) >= high * 2) high *= 2; // the highest bit in which the two differ
		uint32_t cut = ((last & ~(high - 1)) - at) * CHUNK_CAP;
		unsigned all = (1u << 2 * DIM) - 1, coords = n <= 2 * OWN_GRAIN ? own_axis_candidates(e, n) : all;
		int best = own_axis(e, n, cut, coords);
		if (best < 0) return; // all one point: any order
		own_select(e, n, cut, best);
		// The smaller side by recursion, the larger by the loop: O(log n) deep.
		if (cut <= n - cut) {
			own_order(e, cut, at);
			e += cut;
			n -= cut;
			at += cut / CHUNK_CAP;
		} else {
			own_order(e + cut, n - cut, at + cut / CHUNK_CAP);
			n = cut;
		}
	}
}

// ---- families ------------------------------------------------------------------------

/// Families a merge parts its entries into, at most.
#define OWN_FAMILIES 8
/// A merge of fewer chunks is laid out whole (tree_ownidx.h: Families).
/// From 16 chunks up, shuffled pinwheels tested 1 to 4% fewer entries and
/// groups in box queries (tests/test_adversarial.c), but lists of other kinds paid: 3D crossing rods
/// under leaves placement 11% more in box queries, strips between rows 9%
/// more in rays (tight), and remove + insert up to 20% more upkeep.
#define OWN_FAMILY_RUN 64
/// Entries a family must hold to be parted further: eight chunks.
#define OWN_FAMILY_MIN (8 * CHUNK_CAP)
/// Entries sampled to find a gap. Fewer show wider gaps between their
/// values: with 32, 3D crossing rods (three families a fifth of the extent
/// apart) were parted, and their 10 nearest cost more (tests/
/// test_adversarial.c, above pinwheel_tree_query_cap); with 64 they are not.
/// With the parting passes, the parting costs a one-by-one build of 20000
/// strips 1 to 2% more work (tests/test_ownidx.c: 2D, 3D), of a pinwheel's
/// strips 2.5 to 4% (its three rounds part every entry three times).
#define OWN_FSAMPLE 64
/// A gap parts a family when it is at least 1 / OWN_FGAP of its bound's
/// longest side: a pinwheel's arms are 59% to 80% apart; at a fifth, 3D
/// crossing rods (a fifth apart) were parted as well, and their nearest
/// searches cost 1.4 to 1.5 times more.
#define OWN_FGAP 3

/// Part e[0, n) across the widest gap on one of its 2 * DIM coordinates, if
/// the sample shows one of at least 1 / OWN_FGAP of its bound's longest
/// side: the entries below the gap's middle first. Their count, or 0 (no
/// gap). The longest side, not the gap's own axis: sheets of strips 1000
/// long stacked 0.9 apart are one family (measured on its axis, 3D thin
/// strips parted in three, and box queries among them under leaves placement
/// tested 18% more).
///
/// The widest gap of m sampled values is found in O(m) by the pigeonhole
/// rule: with m - 1 buckets over their range, each a (range / (m - 1)) wide,
/// some bucket is empty, so the widest gap is between one bucket's greatest
/// and the next nonempty one's least.
static uint32_t own_gap_split(entry *e, uint32_t n)
{
	enum { M = OWN_FSAMPLE };
	uint32_t m = n < M ? n : M, step = n / m;
	if (m < 4) return 0;
	float lo[2 * DIM], hi[2 * DIM], bmin[M], bmax[M];
	for (int a = 0; a < 2 * DIM; ++a) lo[a] = hi[a] = own_key(&e[0], a);
	for (uint32_t i = 1; i < m; ++i)
		for (int a = 0; a < 2 * DIM; ++a) {
			float k = own_key(&e[i * step], a);
			if (k < lo[a]) lo[a] = k;
			if (k > hi[a]) hi[a] = k;
		}
	WORK_CHURN(2 * DIM * 3 * m);
	int best = -1;
	float best_score = 1.0f / OWN_FGAP, cut = 0.0f, w = 0.0f;
	for (int d = 0; d < DIM; ++d)
		if (hi[DIM + d] - lo[d] > w) w = hi[DIM + d] - lo[d];
	for (int a = 0; a < 2 * DIM; ++a) {
		float span = hi[a] - lo[a];
		// Too narrow a spread to hold the gap, or not finite.
		if (!(span >= w * best_score) || !(w > 0.0f) || !(span < INFINITY)) continue;
		uint32_t buckets = m - 1;
		for (uint32_t b = 0; b < buckets; ++b) bmin[b] = INFINITY, bmax[b] = -INFINITY;
		float scale = (float)buckets / span;
		if (!(scale < INFINITY)) continue; // a span too small to scale
		for (uint32_t i = 0; i < m; ++i) {
			float k = own_key(&e[i * step], a);
			uint32_t b = (uint32_t)((k - lo[a]) * scale);
			if (b >= buckets) b = buckets - 1;
			if (k < bmin[b]) bmin[b] = k;
			if (k > bmax[b]) bmax[b] = k;
		}
		float prev = bmax[0]; // the least value's bucket is never empty
		for (uint32_t b = 1; b < buckets; ++b) {
			if (!(bmin[b] <= bmax[b])) continue;
			float score = (bmin[b] - prev) / w;
			if (score > best_score) best = a, best_score = score, cut = prev + 0.5f * (bmin[b] - prev);
			prev = bmax[b];
		}
	}
	if (best < 0) return 0;
	WORK_CHURN(n);
	uint32_t i = 0, j = n;
	while (i < j) {
		if (own_key(&e[i], best) < cut) {
			++i;
		} else {
			entry tmp = e[i];
			e[i] = e[--j];
			e[j] = tmp;
		}
	}
	return i < n ? i : 0;
}

/// Part e[0, n) into families (tree_ownidx.h: Families): contiguous parts,
/// family f at e[at[f], at[f + 1]); their count, 1 when no gap parts them.
/// Each part is parted again until no gap shows or OWN_FAMILIES are found:
/// the four arms of a pinwheel part in three rounds. Cost: O(DIM
/// OWN_FSAMPLE) a try (at most 2 OWN_FAMILIES of them) and O(n) a round.
static uint32_t own_families(entry *e, uint32_t n, uint32_t at[OWN_FAMILIES + 1])
{
	uint32_t count = 1;
	at[0] = 0;
	at[1] = n;
	for (uint32_t f = 0; f < count && count < OWN_FAMILIES;) {
		uint32_t len = at[f + 1] - at[f], left = len >= OWN_FAMILY_MIN ? own_gap_split(e + at[f], len) : 0;
		if (!left) {
			++f;
			continue;
		}
		memmove(&at[f + 2], &at[f + 1], (count - f) * sizeof *at);
		at[f + 1] = at[f] + left;
		++count;
	}
	return count;
}

/// A block of a run's positions: `chunks` chunks of entries from src, then
/// `pad` padding positions.
typedef struct own_block {
	entry *src;
	uint32_t chunks, pad, align;
} own_block;

/// Lay out e[0, n) (n entries for `chunks` chunks) as the blocks of one run
/// (tree_ownidx.h: Families): each family's full chunks in kd order, padded
/// to a multiple of its alignment, the blocks in falling alignment, then the
/// families' leftover entries (fewer than a chunk each) in kd order in `mixed`,
/// a block of their own. The blocks into block[]; their count. One block of
/// every chunk, in kd order, when no gap parts the entries.
static uint32_t own_plan(entry *e, uint32_t n, uint32_t chunks, entry *mixed, own_block block[OWN_FAMILIES + 1])
{
	uint32_t at[OWN_FAMILIES + 1], count = chunks >= OWN_FAMILY_RUN ? own_families(e, n, at) : 1, blocks = 0, left = 0;
	if (count == 1) {
		own_order(e, n, 0);
		block[0] = (own_block){e, chunks, 0, 1};
		return 1;
	}
	for (uint32_t f = 0; f < count; ++f) {
		uint32_t len = at[f + 1] - at[f], c = len / CHUNK_CAP, rest = len - c * CHUNK_CAP;
		memcpy(&mixed[left], &e[at[f] + c * CHUNK_CAP], rest * sizeof *e);
		left += rest;
		if (c == 0) continue;
		// The largest power of OWN_GROUP whose multiple pads the family by a
		// quarter of its chunks or less (the padding only grows with it).
		uint32_t align = 1;
		while ((c + align * OWN_GROUP - 1) / (align * OWN_GROUP) * (align * OWN_GROUP) - c <= c / 4) align *= OWN_GROUP;
		own_block x = {&e[at[f]], c, (c + align - 1) / align * align - c, align};
		uint32_t k = blocks++;
		for (; k > 0 && block[k - 1].align < align; --k) block[k] = block[k - 1];
		block[k] = x;
	}
	uint32_t start_of_mixed = 0;
	for (uint32_t b = 0; b < blocks; start_of_mixed += block[b].chunks + block[b].pad, ++b)
		own_order(block[b].src, block[b].chunks * CHUNK_CAP, start_of_mixed);
	if (left) {
		own_order(mixed, left, start_of_mixed);
		block[blocks++] = (own_block){mixed, (left + CHUNK_CAP - 1) / CHUNK_CAP, 0, 1};
	}
	return blocks;
}

/// Entries own_layout lays out in Z order, at most (own_zorder's keys name
/// one in 8 bits).
#define OWN_ZMAX 256
/// Bits a coordinate gets in own_zkey: 2 * DIM coordinates fill 24 bits, and
/// a key's low 8 bits name one of at most OWN_ZMAX entries (own_zorder).
#define OWN_ZBITS (24 / (2 * DIM))

/// q's OWN_ZBITS bits spread 2 * DIM apart (bit b to bit 2 * DIM * b).
static inline uint32_t own_spread(uint32_t q)
{
#if DIM == 2
	_Static_assert(OWN_ZBITS == 6, "four coordinates of six bits");
	q = (q | q << 12) & 0x000F000Fu;
	q = (q | q << 6) & 0x03030303u;
	return (q | q << 3) & 0x11111111u;
#else
	// Copies of q's 4 bits at every 5th bit do not overlap (no carries), and
	// copy b puts bit b at 5 b + b.
	_Static_assert(OWN_ZBITS == 4, "six coordinates of four bits");
	return (q * 0x8421u) & 0x041041u;
#endif
}

/// Entry e's place on a Z curve through the 2 * DIM coordinates of its box
/// (min then max, as own_key reads them), each offset by lo[a] and scaled by
/// scale[a] (OWN_ZBITS-bit steps per unit).
static inline uint32_t own_zkey(const entry *e, const float *lo, const float *scale)
{
	uint32_t key = 0, top = (1u << OWN_ZBITS) - 1;
	for (int a = 0; a < 2 * DIM; ++a) {
		float f = (own_key(e, a) - lo[a]) * scale[a];
		uint32_t q = f > 0.0f ? (f < (float)top ? (uint32_t)f : top) : 0; // a NaN (an infinite coordinate) counts as 0
		key |= own_spread(q) << a;
	}
	return key;
}

/// Lay out e[0, n) (n at most OWN_ZMAX) in Z order of their boxes as points
/// in 2 * DIM dimensions (own_zkey): a radix sort of the keys, each with its
/// entry's index in the low 8 bits, O(n) where own_order's cuts are O(n log n)
/// with a large constant. key is scratch for 2 n keys, out for n entries.
static void own_sort_ids(uint32_t *a, uint32_t *tmp, uint32_t n);
static void own_zorder(entry *e, uint32_t n, uint32_t *key, entry *out)
{
	assert(n <= OWN_ZMAX);
	if (n <= 1) return;
	WORK_CHURN(n);
	float lo[2 * DIM], hi[2 * DIM], scale[2 * DIM];
	own_key_span(e, n, lo, hi);
	// Both coordinates on axis d are scaled over the whole's extent on d (the
	// least min to the greatest max), as own_axis weighs a cut: ends of long
	// boxes that differ by a hair of the whole make no split of the curve's
	// top bits, the axis where the boxes are apart does.
	for (int d = 0; d < DIM; ++d) {
		float w = hi[DIM + d] - lo[d];
		lo[DIM + d] = lo[d];
		scale[d] = scale[DIM + d] = w > 0.0f ? (float)(1u << OWN_ZBITS) / w : 0.0f;
	}
	for (uint32_t i = 0; i < n; ++i) key[i] = own_zkey(&e[i], lo, scale) << 8 | i;
	own_sort_ids(key, key + n, n);
	for (uint32_t i = 0; i < n; ++i) out[i] = e[key[i] & 255u];
	memcpy(e, out, (size_t)n * sizeof *e);
}

/// Lay out e[0, n) for a foreign run: own_zorder when n is at most
/// OWN_ZMAX, else own_order. Every removal from a run chunk makes a foreign
/// record, and the logarithmic method lays each out again at every level of
/// the foreign runs: the small levels are most of those layouts (with
/// own_order for all, 2D rods under tight placement spent 40% of a remove +
/// insert there), and a small run's groups are few. The big runs hold most
/// records and keep kd order, whose cuts part boxes better than a Z curve's
/// jumps: 2D boxes all holding one point, tight, churned, cost box queries
/// 1.73 times a fresh index's work with kd order for every fold, 3.35 with
/// Z order for every fold, 2.36 with it up to OWN_ZMAX (tests/test_ownidx.c).
static void own_layout(entry *e, uint32_t n, uint32_t *key, entry *out)
{
	if (n <= OWN_ZMAX)
		own_zorder(e, n, key, out);
	else
		own_order(e, n, 0);
}

/// Scratch bytes own_merge and own_fmerge ask for: `entries` entries, then
/// 2 `ids` ids (and, at *zat, own_layout's keys and copy of the entries
/// when there are at most OWN_ZMAX).
static size_t own_scratch_need(uint32_t entries, uint32_t ids, size_t *zat)
{
	size_t ebytes = (size_t)entries * sizeof(entry), at = (ebytes + 2 * (size_t)ids * sizeof(uint32_t) + 7) & ~(size_t)7;
	*zat = at;
	return entries <= OWN_ZMAX ? at + 2 * (size_t)entries * sizeof(uint32_t) + ebytes : at;
}

/// Sort ids a[0, n) ascending, tmp[0, n) the scratch: a radix sort by bytes,
/// skipping a byte all ids share (the run's ids come as a few ascending
/// stretches, and qsort's comparisons through a pointer were a tenth of a
/// churned list's upkeep).
static void own_sort_ids(uint32_t *a, uint32_t *tmp, uint32_t n)
{
	if (n < 32) {
		for (uint32_t i = 1; i < n; ++i) {
			uint32_t x = a[i], q = i;
			for (; q > 0 && a[q - 1] > x; --q) a[q] = a[q - 1];
			a[q] = x;
		}
		return;
	}
	uint32_t *from = a, *to = tmp;
	for (int shift = 0; shift < 32; shift += 8) {
		uint32_t at[256] = {0};
		for (uint32_t i = 0; i < n; ++i) at[from[i] >> shift & 255u]++;
		if (at[from[0] >> shift & 255u] == n) continue; // every id has this byte
		for (uint32_t b = 0, sum = 0; b < 256; ++b) {
			uint32_t c = at[b];
			at[b] = sum;
			sum += c;
		}
		for (uint32_t i = 0; i < n; ++i) to[at[from[i] >> shift & 255u]++] = from[i];
		uint32_t *x = from;
		from = to;
		to = x;
	}
	if (from != a) memcpy(a, from, (size_t)n * sizeof *a);
}

// ---- runs -------------------------------------------------------------------------

/// The bounds of run r from its entries (laid out in its chunks).
/// Run r is walk-numbered: a foreign run's positions are single entries.
static void own_run_bounds(const tree_t *t, struct ownidx *ix, uint32_t r, uint32_t head, uint32_t head_n)
{
	own_run *rn = r < OWN_RUNS ? &ix->run[r] : &ix->frun[r - OWN_RUNS];
	size_t start = own_run_start(ix, r);
	box_t *base = &t->own_bounds[2 * start];
	uint32_t *least = &t->own_least[2 * start];
	uint32_t size = rn->size, off = 0, l = 0;
	WORK_CHURN(2 * size);
	for (uint32_t p = 0; p < size; ++p) {
		uint32_t id = t->own_ids[start + p], lo = UINT32_MAX;
		const entry *e = r < OWN_RUNS ? t->chunks[id].e : entry_at(t, id);
		uint32_t fill = r >= OWN_RUNS ? 1 : id == head ? head_n : CHUNK_CAP;
		if (p > 0 && id == t->own_ids[start + p - 1]) fill = 0; // padding
		box_t b;
		bound_clear(&b);
		for (uint32_t k = 0; k < fill; ++k) {
			pairs_grow(&b, &e[k].box);
			if (e[k].item + 1 < lo) lo = e[k].item + 1;
		}
		base[p] = b;
		least[p] = lo;
	}
	rn->off[0] = 0;
	while (size > 1) {
		uint32_t up = (size + OWN_GROUP - 1) / OWN_GROUP;
		assert(l + 1 < OWN_LEVELS);
		rn->off[l + 1] = off + size;
		for (uint32_t p = 0; p < up; ++p) {
			box_t b;
			bound_clear(&b);
			uint32_t lo = UINT32_MAX;
			for (uint32_t q = p * OWN_GROUP; q < p * OWN_GROUP + OWN_GROUP && q < size; ++q) {
				pairs_grow(&b, &base[off + q]);
				if (least[off + q] < lo) lo = least[off + q];
			}
			base[off + size + p] = b;
			least[off + size + p] = lo;
		}
		off += size;
		size = up;
		++l;
	}
	rn->levels = l + 1;
	assert(off + 1 <= 2 * rn->size);
}

/// Make runs j.. of ni's index, and the chain chunks after the first `keep`
/// that are in no run, one new run j. keep 0 takes every chunk (the head may
/// be partly filled), keep 1 leaves the head in the tail (every chunk taken is
/// full; with j 0 the head may have been in a run). A full rebuild (j 0)
/// keeps the head: the inserts that fill it, and the removals that take its
/// last entry, then touch no run (in a run, each insert and each refill of a
/// removal's hole from it made a foreign slot, two for every remove + insert).
/// False, with nothing changed, without memory.
static bool own_merge(tree_t *t, uint32_t ni, uint32_t keep, uint32_t j)
{
	node *n = &t->nodes[ni];
	struct ownidx *ix = own_mut(t, ni);
	uint32_t take = ix->tail;
	for (uint32_t r = j; r < ix->nruns; ++r) take += ix->run[r].live;
	assert(take >= keep);
	take -= keep;
	if (take == 0) return true;
	uint32_t first = j ? ix->run[j - 1].first + ix->run[j - 1].size : 0;
	uint32_t entries = keep ? take * CHUNK_CAP : n->count;
	size_t ebytes = (size_t)entries * sizeof(entry);
	// Every position kept while the foreign marks of the runs taken are read;
	// room for the padding the families may take (a quarter of the chunks).
	uint32_t end = ix->nruns ? ix->run[ix->nruns - 1].first + ix->run[ix->nruns - 1].size : 0;
	uint32_t most = first + take + (take >= OWN_FAMILY_RUN ? take / 4 : 0);
	if (!own_room(t, ix, most > end ? most : end, end) ||
	    !own_scratch_reserve(t, ebytes + 2 * (size_t)take * sizeof(uint32_t)))
		return false;
	n = &t->nodes[ni];
	// The entries taken are laid out anew: none stays foreign.
	if (j == 0) { // every run taken: every mark goes
		ix->nfruns = ix->ftail = ix->flive = ix->fdead = 0;
	} else {
		for (uint32_t r = j; r < ix->nruns; ++r)
			for (uint32_t p = 0; p < ix->run[r].size; ++p) {
				uint8_t *skip = own_skip_at(t, ix, r, p);
				for (uint32_t b = 0; *skip; ++b)
					if (*skip >> b & 1) own_unforeign(t, ix, own_ids(t, ix)[ix->run[r].first + p] * CHUNK_CAP + b, skip);
			}
	}
	entry *es = t->own_scratch;
	uint32_t *ids = (uint32_t *)(void *)((char *)t->own_scratch + ebytes);
	// The chunks taken are a stretch of the chain (tree_ownidx.h: Layout).
	uint32_t c = n->head, before = NIL, got = 0, k = 0;
	for (uint32_t s = 0; s < keep; ++s) before = c, c = t->chunks[c].next;
	for (; got < take; ++got) {
		uint32_t fill = c == n->head ? head_fill(n->count) : CHUNK_CAP;
		memcpy(&es[k], t->chunks[c].e, fill * sizeof(entry));
		k += fill;
		ids[got] = c;
		c = t->chunks[c].next;
	}
	uint32_t rest = c;
	assert(k == entries);
	WORK_CHURN(entries);
	entry mixed[OWN_FAMILIES * CHUNK_CAP];
	own_block block[OWN_FAMILIES + 1];
	uint32_t blocks = own_plan(es, entries, take, mixed, block);
	own_sort_ids(ids, ids + take, take);
	// The k-th chunk laid out is the k-th least id; a padding position
	// repeats the id before it (tree_ownidx.h: Families).
	uint32_t *pid = &own_ids(t, ix)[first], size = 0, laid = 0, pads = 0;
	for (uint32_t b = 0; b < blocks; ++b) {
		const own_block *x = &block[b];
		for (uint32_t p = 0; p < x->chunks; ++p, ++laid) {
			uint32_t fill = b + 1 == blocks && p + 1 == x->chunks ? entries - laid * CHUNK_CAP : CHUNK_CAP;
			for (uint32_t q = 0; q < fill; ++q) {
				const entry *e = &x->src[p * CHUNK_CAP + q];
				t->chunks[ids[laid]].e[q] = *e;
				item *it = &t->items[e->item];
				if (item_node(t, e->item) == ni) it->addr = ids[laid] * CHUNK_CAP + q; // its home copy
			}
			pid[size++] = ids[laid];
		}
		for (uint32_t p = 0; p < x->pad; ++p) pid[size++] = ids[laid - 1];
		pads += x->pad;
	}
	assert(laid == take && size == take + pads && size <= most - first);
	// Relink: a partly filled last chunk (keep 0) becomes the head.
	if (keep) {
		t->chunks[before].next = ids[0];
		for (uint32_t p = 0; p + 1 < take; ++p) t->chunks[ids[p]].next = ids[p + 1];
		t->chunks[ids[take - 1]].next = rest;
	} else {
		assert(rest == NIL);
		n->head = ids[take - 1];
		t->chunks[ids[take - 1]].next = take > 1 ? ids[0] : NIL;
		for (uint32_t p = 0; p + 1 < take; ++p) t->chunks[ids[p]].next = p + 2 < take ? ids[p + 1] : NIL;
	}
	for (uint32_t r = j; r < ix->nruns; ++r) ix->dead -= ix->run[r].size - ix->run[r].live - ix->run[r].pad;
	memset(&t->own_skip[ix->base + first], 0, size);
	ix->run[j] = (own_run){.first = first, .size = size, .live = take, .pad = pads};
	ix->nruns = j + 1;
	ix->tail = keep;
	// What stays in the tail is the head alone (keep 1), or nothing.
	ix->tail_least = UINT32_MAX;
	if (keep)
		for (uint32_t q = 0, fill = head_fill(n->count); q < fill; ++q)
			if (t->chunks[n->head].e[q].item + 1 < ix->tail_least) ix->tail_least = t->chunks[n->head].e[q].item + 1;
	for (uint32_t f = 0; f < ix->ftail; ++f) { // the foreign tail's least is the tail's
		uint32_t id = entry_at(t, t->own_ids[own_ftail_start(ix) + f])->item + 1;
		if (id < ix->tail_least) ix->tail_least = id;
	}
	if (j == 0) ix->stale = 0;
	own_run_bounds(t, ix, j, n->head, head_fill(n->count));
	return true;
}

/// Make foreign runs j.. and the foreign tail one foreign run j, their dead
/// records dropped: the entries at the live records' addresses laid out in
/// spatial order over those addresses, ascending (as own_merge does with
/// chunks). False, with nothing changed, without memory.
static bool own_fmerge(tree_t *t, uint32_t ni, uint32_t j)
{
	struct ownidx *ix = own_mut(t, ni);
	uint32_t take = ix->ftail, dropped = 0;
	for (uint32_t r = j; r < ix->nfruns; ++r) take += ix->frun[r].live, dropped += ix->frun[r].size - ix->frun[r].live;
	uint32_t first = j ? ix->frun[j - 1].first + ix->frun[j - 1].size : 0;
	size_t ebytes = (size_t)take * sizeof(entry), zat;
	if (!own_scratch_reserve(t, own_scratch_need(take, take, &zat))) return false;
	entry *es = t->own_scratch;
	uint32_t *addr = (uint32_t *)(void *)((char *)t->own_scratch + ebytes), got = 0;
	uint32_t *zkey = (uint32_t *)(void *)((char *)t->own_scratch + zat);
	entry *zout = (entry *)(void *)(zkey + 2 * (size_t)take);
	for (uint32_t r = j; r < ix->nfruns; ++r) {
		size_t start = own_run_start(ix, OWN_RUNS + r);
		for (uint32_t p = 0; p < ix->frun[r].size; ++p)
			if (!box_inverted(&t->own_bounds[2 * start + p])) addr[got++] = t->own_ids[start + p];
	}
	for (uint32_t f = 0; f < ix->ftail; ++f) addr[got++] = t->own_ids[own_ftail_start(ix) + f];
	assert(got == take);
	// The records gathered, the region may move keeping only the runs before j.
	if (!own_room_in(t, &ix->fbase, &ix->fcap, first + take, first)) return false;
	own_sort_ids(addr, addr + take, take);
	WORK_CHURN(take);
	for (uint32_t i = 0; i < take; ++i) es[i] = *entry_at(t, addr[i]);
	own_layout(es, take, zkey, zout);
	for (uint32_t i = 0; i < take; ++i) {
		*entry_at(t, addr[i]) = es[i];
		item *it = &t->items[es[i].item];
		if (item_node(t, es[i].item) == ni) it->addr = addr[i]; // its home copy
		t->own_ids[ix->fbase + first + i] = addr[i];
	}
	ix->fdead -= dropped;
	ix->ftail = 0;
	ix->nfruns = j;
	if (take) {
		ix->frun[j] = (own_run){.first = first, .size = take, .live = take};
		ix->nfruns = j + 1;
		own_run_bounds(t, ix, OWN_RUNS + j, NIL, 0);
	}
	return true;
}

/// The level of a run of `size` positions, folds starting at `base`: 0
/// below base * OWN_FAN, one more for every factor of OWN_FAN past it.
static uint32_t own_level(uint32_t size, uint32_t base)
{
	uint32_t l = 0;
	for (uint64_t s = (uint64_t)base * OWN_FAN; s <= size; s *= OWN_FAN) ++l;
	return l;
}

/// The first of runs[0, j) (of at most `most`) that a fold of `gathered`
/// new positions takes in with it, as a counter in base OWN_FAN carries:
/// the newest runs of the level of what is gathered, when they and it make
/// OWN_FAN runs of that level (tree_ownidx.h: Layout). A run much smaller
/// than what is gathered (its positions released) is taken as well, and the
/// newest when every run is used.
static uint32_t own_fold_from(const own_run *runs, uint32_t j, uint32_t most, uint32_t gathered, uint32_t base)
{
	for (;;) {
		if (j > 0 && ((uint64_t)own_run_chunks(&runs[j - 1]) * OWN_FAN <= gathered || j == most)) {
			gathered += runs[--j].live;
			continue;
		}
		uint32_t level = own_level(gathered, base), same = 0;
		while (same < j && same + 1 < OWN_FAN && own_level(own_run_chunks(&runs[j - 1 - same]), base) == level) ++same;
		if (gathered < base || same + 1 < OWN_FAN) return j;
		for (; same > 0; --same) gathered += runs[--j].live;
	}
}

/// Fold node ni's foreign tail into the foreign runs (a binary counter, as
/// own_settle folds the tail), or rebuild them all when dead records pass
/// the live.
static void own_fsettle(tree_t *t, uint32_t ni)
{
	struct ownidx *ix = own_mut(t, ni);
	if (!own_ffold_due(ix)) return;
	uint32_t j = 0;
	if (ix->fdead <= ix->flive + OWN_FTAIL) j = own_fold_from(ix->frun, ix->nfruns, OWN_FRUNS, ix->ftail, OWN_FTAIL + 1);
	own_fmerge(t, ni, j);
}

/// Make, fold, rebuild or drop node ni's index as its list now asks.
static void own_settle(tree_t *t, uint32_t ni)
{
	node *n = &t->nodes[ni];
	if (!(n->flags & NODE_OWNIDX)) {
		if (n->count < OWN_MIN) return;
		if (!own_attach(t, ni)) return;
		if (!own_merge(t, ni, 1, 0)) own_drop(t, ni);
		return;
	}
	if (n->count < OWN_MIN / 2) {
		own_drop(t, ni);
		return;
	}
	struct ownidx *ix = own_mut(t, ni);
	uint32_t chunks = (n->count + CHUNK_CAP - 1) / CHUNK_CAP;
	if (own_rebuild_due(ix, chunks)) {
		own_merge(t, ni, 1, 0);
		return;
	}
	own_fsettle(t, ni);
	ix = own_mut(t, ni);
	if (ix->tail <= OWN_TAIL) return;
	// The tail but its head becomes a run; a newest run under OWN_BASE
	// chunks takes it in (see tree_ownidx.h).
	uint32_t j = ix->nruns, gathered = ix->tail - 1;
	if (j > 0 && own_run_chunks(&ix->run[j - 1]) < OWN_BASE) gathered += ix->run[--j].live;
	own_merge(t, ni, 1, own_fold_from(ix->run, j, OWN_RUNS, gathered, OWN_BASE));
}

/// Settle every marked node (every node, past OWN_OWED of them). A node
/// whose settle gets no memory stays marked, and own_refused says so.
static void own_settle_owed(tree_t *t)
{
	uint32_t len = t->own_owed_len;
	bool all = t->own_owed_all;
	t->own_owed_len = 0;
	t->own_owed_all = false;
	// Re-marking writes at most one entry per entry read, behind the reading.
	for (uint32_t k = 0; k < (all ? t->node_len : len); ++k) {
		uint32_t ni = all ? k : t->own_owed[k];
		node *n = &t->nodes[ni];
		// A node freed since its marking lost the mark (node_release, node_new).
		if ((n->flags & NODE_FREE) || (!all && !(n->flags & NODE_OWED))) continue;
		n->flags &= (uint8_t)~NODE_OWED;
		if (!own_owes(t, ni)) continue;
		own_settle(t, ni);
		own_note(t, ni);
	}
	t->own_refused = t->own_owed_len || t->own_owed_all;
}

/// Index every big own list (after a batched build wrote the nodes directly).
static void own_settle_all(tree_t *t)
{
	t->own_owed_all = true;
	own_settle_owed(t);
}

// ---- validate -----------------------------------------------------------------------

/// Whether node ni is marked in the tree's list of nodes owing a settle.
static bool own_listed(const tree_t *t, uint32_t ni)
{
	if (t->own_owed_all) return true;
	for (uint32_t k = 0; k < t->own_owed_len && k < OWN_OWED; ++k)
		if (t->own_owed[k] == ni) return true;
	return false;
}

/// Whether a run's (a chunk run's or a foreign one's) sizes are sane and its
/// levels are where own_run_bounds puts them.
static bool own_check_shape(const own_run *rn)
{
	if (rn->size == 0 || (uint64_t)rn->live + rn->pad > rn->size || rn->levels == 0 || rn->levels > OWN_LEVELS) return false;
	for (uint32_t l = 0, off = 0, size = rn->size; l < rn->levels; ++l) {
		if (rn->off[l] != off || (size == 1) != (l + 1 == rn->levels)) return false;
		off += size;
		size = (size + OWN_GROUP - 1) / OWN_GROUP;
	}
	return true;
}

/// Whether the foreign record of address a is right: its slot marked in a
/// live run chunk, below the chunk's fill.
static bool own_check_slot(const tree_t *t, const struct ownidx *ix, uint32_t ni, uint32_t a)
{
	uint32_t r, pos;
	const node *n = &t->nodes[ni];
	if (a / CHUNK_CAP >= t->chunk_len || !own_find(t, ix, a / CHUNK_CAP, &r, &pos)) return false;
	uint32_t fill = a / CHUNK_CAP == n->head ? head_fill(n->count) : CHUNK_CAP;
	return a % CHUNK_CAP < fill && (*own_skip_at(t, ix, r, pos) >> (a % CHUNK_CAP) & 1);
}

/// Whether ix's foreign records match the `marks` marked slots of its run
/// chunks, one live record each, and bound their entries; a message when not.
static const char *own_check_foreign(const tree_t *t, uint32_t ni, const struct ownidx *ix, uint32_t marks)
{
	if (ix->nfruns > OWN_FRUNS) return "own-list index: too many foreign runs";
	uint32_t first = 0, records = 0, dead = 0;
	for (uint32_t r = 0; r < ix->nfruns; ++r) {
		const own_run *rn = &ix->frun[r];
		if (rn->first != first || (uint64_t)rn->first + rn->size > ix->fcap) return "own-list index: foreign runs not laid end to end";
		if (!own_check_shape(rn)) return "own-list index: foreign run sizes or levels";
		size_t start = own_run_start(ix, OWN_RUNS + r);
		const box_t *base = &t->own_bounds[2 * start];
		const uint32_t *least = &t->own_least[2 * start];
		uint32_t live = 0;
		for (uint32_t p = 0; p < rn->size; ++p) {
			uint32_t a = t->own_ids[start + p];
			if (p && a <= t->own_ids[start + p - 1]) return "own-list index: foreign addresses not ascending";
			if (box_inverted(&base[p])) continue;
			live++;
			if (!own_check_slot(t, ix, ni, a)) return "own-list index: a foreign record's slot is not marked";
			const entry *e = entry_at(t, a);
			for (uint32_t l = 0, q = p; l < rn->levels; ++l, q /= OWN_GROUP) {
				if (!box_within(&e->box, base[rn->off[l] + q].min, base[rn->off[l] + q].max))
					return "own-list index: a foreign group's bound misses its entry";
				if (e->item + 1 < least[rn->off[l] + q]) return "own-list index: a foreign entry's id below its group's least";
			}
		}
		if (live != rn->live) return "own-list index: foreign live count";
		records += live;
		dead += rn->size - live;
		first += rn->size;
	}
	if ((uint64_t)first + ix->ftail > ix->fcap) return "own-list index: foreign tail past its region";
	for (uint32_t f = 0; f < ix->ftail; ++f) {
		uint32_t a = t->own_ids[ix->fbase + first + f];
		if (!own_check_slot(t, ix, ni, a)) return "own-list index: a foreign tail address's slot is not marked";
		if (entry_at(t, a)->item + 1 < ix->tail_least) return "own-list index: a foreign tail entry's id below the tail's least";
	}
	records += ix->ftail;
	if (dead != ix->fdead) return "own-list index: foreign dead count";
	if (records != marks || marks != ix->flive) return "own-list index: foreign records and marked slots differ";
	return NULL;
}

/// Whether node ni's index describes its chain and is settled (between
/// public calls only a settle refused memory leaves it owing); a message when not.
static const char *own_check(const tree_t *t, uint32_t ni)
{
	const node *n = &t->nodes[ni];
	if (n->flags & NODE_OWED) {
		if (!own_listed(t, ni)) return "marked owing a settle, but not in the tree's list";
		if (!t->own_refused) return "still owes a settle after a mutation returned";
	} else if (!(n->flags & NODE_OWNIDX) && n->count >= OWN_MIN) {
		return "own list of OWN_MIN entries or more has no index, and no mark";
	}
	if (!(n->flags & NODE_OWNIDX)) return NULL;
	if (ni >= t->own_of_cap || t->own_of[ni] >= t->own_len) return "own-list index out of range";
	const struct ownidx *ix = own_get(t, ni);
	if (ix->node != ni) return "own-list index names another node";
	if (ix->nruns > OWN_RUNS) return "own-list index: too many runs";
	if ((uint64_t)ix->base + ix->cap > t->own_pool_len) return "own-list index: region outside the pools";
	if ((uint64_t)ix->fbase + ix->fcap > t->own_pool_len) return "own-list index: foreign region outside the pools";
	uint32_t c = n->head, dead = 0, marks = 0;
	for (uint32_t s = 0; s < ix->tail; ++s) {
		if (c == NIL) return "own-list index: tail longer than the chain";
		for (uint32_t k = 0, fill = c == n->head ? head_fill(n->count) : CHUNK_CAP; k < fill; ++k)
			if (t->chunks[c].e[k].item + 1 < ix->tail_least) return "own-list index: a tail entry's id below the tail's least";
		c = t->chunks[c].next;
	}
	for (uint32_t r = ix->nruns; r-- > 0;) {
		const own_run *rn = &ix->run[r];
		uint32_t expect = 0;
		for (uint32_t q = 0; q < r; ++q) expect += ix->run[q].size;
		if (rn->first != expect || (uint64_t)rn->first + rn->size > ix->cap) return "own-list index: runs not laid end to end";
		if (!own_check_shape(rn)) return "own-list index: run sizes or levels";
		if (rn->pad * 4 > own_run_chunks(rn)) return "own-list index: padding past a quarter of the chunks";
		dead += rn->size - rn->live - rn->pad;
		const box_t *base = &own_bounds(t, ix)[2 * rn->first];
		const uint32_t *ids = &own_ids(t, ix)[rn->first];
		uint32_t live = 0, pads = 0;
		for (uint32_t p = 0; p < rn->size; ++p) {
			if (p && ids[p] < ids[p - 1]) return "own-list index: ids not ascending";
			if (p && ids[p] == ids[p - 1]) { // padding (tree_ownidx.h: Families)
				pads++;
				if (!box_inverted(&base[p]) || own_least(t, ix)[2 * rn->first + p] != UINT32_MAX)
					return "own-list index: a padding position has a bound";
			}
			if (!box_inverted(&base[p])) live++;
			else if (t->own_skip[ix->base + rn->first + p]) return "own-list index: a released chunk has foreign marks";
		}
		if (live != rn->live) return "own-list index: live count";
		if (pads != rn->pad) return "own-list index: padding count";
		// The run's live chunks are the next rn->live of the chain, and every
		// entry is inside its chunk's bound and every group's above it.
		for (uint32_t s = 0; s < rn->live; ++s) {
			if (c == NIL) return "own-list index: chain shorter than the runs";
			uint32_t lo;
			if (!own_in_run(t, ix, r, c, &lo)) return "own-list index: chain chunk not in its run";
			uint32_t fill = c == n->head ? head_fill(n->count) : CHUNK_CAP, skip = t->own_skip[ix->base + rn->first + lo];
			if (skip >> fill) return "own-list index: a foreign mark past the chunk's fill";
			for (uint32_t k = 0; k < fill; ++k) {
				if (skip >> k & 1) { // in a foreign record's bounds, checked below
					marks++;
					continue;
				}
				const box_t *b = &t->chunks[c].e[k].box;
				uint32_t pos = lo;
				for (uint32_t l = 0; l < rn->levels; ++l, pos /= OWN_GROUP) {
					if (!box_within(b, base[rn->off[l] + pos].min, base[rn->off[l] + pos].max))
						return "own-list index: a group's bound misses an entry";
					if (t->chunks[c].e[k].item + 1 < own_least(t, ix)[2 * rn->first + rn->off[l] + pos])
						return "own-list index: an entry's id below its group's least";
				}
			}
			c = t->chunks[c].next;
		}
	}
	if (c != NIL) return "own-list index: chain chunks in no run and not in the tail";
	if (dead != ix->dead) return "own-list index: dead count";
	const char *why = own_check_foreign(t, ni, ix, marks);
	if (why) return why;
	if (!(n->flags & NODE_OWED)) {
		if (ix->tail > OWN_TAIL) return "own-list index: unindexed tail past the fold limit, and no mark";
		if (own_owes(t, ni)) return "own-list index: due a rebuild or a drop, and no mark";
	}
	return NULL;
}

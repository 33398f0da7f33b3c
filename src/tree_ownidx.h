// tree_ownidx.h: the index of a big own list (tree_ownidx.c), and the walk a
// query makes over a node's own entries with it.
//
// A loose or tight node keeps the entries that fit none of its children: long
// strips, boxes across a split line. A query that reaches the node used to
// test every one of them. Once a node's own list holds OWN_MIN entries it gets
// an index: its chunks are grouped into runs, each run a small implicit
// bounding-volume hierarchy (a chunk's bound at the bottom, a bound per
// OWN_GROUP chunks above, per OWN_GROUP^2 above that, ...), so a query
// descends the groups its shape meets and tests only their chunks.
//
// ## Layout
//
// The node's chunk chain stays the only home of its entries (the pair finder,
// splits and every other reader walk it as before). The index only groups it:
//
//   chain:  [tail: `tail` chunks][run k's live chunks]...[run 0's live chunks]
//
// The tail is the newest chunks, in no run; queries test them one by one, and
// when it passes OWN_TAIL chunks all of it but the head becomes a run, merged
// into the newest run while that holds fewer than OWN_BASE chunks. Runs are
// then folded as a counter in base OWN_FAN carries (Bentley and Saxe's
// logarithmic method): a run of level L holds about OWN_BASE * OWN_FAN^L
// chunks, and when a fold would leave OWN_FAN runs of one level they are
// merged into one of the next. Sizes fall geometrically, there are at most
// OWN_FAN - 1 runs a level, O(log m) in all, and each entry is laid out again
// log_FAN m times: the layout of a run of s chunks costs O(s log s), so a
// list built one by one costs O(m log^2 m / log FAN).
// Why 2, a binary counter: a query descends every run its shape meets (on
// straddlers and strips, every run: each holds every kind), so its work is
// the sum of the runs' levels, and which runs there are follows the list's
// length. A fan of 4 keeps up to three runs a level: 2D straddlers at 100k
// under leaves (79,440 capped at the root, 16 runs) tested 478 entries and
// bounds a box query, where other lengths of the same scene (5 to 7 runs)
// tested 98; the same query took 3.5 times as long, and the adversarial
// benchmark's ratio moved between 2.5 and 6.1 with the seed. With fan 2 there is a run a level at most, and the
// same scenes read 2.3 (3D pinwheels shuffled, leaves: 5.7 -> 3.7; 3D rods
// 6.3 -> 3.4). It lays each entry out log_2 m times, not log_4 m: paid for
// by own_axis scoring its sample in a sort of keys, not a selection of
// entries per coordinate (tree_ownidx.c), so 3D rods still build in the time
// they took with fan 4. (Fan 8 made 10 nearest among 3D boxes all holding
// one point test 25% more than 4.) So the tail is the head alone at rest,
// and only the newest run is small: a small run is laid out again as each
// chunk fills.
// Why not a longer tail, folded less often: a query tests the tail whole, and
// its entries, in arrival order, are all kinds mixed, so no bound parts them.
// Thin boxes long on every axis through one point fill some 8 nodes a level
// around it, each near any point from afar; a k nearest search that tested
// eight tail chunks in each of them spent most of its work there. A run's chunk ids are ascending in ids[], and its
// entries were laid out in them in spatial order (tree_ownidx.c: own_order),
// so position p of the run is both the p-th chunk in spatial order and the
// p-th smallest id: a chunk's place is a binary search away. (Padding
// positions, Families, repeat the id before them: ids never fall, and the
// search's first position of an id is its chunk's.)
//
// Changes keep the index correct without rebuilding it: an entry written into
// a run chunk (an append to a head that is in a run, a removal's hole filled
// from the head, an in-place move) grows that chunk's bound and its groups'
// (conservative: never shrunk); a released run chunk (the head emptied by
// removals) gets an inverted bound and is skipped. When dead chunks or grown
// bounds pass a fraction of the list, the next change rebuilds the whole
// index: O(m log m) after Θ(m) changes. Rebuilds happen in mutations only;
// queries read the index and never change it.
//
// ## Foreign slots
//
// A removal fills its hole from the head, so a run chunk would get an entry
// from anywhere in the list, and its bound and its groups' would grow to
// hold it (a thin chunk of straddlers as tall as the node): after churn every
// query opened them. Instead such an entry stays out of its chunk's bound:
// its slot is marked in the chunk's skip mask (own_skip, a byte per run
// position, parallel to own_ids) and the entry is indexed on its own, by
// address, in the foreign runs: the same logarithmic method over single
// entries (ids are entry addresses, ascending, the entries laid out in them
// in spatial order, a bound per entry at the bottom), with an unindexed
// foreign tail of up to OWN_FTAIL addresses. A walk skips a chunk's marked
// slots and gives each foreign entry as a chunk whose other slots are
// skipped. A removal thus re-sorts about one entry (as the logarithmic
// method does for an insert), not a chunk (a fold of up to 256 records lays
// them out in Z order, a radix sort, not kd order: tree_ownidx.c,
// own_layout); when foreign entries pass half of the list the next change
// rebuilds the whole index, which clears them. Marks live only on run chunks' slots below the chunk's fill.
//
// ## Families
//
// A list can hold a few families of boxes far apart as points in 2 * DIM
// dimensions: a pinwheel's four arms of strips, each across a centre line,
// long in x or in y. Inserted in random order, every run holds all of them,
// and a kd order cut at powers of two splits families where their sizes
// fall: at every level of the run, the group holding a family boundary has
// a bound as big as two arms, which most queries open (about 3 boundaries x
// 4 tests x the run's levels, in each of its ~13 runs). So a merge of
// OWN_FAMILY_RUN chunks or more first parts its entries into families (the
// widest gap of a third of their bound's longest side or more, on one of
// the 2 * DIM coordinates, found on a sample; again in each part, up to
// OWN_FAMILIES),
// then lays them out in one run as blocks: each family's full chunks in kd
// order, padded with dead positions to a multiple of the largest power of
// OWN_GROUP that costs a quarter of its chunks or less, the blocks in
// falling alignment so each starts aligned, then one block of the
// families' leftover entries (fewer than a chunk each), the mixed chunks. A
// family's groups up to its alignment hold it alone, so the chain of mixed
// groups stops there; the kd order inside a block cuts at the run's group
// edges (own_order's `at`), so its subtrees are whole groups where they can
// be. No gap, or a smaller merge: the layout of before, exactly.
// Measured (tests/test_adversarial.c, above pinwheel_tree_query_cap): box
// queries on 20000 pinwheel strips inserted in random order test 19.2
// times the uniform scene's work (2D, loose; was 26.3), 33.7 in 3D (was
// 44.8). The rest is the logarithmic method's: each of ~13 runs holds every
// arm whole, so a query descends its arm in each; in the order they are
// made a run holds a narrow band of each arm, and reads 7.8 and 9.9.
//
// A padding position repeats the id of the position before it (so ids[]
// never falls and a binary search for an id finds its live position first),
// has an inverted bound (skipped by every walk, as a released chunk is) and
// least id UINT32_MAX, no foreign slots, and is counted in its run's `pad`,
// not in `dead` (it owes no rebuild). A run's positions are at most 1.25
// times its chunks (validate checks pad <= chunks / 4), and its region of
// the pools grows with them. The run count and the fold schedule, which
// count a run's chunks (own_run_chunks), do not change.
//
// ## Least ids
//
// Beside each bound the index keeps a lower bound of the handle ids (item + 1)
// under it (own_least, parallel to own_bounds), and the header one for the
// tail's entries (tail_least). Like the bounds they only move one way (down)
// between rebuilds. A nearest search needs them: its results are ordered by
// distance, then id, so when many boxes hold the query point (all at distance
// 0) it must find the least ids among them; a group no nearer than the k-th
// found whose least id is above the k-th's holds nothing that ranks before it.
#ifndef ORTHANT_SRC_TREE_OWNIDX_H
#define ORTHANT_SRC_TREE_OWNIDX_H

#include "sweep.h"
#include "tree_int.h"

/// Entries from which a node's own list gets an index; it is dropped below half.
/// (A build may set it, e.g. out of reach to measure the tree without indexes.)
#ifndef ORTHANT_OWNIDX_MIN
#define ORTHANT_OWNIDX_MIN 32
#endif
#define OWN_MIN ORTHANT_OWNIDX_MIN
/// Chunks the unindexed tail holds before it becomes a run (the head, and
/// one more that has just filled).
#define OWN_TAIL 1
/// Chunks the newest run gathers before a new run starts after it.
#define OWN_BASE 4
/// Runs of one level that a fold merges into one of the next (Layout: why 2).
#ifndef ORTHANT_OWNIDX_FAN
#define ORTHANT_OWNIDX_FAN 2
#endif
#define OWN_FAN ORTHANT_OWNIDX_FAN
#define OWN_RUNS 32
/// Foreign runs (run numbers OWN_RUNS and up in a walk), and the foreign
/// addresses in none of them before they fold.
#define OWN_FRUNS 24
#define OWN_FTAIL 8
/// Groups (or chunks) under a group of a run's hierarchy. Why 4, not 8: a
/// group opened costs a test of each bound under it, and a run of long
/// boxes of three kinds (crossing rods, plate stacks: they fit no child, so
/// one own list holds them all) has at every level a group that mixes two
/// kinds, whose bound holds the whole node, opened from any point: with 8,
/// 10 nearest on 3D rods tested 299 and 388 a search at 6000 and 24000
/// boxes (loose), with 4 271 and 333 (plate stacks 290, 330 -> 261, 287; 2D
/// pinwheels under leaves 194, 192 -> 168, 164), at the same layout work.
#define OWN_GROUP 4
/// Levels of a run's hierarchy: 4^16 chunks is more than a pool holds.
#define OWN_LEVELS 17
/// The walk's stack: the runs' tops, then OWN_GROUP a level.
#define OWN_STACK (OWN_RUNS + OWN_FRUNS + OWN_GROUP * OWN_LEVELS)

typedef struct own_run {
	uint32_t first; ///< its first position in ids; run j + 1 starts where run j ends
	uint32_t size;  ///< positions, released chunks and padding included
	uint32_t live;  ///< positions whose chunk is still in the node's chain
	uint32_t pad;   ///< padding positions (Families; 0 in a foreign run)
	uint32_t levels;
	/// Level L's bounds start at bounds[2 * first + off[L]]; level 0 holds a
	/// bound per chunk, level L + 1 one per OWN_GROUP of level L, the top one bound.
	uint32_t off[OWN_LEVELS];
} own_run;

struct ownidx {
	uint32_t node;  ///< the owner; the next free header when free
	uint32_t tail;  ///< chunks at the chain's front that no run holds
	uint32_t dead;  ///< released run chunks, over all runs
	uint32_t stale; ///< bounds grown since the last full rebuild
	uint32_t nruns;
	/// No entry of a tail chunk has a lower handle id (item + 1); 0 when unknown.
	uint32_t tail_least;
	/// Its region of the tree's index pools: positions [base, base + cap) of
	/// own_ids (chunk ids by run and position) and [2 base, 2 (base + cap))
	/// of own_bounds (per run, its levels: they fit in twice its size). The
	/// pools, not pointers here, so validate can check every reference.
	uint32_t base, cap;
	own_run run[OWN_RUNS];
	/// The foreign records' region of the pools, like base and cap: the
	/// foreign runs end to end, then the foreign tail's addresses.
	uint32_t fbase, fcap;
	uint32_t nfruns, ftail;
	uint32_t flive; ///< marked slots, over all run chunks (= live foreign records)
	uint32_t fdead; ///< dead records in foreign runs
	own_run frun[OWN_FRUNS];
};

static inline const struct ownidx *own_get(const tree_t *t, uint32_t ni)
{
	assert(t->nodes[ni].flags & NODE_OWNIDX);
	return &t->own[t->own_of[ni]];
}

static inline uint32_t *own_ids(const tree_t *t, const struct ownidx *ix) { return &t->own_ids[ix->base]; }
static inline box_t *own_bounds(const tree_t *t, const struct ownidx *ix) { return &t->own_bounds[2 * (size_t)ix->base]; }
/// The least ids, one for each bound of own_bounds, at the same place.
static inline uint32_t *own_least(const tree_t *t, const struct ownidx *ix) { return &t->own_least[2 * (size_t)ix->base]; }

static inline bool box_inverted(const box_t *b) { return !(b->min[0] <= b->max[0]); }

/// The chunks a run was laid out with: its positions less its padding
/// (Families).
static inline uint32_t own_run_chunks(const own_run *rn) { return rn->size - rn->pad; }

/// Run r of a walk: a chunk run below OWN_RUNS, else foreign run r - OWN_RUNS.
static inline const own_run *own_run_at(const struct ownidx *ix, uint32_t r)
{
	return r < OWN_RUNS ? &ix->run[r] : &ix->frun[r - OWN_RUNS];
}

/// Where run r's positions start in the pools.
static inline uint32_t own_run_start(const struct ownidx *ix, uint32_t r)
{
	return (r < OWN_RUNS ? ix->base : ix->fbase) + own_run_at(ix, r)->first;
}

/// Where the foreign tail's addresses start in own_ids.
static inline uint32_t own_ftail_start(const struct ownidx *ix)
{
	return ix->fbase + (ix->nfruns ? ix->frun[ix->nfruns - 1].first + ix->frun[ix->nfruns - 1].size : 0);
}

/// The runs of a walk, chunk runs then foreign ones: for (r = own_run_first(ix);
/// r != OWN_NO_RUN; r = own_run_next(ix, r)).
#define OWN_NO_RUN UINT32_MAX
static inline uint32_t own_run_next(const struct ownidx *ix, uint32_t r)
{
	if (r + 1 < ix->nruns) return r + 1;
	if (r < OWN_RUNS) r = OWN_RUNS - 1;
	return r + 1 < OWN_RUNS + ix->nfruns ? r + 1 : OWN_NO_RUN;
}
static inline uint32_t own_run_first(const struct ownidx *ix)
{
	return ix->nruns ? 0 : own_run_next(ix, OWN_RUNS - 1);
}

/// Level-0 position pos of run r as a chunk to test: its id, the entries to
/// look at ([0, *fill)), and those to skip (*skip, a bit a slot): a chunk
/// run's chunk less its foreign slots, or a foreign record's one entry.
static inline uint32_t own_pos_chunk(const tree_t *t, const struct ownidx *ix, const node *n, uint32_t r, uint32_t pos,
                                     uint32_t *fill, uint32_t *skip)
{
	uint32_t at = own_run_start(ix, r) + pos, id = t->own_ids[at];
	if (r < OWN_RUNS) {
		*fill = id == n->head ? head_fill(n->count) : CHUNK_CAP;
		*skip = t->own_skip[at];
		return id;
	}
	*fill = id % CHUNK_CAP + 1;
	*skip = (1u << (id % CHUNK_CAP)) - 1u;
	return id / CHUNK_CAP;
}

/// A query's test of a group's bound: whether it may hold something the query
/// wants, and a key to visit nearer groups first (0 when order does not matter).
typedef bool own_test(const void *q, const box_t *b, float *key);

typedef struct own_slot {
	uint32_t run, level, pos;
	float key;
} own_slot;

/// A walk over a node's own chunks: the whole chain when it has no index,
/// else the tail, then the run chunks whose groups pass the test.
typedef struct own_iter {
	uint32_t next, left; ///< the next chain chunk (NIL past the tail), and how many chain chunks are left to give
	uint32_t fill;       ///< entries in the next chain chunk
	uint32_t ft;         ///< foreign tail addresses given
	/// The chunk last given is to be tested in slots [from, fill): a chunk's
	/// slots between its foreign ones (tree_ownidx.h: Foreign slots), which
	/// the walk gives on their own, come a stretch at a time.
	uint32_t from;
	uint32_t pend, pend_fill, pend_skip; ///< a chunk with stretches left (pend != NIL), its fill and slots done or skipped
	const node *n;
	const struct ownidx *ix;
	own_test *test;
	const void *q;
	/// A box query's box (own_iter_box: its box_lanes with SSE2, else the
	/// box_t), NULL for another walk: groups are then tested by box overlap
	/// alone, OWN_GROUP at a time, and never again when popped.
	const void *box;
	int top;
	own_slot stack[OWN_STACK];
} own_iter;

static inline void own_push(own_iter *it, const box_t *b, uint32_t run, uint32_t level, uint32_t pos)
{
	float key = 0.0f;
	WORK_TESTS(1);
	if (box_inverted(b) || !it->test(it->q, b, &key)) return;
	// Farthest first among what is pushed together: the nearest pops next.
	int j = it->top++;
	assert(it->top <= OWN_STACK);
	while (j > 0 && it->stack[j - 1].key < key && it->stack[j - 1].level == level && it->stack[j - 1].run == run) {
		it->stack[j] = it->stack[j - 1];
		--j;
	}
	it->stack[j] = (own_slot){run, level, pos, key};
}

/// Start a walk over node ni's own chunks. test (with q) prunes index groups;
/// it is asked again when a group is popped, so a query that narrows (a ray's
/// clip, the k-th distance) prunes what it pushed before.
static inline void own_iter_init(const tree_t *t, uint32_t ni, own_iter *it, own_test *test, const void *q)
{
	const node *n = &t->nodes[ni];
	it->next = n->head;
	it->fill = head_fill(n->count);
	it->top = 0;
	it->ft = it->from = 0;
	it->pend = NIL;
	it->pend_fill = it->pend_skip = 0;
	it->n = n;
	it->box = NULL;
	WORK_TESTS(1); // the node (the counting build: see tests/test_ownidx.c)
	it->test = test;
	it->q = q;
	// A list of two chunks or fewer is walked whole, index or not (the
	// chain holds every entry): its flags, a line of their own in most
	// nodes, are not read.
	if (n->count <= 2 * CHUNK_CAP || !(n->flags & NODE_OWNIDX)) {
		// The chain's length (Invariants: CHUNK_CAP * (chunks - 1) < count <=
		// CHUNK_CAP * chunks): the walk stops without reading the last
		// chunk's next, a line of its own.
		it->left = (n->count + CHUNK_CAP - 1) / CHUNK_CAP;
		it->ix = NULL;
		return;
	}
	const struct ownidx *ix = own_get(t, ni);
	it->ix = ix;
	it->left = ix->tail;
	if (ix->tail == 0) it->next = NIL;
	for (uint32_t r = 0; r < ix->nruns; ++r) {
		const own_run *run = &ix->run[r];
		if (run->live == 0) continue;
		uint32_t top = run->levels - 1;
		own_push(it, &t->own_bounds[2 * ((size_t)ix->base + run->first) + run->off[top]], r, top, 0);
	}
	for (uint32_t r = 0; r < ix->nfruns; ++r) {
		const own_run *run = &ix->frun[r];
		if (run->live == 0) continue;
		uint32_t top = run->levels - 1;
		own_push(it, &t->own_bounds[2 * ((size_t)ix->fbase + run->first) + run->off[top]], OWN_RUNS + r, top, 0);
	}
}

/// Make it a box walk (after own_iter_init): groups are tested against the
/// query box alone, and the query's own test (the same box test, or more) is
/// left to the entries. A group's OWN_GROUP bounds are then a few vector
/// compares, where each was a call, and a group popped is not tested again
/// (a box query does not narrow as it goes; a sweep's clip does). On a list
/// whose runs each span the node (straddlers, strips: every run holds every
/// kind, and a query descends each), that test is most of what a query does.
/// box: with SSE2, the query box's box_lanes (geom.h); else the box_t.
static inline void own_iter_box(own_iter *it, const void *box) { it->box = box; }

/// The groups of b[0, count) (count <= OWN_GROUP) that meet a box walk's
/// box: a bit each.
ORT_INLINE unsigned own_box_meets(const own_iter *it, const box_t *b, uint32_t count)
{
	unsigned bits = 0;
	for (uint32_t k = 0; k < count; ++k) {
#if defined(__SSE2__) && (DIM == 2 || DIM == 3)
		bits |= (unsigned)box_lanes_meet((const box_lanes *)it->box, &b[k]) << k;
#else
		bits |= (unsigned)box_overlaps_bounds((const box_t *)it->box, b[k].min, b[k].max) << k;
#endif
	}
	return bits;
}

/// Chunk c's first stretch of slots below fill not in skip: it->from and *fill.
static inline uint32_t own_iter_stretch(own_iter *it, uint32_t c, uint32_t fill, uint32_t skip, uint32_t *out)
{
	if (!skip) { // the whole chunk
		it->from = 0;
		*out = fill;
		return c;
	}
	uint32_t k = 0;
	while (k < fill && (skip >> k & 1)) ++k;
	uint32_t e = k;
	while (e < fill && !(skip >> e & 1)) ++e;
	it->from = k;
	*out = e;
	it->pend = NIL;
	if ((skip | ((1u << e) - 1u)) != (1u << fill) - 1u) {
		it->pend = c;
		it->pend_fill = fill;
		it->pend_skip = skip | ((1u << e) - 1u);
	}
	return c;
}

/// own_iter_next past the chain's tail: the rest of a chunk's stretches, the
/// foreign tail, then the groups. (Apart, so the walk of a short list, all
/// chain, stays small enough to inline.)
static inline uint32_t own_iter_index(const tree_t *t, own_iter *it, uint32_t *fill)
{
	if (it->pend != NIL) return own_iter_stretch(it, it->pend, it->pend_fill, it->pend_skip, fill);
	const struct ownidx *ix = it->ix;
	if (it->ft < ix->ftail) { // the foreign tail: an entry at a time
		uint32_t a = t->own_ids[own_ftail_start(ix) + it->ft++];
		*fill = a % CHUNK_CAP + 1;
		it->from = a % CHUNK_CAP;
		WORK_TESTS(1);
		return a / CHUNK_CAP;
	}
	while (it->top > 0) {
		own_slot s = it->stack[--it->top];
		bool chunks = s.run < OWN_RUNS;
		const own_run *run = chunks ? &ix->run[s.run] : &ix->frun[s.run - OWN_RUNS];
		uint32_t start = (chunks ? ix->base : ix->fbase) + run->first;
		const box_t *base = &t->own_bounds[2 * (size_t)start];
		float key;
		if (!it->box && !it->test(it->q, &base[run->off[s.level] + s.pos], &key)) continue;
		if (s.level == 0) {
			uint32_t id = t->own_ids[start + s.pos];
			if (chunks) {
				*fill = id == it->n->head ? head_fill(it->n->count) : CHUNK_CAP;
				WORK_TESTS(*fill);
				return own_iter_stretch(it, id, *fill, t->own_skip[start + s.pos], fill);
			}
			*fill = id % CHUNK_CAP + 1; // a foreign record: one entry
			it->from = id % CHUNK_CAP;
			WORK_TESTS(1);
			return id / CHUNK_CAP;
		}
		uint32_t below = s.level - 1, n_below = run->off[s.level] - run->off[below];
		uint32_t end = s.pos * OWN_GROUP + OWN_GROUP < n_below ? s.pos * OWN_GROUP + OWN_GROUP : n_below;
		if (it->box) {
			const box_t *b = &base[run->off[below] + s.pos * OWN_GROUP];
			uint32_t count = end - s.pos * OWN_GROUP;
			WORK_TESTS(count);
			unsigned bits = own_box_meets(it, b, count);
			// The first group on top; an inverted bound (a released chunk,
			// padding) can meet an infinite box, so it is skipped here.
			for (uint32_t k = count; k-- > 0;)
				if ((bits >> k & 1) && !box_inverted(&b[k])) {
					assert(it->top < OWN_STACK);
					it->stack[it->top++] = (own_slot){s.run, below, s.pos * OWN_GROUP + k, 0.0f};
				}
			continue;
		}
		for (uint32_t p = s.pos * OWN_GROUP; p < end; ++p) own_push(it, &base[run->off[below] + p], s.run, below, p);
	}
	return NIL;
}

/// The next chunk of the walk, to be tested in slots [it->from, *fill); NIL
/// at the end.
static inline uint32_t own_iter_next(const tree_t *t, own_iter *it, uint32_t *fill)
{
	uint32_t c = it->next;
	if (c != NIL) {
		*fill = it->fill;
		it->fill = CHUNK_CAP;
		it->next = --it->left ? t->chunks[c].next : NIL;
		WORK_TESTS(*fill);
		return c;
	}
	return it->ix ? own_iter_index(t, it, fill) : NIL;
}

// ---- a best-first walk's view of the groups ------------------------------------
//
// A nearest search keeps the groups it has yet to open in its own frontier,
// with the tree's nodes, instead of walking a node's index at once.

/// Group (level, pos) of run r: its place in the tree's own_bounds and own_least.
static inline size_t own_group_at(const struct ownidx *ix, uint32_t r, uint32_t level, uint32_t pos)
{
	const own_run *run = own_run_at(ix, r);
	assert(level < run->levels);
	return 2 * (size_t)own_run_start(ix, r) + run->off[level] + pos;
}

/// The groups one level below group (level >= 1, pos) of run r: [*first, *end).
static inline void own_group_below(const struct ownidx *ix, uint32_t r, uint32_t level, uint32_t pos,
                                   uint32_t *first, uint32_t *end)
{
	const own_run *run = own_run_at(ix, r);
	uint32_t n_below = run->off[level] - run->off[level - 1];
	*first = pos * OWN_GROUP;
	*end = pos * OWN_GROUP + OWN_GROUP < n_below ? pos * OWN_GROUP + OWN_GROUP : n_below;
}

/// The chunk at level-0 position pos of run r of node ni's index, the
/// entries to look at in it and those to skip (own_pos_chunk).
static inline uint32_t own_group_chunk(const tree_t *t, const struct ownidx *ix, uint32_t ni, uint32_t r, uint32_t pos,
                                       uint32_t *fill, uint32_t *skip)
{
	return own_pos_chunk(t, ix, &t->nodes[ni], r, pos, fill, skip);
}

#endif

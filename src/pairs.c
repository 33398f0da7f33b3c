// pairs.c: every overlapping pair exactly once.
//
// loose and tight (the game octree's pass-down of ancestors' items): a
// node tests its own entries against each other and against the entries of
// its ancestors that reach into its bounds, then hands both lists, filtered
// by each child's bounds, down to the child. An ancestor entry that misses a
// child's bounds cannot touch anything stored below it, so the list shrinks
// on the way down.
//
// That covers pairs whose nodes are one above the other. tight cells are
// half-open, so sibling subtrees share no point and that is all. loose cells
// overlap their siblings, so for each pair of children whose loose bounds
// meet, every node of one subtree hands its entries (filtered by the other's
// bounds) down the other (pairs_cross). Every pair is tested exactly once: in
// their shared node, down the ancestor line, or in the cross of the two
// children of their lowest common ancestor.
//
// leaves: pairs are tested inside each leaf, and reported only by the leaf
// that owns the low corner of their overlap (leaf_owns in tree_int.h), so a pair
// sharing several leaves is reported once. Items stored once at inner nodes
// (capped, tree_cap.c) are handed down as tight hands its items down; a pair
// with one in a leaf is reported by the leaf owning that corner too, which the
// capped one reaches (the corner lies in both boxes).
//
// Filtering uses each node's content bounds (node.bound) — the union of the
// boxes its subtree stores, made exact in one pass first (the tree keeps them
// a superset between passes) — not its (loose) cell: with
// looseness 2 sibling loose cells share half their volume, while what they
// hold rarely reaches far past their cells.
//
// A pile the tree could not spread out — many entries in one node (a cell
// floats or the depth limit will not split), or a long list of ancestors'
// entries reaching into a node (boxes across split lines) — is swept
// (sweep.h) instead of tested pair by pair, so it costs O(m log m + k1), not m^2;
// a sweep that tests far more pairs than it finds goes on with its active
// boxes kept in order on a second axis, O((m + k) log m) in 2D. A list handed down that outnumbers the subtree it
// reaches is swept against that whole subtree at once (pairs_handed). Why
// that bounds the handed-down work, and what it does not bound: the comment
// above pairs_descend.
//
// The lists and the sweep's keys live in memory the tree
// keeps between calls: in steady state finding pairs allocates nothing.
//
// With tasks (task.h) the same recursion is cut into jobs on the calling
// thread, in the order it would run (pairs_plan_descend): a subtree of at
// most `limit` entries is one job, taking a copy of the list its ancestors
// hand it; a larger node is the job of its own entries, then its children
// (planned the same way), then its children's crosses, each cross one job.
// Each job keeps its lists (and its sweeps' keys) in a scratch buffer of its
// own and its pairs (as item indices) in an output buffer of its own; the
// calling thread reports them in job order, so the order is the serial one.
// The content bounds are computed first, each subtree of at most `limit`
// entries as one job.
#include "sweep.h"
#include "task_int.h"
#include "tree_int.h"

/// A pair of two items by index (the broad phase's own walk, which wants no
/// handles): false stops the walk.
typedef bool pairs_item_fn(void *ctx, uint32_t a, uint32_t b);

/// Where a walk writes pairs itself, as records of the broad phase's set
/// (ort_id_pair: the handle ids, the lower first): [cur, end) is free room.
/// When it is full the walk calls its item_fn, which writes the pair and may
/// give new room. Saves a call a pair: the first update_pairs of 20k 2D
/// boxes in groups of 32 identical ones spent 1.2 of its 7 ms in that call.
typedef struct pair_sink {
	ort_id_pair *cur, *end;
} pair_sink;

typedef struct pair_run {
	tree_t *t;
	ORTHANT_NAME(pair_fn) * fn; ///< NULL in a job (out) and for item_fn
	pairs_item_fn *item_fn;     ///< without fn and out: pairs go here, as item indices
	void *ctx;
	pair_sink *sink; ///< with item_fn, on the serial path: write here first (or NULL)
	bool stop;
	ort_result result;
	uint64_t mask; ///< only items whose category meets it pair
	/// In a job: out[0] takes the pairs, out[1] holds the lists (else the
	/// tree's scratch does); NULL on the serial path.
	tk_out *out;
} pair_run;

/// The lists: the job's scratch, or the tree's.
static inline entry *pairs_list(const pair_run *run)
{
	return run->out ? (entry *)(void *)run->out[1].data : (entry *)run->t->scratch;
}

/// Room for `bytes` of lists (and sweep keys): in the tree's scratch, or in a
/// job's, which cannot grow here — the job then asks for twice as much, stops,
/// and is run again with it. Reserving may move the lists.
static bool pair_room(pair_run *run, size_t bytes)
{
	if (!run->out) return scratch_reserve(run->t, bytes);
	if (bytes <= run->out[1].cap) return true;
	run->out[1].used = 2 * bytes;
	run->stop = true;
	return false;
}

/// Entries a and b overlap as boxes: report them if their filters and exact
/// bounds agree.
static inline void pair_report(pair_run *run, const entry *ea, const entry *eb)
{
	if (run->stop) return; // the callback said stop (or memory ran out): it hears nothing more
	const tree_t *t = run->t;
	uint32_t a = ea->item, b = eb->item;
	if (run->mask != ORT_MASK_ALL && (!(item_cat(t, a) & run->mask) || !(item_cat(t, b) & run->mask))) return;
	if ((t->statics || t->filters) && !items_pair(t, a, b)) return;
	if (t->spheres && !items_touch(t, a, b, &ea->box, &eb->box)) return;
	if (!run->fn) { // a job's output, or the broad phase's walk: item indices
		pair_sink *k = run->sink;
		if (k && k->cur != k->end) {
			*k->cur++ = a < b ? (ort_id_pair){a + 1, b + 1} : (ort_id_pair){b + 1, a + 1};
		} else if (run->out) {
			const uint32_t pair[2] = {a, b};
			tk_put(&run->out[0], pair, sizeof pair);
		} else if (!run->item_fn(run->ctx, a, b)) {
			run->stop = true;
		}
		return;
	}
	if (!run->fn(run->ctx, make_handle(t, a), make_handle(t, b), t->items[a].user, t->items[b].user)) run->stop = true;
}

/// Make room for n more entries at index top of the scratch list.
static bool pair_list_reserve(pair_run *run, size_t top, size_t n)
{
	if (pair_room(run, (top + n) * sizeof(entry))) return true;
	if (run->out) return false; // run again, with the room asked for
	run->result = ORT_ERROR_OUT_OF_MEMORY;
	run->stop = true;
	return false;
}

/// Room for the keys of a sweep of n boxes past scratch[top..]: two arrays of
/// n, 8-byte aligned (the scratch is the allocator's, aligned for anything).
/// Reserving may move the scratch: list pointers are taken again after. NULL
/// without memory: the caller tests pair by pair (slower, never wrong).
static uint64_t *pair_sweep_room(pair_run *run, size_t top, size_t n)
{
	size_t at = (top * sizeof(entry) + 7) & ~(size_t)7;
	if (!pair_room(run, at + 2 * n * sizeof(uint64_t))) return NULL;
	return (uint64_t *)(void *)((char *)pairs_list(run) + at);
}

/// Whether m boxes are better swept among themselves than tested pair by pair.
static inline bool pair_sweep_pays(size_t m) { return m >= SWEEP_MIN; }

/// Whether m boxes are better swept against n others.
static inline bool pair_sweep_pays_cross(size_t m, size_t n)
{
	return m && n && (uint64_t)m * n >= (uint64_t)SWEEP_MIN * (m + n);
}

/// What a sweep's callback needs: the run, the lists it indexes, and (leaves)
/// the leaf that owns what it reports.
typedef struct pair_sweep {
	pair_run *run;
	size_t a, b; ///< scratch offsets of the first and second list
	const node *leaf;
} pair_sweep;

static bool pair_sweep_report(void *ctx, uint32_t i, uint32_t j)
{
	pair_sweep *s = ctx;
	const entry *list = pairs_list(s->run);
	const entry *x = &list[s->a + i], *y = &list[s->b + j];
	if (s->leaf) {
		float p[DIM];
		overlap_corner(&x->box, &y->box, p);
		if (!leaf_owns(s->leaf, p)) return true;
	}
	pair_report(s->run, x, y);
	return !s->run->stop;
}

/// Sweep scratch[a, a + na) among itself (nb = 0) or against scratch[b, b + nb),
/// using memory past scratch[top..]; false when there was no memory for it.
static bool pair_sweep_lists(pair_run *run, size_t top, size_t a, size_t na, size_t b, size_t nb, const node *leaf)
{
	uint64_t *v = pair_sweep_room(run, top, na + nb);
	if (!v) return false;
	const entry *list = pairs_list(run);
	sweep_list la = {(const char *)&list[a], sizeof(entry), (uint32_t)na};
	sweep_list lb = {(const char *)&list[b], sizeof(entry), (uint32_t)nb};
	pair_sweep ps = {run, a, nb ? b : a, leaf};
	if (nb)
		sweep_cross(&la, &lb, v, pair_sweep_report, &ps);
	else
		sweep_self(&la, v, pair_sweep_report, &ps);
	return true;
}

/// Copy node ni's entries to scratch[top..]; returns the new top.
static size_t pair_copy_own(pair_run *run, const node *n, size_t top)
{
	tree_t *t = run->t;
	entry *list = pairs_list(run);
	ENTRY_LOOP(t, n, c, k) list[top++] = t->chunks[c].e[k];
	return top;
}

static inline void pairs_grow(box_t *into, const box_t *e)
{
	for (int d = 0; d < DIM; ++d) {
		if (e->min[d] < into->min[d]) into->min[d] = e->min[d];
		if (e->max[d] > into->max[d]) into->max[d] = e->max[d];
	}
}

/// Compute content bounds for the subtree of ni (post-order); an empty
/// subtree gets an inverted box that overlaps nothing. With `above`, only
/// the nodes holding more than `limit` entries: the subtrees below them
/// have theirs already.
static void pairs_content_walk(tree_t *t, uint32_t ni, bool above, uint32_t limit)
{
	if (above && t->nodes[ni].total <= limit) return;
	const node *n = &t->nodes[ni];
	box_t b;
	bound_clear(&b);
	ENTRY_LOOP(t, n, c, k) pairs_grow(&b, &t->chunks[c].e[k].box);
	for (int c = 0; c < NCHILD; ++c) {
		uint32_t ci = n->child[c];
		if (ci == NIL) continue;
		pairs_content_walk(t, ci, above, limit);
		pairs_grow(&b, &t->nodes[ci].bound);
		n = &t->nodes[ni];
	}
	t->nodes[ni].bound = b;
}

static void pairs_content(tree_t *t, uint32_t ni) { pairs_content_walk(t, ni, false, 0); }

/// Test scratch[begin, end) (already filtered by ni's bounds) against every
/// entry in the subtree of ni.
static void pairs_down(pair_run *run, uint32_t ni, size_t begin, size_t end)
{
	tree_t *t = run->t;
	const node *n = &t->nodes[ni];
	size_t own_end;
	if (pair_sweep_pays_cross(end - begin, n->count) && pair_room(run, (end + n->count) * sizeof(entry)) &&
	    (own_end = pair_copy_own(run, &t->nodes[ni], end),
	     pair_sweep_lists(run, own_end, begin, end - begin, end, own_end - end, NULL))) {
		if (run->stop) return;
	} else {
		n = &t->nodes[ni];
		ENTRY_LOOP(t, n, c, k)
		{
			// A copy: a callback's deferred insert may grow the chunk pool.
			const entry e = t->chunks[c].e[k];
			const entry *list = pairs_list(run);
			WORK_TESTS(end - begin);
			for (size_t j = begin; j < end; ++j)
				if (box_overlap(&e.box, &list[j].box)) pair_report(run, &list[j], &e);
			if (run->stop) return;
		}
	}
	for (int c = 0; c < NCHILD && !run->stop; ++c) {
		uint32_t ci = t->nodes[ni].child[c];
		if (ci == NIL || t->nodes[ci].total == 0) continue;
		const float *lo = t->nodes[ci].bound.min, *hi = t->nodes[ci].bound.max;
		if (!pair_list_reserve(run, end, end - begin)) return;
		entry *l = pairs_list(run);
		size_t top = end;
		WORK_TESTS(end - begin);
		for (size_t j = begin; j < end; ++j)
			if (box_overlaps_bounds(&l[j].box, lo, hi)) l[top++] = l[j];
		if (top > end) pairs_down(run, ci, end, top);
	}
}

/// Append to scratch[*top..] every entry in the subtree of xi that touches
/// [lo, hi], skipping subtrees whose bounds miss it.
static bool pairs_gather(pair_run *run, uint32_t xi, const float lo[DIM], const float hi[DIM], size_t *top)
{
	tree_t *t = run->t;
	const node *x = &t->nodes[xi];
	if (x->total == 0 || !box_overlaps_bounds(&t->nodes[xi].bound, lo, hi)) return true;
	if (x->count) {
		if (!pair_list_reserve(run, *top, x->count)) return false;
		entry *l = pairs_list(run);
		WORK_TESTS(x->count);
		ENTRY_LOOP(t, x, c, k)
		{
			const entry *e = &t->chunks[c].e[k];
			if (box_overlaps_bounds(&e->box, lo, hi)) l[(*top)++] = *e;
		}
	}
	for (int c = 0; c < NCHILD; ++c) {
		uint32_t ci = t->nodes[xi].child[c];
		if (ci != NIL && !pairs_gather(run, ci, lo, hi, top)) return false;
	}
	return true;
}

/// pairs_gather of the entries of xi's subtree reaching into yi's content bounds.
static bool pairs_gather_into(pair_run *run, uint32_t xi, uint32_t yi, size_t *top)
{
	const tree_t *t = run->t;
	float lo[DIM], hi[DIM];
	memcpy(lo, t->nodes[yi].bound.min, sizeof lo); // a copy: the pool of lists may move
	memcpy(hi, t->nodes[yi].bound.max, sizeof hi);
	return pairs_gather(run, xi, lo, hi, top);
}

/// Every pair with one entry in the subtree of xi and one in that of yi: the
/// entries of xi's subtree that reach into yi's bounds, gathered into one
/// list, go down yi's subtree once.
static void pairs_cross(pair_run *run, uint32_t xi, uint32_t yi, size_t top)
{
	size_t end = top;
	if (!pairs_gather_into(run, xi, yi, &end)) return;
	if (end > top) pairs_down(run, yi, top, end);
}

/// leaves: whether leaf (NULL: not a leaves leaf) reports overlapping a, b.
static inline bool pairs_owned(const node *leaf, const entry *a, const entry *b)
{
	if (!leaf) return true;
	float p[DIM];
	overlap_corner(&a->box, &b->box, p);
	return leaf_owns(leaf, p);
}

/// Node ni's own entries, appended to the list [anc, own) its ancestors
/// handed it, against each other and against that list; returns the list's
/// new end (the caller checks run->stop).
static size_t pairs_descend_own(pair_run *run, uint32_t ni, size_t anc, size_t own)
{
	tree_t *t = run->t;
	const node *n = &t->nodes[ni];
	if (!pair_list_reserve(run, own, n->count)) return own;
	size_t end = pair_copy_own(run, n, own);
	// leaves: a leaf's entries are copies, reported by the leaf owning the pair.
	node leaf_copy; // a copy: a callback's deferred change may move the pool
	const node *leaf = NULL;
	if (t->def.placement == ORT_PLACEMENT_LEAVES && !(t->nodes[ni].flags & NODE_DIVIDED)) {
		leaf_copy = t->nodes[ni];
		leaf = &leaf_copy;
	}
	bool sweep_own = pair_sweep_pays(end - own) && pair_sweep_lists(run, end, own, end - own, 0, 0, leaf);
	bool sweep_anc = pair_sweep_pays_cross(end - own, own - anc) && !run->stop &&
	                 pair_sweep_lists(run, end, anc, own - anc, own, end - own, leaf);
	const entry *list = pairs_list(run);
	for (size_t i = own; i < end && !run->stop && !(sweep_own && sweep_anc); ++i) {
		const entry *a = &list[i];
		if (!sweep_own) {
			WORK_TESTS(end - i - 1);
			for (size_t j = i + 1; j < end; ++j)
				if (box_overlap(&a->box, &list[j].box) && pairs_owned(leaf, a, &list[j])) pair_report(run, a, &list[j]);
		}
		if (!sweep_anc) {
			WORK_TESTS(own - anc);
			for (size_t j = anc; j < own; ++j)
				if (box_overlap(&a->box, &list[j].box) && pairs_owned(leaf, &list[j], a)) pair_report(run, &list[j], a);
		}
	}
	return end;
}

/// Whether pairs_descend goes into child ci at all.
static inline bool pairs_child_wanted(const pair_run *run, uint32_t ci)
{
	const tree_t *t = run->t;
	return ci != NIL && t->nodes[ci].total != 0 && (node_cats(t, ci) & run->mask);
}

/// [anc, end) filtered by child ci's content bounds, appended at end; returns
/// the new top (the caller checks run->stop).
static size_t pairs_filter(pair_run *run, uint32_t ci, size_t anc, size_t end)
{
	const tree_t *t = run->t;
	const float *lo = t->nodes[ci].bound.min, *hi = t->nodes[ci].bound.max;
	if (!pair_list_reserve(run, end, end - anc)) return end;
	entry *l = pairs_list(run);
	size_t top = end;
	WORK_TESTS(end - anc);
	for (size_t j = anc; j < end; ++j)
		if (box_overlaps_bounds(&l[j].box, lo, hi)) l[top++] = l[j];
	return top;
}

/// Whether ni's children ai < bi get crossed.
static inline bool pairs_cross_wanted(const tree_t *t, uint32_t ai, uint32_t bi)
{
	return t->def.placement == ORT_PLACEMENT_LOOSE && ai != NIL && t->nodes[ai].total > 0 && bi != NIL &&
	       t->nodes[bi].total > 0;
}

/// Whether the list [anc, own) handed to ni is met with ni's whole subtree at
/// once (pairs_handed) instead of handed on down: when it outnumbers the
/// entries there (see the work bound at pairs_descend). Not in leaves, where
/// a leaf's copies need their leaf to report a pair once.
static inline bool pairs_handed_pays(const tree_t *t, uint32_t ni, size_t anc, size_t own)
{
	const node *n = &t->nodes[ni];
	return t->def.placement != ORT_PLACEMENT_LEAVES && own - anc > n->total && own - anc >= SWEEP_MIN && n->total > n->count;
}

/// The list [anc, own) handed to ni against every entry of ni's subtree,
/// gathered past it and swept (or tested pair by pair when small).
static void pairs_handed(pair_run *run, uint32_t ni, size_t anc, size_t own)
{
	size_t end = own;
	if (!pairs_gather_into(run, ni, ni, &end)) return;
	if (pair_sweep_pays_cross(own - anc, end - own) &&
	    pair_sweep_lists(run, end, anc, own - anc, own, end - own, NULL))
		return;
	WORK_TESTS((uint64_t)(own - anc) * (end - own));
	for (size_t i = own; i < end && !run->stop; ++i) {
		// Copies: a callback's deferred insert may move the lists.
		const entry e = pairs_list(run)[i];
		for (size_t j = anc; j < own; ++j) {
			const entry *list = pairs_list(run);
			if (box_overlap(&e.box, &list[j].box)) pair_report(run, &list[j], &e);
		}
	}
}

/// The work bound. Handing a list down costs, at each node it reaches, a
/// test an entry for each child (the filter) and the tests against the
/// node's own entries (swept when many). Handed down blindly that is
/// unbounded by n log n + k: strips lying between rows of small boxes reach
/// every node along their length whose content spans rows, and meet no box
/// there (n strips times sqrt n nodes in 2D, k = 0). So a list that
/// outnumbers the entries of the subtree it reaches stops there: it is
/// swept once against the whole subtree (pairs_handed) and the subtree runs
/// on with an empty list. A list then goes on only into a node whose
/// subtree holds more entries than it, so the filters cost at most NCHILD
/// tests an entry of the subtree at each node: NCHILD times the sum of the
/// entries' depths over the whole pass; a stopped list holds at most the
/// entries of its parent's subtree and list (twice the parent's subtree), so
/// the gathers and sweeps cost the same order plus their sorts (a log) and
/// the pairs they test. The depths sum to n log n on a tree that splits its
/// items evenly; on piles (a speck) the tree goes deeper, at most to where
/// floats stop splitting, a constant (about 150 levels) times n.
///
/// What is left is the sweep's own test count (sweep.h): pairs that overlap
/// on the axis swept but are apart as boxes. A sweep stops counting them
/// past SWEEP_BUDGET a box and goes on with its active boxes in a tree
/// ordered on a second axis, so a pile costs O(m log m + k) in 2D whatever
/// its shape (a pinwheel of strips across both centre lines, meeting on x
/// and on y and never as boxes, included), and O(m log m + k2) in 3D, k2
/// the pairs that overlap on the two axes swept.
static void pairs_descend(pair_run *run, uint32_t ni, size_t anc, size_t own)
{
	tree_t *t = run->t;
	if (pairs_handed_pays(t, ni, anc, own)) {
		pairs_handed(run, ni, anc, own);
		if (run->stop) return;
		anc = own;
	}
	size_t end = pairs_descend_own(run, ni, anc, own);
	if (run->stop) return;
	for (int c = 0; c < NCHILD && !run->stop; ++c) {
		uint32_t ci = t->nodes[ni].child[c];
		if (!pairs_child_wanted(run, ci)) continue;
		size_t top = pairs_filter(run, ci, anc, end);
		if (run->stop) return;
		pairs_descend(run, ci, end, top);
	}
	for (int a = 0; a < NCHILD && !run->stop; ++a)
		for (int b = a + 1; b < NCHILD && !run->stop; ++b) {
			uint32_t ai = t->nodes[ni].child[a], bi = t->nodes[ni].child[b];
			if (pairs_cross_wanted(t, ai, bi)) pairs_cross(run, ai, bi, end);
		}
}

static void pairs_leaves(pair_run *run, uint32_t ni)
{
	tree_t *t = run->t;
	const node *n = &t->nodes[ni];
	if (n->flags & NODE_DIVIDED) {
		for (int c = 0; c < NCHILD && !run->stop; ++c) {
			uint32_t ci = t->nodes[ni].child[c];
			if (ci != NIL && t->nodes[ci].total > 0 && (node_cats(t, ci) & run->mask)) pairs_leaves(run, ci);
		}
		return;
	}
	if (n->count < 2 || !pair_list_reserve(run, 0, n->count)) return;
	size_t end = pair_copy_own(run, n, 0);
	const node leaf = *n; // a copy: a callback's deferred change may move the pool
	n = NULL;
	if (pair_sweep_pays(end) && pair_sweep_lists(run, end, 0, end, 0, 0, &leaf)) return;
	WORK_TESTS((uint64_t)end * (end - 1) / 2);
	const entry *list = pairs_list(run);
	for (size_t i = 0; i < end && !run->stop; ++i)
		for (size_t j = i + 1; j < end; ++j) {
			if (!box_overlap(&list[i].box, &list[j].box)) continue;
			float p[DIM];
			overlap_corner(&list[i].box, &list[j].box, p);
			if (leaf_owns(&leaf, p)) pair_report(run, &list[i], &list[j]);
		}
}

// ---- in jobs -------------------------------------------------------------------------

enum { PJ_DESCEND, PJ_OWN, PJ_CROSS, PJ_LEAVES, PJ_HANDED };

/// One job: pairs_descend(at, list), pairs_descend_own(at, list),
/// pairs_cross(at, other), pairs_leaves(at) or pairs_handed(at, list); list is list_n entries
/// at list_at of the plan's entry pool.
typedef struct pair_job {
	int kind;
	uint32_t at, other;
	size_t list_at, list_n;
} pair_job;

typedef struct pair_plan {
	pair_run *run; ///< the calling thread's run: its scratch builds the lists
	pair_job *jobs; ///< NULL while counting
	entry *pool;
	int n;
	size_t pooled;
	uint32_t limit; ///< subtrees of at most this many entries are one job
} pair_plan;

static void pairs_plan_add(pair_plan *pl, int kind, uint32_t at, uint32_t other, size_t anc, size_t own)
{
	if (pl->jobs) {
		pl->jobs[pl->n] = (pair_job){kind, at, other, pl->pooled, own - anc};
		if (own > anc) memcpy(pl->pool + pl->pooled, pairs_list(pl->run) + anc, (own - anc) * sizeof(entry));
	}
	pl->n++;
	pl->pooled += own - anc;
}

/// pairs_descend's work, as jobs in its order.
static void pairs_plan_descend(pair_plan *pl, uint32_t ni, size_t anc, size_t own)
{
	pair_run *run = pl->run;
	tree_t *t = run->t;
	if (t->nodes[ni].total <= pl->limit) {
		pairs_plan_add(pl, PJ_DESCEND, ni, NIL, anc, own);
		return;
	}
	if (pairs_handed_pays(t, ni, anc, own)) {
		pairs_plan_add(pl, PJ_HANDED, ni, NIL, anc, own);
		anc = own;
	}
	if (t->nodes[ni].count) pairs_plan_add(pl, PJ_OWN, ni, NIL, anc, own);
	const node *n = &t->nodes[ni];
	if (!pair_list_reserve(run, own, n->count)) return;
	size_t end = pair_copy_own(run, n, own);
	for (int c = 0; c < NCHILD && !run->stop; ++c) {
		uint32_t ci = t->nodes[ni].child[c];
		if (!pairs_child_wanted(run, ci)) continue;
		size_t top = pairs_filter(run, ci, anc, end);
		if (!run->stop) pairs_plan_descend(pl, ci, end, top);
	}
	for (int a = 0; a < NCHILD; ++a)
		for (int b = a + 1; b < NCHILD; ++b) {
			uint32_t ai = t->nodes[ni].child[a], bi = t->nodes[ni].child[b];
			if (pairs_cross_wanted(t, ai, bi)) pairs_plan_add(pl, PJ_CROSS, ai, bi, 0, 0);
		}
}

/// pairs_leaves's work, as jobs in its order.
static void pairs_plan_leaves(pair_plan *pl, uint32_t ni)
{
	const tree_t *t = pl->run->t;
	const node *n = &t->nodes[ni];
	if (!(n->flags & NODE_DIVIDED) || n->total <= pl->limit) {
		pairs_plan_add(pl, PJ_LEAVES, ni, NIL, 0, 0);
		return;
	}
	for (int c = 0; c < NCHILD; ++c) {
		uint32_t ci = t->nodes[ni].child[c];
		if (pairs_child_wanted(pl->run, ci)) pairs_plan_leaves(pl, ci);
	}
}

static void pairs_plan(pair_plan *pl)
{
	const tree_t *t = pl->run->t;
	pl->n = 0;
	pl->pooled = 0;
	if (t->def.placement == ORT_PLACEMENT_LEAVES && !t->capped)
		pairs_plan_leaves(pl, t->root);
	else
		pairs_plan_descend(pl, t->root, 0, 0);
}

/// What the jobs of one find_pairs share.
typedef struct pair_jobs {
	const pair_plan *pl;
	tree_t *t;
	uint64_t mask;
	uint32_t *nodes; ///< content jobs: their subtrees' roots
} pair_jobs;

static void pairs_job(void *ctx, int j, tk_out *out)
{
	const pair_jobs *c = ctx;
	const pair_job *jb = &c->pl->jobs[j];
	pair_run run = {c->t, NULL, NULL, NULL, NULL, false, ORT_OK, c->mask, out};
	// Lists rarely outgrow the entries below the job twice over: ask for
	// that much at once rather than a little at a time.
	uint32_t below = c->t->nodes[jb->at].total + (jb->other != NIL ? c->t->nodes[jb->other].total : 0);
	if (!pair_list_reserve(&run, jb->list_n, 2 * (size_t)below)) return;
	if (jb->list_n) memcpy(pairs_list(&run), c->pl->pool + jb->list_at, jb->list_n * sizeof(entry));
	switch (jb->kind) {
	case PJ_DESCEND: pairs_descend(&run, jb->at, 0, jb->list_n); break;
	case PJ_OWN: pairs_descend_own(&run, jb->at, 0, jb->list_n); break;
	case PJ_CROSS: pairs_cross(&run, jb->at, jb->other, 0); break;
	case PJ_HANDED: pairs_handed(&run, jb->at, 0, jb->list_n); break;
	default: pairs_leaves(&run, jb->at); break;
	}
}

static void pairs_content_job(void *ctx, int j, tk_out *out)
{
	(void)out;
	const pair_jobs *c = ctx;
	pairs_content(c->t, c->nodes[j]);
}

/// The roots of the subtrees of at most limit entries under ni, into nodes
/// (when set); returns how many.
static int pairs_content_roots(const tree_t *t, uint32_t ni, uint32_t limit, uint32_t *nodes, int n)
{
	if (t->nodes[ni].total <= limit) {
		if (nodes) nodes[n] = ni;
		return n + 1;
	}
	for (int c = 0; c < NCHILD; ++c) {
		uint32_t ci = t->nodes[ni].child[c];
		if (ci != NIL) n = pairs_content_roots(t, ci, limit, nodes, n);
	}
	return n;
}

/// find_pairs through tasks: content bounds, plan, jobs, then the pairs in job order.
static ort_result pairs_in_jobs(pair_run *run, ort_tasks *tasks)
{
	tree_t *t = run->t;
	uint32_t limit = t->entries / TK_JOBS_TARGET;
	pair_jobs c = {NULL, t, run->mask, NULL};
	if (limit < 1024) limit = 1024;
	if (t->def.placement != ORT_PLACEMENT_LEAVES || t->capped) {
		int roots = pairs_content_roots(t, t->root, limit, NULL, 0);
		c.nodes = ort_tk_scratch(tasks, (size_t)roots * sizeof *c.nodes);
		if (!c.nodes) return ORT_ERROR_OUT_OF_MEMORY;
		pairs_content_roots(t, t->root, limit, c.nodes, 0);
		ort_tk_for(tasks, roots, pairs_content_job, &c);
		pairs_content_walk(t, t->root, true, limit);
	}
	pair_plan pl = {run, NULL, NULL, 0, 0, limit};
	pairs_plan(&pl);
	if (run->stop) return run->result;
	size_t jobs_bytes = ((size_t)pl.n * sizeof *pl.jobs + sizeof(entry) - 1) / sizeof(entry) * sizeof(entry);
	pl.jobs = ort_tk_scratch(tasks, jobs_bytes + pl.pooled * sizeof(entry));
	if (!pl.jobs) return ORT_ERROR_OUT_OF_MEMORY;
	pl.pool = (entry *)(void *)((char *)pl.jobs + jobs_bytes);
	pairs_plan(&pl);
	c.pl = &pl;
	ort_result r = ort_tk_run(tasks, pl.n, 2, pairs_job, &c);
	for (int j = 0; j < pl.n && r == ORT_OK; ++j) {
		const tk_out *o = ort_tk_output(tasks, j);
		const uint32_t *v = (const uint32_t *)(const void *)o->data;
		for (size_t i = 0, e = o->used / (2 * sizeof *v); i < e; ++i) {
			uint32_t a = v[2 * i], b = v[2 * i + 1];
			if (run->item_fn) {
				if (!run->item_fn(run->ctx, a, b)) return ORT_OK;
				continue;
			}
			// The items are read in no order: ask for those of a later pair now.
			if (i + 8 < e) __builtin_prefetch(&t->items[v[2 * i + 16]]), __builtin_prefetch(&t->items[v[2 * i + 17]]);
			if (!run->fn(run->ctx, make_handle(t, a), make_handle(t, b), t->items[a].user, t->items[b].user))
				return ORT_OK;
		}
	}
	return r;
}

/// Content bounds live in the nodes (node.bound), so there is nothing to
/// reserve; kept for the broad phase, which asks before a pass.
static bool content_reserve(tree_t *t)
{
	(void)t;
	return true;
}

void ORTHANT_NAME(tree_set_tasks)(tree_t *t, ort_tasks *tasks)
{
	if (t) t->def.tasks = tasks;
}

/// find_pairs to fn, or (item_fn set) to item_fn as item indices; the
/// caller checked its arguments and that it is not in a callback.
static ort_result pairs_find(tree_t *t, uint64_t mask, ORTHANT_NAME(pair_fn) * fn, pairs_item_fn *item_fn, void *ctx,
                              pair_sink *sink)
{
	ort_result attached = detached_read(t);
	if (attached != ORT_OK) return attached;
	pair_run run = {t, fn, item_fn, ctx, sink, false, ORT_OK, mask, NULL};
	if (!(mask & (t->root == NIL ? 0 : node_cats(t, t->root)))) return ORT_OK;
	if (t->root == NIL || t->entries < 2) return ORT_OK;
	if (t->def.placement != ORT_PLACEMENT_LEAVES && !content_reserve(t)) return ORT_ERROR_OUT_OF_MEMORY;
	reading_begin(t);
	ort_tasks *tasks = t->def.tasks;
	if (ort_tk_acquire(tasks)) {
		run.result = pairs_in_jobs(&run, tasks);
		ort_tk_release(tasks);
	} else if (t->def.placement == ORT_PLACEMENT_LEAVES && !t->capped) {
		pairs_leaves(&run, t->root);
	} else {
		pairs_content(t, t->root);
		pairs_descend(&run, t->root, 0, 0);
	}
	reading_end(t);
	return run.result;
}

ort_result ORTHANT_NAME(tree_find_pairs)(tree_t *t, uint64_t mask, ORTHANT_NAME(pair_fn) * fn, void *ctx)
{
	if (!t || !fn) return ORT_ERROR_INVALID_ARGUMENT;
	if (in_callback(t)) return misuse(t, ORT_ERROR_BUSY, "orthant: find_pairs from inside a callback");
	return pairs_find(t, mask, fn, NULL, ctx, NULL);
}

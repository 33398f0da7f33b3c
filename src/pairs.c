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
// sharing several leaves is reported once.
//
// Filtering uses each node's content bounds — the union of the boxes its
// subtree stores, computed in one pass first — not its (loose) cell: with
// looseness 2 sibling loose cells share half their volume, while what they
// hold rarely reaches far past their cells.
//
// A pile the tree could not spread out — many entries in one node (a cell
// floats or the depth limit will not split), or a long list of ancestors'
// entries reaching into a node (boxes across split lines) — is swept
// (sweep.h) instead of tested pair by pair, so it costs O(m log m + k1), not m^2.
//
// The lists, the sweep's keys and the content bounds live in memory the tree
// keeps between calls: in steady state finding pairs allocates nothing.
#include "sweep.h"
#include "tree_int.h"

typedef struct pair_run {
	tree_t *t;
	ORTHANT_NAME(pair_fn) * fn;
	void *ctx;
	bool stop;
	ort_result result;
	uint64_t mask; ///< only items whose category meets it pair
} pair_run;

/// Entries a and b overlap as boxes: report them if their filters and exact
/// bounds agree.
static inline void pair_report(pair_run *run, const entry *ea, const entry *eb)
{
	const tree_t *t = run->t;
	uint32_t a = ea->item, b = eb->item;
	if (run->mask != ORT_MASK_ALL && (!(item_cat(t, a) & run->mask) || !(item_cat(t, b) & run->mask))) return;
	if ((t->statics || t->filters) && !items_pair(t, a, b)) return;
	if (t->spheres && !items_touch(t, a, b, &ea->box, &eb->box)) return;
	if (!run->fn(run->ctx, make_handle(t, a), make_handle(t, b), t->items[a].user, t->items[b].user)) run->stop = true;
}

/// Make room for n more entries at index top of the scratch list.
static bool pair_list_reserve(pair_run *run, size_t top, size_t n)
{
	if (scratch_reserve(run->t, (top + n) * sizeof(entry))) return true;
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
	if (!scratch_reserve(run->t, at + 2 * n * sizeof(uint64_t))) return NULL;
	return (uint64_t *)(void *)((char *)run->t->scratch + at);
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
	const entry *list = s->run->t->scratch;
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
	const entry *list = run->t->scratch;
	sweep_list la = {(const char *)&list[a], sizeof(entry), (uint32_t)na};
	sweep_list lb = {(const char *)&list[b], sizeof(entry), (uint32_t)nb};
	pair_sweep ps = {run, a, nb ? b : a, leaf};
	if (nb)
		sweep_cross(&la, &lb, v, v + na + nb, pair_sweep_report, &ps);
	else
		sweep_self(&la, v, v + na, pair_sweep_report, &ps);
	return true;
}

/// Copy node ni's entries to scratch[top..]; returns the new top.
static size_t pair_copy_own(pair_run *run, const node *n, size_t top)
{
	tree_t *t = run->t;
	entry *list = t->scratch;
	ENTRY_LOOP(t, n, c, k) list[top++] = t->chunks[c].e[k];
	return top;
}

/// Compute content bounds for the subtree of ni (post-order); an empty
/// subtree gets an inverted box that overlaps nothing.
static void pairs_content(tree_t *t, uint32_t ni)
{
	const node *n = &t->nodes[ni];
	box_t b;
	for (int d = 0; d < DIM; ++d) {
		b.min[d] = INFINITY;
		b.max[d] = -INFINITY;
	}
	ENTRY_LOOP(t, n, c, k)
	{
		const box_t *e = &t->chunks[c].e[k].box;
		for (int d = 0; d < DIM; ++d) {
			if (e->min[d] < b.min[d]) b.min[d] = e->min[d];
			if (e->max[d] > b.max[d]) b.max[d] = e->max[d];
		}
	}
	for (int c = 0; c < NCHILD; ++c) {
		uint32_t ci = n->child[c];
		if (ci == NIL) continue;
		pairs_content(t, ci);
		const box_t *e = &t->content[ci];
		for (int d = 0; d < DIM; ++d) {
			if (e->min[d] < b.min[d]) b.min[d] = e->min[d];
			if (e->max[d] > b.max[d]) b.max[d] = e->max[d];
		}
		n = &t->nodes[ni];
	}
	t->content[ni] = b;
}

/// Test scratch[begin, end) (already filtered by ni's bounds) against every
/// entry in the subtree of ni.
static void pairs_down(pair_run *run, uint32_t ni, size_t begin, size_t end)
{
	tree_t *t = run->t;
	const node *n = &t->nodes[ni];
	size_t own_end;
	if (pair_sweep_pays_cross(end - begin, n->count) && scratch_reserve(t, (end + n->count) * sizeof(entry)) &&
	    (own_end = pair_copy_own(run, &t->nodes[ni], end),
	     pair_sweep_lists(run, own_end, begin, end - begin, end, own_end - end, NULL))) {
		if (run->stop) return;
	} else {
		n = &t->nodes[ni];
		ENTRY_LOOP(t, n, c, k)
		{
			// A copy: a callback's deferred insert may grow the chunk pool.
			const entry e = t->chunks[c].e[k];
			const entry *list = t->scratch;
			WORK_TESTS(end - begin);
			for (size_t j = begin; j < end; ++j)
				if (box_overlap(&e.box, &list[j].box)) pair_report(run, &list[j], &e);
			if (run->stop) return;
		}
	}
	for (int c = 0; c < NCHILD && !run->stop; ++c) {
		uint32_t ci = t->nodes[ni].child[c];
		if (ci == NIL || t->nodes[ci].total == 0) continue;
		const float *lo = t->content[ci].min, *hi = t->content[ci].max;
		if (!pair_list_reserve(run, end, end - begin)) return;
		entry *l = t->scratch;
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
	if (x->total == 0 || !box_overlaps_bounds(&t->content[xi], lo, hi)) return true;
	if (x->count) {
		if (!pair_list_reserve(run, *top, x->count)) return false;
		entry *l = t->scratch;
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

/// Every pair with one entry in the subtree of xi and one in that of yi: the
/// entries of xi's subtree that reach into yi's bounds, gathered into one
/// list, go down yi's subtree once.
static void pairs_cross(pair_run *run, uint32_t xi, uint32_t yi, size_t top)
{
	tree_t *t = run->t;
	float lo[DIM], hi[DIM];
	memcpy(lo, t->content[yi].min, sizeof lo); // a copy: the pool of lists may move
	memcpy(hi, t->content[yi].max, sizeof hi);
	size_t end = top;
	if (!pairs_gather(run, xi, lo, hi, &end)) return;
	if (end > top) pairs_down(run, yi, top, end);
}

static void pairs_descend(pair_run *run, uint32_t ni, size_t anc, size_t own)
{
	tree_t *t = run->t;
	const node *n = &t->nodes[ni];
	if (!pair_list_reserve(run, own, n->count)) return;
	size_t end = pair_copy_own(run, n, own);
	bool sweep_own = pair_sweep_pays(end - own) && pair_sweep_lists(run, end, own, end - own, 0, 0, NULL);
	bool sweep_anc = pair_sweep_pays_cross(end - own, own - anc) && !run->stop &&
	                 pair_sweep_lists(run, end, anc, own - anc, own, end - own, NULL);
	const entry *list = t->scratch;
	for (size_t i = own; i < end && !run->stop && !(sweep_own && sweep_anc); ++i) {
		const entry *a = &list[i];
		if (!sweep_own) {
			WORK_TESTS(end - i - 1);
			for (size_t j = i + 1; j < end; ++j)
				if (box_overlap(&a->box, &list[j].box)) pair_report(run, a, &list[j]);
		}
		if (!sweep_anc) {
			WORK_TESTS(own - anc);
			for (size_t j = anc; j < own; ++j)
				if (box_overlap(&a->box, &list[j].box)) pair_report(run, &list[j], a);
		}
	}
	for (int c = 0; c < NCHILD && !run->stop; ++c) {
		uint32_t ci = t->nodes[ni].child[c];
		if (ci == NIL || t->nodes[ci].total == 0 || !(t->nodes[ci].cats & run->mask)) continue;
		const float *lo = t->content[ci].min, *hi = t->content[ci].max;
		if (!pair_list_reserve(run, end, end - anc)) return;
		entry *l = t->scratch;
		size_t top = end;
		WORK_TESTS(end - anc);
		for (size_t j = anc; j < end; ++j)
			if (box_overlaps_bounds(&l[j].box, lo, hi)) l[top++] = l[j];
		pairs_descend(run, ci, end, top);
	}
	if (t->def.placement != ORT_PLACEMENT_LOOSE) return;
	for (int a = 0; a < NCHILD && !run->stop; ++a) {
		uint32_t ai = t->nodes[ni].child[a];
		if (ai == NIL || t->nodes[ai].total == 0) continue;
		for (int b = a + 1; b < NCHILD && !run->stop; ++b) {
			uint32_t bi = t->nodes[ni].child[b];
			if (bi != NIL && t->nodes[bi].total > 0) pairs_cross(run, ai, bi, end);
		}
	}
}

static void pairs_leaves(pair_run *run, uint32_t ni)
{
	tree_t *t = run->t;
	const node *n = &t->nodes[ni];
	if (n->flags & NODE_DIVIDED) {
		for (int c = 0; c < NCHILD && !run->stop; ++c) {
			uint32_t ci = t->nodes[ni].child[c];
			if (ci != NIL && t->nodes[ci].total > 0 && (t->nodes[ci].cats & run->mask)) pairs_leaves(run, ci);
		}
		return;
	}
	if (n->count < 2 || !pair_list_reserve(run, 0, n->count)) return;
	size_t end = pair_copy_own(run, n, 0);
	const node leaf = *n; // a copy: a callback's deferred change may move the pool
	n = NULL;
	if (pair_sweep_pays(end) && pair_sweep_lists(run, end, 0, end, 0, 0, &leaf)) return;
	WORK_TESTS((uint64_t)end * (end - 1) / 2);
	const entry *list = t->scratch;
	for (size_t i = 0; i < end && !run->stop; ++i)
		for (size_t j = i + 1; j < end; ++j) {
			if (!box_overlap(&list[i].box, &list[j].box)) continue;
			float p[DIM];
			overlap_corner(&list[i].box, &list[j].box, p);
			if (leaf_owns(&leaf, p)) pair_report(run, &list[i], &list[j]);
		}
}

/// Room for every node's content bounds (kept between calls).
static bool content_reserve(tree_t *t)
{
	if (t->content_cap >= t->node_len) return true;
	uint32_t cap = t->node_cap;
	if (!array_resize(t, (void **)&t->content, (size_t)t->content_cap * sizeof(box_t), (size_t)cap * sizeof(box_t)))
		return false;
	t->content_cap = cap;
	return true;
}

void ORTHANT_NAME(tree_set_tasks)(tree_t *t, ort_tasks *tasks)
{
	if (t) t->def.tasks = tasks;
}

ort_result ORTHANT_NAME(tree_find_pairs)(tree_t *t, uint64_t mask, ORTHANT_NAME(pair_fn) * fn, void *ctx)
{
	if (!t || !fn) return ORT_ERROR_INVALID_ARGUMENT;
	if (in_callback(t)) return misuse(t, ORT_ERROR_BUSY, "orthant: find_pairs from inside a callback");
	pair_run run = {t, fn, ctx, false, ORT_OK, mask};
	if (!(mask & (t->root == NIL ? 0 : t->nodes[t->root].cats))) return ORT_OK;
	if (t->root == NIL || t->entries < 2) return ORT_OK;
	if (t->def.placement != ORT_PLACEMENT_LEAVES && !content_reserve(t)) return ORT_ERROR_OUT_OF_MEMORY;
	reading_begin(t);
	if (t->def.placement == ORT_PLACEMENT_LEAVES) {
		pairs_leaves(&run, t->root);
	} else {
		pairs_content(t, t->root);
		pairs_descend(&run, t->root, 0, 0);
	}
	reading_end(t);
	return run.result;
}

// bp_snapshot.c: every current pair of a dynamic tree, found through a packed
// snapshot of its items' boxes — the broad phase's all-pairs update.
//
// When most items moved (or on the first update) the broad phase needs every
// pair of the tree at once. The dynamic tree can find them itself
// (tree_find_pairs), but its cells were shaped by the items' history and its
// walk reads entries through chunk chains; a packed tree built from the
// current boxes in Morton order answers the same question in a fraction of
// the instructions (the build is a radix sort and one linear pass). So the
// snapshot copies each live item's box (its entry's box: the full box in
// every placement) into an array, builds a packed tree over it, and runs the
// packed pair finder; box k of the array is item `item[k]`.
//
// What the packed finder reports are overlapping boxes; a pair is passed on
// only when the tree's find_pairs would report it: both filters allow it,
// not both static (items_pair), and the exact bounds meet when one is a
// sphere (items_touch). Pairs are handed on as item indices, lower first.
//
// The snapshot keeps its arrays and its packed tree between updates (the
// packed tree's build allocates only when the scene outgrows it), and takes
// all its memory through the tree's allocator, counted in the tree's bytes:
// in steady state it allocates nothing (the packed finder's sweep keys for
// piles of boxes are kept in the packed tree between calls too).
//
// The boxes come from the detached mode's dense array (tree_detach.c), which
// holds every live item's box by item slot: when move_many or moves detached
// the tree, as they are; else filled from the entries first (one walk of the
// pools, which reads the entries in memory order). Every slot live: the
// packed tree is built over the array itself (box k is item k); with free
// slots, over a copy of the live ones. The snapshot writes nothing to the
// tree but the dense array, and the tree may change freely between updates. A box the packed tree refuses (none should:
// both check the same limits) or a worker system the snapshot cannot use
// falls back to the tree's own find_pairs, slower and the same pairs.
#include "task_int.h"
#include "tree_int.h"

typedef ORTHANT_NAME(packed) bp_packed;

struct bp_snap {
	bp_packed *packed; ///< over boxes[0, len), or NULL until the first build
	box_t *boxes;      ///< [cap]: the live items' boxes, in slot order (the dense array has free slots)
	uint32_t *item;    ///< [cap]: the item each box is
	uint32_t len, cap;
	bool built; ///< packed holds src[0, len); else pairs come from the tree
	/// What the packed tree was built from: boxes, or the detached mode's
	/// dense array (ident: box k is item k, every slot live).
	const box_t *src;
	bool ident;
};

/// The snapshot's packed tree allocates through the tree: its bytes are the tree's.
static void *bp_snap_alloc(void *ctx, size_t size) { return mem_alloc(ctx, size); }

static void bp_snap_free_fn(void *ctx, void *p, size_t size) { mem_free(ctx, p, size); }

static void bp_snap_free(tree_t *t, struct bp_snap *s)
{
	if (!s) return;
	ORTHANT_NAME(packed_destroy)(s->packed);
	mem_free(t, s->boxes, (size_t)s->cap * sizeof *s->boxes);
	mem_free(t, s->item, (size_t)s->cap * sizeof *s->item);
	mem_free(t, s, sizeof *s);
}

/// Room for n boxes (a quarter to spare, so a growing world does not grow it
/// every frame). False, with the arrays as they were, without memory.
static bool bp_snap_reserve(tree_t *t, struct bp_snap *s, uint32_t n)
{
	if (n <= s->cap) return true;
	uint64_t want = (uint64_t)n + n / 4 + 64;
	if (want > UINT32_MAX) want = UINT32_MAX;
	box_t *boxes = mem_alloc(t, (size_t)want * sizeof *boxes);
	uint32_t *ids = boxes ? mem_alloc(t, (size_t)want * sizeof *ids) : NULL;
	if (!ids) {
		mem_free(t, boxes, (size_t)want * sizeof *boxes);
		return false;
	}
	// Nothing to copy: the arrays are refilled before every build.
	mem_free(t, s->boxes, (size_t)s->cap * sizeof *s->boxes);
	mem_free(t, s->item, (size_t)s->cap * sizeof *s->item);
	s->boxes = boxes;
	s->item = ids;
	s->cap = (uint32_t)want;
	return true;
}

/// Make *sp (creating it on first use) a snapshot of the tree's live items.
/// ORT_OK when the pairs can be found (through the packed tree, or the tree's
/// own walk when the packed tree refuses the boxes); out of memory leaves the
/// tree as it was.
///
/// `walk`: the tree's own walk is wanted when its entries hold the boxes
/// (attached). The first update of a tree takes it: the tree was built or
/// filled for its own shape, its walk finds the pairs in about the work of
/// ortN_tree_find_pairs on every kind of scene, and the snapshot would first
/// copy every box and sort them (three to five times the walk's instructions
/// on 20k uniform boxes, more on scenes without pairs).
static ort_result bp_snap_build(tree_t *t, struct bp_snap **sp, bool walk)
{
	// Outside every callback nothing waits in the deferred queue: each live
	// item is stored, with its current box.
	assert(!in_callback(t) && t->pending_len == 0);
	struct bp_snap *s = *sp;
	if (!s) {
		s = mem_alloc(t, sizeof *s);
		if (!s) return ORT_ERROR_OUT_OF_MEMORY;
		memset(s, 0, sizeof *s);
		*sp = s;
	}
	s->built = false;
	if (walk && atomic_load_explicit(&t->det_state, memory_order_relaxed) == DET_ATTACHED) return ORT_OK;
	if (!s->packed) {
		ORTHANT_NAME(packed_def) d = ORTHANT_NAME(packed_default_def)();
		d.allocator = (ort_allocator){bp_snap_alloc, bp_snap_free_fn, t};
		// The tree's region, if it names one, spares the build its bounding
		// pass; boxes outside it are found as any other.
		d.region = t->def.region;
		d.use_region = t->def.use_region;
		ort_result r = ORTHANT_NAME(packed_create)(&d, &s->packed);
		if (r != ORT_OK) return r;
	}
	// The detached mode's dense array holds every live item's box when valid
	// (tree_detach.c): the packed tree is built from it as it is when every
	// item slot is live, else from its live slots, read in slot order.
	const box_t *dense = t->live ? detached_boxes(t) : NULL; // no items: no array
	if (t->live && !dense) return ORT_ERROR_OUT_OF_MEMORY;
	uint32_t k = 0;
	s->ident = dense && t->live == t->item_len;
	if (s->ident)
		k = t->live;
	else if (!bp_snap_reserve(t, s, t->live))
		return ORT_ERROR_OUT_OF_MEMORY;
	else
		for (uint32_t i = 0; i < t->item_len; ++i)
			if (t->items[i].flags & ITEM_LIVE) {
				s->boxes[k] = dense[i];
				s->item[k++] = i;
			}
	assert(k == t->live);
	s->src = s->ident ? dense : s->boxes; // after the reserve, which may move boxes
	s->len = k;
	// The tree's workers, if it has any: the packed build and pair finder cut
	// their work into jobs and report in the serial order.
	ORTHANT_NAME(packed_set_tasks)(s->packed, t->def.tasks);
	ort_result r = ORTHANT_NAME(packed_build)(s->packed, s->src, (int)k);
	if (r == ORT_ERROR_OUT_OF_MEMORY) return r;
	s->built = r == ORT_OK;
	return ORT_OK;
}

/// The snapshot's pairs come from the tree's own walk.
static bool bp_snap_walks(const struct bp_snap *s) { return !s->built; }

typedef bool bp_item_pair_fn(void *ctx, uint32_t a, uint32_t b);

typedef struct bp_snap_run {
	const tree_t *t;
	const struct bp_snap *s;
	bp_item_pair_fn *fn;
	void *ctx;
} bp_snap_run;

static bool bp_snap_pair(void *ctx, uint32_t x, uint32_t y)
{
	const bp_snap_run *run = ctx;
	const tree_t *t = run->t;
	const struct bp_snap *s = run->s;
	uint32_t a = s->ident ? x : s->item[x], b = s->ident ? y : s->item[y];
	if ((t->statics || t->filters) && !items_pair(t, a, b)) return true;
	if (t->spheres && !items_touch(t, a, b, &s->src[x], &s->src[y])) return true;
	return run->fn(run->ctx, a, b);
}

/// Every current pair of the tree to fn (its two items in either order),
/// until fn returns false; the snapshot is the one bp_snap_build made since
/// the tree last changed. Deterministic: the same tree gives the same
/// sequence, for any number of workers.
/// The pairs to fn, or on the tree's own walk through sink while it has room
/// (then to fn when it has none).
static ort_result bp_snap_pairs(tree_t *t, const struct bp_snap *s, bp_item_pair_fn *fn, void *ctx, pair_sink *sink)
{
	// Box k is item k and no pair of overlapping boxes is refused (no
	// statics, filters or spheres): the packed finder's pairs are the items'
	// pairs, handed on without a call between.
	if (s->built && s->ident && !t->statics && !t->filters && !t->spheres)
		return ORTHANT_NAME(packed_find_pairs)(s->packed, fn, ctx);
	if (!s->built) return pairs_find(t, ORT_MASK_ALL, NULL, fn, ctx, sink); // item indices, no handles made
	bp_snap_run run = {t, s, fn, ctx};
	return ORTHANT_NAME(packed_find_pairs)(s->packed, bp_snap_pair, &run);
}

// ---- linear passes of the all-pairs update in jobs --------------------------------------

typedef struct bps_ranges {
	bp_range_fn *fn;
	void *ctx;
	uint32_t n, rows;
} bps_ranges;

static void bps_range_job(void *ctx, int job, tk_out *out)
{
	(void)out;
	const bps_ranges *c = ctx;
	uint32_t lo = (uint32_t)job * c->rows;
	c->fn(c->ctx, lo, c->n - lo > c->rows ? lo + c->rows : c->n);
}

/// fn over [0, n) in ranges of at least min_rows, cut by n alone: on the
/// tree's workers when it has some (fn must then only read what no other
/// range writes, and write its range's own slots), else in one call here.
static void bp_ranges(tree_t *t, uint32_t n, uint32_t min_rows, bp_range_fn *fn, void *ctx)
{
	bps_ranges c = {fn, ctx, n, min_rows};
	if (n / TK_JOBS_TARGET > c.rows) c.rows = n / TK_JOBS_TARGET;
	uint32_t jobs = (n + c.rows - 1) / c.rows;
	if (jobs < 2 || !ort_tk_acquire(t->def.tasks)) {
		fn(ctx, 0, n);
		return;
	}
	ort_tk_for(t->def.tasks, (int)jobs, bps_range_job, &c);
	ort_tk_release(t->def.tasks);
}

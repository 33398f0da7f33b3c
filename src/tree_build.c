// tree_build.c: ortN_tree_build — many items in one pass. Into an empty tree
// the whole batch is partitioned top-down (build_split, build_leaves_node): a
// root around the batch, then each node's boxes split among its children by a
// counting sort, O(n * depth) and no per-item descent. Into a tree that holds
// items the batch is inserted one by one, undone on failure.
#include <float.h>

#include "task_int.h"
#include "tree_int.h"

// ---- loose and tight: keys at the top, subtrees as jobs ------------------------------
//
// The build of a loose or tight tree into an empty one (build_split) runs in
// four steps, each either on tasks (task.h) or serially, cut the same way:
//
//   1. keys: each box's path down the top K levels (its child at each level,
//      0 where it stays) is one number; pieces of the input count them
//      (bd_job_keys) and scatter the boxes, with their item indices, into
//      one array sorted by key (bd_job_scatter). A key's digits run from the
//      top, and "stays" sorts before every child, so the array is in the
//      pre-order of the nodes; the sort is stable, so within a key the input
//      order holds.
//   2. plan (calling thread): from the key counts, each top cell holding more
//      than `limit` boxes that would split is a top node; every other
//      non-empty cell under a top node is a job's subtree.
//   3. jobs, twice: first each subtree is partitioned as the one-by-one build
//      would (a stable counting sort per node, in place over its own part of
//      the array) and described node by node in pre-order (bd_job_sub); then,
//      with every job's node and chunk counts known, each job writes its
//      nodes and entries into its own ranges of the pools (bd_job_emit).
//   4. the calling thread writes the top nodes, and their categories from
//      their children's.
//
// Nodes and chunks are numbered in pre-order, the top nodes and the jobs'
// ranges interleaved as the walk meets them, so the tree — every index in it
// — depends on the boxes alone, never on the workers: with tasks or without,
// the same bytes. Memory is reserved once, from the counts, before anything
// is written; a refusal leaves an empty tree, as the batch found it.

/// Boxes per piece of the key and scatter passes.
#define BD_PIECE 16384
/// Levels the keys cover at most, so a key fits 16 bits ((NCHILD + 1)^K keys).
#if DIM == 2
#define BD_KMAX 4
#else
#define BD_KMAX 3
#endif

/// One node of a job's subtree, in pre-order.
typedef struct bd_desc {
	uint32_t parent; ///< index in the job of its parent (NIL: the job's root)
	uint32_t count, total;
	uint8_t which, flags, retry; ///< its index in the parent, node.flags and node.retry
} bd_desc;

enum { BD_UNUSED, BD_TOP, BD_JOB };

/// A cell of the top levels, in heap order (cell i's children are
/// i * NCHILD + 1 + c).
typedef struct bd_cell {
	node nd;        ///< bounds, level; a top node's flags, total and own count
	uint32_t first; ///< where its boxes start in the sorted array
	uint32_t node_base, chunk_base; ///< its first node and chunk in the pools
	uint32_t nodes, chunks;         ///< a job's: what its subtree takes
	int16_t max_level;              ///< a job's: its deepest node's level
	uint8_t kind;
	size_t desc_at; ///< serially: its descriptions' offset in the scratch
} bd_cell;

/// What the steps share. The scratch holds the arrays (at byte offsets: it
/// may move between steps, never during one).
typedef struct bd_ctx {
	tree_t *t;
	ort_tasks *tasks; ///< NULL: serially
	const box_t *boxes;
	void *const *user;
	ort_handle *out; ///< the caller's handles, or NULL
	uint32_t n, limit, pieces, njobs, ncells, ninner, nkeys;
	uint32_t old_items; ///< item slots before the build (reused ones keep their generation)
	/// A pool growing (bd_grow): the new block, the old one and their sizes.
	unsigned char *grow_to;
	const unsigned char *grow_from;
	size_t grow_old, grow_new;
	int K;
	uint32_t span[BD_KMAX + 1]; ///< keys under one cell of level L
	size_t at_sorted, at_tmp, at_keys, at_cells, at_fit, at_kstart, at_jobs, at_hist, at_end;
} bd_ctx;

#define BD_AT(c, type, at) ((type *)(void *)((char *)(c)->t->scratch + (c)->at))

static inline size_t bd_align(size_t x) { return (x + 15) & ~(size_t)15; }

/// A child cell c of p: bounds, split point and level, the rest empty.
static void bd_child(const tree_t *t, const node *p, int c, node *ch)
{
	(void)t; // (its prune delay is bd_entries' to set: tree_t.node_waits)
	memset(ch, 0, sizeof *ch);
	child_cell(t, p, c, ch->lo, ch->hi);
	ch->level = (int16_t)(p->level + 1);
	ch->parent = NIL;
	for (int k = 0; k < NCHILD; ++k) ch->child[k] = NIL;
	ch->head = NIL;
}

// ---- step 1: keys and the sorted array ----

/// Piece p is boxes [p * BD_PIECE, bd_piece_end).
static inline uint32_t bd_piece_end(const bd_ctx *c, int p)
{
	uint64_t end = (uint64_t)p * BD_PIECE + BD_PIECE;
	return end < c->n ? (uint32_t)end : c->n;
}

static void bd_job_keys(void *ctx, int p, tk_out *out)
{
	(void)out;
	const bd_ctx *c = ctx;
	const fitter *fit = BD_AT(c, const fitter, at_fit);
	uint16_t *keys = BD_AT(c, uint16_t, at_keys);
	uint32_t *hist = BD_AT(c, uint32_t, at_hist) + (size_t)p * c->nkeys;
	memset(hist, 0, c->nkeys * sizeof *hist);
	const box_t *boxes = c->boxes;
	const int K = c->K;
	for (uint32_t k = (uint32_t)p * BD_PIECE, end = bd_piece_end(c, p); k < end; ++k) {
		uint32_t key = 0, cell = 0;
		bool stays = false;
		for (int L = 0; L < K; ++L) {
			int digit = 0;
			if (!stays) {
				int ch = fitter_child(&fit[cell], &boxes[k]);
				stays = ch < 0;
				if (!stays) digit = ch + 1, cell = cell * NCHILD + 1 + (uint32_t)ch;
			}
			key = key * (NCHILD + 1) + (uint32_t)digit;
		}
		keys[k] = (uint16_t)key;
		hist[key]++;
	}
}

static void bd_job_scatter(void *ctx, int p, tk_out *out)
{
	(void)out;
	const bd_ctx *c = ctx;
	const uint16_t *keys = BD_AT(c, const uint16_t, at_keys);
	entry *sorted = BD_AT(c, entry, at_sorted);
	uint32_t *at = BD_AT(c, uint32_t, at_hist) + (size_t)p * c->nkeys;
	for (uint32_t k = (uint32_t)p * BD_PIECE, end = bd_piece_end(c, p); k < end; ++k) {
		entry *e = &sorted[at[keys[k]]++];
		e->box = c->boxes[k];
		e->item = k; // the box's index in the batch, until bd_entries makes its item
	}
}

// ---- step 2: the plan ----

/// Cell i of level L, whose keys start with prefix: a top node or a job.
static void bd_plan(bd_ctx *c, uint32_t i, int L, uint32_t prefix)
{
	const tree_t *t = c->t;
	bd_cell *cells = BD_AT(c, bd_cell, at_cells);
	const uint32_t *ks = BD_AT(c, const uint32_t, at_kstart);
	const fitter *fit = BD_AT(c, const fitter, at_fit);
	uint32_t lo = prefix * c->span[L], m = ks[lo + c->span[L]] - ks[lo];
	bd_cell *ce = &cells[i];
	ce->first = ks[lo];
	ce->nd.total = m;
	// Above max_depth (K <= max_depth) a split depends on the count and the
	// cell alone, as fitter.can says.
	if (L < c->K && m > c->limit && m > (uint32_t)t->def.bucket_size && fit[i].can) {
		ce->kind = BD_TOP;
		ce->nd.flags = NODE_DIVIDED;
		ce->nd.count = ks[lo + 1] - ks[lo];
		for (int ch = 0; ch < NCHILD; ++ch) {
			uint32_t cp = prefix * (NCHILD + 1) + (uint32_t)ch + 1, clo = cp * c->span[L + 1];
			if (ks[clo + c->span[L + 1]] > ks[clo]) bd_plan(c, i * NCHILD + 1 + (uint32_t)ch, L + 1, cp);
		}
		return;
	}
	ce->kind = BD_JOB;
	BD_AT(c, uint32_t, at_jobs)[c->njobs++] = i;
}

/// Node and chunk bases in pre-order; false past the pools' index range.
static bool bd_bases(bd_ctx *c, uint32_t i, uint64_t *nodes, uint64_t *chunks)
{
	bd_cell *ce = &BD_AT(c, bd_cell, at_cells)[i];
	if (*nodes + ce->nodes + 1 > UINT32_MAX - 1 || *chunks + ce->chunks + ce->nd.count > UINT32_MAX - 1) return false;
	ce->node_base = (uint32_t)*nodes;
	ce->chunk_base = (uint32_t)*chunks;
	if (ce->kind == BD_JOB) {
		*nodes += ce->nodes;
		*chunks += ce->chunks;
		return true;
	}
	*nodes += 1;
	*chunks += (ce->nd.count + CHUNK_CAP - 1) / CHUNK_CAP;
	for (int ch = 0; ch < NCHILD; ++ch) {
		uint32_t ci = i * NCHILD + 1 + (uint32_t)ch;
		if (BD_AT(c, bd_cell, at_cells)[ci].kind != BD_UNUSED && !bd_bases(c, ci, nodes, chunks)) return false;
	}
	return true;
}

// ---- step 3: the jobs ----

/// Past max_depth, whether boxes r[0..m) are one box repeated: split()
/// refuses such a pile, and so does build.
static bool bd_pile_of_one(const tree_t *t, const node *nd, const entry *r, uint32_t m)
{
	if (node_depth(t, nd) < t->def.max_depth) return false;
	for (uint32_t k = 1; k < m; ++k)
		if (memcmp(&r[k].box, &r[0].box, sizeof r[0].box) != 0) return false;
	return true;
}

typedef struct bd_sub {
	const tree_t *t;
	tk_out *out;
	uint32_t nodes;
	uint64_t chunks;
	int16_t max_level;
} bd_sub;

/// Partition r[0..m) (all within nd's bounds) between nd and its children,
/// recursively, as inserting them one by one would place them; describe each
/// node. tmp and cls have room for m.
static void bd_sub_node(bd_sub *s, node *nd, uint32_t parent, int which, entry *r, entry *tmp, uint8_t *cls,
                        uint32_t m)
{
	const tree_t *t = s->t;
	uint32_t me = s->nodes++;
	if (nd->level > s->max_level) s->max_level = nd->level;
	bd_desc d = {parent, m, m, (uint8_t)which, 0, 0};
	nd->total = m;
	if (m <= (uint32_t)t->def.bucket_size || !can_split(t, nd) || bd_pile_of_one(t, nd, r, m)) {
		// A refused pile waits, as after a split that could not help.
		if (m > (uint32_t)t->def.bucket_size && can_split(t, nd)) d.retry = node_retry_after(m);
		tk_put(s->out, &d, sizeof d);
		s->chunks += (m + CHUNK_CAP - 1) / CHUNK_CAP;
		return;
	}
	nd->flags |= NODE_DIVIDED;
	d.flags = NODE_DIVIDED;
	// Counting sort by destination: class 0 stays here, class c + 1 goes to child c.
	uint32_t counts[NCHILD + 1] = {0};
	fitter f;
	fitter_init(t, nd, &f);
	for (uint32_t k = 0; k < m; ++k) {
		int c = fitter_child(&f, &r[k].box) + 1;
		cls[k] = (uint8_t)c;
		counts[c]++;
	}
	uint32_t start[NCHILD + 2], pos[NCHILD + 1];
	start[0] = 0;
	for (int c = 0; c <= NCHILD; ++c) start[c + 1] = start[c] + counts[c];
	memcpy(pos, start, sizeof pos);
	for (uint32_t k = 0; k < m; ++k) tmp[pos[cls[k]]++] = r[k];
	memcpy(r, tmp, (size_t)m * sizeof *r);
	d.count = counts[0];
	tk_put(s->out, &d, sizeof d);
	s->chunks += (counts[0] + CHUNK_CAP - 1) / CHUNK_CAP;
	for (int c = 0; c < NCHILD; ++c) {
		uint32_t mc = counts[c + 1], s0 = start[c + 1];
		if (!mc) continue;
		node ch;
		bd_child(t, nd, c, &ch);
		bd_sub_node(s, &ch, me, c, r + s0, tmp + s0, cls + s0, mc);
	}
}

/// Job j, first run: its subtree partitioned and described into out. A
/// first call with too small a buffer only asks for a likely size.
static void bd_job_sub(void *ctx, int j, tk_out *out)
{
	const bd_ctx *c = ctx;
	bd_cell *ce = &BD_AT(c, bd_cell, at_cells)[BD_AT(c, uint32_t, at_jobs)[j]];
	uint32_t m = ce->nd.total;
	size_t guess = ((size_t)m / 4 + 16) * sizeof(bd_desc);
	if (out->cap < guess) {
		out->used = guess;
		return;
	}
	bd_sub s = {c->t, out, 0, 0, 0};
	node nd = ce->nd;
	uint8_t *cls = (uint8_t *)(BD_AT(c, uint16_t, at_keys) + ce->first); // the keys are spent: 2m bytes
	bd_sub_node(&s, &nd, NIL, 0, BD_AT(c, entry, at_sorted) + ce->first, BD_AT(c, entry, at_tmp) + ce->first, cls, m);
	ce->nodes = s.nodes;
	ce->chunks = s.chunks > UINT32_MAX ? UINT32_MAX : (uint32_t)s.chunks;
	ce->max_level = s.max_level;
}

/// A node's entries, the sorted boxes [p0, p0 + count), into chunks cb, cb + 1,
/// ... (the first holds the first CHUNK_CAP, the last is the head, as
/// entry_append leaves them). The box at p becomes item p, made as item_new
/// makes it (a cleared tree hands out its slots in order): items lie in the
/// tree's order, so a query's hits, reported from a few nodes, share lines.
static void bd_entries(const bd_ctx *c, uint32_t gi, uint32_t p0, uint32_t count, uint32_t cb)
{
	tree_t *t = c->t;
	node *n = &t->nodes[gi];
	const entry *r = BD_AT(c, const entry, at_sorted) + p0;
	uint32_t q = (count + CHUNK_CAP - 1) / CHUNK_CAP;
	node_cats_set(t, gi, 0);
	node_wait_init(t, gi);
	for (uint32_t i = 0; i < q; ++i) {
		chunk *ch = &t->chunks[cb + i];
		ch->next = i ? cb + i - 1 : NIL;
		ch->owner = gi;
		uint32_t fill = i + 1 < q ? CHUNK_CAP : count - i * CHUNK_CAP;
		for (uint32_t k = 0; k < fill; ++k) {
			uint32_t at = i * CHUNK_CAP + k, index = p0 + at, in_batch = r[at].item;
			item *it = &t->items[index];
			*it = (item){.user = c->user ? c->user[in_batch] : NULL, .addr = (cb + i) * CHUNK_CAP + k,
			             .gen = index >= c->old_items ? 1 : it->gen, .flags = ITEM_LIVE};
			if (t->filters) t->filters[index] = ORT_FILTER_DEFAULT;
			ch->e[k] = (entry){r[at].box, index};
			node_cats_add(t, gi, item_cat(t, index));
			if (c->out) c->out[in_batch] = make_handle(t, index);
		}
	}
	n->head = q ? cb + q - 1 : NIL;
	n->count = count;
}

/// A node of cell geometry g at gi: empty, with links to come.
static node *bd_node_at(tree_t *t, uint32_t gi, const node *g, uint32_t parent)
{
	node *n = &t->nodes[gi];
	bd_child(t, g, 0, n); // the defaults; the bounds are g's, below
	memcpy(n->lo, g->lo, sizeof n->lo);
	memcpy(n->hi, g->hi, sizeof n->hi);
	n->level = g->level;
	n->parent = parent;
	return n;
}

static const bd_desc *bd_descs(const bd_ctx *c, int j, const bd_cell *ce)
{
	if (c->tasks) return (const bd_desc *)(const void *)ort_tk_output(c->tasks, j)->data;
	return (const bd_desc *)(const void *)((const char *)c->t->scratch + ce->desc_at);
}

/// Job j, second run: its nodes and entries into the pools at its bases.
static void bd_job_emit(void *ctx, int j, tk_out *out)
{
	(void)out;
	const bd_ctx *c = ctx;
	tree_t *t = c->t;
	uint32_t i = BD_AT(c, uint32_t, at_jobs)[j];
	const bd_cell *ce = &BD_AT(c, const bd_cell, at_cells)[i];
	const bd_desc *d = bd_descs(c, j, ce);
	uint32_t nb = ce->node_base, cb = ce->chunk_base, at = ce->first;
	for (uint32_t k = 0; k < ce->nodes; ++k) {
		uint32_t gi = nb + k;
		node *n;
		if (k == 0) {
			uint32_t up = i ? BD_AT(c, const bd_cell, at_cells)[(i - 1) / NCHILD].node_base : NIL;
			n = bd_node_at(t, gi, &ce->nd, up);
		} else {
			uint32_t pi = nb + d[k].parent;
			n = &t->nodes[gi];
			bd_child(t, &t->nodes[pi], d[k].which, n);
			n->parent = pi;
			t->nodes[pi].child[d[k].which] = gi;
		}
		n->flags = d[k].flags;
		n->total = d[k].total;
		n->retry = d[k].retry;
		bd_entries(c, gi, at, d[k].count, cb);
		at += d[k].count;
		cb += (d[k].count + CHUNK_CAP - 1) / CHUNK_CAP;
	}
	// Categories up: in pre-order a child comes after its parent.
	if (t->node_cats)
		for (uint32_t k = ce->nodes; k-- > 1;) t->node_cats[nb + d[k].parent] |= t->node_cats[nb + k];
}

/// Run fn over [0, count): on the tasks, or here in order.
static void bd_for(bd_ctx *c, int count, tk_job_fn *fn)
{
	if (c->tasks) {
		ort_tk_for(c->tasks, count, fn, c);
		return;
	}
	for (int k = 0; k < count; ++k) fn(c, k, NULL);
}

/// Step 3's first run for every job: on the tasks (their own buffers), or
/// here into the scratch past at_end.
static ort_result bd_subtrees(bd_ctx *c)
{
	if (c->tasks) return ort_tk_run(c->tasks, (int)c->njobs, 1, bd_job_sub, c);
	size_t at = c->at_end;
	for (uint32_t j = 0; j < c->njobs; ++j) {
		bd_cell *ce = &BD_AT(c, bd_cell, at_cells)[BD_AT(c, uint32_t, at_jobs)[j]];
		ce->desc_at = at;
		size_t want = ((size_t)ce->nd.total / 4 + 16) * sizeof(bd_desc);
		for (;;) {
			if (!scratch_reserve(c->t, at + want)) return ORT_ERROR_OUT_OF_MEMORY;
			ce = &BD_AT(c, bd_cell, at_cells)[BD_AT(c, uint32_t, at_jobs)[j]];
			tk_out o = {(unsigned char *)c->t->scratch + at, c->t->scratch_bytes - at, 0};
			bd_job_sub(c, (int)j, &o);
			if (o.used <= o.cap) {
				at = bd_align(at + o.used);
				break;
			}
			want = o.used; // partitioning again finds the same: it is stable
		}
	}
	return ORT_OK;
}

/// Bytes per piece of a pool's growth.
#define BD_FILL ((size_t)1 << 20)

/// Piece p of a growing pool: the old contents copied, the rest zeroed.
static void bd_job_fill(void *ctx, int p, tk_out *out)
{
	(void)out;
	const bd_ctx *c = ctx;
	size_t at = (size_t)p * BD_FILL, end = at + BD_FILL < c->grow_new ? at + BD_FILL : c->grow_new;
	size_t copy = c->grow_old > at ? (c->grow_old < end ? c->grow_old : end) - at : 0;
	if (copy) memcpy(c->grow_to + at, c->grow_from + at, copy);
	memset(c->grow_to + at + copy, 0, end - at - copy);
}

/// A pool of *cap elements grown to hold need (the capacity doubles, at
/// least 16, at most limit; a tree's first build, which knows what it
/// needs, takes pool_fit_cap(need) instead), its copy and zero fill in
/// pieces on the tasks. Only the build uses it: a pool's first growth
/// touches every page of the new block, and here the workers share that.
static bool bd_grow(bd_ctx *c, void **arr, uint32_t *cap, size_t elem, uint64_t need, uint64_t limit)
{
	if (need <= *cap) return true;
	if (need > limit) return false;
	uint64_t want = c->t->built ? (uint64_t)*cap * 2 : pool_fit_cap(need);
	if (want < need) want = need;
	if (want < 16) want = 16;
	if (want > limit) want = limit;
	void *p = mem_alloc(c->t, (size_t)want * elem);
	if (!p) return false;
	c->grow_to = p;
	c->grow_from = *arr;
	c->grow_old = (size_t)*cap * elem;
	c->grow_new = (size_t)want * elem;
	bd_for(c, (int)((c->grow_new + BD_FILL - 1) / BD_FILL), bd_job_fill);
	mem_free(c->t, *arr, c->grow_old);
	*arr = p;
	*cap = (uint32_t)want;
	return true;
}

/// Room for items 0..n-1 in a cleared tree. With side arrays (filters,
/// spheres, the broad phase's) items_reserve grows them all.
static ort_result bd_items_reserve(bd_ctx *c)
{
	tree_t *t = c->t;
	if (t->filters || t->spheres || t->bp) return items_reserve(t, c->n);
	return bd_grow(c, (void **)&t->items, &t->item_cap, sizeof(item), c->n, INT32_MAX) ? ORT_OK : ORT_ERROR_OUT_OF_MEMORY;
}

/// The scratch layout for n boxes over K key levels; false without memory.
static bool bd_layout(bd_ctx *c)
{
	size_t n = c->n;
	c->at_sorted = 0;
	c->at_tmp = bd_align(n * sizeof(entry));
	c->at_keys = c->at_tmp + bd_align(n * sizeof(entry));
	c->at_cells = c->at_keys + bd_align(n * sizeof(uint16_t));
	c->at_fit = c->at_cells + bd_align(c->ncells * sizeof(bd_cell));
	c->at_kstart = c->at_fit + bd_align(c->ninner * sizeof(fitter));
	c->at_jobs = c->at_kstart + bd_align(((size_t)c->nkeys + 1) * sizeof(uint32_t));
	c->at_hist = c->at_jobs + bd_align(c->ncells * sizeof(uint32_t));
	c->at_end = c->at_hist + bd_align((size_t)c->pieces * c->nkeys * sizeof(uint32_t));
	// Serially the jobs' descriptions follow: room for what they likely need
	// (as bd_job_sub guesses), so the scratch rarely moves with all above.
	return scratch_reserve(c->t, c->at_end + (n / 4 + 16 * (size_t)c->ncells) * sizeof(bd_desc));
}

/// build into an emptied tree with its root made: loose and tight.
static ort_result build_split(tree_t *t, const box_t *boxes, void *const *user, uint32_t n, ort_handle *out)
{
	bd_ctx c = {.t = t, .boxes = boxes, .user = user, .out = out, .n = n, .old_items = t->item_len};
	c.limit = n / TK_JOBS_TARGET < 1024 ? 1024 : n / TK_JOBS_TARGET;
	// Enough key levels for cells of about `limit` boxes (none past max_depth).
	uint64_t cells_at_k = 1;
	while (c.K < BD_KMAX && c.K < t->def.max_depth && (uint64_t)c.limit * cells_at_k < n) c.K++, cells_at_k *= NCHILD;
	c.nkeys = 1;
	for (int L = 0; L < c.K; ++L) c.nkeys *= NCHILD + 1;
	c.span[c.K] = 1;
	for (int L = c.K; L-- > 0;) c.span[L] = c.span[L + 1] * (NCHILD + 1);
	c.ncells = 1, c.ninner = 0;
	for (uint32_t L = 0, w = 1; L < (uint32_t)c.K; ++L, w *= NCHILD) c.ninner += w, c.ncells += w * NCHILD;
	c.pieces = (n + BD_PIECE - 1) / BD_PIECE;
	if (!bd_layout(&c)) return ORT_ERROR_OUT_OF_MEMORY;
	ort_tasks *tasks = t->def.tasks;
	if (ort_tk_acquire(tasks)) c.tasks = tasks;
	ort_result r = bd_items_reserve(&c);
	if (r != ORT_OK) {
		if (c.tasks) ort_tk_release(tasks);
		return r;
	}

	// The top cells and their fitters.
	bd_cell *cells = BD_AT(&c, bd_cell, at_cells);
	memset(cells, 0, c.ncells * sizeof *cells);
	cells[0].nd = t->nodes[t->root];
	// A fresh root (build_empty): its split point is its centre, as every
	// node the build makes below it has (bd_child, bd_node_at).
	assert(!(cells[0].nd.flags & NODE_ODDMID));
	for (uint32_t i = 0; i < c.ninner; ++i) {
		fitter_init(t, &cells[i].nd, &BD_AT(&c, fitter, at_fit)[i]);
		for (int ch = 0; ch < NCHILD; ++ch) bd_child(t, &cells[i].nd, ch, &cells[i * NCHILD + 1 + (uint32_t)ch].nd);
	}
	// 1. keys
	bd_for(&c, (int)c.pieces, bd_job_keys);
	uint32_t *hist = BD_AT(&c, uint32_t, at_hist), *ks = BD_AT(&c, uint32_t, at_kstart), run = 0;
	for (uint32_t key = 0; key < c.nkeys; ++key) {
		ks[key] = run;
		for (uint32_t p = 0; p < c.pieces; ++p) {
			uint32_t h = hist[(size_t)p * c.nkeys + key];
			hist[(size_t)p * c.nkeys + key] = run;
			run += h;
		}
	}
	ks[c.nkeys] = run;
	assert(run == n);

	bd_for(&c, (int)c.pieces, bd_job_scatter);
	// 2. plan, 3. subtrees
	bd_plan(&c, 0, 0, 0);
	r = bd_subtrees(&c);
	uint64_t nodes = 0, chunks = 0;
	if (r == ORT_OK && !bd_bases(&c, 0, &nodes, &chunks)) r = ORT_ERROR_CAPACITY;
	// The root (node 0) is live; tree_clear left the other free slots listed
	// in index order, so the next nodes and chunks are 1, 2, ... and 0, 1, ...
	assert(t->root == 0 && t->node_live == 1 && t->chunk_free_count == t->chunk_len);
	if (r == ORT_OK && (!bd_grow(&c, (void **)&t->nodes, &t->node_cap, sizeof(node), nodes, UINT32_MAX - 1) ||
	                    !node_sides_fit(t) ||
	                    !bd_grow(&c, (void **)&t->chunks, &t->chunk_cap, sizeof(chunk), chunks, UINT32_MAX - 1)))
		r = ORT_ERROR_OUT_OF_MEMORY;
	if (r != ORT_OK) {
		if (c.tasks) ort_tk_release(tasks);
		return r;
	}
	// 4. the top nodes, then the jobs' subtrees below them
	cells = BD_AT(&c, bd_cell, at_cells);
	int16_t max_level = cells[0].nd.level;
	for (uint32_t i = 0; i < c.ncells; ++i) {
		const bd_cell *ce = &cells[i];
		if (ce->kind == BD_JOB && ce->max_level > max_level) max_level = ce->max_level;
		if (ce->kind != BD_TOP) continue;
		uint32_t up = i ? cells[(i - 1) / NCHILD].node_base : NIL;
		node *nd = bd_node_at(t, ce->node_base, &ce->nd, up);
		nd->flags = NODE_DIVIDED;
		nd->total = ce->nd.total;
		for (int ch = 0; ch < NCHILD; ++ch) {
			const bd_cell *cc = &cells[i * NCHILD + 1 + (uint32_t)ch];
			if (cc->kind != BD_UNUSED) nd->child[ch] = cc->node_base;
		}
		bd_entries(&c, ce->node_base, ce->first, ce->nd.count, ce->chunk_base);
		if (ce->nd.level > max_level) max_level = ce->nd.level;
	}
	bd_for(&c, (int)c.njobs, bd_job_emit);
	if (c.tasks) ort_tk_release(tasks);
	// The items bd_entries made, as n calls of item_new would leave them.
	t->live = n;
	if (n >= t->item_len) t->item_len = n, t->item_free = NIL;
	else t->item_free = n;
	if (t->bp)
		for (uint32_t k = 0; k < n; ++k) bp_touch(t, k);
	for (uint32_t i = c.ncells; i-- > 1 && t->node_cats;)
		if (cells[i].kind != BD_UNUSED) t->node_cats[cells[(i - 1) / NCHILD].node_base] |= t->node_cats[cells[i].node_base];
	// The pools as if every node and chunk had been taken one by one.
	uint32_t nn = (uint32_t)nodes, nc = (uint32_t)chunks;
	if (nn >= t->node_len) t->node_len = nn, t->node_free = NIL;
	else t->node_free = nn;
	t->node_live = nn;
	if (nc >= t->chunk_len) t->chunk_len = nc, t->chunk_free = NIL, t->chunk_free_count = 0;
	else t->chunk_free = nc, t->chunk_free_count = t->chunk_len - nc;
	t->entries = n;
	t->height = max_level - cells[0].nd.level;
	return ORT_OK;
}

static box_t boxes_bounds(const box_t *boxes, uint32_t n)
{
	box_t all = boxes[0];
	for (uint32_t k = 1; k < n; ++k)
		for (int d = 0; d < DIM; ++d) {
			if (boxes[k].min[d] < all.min[d]) all.min[d] = boxes[k].min[d];
			if (boxes[k].max[d] > all.max[d]) all.max[d] = boxes[k].max[d];
		}
	return all;
}

/// A root for a batch into an empty tree: a cube around all of it, so cells
/// stay square and no growth is needed (root_cover still fixes rounding).
static bool root_for_batch(tree_t *t, const box_t *all)
{
	float side = 0.0f, lo[DIM], hi[DIM];
	for (int d = 0; d < DIM; ++d)
		if (all->max[d] - all->min[d] > side) side = all->max[d] - all->min[d];
	if (!(side > 0.0f)) side = 1.0f;
	for (int d = 0; d < DIM; ++d) {
		float c = all->min[d] + (all->max[d] - all->min[d]) * 0.5f;
		float s = side * 0.5f * 1.001f;
		float ulp = fabsf(c) * 1.2e-7f * 4.0f;
		if (s < ulp) s = ulp;
		if (s < FLT_MIN) s = FLT_MIN; // as in root_cell_for
		lo[d] = c - s;
		hi[d] = c + s;
	}
	if (!nodes_reserve(t, 1)) return false;
	if (t->root != NIL) empty_free(t, t->root);
	root_set(t, lo, hi);
	return true;
}

/// The top-down build of leaves trees: the n box indices at scratch[at..]
/// (item of box k at scratch[k]) all touch node ni's cell; each child gets the
/// ones touching its cell, written on top of the scratch stack (which may
/// move, so it is indexed, never held), except the child with the most,
/// last, whose list is written over ni's. The stack then holds, at each
/// level down, a parent's list only while a smaller sibling is built: when
/// items touch one child each that sibling holds at most half its parent's,
/// so the lists held sum to at most twice the parent's (2n in all, with the
/// copies the cap allows), not n a level down a pile that one child takes
/// whole level after level (a speck far below the scene). Returns false
/// when memory runs out.
static bool build_leaves_node(tree_t *t, uint32_t ni, const box_t *boxes, size_t at, uint32_t n, size_t top)
{
	uint32_t per[NCHILD] = {0}, over = 0;
	node *nd = &t->nodes[ni];
	nd->total = n; // what can_split weighs past max_depth
	bool split_it = n > (uint32_t)t->def.bucket_size && can_split(t, nd);
	if (split_it) {
		const uint32_t *S = t->scratch;
		// per counts the entries that stay (not capped by the split) first.
		uint32_t capped[NCHILD] = {0};
		box_t meet;
		leaves_meet_init(&meet);
		for (uint32_t k = 0; k < n; ++k) {
			unsigned touched = 0;
			for (int c = 0; c < NCHILD; ++c) {
				float lo[DIM], hi[DIM];
				child_cell(t, nd, c, lo, hi);
				if (cell_touches(lo, hi, &boxes[S[at + k]])) per[c]++, touched++;
			}
			if (touched < 2 || !cap_build_spans(t, nd, &boxes[S[at + k]])) continue;
			over++;
			unsigned mask = cap_child_mask(t, nd, &boxes[S[at + k]]); // rare: its touches moved to capped
			for (int c = 0; c < NCHILD; ++c) per[c] -= (mask >> c) & 1u, capped[c] += (mask >> c) & 1u;
		}
		split_it = leaves_split_helps(per, n - over, NULL); // as split() decides: what the split caps does not count
		for (uint32_t k = 0; k < n && !split_it; ++k) {
			const box_t *b = &boxes[S[at + k]];
			if (!cap_split_caps(t, nd, b, cap_child_mask(t, nd, b))) leaves_meet_add(&meet, b);
		}
		if (!split_it) split_it = leaves_split_helps(per, n - over, &meet);
		for (int c = 0; c < NCHILD; ++c) per[c] += capped[c];
		if (split_it && node_depth(t, nd) >= t->def.max_depth) {
			bool one = true; // past max_depth one box repeated is refused
			for (uint32_t k = 1; k < n && one; ++k) one = memcmp(&boxes[S[at + k]], &boxes[S[at]], sizeof boxes[0]) == 0;
			split_it = !one;
		}
	}
	if (!split_it) {
		if (!chunks_reserve(t, n / CHUNK_CAP + 1)) return false;
		const uint32_t *S = t->scratch;
		for (uint32_t k = 0; k < n; ++k) entry_append(t, ni, &boxes[S[at + k]], S[S[at + k]]);
		nd = &t->nodes[ni];
		nd->total = n;
		if (n > (uint32_t)t->def.bucket_size && can_split(t, nd)) nd->retry = node_retry_after(n);
		return true;
	}
	nd->flags |= NODE_DIVIDED;
	if (over) cap_build_split(t, nd, boxes, t->scratch, at, n, per); // items over the cap: stored capped, not copied down
	// The child with the most goes last, its list written over this one's
	// (spent by then), so a pile that goes whole into one child level after
	// level (a speck) takes no more room at each level.
	int last = -1;
	for (int c = 0; c < NCHILD; ++c)
		if (per[c] && (last < 0 || per[c] > per[last])) last = c;
	uint64_t total = 0;
	for (int k = 0; k < NCHILD && last >= 0; ++k) {
		int c = k == NCHILD - 1 ? last : k < last ? k : k + 1;
		if (!per[c]) continue;
		size_t from = c == last ? at : top; // c == last: filtered in place
		if (!scratch_reserve(t, (from + per[c]) * sizeof(uint32_t)) || !nodes_reserve(t, 1)) return false;
		uint32_t *S = t->scratch;
		float lo[DIM], hi[DIM];
		child_cell(t, &t->nodes[ni], c, lo, hi);
		size_t w = from;
		for (uint32_t j = 0; j < n; ++j)
			if (cell_touches(lo, hi, &boxes[S[at + j]]) && !(over && (t->items[S[S[at + j]]].flags & ITEM_OVERCAP)))
				S[w++] = S[at + j];
		// Fewer than per[c] when a sibling's subtree marked some since. (An
		// item marked in another branch is copied on down until a node
		// where it spans a child skips it; cap_build_fixup takes those copies
		// out.)
		uint32_t got = (uint32_t)(w - from);
		if (!got) continue;
		uint32_t ci = child_make(t, ni, c);
		if (!build_leaves_node(t, ci, boxes, from, got, w)) return false;
		total += t->nodes[ci].total;
		node_cats_add(t, ni, node_cats(t, ci));
	}
	t->nodes[ni].total = (uint32_t)total;
	return true;
}

/// build into a tree holding no items: one pass, no per-item descent.
static ort_result build_empty(tree_t *t, const box_t *boxes, void *const *user, uint32_t n, ort_handle *out)
{
	ORTHANT_NAME(tree_clear)(t);
	box_t all = boxes_bounds(boxes, n);
	if (!t->def.use_region && !root_for_batch(t, &all)) return ORT_ERROR_OUT_OF_MEMORY;
	ort_result r = root_grow(t, &all);
	if (r == ORT_OK) {
		// Growth may have left a chain of empty cells: start from the grown cell.
		float lo[DIM], hi[DIM];
		memcpy(lo, t->nodes[t->root].lo, sizeof lo);
		memcpy(hi, t->nodes[t->root].hi, sizeof hi);
		ORTHANT_NAME(tree_clear)(t);
		root_set(t, lo, hi); // a node freed by clear is still reserved
	}
	if (r == ORT_OK && t->bp && !bp_reserve(t, n, NIL)) r = ORT_ERROR_OUT_OF_MEMORY;
	if (r == ORT_OK && t->def.placement != ORT_PLACEMENT_LEAVES) {
		r = build_split(t, boxes, user, n, out);
	} else if (r == ORT_OK) {
		r = items_reserve(t, n);
		if (r == ORT_OK && !scratch_reserve(t, (size_t)n * 3 * sizeof(uint32_t))) r = ORT_ERROR_OUT_OF_MEMORY;
		if (r == ORT_OK) {
			// A cleared tree hands out items 0, 1, ..., n - 1 in order.
			uint32_t *item_of = t->scratch;
			for (uint32_t k = 0; k < n; ++k) item_of[k] = item_of[n + k] = item_new(t, user ? user[k] : NULL, true);
			if (!build_leaves_node(t, t->root, boxes, n, n, 2 * (size_t)n)) r = ORT_ERROR_OUT_OF_MEMORY;
			if (r == ORT_OK && !cap_build_fixup(t, boxes)) r = ORT_ERROR_OUT_OF_MEMORY;
		}
	}
	// The split build writes its nodes and entries directly: their bounds
	// (tree_int.h) in one pass.
	if (r == ORT_OK && t->def.placement != ORT_PLACEMENT_LEAVES) pairs_content(t, t->root);
	if (r == ORT_OK) own_settle_all(t);
	if (r != ORT_OK) {
		ORTHANT_NAME(tree_clear)(t);
		return r;
	}
	if (out && t->def.placement == ORT_PLACEMENT_LEAVES)
		for (uint32_t k = 0; k < n; ++k) out[k] = make_handle(t, k);
	return ORT_OK;
}

/// A build succeeded: a first one sizes the pools to fit and gives its
/// scratch back (pools_fit).
static void build_done(tree_t *t)
{
	if (!t->built) pools_fit(t);
	t->built = true;
	mirror_make(t);
}

ort_result ORTHANT_NAME(tree_build)(tree_t *t, const box_t *boxes, void *const *user, int count, ort_handle *out)
{
	if (!t || count < 0 || (count > 0 && !boxes)) return ORT_ERROR_INVALID_ARGUMENT;
	if (in_callback(t)) return misuse(t, ORT_ERROR_BUSY, "orthant: build from inside a callback");
	ort_result attached = detached_settle(t, true);
	if (attached != ORT_OK) return attached;
	for (int k = 0; k < count; ++k) {
		ort_result r = box_check(&boxes[k]);
		if (r != ORT_OK) return r;
	}
	if (out)
		for (int k = 0; k < count; ++k) out[k] = ORT_NULL_HANDLE;
	if (count == 0) return ORT_OK;
	if (count > INT32_MAX / 4) return ORT_ERROR_CAPACITY;
	if (t->live == 0) {
		ort_result r = build_empty(t, boxes, user, (uint32_t)count, out);
		if (r == ORT_OK) build_done(t);
		return r;
	}
	// Into a non-empty tree, one by one; undone on failure with the handles
	// kept in scratch.
	ort_result r = items_reserve(t, (uint32_t)count);
	if (r != ORT_OK) return r;
	if (!scratch_reserve(t, (size_t)count * sizeof(ort_handle))) return ORT_ERROR_OUT_OF_MEMORY;
	ort_handle *made = t->scratch;
	for (int k = 0; k < count; ++k) {
		r = ORTHANT_NAME(tree_insert)(t, boxes[k], user ? user[k] : NULL, &made[k]);
		if (r != ORT_OK) {
			for (int j = k; j-- > 0;) ORTHANT_NAME(tree_remove)(t, made[j]);
			return r;
		}
	}
	if (out) memcpy(out, made, (size_t)count * sizeof *out);
	build_done(t);
	return ORT_OK;
}

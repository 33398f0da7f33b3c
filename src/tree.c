// tree.c: the quadtree/octree itself — pools, insert, remove, move, build,
// growth, merge and prune, validation and statistics. Compiled through
// dim2.c / dim3.c; the layout and invariants are described in dim.h.
//
// ## How an item finds its node
//
// loose and tight: from the start node, while the node is divided, go to the
// child the item fits (fit_child); store it where it stops. A leaf that then
// holds more than bucket_size entries splits: every entry that fits a child
// moves down, and children that end up over-full split in turn. An item in a
// divided node therefore never fits one of its children — seed 000's "smallest
// node that fully contains it" for tight, and for loose "the deepest loose cell
// that holds it, the cell chosen by its centre", which never refuses an item
// for straddling a split line.
//
// leaves: the item goes down every child its box touches and is stored in each
// leaf reached (seed 002). Splits copy entries into every child they touch.
//
// ## Failure leaves the tree as it was
//
// Every mutation first makes sure the pools hold what it can need (reserve_*),
// so once it starts changing links it cannot fail half-way. Splits and merges
// only make the tree better, never more correct: when one cannot get memory it
// is skipped (a split doubles the node's retry_at and is tried again when the
// node has grown that much), and the operation that triggered it still succeeds.
#ifndef ORTHANT_DIM
#error "compiled through dim2.c or dim3.c"
#endif

#include <float.h>

// ---- pools ------------------------------------------------------------------

/// Grow an array pool to at least need slots. The new memory is uninitialised;
/// the caller links new slots into its free list lazily (by *len).
static bool pool_grow(tree_t *t, void **arr, uint32_t *cap, size_t elem, uint64_t need)
{
	if (need <= *cap) return true;
	if (need > (uint64_t)UINT32_MAX - 1) return false;
	uint64_t want = (uint64_t)*cap * 2;
	if (want < need) want = need;
	if (want < 16) want = 16;
	if (want > (uint64_t)UINT32_MAX - 1) want = (uint64_t)UINT32_MAX - 1;
	void *p = mem_alloc(t, (size_t)want * elem);
	if (!p) return false;
	if (*arr) {
		memcpy(p, *arr, (size_t)*cap * elem);
		mem_free(t, *arr, (size_t)*cap * elem);
	}
	// The tree never holds memory it has not written: deterministic contents,
	// and nothing undefined for validate to read when a pool is damaged.
	memset((char *)p + (size_t)*cap * elem, 0, (size_t)(want - *cap) * elem);
	*arr = p;
	*cap = (uint32_t)want;
	return true;
}

/// Resize an array the tree owns from old_bytes to new_bytes (>= old), keeping
/// its contents. On failure the array is untouched.
static bool array_resize(tree_t *t, void **arr, size_t old_bytes, size_t new_bytes)
{
	void *p = mem_alloc(t, new_bytes);
	if (!p) return false;
	if (*arr) memcpy(p, *arr, old_bytes);
	memset((char *)p + old_bytes, 0, new_bytes - old_bytes);
	mem_free(t, *arr, old_bytes);
	*arr = p;
	return true;
}

/// Make room for n more items. The per-item side arrays (filters, the broad
/// phase's pair lists) grow first, so a failure leaves every array as it was.
static ort_result reserve_items(tree_t *t, uint32_t n)
{
	uint32_t free_count = t->item_len - t->live;
	if (free_count >= n) return ORT_OK;
	uint64_t need = (uint64_t)t->item_len + (n - free_count);
	if (need > (uint64_t)INT32_MAX) return ORT_ERROR_CAPACITY;
	if (need <= t->item_cap) return ORT_OK;
	uint64_t want = (uint64_t)t->item_cap * 2;
	if (want < need) want = need;
	if (want < 16) want = 16;
	if (want > (uint64_t)INT32_MAX) want = INT32_MAX;
	uint32_t old = t->item_cap;
	if (t->filters && t->filter_cap < want) {
		if (!array_resize(t, (void **)&t->filters, t->filter_cap * sizeof(ort_filter), want * sizeof(ort_filter)))
			return ORT_ERROR_OUT_OF_MEMORY;
		t->filter_cap = (uint32_t)want;
	}
	if (t->spheres && t->sphere_cap < want) {
		if (!array_resize(t, (void **)&t->spheres, t->sphere_cap * sizeof(sphere_t), want * sizeof(sphere_t)))
			return ORT_ERROR_OUT_OF_MEMORY;
		t->sphere_cap = (uint32_t)want;
	}
	if (t->bp && !bp_items_grow(t, old, (uint32_t)want)) return ORT_ERROR_OUT_OF_MEMORY;
	if (!array_resize(t, (void **)&t->items, old * sizeof(item), want * sizeof(item))) return ORT_ERROR_OUT_OF_MEMORY;
	t->item_cap = (uint32_t)want;
	return ORT_OK;
}

/// Reserved capacity makes these infallible.
static uint32_t node_new(tree_t *t)
{
	uint32_t i;
	if (t->node_free != NIL) {
		i = t->node_free;
		t->node_free = t->nodes[i].parent;
	} else {
		assert(t->node_len < t->node_cap);
		i = t->node_len++;
	}
	node *n = &t->nodes[i];
	memset(n, 0, sizeof *n);
	n->parent = NIL;
	for (int c = 0; c < NCHILD; ++c) n->child[c] = NIL;
	n->head = NIL;
	n->lifespan = (uint16_t)t->def.prune_delay;
	t->node_live++;
	return i;
}

static void node_release(tree_t *t, uint32_t i)
{
	node *n = &t->nodes[i];
	assert(n->head == NIL && n->count == 0);
	n->flags = NODE_FREE;
	n->parent = t->node_free;
	t->node_free = i;
	t->node_live--;
}

static uint32_t chunk_new(tree_t *t)
{
	uint32_t i;
	if (t->chunk_free != NIL) {
		i = t->chunk_free;
		t->chunk_free = t->chunks[i].next;
		t->chunk_free_count--;
	} else {
		assert(t->chunk_len < t->chunk_cap);
		i = t->chunk_len++;
	}
	t->chunks[i].next = NIL;
	return i;
}

static void chunk_release(tree_t *t, uint32_t i)
{
	t->chunks[i].next = t->chunk_free;
	t->chunk_free = i;
	t->chunk_free_count++;
}

// The reserve functions count the free list and the untouched tail as one.
static bool chunks_available(const tree_t *t, uint32_t n)
{
	return (uint64_t)t->chunk_free_count + (t->chunk_cap - t->chunk_len) >= n;
}

static bool chunk_reserve(tree_t *t, uint32_t n)
{
	if (chunks_available(t, n)) return true;
	uint64_t need = (uint64_t)t->chunk_len + n - t->chunk_free_count;
	return pool_grow(t, (void **)&t->chunks, &t->chunk_cap, sizeof(chunk), need);
}

static bool node_reserve(tree_t *t, uint32_t n)
{
	uint64_t avail = (uint64_t)(t->node_len - t->node_live) + (t->node_cap - t->node_len);
	if (avail >= n) return true;
	uint64_t need = (uint64_t)t->node_cap + (n - avail);
	return pool_grow(t, (void **)&t->nodes, &t->node_cap, sizeof(node), need);
}

// ---- entries ----------------------------------------------------------------

/// Append an entry to node ni; needs one reserved chunk when the head is full.
static uint32_t entry_append(tree_t *t, uint32_t ni, const box_t *box, uint32_t item_index)
{
	node *n = &t->nodes[ni];
	if (n->count % CHUNK_CAP == 0) {
		uint32_t c = chunk_new(t);
		n = &t->nodes[ni];
		t->chunks[c].next = n->head;
		n->head = c;
	}
	uint32_t addr = n->head * CHUNK_CAP + n->count % CHUNK_CAP;
	n->cats |= item_cat(t, item_index);
	entry *e = entry_at(t, addr);
	e->box = *box;
	e->item = item_index;
	n->count++;
	t->entries++;
	item *it = &t->items[item_index];
	if (it->node == NIL || t->def.placement != ORT_PLACEMENT_LEAVES) {
		it->node = ni;
		it->addr = addr;
	}
	return addr;
}

/// Remove the entry at addr from node ni: the last entry takes its place.
static void entry_remove(tree_t *t, uint32_t ni, uint32_t addr)
{
	node *n = &t->nodes[ni];
	assert(n->count > 0);
	uint32_t fill = head_fill(n->count);
	uint32_t last = n->head * CHUNK_CAP + fill - 1;
	if (last != addr) {
		entry *dst = entry_at(t, addr);
		*dst = *entry_at(t, last);
		item *moved = &t->items[dst->item];
		if (moved->node == ni && moved->addr == last) moved->addr = addr;
	}
	n->count--;
	t->entries--;
	if (fill == 1) {
		uint32_t c = n->head;
		n->head = t->chunks[c].next;
		chunk_release(t, c);
	}
}

/// Visit the entries of a node: for (ENTRY_EACH(t, n, c, k)) ... entry *e = &t->chunks[c].e[k].
#define ENTRY_LOOP(t, n, c, k)                                                                   \
	for (uint32_t c = (n)->head, c##_fill = head_fill((n)->count); c != NIL;                       \
	     c = (t)->chunks[c].next, c##_fill = CHUNK_CAP)                                             \
		for (uint32_t k = 0; k < c##_fill; ++k)

// ---- shape ------------------------------------------------------------------

static inline int node_depth(const tree_t *t, const node *n) { return n->level - t->nodes[t->root].level; }

/// Whether n may have children: depth and minimum size allow it, and its split
/// point lies strictly inside its cell on every axis (floats can run out).
static bool can_split(const tree_t *t, const node *n)
{
	if (node_depth(t, n) >= t->def.max_depth) return false;
	for (int d = 0; d < DIM; ++d) {
		if (!(n->lo[d] < n->mid[d] && n->mid[d] < n->hi[d])) return false;
		if ((n->hi[d] - n->lo[d]) * 0.5f < t->def.min_cell_size) return false;
	}
	return true;
}

/// Whether leaf n is over-full and should split now.
static bool wants_split(const tree_t *t, const node *n)
{
	return !(n->flags & NODE_DIVIDED) && n->count > (uint32_t)t->def.bucket_size && n->count >= n->retry_at &&
	       can_split(t, n);
}

/// Child c's bounds: its cell, enlarged for loose placement.
static void child_bounds(const tree_t *t, const node *n, int c, float lo[DIM], float hi[DIM])
{
	child_cell(n, c, lo, hi);
	if (t->def.placement != ORT_PLACEMENT_LOOSE) return;
	float k = (t->def.looseness - 1.0f) * 0.5f;
	for (int d = 0; d < DIM; ++d) {
		float m = (hi[d] - lo[d]) * k;
		lo[d] -= m;
		hi[d] += m;
	}
}

/// Where the items of one node go (loose/tight), computed once per node so a
/// split or a build classifies each item with a few compares.
typedef struct fitter {
	bool can;  ///< the node may have children at all
	bool tight;
	float mid[DIM];
	float lo[NCHILD][DIM], hi[NCHILD][DIM]; ///< each child's cell (tight) or loose cell
} fitter;

static void fitter_init(const tree_t *t, const node *n, fitter *f)
{
	f->can = can_split(t, n);
	f->tight = t->def.placement == ORT_PLACEMENT_TIGHT;
	memcpy(f->mid, n->mid, sizeof f->mid);
	for (int c = 0; c < NCHILD; ++c) child_bounds(t, n, c, f->lo[c], f->hi[c]);
}

/// The child a box goes to, if any: tight, the child whose half-open cell holds
/// the box's low corner; loose, the child holding its centre.
static inline int choose_child(bool tight, const float mid[DIM], const box_t *box)
{
	int c = 0;
	for (int d = 0; d < DIM; ++d) {
		float key = tight ? box->min[d] : box->min[d] + (box->max[d] - box->min[d]) * 0.5f;
		if (key >= mid[d]) c |= 1 << d;
	}
	return c;
}

/// Whether the chosen child's bounds (cell, or loose cell) take the box.
static inline bool child_takes(bool tight, const float lo[DIM], const float hi[DIM], const box_t *box)
{
	return tight ? cell_holds(lo, hi, box) : box_within(box, lo, hi);
}

/// The child that should hold box, or -1 if it stays in the node.
static inline int fitter_child(const fitter *f, const box_t *box)
{
	if (!f->can) return -1;
	int c = choose_child(f->tight, f->mid, box);
	return child_takes(f->tight, f->lo[c], f->hi[c], box) ? c : -1;
}

/// fitter_child for a single item: only the chosen child's bounds are computed.
static int fit_child(const tree_t *t, const node *n, const box_t *box)
{
	if (!can_split(t, n)) return -1;
	bool tight = t->def.placement == ORT_PLACEMENT_TIGHT;
	int c = choose_child(tight, n->mid, box);
	float lo[DIM], hi[DIM];
	child_bounds(t, n, c, lo, hi);
	return child_takes(tight, lo, hi, box) ? c : -1;
}

/// Whether box may be stored in n (loose/tight).
static bool node_holds(const tree_t *t, const node *n, const box_t *box)
{
	if (t->def.placement == ORT_PLACEMENT_TIGHT) return cell_holds(n->lo, n->hi, box);
	float lo[DIM], hi[DIM];
	node_bounds(t, n, lo, hi);
	return box_within(box, lo, hi);
}

/// Make child c of node pi (capacity reserved).
static uint32_t child_make(tree_t *t, uint32_t pi, int c)
{
	uint32_t ci = node_new(t);
	node *p = &t->nodes[pi];
	node *n = &t->nodes[ci];
	child_cell(p, c, n->lo, n->hi);
	for (int d = 0; d < DIM; ++d) n->mid[d] = n->lo[d] + (n->hi[d] - n->lo[d]) * 0.5f;
	n->parent = pi;
	n->which = (uint8_t)c;
	n->level = (int16_t)(p->level + 1);
	p->child[c] = ci;
	int depth = node_depth(t, n);
	if (depth > t->height) t->height = depth;
	return ci;
}

/// leaves: OR cat into every node under ni whose cell box touches.
static void cats_leaves(tree_t *t, uint32_t ni, const box_t *box, uint64_t cat)
{
	t->nodes[ni].cats |= cat;
	for (int c = 0; c < NCHILD; ++c) {
		uint32_t ci = t->nodes[ni].child[c];
		if (ci != NIL && cell_touches(t->nodes[ci].lo, t->nodes[ci].hi, box)) cats_leaves(t, ci, box, cat);
	}
}

/// OR a category into ni and its ancestors (an item arrived or was re-filtered).
static void cats_up(tree_t *t, uint32_t ni, uint64_t cat)
{
	// ni itself may hold cat already (entry_append adds it): start above it,
	// and stop at the first ancestor that has it (its own ancestors do too).
	t->nodes[ni].cats |= cat;
	for (ni = t->nodes[ni].parent; ni != NIL && (t->nodes[ni].cats & cat) != cat; ni = t->nodes[ni].parent)
		t->nodes[ni].cats |= cat;
}

static void total_add(tree_t *t, uint32_t ni, int64_t delta)
{
	while (ni != NIL) {
		node *n = &t->nodes[ni];
		if (delta > 0 && n->total == 0) {
			// A branch coming back to life: its still-empty children start
			// waiting of their own, as the branch did for them.
			for (int c = 0; c < NCHILD; ++c) {
				uint32_t ci = n->child[c];
				if (ci == NIL || t->nodes[ci].total != 0 || (t->nodes[ci].flags & NODE_WAITING)) continue;
				t->nodes[ci].flags |= NODE_WAITING;
				t->nodes[ci].countdown = t->nodes[ci].lifespan;
			}
		}
		n->total = (uint32_t)((int64_t)n->total + delta);
		if (delta > 0 && (n->flags & NODE_WAITING)) {
			// A branch reused during its grace period earns a longer one (seed 003).
			n->flags &= (uint8_t)~NODE_WAITING;
			uint32_t life = (uint32_t)n->lifespan * 2;
			uint32_t cap = (uint32_t)t->def.prune_delay * 8;
			n->lifespan = (uint16_t)(life > cap ? cap : life);
		}
		ni = n->parent;
	}
}

// ---- split ------------------------------------------------------------------

static void split(tree_t *t, uint32_t ni);

/// leaves: whether splitting a leaf of n entries, per[c] of which touch child
/// c, helps. It does when some child gets fewer than all of them. When the
/// fullest gets every one, it still helps if few are copied elsewhere too
/// (at most n/8: the pile descends to smaller cells, its copies growing at most
/// 1.125x a level); with more copies (duplicates on a split point, boxes
/// covering the cell) it would only copy the pile down to max_depth, up to
/// NCHILD times a level, so it does not.
static bool leaves_split_helps(const uint32_t per[NCHILD], uint32_t n)
{
	uint64_t copies = 0;
	uint32_t most = 0;
	for (int c = 0; c < NCHILD; ++c) {
		copies += per[c];
		if (per[c] > most) most = per[c];
	}
	return most < n || copies * 8 <= (uint64_t)n * 9;
}

/// Move the entries of leaf ni into its children; best-effort (see top).
static void split(tree_t *t, uint32_t ni)
{
	node *n = &t->nodes[ni];
	bool leaves = t->def.placement == ORT_PLACEMENT_LEAVES;
	// Each destination may open one chunk before a drained source chunk is
	// freed; leaves may copy every entry into every child.
	uint32_t chunks_needed = leaves ? (n->count / CHUNK_CAP + 1) * NCHILD + 1 : NCHILD + 2;
	bool useful = true;
	if (leaves) {
		// Splitting helps only if some entry misses the fullest child; else
		// (a pile of duplicates, boxes covering the whole cell) it would only
		// copy the pile down to max_depth, NCHILD times per level.
		uint32_t per[NCHILD] = {0};
		ENTRY_LOOP(t, n, ch, k)
		{
			const box_t *b = &t->chunks[ch].e[k].box;
			for (int c = 0; c < NCHILD; ++c) {
				float lo[DIM], hi[DIM];
				child_cell(n, c, lo, hi);
				if (cell_touches(lo, hi, b)) per[c]++;
			}
		}
		useful = leaves_split_helps(per, n->count);
	}
	if (!useful || !node_reserve(t, NCHILD) || !chunk_reserve(t, chunks_needed)) {
		n = &t->nodes[ni];
		n->retry_at = n->count > UINT32_MAX / 2 ? UINT32_MAX : n->count * 2;
		return;
	}
	n = &t->nodes[ni];
	n->flags |= NODE_DIVIDED;
	n->retry_at = 0;
	uint32_t src = n->head, count = n->count;
	n->head = NIL;
	n->count = 0;
	t->entries -= count;
	uint32_t moved[NCHILD] = {0};
	uint32_t fill = head_fill(count);
	fitter f;
	fitter_init(t, &t->nodes[ni], &f);
	while (src != NIL) {
		for (uint32_t k = 0; k < fill; ++k) {
			entry e = t->chunks[src].e[k];
			if (leaves) {
				t->items[e.item].node = NIL; // the first copy becomes its home
				for (int c = 0; c < NCHILD; ++c) {
					float lo[DIM], hi[DIM];
					child_cell(&t->nodes[ni], c, lo, hi);
					if (!cell_touches(lo, hi, &e.box)) continue;
					uint32_t ci = t->nodes[ni].child[c];
					if (ci == NIL) ci = child_make(t, ni, c);
					entry_append(t, ci, &e.box, e.item);
					moved[c]++;
				}
			} else {
				int c = fitter_child(&f, &e.box);
				uint32_t dst = ni;
				if (c >= 0) {
					dst = t->nodes[ni].child[c];
					if (dst == NIL) dst = child_make(t, ni, c);
					moved[c]++;
				}
				entry_append(t, dst, &e.box, e.item);
			}
		}
		uint32_t next = t->chunks[src].next;
		chunk_release(t, src);
		src = next;
		fill = CHUNK_CAP;
	}
	uint32_t sum = t->nodes[ni].count;
	for (int c = 0; c < NCHILD; ++c) {
		if (!moved[c]) continue;
		uint32_t ci = t->nodes[ni].child[c];
		t->nodes[ci].total += moved[c];
		sum += moved[c];
	}
	// leaves: copies can make the subtree hold more entries than before.
	if (leaves) total_add(t, ni, (int64_t)sum - t->nodes[ni].total);
	for (int c = 0; c < NCHILD; ++c) {
		uint32_t ci = t->nodes[ni].child[c];
		if (ci == NIL || !moved[c]) continue;
		node *ch = &t->nodes[ci];
		if (wants_split(t, ch)) split(t, ci);
	}
}

// ---- merge and prune ----------------------------------------------------------

/// Free the whole subtree under ni (not ni itself), appending its entries to ni
/// without duplicates. Needs at most one fresh chunk at a time (reserved by the
/// caller) since every drained chunk is freed before the next is read.
static void collapse_into(tree_t *t, uint32_t ni, uint32_t sub)
{
	node *s = &t->nodes[sub];
	for (int c = 0; c < NCHILD; ++c) {
		if (s->child[c] != NIL) {
			uint32_t ci = s->child[c];
			t->nodes[sub].child[c] = NIL;
			collapse_into(t, ni, ci);
			s = &t->nodes[sub];
		}
	}
	if (sub == ni) return;
	uint32_t src = s->head, count = s->count;
	s->head = NIL;
	s->count = 0;
	t->entries -= count;
	uint32_t fill = head_fill(count);
	while (src != NIL) {
		for (uint32_t k = 0; k < fill; ++k) {
			entry e = t->chunks[src].e[k];
			item *it = &t->items[e.item];
			if (t->def.placement == ORT_PLACEMENT_LEAVES) {
				if (it->flags & ITEM_MARK) continue;
				it->flags |= ITEM_MARK;
				it->node = NIL;
			}
			entry_append(t, ni, &e.box, e.item);
		}
		uint32_t next = t->chunks[src].next;
		chunk_release(t, src);
		src = next;
		fill = CHUNK_CAP;
	}
	node_release(t, sub);
}

static void clear_marks(tree_t *t, uint32_t ni)
{
	node *n = &t->nodes[ni];
	ENTRY_LOOP(t, n, c, k) t->items[t->chunks[c].e[k].item].flags &= ~(uint32_t)ITEM_MARK;
}

/// Fold a divided node's subtree back into it (seed 000's tryMerge).
static bool merge(tree_t *t, uint32_t ni)
{
	if (!chunk_reserve(t, 2)) return false;
	node *n = &t->nodes[ni];
	uint32_t before = n->total;
	if (t->def.placement == ORT_PLACEMENT_LEAVES) {
		// The node itself holds nothing, so marks start clean.
		collapse_into(t, ni, ni);
		clear_marks(t, ni);
	} else {
		collapse_into(t, ni, ni);
	}
	n = &t->nodes[ni];
	n->flags &= (uint8_t)~NODE_DIVIDED;
	n->retry_at = 0;
	// The subtree is one node now: its categories are exactly its entries'.
	n->cats = 0;
	ENTRY_LOOP(t, n, ch, k) n->cats |= item_cat(t, t->chunks[ch].e[k].item);
	if (n->count != before) total_add(t, ni, (int64_t)n->count - before);
	return true;
}

/// Free the empty subtree rooted at ni (its parent's link is the caller's).
static void empty_free(tree_t *t, uint32_t ni)
{
	for (int c = 0; c < NCHILD; ++c) {
		uint32_t ci = t->nodes[ni].child[c];
		if (ci != NIL) {
			t->nodes[ni].child[c] = NIL;
			empty_free(t, ci);
		}
	}
	node_release(t, ni);
}

/// Free an empty subtree rooted at ni and unlink it from its parent.
static void prune(tree_t *t, uint32_t ni)
{
	node *n = &t->nodes[ni];
	assert(n->total == 0 && n->parent != NIL);
	t->nodes[n->parent].child[n->which] = NIL;
	empty_free(t, ni);
}

/// After entries left the subtree at ni: prune emptied branches (or start
/// their grace period) and merge the highest underfull divided ancestor.
static void tidy(tree_t *t, uint32_t ni)
{
	// The highest empty non-root ancestor goes (or waits) as one branch.
	uint32_t empty = NIL;
	for (uint32_t a = ni; a != NIL && a != t->root; a = t->nodes[a].parent)
		if (t->nodes[a].total == 0) empty = a;
	uint32_t from = ni;
	if (empty != NIL) {
		node *e = &t->nodes[empty];
		from = e->parent;
		if (t->def.prune_delay > 0) {
			if (!(e->flags & NODE_WAITING)) {
				e->flags |= NODE_WAITING;
				e->countdown = e->lifespan;
			}
		} else {
			prune(t, empty);
		}
	}
	uint32_t fold = NIL;
	for (uint32_t a = from; a != NIL; a = t->nodes[a].parent) {
		const node *n = &t->nodes[a];
		if ((n->flags & NODE_DIVIDED) && n->total <= (uint32_t)t->def.merge_size) fold = a;
	}
	if (fold != NIL) merge(t, fold);
}

// ---- root -------------------------------------------------------------------

/// After the root grew, the old nodes sit a level deeper: fold every divided
/// node now at max_depth into itself, so the tree keeps to max_depth (best
/// effort, like every merge). Recomputes the height bound.
static void fold_deep(tree_t *t, uint32_t ni)
{
	node *n = &t->nodes[ni];
	int depth = node_depth(t, n);
	if (depth >= t->def.max_depth && (n->flags & NODE_DIVIDED)) {
		merge(t, ni);
		n = &t->nodes[ni];
	}
	if (ni == t->root) t->height = 0;
	if (depth > t->height) t->height = depth;
	for (int c = 0; c < NCHILD; ++c)
		if (n->child[c] != NIL) {
			fold_deep(t, n->child[c]);
			n = &t->nodes[ni];
		}
}

static void root_set(tree_t *t, const float lo[DIM], const float hi[DIM])
{
	uint32_t r = node_new(t);
	node *n = &t->nodes[r];
	for (int d = 0; d < DIM; ++d) {
		n->lo[d] = lo[d];
		n->hi[d] = hi[d];
		n->mid[d] = lo[d] + (hi[d] - lo[d]) * 0.5f;
	}
	t->root = r;
	t->height = 0;
}

/// The root cell for def.region. Cells are half-open, so the upper faces go
/// one ulp past the region's: a box resting on the region's far wall (closed
/// boxes, seed 001's bouncing field) still fits without the root doubling.
static void region_cell(const tree_t *t, float lo[DIM], float hi[DIM])
{
	for (int d = 0; d < DIM; ++d) {
		lo[d] = t->def.region.min[d];
		hi[d] = nextafterf(t->def.region.max[d], INFINITY);
	}
}

/// A root cell for a tree whose first content is `b`: a cube twice b's longest
/// side around b's centre (side 1 for points), so the first split is useful.
static void root_cell_for(const box_t *b, float lo[DIM], float hi[DIM])
{
	float side = 0.0f;
	for (int d = 0; d < DIM; ++d)
		if (b->max[d] - b->min[d] > side) side = b->max[d] - b->min[d];
	if (!(side > 0.0f)) side = 1.0f;
	for (int d = 0; d < DIM; ++d) {
		float c = b->min[d] + (b->max[d] - b->min[d]) * 0.5f;
		float s = side;
		// Far from the origin a small side vanishes in c's rounding; a side
		// below the smallest normal float vanishes in any addition (a box
		// 1e-45 wide once made a cell that could not hold it: fuzz_scene).
		float ulp = fabsf(c) * 1.2e-7f * 4.0f;
		if (s < ulp) s = ulp;
		if (s < FLT_MIN) s = FLT_MIN;
		lo[d] = c - s;
		hi[d] = c + s;
	}
}

/// Double [lo, hi) towards box, axis by axis, until it holds it; false when
/// that would pass a quarter of FLT_MAX.
static bool cell_grow_to(float lo[DIM], float hi[DIM], const box_t *box)
{
	while (!cell_holds(lo, hi, box)) {
		for (int d = 0; d < DIM; ++d) {
			double w = (double)hi[d] - lo[d];
			if (!(w > 0.0)) w = FLT_MIN; // a cell with no width still grows
			if (fabs((double)lo[d] - w) > 0.25 * FLT_MAX || fabs((double)hi[d] + w) > 0.25 * FLT_MAX) return false;
			if (box->min[d] < lo[d])
				lo[d] = (float)(lo[d] - w);
			else if (!(box->max[d] < hi[d]))
				hi[d] = (float)(hi[d] + w);
		}
	}
	return true;
}

/// Make the root hold box: create it, or double it towards the box until it
/// does (the old root becomes a child, so nothing moves). Each step is a
/// valid tree; on failure the items are all where they were.
static ort_result root_cover(tree_t *t, const box_t *box)
{
	if (t->root == NIL) {
		if (!node_reserve(t, 1)) return ORT_ERROR_OUT_OF_MEMORY;
		float lo[DIM], hi[DIM];
		if (t->def.use_region) {
			region_cell(t, lo, hi);
		} else {
			root_cell_for(box, lo, hi);
		}
		root_set(t, lo, hi);
	}
	for (;;) {
		node *r = &t->nodes[t->root];
		if (cell_holds(r->lo, r->hi, box)) return ORT_OK;
		if (!node_reserve(t, 1)) return ORT_ERROR_OUT_OF_MEMORY;
		uint32_t old = t->root;
		r = &t->nodes[old]; // the pool may have moved
		if (r->total == 0) {
			// Nothing to keep: start over with a root around the box (with a
			// region, the region doubled towards the box, so cells keep its grid).
			float lo[DIM], hi[DIM];
			if (t->def.use_region)
				region_cell(t, lo, hi);
			else
				root_cell_for(box, lo, hi);
			// The cell must hold the box before the loop goes round again, or
			// it would start over for ever.
			if (!cell_grow_to(lo, hi, box)) return ORT_ERROR_OUT_OF_RANGE;
			empty_free(t, old);
			root_set(t, lo, hi);
			continue;
		}
		// Every axis doubles at once, so a root much longer on one axis than
		// another could overflow there before it reaches the box.
		for (int d = 0; d < DIM; ++d) {
			double w = (double)r->hi[d] - r->lo[d];
			if (fabs((double)r->lo[d] - w) > 0.25 * FLT_MAX || fabs((double)r->hi[d] + w) > 0.25 * FLT_MAX)
				return ORT_ERROR_OUT_OF_RANGE;
		}
		uint32_t nr = node_new(t);
		node *o = &t->nodes[old];
		node *n = &t->nodes[nr];
		int which = 0;
		for (int d = 0; d < DIM; ++d) {
			float w = o->hi[d] - o->lo[d];
			float bc = box->min[d] + (box->max[d] - box->min[d]) * 0.5f;
			if (box->min[d] < o->lo[d] || (box->max[d] < o->hi[d] && bc < o->mid[d])) {
				n->lo[d] = o->lo[d] - w; // grow down: the old root is the upper half
				n->mid[d] = o->lo[d];
				n->hi[d] = o->hi[d];
				which |= 1 << d;
			} else {
				n->lo[d] = o->lo[d];
				n->mid[d] = o->hi[d];
				n->hi[d] = o->hi[d] + w;
			}
		}
		n->level = (int16_t)(o->level - 1);
		n->flags = NODE_DIVIDED;
		n->total = o->total;
		n->cats = o->cats;
		n->child[which] = old;
		o->parent = nr;
		o->which = (uint8_t)which;
		t->root = nr;
		t->height++;
		if (t->height > t->def.max_depth) fold_deep(t, nr);
	}
}

// ---- create / destroy ---------------------------------------------------------

def_t ORTHANT_NAME(tree_default_def)(void)
{
	def_t d;
	memset(&d, 0, sizeof d);
	d.bucket_size = 16;
	d.max_depth = 8;
	d.min_cell_size = 0.0f;
	d.placement = ORT_PLACEMENT_LOOSE;
	d.looseness = 2.0f;
	d.merge_size = -1;
	d.prune_delay = 0;
	return d;
}

static bool def_ok(const def_t *d)
{
	if (d->bucket_size < 1 || d->max_depth < 0 || d->max_depth > ORTHANT_MAX_DEPTH) return false;
	if (!(d->min_cell_size >= 0.0f) || !isfinite(d->min_cell_size)) return false;
	if ((unsigned)d->placement >= ORT_PLACEMENT_COUNT) return false;
	if (!(d->looseness > 1.0f && d->looseness <= 4.0f)) return false;
	if (d->merge_size < -1 || d->merge_size > d->bucket_size) return false;
	if (d->prune_delay < 0 || d->prune_delay > 4096 || d->item_capacity < 0) return false;
	if ((d->allocator.alloc == NULL) != (d->allocator.free == NULL)) return false;
	if (d->use_region) {
		if (box_check(&d->region) != ORT_OK) return false;
		for (int i = 0; i < DIM; ++i)
			if (!(d->region.min[i] < d->region.max[i])) return false;
	}
	return true;
}

ort_result ORTHANT_NAME(tree_create)(const def_t *def, tree_t **out)
{
	if (!out) return ORT_ERROR_INVALID_ARGUMENT;
	*out = NULL;
	if (!def || !def_ok(def)) return ORT_ERROR_INVALID_ARGUMENT;
	tree_t *t = def->allocator.alloc ? def->allocator.alloc(def->allocator.ctx, sizeof *t) : malloc(sizeof *t);
	if (!t) return ORT_ERROR_OUT_OF_MEMORY;
	memset(t, 0, sizeof *t);
	t->def = *def;
	if (t->def.merge_size < 0) t->def.merge_size = t->def.bucket_size / 2;
	t->alloc = def->allocator;
	t->bytes = t->bytes_peak = sizeof *t;
	// A per-tree tag in every handle, so one tree's handles fail in another.
	uint64_t a = (uint64_t)(uintptr_t)t * 0x9E3779B97F4A7C15ull;
	t->salt = (uint32_t)(a >> 32) & 0xFFFF0000u;
	t->item_free = t->node_free = t->chunk_free = NIL;
	t->root = NIL;
	if (def->item_capacity > 0) {
		uint32_t n = (uint32_t)def->item_capacity;
		if (reserve_items(t, n) != ORT_OK || !chunk_reserve(t, n / CHUNK_CAP + 1) || !node_reserve(t, n / 4 + 1)) {
			ORTHANT_NAME(tree_destroy)(t);
			return ORT_ERROR_OUT_OF_MEMORY;
		}
	}
	*out = t;
	return ORT_OK;
}

void ORTHANT_NAME(tree_destroy)(tree_t *t)
{
	if (!t) return;
	if (in_callback(t)) {
		t->destroy_pending = true; // the outermost query's end destroys it
		return;
	}
	mem_free(t, t->items, (size_t)t->item_cap * sizeof(item));
	mem_free(t, t->nodes, (size_t)t->node_cap * sizeof(node));
	mem_free(t, t->chunks, (size_t)t->chunk_cap * sizeof(chunk));
	mem_free(t, t->scratch, t->scratch_bytes);
	mem_free(t, t->content, (size_t)t->content_cap * sizeof(box_t));
	mem_free(t, t->filters, (size_t)t->filter_cap * sizeof(ort_filter));
	mem_free(t, t->spheres, (size_t)t->sphere_cap * sizeof(sphere_t));
	mem_free(t, t->pending, (size_t)t->pending_cap * sizeof(struct deferred));
	bp_free(t);
	assert(t->bytes == sizeof *t);
	if (t->alloc.free)
		t->alloc.free(t->alloc.ctx, t, sizeof *t);
	else
		free(t);
}

static ort_result misuse(const tree_t *t, ort_result r, const char *what)
{
	if (t->def.assert_fn) t->def.assert_fn(t->def.assert_ctx, what);
	return r;
}

// ---- insert -----------------------------------------------------------------

/// Pools an insertion of box below start may need, leaves placement: a node
/// and a chunk per leaf it reaches, counted by walking the same path.
static void leaves_need(const tree_t *t, uint32_t ni, const box_t *box, uint64_t *nodes, uint64_t *chunks)
{
	const node *n = &t->nodes[ni];
	if (!(n->flags & NODE_DIVIDED)) {
		*chunks += 1;
		return;
	}
	for (int c = 0; c < NCHILD; ++c) {
		float lo[DIM], hi[DIM];
		child_cell(n, c, lo, hi);
		if (!cell_touches(lo, hi, box)) continue;
		if (n->child[c] == NIL) {
			*nodes += 1;
			*chunks += 1;
		} else {
			leaves_need(t, n->child[c], box, nodes, chunks);
		}
	}
}

static bool reserve_for_insert(tree_t *t, uint32_t start, const box_t *box)
{
	if (t->def.placement == ORT_PLACEMENT_LEAVES) {
		uint64_t nodes = 0, chunks = 0;
		leaves_need(t, start, box, &nodes, &chunks);
		if (nodes > UINT32_MAX / 2 || chunks > UINT32_MAX / 2) return false;
		return node_reserve(t, (uint32_t)nodes) && chunk_reserve(t, (uint32_t)chunks);
	}
	return node_reserve(t, (uint32_t)t->def.max_depth + 2) && chunk_reserve(t, 1);
}

/// leaves: store item index in every leaf under ni that box touches. Splits
/// wait for split_region: a split here would spend pool room reserved for the
/// leaves still to come.
static void insert_leaves(tree_t *t, uint32_t ni, const box_t *box, uint32_t index)
{
	node *n = &t->nodes[ni];
	if (!(n->flags & NODE_DIVIDED)) {
		entry_append(t, ni, box, index);
		total_add(t, ni, 1);
		cats_up(t, ni, item_cat(t, index));
		return;
	}
	for (int c = 0; c < NCHILD; ++c) {
		float lo[DIM], hi[DIM];
		child_cell(&t->nodes[ni], c, lo, hi);
		if (!cell_touches(lo, hi, box)) continue;
		uint32_t ci = t->nodes[ni].child[c];
		if (ci == NIL) ci = child_make(t, ni, c);
		insert_leaves(t, ci, box, index);
	}
}

/// leaves: split every over-full leaf under ni that box touches.
static void split_region(tree_t *t, uint32_t ni, const box_t *box)
{
	node *n = &t->nodes[ni];
	if (!(n->flags & NODE_DIVIDED)) {
		if (wants_split(t, n)) split(t, ni);
		return;
	}
	for (int c = 0; c < NCHILD; ++c) {
		uint32_t ci = t->nodes[ni].child[c];
		if (ci != NIL && cell_touches(t->nodes[ci].lo, t->nodes[ci].hi, box)) split_region(t, ci, box);
	}
}

/// Store item index under start (pools reserved).
static void insert_at(tree_t *t, uint32_t start, const box_t *box, uint32_t index)
{
	t->items[index].node = NIL;
	if (t->def.placement == ORT_PLACEMENT_LEAVES) {
		insert_leaves(t, start, box, index);
		split_region(t, start, box);
		return;
	}
	uint32_t ni = start;
	for (;;) {
		node *n = &t->nodes[ni];
		if (!(n->flags & NODE_DIVIDED)) break;
		int c = fit_child(t, n, box);
		if (c < 0) break;
		uint32_t ci = n->child[c];
		if (ci == NIL) ci = child_make(t, ni, c);
		ni = ci;
	}
	entry_append(t, ni, box, index);
	total_add(t, ni, 1);
	cats_up(t, ni, item_cat(t, index));
	node *n = &t->nodes[ni];
	if (wants_split(t, n)) split(t, ni);
}

static uint32_t item_new(tree_t *t, void *user, bool touch)
{
	uint32_t i;
	if (t->item_free != NIL) {
		i = t->item_free;
		t->item_free = t->items[i].node;
	} else {
		i = t->item_len++;
		t->items[i].gen = 1;
	}
	item *it = &t->items[i];
	it->user = user;
	it->node = NIL;
	it->addr = 0;
	it->flags = ITEM_LIVE;
	t->live++;
	if (t->filters) t->filters[i] = ORT_FILTER_DEFAULT;
	if (t->bp && touch) bp_touch(t, i);
	return i;
}

static void item_release(tree_t *t, uint32_t i)
{
	item *it = &t->items[i];
	if (it->flags & ITEM_STATIC) t->statics--;
	it->flags = 0;
	it->gen++;
	it->user = NULL;
	it->node = t->item_free;
	t->item_free = i;
	t->live--;
}

/// Make room for sphere items: the side array, sized like the items.
static bool spheres_ready(tree_t *t)
{
	if (t->spheres && t->sphere_cap >= t->item_cap) return true;
	uint32_t cap = t->item_cap ? t->item_cap : 16;
	if (!array_resize(t, (void **)&t->spheres, t->sphere_cap * sizeof(sphere_t), cap * sizeof(sphere_t))) return false;
	t->sphere_cap = cap;
	return true;
}

/// Give item i its bound: a sphere (sph) or just its box (sph NULL).
static void item_set_shape(tree_t *t, uint32_t i, const sphere_t *sph)
{
	if (sph) {
		t->spheres[i] = *sph;
		t->items[i].flags |= ITEM_SPHERE;
	} else {
		t->items[i].flags &= ~(uint32_t)ITEM_SPHERE;
	}
}

/// The box of a sphere, widened by an ulp each way so it holds the exact
/// sphere whatever c - r and c + r round to.
static ort_result sphere_box(const float centre[DIM], float radius, sphere_t *sph, box_t *box)
{
	if (!centre || point_check(centre) != ORT_OK || !isfinite(radius) || !(radius >= 0.0f))
		return ORT_ERROR_INVALID_BOX;
	for (int d = 0; d < DIM; ++d) {
		sph->c[d] = centre[d];
		box->min[d] = nextafterf(centre[d] - radius, -INFINITY);
		box->max[d] = nextafterf(centre[d] + radius, INFINITY);
	}
	sph->r = radius;
	return box_check(box);
}

static ort_result insert_item(tree_t *t, box_t box, const sphere_t *sph, void *user_data, ort_handle *out)
{
	if (out) *out = ORT_NULL_HANDLE;
	if (!t) return ORT_ERROR_INVALID_ARGUMENT;
	ort_result r = box_check(&box);
	if (r != ORT_OK) return r;
	if ((r = reserve_items(t, 1)) != ORT_OK) return r;
	if (sph && !spheres_ready(t)) return ORT_ERROR_OUT_OF_MEMORY;
	if (in_callback(t)) return defer_insert(t, &box, sph, user_data, out);
	if (t->bp && !bp_reserve(t, 1, NIL)) return ORT_ERROR_OUT_OF_MEMORY;
	if ((r = root_cover(t, &box)) != ORT_OK) return r;
	if (!reserve_for_insert(t, t->root, &box)) return ORT_ERROR_OUT_OF_MEMORY;
	uint32_t i = item_new(t, user_data, true);
	item_set_shape(t, i, sph);
	insert_at(t, t->root, &box, i);
	if (out) *out = make_handle(t, i);
	return ORT_OK;
}

ort_result ORTHANT_NAME(tree_insert)(tree_t *t, box_t box, void *user_data, ort_handle *out)
{
	return insert_item(t, box, NULL, user_data, out);
}

ort_result ORTHANT_NAME(tree_insert_sphere)(tree_t *t, const float centre[DIM], float radius, void *user_data,
                                            ort_handle *out)
{
	if (out) *out = ORT_NULL_HANDLE;
	sphere_t sph;
	box_t box;
	ort_result r = sphere_box(centre, radius, &sph, &box);
	if (r != ORT_OK) return r;
	return insert_item(t, box, &sph, user_data, out);
}

/// Store an item that already has its slot (a deferred insert being applied).
static ort_result store_item(tree_t *t, uint32_t i, const box_t *box, const sphere_t *sph)
{
	ort_result r;
	item_set_shape(t, i, sph);
	if (t->bp && !bp_reserve(t, 1, NIL)) return ORT_ERROR_OUT_OF_MEMORY;
	if ((r = root_cover(t, box)) != ORT_OK) return r;
	if (!reserve_for_insert(t, t->root, box)) return ORT_ERROR_OUT_OF_MEMORY;
	insert_at(t, t->root, box, i);
	if (t->bp) bp_touch(t, i);
	return ORT_OK;
}

// ---- remove -----------------------------------------------------------------

/// leaves: take item index out of every leaf under ni its box touches; returns
/// how many entries went.
static uint32_t remove_leaves(tree_t *t, uint32_t ni, const box_t *box, uint32_t index)
{
	node *n = &t->nodes[ni];
	uint32_t gone = 0;
	if (!(n->flags & NODE_DIVIDED)) {
		ENTRY_LOOP(t, n, c, k)
		{
			if (t->chunks[c].e[k].item == index) {
				entry_remove(t, ni, c * CHUNK_CAP + k);
				gone = 1;
				goto done;
			}
		}
	done:
		t->nodes[ni].total -= gone;
		return gone;
	}
	for (int c = 0; c < NCHILD; ++c) {
		uint32_t ci = t->nodes[ni].child[c];
		if (ci == NIL) continue;
		if (!cell_touches(t->nodes[ci].lo, t->nodes[ci].hi, box)) continue;
		gone += remove_leaves(t, ci, box, index);
	}
	t->nodes[ni].total -= gone;
	return gone;
}

/// The deepest node under which every entry of the item lies.
static uint32_t detach(tree_t *t, uint32_t index)
{
	item *it = &t->items[index];
	if (t->def.placement == ORT_PLACEMENT_LEAVES) {
		box_t box = entry_at(t, it->addr)->box;
		uint32_t gone = remove_leaves(t, t->root, &box, index);
		(void)gone;
		assert(gone >= 1);
		// Leaves placement can empty several branches; tidy from each leaf
		// the box touched is costly, so tidy walks the box's region once.
		return NIL;
	}
	uint32_t ni = it->node;
	entry_remove(t, ni, it->addr);
	total_add(t, ni, -1);
	return ni;
}

/// Prune and merge after a leaves removal: every emptied leaf under the box.
static void tidy_region(tree_t *t, uint32_t ni, const box_t *box)
{
	node *n = &t->nodes[ni];
	if (!(n->flags & NODE_DIVIDED)) {
		tidy(t, ni);
		return;
	}
	for (int c = 0; c < NCHILD; ++c) {
		uint32_t ci = t->nodes[ni].child[c];
		if (ci == NIL || !cell_touches(t->nodes[ci].lo, t->nodes[ci].hi, box)) continue;
		tidy_region(t, ci, box);
		if (t->nodes[ni].flags & NODE_FREE || !(t->nodes[ni].flags & NODE_DIVIDED)) return;
	}
}

static void tidy_after(tree_t *t, uint32_t ni, const box_t *box)
{
	if (ni != NIL)
		tidy(t, ni);
	else
		tidy_region(t, t->root, box);
}

ort_result ORTHANT_NAME(tree_remove)(tree_t *t, ort_handle h)
{
	if (!t) return ORT_ERROR_INVALID_ARGUMENT;
	uint32_t i = handle_index(t, h);
	if (i == NIL || (t->items[i].flags & ITEM_DOOMED))
		return misuse(t, ORT_ERROR_STALE_HANDLE, "orthant: remove of a stale or foreign handle");
	if (in_callback(t) || (t->items[i].flags & ITEM_PENDING)) return defer_remove(t, i);
	if (t->bp) {
		if (!bp_reserve(t, 0, i)) return ORT_ERROR_OUT_OF_MEMORY;
		bp_detach(t, i);
	}
	box_t box = entry_at(t, t->items[i].addr)->box;
	uint32_t ni = detach(t, i);
	item_release(t, i);
	tidy_after(t, ni, &box);
	return ORT_OK;
}

// ---- move -------------------------------------------------------------------

static ort_result move_item(tree_t *t, ort_handle h, box_t box, const sphere_t *sph);

ort_result ORTHANT_NAME(tree_move)(tree_t *t, ort_handle h, box_t box) { return move_item(t, h, box, NULL); }

ort_result ORTHANT_NAME(tree_move_sphere)(tree_t *t, ort_handle h, const float centre[DIM], float radius)
{
	sphere_t sph;
	box_t box;
	ort_result r = sphere_box(centre, radius, &sph, &box);
	if (r != ORT_OK) return r;
	return move_item(t, h, box, &sph);
}

ort_result ORTHANT_NAME(tree_get_sphere)(const tree_t *t, ort_handle h, float centre[DIM], float *radius)
{
	if (!t || !centre || !radius) return ORT_ERROR_INVALID_ARGUMENT;
	uint32_t i = handle_index(t, h);
	if (i == NIL) return misuse(t, ORT_ERROR_STALE_HANDLE, "orthant: get_sphere of a stale or foreign handle");
	const sphere_t *s = item_sphere(t, i);
	if (t->items[i].flags & ITEM_PENDING) s = pending_sphere(t, i);
	if (!s) return ORT_ERROR_INVALID_ARGUMENT; // a box item
	memcpy(centre, s->c, sizeof s->c);
	*radius = s->r;
	return ORT_OK;
}

/// Give item h a new bound: box, and sph when it is a sphere.
static ort_result move_item(tree_t *t, ort_handle h, box_t box, const sphere_t *sph)
{
	if (!t) return ORT_ERROR_INVALID_ARGUMENT;
	uint32_t i = handle_index(t, h);
	if (i == NIL || (t->items[i].flags & ITEM_DOOMED))
		return misuse(t, ORT_ERROR_STALE_HANDLE, "orthant: move of a stale or foreign handle");
	ort_result r = box_check(&box);
	if (r != ORT_OK) return r;
	if (sph && !spheres_ready(t)) return ORT_ERROR_OUT_OF_MEMORY;
	if (in_callback(t) || (t->items[i].flags & ITEM_PENDING)) return defer_move(t, i, &box, sph);
	if (t->bp) {
		if (!bp_reserve(t, 1, NIL)) return ORT_ERROR_OUT_OF_MEMORY;
		bp_touch(t, i); // harmless if the move fails below: it is re-checked
	}
	item *it = &t->items[i];
	node *n = &t->nodes[it->node];
	entry *e = entry_at(t, it->addr);
	if (t->def.placement == ORT_PLACEMENT_LEAVES) {
		// A box inside one half-open leaf cell touches no other leaf.
		if (cell_holds(n->lo, n->hi, &e->box) && cell_holds(n->lo, n->hi, &box)) {
			e->box = box;
			item_set_shape(t, i, sph);
			return ORT_OK;
		}
	} else {
		if (node_holds(t, n, &box) && (!(n->flags & NODE_DIVIDED) || fit_child(t, n, &box) < 0)) {
			e->box = box;
			item_set_shape(t, i, sph);
			return ORT_OK;
		}
	}
	// Re-home: everything the new place needs is reserved before the item
	// leaves the old one, so a failure leaves it untouched.
	if ((r = root_cover(t, &box)) != ORT_OK) return r;
	uint32_t start = t->root;
	if (t->def.placement != ORT_PLACEMENT_LEAVES) {
		// Seed 003: climb to the first ancestor that holds the new box.
		// The cell itself must hold it (not only the loose cell): a descent
		// from there goes where an insert from the root would.
		start = t->items[i].node;
		while (start != t->root && !cell_holds(t->nodes[start].lo, t->nodes[start].hi, &box))
			start = t->nodes[start].parent;
	}
	if (!reserve_for_insert(t, start, &box)) return ORT_ERROR_OUT_OF_MEMORY;
	box_t old = entry_at(t, t->items[i].addr)->box;
	uint32_t from = detach(t, i);
	insert_at(t, start, &box, i);
	item_set_shape(t, i, sph);
	tidy_after(t, from, &old);
	return ORT_OK;
}

// ---- accessors ----------------------------------------------------------------

ort_result ORTHANT_NAME(tree_get_box)(const tree_t *t, ort_handle h, box_t *out)
{
	if (!t || !out) return ORT_ERROR_INVALID_ARGUMENT;
	uint32_t i = handle_index(t, h);
	if (i == NIL) return misuse(t, ORT_ERROR_STALE_HANDLE, "orthant: get_box of a stale or foreign handle");
	const box_t *pb = (t->items[i].flags & ITEM_PENDING) ? pending_box(t, i) : NULL;
	*out = pb ? *pb : entry_at(t, t->items[i].addr)->box;
	return ORT_OK;
}

void *ORTHANT_NAME(tree_get_user_data)(const tree_t *t, ort_handle h)
{
	if (!t) return NULL;
	uint32_t i = handle_index(t, h);
	return i == NIL ? NULL : t->items[i].user;
}

/// OR a re-filtered item's new category into every node holding its entries.
static void cats_region(tree_t *t, uint32_t i, uint64_t cat)
{
	if (t->def.placement != ORT_PLACEMENT_LEAVES) {
		cats_up(t, t->items[i].node, cat);
		return;
	}
	// leaves: every leaf its box touches, and their ancestors.
	const box_t box = entry_at(t, t->items[i].addr)->box;
	cats_leaves(t, t->root, &box, cat);
}

ort_result ORTHANT_NAME(tree_set_filter)(tree_t *t, ort_handle h, ort_filter filter)
{
	if (!t) return ORT_ERROR_INVALID_ARGUMENT;
	uint32_t i = handle_index(t, h);
	if (i == NIL || (t->items[i].flags & ITEM_DOOMED))
		return misuse(t, ORT_ERROR_STALE_HANDLE, "orthant: set_filter of a stale or foreign handle");
	if (in_callback(t) || (t->items[i].flags & ITEM_PENDING)) return defer_filter(t, i, &filter);
	if (t->bp && !bp_reserve(t, 1, NIL)) return ORT_ERROR_OUT_OF_MEMORY;
	bool plain = filter.category == 1u && filter.mask == ORT_MASK_ALL;
	if (!t->filters && !plain) {
		// The first custom filter: every other item keeps the default.
		ort_filter *f = mem_alloc(t, (size_t)t->item_cap * sizeof *f);
		if (!f) return ORT_ERROR_OUT_OF_MEMORY;
		for (uint32_t k = 0; k < t->item_cap; ++k) f[k] = ORT_FILTER_DEFAULT;
		t->filters = f;
		t->filter_cap = t->item_cap;
	}
	if (t->filters) {
		t->filters[i] = filter;
		t->filters[i].is_static = false; // kept in the item's flags
		cats_region(t, i, filter.category);
	}
	item *it = &t->items[i];
	if ((it->flags & ITEM_STATIC) && !filter.is_static) t->statics--;
	if (!(it->flags & ITEM_STATIC) && filter.is_static) t->statics++;
	it->flags = filter.is_static ? it->flags | ITEM_STATIC : it->flags & ~(uint32_t)ITEM_STATIC;
	if (t->bp) bp_touch(t, i);
	return ORT_OK;
}

ort_result ORTHANT_NAME(tree_get_filter)(const tree_t *t, ort_handle h, ort_filter *out)
{
	if (!t || !out) return ORT_ERROR_INVALID_ARGUMENT;
	uint32_t i = handle_index(t, h);
	if (i == NIL) return misuse(t, ORT_ERROR_STALE_HANDLE, "orthant: get_filter of a stale or foreign handle");
	*out = t->filters ? t->filters[i] : ORT_FILTER_DEFAULT;
	out->is_static = (t->items[i].flags & ITEM_STATIC) != 0;
	return ORT_OK;
}

bool ORTHANT_NAME(tree_is_valid)(const tree_t *t, ort_handle h) { return t && handle_index(t, h) != NIL; }

int ORTHANT_NAME(tree_count)(const tree_t *t) { return t ? (int)t->live : 0; }

box_t ORTHANT_NAME(tree_root_cell)(const tree_t *t)
{
	box_t b;
	memset(&b, 0, sizeof b);
	if (t && t->root != NIL) {
		memcpy(b.min, t->nodes[t->root].lo, sizeof b.min);
		memcpy(b.max, t->nodes[t->root].hi, sizeof b.max);
	} else if (t && t->def.use_region) {
		region_cell(t, b.min, b.max);
	}
	return b;
}

ort_result ORTHANT_NAME(tree_get_node)(const tree_t *t, ort_handle h, box_t *cell, box_t *bounds, int *depth)
{
	if (!t) return ORT_ERROR_INVALID_ARGUMENT;
	uint32_t i = handle_index(t, h);
	if (i == NIL) return misuse(t, ORT_ERROR_STALE_HANDLE, "orthant: get_node of a stale or foreign handle");
	if (t->items[i].flags & ITEM_PENDING) return ORT_ERROR_BUSY; // not stored until the queries end
	const node *n = &t->nodes[t->items[i].node];
	if (cell) {
		memcpy(cell->min, n->lo, sizeof cell->min);
		memcpy(cell->max, n->hi, sizeof cell->max);
	}
	if (bounds) node_bounds(t, n, bounds->min, bounds->max);
	if (depth) *depth = node_depth(t, n);
	return ORT_OK;
}

// ---- clear / build / tick -------------------------------------------------------

void ORTHANT_NAME(tree_clear)(tree_t *t)
{
	if (!t) return;
	if (in_callback(t)) {
		misuse(t, ORT_ERROR_BUSY, "orthant: clear from inside a callback is ignored");
		return;
	}
	// Every slot goes back to its free list in index order, generations bumped
	// so old handles fail; the arrays themselves stay for the next frame.
	t->item_free = NIL;
	for (uint32_t i = t->item_len; i-- > 0;) {
		item *it = &t->items[i];
		if (it->flags & ITEM_LIVE) it->gen++;
		it->flags = 0;
		it->user = NULL;
		it->node = t->item_free;
		t->item_free = i;
	}
	t->live = 0;
	t->node_free = NIL;
	for (uint32_t i = t->node_len; i-- > 0;) {
		t->nodes[i].flags = NODE_FREE;
		t->nodes[i].parent = t->node_free;
		t->node_free = i;
	}
	t->node_live = 0;
	t->chunk_free = NIL;
	for (uint32_t i = t->chunk_len; i-- > 0;) t->chunks[i].next = i + 1 < t->chunk_len ? i + 1 : NIL;
	t->chunk_free = t->chunk_len ? 0 : NIL;
	t->chunk_free_count = t->chunk_len;
	t->root = NIL;
	t->entries = 0;
	t->height = 0;
	t->statics = 0;
	if (t->bp) bp_reset(t);
}

/// The top-down build of loose and tight trees: partition boxes idx[0..n)
/// (all inside node ni's bounds) between ni and its children, recursively.
/// tmp and cls have room for n. Returns false when a pool cannot grow.
static bool build_node(tree_t *t, uint32_t ni, const box_t *boxes, const uint32_t *item_of, uint32_t *idx,
                       uint32_t *tmp, uint8_t *cls, uint32_t n)
{
	node *nd = &t->nodes[ni];
	nd->total = n;
	if (n <= (uint32_t)t->def.bucket_size || !can_split(t, nd)) {
		if (!chunk_reserve(t, n / CHUNK_CAP + 1)) return false;
		for (uint32_t k = 0; k < n; ++k) entry_append(t, ni, &boxes[idx[k]], item_of[idx[k]]);
		return true;
	}
	nd->flags |= NODE_DIVIDED;
	// Counting sort by destination: class 0 stays here, class c + 1 goes to child c.
	uint32_t counts[NCHILD + 1] = {0};
	fitter f;
	fitter_init(t, nd, &f);
	for (uint32_t k = 0; k < n; ++k) {
		int c = fitter_child(&f, &boxes[idx[k]]) + 1;
		cls[k] = (uint8_t)c;
		counts[c]++;
	}
	uint32_t start[NCHILD + 2], pos[NCHILD + 1];
	start[0] = 0;
	for (int c = 0; c <= NCHILD; ++c) start[c + 1] = start[c] + counts[c];
	memcpy(pos, start, sizeof pos);
	for (uint32_t k = 0; k < n; ++k) tmp[pos[cls[k]]++] = idx[k];
	memcpy(idx, tmp, (size_t)n * sizeof *idx);
	if (!chunk_reserve(t, counts[0] / CHUNK_CAP + 1)) return false;
	for (uint32_t k = 0; k < counts[0]; ++k) entry_append(t, ni, &boxes[idx[k]], item_of[idx[k]]);
	for (int c = 0; c < NCHILD; ++c) {
		uint32_t m = counts[c + 1], s0 = start[c + 1];
		if (!m) continue;
		if (!node_reserve(t, 1)) return false;
		uint32_t ci = child_make(t, ni, c);
		if (!build_node(t, ci, boxes, item_of, idx + s0, tmp + s0, cls + s0, m)) return false;
		t->nodes[ni].cats |= t->nodes[ci].cats;
	}
	return true;
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
	if (!node_reserve(t, 1)) return false;
	if (t->root != NIL) empty_free(t, t->root);
	root_set(t, lo, hi);
	return true;
}

/// The top-down build of leaves trees: the n box indices at scratch[at..]
/// (item of box k at scratch[k]) all touch node ni's cell; each child gets the
/// ones touching its cell, written on top of the scratch stack (which may
/// move, so it is indexed, never held). Returns false when memory runs out.
static bool build_leaves_node(tree_t *t, uint32_t ni, const box_t *boxes, size_t at, uint32_t n, size_t top)
{
	uint32_t per[NCHILD] = {0};
	node *nd = &t->nodes[ni];
	bool split_it = n > (uint32_t)t->def.bucket_size && can_split(t, nd);
	if (split_it) {
		const uint32_t *S = t->scratch;
		for (uint32_t k = 0; k < n; ++k)
			for (int c = 0; c < NCHILD; ++c) {
				float lo[DIM], hi[DIM];
				child_cell(nd, c, lo, hi);
				if (cell_touches(lo, hi, &boxes[S[at + k]])) per[c]++;
			}
		split_it = leaves_split_helps(per, n); // as split() decides
	}
	if (!split_it) {
		if (!chunk_reserve(t, n / CHUNK_CAP + 1)) return false;
		const uint32_t *S = t->scratch;
		for (uint32_t k = 0; k < n; ++k) entry_append(t, ni, &boxes[S[at + k]], S[S[at + k]]);
		nd = &t->nodes[ni];
		nd->total = n;
		if (n > (uint32_t)t->def.bucket_size && can_split(t, nd)) nd->retry_at = n > UINT32_MAX / 2 ? UINT32_MAX : n * 2;
		return true;
	}
	nd->flags |= NODE_DIVIDED;
	uint64_t total = 0;
	for (int c = 0; c < NCHILD; ++c) {
		if (!per[c]) continue;
		if (!scratch_reserve(t, (top + per[c]) * sizeof(uint32_t)) || !node_reserve(t, 1)) return false;
		uint32_t *S = t->scratch;
		float lo[DIM], hi[DIM];
		child_cell(&t->nodes[ni], c, lo, hi);
		size_t w = top;
		for (uint32_t k = 0; k < n; ++k)
			if (cell_touches(lo, hi, &boxes[S[at + k]])) S[w++] = S[at + k];
		uint32_t ci = child_make(t, ni, c);
		if (!build_leaves_node(t, ci, boxes, top, per[c], top + per[c])) return false;
		total += t->nodes[ci].total;
		t->nodes[ni].cats |= t->nodes[ci].cats;
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
	ort_result r = root_cover(t, &all);
	if (r == ORT_OK) {
		// Growth may have left a chain of empty cells: start from the grown cell.
		float lo[DIM], hi[DIM];
		memcpy(lo, t->nodes[t->root].lo, sizeof lo);
		memcpy(hi, t->nodes[t->root].hi, sizeof hi);
		ORTHANT_NAME(tree_clear)(t);
		root_set(t, lo, hi); // a node freed by clear is still reserved
	}
	if (r == ORT_OK) r = reserve_items(t, n);
	if (r == ORT_OK && t->bp && !bp_reserve(t, n, NIL)) r = ORT_ERROR_OUT_OF_MEMORY;
	if (r == ORT_OK && !scratch_reserve(t, (size_t)n * (3 * sizeof(uint32_t) + 1))) r = ORT_ERROR_OUT_OF_MEMORY;
	if (r != ORT_OK) {
		ORTHANT_NAME(tree_clear)(t);
		return r;
	}
	uint32_t *item_of = t->scratch;
	uint32_t *idx = item_of + n;
	uint32_t *tmp = idx + n;
	uint8_t *cls = (uint8_t *)(tmp + n);
	for (uint32_t k = 0; k < n; ++k) {
		item_of[k] = item_new(t, user ? user[k] : NULL, true);
		idx[k] = k;
	}
	bool built;
	if (t->def.placement == ORT_PLACEMENT_LEAVES)
		built = build_leaves_node(t, t->root, boxes, n, n, 2 * (size_t)n);
	else
		built = build_node(t, t->root, boxes, item_of, idx, tmp, cls, n);
	if (!built) {
		ORTHANT_NAME(tree_clear)(t);
		return ORT_ERROR_OUT_OF_MEMORY;
	}
	item_of = t->scratch; // the leaves build may have moved the scratch
	if (out)
		for (uint32_t k = 0; k < n; ++k) out[k] = make_handle(t, item_of[k]);
	return ORT_OK;
}

ort_result ORTHANT_NAME(tree_build)(tree_t *t, const box_t *boxes, void *const *user, int count, ort_handle *out)
{
	if (!t || count < 0 || (count > 0 && !boxes)) return ORT_ERROR_INVALID_ARGUMENT;
	if (in_callback(t)) return misuse(t, ORT_ERROR_BUSY, "orthant: build from inside a callback");
	for (int k = 0; k < count; ++k) {
		ort_result r = box_check(&boxes[k]);
		if (r != ORT_OK) return r;
	}
	if (out)
		for (int k = 0; k < count; ++k) out[k] = ORT_NULL_HANDLE;
	if (count == 0) return ORT_OK;
	if (count > INT32_MAX / 4) return ORT_ERROR_CAPACITY;
	if (t->live == 0) return build_empty(t, boxes, user, (uint32_t)count, out);
	// Into a non-empty tree, one by one; undone on failure with the handles
	// kept in scratch.
	ort_result r = reserve_items(t, (uint32_t)count);
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
	return ORT_OK;
}

void ORTHANT_NAME(tree_tick)(tree_t *t)
{
	if (!t || t->def.prune_delay == 0) return;
	if (in_callback(t)) {
		t->pending_ticks++;
		return;
	}
	for (uint32_t i = 0; i < t->node_len; ++i) {
		node *n = &t->nodes[i];
		if (!(n->flags & NODE_WAITING) || (n->flags & NODE_FREE)) continue;
		if (n->countdown > 0) n->countdown--;
		if (n->countdown == 0) {
			uint32_t parent = n->parent;
			prune(t, i);
			tidy(t, parent);
		}
	}
}

// ---- validate -------------------------------------------------------------------

typedef struct vstate {
	char *msg;
	size_t size;
	uint64_t entries, nodes, chunks;
} vstate;

#include <stdarg.h>
#include <stdio.h>

static ort_result vfail(vstate *v, const char *fmt, ...)
{
	if (v->msg && v->size) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(v->msg, v->size, fmt, ap);
		va_end(ap);
	}
	return ORT_ERROR_CORRUPT;
}

static ort_result validate_node(const tree_t *t, uint32_t ni, vstate *v, int guard, bool waiting)
{
	if (ni >= t->node_len) return vfail(v, "node %u out of range", ni);
	const node *n = &t->nodes[ni];
	if (n->flags & NODE_FREE) return vfail(v, "node %u is linked but free", ni);
	if (guard > 40000) return vfail(v, "node links loop");
	v->nodes++;
	bool leaves = t->def.placement == ORT_PLACEMENT_LEAVES;
	for (int d = 0; d < DIM; ++d) {
		if (!isfinite(n->lo[d]) || !isfinite(n->hi[d])) return vfail(v, "node %u: cell is not finite", ni);
		if (!(n->lo[d] <= n->mid[d] && n->mid[d] <= n->hi[d])) return vfail(v, "node %u: split point outside its cell", ni);
	}
	// entries
	uint32_t seen = 0, chunks = 0;
	float lo[DIM], hi[DIM];
	node_bounds(t, n, lo, hi);
	for (uint32_t c = n->head, fill = head_fill(n->count); c != NIL; c = t->chunks[c].next, fill = CHUNK_CAP) {
		if (c >= t->chunk_len) return vfail(v, "node %u: chunk %u out of range", ni, c);
		if (++chunks > n->count / CHUNK_CAP + 1) return vfail(v, "node %u: more chunks than its count needs", ni);
		for (uint32_t k = 0; k < fill; ++k) {
			const entry *e = &t->chunks[c].e[k];
			seen++;
			if (e->item >= t->item_len || !(t->items[e->item].flags & ITEM_LIVE))
				return vfail(v, "node %u: entry of a dead item %u", ni, e->item);
			if (box_check(&e->box) != ORT_OK) return vfail(v, "node %u: entry with an invalid box", ni);
			const item *it = &t->items[e->item];
			if (leaves) {
				if (!cell_touches(lo, hi, &e->box)) return vfail(v, "node %u: leaves entry misses its cell", ni);
			} else {
				bool in = t->def.placement == ORT_PLACEMENT_TIGHT ? cell_holds(lo, hi, &e->box) : box_within(&e->box, lo, hi);
				if (!in) return vfail(v, "node %u: entry outside the node's bounds", ni);
				if (it->node != ni || it->addr != c * CHUNK_CAP + k)
					return vfail(v, "item %u does not point at its entry", e->item);
				if ((n->flags & NODE_DIVIDED) && fit_child(t, n, &e->box) >= 0)
					return vfail(v, "node %u: entry of item %u fits a child", ni, e->item);
			}
		}
	}
	if (seen != n->count) return vfail(v, "node %u: %u entries, count says %u", ni, seen, n->count);
	if (leaves && (n->flags & NODE_DIVIDED) && n->count) return vfail(v, "node %u: leaves entries in a divided node", ni);
	if (wants_split(t, n)) return vfail(v, "leaf %u holds %u > bucket entries and should split", ni, n->count);
	v->entries += n->count;
	v->chunks += chunks;
	ENTRY_LOOP(t, n, ch, k)
	{
		if ((item_cat(t, t->chunks[ch].e[k].item) & ~n->cats) != 0) return vfail(v, "node %u: categories miss an entry's", ni);
	}
	uint64_t total = n->count;
	for (int c = 0; c < NCHILD; ++c) {
		uint32_t ci = n->child[c];
		if (ci == NIL) continue;
		if (!(n->flags & NODE_DIVIDED)) return vfail(v, "node %u has a child but is not divided", ni);
		if (ci >= t->node_len) return vfail(v, "node %u: child out of range", ni);
		const node *ch = &t->nodes[ci];
		if (ch->parent != ni || ch->which != c) return vfail(v, "node %u: child %d links back wrong", ni, c);
		if (ch->level != n->level + 1) return vfail(v, "node %u: level skips", ci);
		float clo[DIM], chi[DIM];
		child_cell(n, c, clo, chi);
		if (memcmp(clo, ch->lo, sizeof clo) || memcmp(chi, ch->hi, sizeof chi))
			return vfail(v, "node %u: cell is not its parent's quarter", ci);
		if (node_depth(t, ch) > t->height) return vfail(v, "node %u deeper than the height bound", ci);
		if ((ch->cats & ~n->cats) != 0) return vfail(v, "node %u: categories miss a child's", ni);
		ort_result r = validate_node(t, ci, v, guard + 1, waiting || (n->flags & NODE_WAITING));
		if (r != ORT_OK) return r;
		total += ch->total;
	}
	if (total != n->total) return vfail(v, "node %u: total %u, subtree holds %llu", ni, n->total, (unsigned long long)total);
	// A waiting branch waits as a whole: empty nodes inside it are part of it.
	if (n->total == 0 && ni != t->root && !(n->flags & NODE_WAITING) && !waiting)
		return vfail(v, "node %u is empty and not waiting to be pruned", ni);
	return ORT_OK;
}

/// leaves: the number of leaves under ni whose cells box touches.
static uint64_t leaves_touched(const tree_t *t, uint32_t ni, const box_t *box)
{
	const node *n = &t->nodes[ni];
	if (!(n->flags & NODE_DIVIDED)) return 1;
	uint64_t k = 0;
	for (int c = 0; c < NCHILD; ++c) {
		float lo[DIM], hi[DIM];
		child_cell(n, c, lo, hi);
		if (!cell_touches(lo, hi, box)) continue;
		if (n->child[c] == NIL) return UINT64_MAX / 4; // a leaf the item should be in is missing
		k += leaves_touched(t, n->child[c], box);
	}
	return k;
}

ort_result ORTHANT_NAME(tree_validate)(const tree_t *t, char *msg, size_t msg_size)
{
	vstate v = {msg, msg_size, 0, 0, 0};
	if (msg && msg_size) msg[0] = 0;
	if (!t) return ORT_ERROR_INVALID_ARGUMENT;
	if (t->root != NIL) {
		const node *r = &t->nodes[t->root];
		if (r->parent != NIL) return vfail(&v, "root has a parent");
		ort_result res = validate_node(t, t->root, &v, 0, false);
		if (res != ORT_OK) return res;
	} else if (t->live) {
		return vfail(&v, "items but no root");
	}
	if (v.entries != t->entries) return vfail(&v, "entry count drifted");
	if (v.nodes != t->node_live) return vfail(&v, "%llu nodes reachable, %u live", (unsigned long long)v.nodes, t->node_live);
	uint64_t free_nodes = 0;
	for (uint32_t i = t->node_free; i != NIL; i = t->nodes[i].parent) {
		if (i >= t->node_len || !(t->nodes[i].flags & NODE_FREE)) return vfail(&v, "node free list is broken");
		if (++free_nodes > t->node_len) return vfail(&v, "node free list loops");
	}
	if (free_nodes + t->node_live != t->node_len) return vfail(&v, "nodes: free + live != used");
	uint64_t free_chunks = 0;
	for (uint32_t i = t->chunk_free; i != NIL; i = t->chunks[i].next)
		if (i >= t->chunk_len || ++free_chunks > t->chunk_len) return vfail(&v, "chunk free list is broken");
	if (free_chunks != t->chunk_free_count || free_chunks + v.chunks != t->chunk_len)
		return vfail(&v, "chunks: free + used != allocated");
	uint64_t live = 0, free_items = 0, want_entries = 0;
	for (uint32_t i = 0; i < t->item_len; ++i) {
		const item *it = &t->items[i];
		if (!(it->flags & ITEM_LIVE)) continue;
		live++;
		if (it->flags & ITEM_PENDING) continue; // not stored until the queries end
		if (it->node >= t->node_len || (t->nodes[it->node].flags & NODE_FREE)) return vfail(&v, "item %u: bad node", i);
		const entry *e = entry_at(t, it->addr);
		if (it->addr / CHUNK_CAP >= t->chunk_len || e->item != i) return vfail(&v, "item %u: entry does not match", i);
		if (it->flags & ITEM_SPHERE) {
			const sphere_t *sp = &t->spheres[i];
			for (int d = 0; d < DIM; ++d)
				if (!(e->box.min[d] <= sp->c[d] - sp->r && sp->c[d] + sp->r <= e->box.max[d]))
					return vfail(&v, "item %u: the box does not hold its sphere", i);
		}
		if (t->def.placement == ORT_PLACEMENT_LEAVES) want_entries += leaves_touched(t, t->root, &e->box);
	}
	for (uint32_t i = t->item_free; i != NIL; i = t->items[i].node)
		if (i >= t->item_len || (t->items[i].flags & ITEM_LIVE) || ++free_items > t->item_len)
			return vfail(&v, "item free list is broken");
	if (live != t->live || live + free_items != t->item_len) return vfail(&v, "items: live + free != used");
	if (t->def.placement == ORT_PLACEMENT_LEAVES) {
		// Each entry touches its leaf and no leaf holds an item twice, so equal
		// counts mean every item is in every leaf it touches.
		if (want_entries != t->entries) return vfail(&v, "leaves: items miss leaves they touch");
	} else if (t->entries != t->live - t->pending_items) {
		return vfail(&v, "entries != items");
	}
	return ORT_OK;
}

// ---- stats / visit ----------------------------------------------------------------

static void stats_node(const tree_t *t, uint32_t ni, ort_tree_stats *s)
{
	const node *n = &t->nodes[ni];
	int depth = node_depth(t, n);
	s->nodes++;
	if (!(n->flags & NODE_DIVIDED)) s->leaves++;
	if (depth > s->depth) s->depth = depth;
	s->items_per_level[depth < ORTHANT_STATS_LEVELS ? depth : ORTHANT_STATS_LEVELS - 1] += (int)n->count;
	for (int c = 0; c < NCHILD; ++c)
		if (n->child[c] != NIL) stats_node(t, n->child[c], s);
}

void ORTHANT_NAME(tree_get_stats)(const tree_t *t, ort_tree_stats *s)
{
	if (!s) return;
	memset(s, 0, sizeof *s);
	if (!t) return;
	s->items = (int)t->live;
	s->entries = (int)t->entries;
	s->bytes = t->bytes;
	s->bytes_peak = t->bytes_peak;
	if (t->root != NIL) stats_node(t, t->root, s);
}

void ORTHANT_NAME(tree_visit_nodes)(const tree_t *t, ORTHANT_NAME(node_fn) * fn, void *ctx)
{
	if (!t || !fn || t->root == NIL) return;
	node_stack s;
	if (!stack_init(t, &s)) return;
	reading_begin(t);
	stack_push(&s, t->root);
	while (s.top > 0) {
		uint32_t ni = s.data[--s.top];
		const node *n = &t->nodes[ni];
		box_t cell, bounds;
		memcpy(cell.min, n->lo, sizeof cell.min);
		memcpy(cell.max, n->hi, sizeof cell.max);
		node_bounds(t, n, bounds.min, bounds.max);
		fn(ctx, &cell, &bounds, node_depth(t, n), (int)n->count);
		n = &t->nodes[ni];
		for (int c = NCHILD; c-- > 0;)
			if (n->child[c] != NIL) stack_push(&s, n->child[c]);
	}
	stack_free(t, &s);
	reading_end(t);
}

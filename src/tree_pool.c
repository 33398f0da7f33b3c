// tree_pool.c: the tree's memory — the node, chunk and item pools, the
// per-item side arrays, and the entries a node keeps in its chunks.
//
// Every pool is an array with a free list, addressed by 32-bit index (the
// layout is in tree_int.h). Growing one copies it into a larger block, so
// nothing may hold a pointer into a pool across a call that can grow it; the
// reserve functions grow the pools before a mutation starts, and node_new,
// chunk_new and item_new then cannot fail.
#include "tree_int.h"

// ---- pools ------------------------------------------------------------------

/// Grow an array pool to at least need slots. The new memory is zeroed; the
/// caller links new slots into its free list lazily (by *len). A pool
/// doubles: a world whose node or chunk count wanders (the soak's bouncing
/// boxes) reaches a new peak now and then for a long time, and growing by half
/// left it allocating again a million frames in, past any warm-up; doubling
/// leaves room for every such peak after the first growth.
///
/// A pool a build sized to fit (pools_fit) grows by an eighth instead. Moves
/// after a build make the tree wander about the build's shape (pool_fit_cap),
/// or drift from it (a merge_size below bucket_size keeps splits the build
/// never made; boxes that gather). Past the fit's room a doubling would add
/// 18 bytes an object for the nodes, 33 for the chunks, for a drift of a few
/// per cent; an eighth adds 2 and 4, at a few more allocations while the tree
/// drifts to its moved shape, and none once it is there.
static bool pool_grow(tree_t *t, void **arr, uint32_t *cap, size_t elem, uint64_t need)
{
	if (need <= *cap) return true;
	if (need > (uint64_t)UINT32_MAX - 1) return false;
	uint64_t want = t->built ? (uint64_t)*cap + *cap / 8 : (uint64_t)*cap * 2;
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
static ort_result items_reserve(tree_t *t, uint32_t n)
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
	if (t->mirror) mirror_drop(t); // a node the mirror does not know
	node *n = &t->nodes[i];
	memset(n, 0, sizeof *n);
	bound_clear(&n->bound);
	n->parent = NIL;
	for (int c = 0; c < NCHILD; ++c) n->child[c] = NIL;
	n->head = NIL;
	node_wait_init(t, i);
	node_cats_set(t, i, 0);
	t->node_live++;
	return i;
}

static void node_release(tree_t *t, uint32_t i)
{
	if (t->mirror) mirror_drop(t); // its records may name the node
	own_drop(t, i);
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

static bool chunks_reserve(tree_t *t, uint32_t n)
{
	if (chunks_available(t, n)) return true;
	uint64_t need = (uint64_t)t->chunk_len + n - t->chunk_free_count;
	return pool_grow(t, (void **)&t->chunks, &t->chunk_cap, sizeof(chunk), need);
}

static bool nodes_reserve(tree_t *t, uint32_t n)
{
	uint64_t avail = (uint64_t)(t->node_len - t->node_live) + (t->node_cap - t->node_len);
	if (avail >= n) return node_sides_fit(t); // (a side array may have missed the pool's last growth)
	uint64_t need = (uint64_t)t->node_cap + (n - avail);
	return pool_grow(t, (void **)&t->nodes, &t->node_cap, sizeof(node), need) && node_sides_fit(t);
}

/// Keep the nodes' side arrays (categories once there are filters, prune
/// delays with def.prune_delay) as long as the node pool, after it grew:
/// false without memory, the pool grown regardless (only capacity changed).
static bool node_sides_fit(tree_t *t)
{
	if (t->node_cats && t->node_cats_cap < t->node_cap) {
		if (!array_resize(t, (void **)&t->node_cats, t->node_cats_cap * sizeof(uint64_t), t->node_cap * sizeof(uint64_t)))
			return false;
		t->node_cats_cap = t->node_cap;
	}
	if (t->def.prune_delay > 0 && t->node_waits_cap < t->node_cap) {
		size_t w = sizeof *t->node_waits;
		if (!array_resize(t, (void **)&t->node_waits, t->node_waits_cap * w, t->node_cap * w)) return false;
		t->node_waits_cap = t->node_cap;
	}
	return true;
}

/// The room a pool keeps past what it holds when it is sized to fit, so the
/// moves after a build rarely grow it. Moves make the node and chunk counts
/// wander about the build's (leaves split and fold back, entries open and
/// close chunks): a random walk whose peaks grow as the square root of the
/// count, not in proportion. In test_memory's churn (a twentieth of the boxes
/// moving 0.3 a frame, 400 frames) the peaks were +8 % nodes and +6 % chunks
/// over the build's at 5k boxes, +4.6 and +2.6 % at 20k, +1.1 and +1.0 % at
/// 100k. Three square roots cover each (and a 64th what does drift in
/// proportion); a sixteenth, as before, kept 6 % at 100k: 1.2 bytes an object.
static uint64_t pool_fit_cap(uint64_t need) { return need + need / 64 + 3 * (uint64_t)sqrt((double)need) + 16; }

/// Shrink a pool that uses no slot past len (its free list, if any, holds
/// slots below len) to pool_fit_cap(len) slots, when it holds more than
/// that. Best effort: without memory for the smaller block the pool stays as
/// it was.
static void pool_fit(tree_t *t, void **arr, uint32_t *cap, size_t elem, uint32_t len)
{
	uint64_t want = pool_fit_cap(len);
	if (want >= *cap) return;
	void *p = mem_alloc(t, (size_t)want * elem);
	if (!p) return;
	memcpy(p, *arr, (size_t)want * elem); // the tail past len is zeroed, as pool_grow leaves it
	mem_free(t, *arr, (size_t)*cap * elem);
	*arr = p;
	*cap = (uint32_t)want;
}

/// After a tree's first build: the node and chunk pools sized to what the
/// build made (their room came from capacity hints and growth), and the
/// build's scratch (about 50 bytes an item) given back. The steady state
/// that follows (moves, queries, the broad phase) needs neither; a tree
/// built again keeps both (tree_t.built).
static void pools_fit(tree_t *t)
{
	// Fitted even when some slots wait in a free list (a leaves build whose
	// cap fixup released chunks): those lie below len, and a pool left at the
	// build's estimate held 20004 chunks for 12376 used (2D, 20k boxes).
	pool_fit(t, (void **)&t->nodes, &t->node_cap, sizeof(node), t->node_len);
	pool_fit(t, (void **)&t->chunks, &t->chunk_cap, sizeof(chunk), t->chunk_len);
	mem_free(t, t->scratch, t->scratch_bytes);
	t->scratch = NULL;
	t->scratch_bytes = 0;
}

// ---- entries ----------------------------------------------------------------

/// Append an entry to node ni; needs one reserved chunk when the head is full.
static uint32_t entry_append(tree_t *t, uint32_t ni, const box_t *box, uint32_t item_index)
{
	if (t->mirror) mirror_drop(t); // the node may have had no own entries
	node *n = &t->nodes[ni];
	bool fresh = n->count % CHUNK_CAP == 0;
	if (fresh) {
		uint32_t c = chunk_new(t);
		n = &t->nodes[ni];
		t->chunks[c].next = n->head;
		t->chunks[c].owner = ni;
		n->head = c;
	}
	uint32_t addr = n->head * CHUNK_CAP + n->count % CHUNK_CAP;
	node_cats_add(t, ni, item_cat(t, item_index));
	entry *e = entry_at(t, addr);
	e->box = *box;
	e->item = item_index;
	n->count++;
	bound_grow(t, ni, box);
	t->entries++;
	item *it = &t->items[item_index];
	if (it->addr == NIL || t->def.placement != ORT_PLACEMENT_LEAVES) it->addr = addr;
	own_on_append(t, ni, addr, fresh);
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
		if (moved->addr == last) moved->addr = addr; // its home entry (an address names one node's slot)
	}
	own_on_take(t, ni, addr, last);
	n->count--;
	t->entries--;
	if (fill == 1) {
		uint32_t c = n->head;
		n->head = t->chunks[c].next;
		own_on_release(t, ni, c);
		chunk_release(t, c);
	}
	own_on_remove(t, ni);
}

// ---- items ------------------------------------------------------------------

static uint32_t item_new(tree_t *t, void *user, bool touch)
{
	uint32_t i;
	if (t->item_free != NIL) {
		i = t->item_free;
		t->item_free = t->items[i].addr;
	} else {
		i = t->item_len++;
		t->items[i].gen = 1;
	}
	item *it = &t->items[i];
	it->user = user;
	it->addr = NIL;
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
	it->addr = t->item_free;
	t->item_free = i;
	t->live--;
}

/// Make room for sphere items: the side array, sized like the items.
static bool spheres_reserve(tree_t *t)
{
	if (t->spheres && t->sphere_cap >= t->item_cap) return true;
	uint32_t cap = t->item_cap ? t->item_cap : 16;
	if (!array_resize(t, (void **)&t->spheres, t->sphere_cap * sizeof(sphere_t), cap * sizeof(sphere_t))) return false;
	t->sphere_cap = cap;
	return true;
}

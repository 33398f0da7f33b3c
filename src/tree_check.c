// tree_check.c: looking at the tree without changing it — ortN_tree_validate
// (every invariant in tree_int.h, with a message for the first broken one),
// ortN_tree_get_stats and ortN_tree_visit_nodes.
#include <stdarg.h>
#include <stdio.h>

#include "tree_int.h"

// ---- validate -------------------------------------------------------------------

typedef struct vstate {
	char *msg;
	size_t size;
	uint64_t entries, nodes, chunks;
} vstate;

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
	if (n->flags & NODE_ODDMID) {
		// Only a root doubling makes one: a level below 0, its slot in the
		// table, a split point the cell's centre is not (else no flag).
		if (n->level >= 0 || odd_slot(n) >= t->odd_mids_cap) return vfail(v, "node %u: odd split point out of the table", ni);
		float centre[DIM];
		cell_mid(n->lo, n->hi, centre);
		if (!memcmp(centre, t->odd_mids[odd_slot(n)], sizeof centre))
			return vfail(v, "node %u: flagged odd, its split point is its centre", ni);
	}
	float mid[DIM];
	node_mid(t, n, mid);
	for (int d = 0; d < DIM; ++d) {
		if (!isfinite(n->lo[d]) || !isfinite(n->hi[d])) return vfail(v, "node %u: cell is not finite", ni);
		if (!(n->lo[d] <= mid[d] && mid[d] <= n->hi[d])) return vfail(v, "node %u: split point outside its cell", ni);
		if (isnan(n->bound.min[d]) || isnan(n->bound.max[d])) return vfail(v, "node %u: bound is NaN", ni);
	}
	if (t->node_waits && ni < t->node_waits_cap) {
		const struct node_wait *w = &t->node_waits[ni];
		if (w->lifespan < t->def.prune_delay || w->lifespan > 8 * t->def.prune_delay || w->countdown > w->lifespan)
			return vfail(v, "node %u: prune delay %u, countdown %u", ni, w->lifespan, w->countdown);
	}
	// entries
	uint32_t seen = 0, chunks = 0;
	float lo[DIM], hi[DIM];
	node_bounds(t, n, lo, hi);
	for (uint32_t c = n->head, fill = head_fill(n->count); c != NIL; c = t->chunks[c].next, fill = CHUNK_CAP) {
		if (c >= t->chunk_len) return vfail(v, "node %u: chunk %u out of range", ni, c);
		if (++chunks > n->count / CHUNK_CAP + 1) return vfail(v, "node %u: more chunks than its count needs", ni);
		if (t->chunks[c].owner != ni) return vfail(v, "node %u: chunk %u names node %u as its owner", ni, c, t->chunks[c].owner);
		for (uint32_t k = 0; k < fill; ++k) {
			const entry *e = &t->chunks[c].e[k];
			seen++;
			if (e->item >= t->item_len || !(t->items[e->item].flags & ITEM_LIVE))
				return vfail(v, "node %u: entry of a dead item %u", ni, e->item);
			if (box_check(&e->box) != ORT_OK) return vfail(v, "node %u: entry with an invalid box", ni);
			const item *it = &t->items[e->item];
			if (leaves && (it->flags & ITEM_CAPPED)) {
				// Capped: once, in its home (tree_cap.c), which is divided.
				if (!(n->flags & NODE_DIVIDED)) return vfail(v, "node %u: capped item %u in a leaf", ni, e->item);
				if (it->addr != c * CHUNK_CAP + k) return vfail(v, "item %u does not point at its entry", e->item);
				if (!cell_holds(lo, hi, &e->box)) return vfail(v, "node %u: capped item %u outside its cell", ni, e->item);
			} else if (leaves) {
				if (!cell_touches(lo, hi, &e->box)) return vfail(v, "node %u: leaves entry misses its cell", ni);
				if (n->flags & NODE_DIVIDED) return vfail(v, "node %u: a copied entry in a divided node", ni);
			} else {
				bool in = t->def.placement == ORT_PLACEMENT_TIGHT ? cell_holds(lo, hi, &e->box) : box_within(&e->box, lo, hi);
				if (!in) return vfail(v, "node %u: entry outside the node's bounds", ni);
				if (it->addr != c * CHUNK_CAP + k) return vfail(v, "item %u does not point at its entry", e->item);
				if ((n->flags & NODE_DIVIDED) && fit_child(t, n, &e->box) >= 0)
					return vfail(v, "node %u: entry of item %u fits a child", ni, e->item);
			}
		}
	}
	if (seen != n->count) return vfail(v, "node %u: %u entries, count says %u", ni, seen, n->count);
	const char *why = own_check(t, ni);
	if (why) return vfail(v, "node %u: %s", ni, why);
	if (wants_split(t, n)) return vfail(v, "leaf %u holds %u > bucket entries and should split", ni, n->count);
	v->entries += n->count;
	v->chunks += chunks;
	ENTRY_LOOP(t, n, ch, k)
	{
		if ((item_cat(t, t->chunks[ch].e[k].item) & ~node_cats(t, ni)) != 0) return vfail(v, "node %u: categories miss an entry's", ni);
		if (!box_within(&t->chunks[ch].e[k].box, n->bound.min, n->bound.max))
			return vfail(v, "node %u: bound misses an entry's box", ni);
	}
	uint64_t total = n->count;
	for (int c = 0; c < NCHILD; ++c) {
		uint32_t ci = n->child[c];
		if (ci == NIL) continue;
		if (!(n->flags & NODE_DIVIDED)) return vfail(v, "node %u has a child but is not divided", ni);
		if (ci >= t->node_len) return vfail(v, "node %u: child out of range", ni);
		const node *ch = &t->nodes[ci];
		if (ch->parent != ni) return vfail(v, "node %u: child %d links back wrong", ni, c);
		if (ch->level != n->level + 1) return vfail(v, "node %u: level skips", ci);
		float clo[DIM], chi[DIM];
		child_cell(t, n, c, clo, chi);
		if (memcmp(clo, ch->lo, sizeof clo) || memcmp(chi, ch->hi, sizeof chi))
			return vfail(v, "node %u: cell is not its parent's quarter", ci);
		if (node_depth(t, ch) > t->height) return vfail(v, "node %u deeper than the height bound", ci);
		if ((node_cats(t, ci) & ~node_cats(t, ni)) != 0) return vfail(v, "node %u: categories miss a child's", ni);
		// An inverted bound (nothing arrived yet) passes: it holds nothing.
		if (!box_within(&ch->bound, n->bound.min, n->bound.max)) return vfail(v, "node %u: bound misses a child's", ni);
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
		child_cell(t, n, c, lo, hi);
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
	ort_result attached = detached_read(t);
	if (attached != ORT_OK) return attached;
	const char *det = detached_check(t);
	if (det) return vfail(&v, "%s", det);
	if (t->root != NIL) {
		const node *r = &t->nodes[t->root];
		if (r->parent != NIL) return vfail(&v, "root has a parent");
		ort_result res = validate_node(t, t->root, &v, 0, false);
		if (res != ORT_OK) return res;
	} else if (t->live) {
		return vfail(&v, "items but no root");
	}
	if (v.entries != t->entries) return vfail(&v, "entry count drifted");
	// Every node handed out has its side arrays' slots (node_sides_fit).
	if (t->node_cats && t->node_cats_cap < t->node_len) return vfail(&v, "node categories shorter than the nodes");
	if (t->def.prune_delay > 0 && t->node_len && (!t->node_waits || t->node_waits_cap < t->node_len))
		return vfail(&v, "node prune delays shorter than the nodes");
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
	// The tree's links are sound by now: the mirror's walk along them is safe.
	const char *mir = mirror_check(t);
	if (mir) return vfail(&v, "%s", mir);
	uint64_t live = 0, free_items = 0, want_entries = 0, capped = 0;
	for (uint32_t i = 0; i < t->item_len; ++i) {
		const item *it = &t->items[i];
		if (!(it->flags & ITEM_LIVE)) continue;
		live++;
		if (it->flags & ITEM_PENDING) continue; // not stored until the queries end
		// Every used chunk names the node whose chain holds it (checked above),
		// so an item's entry, once in range, names a live node.
		if (it->addr == NIL || it->addr / CHUNK_CAP >= t->chunk_len) return vfail(&v, "item %u: no entry", i);
		const entry *e = entry_at(t, it->addr);
		uint32_t home = item_node(t, i);
		if (home >= t->node_len || (t->nodes[home].flags & NODE_FREE)) return vfail(&v, "item %u: bad node", i);
		if (e->item != i) return vfail(&v, "item %u: entry does not match", i);
		if (it->flags & ITEM_SPHERE) {
			const sphere_t *sp = &t->spheres[i];
			for (int d = 0; d < DIM; ++d)
				if (!(e->box.min[d] <= sp->c[d] - sp->r && sp->c[d] + sp->r <= e->box.max[d]))
					return vfail(&v, "item %u: the box does not hold its sphere", i);
		}
		if (t->def.placement == ORT_PLACEMENT_LEAVES) {
			if (it->flags & ITEM_OVERCAP) return vfail(&v, "item %u still noted over the cap", i);
			if (it->flags & ITEM_CAPPED) {
				// The tree's links are sound by now: the walk down is safe.
				if (cap_home(t, &e->box) != home)
					return vfail(&v, "capped item %u is not in the smallest node holding it", i);
				want_entries++;
				capped++;
				continue;
			}
			uint64_t k = leaves_touched(t, t->root, &e->box);
			if (k > LEAVES_CAP && k < UINT64_MAX / 4)
				return vfail(&v, "item %u is copied into %llu leaves, over the cap of %d", i, (unsigned long long)k,
				             LEAVES_CAP);
			want_entries += k;
		}
	}
	for (uint32_t i = t->item_free; i != NIL; i = t->items[i].addr)
		if (i >= t->item_len || (t->items[i].flags & ITEM_LIVE) || ++free_items > t->item_len)
			return vfail(&v, "item free list is broken");
	if (live != t->live || live + free_items != t->item_len) return vfail(&v, "items: live + free != used");
	if (t->def.placement == ORT_PLACEMENT_LEAVES) {
		// Each entry touches its leaf and no leaf holds an item twice, so equal
		// counts mean every item is in every leaf it touches.
		if (want_entries != t->entries) return vfail(&v, "leaves: items miss leaves they touch");
		if (capped != t->capped || t->overcap_len) return vfail(&v, "leaves: the count of capped items drifted");
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
	(void)detached_read(t); // without memory to attach: the stats of the tree as stored
	s->items = (int)t->live;
	s->entries = (int)t->entries;
	s->bytes = t->bytes;
	s->bytes_peak = t->bytes_peak;
	s->bytes_pairs = t->bp ? bp_pair_bytes(t) : 0;
	if (t->root != NIL) stats_node(t, t->root, s);
}

void ORTHANT_NAME(tree_visit_nodes)(const tree_t *t, ORTHANT_NAME(node_fn) * fn, void *ctx)
{
	if (!t || !fn || detached_read(t) != ORT_OK || t->root == NIL) return;
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

// tree_cap.c: the leaves placement's cap on copies per item.
//
// The leaves placement copies an item into every leaf its box touches. A long
// thin box (a strip across the scene) touches a row of leaves that grows with
// the tree: copies, and the work of every insert, remove, query and pair
// search that meets them, grow without bound (100k strips made 25.6M entries).
// So an item whose box touches more than LEAVES_CAP leaves, or touches two or
// more and spans one of them on some axis (every split of that leaf would
// copy it again), is stored once instead ("capped"), as the tight placement stores every item: in its home,
// the smallest node whose half-open cell holds its box (cap_home), a divided
// node, in that node's own entry list. Entries stay O(n): at most LEAVES_CAP
// per item.
//
// Everything that reports an item from a leaf keeps working unchanged: a
// query, ray, plane query or nearest search reports a leaves entry only from
// the node whose half-open cell owns one canonical point of it (leaf_owns),
// and a capped entry's point lies in its box, inside its home's cell, so the
// home reports it, once. The pair finder hands capped entries down to the
// nodes below their home, as for tight (pairs.c).
//
// ## When an item changes form
//
//   insert, move: the item is counted against the tree as it is (cap_count,
//     which stops once past the cap) and stored in the form that count says.
//   split: a leaf's split adds copies to the entries that reach two or more of
//     its children. Each such entry is counted; one now over the cap is noted
//     (cap_note), and once the insert's splits are done cap_fixup stores it
//     capped and takes its copies out. An entry the split would put over the
//     cap is not copied down at all but stored capped at once
//     (cap_split_entry), so a pile of strips never copies itself down every
//     level first; cap_fixup takes its copies elsewhere out (each leaf read once, however many
//     noted items it holds: a pile of thousands converts in linear time), then
//     tidies the leaves that emptied. Whether a split helps (tree_shape.c)
//     counts only the entries it does not cap (cap_split_caps): a leaf of
//     strips that each touch its fullest child still splits, and they go to
//     their home (else strips re-inserted into a grown tree, each copied
//     into the two big leaves it touches, piled up there by the thousand,
//     scanned whole by every query that reached them). (Not
//     inside the split: the split runs inside a walk of the region, and
//     removing copies elsewhere could prune what the walk is about to read.)
//   merge: a node folding its subtree into one leaf turns every capped entry
//     there into that leaf's copy (the box lies in the leaf's cell: one copy).
//
//   batched build: the top-down split caps an item as soon as it touches two
//     children of a split and spans one of them (cap_build_split), so it is
//     never copied down; the rest are checked once the tree is built.
//
// A merge elsewhere may leave a capped item touching LEAVES_CAP leaves or
// fewer; it stays capped until it moves (finding it would mean scanning the
// own lists of every ancestor on each merge). That costs no cliff: a capped
// item is stored as the tight placement stores every item (once, in the
// smallest node holding it, in an own list that is indexed when big and
// handed down by the pair finder), whose work the same bounds hold on any
// scene (tests/test_leafcap.c: boxes left capped when the small boxes around
// them go, against a tree built from the same boxes). So the rule validate checks:
// a copied item is in exactly the leaves it touches, at most LEAVES_CAP; a
// capped item has one entry, in its home, which is divided (so the box
// crosses a split line there and touches at least two leaves).
#include "tree_int.h"

/// The smallest node whose half-open cell holds box (which the root's does):
/// from the root, into the
/// child whose cell holds it while there is one. A leaf when the box lies in
/// one leaf's cell (or in the cell of a child not made yet: then its parent).
static uint32_t cap_home(const tree_t *t, const box_t *box)
{
	uint32_t ni = t->root;
	for (;;) {
		const node *n = &t->nodes[ni];
		if (!(n->flags & NODE_DIVIDED)) return ni;
		uint32_t ci = n->child[child_of_point(t, n, box->min)];
		if (ci == NIL || !cell_holds(t->nodes[ci].lo, t->nodes[ci].hi, box)) return ni;
		ni = ci;
	}
}

/// The leaves under ni whose cells box touches (a child not made yet counts
/// as the leaf it would be), counted until the count passes limit. A box
/// that spans a leaf's cell on some axis while it touches other leaves counts
/// as past the limit: each split of that leaf would copy it into every child
/// along that axis (a strip across the scene is copied into a row of leaves
/// that doubles with every split; stored capped at once, it never is).
static uint32_t cap_count(const tree_t *t, uint32_t ni, const box_t *box, uint32_t limit)
{
	const node *n = &t->nodes[ni];
	if (!(n->flags & NODE_DIVIDED)) {
		for (int d = 0; d < DIM; ++d)
			if (box->min[d] <= n->lo[d] && box->max[d] >= n->hi[d]) return limit + 1;
		return 1;
	}
	uint32_t k = 0;
	for (int c = 0; c < NCHILD && k <= limit; ++c) {
		float lo[DIM], hi[DIM];
		child_cell(t, n, c, lo, hi);
		if (!cell_touches(lo, hi, box)) continue;
		uint32_t ci = n->child[c];
		k += ci == NIL ? 1 : cap_count(t, ci, box, limit - k);
	}
	return k;
}

/// Whether box, stored now, would be capped; *home gets its home.
static bool cap_over(const tree_t *t, const box_t *box, uint32_t *home)
{
	*home = cap_home(t, box);
	// A box in one leaf's cell is that leaf's copy; one in a divided node's
	// crosses a split line there, so it touches two leaves or more.
	if (!(t->nodes[*home].flags & NODE_DIVIDED)) return false;
	return cap_count(t, *home, box, LEAVES_CAP) > LEAVES_CAP;
}

/// Store item index capped at home (a chunk reserved).
static void cap_store(tree_t *t, uint32_t home, const box_t *box, uint32_t index)
{
	assert(t->nodes[home].flags & NODE_DIVIDED);
	t->items[index].addr = NIL; // entry_append makes the entry its home
	entry_append(t, home, box, index);
	total_add(t, home, 1);
	cats_up(t, home, item_cat(t, index));
	t->items[index].flags |= ITEM_CAPPED;
	t->capped++;
}

/// Take every entry of a noted item (ITEM_OVERCAP) out of leaf ni, each entry
/// read once: from the last towards the first, so the entry a removal moves
/// into the hole (the last) has been read and kept already.
static void cap_sweep_leaf(tree_t *t, uint32_t ni)
{
	uint32_t gone = 0;
	uint32_t c = t->nodes[ni].head, fill = head_fill(t->nodes[ni].count);
	while (c != NIL) {
		uint32_t next = t->chunks[c].next; // the removal may free chunk c (then the head)
		for (uint32_t k = fill; k-- > 0;)
			if (t->items[t->chunks[c].e[k].item].flags & ITEM_OVERCAP) {
				entry_remove(t, ni, c * CHUNK_CAP + k);
				gone++;
			}
		c = next;
		fill = CHUNK_CAP;
	}
	if (gone) total_add(t, ni, -(int64_t)gone);
}

/// Sweep (cap_sweep_leaf) every leaf under ni that box touches not swept yet,
/// marking it swept; or, with clear, clear the marks.
static void cap_sweep(tree_t *t, uint32_t ni, const box_t *box, bool clear)
{
	node *n = &t->nodes[ni];
	if (!(n->flags & NODE_DIVIDED)) {
		if (clear) {
			n->flags &= (uint8_t)~NODE_SWEPT;
		} else if (!(n->flags & NODE_SWEPT)) {
			n->flags |= NODE_SWEPT;
			cap_sweep_leaf(t, ni);
		}
		return;
	}
	for (int c = 0; c < NCHILD; ++c) {
		uint32_t ci = t->nodes[ni].child[c];
		if (ci != NIL && cell_touches(t->nodes[ci].lo, t->nodes[ci].hi, box)) cap_sweep(t, ci, box, clear);
	}
}

/// Store capped every item the splits of one insert noted over the cap (the
/// chunks were reserved by the splits), take their copies out of the leaves,
/// each leaf read once however many of them it holds, then tidy the leaves
/// that emptied. Nothing merged since they were noted and splits only add
/// copies, so every one is still over the cap.
static void cap_fixup(tree_t *t)
{
	uint32_t len = t->overcap_len;
	if (len == 0) return;
	for (uint32_t k = 0; k < len; ++k) {
		uint32_t i = t->overcap[k];
		if (t->items[i].flags & ITEM_CAPPED) continue; // capped by its split (cap_split_entry)
		box_t box = entry_at(t, t->items[i].addr)->box; // a copy's
		uint32_t home;
		bool over = cap_over(t, &box, &home);
		(void)over;
		assert(over);
		cap_store(t, home, &box, i); // the item's entry is this one now, in no leaf
	}
	for (uint32_t k = 0; k < len; ++k) cap_sweep(t, t->root, &entry_at(t, t->items[t->overcap[k]].addr)->box, false);
	for (uint32_t k = 0; k < len; ++k) cap_sweep(t, t->root, &entry_at(t, t->items[t->overcap[k]].addr)->box, true);
	for (uint32_t k = 0; k < len; ++k) t->items[t->overcap[k]].flags &= ~(uint32_t)ITEM_OVERCAP;
	t->overcap_len = 0;
	// Tidy reads no notes and makes none (it merges, never splits).
	for (uint32_t k = 0; k < len; ++k) {
		box_t box = entry_at(t, t->items[t->overcap[k]].addr)->box;
		tidy_after(t, NIL, &box);
	}
}

/// leaves: store item index from the root (pools reserved by insert_reserve:
/// up to LEAVES_CAP + 1 leaves, or one chunk), copied or capped.
static void cap_insert(tree_t *t, const box_t *box, uint32_t index)
{
	uint32_t home;
	if (cap_over(t, box, &home)) {
		cap_store(t, home, box, index);
		return;
	}
	insert_leaves(t, home, box, index);
	split_region(t, home, box);
	if (t->overcap_len) cap_fixup(t); // (tested here: most inserts note nothing, and the call is not inlined)
}

/// Take a capped item out of its home; returns the home, for tidy.
static uint32_t cap_detach(tree_t *t, uint32_t index)
{
	item *it = &t->items[index];
	uint32_t ni = item_node(t, index);
	entry_remove(t, ni, it->addr);
	total_add(t, ni, -1);
	it->flags &= ~(uint32_t)ITEM_CAPPED;
	t->capped--;
	return ni;
}

/// A capped item moving to box: when it would stay capped in the same home,
/// its entry takes the box there (true); else the caller re-homes it.
static bool cap_move_in_place(tree_t *t, uint32_t index, const box_t *box)
{
	item *it = &t->items[index];
	uint32_t home;
	const node *r = &t->nodes[t->root];
	if (!cell_holds(r->lo, r->hi, box) || !cap_over(t, box, &home) || home != item_node(t, index)) return false;
	entry_at(t, it->addr)->box = *box;
	own_on_write(t, home, it->addr, box); // a big own list's index grows its groups
	bound_grow(t, home, box);
	return true;
}

/// Room in the list of noted items for n more (a split asks before it starts).
static bool cap_note_reserve(tree_t *t, uint32_t n)
{
	uint64_t want = (uint64_t)t->overcap_len + n;
	if (want <= t->overcap_cap) return true;
	if (want > UINT32_MAX / 4) return false;
	uint32_t cap = t->overcap_cap ? t->overcap_cap : 16;
	while (cap < want) cap *= 2;
	if (!array_resize(t, (void **)&t->overcap, (size_t)t->overcap_cap * sizeof *t->overcap,
	                  (size_t)cap * sizeof *t->overcap))
		return false;
	t->overcap_cap = cap;
	return true;
}

/// A split gave the copied item index more copies: note it for cap_fixup if
/// it is over the cap now (room reserved by cap_note_reserve).
static void cap_note(tree_t *t, uint32_t index, const box_t *box)
{
	item *it = &t->items[index];
	if (it->flags & ITEM_OVERCAP) return;
	uint32_t home;
	if (!cap_over(t, box, &home)) return;
	assert(t->overcap_len < t->overcap_cap);
	it->flags |= ITEM_OVERCAP;
	t->overcap[t->overcap_len++] = index;
}

/// In a leaves split (the node divided already, its entries being handed to
/// its children): entry e of an item its children's copies would put over the
/// cap is stored capped now, and noted so cap_fixup takes its copies in other
/// leaves out; a copy of an item capped so earlier in this insert is dropped.
/// True when e is not to be copied. (Copying first and capping after would let
/// a pile of strips copy itself down every level before it was capped.)
static bool cap_split_entry(tree_t *t, const entry *e)
{
	item *it = &t->items[e->item];
	if (it->flags & ITEM_CAPPED) return true; // its home holds it; the sweep would take this out
	uint32_t home;
	if (!cap_over(t, &e->box, &home)) return false;
	cap_store(t, home, &e->box, e->item); // a chunk reserved by the split
	if (!(it->flags & ITEM_OVERCAP)) {
		assert(t->overcap_len < t->overcap_cap);
		it->flags |= ITEM_OVERCAP;
		t->overcap[t->overcap_len++] = e->item;
	}
	return true;
}

/// A merge made the capped item's entry a leaf's only copy of it.
static void cap_uncap(tree_t *t, uint32_t index)
{
	item *it = &t->items[index];
	if (!(it->flags & ITEM_CAPPED)) return;
	it->flags &= ~(uint32_t)ITEM_CAPPED;
	t->capped--;
}

/// Whether box, touching node nd's cell and two of its children or more,
/// spans one of the children it touches on some axis. It touches the low half
/// on axis d when it starts below the middle, the high half when it ends at
/// or past it, and spans a half it touches when it covers it.
static inline bool cap_build_spans(const tree_t *t, const node *nd, const box_t *box)
{
	bool spans = false;
	float mid[DIM];
	node_mid(t, nd, mid);
	for (int d = 0; d < DIM; ++d) {
		bool low = box->min[d] < mid[d], high = box->max[d] >= mid[d];
		spans |= (low && high && box->min[d] <= nd->lo[d]) ||
		         (high && box->min[d] <= mid[d] && box->max[d] >= nd->hi[d]);
	}
	return spans;
}

/// The children of node nd whose cells box touches, a bit each.
static inline unsigned cap_child_mask(const tree_t *t, const node *nd, const box_t *box)
{
	unsigned mask = 0;
	float mid[DIM];
	node_mid(t, nd, mid);
	for (int c = 0; c < NCHILD; ++c) {
		float lo[DIM], hi[DIM];
		quadrant(nd->lo, mid, nd->hi, c, lo, hi);
		mask |= (unsigned)cell_touches(lo, hi, box) << c;
	}
	return mask;
}

/// Whether box, touching the children of nd in mask (cap_child_mask), is
/// over the cap once nd is divided, whatever grows below: it touches two
/// children or more and spans one of them (cap_build_spans), which cap_count
/// counts as past the limit. A split (the batched build's or an insert's)
/// stores such an entry capped, never in the children.
static inline bool cap_split_caps(const tree_t *t, const node *nd, const box_t *box, unsigned mask)
{
	return (mask & (mask - 1)) && cap_build_spans(t, nd, box);
}

/// The batched build's split of node nd into children: the n box indices at
/// S[at..] (item of box k at S[k]), per[c] of them touching child c, some of
/// them (the build counted them) touching two children or more and spanning
/// one (cap_build_spans). Such an item is over the cap in whatever tree
/// grows below (it spans every leaf there that it touches, as cap_count
/// counts): it is marked (ITEM_OVERCAP) and taken out of per, so the split
/// copies it into no child (the build skips marked items, those marked in
/// other branches too) and cap_build_fixup stores it capped. So a pile of
/// strips is never copied down level after level: the lists the build keeps
/// and the entries it makes stay O(n).
static void cap_build_split(tree_t *t, const node *nd, const box_t *boxes, const uint32_t *S, size_t at, uint32_t n,
                            uint32_t per[NCHILD])
{
	for (uint32_t k = 0; k < n; ++k) {
		const box_t *box = &boxes[S[at + k]];
		unsigned mask = cap_child_mask(t, nd, box);
		if (!cap_split_caps(t, nd, box, mask)) continue;
		t->items[S[S[at + k]]].flags |= ITEM_OVERCAP;
		for (int c = 0; c < NCHILD; ++c) per[c] -= (mask >> c) & 1u;
	}
}

/// After the top-down build of a leaves tree (which copies as it splits):
/// store capped every item the build marked (cap_build_split: its copies made
/// before the mark taken out) and every other item over the cap. false
/// without memory.
static bool cap_build_fixup(tree_t *t, const box_t *boxes)
{
	uint32_t marked = 0;
	for (uint32_t i = 0; i < t->item_len; ++i) {
		item *it = &t->items[i];
		if (!(it->flags & ITEM_OVERCAP)) continue;
		it->flags &= ~(uint32_t)ITEM_OVERCAP;
		if (!chunks_reserve(t, 1)) return false;
		// The build's items are 0, 1, ... in box order. A marked item
		// touched two children of a divided node; but an earlier item's
		// tidy_after may have merged that node's subtree into one leaf (a
		// split made for capped strips leaves children that hold little
		// once their copies go). Then the item is that leaf's one copy, as
		// cap_insert would store it.
		const box_t box = boxes[i];
		if (it->addr != NIL) {
			remove_leaves(t, t->root, &box, i);
			tidy_after(t, NIL, &box);
		}
		uint32_t home = cap_home(t, &box);
		if (t->nodes[home].flags & NODE_DIVIDED) {
			cap_store(t, home, &box, i);
		} else {
			it->addr = NIL; // entry_append makes the entry its home
			insert_leaves(t, home, &box, i);
		}
		marked++;
	}
	// A node whose items were all marked below their homes holds nothing:
	// pruned (or left waiting) as a removal would.
	for (uint32_t ni = 0; marked && ni < t->node_len; ++ni)
		if (ni != t->root && !(t->nodes[ni].flags & (NODE_FREE | NODE_WAITING)) && t->nodes[ni].total == 0) tidy(t, ni);
	for (uint32_t i = 0; i < t->item_len; ++i) {
		item *it = &t->items[i];
		if (!(it->flags & ITEM_LIVE) || (it->flags & (ITEM_CAPPED | ITEM_PENDING))) continue;
		box_t box = entry_at(t, it->addr)->box;
		uint32_t home;
		if (!cap_over(t, &box, &home)) continue;
		if (!chunks_reserve(t, 1)) return false;
		remove_leaves(t, t->root, &box, i);
		cap_store(t, home, &box, i);
		tidy_after(t, NIL, &box);
	}
	// The loops above store as inserts do but split nothing, and a tidy may
	// have folded a subtree (a fold forgets its retry: it leaves a leaf
	// within its bucket, but these re-inserts can refill it): a leaf they
	// left over its bucket splits now, as an insert's would, and what the
	// split puts over the cap is stored capped and its copies taken out
	// (cap_fixup, as after an insert's splits: a split without it left those
	// copies in leaves, capped items there, which validate refuses). A split
	// that does not help, or finds no memory, waits until the leaf doubles
	// (split sets its retry). The nodes a split makes are checked on, in turn.
	for (uint32_t ni = 0; ni < t->node_len; ++ni) {
		const node *n = &t->nodes[ni];
		if ((n->flags & (NODE_FREE | NODE_WAITING)) || !wants_split(t, n)) continue;
		split(t, ni);
		cap_fixup(t);
	}
	return true;
}

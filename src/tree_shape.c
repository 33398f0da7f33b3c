// tree_shape.c: how the tree changes shape — which child takes a box, splits,
// merges, pruning emptied branches, and growing the root.
//
// Splits and merges are best effort (tree.c says why that is safe); root
// growth is the one change of shape an insert or move cannot do without.
#include <float.h>

#include "tree_int.h"

// ---- shape ------------------------------------------------------------------

/// Whether n may have children: depth and minimum size allow it, and its split
/// point lies strictly inside its cell on every axis (floats can run out).
///
/// Depth: max_depth is where splitting normally stops, not a wall. A node
/// there holding more than DEEP_SPLIT buckets is a pile the limit would leave
/// to be scanned whole by every query and pair search (a speck of boxes far
/// smaller than the scene, points on binary scales towards 0, a world of
/// millions of boxes too big for the depth), so it splits
/// on, until floats run out; split() refuses a pile of one box repeated, which
/// no split could spread. A node already divided keeps its children.
/// can_split for a node whose split point (node_mid) the caller has.
static bool can_split_at(const tree_t *t, const node *n, const float mid[DIM])
{
	if (node_depth(t, n) >= t->def.max_depth && !(n->flags & NODE_DIVIDED) &&
	    n->total <= (uint32_t)t->def.bucket_size * DEEP_SPLIT)
		return false;
	for (int d = 0; d < DIM; ++d) {
		if (!(n->lo[d] < mid[d] && mid[d] < n->hi[d])) return false;
		if ((n->hi[d] - n->lo[d]) * 0.5f < t->def.min_cell_size) return false;
	}
	return true;
}

static bool can_split(const tree_t *t, const node *n)
{
	float mid[DIM];
	node_mid(t, n, mid);
	return can_split_at(t, n, mid);
}

/// Whether leaf n is over-full and should split now.
static bool wants_split(const tree_t *t, const node *n)
{
	return !(n->flags & NODE_DIVIDED) && n->count > (uint32_t)t->def.bucket_size && n->count >= node_retry_at(n) &&
	       can_split(t, n);
}

/// Child c's bounds: its cell, enlarged for loose placement (mid: node_mid).
static void child_bounds(const tree_t *t, const node *n, const float mid[DIM], int c, float lo[DIM], float hi[DIM])
{
	quadrant(n->lo, mid, n->hi, c, lo, hi);
	if (t->def.placement != ORT_PLACEMENT_LOOSE) return;
	float k = (t->def.looseness - 1.0f) * 0.5f;
	for (int d = 0; d < DIM; ++d) {
		float m = (hi[d] - lo[d]) * k;
		lo[d] -= m;
		hi[d] += m;
	}
}

static void fitter_init(const tree_t *t, const node *n, fitter *f)
{
	node_mid(t, n, f->mid);
	f->can = can_split_at(t, n, f->mid);
	f->tight = t->def.placement == ORT_PLACEMENT_TIGHT;
	for (int c = 0; c < NCHILD; ++c) child_bounds(t, n, f->mid, c, f->lo[c], f->hi[c]);
}

/// fitter_child for a single item: only the chosen child's bounds are computed.
static int fit_child(const tree_t *t, const node *n, const box_t *box)
{
	float mid[DIM];
	node_mid(t, n, mid);
	if (!can_split_at(t, n, mid)) return -1;
	bool tight = t->def.placement == ORT_PLACEMENT_TIGHT;
	int c = choose_child(tight, mid, box);
	float lo[DIM], hi[DIM];
	child_bounds(t, n, mid, c, lo, hi);
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
	child_cell(t, p, c, n->lo, n->hi);
	n->parent = pi;
	n->level = (int16_t)(p->level + 1);
	p->child[c] = ci;
	int depth = node_depth(t, n);
	if (depth > t->height) t->height = depth;
	return ci;
}

/// leaves: OR cat into every node under ni whose cell box touches.
static void cats_leaves(tree_t *t, uint32_t ni, const box_t *box, uint64_t cat)
{
	node_cats_add(t, ni, cat);
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
	node_cats_add(t, ni, cat);
	for (ni = t->nodes[ni].parent; ni != NIL && (node_cats(t, ni) & cat) != cat; ni = t->nodes[ni].parent)
		node_cats_add(t, ni, cat);
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
				if (t->node_waits) t->node_waits[ci].countdown = t->node_waits[ci].lifespan;
			}
		}
		n->total = (uint32_t)((int64_t)n->total + delta);
		if (delta > 0 && (n->flags & NODE_WAITING)) {
			// A branch reused during its grace period earns a longer one (the game octree's
			// prune countdown).
			n->flags &= (uint8_t)~NODE_WAITING;
			if (t->node_waits) {
				uint32_t life = (uint32_t)t->node_waits[ni].lifespan * 2;
				uint32_t cap = (uint32_t)t->def.prune_delay * 8;
				t->node_waits[ni].lifespan = (uint16_t)(life > cap ? cap : life);
			}
		}
		ni = n->parent;
	}
}

// ---- split ------------------------------------------------------------------

/// The common part of boxes (leaves_meet_add each into one initialised by
/// leaves_meet_init): empty on some axis once two of them are apart.
static inline void leaves_meet_init(box_t *meet)
{
	for (int d = 0; d < DIM; ++d) {
		meet->min[d] = -INFINITY;
		meet->max[d] = INFINITY;
	}
}

static inline void leaves_meet_add(box_t *meet, const box_t *box)
{
	for (int d = 0; d < DIM; ++d) {
		meet->min[d] = box->min[d] > meet->min[d] ? box->min[d] : meet->min[d];
		meet->max[d] = box->max[d] < meet->max[d] ? box->max[d] : meet->max[d];
	}
}

/// leaves: whether splitting a leaf of n entries, per[c] of which touch child
/// c, meet the common part of their boxes (leaves_meet_add; NULL: not
/// known yet, for a caller that reads it only when needed), helps. It does
/// when some child gets fewer than all of them. When the fullest gets every
/// one, it still helps if few are copied elsewhere too (at most n/8: the pile
/// descends to smaller cells, its copies growing at most 1.125x a level), or
/// if two of them are apart (the common part is empty): smaller cells part
/// them in the end, though the fullest child may take them all for a level or
/// more (strips long in x across x = 500 and strips long in y across y = 500,
/// all in the low corner: each touches the low-left child, which the next
/// split parts; refused, they stayed in the root leaf by the thousand, and
/// every remove scanned it for its entry). When the boxes all share a point
/// and are copied more (duplicates on a split point, thin boxes through one
/// point), every cell holding the point holds all of them: splitting would
/// only copy the pile down to max_depth, up to NCHILD times a level, so it
/// does not. (Copies stay bounded by the cap either way: an item copied into
/// more than LEAVES_CAP leaves is stored once, tree_cap.c.)
static bool leaves_split_helps(const uint32_t per[NCHILD], uint32_t n, const box_t *meet)
{
	uint64_t copies = 0;
	uint32_t most = 0;
	for (int c = 0; c < NCHILD; ++c) {
		copies += per[c];
		if (per[c] > most) most = per[c];
	}
	bool apart = false; // (meet NULL: not known, not apart)
	for (int d = 0; meet && d < DIM; ++d) apart |= meet->min[d] > meet->max[d];
	return most < n || copies * 8 <= (uint64_t)n * 9 || apart;
}

/// Whether the entries of node n are all one box: a pile no split spreads.
static bool entries_all_one(const tree_t *t, const node *n)
{
	const box_t *first = NULL;
	ENTRY_LOOP(t, n, c, k)
	{
		const box_t *b = &t->chunks[c].e[k].box;
		if (!first)
			first = b;
		else if (memcmp(first, b, sizeof *b) != 0)
			return false;
	}
	return true;
}

/// Move the entries of leaf ni into its children; best-effort (see top).
static void split(tree_t *t, uint32_t ni)
{
	node *n = &t->nodes[ni];
	bool leaves = t->def.placement == ORT_PLACEMENT_LEAVES;
	// Each destination may open one chunk before a drained source chunk is
	// freed; leaves may copy every entry into every child, and each entry the
	// split puts over the cap (and each noted before it) takes a chunk where
	// cap_fixup stores it.
	uint32_t chunks_needed = leaves ? (n->count / CHUNK_CAP + 1) * NCHILD + 1 + n->count + t->overcap_len : NCHILD + 2;
	bool useful = true;
	if (leaves) {
		// Splitting helps only if some entry misses the fullest child; else
		// (a pile of duplicates, boxes covering the whole cell) it would only
		// copy the pile down to max_depth, NCHILD times per level. An entry
		// the split puts over the cap (cap_split_caps) leaves the leaf for
		// its home instead of being copied, so it is not counted: a leaf of
		// strips that all touch the fullest child still splits, and they go
		// capped (else re-inserted strips pile up in a leaf, scanned whole).
		uint32_t per[NCHILD] = {0}, stay = n->count;
		fitter cells; // (leaves: its lo and hi are the children's cells)
		fitter_init(t, n, &cells);
		box_t meet;
		leaves_meet_init(&meet);
		ENTRY_LOOP(t, n, ch, k)
		{
			const box_t *b = &t->chunks[ch].e[k].box;
			unsigned touched = 0;
			for (int c = 0; c < NCHILD; ++c) {
				if (cell_touches(cells.lo[c], cells.hi[c], b)) per[c]++, touched++;
			}
			if (touched < 2 || !cap_build_spans(t, n, b)) continue;
			stay--; // capped by the split (cap_split_caps): its touches do not count
			unsigned mask = cap_child_mask(t, n, b);
			for (int c = 0; c < NCHILD; ++c) per[c] -= (mask >> c) & 1u;
		}
		useful = leaves_split_helps(per, stay, NULL);
		// Else the common part of the boxes that stay decides (read again:
		// only a leaf that would be refused pays for it).
		if (!useful) {
			ENTRY_LOOP(t, n, ch, k)
			{
				const box_t *b = &t->chunks[ch].e[k].box;
				if (!cap_split_caps(t, n, b, cap_child_mask(t, n, b))) leaves_meet_add(&meet, b);
			}
			useful = leaves_split_helps(per, stay, &meet);
		}
	}
	// Past max_depth (can_split): one box repeated would only move down until
	// floats run out.
	if (useful && node_depth(t, n) >= t->def.max_depth) useful = !entries_all_one(t, n);
	if (!useful || !nodes_reserve(t, NCHILD) || !chunks_reserve(t, chunks_needed) ||
	    (leaves && !cap_note_reserve(t, t->nodes[ni].count))) {
		n = &t->nodes[ni];
		n->retry = node_retry_after(n->count);
		return;
	}
	n = &t->nodes[ni];
	n->flags |= NODE_DIVIDED;
	n->retry = 0;
	own_drop(t, ni); // every entry leaves; those that stay come back as appends
	uint32_t src = n->head, count = n->count;
	n->head = NIL;
	n->count = 0;
	t->entries -= count;
	uint32_t moved[NCHILD] = {0};
	uint32_t astray[ASTRAY_MAX], n_astray = 0; // (rehome_astray)
	uint32_t fill = head_fill(count);
	fitter f;
	fitter_init(t, &t->nodes[ni], &f);
	while (src != NIL) {
		for (uint32_t k = 0; k < fill; ++k) {
			entry e = t->chunks[src].e[k];
			if (leaves) {
				// Over the cap once copied into the children: stored capped
				// instead (or a copy of one capped so), not copied on.
				if (cap_split_entry(t, &e)) continue;
				t->items[e.item].addr = NIL; // the first copy becomes its home
				int copies = 0;
				for (int c = 0; c < NCHILD; ++c) {
					if (!cell_touches(f.lo[c], f.hi[c], &e.box)) continue;
					uint32_t ci = t->nodes[ni].child[c];
					if (ci == NIL) ci = child_make(t, ni, c);
					entry_append(t, ci, &e.box, e.item);
					moved[c]++;
					copies++;
				}
				if (copies > 1) cap_note(t, e.item, &e.box);
			} else {
				int c = fitter_child(&f, &e.box);
				uint32_t dst = ni;
				if (c >= 0) {
					dst = t->nodes[ni].child[c];
					if (dst == NIL) dst = child_make(t, ni, c);
					moved[c]++;
				} else if (!f.tight && n_astray < ASTRAY_MAX && !centre_in_cell(&t->nodes[ni], &e.box)) {
					astray[n_astray++] = e.item;
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
	// leaves: every entry went capped elsewhere (cap_split_entry): an empty
	// leaf again, which the insert's tidy prunes.
	if (leaves && sum == 0) t->nodes[ni].flags &= (uint8_t)~NODE_DIVIDED;
	for (int c = 0; c < NCHILD; ++c) {
		uint32_t ci = t->nodes[ni].child[c];
		if (ci == NIL || !moved[c]) continue;
		node *ch = &t->nodes[ci];
		if (wants_split(t, ch)) split(t, ci);
	}
	rehome_astray(t, ni, astray, n_astray);
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
	own_drop(t, sub);
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
				cap_uncap(t, e.item); // its box lies in ni's cell: ni's copy
				if (it->flags & ITEM_MARK) continue;
				it->flags |= ITEM_MARK;
				it->addr = NIL;
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

/// Fold a divided node's subtree back into it (the generic quadtree's merge).
static bool merge(tree_t *t, uint32_t ni)
{
	if (!chunks_reserve(t, 2)) return false;
	node *n = &t->nodes[ni];
	uint32_t before = n->total;
	if (t->def.placement == ORT_PLACEMENT_LEAVES) {
		// The node itself holds only capped entries, one per item, none
		// marked; as the leaf it becomes, it holds them as copies.
		collapse_into(t, ni, ni);
		clear_marks(t, ni);
		n = &t->nodes[ni];
		ENTRY_LOOP(t, n, ch, k) cap_uncap(t, t->chunks[ch].e[k].item);
	} else {
		collapse_into(t, ni, ni);
	}
	n = &t->nodes[ni];
	n->flags &= (uint8_t)~NODE_DIVIDED;
	n->retry = 0;
	// The subtree is one node now: its categories are exactly its entries'.
	uint64_t cats = 0;
	ENTRY_LOOP(t, n, ch, k) cats |= item_cat(t, t->chunks[ch].e[k].item);
	node_cats_set(t, ni, cats);
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
	t->nodes[n->parent].child[node_which(t, ni)] = NIL;
	empty_free(t, ni);
}

/// After entries left the subtree at ni: prune emptied branches (or start
/// their grace period) and merge the highest underfull divided ancestor.
///
/// Underfull is at most merge_size entries, by default (loose and tight:
/// tree_create) bucket_size - 1: a node splits past bucket_size and folds
/// back one below it, nearly the shape a build gives, while one item moving
/// to and fro across the count cannot split and fold a node on every move
/// (at bucket_size it did: 7.7k instructions a move, not 1.1k). A lower
/// merge_size (it was bucket_size / 2) leaves a band in which a node stays
/// divided once it split, and moves drift a tree into it: 20k small boxes, a
/// twentieth moving 0.3 a frame, went from 4423 nodes after the build to
/// 5353 after 400 frames (1348 divided, 246 of them holding 16 or fewer), and
/// from 73 to 83 bytes an object as the pools grew for them. With the band
/// one wide (and split's rehome_astray) the same churn stays within 6 % of
/// the build's nodes and at 73.9 bytes an object after 300 frames
/// (test_memory's long churn); a band of a quarter bucket drifted to 80.5.
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
				t->node_waits[empty].countdown = t->node_waits[empty].lifespan;
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
/// node now at max_depth into itself, so the tree keeps to max_depth but for
/// piles (can_split; best effort, like every merge). Recomputes the height bound.
static void fold_deep(tree_t *t, uint32_t ni)
{
	node *n = &t->nodes[ni];
	int depth = node_depth(t, n);
	// A pile may stay divided past max_depth (can_split).
	if (depth >= t->def.max_depth && (n->flags & NODE_DIVIDED) &&
	    n->total <= (uint32_t)t->def.bucket_size * DEEP_SPLIT) {
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
	memcpy(n->lo, lo, sizeof n->lo);
	memcpy(n->hi, hi, sizeof n->hi);
	t->root = r;
	t->height = 0;
}

/// The root cell for def.region. Cells are half-open, so the upper faces go
/// one ulp past the region's: a box resting on the region's far wall (closed
/// boxes, the bouncing-boxes demo's field) still fits without the root doubling.
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

/// The cell a root starts from: the region's, or one around box.
static void root_start_cell(const tree_t *t, const box_t *box, float lo[DIM], float hi[DIM])
{
	if (t->def.use_region)
		region_cell(t, lo, hi);
	else
		root_cell_for(box, lo, hi);
}

enum root_step_kind { ROOT_HOLDS, ROOT_RESTART, ROOT_DOUBLE, ROOT_OVERFLOW };

/// One step of the root towards holding a box: the next root's cell, and
/// (ROOT_DOUBLE) where the old root goes among its children.
typedef struct root_step {
	float lo[DIM], mid[DIM], hi[DIM];
	int which;
} root_step;

/// The step a root with cell [lo, hi), split at mid, takes towards holding
/// box: none (ROOT_HOLDS); when it holds nothing, start over (ROOT_RESTART)
/// with a root around the box — with a region, the region doubled towards the
/// box, so cells keep its grid; else double towards the box (ROOT_DOUBLE), the
/// old root becoming a child, so nothing moves. ROOT_OVERFLOW when that would
/// pass a quarter of FLT_MAX.
static int root_next(const tree_t *t, const float lo[DIM], const float mid[DIM], const float hi[DIM], bool empty,
                     const box_t *box, root_step *s)
{
	if (cell_holds(lo, hi, box)) return ROOT_HOLDS;
	if (empty) {
		root_start_cell(t, box, s->lo, s->hi);
		// The cell must hold the box, or root_cover would start over for ever.
		if (!cell_grow_to(s->lo, s->hi, box)) return ROOT_OVERFLOW;
		cell_mid(s->lo, s->hi, s->mid);
		return ROOT_RESTART;
	}
	// Every axis doubles at once, so a root much longer on one axis than
	// another could overflow there before it reaches the box.
	for (int d = 0; d < DIM; ++d) {
		double w = (double)hi[d] - lo[d];
		if (fabs((double)lo[d] - w) > 0.25 * FLT_MAX || fabs((double)hi[d] + w) > 0.25 * FLT_MAX) return ROOT_OVERFLOW;
	}
	s->which = 0;
	for (int d = 0; d < DIM; ++d) {
		float w = hi[d] - lo[d];
		float bc = box->min[d] + (box->max[d] - box->min[d]) * 0.5f;
		if (box->min[d] < lo[d] || (box->max[d] < hi[d] && bc < mid[d])) {
			s->lo[d] = lo[d] - w; // grow down: the old root is the upper half
			s->mid[d] = lo[d];
			s->hi[d] = hi[d];
			s->which |= 1 << d;
		} else {
			s->lo[d] = lo[d];
			s->mid[d] = hi[d];
			s->hi[d] = hi[d] + w;
		}
	}
	return ROOT_DOUBLE;
}

/// What root_cover will do for box, worked out on a copy of the root so that
/// its nodes can be reserved (with whatever the caller does next) before
/// anything changes: false when the root would overflow.
static bool root_plan_for(const tree_t *t, const box_t *box, root_plan *p)
{
	float lo[DIM], mid[DIM], hi[DIM];
	bool empty = true;
	*p = (root_plan){0, 0, false};
	if (t->root == NIL) {
		root_start_cell(t, box, lo, hi);
		cell_mid(lo, hi, mid);
		p->nodes = 1;
		p->fresh = true;
	} else {
		const node *r = &t->nodes[t->root];
		memcpy(lo, r->lo, sizeof lo);
		node_mid(t, r, mid);
		memcpy(hi, r->hi, sizeof hi);
		empty = r->total == 0;
	}
	for (;;) {
		root_step s;
		int step = root_next(t, lo, mid, hi, empty, box, &s);
		if (step == ROOT_HOLDS) return true;
		if (step == ROOT_OVERFLOW) return false;
		p->nodes++;
		if (step == ROOT_RESTART)
			p->fresh = true;
		else
			p->doublings++, empty = false;
		memcpy(lo, s.lo, sizeof lo);
		memcpy(mid, s.mid, sizeof mid);
		memcpy(hi, s.hi, sizeof hi);
	}
}

/// Make the root hold box: create it, start it over, or double it towards the
/// box until it does. Cannot fail: root_plan_for said it can be done, and the
/// pools hold the nodes it counted. Each step is a valid tree.
static void root_cover(tree_t *t, const box_t *box)
{
	if (t->root == NIL) {
		float lo[DIM], hi[DIM];
		root_start_cell(t, box, lo, hi);
		root_set(t, lo, hi);
	}
	for (;;) {
		uint32_t old = t->root;
		const node *r = &t->nodes[old];
		float mid[DIM];
		node_mid(t, r, mid);
		root_step s;
		int step = root_next(t, r->lo, mid, r->hi, r->total == 0, box, &s);
		if (step == ROOT_HOLDS) return;
		assert(step != ROOT_OVERFLOW);
		if (step == ROOT_RESTART) {
			empty_free(t, old);
			root_set(t, s.lo, s.hi);
			continue;
		}
		uint32_t nr = node_new(t);
		node *o = &t->nodes[old];
		node *n = &t->nodes[nr];
		memcpy(n->lo, s.lo, sizeof n->lo);
		memcpy(n->hi, s.hi, sizeof n->hi);
		n->level = (int16_t)(o->level - 1);
		n->flags = NODE_DIVIDED;
		float centre[DIM];
		cell_mid(s.lo, s.hi, centre);
		if (memcmp(centre, s.mid, sizeof centre) != 0) {
			// The old root's edge is not the new cell's rounded centre:
			// keep it (odd_mids_reserve made the slot).
			n->flags |= NODE_ODDMID;
			memcpy(t->odd_mids[odd_slot(n)], s.mid, sizeof s.mid);
		}
		n->total = o->total;
		node_cats_set(t, nr, node_cats(t, old));
		n->bound = o->bound;
		n->child[s.which] = old;
		o->parent = nr;
		t->root = nr;
		t->height++;
		if (t->height > t->def.max_depth) fold_deep(t, nr);
	}
}

/// Room in tree_t.odd_mids for the slots of `doublings` more root doublings
/// (one a level below the root's): false without memory, nothing changed.
static bool odd_mids_reserve(tree_t *t, uint32_t doublings)
{
	int level = t->root == NIL ? 0 : t->nodes[t->root].level;
	uint64_t need = (uint64_t)(level < 0 ? -level : 0) + doublings;
	if (need <= t->odd_mids_cap) return true;
	uint64_t want = need < 16 ? 16 : need * 2;
	size_t w = sizeof *t->odd_mids;
	if (!array_resize(t, (void **)&t->odd_mids, t->odd_mids_cap * w, (size_t)want * w)) return false;
	t->odd_mids_cap = (uint32_t)want;
	return true;
}

/// root_cover for a caller that reserves nothing else.
static ort_result root_grow(tree_t *t, const box_t *box)
{
	root_plan p;
	if (!root_plan_for(t, box, &p)) return ORT_ERROR_OUT_OF_RANGE;
	if (!odd_mids_reserve(t, p.doublings) || !nodes_reserve(t, p.nodes)) return ORT_ERROR_OUT_OF_MEMORY;
	root_cover(t, box);
	return ORT_OK;
}

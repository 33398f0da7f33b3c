// packed_build.c: ortN_packed_build — keys, the radix sort, and the blocks.
//
// Keys. An item's level is the deepest at which a cell is at least as large as
// the item on every axis (the loose octree rule: Ulrich, Game Programming Gems
// 1; Ericson §7.3.6), so the item lies within its cell enlarged by half a side
// each way and large boxes sit high instead of inflating the leaves. Its key is
// the Morton code of the cell holding its centre at that level, padded with
// zeros to `depth` levels, then the level in the low PK_LEVEL_BITS bits. Sorted
// by key (an LSD radix sort, stable, so equal keys stay in id order), every
// subtree's items form one run with the node's own items first — their padded
// code is the run's smallest and their level the lowest — and children follow
// in Morton order (Karras 2012's linear trees, with loose levels).
#include "morton.h"
#include "packed_int.h"
#include "task_int.h"

// ---- keys ---------------------------------------------------------------------

/// floor(log2(a / b)) for a >= 0 and b > 0 (normal doubles), exactly and
/// without dividing: with a = 2^ea (1 + fa) and b = 2^eb (1 + fb), the
/// quotient's mantissa (1 + fa) / (1 + fb) is >= 1 exactly when fa >= fb.
/// a == 0 gives a large negative number.
static inline int pk_log2_ratio(double a, double b)
{
	uint64_t ua, ub;
	memcpy(&ua, &a, sizeof ua);
	memcpy(&ub, &b, sizeof ub);
	const uint64_t mant = ((uint64_t)1 << 52) - 1u;
	return (int)(ua >> 52) - (int)(ub >> 52) - ((ua & mant) < (ub & mant));
}

static inline uint32_t pk_key(const pk_grid *g, const box_t *b)
{
	int level = g->depth;
	uint32_t code = 0;
	for (int d = 0; d < DIM; ++d) {
		double size = (double)b->max[d] - b->min[d];
		if (size > 0.0) {
			// The deepest level whose cell side extent / 2^level still covers
			// size; an item larger than the grid (a negative level) sits at the root.
			int l = pk_log2_ratio(g->extent[d], size);
			if (l < level) level = l < 0 ? 0 : l;
		}
		double c = 0.5 * ((double)b->min[d] + b->max[d]);
		double q = (c - g->lo[d]) * g->scale[d];
		uint32_t qi = q <= 0.0 ? 0u : q >= (double)(g->cells - 1) ? g->cells - 1 : (uint32_t)q;
		code |= (uint32_t)morton_spread(qi, DIM) << d; // qi < 2^depth: the code fits
	}
	int pad = DIM * (g->depth - level);
	code &= ~((1u << pad) - 1u);
	return code << PK_LEVEL_BITS | (uint32_t)level;
}

// ---- node building -----------------------------------------------------------

/// Block index b->made, made room for when the array may grow.
static uint32_t pk_new_block(pk_build *b)
{
	if (b->grow && b->made == b->cap && !b->failed) {
		uint32_t cap = b->cap + b->cap / 2 + 16;
		pblock *nb = pk_alloc(b->grow, (size_t)cap * sizeof *nb);
		if (nb) {
			memcpy(nb, b->blocks, (size_t)b->made * sizeof *nb);
			pk_free(b->grow, b->blocks, (size_t)b->cap * sizeof *nb);
			b->blocks = nb;
			b->cap = cap;
		} else {
			// Count on, writing nothing more: the caller frees and reports.
			b->failed = true;
		}
	}
	return b->made++;
}

/// Where node building writes: nowhere once a growable array failed to grow.
static inline pblock *pk_blocks(const pk_build *b) { return b->failed ? NULL : b->blocks; }

static inline uint32_t pk_sorted_key(const pk_build *b, uint32_t k) { return (uint32_t)(b->sorted[k] >> 32); }

/// The first index in [lo, hi) whose key is >= bound (hi if none).
static uint32_t pk_lower(const pk_build *b, uint32_t lo, uint32_t hi, uint64_t bound)
{
	while (hi - lo > 16) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (pk_sorted_key(b, mid) < bound)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo < hi && pk_sorted_key(b, lo) < bound) ++lo;
	return lo;
}

// ---- piles -------------------------------------------------------------------
//
// A run of items the grid cannot spread out is laid out by count instead: more
// than a bucket in one cell at the depth limit, or in one cell and level (a
// speck far smaller than the scene, duplicates), or more than PK_OWN_MAX own
// items at one node (strips and straddlers, as large as their cell and all in
// it). A pile is put in Morton order of its centres, quantised in the cube
// over the pile's own centres (so the axis they spread most along decides the
// first cuts), by one in-place radix sort of (code, place) pairs in the
// scratch sort_b[lo, hi); then it is cut in halves by count, DIM times to
// fill a block, and so on down to buckets. Its bounds stay tight whatever the
// spread: a part whose items all share one code (the quantum was too coarse:
// centres spread over many binary scales) is put in order again in its own
// cube, and so is a part whose boxes are shaped unlike the ones its order was
// made for (pk_pile_skewed: one arm of a pinwheel cut from the whole), and
// one whose centres are all equal needs no order. Its shape depends on its
// size alone: the counting passes walk it without the boxes, and it is at
// most PK_PILE_LEVELS deep.

/// Twice an item's centre on axis d.
static inline double pk_centre2(const box_t *b, int d) { return (double)b->min[d] + b->max[d]; }

/// Sort a[0..n), whose values agree above bit `top`, in place: an MSD radix
/// sort (American flag) on digits of up to 11 bits, as wide as the part is
/// large, skipping bits the whole part shares; small parts by insertion.
/// The values are distinct (their low bits are places), so the order is one.
static void pk_msd(uint64_t *a, uint32_t n, int top)
{
	if (n <= 24) {
		for (uint32_t i = 1; i < n; ++i) {
			uint64_t v = a[i];
			uint32_t j = i;
			for (; j > 0 && a[j - 1] > v; --j) a[j] = a[j - 1];
			a[j] = v;
		}
		return;
	}
	uint64_t diff = 0;
	for (uint32_t i = 1; i < n; ++i) diff |= a[i] ^ a[0];
	assert(diff != 0);
	top = 64 - __builtin_clzll(diff);
	int w = 31 - __builtin_clz(n) - 3;
	w = w > 11 ? 11 : w < 1 ? 1 : w;
	if (w > top) w = top;
	int shift = top - w;
	uint32_t mask = (1u << w) - 1u, next[2048], end[2048];
	memset(next, 0, sizeof next[0] << w);
	for (uint32_t i = 0; i < n; ++i) next[(uint32_t)(a[i] >> shift) & mask]++;
	uint32_t sum = 0;
	for (uint32_t k = 0; k <= mask; ++k) {
		uint32_t c = next[k];
		next[k] = sum;
		sum += c;
		end[k] = sum;
	}
	// Each value goes to its digit's next free place; the one it displaces
	// moves on, until a value of digit k comes back to k's place.
	for (uint32_t k = 0; k <= mask; ++k)
		while (next[k] < end[k]) {
			uint64_t v = a[next[k]];
			uint32_t d;
			while ((d = (uint32_t)(v >> shift) & mask) != k) {
				uint64_t t = a[next[d]];
				a[next[d]++] = v;
				v = t;
			}
			a[next[k]++] = v;
		}
	// Digit k's values now fill [end[k - 1], end[k]); they agree above shift.
	for (uint32_t k = 0, i = 0; k <= mask; i = end[k++])
		if (end[k] - i > 1) pk_msd(a + i, end[k] - i, shift);
}

/// Items [lo, lo + m), whose sorted keys key[0, m) hold in their `ib` low
/// bits the place (from lo) each item is at, move to their keys' places:
/// item k goes where its key is, cycle by cycle (a place done holds its own
/// number, so the keys end with places in order).
static void pk_place(pk_build *b, uint32_t lo, uint32_t m, uint64_t *key, int ib)
{
	uint64_t low = ((uint64_t)1 << ib) - 1u;
	for (uint32_t i = 0; i < m; ++i) {
		uint32_t k = (uint32_t)(key[i] & low);
		if (k == i) continue;
		box_t tb = b->boxes[lo + i];
		uint32_t tid = b->ids[lo + i];
		uint32_t j = i;
		while (k != i) {
			b->boxes[lo + j] = b->boxes[lo + k];
			b->ids[lo + j] = b->ids[lo + k];
			key[j] = (key[j] & ~low) | j;
			j = k;
			k = (uint32_t)(key[k] & low);
		}
		b->boxes[lo + j] = tb;
		b->ids[lo + j] = tid;
		key[j] = (key[j] & ~low) | j;
	}
}

/// Put a pile's leaf [lo, hi) in ascending id order (packed_int.h:
/// pblock.ordered: what k nearest relies on to stop early). Piles of
/// duplicates (their centres all equal: never reordered) need no move; the
/// rest are sorted by their keys, on the stack up to 64 of them (a first
/// build leaves scratch untouched, its pages not faulted in:
/// pk_sort_buffers), else in scratch[lo, hi), which nothing of the build
/// reads again once the items are in a leaf.
/// Leaves up to this many items are put in id order by insertion.
#define PK_BY_ID_INSERT 24

static void pk_by_id(pk_build *b, uint32_t lo, uint32_t hi)
{
	uint32_t k = lo + 1, m = hi - lo;
	while (k < hi && b->ids[k - 1] < b->ids[k]) ++k;
	if (k >= hi) return;
	if (m <= PK_BY_ID_INSERT) {
		// A bucket's worth: insertion from the first out of order, moving
		// boxes and ids in place (no keys, no second pass).
		for (; k < hi; ++k) {
			uint32_t id = b->ids[k], j = k;
			if (b->ids[j - 1] < id) continue;
			box_t bx = b->boxes[k];
			for (; j > lo && b->ids[j - 1] > id; --j) {
				b->ids[j] = b->ids[j - 1];
				b->boxes[j] = b->boxes[j - 1];
			}
			b->ids[j] = id;
			b->boxes[j] = bx;
		}
		return;
	}
	uint64_t local[64], *key = m <= 64 ? local : b->scratch + lo;
	for (uint32_t i = 0; i < m; ++i) key[i] = (uint64_t)b->ids[lo + i] << 32 | i;
	pk_msd(key, m, 64);
	pk_place(b, lo, m, key, 32);
}

/// A leaf owning items [lo, hi): a pile's (`pile`), put in id order, or
/// the grid's, left in the order of their keys (pblock.ordered says which).
static box_t pk_leaf(pk_build *b, uint32_t lo, uint32_t hi, bool pile, pk_lane_out *ln)
{
	box_t bounds = pk_empty_box();
	if (pk_blocks(b)) {
		if (pile) pk_by_id(b, lo, hi);
		for (uint32_t k = lo; k < hi; ++k) pk_grow(&bounds, &b->boxes[k]);
	}
	*ln = (pk_lane_out){lo, hi - lo, NIL, pile};
	return bounds;
}

/// How a part of a pile stands: not in order (PK_RAW), with all centres
/// equal (PK_FLAT), or else in order, its codes in sort_b above that many
/// low bits of places.
#define PK_RAW (-1)
#define PK_FLAT 64

/// The order a part of a pile is in: how it stands (bits: PK_RAW, PK_FLAT
/// or place bits), and the mean extent per axis of the boxes it was made for
/// (the units its cube was drawn in).
typedef struct pk_order {
	int bits;
	double ext[DIM];
} pk_order;

static const pk_order pk_unordered = {PK_RAW, {0}};

/// Put items [lo, hi) in Morton order of their centres in the cube over
/// them; *ord gets how they stand (PK_FLAT when the centres are all equal,
/// else how many low bits of sort_b[k] hold places) and their mean extents.
static void pk_pile_order(pk_build *b, uint32_t lo, uint32_t hi, pk_order *ord)
{
	uint32_t m = hi - lo;
	double cmin[DIM], cmax[DIM];
	for (int d = 0; d < DIM; ++d) {
		cmin[d] = INFINITY;
		cmax[d] = -INFINITY;
	}
	for (uint32_t i = lo; i < hi; ++i)
		for (int d = 0; d < DIM; ++d) {
			double c = pk_centre2(&b->boxes[i], d);
			cmin[d] = c < cmin[d] ? c : cmin[d];
			cmax[d] = c > cmax[d] ? c : cmax[d];
		}
	// Each axis in units of the boxes' mean extent along it (at least a
	// millionth of the centres' spread: points, flat piles): an axis the
	// boxes are long on, whose centres differ by less than a box, orders
	// little. Strips stacked along y and long in x (and z) then go in order
	// of y, so the parts cut from them keep apart; taken as a cube, their
	// centres' noise in x and z split them finely as if it were structure
	// and every part's bounds met most others'. Boxes alike on every axis
	// (a speck, duplicates) are ordered as in a cube.
	double ext[DIM] = {0}, unit[DIM], side = 0.0;
	for (uint32_t i = lo; i < hi; ++i)
		for (int d = 0; d < DIM; ++d) ext[d] += (double)b->boxes[i].max[d] - b->boxes[i].min[d];
	for (int d = 0; d < DIM; ++d) {
		double spread = cmax[d] - cmin[d];
		ord->ext[d] = ext[d] / m;
		unit[d] = 2.0 * ext[d] / m; // centres are doubled (pk_centre2)
		if (!(unit[d] > spread * 1e-6)) unit[d] = spread * 1e-6;
		if (spread > 0.0 && spread / unit[d] > side) side = spread / unit[d];
	}
	ord->bits = PK_FLAT;
	if (!(side > 0.0)) return;
	// The places take `ib` low bits, the code the rest: `bits` per axis.
	int ib = 32 - __builtin_clz(m - 1u), bits = (64 - ib) / DIM;
	if (bits > (DIM == 2 ? 32 : 21)) bits = DIM == 2 ? 32 : 21;
	double cells = ldexp(1.0, bits), scale[DIM], top = cells - 1.0;
	for (int d = 0; d < DIM; ++d) scale[d] = unit[d] > 0.0 ? cells / side / unit[d] : 0.0;
	uint64_t *key = b->scratch;
	for (uint32_t i = 0; i < m; ++i) {
		uint64_t code = 0;
		for (int d = 0; d < DIM; ++d) {
			double q = (pk_centre2(&b->boxes[lo + i], d) - cmin[d]) * scale[d];
			code |= morton_spread((uint64_t)(q < top ? q : top), DIM) << d;
		}
		key[lo + i] = code << ib | i;
	}
	pk_msd(key + lo, m, 64);
	pk_place(b, lo, m, key + lo, ib);
	ord->bits = ib;
}

/// The ends of the 2^halvings runs items [lo, hi) cut in halves make, some
/// empty when the run is short, into cut[1 + *nc ...].
static void pk_pile_cut(uint32_t lo, uint32_t hi, int halvings, uint32_t *cut, int *nc)
{
	if (halvings == 0) {
		cut[++*nc] = hi;
		return;
	}
	uint32_t mid = lo + (hi - lo) / 2;
	pk_pile_cut(lo, mid, halvings - 1, cut, nc);
	pk_pile_cut(mid, hi, halvings - 1, cut, nc);
}

/// Boxes sampled from a part of a pile to see whether its order suits it.
#define PK_SKEW_SAMPLES 16
/// A part's order is made again when, against the order it stands in, the
/// ratio of its boxes' mean extents on two axes is off by this much or more.
#define PK_SKEW 4.0

/// Whether part [lo, hi) of a pile has boxes shaped unlike the ones its order
/// `ord` was made for: the ratio of their mean extents on some two axes
/// (PK_SKEW_SAMPLES of them, evenly spaced) is PK_SKEW times the order's. The
/// order's cube was drawn in units of its boxes' mean extents; where those
/// mix families long on different axes (a pinwheel's four arms), a part cut
/// from one family is long on one axis only, and the mixed units weigh the
/// noise of its centres along that axis as if it were structure: below the
/// level where its thin axis' cells are as small as that noise, every other
/// cut parts boxes that overlap whole, and each query meets about the square
/// root of such a part's boxes (2D pinwheel, 100k: a ray tested 193 boxes and
/// lanes, 10 nearest 342, against 41 and 71 on the uniform scene).
static bool pk_pile_skewed(const pk_build *b, uint32_t lo, uint32_t hi, const pk_order *ord)
{
	uint32_t m = hi - lo, s = m < PK_SKEW_SAMPLES ? m : PK_SKEW_SAMPLES;
	double ext[DIM] = {0};
	for (uint32_t j = 0; j < s; ++j) {
		const box_t *x = &b->boxes[lo + (uint32_t)((uint64_t)m * j / s)];
		for (int d = 0; d < DIM; ++d) ext[d] += (double)x->max[d] - x->min[d];
	}
	// ext[a] / ord->ext[a] >= PK_SKEW ext[c] / ord->ext[c], multiplied out:
	// an axis flat in the whole order is flat in the part and counts nowhere.
	for (int a = 0; a < DIM; ++a)
		for (int c = 0; c < DIM; ++c)
			if (c != a && ext[a] * ord->ext[c] >= PK_SKEW * ext[c] * ord->ext[a] && ext[a] * ord->ext[c] > 0.0)
				return true;
	return false;
}

/// The subtree of pile [lo, hi), standing as *in says: a leaf up to a
/// bucket, else a node with no items of its own and two to NCHILD children.
/// A part is put in an order of its own when it stands in none yet, when
/// its items all share one code (the quantum was too coarse), or when its
/// boxes are shaped unlike those its order was made for (pk_pile_skewed);
/// the cuts are by count whatever the order, so the shape does not change.
static box_t pk_pile(pk_build *b, uint32_t lo, uint32_t hi, const pk_order *in, pk_lane_out *ln)
{
	if (hi - lo <= (uint32_t)b->bucket) return pk_leaf(b, lo, hi, true, ln);
	pk_order ord = *in;
	// The shape is checked only above the last level of leaves, where most
	// pile nodes are: a part tangled there costs at most its NCHILD leaves.
	if (pk_blocks(b) && ord.bits != PK_FLAT &&
	    (ord.bits == PK_RAW || (b->scratch[lo] ^ b->scratch[hi - 1]) >> ord.bits == 0 ||
	     (hi - lo > (uint32_t)(NCHILD * b->bucket) && pk_pile_skewed(b, lo, hi, &ord))))
		pk_pile_order(b, lo, hi, &ord);
	uint32_t cut[NCHILD + 1];
	int nc = 0;
	cut[0] = lo;
	pk_pile_cut(lo, hi, DIM, cut, &nc);
	assert(nc == NCHILD);
	uint32_t child = pk_new_block(b);
	if (pk_blocks(b)) pk_block_clear(&b->blocks[child]);
	box_t bounds = pk_empty_box();
	int slot = 0;
	for (int c = 0; c < NCHILD; ++c) {
		if (cut[c + 1] == cut[c]) continue;
		pk_lane_out cl;
		box_t cb = pk_pile(b, cut[c], cut[c + 1], &ord, &cl);
		if (pk_blocks(b)) pk_lane_put(&b->blocks[child], slot, &cb, &cl);
		++slot;
		pk_grow(&bounds, &cb);
	}
	assert(slot >= 2);
	if (pk_blocks(b)) b->blocks[child].kids = (uint16_t)slot;
	*ln = (pk_lane_out){lo, 0, child, true};
	return bounds;
}

static int pk_kids(pk_build *b, uint32_t bi, int slot, const uint32_t *cut, int level, uint32_t code, box_t *bounds);

/// The subtree of items [lo, hi), which all lie in cell `code` of `level` and
/// are no shallower than it: its bounds (when building) and, in *ln, what its
/// parent's lane holds. Its children get the next free block.
static box_t pk_node(pk_build *b, uint32_t lo, uint32_t hi, int level, uint32_t code, pk_lane_out *ln)
{
	if (b->mode && hi - lo <= b->job_items) return pk_job_edge(b, lo, hi, level, code, ln);
	box_t bounds = pk_empty_box();
	uint32_t own = 0, cut[NCHILD + 1];
	int kids;
	for (;;) {
		if (hi - lo <= (uint32_t)b->bucket) {
			// A leaf, which owns every item of its range.
			return pk_leaf(b, lo, hi, false, ln);
		}
		if (level >= b->depth) return pk_pile(b, lo, hi, &pk_unordered, ln); // past the depth limit
		while (lo + own < hi && (pk_sorted_key(b, lo + own) & PK_LEVEL_MASK) == (uint32_t)level) ++own;
		int shift = DIM * (b->depth - level - 1) + PK_LEVEL_BITS, last = 0;
		kids = 0;
		cut[0] = lo + own;
		for (int c = 0; c < NCHILD; ++c) {
			uint64_t bound = ((uint64_t)((code << DIM) | (uint32_t)c) + 1u) << shift;
			cut[c + 1] = c == NCHILD - 1 ? hi : pk_lower(b, cut[c], hi, bound);
			if (cut[c + 1] > cut[c]) {
				++kids;
				last = c;
			}
		}
		if (kids == 0) {
			// Every item is the node's own (they share this level and cell):
			// a leaf, or a pile when more than a bucket.
			return pk_pile(b, lo, hi, &pk_unordered, ln);
		}
		if (own != 0 || kids != 1) break;
		// No items of its own and one child: the child takes this lane.
		code = (code << DIM) | (uint32_t)last;
		++level;
	}
	uint32_t child = pk_new_block(b);
	if (pk_blocks(b)) pk_block_clear(&b->blocks[child]);
	int slot = 0;
	if (own > (uint32_t)PK_OWN_MAX(b->bucket)) {
		// Too many own items (strips, straddlers: all as large as the cell):
		// they become a pile in the first lane, the children follow — in
		// this block when there is room, else under a node of no items.
		pk_lane_out pl;
		box_t pb = pk_pile(b, lo, lo + own, &pk_unordered, &pl);
		if (pk_blocks(b)) pk_lane_put(&b->blocks[child], slot, &pb, &pl);
		++slot;
		pk_grow(&bounds, &pb);
		if (kids == NCHILD) {
			uint32_t inner = pk_new_block(b);
			if (pk_blocks(b)) pk_block_clear(&b->blocks[inner]);
			box_t cb = pk_empty_box();
			int inner_kids = pk_kids(b, inner, 0, cut, level, code, &cb);
			if (pk_blocks(b)) b->blocks[inner].kids = (uint16_t)inner_kids;
			if (pk_blocks(b)) pk_lane_put(&b->blocks[child], slot, &cb, &(pk_lane_out){lo + own, 0, inner, true});
			++slot;
			pk_grow(&bounds, &cb);
		} else {
			slot = pk_kids(b, child, slot, cut, level, code, &bounds);
		}
		own = 0;
	} else {
		// The own items share one key: sorted by key, then id, they ascend.
		if (pk_blocks(b))
			for (uint32_t k = lo; k < lo + own; ++k) pk_grow(&bounds, &b->boxes[k]);
		slot = pk_kids(b, child, slot, cut, level, code, &bounds);
	}
	if (pk_blocks(b)) b->blocks[child].kids = (uint16_t)slot;
	*ln = (pk_lane_out){lo, own, child, true};
	return bounds;
}

/// The children of cell `code` at `level`, items [cut[c], cut[c + 1]) each,
/// into the lanes of block bi from `slot` on, their bounds grown into
/// *bounds; returns the next free lane.
static int pk_kids(pk_build *b, uint32_t bi, int slot, const uint32_t *cut, int level, uint32_t code, box_t *bounds)
{
	int kids = 0;
	for (int c = 0; c < NCHILD; ++c) {
		if (cut[c + 1] == cut[c]) continue;
		pk_lane_out cl;
		box_t cb = pk_node(b, cut[c], cut[c + 1], level + 1, (code << DIM) | (uint32_t)c, &cl);
		if (pk_blocks(b)) pk_lane_put(&b->blocks[bi], slot, &cb, &cl);
		++slot;
		++kids;
		pk_grow(bounds, &cb);
	}
	assert(kids >= 1 && slot <= NCHILD);
	return slot;
}

/// The whole tree of items [0, n): block 0 holds the root alone.
static void pk_root(pk_build *b, uint32_t n)
{
	if (pk_blocks(b)) {
		pk_block_clear(&b->blocks[0]);
		b->blocks[0].kids = 1;
	}
	pk_lane_out ln;
	box_t rb = pk_node(b, 0, n, 0, 0, &ln);
	if (pk_blocks(b)) pk_lane_put(&b->blocks[0], 0, &rb, &ln);
}

// ---- build ----------------------------------------------------------------------

/// Boxes and ids in tree order, from the sorted (key, id) pairs.
static void pk_gather(box_t *boxes, uint32_t *ids, const uint64_t *sorted, const char *base, size_t stride,
                      uint32_t n)
{
	// A gather in random order: fetching a few dozen boxes ahead keeps many
	// cache misses in flight instead of waiting for each in turn.
	enum { AHEAD = 32 };
	for (uint32_t k = 0; k < n; ++k) {
		if (k + AHEAD < n) __builtin_prefetch(base + (size_t)(uint32_t)sorted[k + AHEAD] * stride);
		uint32_t id = (uint32_t)sorted[k];
		ids[k] = id;
		memcpy(&boxes[k], base + (size_t)id * stride, sizeof(box_t));
	}
}

/// Box i of the caller's array.
static inline box_t pk_load(const char *base, size_t stride, uint32_t i)
{
	box_t b;
	memcpy(&b, base + (size_t)i * stride, sizeof b);
	return b;
}

/// ORT_OK for a box build stores, else box_check's reason.
static inline ort_result pk_box_ok(const box_t *b) { return box_check(b); }

/// Build step 1, without a region: check every box and bound them all (the
/// keys quantise in those bounds). Nothing is changed yet.
static ort_result pk_bound_all(const char *base, size_t stride, uint32_t n, box_t *all)
{
	for (uint32_t i = 0; i < n; ++i) {
		box_t b = pk_load(base, stride, i);
		ort_result r = pk_box_ok(&b);
		if (r != ORT_OK) return r;
		pk_grow(all, &b);
	}
	return ORT_OK;
}

static void pk_arrays_free(packed_t *p, const pk_arrays *a)
{
	pk_free_items(p, a->boxes, a->ids, a->sort_a, a->sort_b, a->cap);
}

/// Build step 2: room for n items — the tree's arrays, or (a first or larger
/// build) new ones.
static ort_result pk_arrays_for(packed_t *p, uint32_t n, pk_arrays *a)
{
	*a = (pk_arrays){p->boxes, p->ids, p->sort_a, p->sort_b, p->cap};
	if (n <= p->cap) return ORT_OK;
	a->cap = n;
	a->boxes = pk_alloc(p, (size_t)n * sizeof *a->boxes);
	a->ids = pk_alloc(p, (size_t)n * sizeof *a->ids);
	a->sort_a = pk_alloc(p, (size_t)n * sizeof *a->sort_a);
	a->sort_b = pk_alloc(p, (size_t)n * sizeof *a->sort_b);
	if (a->boxes && a->ids && a->sort_a && a->sort_b) return ORT_OK;
	pk_arrays_free(p, a);
	return ORT_ERROR_OUT_OF_MEMORY;
}

/// The grid the keys quantise in: grid_box, 2^depth cells a side.
static pk_grid pk_grid_make(const box_t *grid_box, int depth, uint32_t n)
{
	pk_grid g;
	g.depth = depth;
	g.cells = 1u << g.depth;
	for (int d = 0; d < DIM; ++d) {
		g.lo[d] = grid_box->min[d];
		g.extent[d] = n ? (double)grid_box->max[d] - grid_box->min[d] : 0.0;
		g.scale[d] = g.extent[d] > 0.0 ? (double)g.cells / g.extent[d] : 0.0;
	}
	return g;
}

/// The sort's two buffers. Into new arrays, the new boxes array (twice the
/// size needed) serves as the sort's other buffer, so sort_b is not touched
/// until a rebuild: a first build of a million boxes faults in 8 MB fewer
/// fresh pages.
static void pk_sort_buffers(bool growing, pk_arrays *a, uint64_t **keys, uint64_t **other)
{
	*keys = growing ? (uint64_t *)(void *)a->boxes : a->sort_a;
	*other = growing ? a->sort_a : a->sort_b;
}

/// The sort ended in keys (n of them): they must end in a->sort_a.
static void pk_sort_end(bool growing, pk_arrays *a, uint64_t *keys, uint64_t *other, uint32_t n)
{
	if (growing) {
		// The gather is about to fill boxes.
		if (keys != a->sort_a) memcpy(a->sort_a, keys, (size_t)n * sizeof *keys);
	} else {
		a->sort_a = keys;
		a->sort_b = other;
	}
}

/// Build step 3: the items' (key, id) pairs, sorted, into a->sort_a. Only
/// scratch is written. With check (a region: step 1 was skipped) the boxes
/// are checked and bounded into *all here, in the same pass.
static ort_result pk_sort_keys(const pk_grid *g, const char *base, size_t stride, uint32_t n, bool check,
                               bool growing, pk_arrays *a, box_t *all)
{
	static const uint32_t zero_hist[3][2048];
	uint32_t hist[3][2048];
	memcpy(hist, zero_hist, sizeof hist);
	uint64_t *keys, *other;
	pk_sort_buffers(growing, a, &keys, &other);
	for (uint32_t i = 0; i < n; ++i) {
		box_t b = pk_load(base, stride, i);
		if (check) {
			ort_result r = pk_box_ok(&b);
			if (r != ORT_OK) return r;
			pk_grow(all, &b);
		}
		uint32_t key = pk_key(g, &b);
		keys[i] = (uint64_t)key << 32 | i;
		morton_hist_add(hist, key);
	}
	morton_sort_counted(&keys, &other, n, hist);
	pk_sort_end(growing, a, keys, other, n);
	return ORT_OK;
}

/// Build step 4, into new arrays (the old ones stay whole until the end):
/// gather, then make the blocks, growing their array as needed — no counting
/// pass. A uniform scene with bucket 16 needs about n / 19 blocks in 2D and
/// n / 22 in 3D, so n / 16 rarely grows; what grows keeps at most half to
/// spare. On success the tree owns a's arrays and *used blocks.
static ort_result pk_fill_new(packed_t *p, const pk_arrays *a, const char *base, size_t stride, uint32_t n,
                              int depth, uint32_t *used)
{
	pk_gather(a->boxes, a->ids, a->sort_a, base, stride, n);
	uint32_t est = n / 16 + 16;
	if (est < p->block_cap) est = p->block_cap; // keep the room earlier builds made
	pk_build bd = {a->sort_a, a->boxes, pk_alloc(p, (size_t)est * sizeof(pblock)), 1, depth, p->def.bucket_size,
	               p, est, false, NULL, 0, 0, 0, a->ids, a->sort_b};
	bd.failed = !bd.blocks;
	if (n) pk_root(&bd, n);
	if (bd.failed) {
		pk_free(p, bd.blocks, (size_t)bd.cap * sizeof(pblock));
		return ORT_ERROR_OUT_OF_MEMORY;
	}
	*used = n ? bd.made : 0;
	pk_free_items(p, p->boxes, p->ids, p->sort_a, p->sort_b, p->cap);
	pk_free(p, p->blocks, (size_t)p->block_cap * sizeof *p->blocks);
	p->boxes = a->boxes;
	p->ids = a->ids;
	p->cap = a->cap;
	p->sort_a = a->sort_a;
	p->sort_b = a->sort_b;
	p->blocks = bd.blocks;
	p->block_cap = bd.cap;
	return ORT_OK;
}

/// Build step 4, into the arrays in use: count the blocks, make room (the
/// only step that can fail), then overwrite.
static ort_result pk_fill_in_place(packed_t *p, const pk_arrays *a, const char *base, size_t stride, uint32_t n,
                                   int depth, uint32_t *used)
{
	pk_build bd = {a->sort_a, NULL, NULL, 1, depth, p->def.bucket_size, NULL, 0, false, NULL, 0, 0, 0, NULL, NULL};
	if (n) pk_root(&bd, n);
	uint32_t need = n ? bd.made : 0;
	if (need > p->block_cap) {
		uint32_t cap = need + need / 4 + 16; // room to spare: shapes vary from frame to frame
		pblock *nb = pk_alloc(p, (size_t)cap * sizeof *nb);
		if (!nb) return ORT_ERROR_OUT_OF_MEMORY;
		pk_free(p, p->blocks, (size_t)p->block_cap * sizeof *p->blocks);
		p->blocks = nb;
		p->block_cap = cap;
	}
	p->sort_a = a->sort_a;
	p->sort_b = a->sort_b;
	pk_gather(p->boxes, p->ids, a->sort_a, base, stride, n);
	bd = (pk_build){a->sort_a, p->boxes, p->blocks, 1, depth, p->def.bucket_size, NULL, 0, false, NULL, 0, 0, 0, p->ids,
	                p->sort_b};
	if (n) pk_root(&bd, n);
	assert(!n || bd.made == need);
	*used = need;
	return ORT_OK;
}

/// A build: check and bound, find room, sort the keys, then lay out the tree.
/// Every step before the last writes only scratch or new memory, so a
/// failure leaves the previous contents whole.
static ort_result pk_build_from(packed_t *p, const char *base, size_t stride, int count)
{
	if (!p || count < 0 || (count > 0 && !base) || stride < sizeof(box_t)) return ORT_ERROR_INVALID_ARGUMENT;
	if (count > PK_MAX_ITEMS) return ORT_ERROR_CAPACITY;
	uint32_t n = (uint32_t)count;
	ort_tasks *tasks = p->def.tasks;
	if (n > 0 && ort_tk_acquire(tasks)) {
		ort_result r = pk_build_in_jobs(p, tasks, base, stride, n);
		ort_tk_release(tasks);
		return r;
	}
	bool in_region = p->def.use_region;
	box_t all = pk_empty_box();
	ort_result r = in_region ? ORT_OK : pk_bound_all(base, stride, n, &all);
	if (r != ORT_OK) return r;
	pk_arrays a;
	if ((r = pk_arrays_for(p, n, &a)) != ORT_OK) return r;
	bool growing = a.boxes != p->boxes;
	pk_grid g = pk_grid_make(in_region ? &p->def.region : &all, p->def.max_depth, n);
	uint32_t used = 0;
	r = pk_sort_keys(&g, base, stride, n, in_region, growing, &a, &all);
	if (r == ORT_OK)
		r = growing ? pk_fill_new(p, &a, base, stride, n, g.depth, &used)
		            : pk_fill_in_place(p, &a, base, stride, n, g.depth, &used);
	if (r != ORT_OK) {
		if (growing) pk_arrays_free(p, &a);
		return r;
	}
	p->block_count = used;
	p->count = n;
	p->bounds = all;
	pk_least_fill(p);
	return ORT_OK;
}

/// Build refuses while a query or pair search runs (from its callback, or
/// another thread): it would move the arrays that walk reads.
static bool pk_busy(const packed_t *p)
{
	return p && atomic_load_explicit(&((packed_t *)p)->readers, memory_order_acquire) > 0;
}

ort_result ORTHANT_NAME(packed_build)(packed_t *p, const box_t *boxes, int count)
{
	if (pk_busy(p)) return ORT_ERROR_BUSY;
	return pk_build_from(p, (const char *)boxes, sizeof *boxes, count);
}

ort_result ORTHANT_NAME(packed_build_strided)(packed_t *p, const void *first, size_t stride, int count)
{
	if (pk_busy(p)) return ORT_ERROR_BUSY;
	return pk_build_from(p, first, stride, count);
}

// packed.c: the packed tree — a loose quadtree/octree built whole from an array
// of boxes and kept in flat arrays (include/orthant/packed_dim.h).
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
//
// Nodes live in blocks, as in a wide bounding-volume tree (Jolt's 4-wide
// nodes, Boost's and flatbush's packed nodes): a block holds the children of
// one node, lane by lane — their bounds axis by axis, so one query box is
// tested against all of them at once, then where each child's items start,
// how many it owns and the block of its own children (NIL for a leaf). Block
// 0 holds the root alone. A node's items start at `first`: its own, then each
// child's subtree in turn. A leaf owns all its items, at least one. A node
// with no items of its own and one child is never made: the child takes its
// place. Bounds are the union of every box in the subtree, so answers depend
// on the boxes alone: the keys decide the shape, never a result. Unused lanes
// hold inverted bounds, which meet nothing.
//
// Traversals use fixed stacks: levels strictly deepen along a path, so a path
// has at most depth + 1 nodes and a stack at most (depth + 1) * NCHILD entries.
#include <assert.h>
#include <float.h>
#include <stdio.h>
#include <string.h>

#include "dim.h"
#include "geom.h"
#include "knn_heap.h"
#include "mem.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

typedef ORTHANT_NAME(packed) packed_t;
typedef ORTHANT_NAME(packed_def) pdef_t;

#define PK_MAX_DEPTH (DIM == 2 ? 13 : 9)
#define PK_LEVEL_BITS 4
#define PK_LEVEL_MASK ((1u << PK_LEVEL_BITS) - 1u)
#define PK_STACK ((PK_MAX_DEPTH + 2) * NCHILD)
/// Most items: ids are 32-bit and node counts reach 2 * count + 1.
#define PK_MAX_ITEMS (INT32_MAX / 2 - 2)

typedef struct pblock {
	float lo[DIM][NCHILD], hi[DIM][NCHILD]; ///< each child's bounds
	uint32_t first[NCHILD]; ///< the child's first item; its own items come first
	uint32_t own[NCHILD];   ///< items of the child itself
	uint32_t child[NCHILD]; ///< the block of the child's children, NIL for a leaf
	uint32_t kids;          ///< lanes in use, from 0
} pblock;

struct ORTHANT_NAME(packed) {
	pdef_t def;
	uint32_t count;      ///< items
	uint32_t block_count; ///< blocks in use
	box_t bounds;        ///< union of every box
	box_t *boxes;        ///< [cap], tree order
	uint32_t *ids;       ///< [cap], the id of each box
	pblock *blocks;      ///< [block_cap]
	uint64_t *sort_a, *sort_b; ///< [cap] build scratch: key << 32 | id
	uint32_t cap, block_cap;
	size_t bytes, bytes_peak;
};

// ---- memory -----------------------------------------------------------------

static void *pk_alloc(packed_t *p, size_t size)
{
	void *m = allocator_alloc(&p->def.allocator, size);
	if (m) {
		p->bytes += size;
		if (p->bytes > p->bytes_peak) p->bytes_peak = p->bytes;
	}
	return m;
}

static void pk_free(packed_t *p, void *m, size_t size)
{
	if (!m) return;
	p->bytes -= size;
	allocator_free(&p->def.allocator, m, size);
}

static void pk_free_items(packed_t *p, box_t *boxes, uint32_t *ids, uint64_t *sa, uint64_t *sb, uint32_t cap)
{
	pk_free(p, boxes, (size_t)cap * sizeof *boxes);
	pk_free(p, ids, (size_t)cap * sizeof *ids);
	pk_free(p, sa, (size_t)cap * sizeof *sa);
	pk_free(p, sb, (size_t)cap * sizeof *sb);
}

/// box_overlap without branches: the comparisons of one test are rarely
/// predictable, and a mispredicted branch costs more than the other axes.
static inline bool pk_overlap(const box_t *a, const box_t *b)
{
	int ok = 1;
	for (int d = 0; d < DIM; ++d) ok &= (a->min[d] <= b->max[d]) & (b->min[d] <= a->max[d]);
	return ok;
}

static box_t pk_empty_box(void)
{
	box_t b;
	for (int d = 0; d < DIM; ++d) {
		b.min[d] = INFINITY;
		b.max[d] = -INFINITY;
	}
	return b;
}

static inline void pk_grow(box_t *into, const box_t *b)
{
	for (int d = 0; d < DIM; ++d) {
		if (b->min[d] < into->min[d]) into->min[d] = b->min[d];
		if (b->max[d] > into->max[d]) into->max[d] = b->max[d];
	}
}

// ---- lanes ------------------------------------------------------------------

static inline box_t pk_lane_box(const pblock *b, int k)
{
	box_t r;
	for (int d = 0; d < DIM; ++d) {
		r.min[d] = b->lo[d][k];
		r.max[d] = b->hi[d][k];
	}
	return r;
}

static inline void pk_lane_set(pblock *b, int k, const box_t *box, uint32_t first, uint32_t own, uint32_t child)
{
	for (int d = 0; d < DIM; ++d) {
		b->lo[d][k] = box->min[d];
		b->hi[d][k] = box->max[d];
	}
	b->first[k] = first;
	b->own[k] = own;
	b->child[k] = child;
}

static void pk_block_clear(pblock *b)
{
	box_t empty = pk_empty_box();
	for (int k = 0; k < NCHILD; ++k) pk_lane_set(b, k, &empty, 0, 0, NIL);
	b->kids = 0;
}

/// The lanes of b whose bounds meet box q (closed), one bit each. The tests
/// of all lanes are made without a branch: which children meet a query is
/// rarely predictable.
static inline unsigned pk_lanes_meeting(const pblock *b, const box_t *q)
{
#if defined(__SSE2__)
	unsigned m = 0;
	for (int h = 0; h < NCHILD; h += 4) {
		__m128 ok = _mm_castsi128_ps(_mm_set1_epi32(-1));
		for (int d = 0; d < DIM; ++d) {
			ok = _mm_and_ps(ok, _mm_cmple_ps(_mm_set1_ps(q->min[d]), _mm_loadu_ps(&b->hi[d][h])));
			ok = _mm_and_ps(ok, _mm_cmple_ps(_mm_loadu_ps(&b->lo[d][h]), _mm_set1_ps(q->max[d])));
		}
		m |= (unsigned)_mm_movemask_ps(ok) << h;
	}
	return m;
#else
	unsigned m = 0;
	for (int k = 0; k < NCHILD; ++k) {
		int ok = 1;
		for (int d = 0; d < DIM; ++d) ok &= (q->min[d] <= b->hi[d][k]) & (b->lo[d][k] <= q->max[d]);
		m |= (unsigned)ok << k;
	}
	return m;
#endif
}

static inline int pk_next_lane(unsigned *m)
{
	int k = __builtin_ctz(*m);
	*m &= *m - 1;
	return k;
}

// ---- create / destroy ----------------------------------------------------------

pdef_t ORTHANT_NAME(packed_default_def)(void)
{
	pdef_t d;
	memset(&d, 0, sizeof d);
	d.bucket_size = 16;
	d.max_depth = PK_MAX_DEPTH;
	return d;
}

ort_result ORTHANT_NAME(packed_create)(const pdef_t *def, packed_t **out)
{
	if (out) *out = NULL;
	if (!def || !out) return ORT_ERROR_INVALID_ARGUMENT;
	if (def->bucket_size < 1 || def->bucket_size > 64 || def->max_depth < 1 || def->max_depth > PK_MAX_DEPTH)
		return ORT_ERROR_INVALID_ARGUMENT;
	if (!def->allocator.alloc != !def->allocator.free) return ORT_ERROR_INVALID_ARGUMENT;
	if (def->use_region && box_check(&def->region) != ORT_OK) return ORT_ERROR_INVALID_ARGUMENT;
	packed_t *p = allocator_alloc(&def->allocator, sizeof *p);
	if (!p) return ORT_ERROR_OUT_OF_MEMORY;
	memset(p, 0, sizeof *p);
	p->def = *def;
	p->bounds = pk_empty_box();
	p->bytes = p->bytes_peak = sizeof *p;
	*out = p;
	return ORT_OK;
}

void ORTHANT_NAME(packed_destroy)(packed_t *p)
{
	if (!p) return;
	pk_free_items(p, p->boxes, p->ids, p->sort_a, p->sort_b, p->cap);
	pk_free(p, p->blocks, (size_t)p->block_cap * sizeof *p->blocks);
	ort_allocator a = p->def.allocator;
	allocator_free(&a, p, sizeof *p);
}

int ORTHANT_NAME(packed_count)(const packed_t *p) { return p ? (int)p->count : 0; }

box_t ORTHANT_NAME(packed_bounds)(const packed_t *p) { return p ? p->bounds : pk_empty_box(); }

// ---- keys ---------------------------------------------------------------------

/// Spread the low bits of x so that DIM - 1 zero bits separate them.
static inline uint32_t pk_spread(uint32_t x)
{
#if ORTHANT_DIM == 2
	x &= 0xffffu;
	x = (x | (x << 8)) & 0x00ff00ffu;
	x = (x | (x << 4)) & 0x0f0f0f0fu;
	x = (x | (x << 2)) & 0x33333333u;
	x = (x | (x << 1)) & 0x55555555u;
#else
	x &= 0x3ffu;
	x = (x | (x << 16)) & 0x030000ffu;
	x = (x | (x << 8)) & 0x0300f00fu;
	x = (x | (x << 4)) & 0x030c30c3u;
	x = (x | (x << 2)) & 0x09249249u;
#endif
	return x;
}

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

/// How build quantises: per axis, the origin, cells per unit and the extent.
typedef struct pk_grid {
	double lo[DIM], scale[DIM], extent[DIM];
	int depth;
	uint32_t cells; ///< 2^depth cells per axis
} pk_grid;

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
		code |= pk_spread(qi) << d;
	}
	int pad = DIM * (g->depth - level);
	code &= ~((1u << pad) - 1u);
	return code << PK_LEVEL_BITS | (uint32_t)level;
}

/// Sort a[0..n) by the high 32 bits, stably; the result ends in *a (the two
/// buffers may swap). hist holds three 11-bit digit histograms.
static void pk_radix(uint64_t **a, uint64_t **b, uint32_t n, uint32_t hist[3][2048])
{
	for (int pass = 0; pass < 3; ++pass) {
		uint32_t *h = hist[pass];
		int shift = 32 + 11 * pass;
		uint32_t digit0 = (uint32_t)((*a)[0] >> shift) & 2047u;
		if (h[digit0] == n) continue; // one bucket: the pass would not move anything
		uint32_t sum = 0;
		for (int k = 0; k < 2048; ++k) {
			uint32_t c = h[k];
			h[k] = sum;
			sum += c;
		}
		const uint64_t *src = *a;
		uint64_t *dst = *b;
		for (uint32_t i = 0; i < n; ++i) {
			uint64_t v = src[i];
			dst[h[(uint32_t)(v >> shift) & 2047u]++] = v;
		}
		uint64_t *t = *a;
		*a = *b;
		*b = t;
	}
}

// ---- node building -----------------------------------------------------------

typedef struct pk_build {
	const uint64_t *sorted;
	const box_t *boxes; ///< tree order; NULL when only counting
	pblock *blocks;     ///< NULL when only counting
	uint32_t made;      ///< blocks handed out
	int depth, bucket;
	/// When growable (a build into new arrays, the old ones still whole), the
	/// blocks array grows as needed instead of being counted first.
	packed_t *grow;
	uint32_t cap;
	bool failed; ///< growing it failed: the build is abandoned
} pk_build;

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

/// Fill lane `lane` of block `blk` with a leaf owning items [lo, hi).
static box_t pk_leaf(pk_build *b, uint32_t blk, int lane, uint32_t lo, uint32_t hi)
{
	box_t bounds = pk_empty_box();
	if (pk_blocks(b)) {
		for (uint32_t k = lo; k < hi; ++k) pk_grow(&bounds, &b->boxes[k]);
		pk_lane_set(&b->blocks[blk], lane, &bounds, lo, hi - lo, NIL);
	}
	return bounds;
}

/// Fill lane `lane` of block `blk` with the subtree of items [lo, hi), which
/// all lie in cell `code` of `level` and are no shallower than it; returns its
/// bounds (when building). Its children get the next free block.
static box_t pk_node(pk_build *b, uint32_t blk, int lane, uint32_t lo, uint32_t hi, int level, uint32_t code)
{
	box_t bounds = pk_empty_box();
	uint32_t own = 0, cut[NCHILD + 1];
	for (;;) {
		if (hi - lo <= (uint32_t)b->bucket || level >= b->depth) {
			// A leaf, which owns every item of its range.
			return pk_leaf(b, blk, lane, lo, hi);
		}
		while (lo + own < hi && (pk_sorted_key(b, lo + own) & PK_LEVEL_MASK) == (uint32_t)level) ++own;
		int shift = DIM * (b->depth - level - 1) + PK_LEVEL_BITS, last = 0, kids = 0;
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
			// a leaf, however many.
			return pk_leaf(b, blk, lane, lo, hi);
		}
		if (own != 0 || kids != 1) break;
		// No items of its own and one child: the child takes this lane.
		code = (code << DIM) | (uint32_t)last;
		++level;
	}
	uint32_t child = pk_new_block(b);
	if (pk_blocks(b)) {
		pk_block_clear(&b->blocks[child]);
		for (uint32_t k = lo; k < lo + own; ++k) pk_grow(&bounds, &b->boxes[k]);
	}
	int slot = 0;
	for (int c = 0; c < NCHILD; ++c) {
		if (cut[c + 1] == cut[c]) continue;
		box_t cb = pk_node(b, child, slot++, cut[c], cut[c + 1], level + 1, (code << DIM) | (uint32_t)c);
		pk_grow(&bounds, &cb);
	}
	if (pk_blocks(b)) {
		b->blocks[child].kids = (uint32_t)slot;
		pk_lane_set(&b->blocks[blk], lane, &bounds, lo, own, child);
	}
	return bounds;
}

// ---- build ----------------------------------------------------------------------

/// A box box_check accepts, tested without branches; box_check says why not.
static inline bool pk_box_plain(const box_t *b)
{
	int ok = 1;
	for (int d = 0; d < DIM; ++d)
		ok &= (fabsf(b->min[d]) <= ORTHANT_COORD_LIMIT) & (fabsf(b->max[d]) <= ORTHANT_COORD_LIMIT) &
		      (b->min[d] <= b->max[d]);
	return ok;
}

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

static ort_result pk_build_from(packed_t *p, const char *base, size_t stride, int count)
{
	if (!p || count < 0 || (count > 0 && !base) || stride < sizeof(box_t)) return ORT_ERROR_INVALID_ARGUMENT;
	if (count > PK_MAX_ITEMS) return ORT_ERROR_CAPACITY;
	uint32_t n = (uint32_t)count;
	// 1. Without a region, check every box and bound them first: the keys
	// quantise in those bounds. Nothing is changed yet.
	bool in_region = p->def.use_region;
	box_t all = pk_empty_box();
	for (uint32_t i = 0; i < n && !in_region; ++i) {
		box_t b;
		memcpy(&b, base + (size_t)i * stride, sizeof b);
		ort_result r = pk_box_plain(&b) ? ORT_OK : box_check(&b);
		if (r != ORT_OK) return r;
		pk_grow(&all, &b);
	}
	// 2. Room for the items: new arrays beside the old until the end.
	box_t *nboxes = p->boxes;
	uint32_t *nids = p->ids;
	uint64_t *sa = p->sort_a, *sb = p->sort_b;
	uint32_t ncap = p->cap;
	if (n > p->cap) {
		ncap = n;
		nboxes = pk_alloc(p, (size_t)ncap * sizeof *nboxes);
		nids = pk_alloc(p, (size_t)ncap * sizeof *nids);
		sa = pk_alloc(p, (size_t)ncap * sizeof *sa);
		sb = pk_alloc(p, (size_t)ncap * sizeof *sb);
		if (!nboxes || !nids || !sa || !sb) {
			pk_free_items(p, nboxes, nids, sa, sb, ncap);
			return ORT_ERROR_OUT_OF_MEMORY;
		}
	}
	// 3. Keys, sorted. Only scratch is written. With a region, the boxes are
	// checked and bounded here, in the same pass.
	pk_grid g;
	g.depth = p->def.max_depth;
	g.cells = 1u << g.depth;
	const box_t *grid_box = in_region ? &p->def.region : &all;
	for (int d = 0; d < DIM; ++d) {
		g.lo[d] = grid_box->min[d];
		g.extent[d] = n ? (double)grid_box->max[d] - grid_box->min[d] : 0.0;
		g.scale[d] = g.extent[d] > 0.0 ? (double)g.cells / g.extent[d] : 0.0;
	}
	static const uint32_t zero_hist[3][2048];
	uint32_t hist[3][2048];
	memcpy(hist, zero_hist, sizeof hist);
	// Into new arrays, the new boxes array (twice the size needed) serves as
	// the sort's other buffer, so sort_b is not touched until a rebuild: a
	// first build of a million boxes faults in 8 MB fewer fresh pages.
	bool growing = nboxes != p->boxes;
	uint64_t *keys = growing ? (uint64_t *)(void *)nboxes : sa, *other = growing ? sa : sb;
	for (uint32_t i = 0; i < n; ++i) {
		box_t b;
		memcpy(&b, base + (size_t)i * stride, sizeof b);
		if (in_region) {
			ort_result r = pk_box_plain(&b) ? ORT_OK : box_check(&b);
			if (r != ORT_OK) {
				if (nboxes != p->boxes) pk_free_items(p, nboxes, nids, sa, sb, ncap);
				return r;
			}
			pk_grow(&all, &b);
		}
		uint32_t key = pk_key(&g, &b);
		keys[i] = (uint64_t)key << 32 | i;
		hist[0][key & 2047u]++;
		hist[1][(key >> 11) & 2047u]++;
		hist[2][key >> 22]++;
	}
	if (n) pk_radix(&keys, &other, n, hist);
	if (growing) {
		// The sorted keys must end in sa: the gather is about to fill nboxes.
		if (keys != sa) memcpy(sa, keys, (size_t)n * sizeof *sa);
	} else {
		sa = keys;
		sb = other;
	}
	uint32_t need;
	if (growing) {
		// 4a. Into new arrays (the old ones stay whole until the end): gather,
		// then make the blocks, growing their array as needed — no counting
		// pass. A uniform scene with bucket 16 needs about n / 19 blocks in 2D
		// and n / 22 in 3D, so n / 16 rarely grows; what grows keeps at most
		// half to spare.
		pk_gather(nboxes, nids, sa, base, stride, n);
		uint32_t est = n / 16 + 16;
		if (est < p->block_cap) est = p->block_cap; // keep the room earlier builds made
		pk_build bd = {sa, nboxes, pk_alloc(p, (size_t)est * sizeof(pblock)), 1, g.depth, p->def.bucket_size,
		               p, est, false};
		bd.failed = !bd.blocks;
		if (!bd.failed) {
			pk_block_clear(&bd.blocks[0]);
			bd.blocks[0].kids = 1;
		}
		if (n) pk_node(&bd, 0, 0, 0, n, 0, 0);
		if (bd.failed) {
			pk_free(p, bd.blocks, (size_t)bd.cap * sizeof(pblock));
			pk_free_items(p, nboxes, nids, sa, sb, ncap);
			return ORT_ERROR_OUT_OF_MEMORY;
		}
		need = n ? bd.made : 0;
		pk_free_items(p, p->boxes, p->ids, p->sort_a, p->sort_b, p->cap);
		pk_free(p, p->blocks, (size_t)p->block_cap * sizeof *p->blocks);
		p->boxes = nboxes;
		p->ids = nids;
		p->cap = ncap;
		p->sort_a = sa;
		p->sort_b = sb;
		p->blocks = bd.blocks;
		p->block_cap = bd.cap;
	} else {
		// 4b. Into the arrays in use: count the blocks, make room (the only
		// step that can fail), then overwrite.
		pk_build bd = {sa, NULL, NULL, 1, g.depth, p->def.bucket_size, NULL, 0, false};
		if (n) pk_node(&bd, 0, 0, 0, n, 0, 0);
		need = n ? bd.made : 0;
		if (need > p->block_cap) {
			uint32_t cap = need + need / 4 + 16; // room to spare: shapes vary from frame to frame
			pblock *nb = pk_alloc(p, (size_t)cap * sizeof *nb);
			if (!nb) return ORT_ERROR_OUT_OF_MEMORY;
			pk_free(p, p->blocks, (size_t)p->block_cap * sizeof *p->blocks);
			p->blocks = nb;
			p->block_cap = cap;
		}
		p->sort_a = sa;
		p->sort_b = sb;
		pk_gather(p->boxes, p->ids, sa, base, stride, n);
		bd = (pk_build){sa, p->boxes, p->blocks, 1, g.depth, p->def.bucket_size, NULL, 0, false};
		if (n) {
			pk_block_clear(&p->blocks[0]);
			p->blocks[0].kids = 1;
			pk_node(&bd, 0, 0, 0, n, 0, 0);
		}
		assert(!n || bd.made == need);
	}
	p->block_count = need;
	p->count = n;
	p->bounds = all;
	return ORT_OK;
}

ort_result ORTHANT_NAME(packed_build)(packed_t *p, const box_t *boxes, int count)
{
	return pk_build_from(p, (const char *)boxes, sizeof *boxes, count);
}

ort_result ORTHANT_NAME(packed_build_strided)(packed_t *p, const void *first, size_t stride, int count)
{
	return pk_build_from(p, first, stride, count);
}

// ---- region queries ----------------------------------------------------------

/// What a region query tests: a box or a sphere.
typedef struct pk_region {
	box_t box;
	float centre[DIM];
	double r2;
	bool sphere;
} pk_region;

static inline bool pk_region_meets(const pk_region *q, const box_t *b)
{
	if (!box_overlap(&q->box, b)) return false;
	return !q->sphere || dist2_point_box(q->centre, b) <= q->r2;
}

static ort_result pk_query(const packed_t *p, const pk_region *q, ort_id_fn *fn, void *ctx)
{
	if (p->block_count == 0) return ORT_OK;
	const pblock *blocks = p->blocks;
	const box_t *boxes = p->boxes;
	uint32_t stack[PK_STACK];
	int top = 0;
	stack[top++] = 0;
	while (top > 0) {
		const pblock *b = &blocks[stack[--top]];
		unsigned m = pk_lanes_meeting(b, &q->box);
		while (m) {
			int k = pk_next_lane(&m);
			if (q->sphere) {
				box_t lb = pk_lane_box(b, k);
				if (dist2_point_box(q->centre, &lb) > q->r2) continue;
			}
			uint32_t i = b->first[k], e = i + b->own[k];
			if (!q->sphere) {
				// Whether a box meets the query is rarely predictable: each
				// test advances an index instead of taking a branch, and
				// only the hits (a predictable few) call back.
				while (i < e) {
					uint32_t hit[32], nh = 0, stop = e - i > 32 ? i + 32 : e;
					for (; i < stop; ++i) {
						hit[nh] = i;
						nh += pk_overlap(&q->box, &boxes[i]);
					}
					for (uint32_t h = 0; h < nh; ++h)
						if (!fn(ctx, p->ids[hit[h]])) return ORT_OK;
				}
			}
			for (; i < e; ++i)
				if (pk_region_meets(q, &boxes[i]) && !fn(ctx, p->ids[i])) return ORT_OK;
			if (b->child[k] != NIL) {
				__builtin_prefetch(&blocks[b->child[k]]);
				stack[top++] = b->child[k];
			}
		}
		assert(top <= PK_STACK);
	}
	return ORT_OK;
}

ort_result ORTHANT_NAME(packed_query_box)(const packed_t *p, box_t box, ort_id_fn *fn, void *ctx)
{
	if (!p || !fn) return ORT_ERROR_INVALID_ARGUMENT;
	for (int d = 0; d < DIM; ++d)
		if (isnan(box.min[d]) || isnan(box.max[d]) || box.min[d] > box.max[d]) return ORT_ERROR_INVALID_BOX;
	pk_region q = {.box = box};
	return pk_query(p, &q, fn, ctx);
}

ort_result ORTHANT_NAME(packed_query_point)(const packed_t *p, const float point[DIM], ort_id_fn *fn, void *ctx)
{
	if (!p || !fn || !point) return ORT_ERROR_INVALID_ARGUMENT;
	if (point_check(point) != ORT_OK) return ORT_ERROR_INVALID_BOX;
	pk_region q;
	memset(&q, 0, sizeof q);
	memcpy(q.box.min, point, sizeof q.box.min);
	memcpy(q.box.max, point, sizeof q.box.max);
	return pk_query(p, &q, fn, ctx);
}

ort_result ORTHANT_NAME(packed_query_sphere)(const packed_t *p, const float centre[DIM], float radius,
                                             ort_id_fn *fn, void *ctx)
{
	if (!p || !fn || !centre) return ORT_ERROR_INVALID_ARGUMENT;
	if (point_check(centre) != ORT_OK || !isfinite(radius) || radius < 0.0f) return ORT_ERROR_INVALID_BOX;
	pk_region q;
	memset(&q, 0, sizeof q);
	// The sphere's box, holding whatever the distance test accepts, prunes first.
	for (int d = 0; d < DIM; ++d) q.centre[d] = centre[d];
	sphere_prune_box(centre, radius, &q.box);
	q.r2 = (double)radius * radius;
	q.sphere = true;
	return pk_query(p, &q, fn, ctx);
}

// ---- rays -----------------------------------------------------------------------

/// A node on a near-first stack: lane k of block b, entered at `at`
/// (a ray's t or a squared distance).
typedef struct pk_visit {
	uint32_t block;
	int lane;
	double at;
} pk_visit;

/// Push the lanes of block bi in mask m, farthest (largest at[k]) first, so
/// the nearest comes off the stack next.
static inline int pk_push_near_first(pk_visit *stack, int top, uint32_t bi, const double *at, unsigned m)
{
	pk_visit kids[NCHILD];
	int nk = 0;
	while (m) {
		int k = pk_next_lane(&m);
		int j = nk++;
		for (; j > 0 && kids[j - 1].at < at[k]; --j) kids[j] = kids[j - 1];
		kids[j] = (pk_visit){bi, k, at[k]};
	}
	assert(top + nk <= PK_STACK);
	for (int j = 0; j < nk; ++j) stack[top++] = kids[j];
	return top;
}

ort_result ORTHANT_NAME(packed_ray_cast)(const packed_t *p, const float origin[DIM], const float dir[DIM],
                                         float max_t, ort_id_ray_fn *fn, void *ctx)
{
	if (!p || !fn) return ORT_ERROR_INVALID_ARGUMENT;
	ort_result r = ray_args_check(origin, dir, max_t);
	if (r != ORT_OK || p->block_count == 0) return r;
	pk_visit stack[PK_STACK];
	int top = 0;
	float tmax = max_t;
	const pblock *blocks = p->blocks;
	double at[NCHILD];
	unsigned m = 0;
	float enter;
	box_t rb = pk_lane_box(&blocks[0], 0);
	if (ray_slab(origin, dir, tmax, rb.min, rb.max, &enter)) {
		at[0] = enter;
		m = 1;
	}
	top = pk_push_near_first(stack, top, 0, at, m);
	while (top > 0) {
		pk_visit v = stack[--top];
		if (v.at > tmax) continue;
		const pblock *b = &blocks[v.block];
		for (uint32_t k = b->first[v.lane], e = k + b->own[v.lane]; k < e; ++k) {
			float te;
			if (!ray_slab(origin, dir, tmax, p->boxes[k].min, p->boxes[k].max, &te)) continue;
			float ret = fn(ctx, p->ids[k], te);
			if (ret < 0.0f || isnan(ret)) continue;
			if (ret == 0.0f) return ORT_OK;
			if (ret < tmax) tmax = ret;
		}
		uint32_t ci = b->child[v.lane];
		if (ci == NIL) continue;
		const pblock *c = &blocks[ci];
		m = 0;
		for (uint32_t k = 0; k < c->kids; ++k) {
			box_t cb = pk_lane_box(c, (int)k);
			if (!ray_slab(origin, dir, tmax, cb.min, cb.max, &enter)) continue;
			at[k] = enter;
			m |= 1u << k;
		}
		top = pk_push_near_first(stack, top, ci, at, m);
	}
	return ORT_OK;
}

typedef struct pk_first {
	uint32_t id;
	float t;
	bool hit;
} pk_first;

static float pk_first_cb(void *ctx, uint32_t id, float t)
{
	pk_first *f = ctx;
	if (!f->hit || t < f->t || (t == f->t && id < f->id)) {
		f->id = id;
		f->t = t;
		f->hit = true;
	}
	// Only hits as near or nearer matter now. A hit at 0 clips to the least
	// positive float instead, because 0 would stop the cast before a tie at 0
	// with a lower id is seen; nothing lies strictly between the two.
	return t > 0.0f ? t : FLT_TRUE_MIN;
}

bool ORTHANT_NAME(packed_ray_first)(const packed_t *p, const float origin[DIM], const float dir[DIM], float max_t,
                                    uint32_t *id, float *t)
{
	pk_first f = {0, INFINITY, false};
	if (ORTHANT_NAME(packed_ray_cast)(p, origin, dir, max_t, pk_first_cb, &f) != ORT_OK || !f.hit) return false;
	if (id) *id = f.id;
	if (t) *t = f.t;
	return true;
}

// ---- k nearest ----------------------------------------------------------------

ort_result ORTHANT_NAME(packed_nearest)(const packed_t *p, const float point[DIM], int k, float max_distance,
                                        ort_id_neighbor *out, int *found)
{
	if (found) *found = 0;
	if (!p || !point || !found || k < 0 || (k > 0 && !out)) return ORT_ERROR_INVALID_ARGUMENT;
	if (point_check(point) != ORT_OK || isnan(max_distance) || max_distance < 0.0f) return ORT_ERROR_INVALID_BOX;
	if ((uint32_t)k > p->count) k = (int)p->count;
	if (k == 0) return ORT_OK;
	double limit2 = isinf(max_distance) ? INFINITY : (double)max_distance * max_distance;
	knn_best local[64];
	knn_best *best = local;
	if (k > 64) {
		best = allocator_alloc(&p->def.allocator, (size_t)k * sizeof *best);
		if (!best) return ORT_ERROR_OUT_OF_MEMORY;
	}
	int n = 0;
	pk_visit stack[PK_STACK];
	int top = 0;
	const pblock *blocks = p->blocks;
	double at[NCHILD];
	box_t rb = pk_lane_box(&blocks[0], 0);
	at[0] = dist2_point_box(point, &rb);
	top = pk_push_near_first(stack, top, 0, at, 1u);
	while (top > 0) {
		pk_visit v = stack[--top];
		// Equal distances are still visited: they may hold a tie with a lower id.
		if (v.at > limit2 || (n == k && v.at > best[0].d2)) continue;
		const pblock *b = &blocks[v.block];
		for (uint32_t e = b->first[v.lane], end = e + b->own[v.lane]; e < end; ++e) {
			knn_best c = {dist2_point_box(point, &p->boxes[e]), p->ids[e]};
			if (c.d2 > limit2) continue;
			if (n < k) {
				best[n] = c;
				knn_sift_up(best, n++);
			} else if (knn_before(&c, &best[0])) {
				best[0] = c;
				knn_sift_down(best, n, 0);
			}
		}
		uint32_t ci = b->child[v.lane];
		if (ci == NIL) continue;
		const pblock *c = &blocks[ci];
		unsigned m = 0;
		double worst = n == k ? best[0].d2 : limit2;
		if (worst > limit2) worst = limit2;
		for (uint32_t l = 0; l < c->kids; ++l) {
			double d2 = 0.0;
			for (int d = 0; d < DIM; ++d) {
				double lo = c->lo[d][l], hi = c->hi[d][l], x = point[d];
				double gap = x < lo ? lo - x : x > hi ? x - hi : 0.0;
				d2 += gap * gap;
			}
			if (d2 > worst) continue;
			at[l] = d2;
			m |= 1u << l;
		}
		top = pk_push_near_first(stack, top, ci, at, m);
	}
	knn_heap_sort(best, n); // the result order of ortN_tree_nearest: distance, then id
	for (int i = 0; i < n; ++i) out[i] = (ort_id_neighbor){best[i].id, (float)sqrt(best[i].d2)};
	*found = n;
	if (best != local) allocator_free(&p->def.allocator, best, (size_t)k * sizeof *best);
	return ORT_OK;
}

// ---- pairs ----------------------------------------------------------------------
//
// self(x) pairs x's own items with each other and with everything below x,
// then crosses each two children whose bounds meet and recurses. cross(x, y),
// for disjoint subtrees whose bounds meet, splits the side with more items:
// its own items against the other subtree, then each of its children that
// meets the other. Every pair is tested once: in its items' common node, down
// the ancestor line, or in the cross of the two children of their lowest
// common ancestor.

typedef struct pk_pairs {
	const packed_t *p;
	ort_id_pair_fn *fn;
	void *ctx;
	bool stop;
} pk_pairs;

/// A node: lane k of block b.
typedef struct pk_ref {
	uint32_t block;
	int lane;
} pk_ref;

static inline bool pk_report(pk_pairs *r, uint32_t a, uint32_t b)
{
	if (r->fn(r->ctx, r->p->ids[a], r->p->ids[b])) return true;
	r->stop = true;
	return false;
}

/// Items [a0, a0 + na) that meet bounds yb, each against items [b0, b0 + nb).
/// Overlap is rarely predictable, so the tests advance indices instead of
/// branching; only the hits (a predictable few) branch.
static void pk_list_vs_list(pk_pairs *r, uint32_t a0, uint32_t na, const box_t *yb, uint32_t b0, uint32_t nb)
{
	const box_t *boxes = r->p->boxes;
	uint32_t near[32];
	for (uint32_t a = a0, ae = a0 + na; a < ae;) {
		uint32_t nn = 0, stop = ae - a > 32 ? a + 32 : ae;
		for (; a < stop; ++a) {
			near[nn] = a;
			nn += pk_overlap(&boxes[a], yb);
		}
		for (uint32_t j = 0; j < nn; ++j) {
			const box_t *ba = &boxes[near[j]];
			for (uint32_t i = b0, ie = b0 + nb; i < ie;) {
				uint32_t hit[32], nh = 0, istop = ie - i > 32 ? i + 32 : ie;
				for (; i < istop; ++i) {
					hit[nh] = i;
					nh += pk_overlap(ba, &boxes[i]);
				}
				for (uint32_t h = 0; h < nh; ++h)
					if (!pk_report(r, near[j], hit[h])) return;
			}
		}
	}
}

/// Item a against every item below block bi (the children of some node).
static void pk_item_vs_block(pk_pairs *r, uint32_t a, uint32_t bi)
{
	const packed_t *p = r->p;
	const box_t ba = p->boxes[a];
	uint32_t stack[PK_STACK];
	int top = 0;
	stack[top++] = bi;
	while (top > 0) {
		const pblock *b = &p->blocks[stack[--top]];
		unsigned m = pk_lanes_meeting(b, &ba);
		while (m) {
			int k = pk_next_lane(&m);
			pk_list_vs_list(r, a, 1, &ba, b->first[k], b->own[k]);
			if (r->stop) return;
			if (b->child[k] != NIL) stack[top++] = b->child[k];
		}
		assert(top <= PK_STACK);
	}
}

/// x's own items against the subtree of y (whose bounds are yb).
static void pk_own_vs(pk_pairs *r, pk_ref x, pk_ref y, const box_t *yb)
{
	const packed_t *p = r->p;
	const pblock *bx = &p->blocks[x.block], *by = &p->blocks[y.block];
	for (uint32_t a = bx->first[x.lane], e = a + bx->own[x.lane]; a < e && !r->stop; ++a) {
		const box_t *ba = &p->boxes[a];
		if (!pk_overlap(ba, yb)) continue;
		pk_list_vs_list(r, a, 1, ba, by->first[y.lane], by->own[y.lane]);
		if (!r->stop && by->child[y.lane] != NIL) pk_item_vs_block(r, a, by->child[y.lane]);
	}
}

/// The sum of a box's sides: which of two subtrees to split first.
static inline float pk_extent(const box_t *b)
{
	float s = 0.0f;
	for (int d = 0; d < DIM; ++d) s += b->max[d] - b->min[d];
	return s;
}

/// Every pair with one item in the subtree of x and one in that of y
/// (disjoint subtrees whose bounds xb and yb meet).
static void pk_cross(pk_pairs *r, pk_ref x, pk_ref y, const box_t *xb, const box_t *yb)
{
	const packed_t *p = r->p;
	const pblock *bx = &p->blocks[x.block], *by = &p->blocks[y.block];
	uint32_t cx = bx->child[x.lane], cy = by->child[y.lane];
	if (cx == NIL && cy == NIL) {
		pk_list_vs_list(r, bx->first[x.lane], bx->own[x.lane], yb, by->first[y.lane], by->own[y.lane]);
		return;
	}
	// Split the larger side (a leaf never).
	if (cx == NIL || (cy != NIL && pk_extent(yb) > pk_extent(xb))) {
		pk_ref t = x;
		x = y;
		y = t;
		const box_t *tb = xb;
		xb = yb;
		yb = tb;
		cx = cy;
	}
	pk_own_vs(r, x, y, yb);
	const pblock *c = &p->blocks[cx];
	unsigned m = pk_lanes_meeting(c, yb);
	while (m && !r->stop) {
		int k = pk_next_lane(&m);
		box_t kb = pk_lane_box(c, k);
		pk_cross(r, (pk_ref){cx, k}, y, &kb, yb);
	}
}

static void pk_self(pk_pairs *r, pk_ref x)
{
	const packed_t *p = r->p;
	const pblock *bx = &p->blocks[x.block];
	const box_t *boxes = p->boxes;
	uint32_t ci = bx->child[x.lane];
	for (uint32_t a = bx->first[x.lane], e = a + bx->own[x.lane]; a < e; ++a) {
		pk_list_vs_list(r, a, 1, &boxes[a], a + 1, e - a - 1);
		if (!r->stop && ci != NIL) pk_item_vs_block(r, a, ci);
		if (r->stop) return;
	}
	if (ci == NIL) return;
	const pblock *c = &p->blocks[ci];
	int kids = (int)c->kids;
	for (int k = 0; k < kids && !r->stop; ++k) {
		box_t kb = pk_lane_box(c, k);
		// The later siblings that meet this one, all at once.
		unsigned m = pk_lanes_meeting(c, &kb) & ~((2u << k) - 1u);
		while (m && !r->stop) {
			int l = pk_next_lane(&m);
			box_t lb = pk_lane_box(c, l);
			pk_cross(r, (pk_ref){ci, k}, (pk_ref){ci, l}, &kb, &lb);
		}
	}
	for (int k = 0; k < kids && !r->stop; ++k) pk_self(r, (pk_ref){ci, k});
}

ort_result ORTHANT_NAME(packed_find_pairs)(const packed_t *p, ort_id_pair_fn *fn, void *ctx)
{
	if (!p || !fn) return ORT_ERROR_INVALID_ARGUMENT;
	pk_pairs r = {p, fn, ctx, false};
	if (p->block_count) pk_self(&r, (pk_ref){0, 0});
	return ORT_OK;
}

// ---- stats and validation -------------------------------------------------------

static void pk_stats_walk(const packed_t *p, pk_ref x, int depth, ort_tree_stats *s)
{
	const pblock *b = &p->blocks[x.block];
	s->nodes++;
	if (depth > s->depth) s->depth = depth;
	s->items_per_level[depth < ORTHANT_STATS_LEVELS ? depth : ORTHANT_STATS_LEVELS - 1] += (int)b->own[x.lane];
	uint32_t ci = b->child[x.lane];
	if (ci == NIL) {
		s->leaves++;
		return;
	}
	for (uint32_t k = 0; k < p->blocks[ci].kids; ++k) pk_stats_walk(p, (pk_ref){ci, (int)k}, depth + 1, s);
}

void ORTHANT_NAME(packed_get_stats)(const packed_t *p, ort_tree_stats *out)
{
	if (!out) return;
	memset(out, 0, sizeof *out);
	if (!p) return;
	out->items = out->entries = (int)p->count;
	out->bytes = p->bytes;
	out->bytes_peak = p->bytes_peak;
	if (p->block_count) pk_stats_walk(p, (pk_ref){0, 0}, 0, out);
}

static void pk_visit_node(const packed_t *p, pk_ref x, int depth, ORTHANT_NAME(node_fn) * fn, void *ctx)
{
	const pblock *b = &p->blocks[x.block];
	box_t bounds = pk_lane_box(b, x.lane);
	fn(ctx, &bounds, &bounds, depth, (int)b->own[x.lane]);
	uint32_t ci = b->child[x.lane];
	if (ci == NIL) return;
	for (uint32_t k = 0; k < p->blocks[ci].kids; ++k) pk_visit_node(p, (pk_ref){ci, (int)k}, depth + 1, fn, ctx);
}

void ORTHANT_NAME(packed_visit_nodes)(const packed_t *p, ORTHANT_NAME(node_fn) * fn, void *ctx)
{
	if (p && fn && p->block_count) pk_visit_node(p, (pk_ref){0, 0}, 0, fn, ctx);
}

static ort_result pk_fail(char *msg, size_t size, const char *what, uint32_t i)
{
	if (msg && size) snprintf(msg, size, "packed block %u: %s", (unsigned)i, what);
	return ORT_ERROR_CORRUPT;
}

static bool pk_box_holds(const box_t *outer, const box_t *inner)
{
	for (int d = 0; d < DIM; ++d)
		if (inner->min[d] < outer->min[d] || inner->max[d] > outer->max[d]) return false;
	return true;
}

ort_result ORTHANT_NAME(packed_validate)(const packed_t *p, char *msg, size_t msg_size)
{
	if (msg && msg_size) msg[0] = '\0';
	if (!p) return ORT_ERROR_INVALID_ARGUMENT;
	uint32_t nb = p->block_count, n = p->count;
	if (n > p->cap || nb > p->block_cap || (n == 0) != (nb == 0))
		return pk_fail(msg, msg_size, "counts past capacity", 0);
	if (n == 0) return ORT_OK;
	// Scratch: each block's item end, and one bit per block and per id.
	size_t bwords = ((size_t)nb + 63) / 64, iwords = ((size_t)n + 63) / 64;
	size_t size = (size_t)nb * sizeof(uint32_t) + (bwords + iwords) * sizeof(uint64_t);
	void *mem = allocator_alloc(&p->def.allocator, size);
	if (!mem) return ORT_ERROR_OUT_OF_MEMORY;
	memset(mem, 0, size);
	uint64_t *block_seen = mem, *id_seen = block_seen + bwords;
	uint32_t *end = (uint32_t *)(id_seen + iwords);
	ort_result res = ORT_OK;
	// Links: a block's children come later in the array (so there is no
	// cycle), and every block but the root's is some lane's children exactly once.
	if (p->blocks[0].kids != 1) res = pk_fail(msg, msg_size, "the root block holds more than the root", 0);
	for (uint32_t i = 0; i < nb && res == ORT_OK; ++i) {
		const pblock *b = &p->blocks[i];
		if (b->kids < 1 || b->kids > NCHILD) res = pk_fail(msg, msg_size, "lanes in use out of range", i);
		for (uint32_t k = 0; k < NCHILD && res == ORT_OK; ++k) {
			uint32_t c = b->child[k];
			box_t lb = pk_lane_box(b, (int)k);
			if (k >= b->kids) {
				if (c != NIL || b->own[k] != 0 || pk_overlap(&lb, &lb))
					res = pk_fail(msg, msg_size, "an unused lane that is not empty", i);
				continue;
			}
			if (c != NIL && (c <= i || c >= nb)) {
				res = pk_fail(msg, msg_size, "children out of range", i);
				break;
			}
			if (c == NIL && b->own[k] == 0) res = pk_fail(msg, msg_size, "an empty leaf", i);
			if (c != NIL && b->own[k] == 0 && p->blocks[c].kids == 1)
				res = pk_fail(msg, msg_size, "a node with one child and no items", i);
			if (c != NIL) {
				if (block_seen[c / 64] >> (c % 64) & 1u) res = pk_fail(msg, msg_size, "a block with two parents", c);
				block_seen[c / 64] |= (uint64_t)1 << (c % 64);
			}
		}
	}
	for (uint32_t i = 1; i < nb && res == ORT_OK; ++i)
		if (!(block_seen[i / 64] >> (i % 64) & 1u)) res = pk_fail(msg, msg_size, "a block no parent reaches", i);
	// Items: each block's lanes tile a run, each lane's children follow its own
	// items; bounds hold every box below them. Children come later, so a
	// backward pass sees them first.
	for (uint32_t i = nb; i-- > 0 && res == ORT_OK;) {
		const pblock *b = &p->blocks[i];
		uint32_t at = b->first[0];
		for (uint32_t k = 0; k < b->kids && res == ORT_OK; ++k) {
			box_t lb = pk_lane_box(b, (int)k);
			if (b->first[k] != at || b->first[k] > n || b->own[k] > n - b->first[k]) {
				res = pk_fail(msg, msg_size, "lanes do not tile the items", i);
				break;
			}
			at = b->first[k] + b->own[k];
			for (uint32_t e = b->first[k]; e < at && res == ORT_OK; ++e)
				if (!pk_box_holds(&lb, &p->boxes[e])) res = pk_fail(msg, msg_size, "bounds miss an item", i);
			uint32_t c = b->child[k];
			if (c == NIL || res != ORT_OK) continue;
			const pblock *cb = &p->blocks[c];
			if (cb->first[0] != at) res = pk_fail(msg, msg_size, "children do not follow their parent's items", i);
			for (uint32_t l = 0; l < cb->kids && res == ORT_OK; ++l) {
				box_t clb = pk_lane_box(cb, (int)l);
				if (!pk_box_holds(&lb, &clb)) res = pk_fail(msg, msg_size, "bounds miss a child", i);
			}
			at = end[c];
		}
		end[i] = at;
	}
	if (res == ORT_OK && (p->blocks[0].first[0] != 0 || end[0] != n))
		res = pk_fail(msg, msg_size, "the root does not span the items", 0);
	// Ids: a permutation of 0..count-1.
	for (uint32_t k = 0; k < n && res == ORT_OK; ++k) {
		uint32_t id = p->ids[k];
		if (id >= n || (id_seen[id / 64] >> (id % 64) & 1u))
			res = pk_fail(msg, msg_size, "ids are not a permutation", k);
		else
			id_seen[id / 64] |= (uint64_t)1 << (id % 64);
		if (res == ORT_OK && box_check(&p->boxes[k]) != ORT_OK) res = pk_fail(msg, msg_size, "a bad box", k);
	}
	allocator_free(&p->def.allocator, mem, size);
	return res;
}

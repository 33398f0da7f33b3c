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
// Nodes. Node 0 is the root; a node's children are the `kids` nodes from
// `child` on, in Morton order, always after their parent in the array, so a
// query tests a node's children from one or two cache lines (flatbush and
// Boost's packed R-tree keep children together for the same reason). A node's
// items start at `first`: its `own` items, then each child's subtree in turn.
// A leaf (kids == 0) owns all its items, at least one. A node with no own
// items and one child is never made: the child takes its place. bounds is the
// union of every box in the subtree, so answers depend on the boxes alone: the
// keys decide the shape, never a result.
//
// Traversals use fixed stacks: levels strictly deepen along a path, so a path
// has at most depth + 1 nodes and a stack at most (depth + 1) * NCHILD entries.
#ifndef ORTHANT_DIM
#error "compiled through dim2.c or dim3.c"
#endif

typedef ORTHANT_NAME(packed) packed_t;
typedef ORTHANT_NAME(packed_def) pdef_t;

#define PK_MAX_DEPTH (DIM == 2 ? 13 : 9)
#define PK_LEVEL_BITS 4
#define PK_LEVEL_MASK ((1u << PK_LEVEL_BITS) - 1u)
#define PK_STACK ((PK_MAX_DEPTH + 2) * NCHILD)
/// Most items: ids are 32-bit and node counts reach 2 * count + 1.
#define PK_MAX_ITEMS (INT32_MAX / 2 - 2)

typedef struct pnode {
	box_t bounds;   ///< union of the subtree's boxes
	uint32_t first; ///< first item of the subtree; own items come first
	uint32_t own;   ///< items of this node itself
	uint32_t child; ///< first child
	uint32_t kids;  ///< children, nodes [child, child + kids); 0 for a leaf
} pnode;

struct ORTHANT_NAME(packed) {
	pdef_t def;
	uint32_t count;      ///< items
	uint32_t node_count; ///< nodes
	box_t bounds;        ///< union of every box
	box_t *boxes;        ///< [cap], tree order
	uint32_t *ids;       ///< [cap], the id of each box
	pnode *nodes;        ///< [node_cap]
	uint64_t *sort_a, *sort_b; ///< [cap] build scratch: key << 32 | id
	uint32_t cap, node_cap;
	size_t bytes, bytes_peak;
};

// ---- memory -----------------------------------------------------------------

static void *pk_alloc(packed_t *p, size_t size)
{
	const ort_allocator *a = &p->def.allocator;
	void *m = a->alloc ? a->alloc(a->ctx, size) : malloc(size);
	if (m) {
		p->bytes += size;
		if (p->bytes > p->bytes_peak) p->bytes_peak = p->bytes;
	}
	return m;
}

static void pk_free(packed_t *p, void *m, size_t size)
{
	if (!m) return;
	const ort_allocator *a = &p->def.allocator;
	p->bytes -= size;
	if (a->free)
		a->free(a->ctx, m, size);
	else
		free(m);
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
	const ort_allocator *a = &def->allocator;
	packed_t *p = a->alloc ? a->alloc(a->ctx, sizeof *p) : malloc(sizeof *p);
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
	pk_free(p, p->nodes, (size_t)p->node_cap * sizeof *p->nodes);
	const ort_allocator *a = &p->def.allocator;
	if (a->free)
		a->free(a->ctx, p, sizeof *p);
	else
		free(p);
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

/// floor(log2(x)) for a normal double x >= 1, from its exponent bits.
static inline int pk_log2_floor(double x)
{
	uint64_t u;
	memcpy(&u, &x, sizeof u);
	return (int)((u >> 52) & 0x7ff) - 1023;
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
			// The deepest level whose cell side extent / 2^level still covers size.
			double ratio = g->extent[d] / size;
			int l = ratio >= (double)g->cells ? g->depth : pk_log2_floor(ratio);
			if (l < level) level = l;
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
	pnode *nodes;       ///< NULL when only counting
	uint32_t made;
	int depth, bucket;
} pk_build;

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

/// Fill node `me` with the subtree of items [lo, hi), which all lie in cell
/// `code` of `level` and are no shallower than it; returns its bounds (when
/// building). Children get a block of slots at the end of what is made.
static box_t pk_node(pk_build *b, uint32_t me, uint32_t lo, uint32_t hi, int level, uint32_t code)
{
	box_t bounds = pk_empty_box();
	uint32_t own = 0, cut[NCHILD + 1];
	uint32_t kids;
	for (;;) {
		if (hi - lo <= (uint32_t)b->bucket || level >= b->depth) {
			// A leaf, which owns every item of its range.
			if (b->nodes) {
				for (uint32_t k = lo; k < hi; ++k) pk_grow(&bounds, &b->boxes[k]);
				b->nodes[me] = (pnode){bounds, lo, hi - lo, 0, 0};
			}
			return bounds;
		}
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
		if (own != 0 || kids != 1) break;
		// No items of its own and one child: the child takes this slot.
		code = (code << DIM) | (uint32_t)last;
		++level;
	}
	uint32_t child = b->made;
	b->made += kids;
	if (b->nodes)
		for (uint32_t k = lo; k < lo + own; ++k) pk_grow(&bounds, &b->boxes[k]);
	uint32_t slot = child;
	for (int c = 0; c < NCHILD; ++c) {
		if (cut[c + 1] == cut[c]) continue;
		box_t cb = pk_node(b, slot++, cut[c], cut[c + 1], level + 1, (code << DIM) | (uint32_t)c);
		pk_grow(&bounds, &cb);
	}
	if (b->nodes) b->nodes[me] = (pnode){bounds, lo, own, child, kids};
	return bounds;
}

// ---- build ----------------------------------------------------------------------

static ort_result pk_build_from(packed_t *p, const char *base, size_t stride, int count)
{
	if (!p || count < 0 || (count > 0 && !base) || stride < sizeof(box_t)) return ORT_ERROR_INVALID_ARGUMENT;
	if (count > PK_MAX_ITEMS) return ORT_ERROR_CAPACITY;
	uint32_t n = (uint32_t)count;
	// 1. Check every box and bound them; nothing is changed yet.
	box_t all = pk_empty_box();
	for (uint32_t i = 0; i < n; ++i) {
		box_t b;
		memcpy(&b, base + (size_t)i * stride, sizeof b);
		ort_result r = box_check(&b);
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
	// 3. Keys, sorted. Only scratch is written.
	pk_grid g;
	g.depth = p->def.max_depth;
	g.cells = 1u << g.depth;
	for (int d = 0; d < DIM; ++d) {
		g.lo[d] = all.min[d];
		g.extent[d] = n ? (double)all.max[d] - all.min[d] : 0.0;
		g.scale[d] = g.extent[d] > 0.0 ? (double)g.cells / g.extent[d] : 0.0;
	}
	static const uint32_t zero_hist[3][2048];
	uint32_t hist[3][2048];
	memcpy(hist, zero_hist, sizeof hist);
	for (uint32_t i = 0; i < n; ++i) {
		box_t b;
		memcpy(&b, base + (size_t)i * stride, sizeof b);
		uint32_t key = pk_key(&g, &b);
		sa[i] = (uint64_t)key << 32 | i;
		hist[0][key & 2047u]++;
		hist[1][(key >> 11) & 2047u]++;
		hist[2][key >> 22]++;
	}
	if (n) pk_radix(&sa, &sb, n, hist);
	// 4. Count the nodes, then make room for them.
	pk_build bd = {sa, NULL, NULL, 1, g.depth, p->def.bucket_size};
	if (n) pk_node(&bd, 0, 0, n, 0, 0);
	uint32_t need = n ? bd.made : 0;
	pnode *nnodes = p->nodes;
	uint32_t nnode_cap = p->node_cap;
	if (need > p->node_cap) {
		nnode_cap = need + need / 8;
		nnodes = pk_alloc(p, (size_t)nnode_cap * sizeof *nnodes);
		if (!nnodes) {
			if (nboxes != p->boxes) pk_free_items(p, nboxes, nids, sa, sb, ncap);
			return ORT_ERROR_OUT_OF_MEMORY;
		}
	}
	// 5. Nothing can fail now: retire the old arrays and fill the new.
	if (nboxes != p->boxes) {
		pk_free_items(p, p->boxes, p->ids, p->sort_a, p->sort_b, p->cap);
		p->boxes = nboxes;
		p->ids = nids;
		p->cap = ncap;
	}
	p->sort_a = sa;
	p->sort_b = sb;
	if (nnodes != p->nodes) {
		pk_free(p, p->nodes, (size_t)p->node_cap * sizeof *p->nodes);
		p->nodes = nnodes;
		p->node_cap = nnode_cap;
	}
	uint32_t *ids = p->ids;
	box_t *boxes = p->boxes;
	for (uint32_t k = 0; k < n; ++k) {
		uint32_t id = (uint32_t)sa[k];
		ids[k] = id;
		memcpy(&boxes[k], base + (size_t)id * stride, sizeof(box_t));
	}
	bd = (pk_build){sa, p->boxes, p->nodes, 1, g.depth, p->def.bucket_size};
	if (n) pk_node(&bd, 0, 0, n, 0, 0);
	assert(!n || bd.made == need);
	p->node_count = need;
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
	if (p->node_count == 0 || !pk_region_meets(q, &p->nodes[0].bounds)) return ORT_OK;
	const pnode *nodes = p->nodes;
	const box_t *boxes = p->boxes;
	uint32_t stack[PK_STACK];
	int top = 0;
	stack[top++] = 0;
	while (top > 0) {
		const pnode *n = &nodes[stack[--top]];
		for (uint32_t k = n->first, e = n->first + n->own; k < e; ++k)
			if (pk_region_meets(q, &boxes[k]) && !fn(ctx, p->ids[k])) return ORT_OK;
		// Last child first onto the stack, so hits come in Morton order.
		for (uint32_t c = n->child + n->kids; c-- > n->child;)
			if (pk_region_meets(q, &nodes[c].bounds)) {
				stack[top++] = c;
				__builtin_prefetch(&boxes[nodes[c].first]);
				if (nodes[c].kids) __builtin_prefetch(&nodes[nodes[c].child]);
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
	for (int d = 0; d < DIM; ++d) {
		// The sphere's box, rounded outwards, prunes first; the exact test follows.
		q.box.min[d] = nextafterf(centre[d] - radius, -INFINITY);
		q.box.max[d] = nextafterf(centre[d] + radius, INFINITY);
		q.centre[d] = centre[d];
	}
	q.r2 = (double)radius * radius;
	q.sphere = true;
	return pk_query(p, &q, fn, ctx);
}

// ---- rays -----------------------------------------------------------------------

typedef struct pk_ray_node {
	uint32_t node;
	float enter;
} pk_ray_node;

ort_result ORTHANT_NAME(packed_ray_cast)(const packed_t *p, const float origin[DIM], const float dir[DIM],
                                         float max_t, ort_id_ray_fn *fn, void *ctx)
{
	if (!p || !fn) return ORT_ERROR_INVALID_ARGUMENT;
	ort_result r = ray_args_check(origin, dir, max_t);
	if (r != ORT_OK || p->node_count == 0) return r;
	pk_ray_node stack[PK_STACK];
	int top = 0;
	float tmax = max_t, enter;
	const pnode *nodes = p->nodes;
	if (ray_slab(origin, dir, tmax, nodes[0].bounds.min, nodes[0].bounds.max, &enter))
		stack[top++] = (pk_ray_node){0, enter};
	while (top > 0) {
		pk_ray_node rn = stack[--top];
		if (rn.enter > tmax) continue;
		const pnode *n = &nodes[rn.node];
		for (uint32_t k = n->first, e = n->first + n->own; k < e; ++k) {
			float te;
			if (!ray_slab(origin, dir, tmax, p->boxes[k].min, p->boxes[k].max, &te)) continue;
			float v = fn(ctx, p->ids[k], te);
			if (v < 0.0f || isnan(v)) continue;
			if (v == 0.0f) return ORT_OK;
			if (v < tmax) tmax = v;
		}
		// Children far to near onto the stack, so the nearest comes off first.
		pk_ray_node kids[NCHILD];
		int nk = 0;
		for (uint32_t c = n->child; c < n->child + n->kids; ++c) {
			if (!ray_slab(origin, dir, tmax, nodes[c].bounds.min, nodes[c].bounds.max, &enter)) continue;
			int j = nk++;
			for (; j > 0 && kids[j - 1].enter < enter; --j) kids[j] = kids[j - 1];
			kids[j] = (pk_ray_node){c, enter};
		}
		assert(top + nk <= PK_STACK);
		for (int j = 0; j < nk; ++j) stack[top++] = kids[j];
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

typedef struct pk_knn_node {
	uint32_t node;
	double d2;
} pk_knn_node;

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
		const ort_allocator *a = &p->def.allocator;
		size_t size = (size_t)k * sizeof *best;
		best = a->alloc ? a->alloc(a->ctx, size) : malloc(size);
		if (!best) return ORT_ERROR_OUT_OF_MEMORY;
	}
	int n = 0;
	pk_knn_node stack[PK_STACK];
	int top = 0;
	const pnode *nodes = p->nodes;
	stack[top++] = (pk_knn_node){0, dist2_point_box(point, &nodes[0].bounds)};
	while (top > 0) {
		pk_knn_node kn = stack[--top];
		// Equal distances are still visited: they may hold a tie with a lower id.
		if (kn.d2 > limit2 || (n == k && kn.d2 > best[0].d2)) continue;
		const pnode *nd = &nodes[kn.node];
		for (uint32_t e = nd->first, end = nd->first + nd->own; e < end; ++e) {
			knn_best v = {dist2_point_box(point, &p->boxes[e]), p->ids[e]};
			if (v.d2 > limit2) continue;
			if (n < k) {
				best[n] = v;
				knn_sift_up(best, n++);
			} else if (knn_before(&v, &best[0])) {
				best[0] = v;
				knn_sift_down(best, n, 0);
			}
		}
		pk_knn_node kids[NCHILD];
		int nk = 0;
		for (uint32_t c = nd->child; c < nd->child + nd->kids; ++c) {
			double d2 = dist2_point_box(point, &nodes[c].bounds);
			if (d2 > limit2 || (n == k && d2 > best[0].d2)) continue;
			int j = nk++;
			for (; j > 0 && kids[j - 1].d2 < d2; --j) kids[j] = kids[j - 1];
			kids[j] = (pk_knn_node){c, d2};
		}
		assert(top + nk <= PK_STACK);
		for (int j = 0; j < nk; ++j) stack[top++] = kids[j];
	}
	knn_heap_sort(best, n); // the result order of ortN_tree_nearest: distance, then id
	for (int i = 0; i < n; ++i) out[i] = (ort_id_neighbor){best[i].id, (float)sqrt(best[i].d2)};
	*found = n;
	if (best != local) {
		const ort_allocator *a = &p->def.allocator;
		if (a->free)
			a->free(a->ctx, best, (size_t)k * sizeof *best);
		else
			free(best);
	}
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

/// Item a against every item in the subtree of x.
static void pk_item_vs(pk_pairs *r, uint32_t a, uint32_t x)
{
	const packed_t *p = r->p;
	const box_t ba = p->boxes[a];
	uint32_t stack[PK_STACK];
	int top = 0;
	stack[top++] = x;
	while (top > 0) {
		const pnode *n = &p->nodes[stack[--top]];
		for (uint32_t k = n->first, e = n->first + n->own; k < e; ++k)
			if (pk_overlap(&ba, &p->boxes[k]) && !r->fn(r->ctx, p->ids[a], p->ids[k])) {
				r->stop = true;
				return;
			}
		for (uint32_t c = n->child; c < n->child + n->kids; ++c)
			if (pk_overlap(&ba, &p->nodes[c].bounds)) stack[top++] = c;
		assert(top <= PK_STACK);
	}
}

/// x's own items against the subtree of y.
static void pk_own_vs(pk_pairs *r, uint32_t x, uint32_t y)
{
	const packed_t *p = r->p;
	const pnode *nx = &p->nodes[x], *ny = &p->nodes[y];
	for (uint32_t a = nx->first, e = nx->first + nx->own; a < e && !r->stop; ++a)
		if (pk_overlap(&p->boxes[a], &ny->bounds)) pk_item_vs(r, a, y);
}

/// The sum of a box's sides: which of two subtrees to split first.
static inline float pk_extent(const box_t *b)
{
	float s = 0.0f;
	for (int d = 0; d < DIM; ++d) s += b->max[d] - b->min[d];
	return s;
}

static void pk_cross(pk_pairs *r, uint32_t x, uint32_t y)
{
	const packed_t *p = r->p;
	const pnode *nx = &p->nodes[x], *ny = &p->nodes[y];
	if (nx->kids == 0 && ny->kids == 0) {
		for (uint32_t a = nx->first, ae = a + nx->own; a < ae; ++a) {
			const box_t *ba = &p->boxes[a];
			if (!pk_overlap(ba, &ny->bounds)) continue;
			for (uint32_t b = ny->first, be = b + ny->own; b < be; ++b)
				if (pk_overlap(ba, &p->boxes[b]) && !r->fn(r->ctx, p->ids[a], p->ids[b])) {
					r->stop = true;
					return;
				}
		}
		return;
	}
	// Split the larger side (a leaf never).
	if (nx->kids == 0 || (ny->kids != 0 && pk_extent(&ny->bounds) > pk_extent(&nx->bounds))) {
		uint32_t t = x;
		x = y;
		y = t;
		nx = &p->nodes[x];
		ny = &p->nodes[y];
	}
	pk_own_vs(r, x, y);
	for (uint32_t c = nx->child; c < nx->child + nx->kids && !r->stop; ++c)
		if (pk_overlap(&p->nodes[c].bounds, &ny->bounds)) pk_cross(r, c, y);
}

static void pk_self(pk_pairs *r, uint32_t x)
{
	const packed_t *p = r->p;
	const pnode *n = &p->nodes[x];
	const box_t *boxes = p->boxes;
	uint32_t c0 = n->child, c1 = n->child + n->kids;
	for (uint32_t a = n->first, e = n->first + n->own; a < e; ++a) {
		for (uint32_t b = a + 1; b < e; ++b)
			if (pk_overlap(&boxes[a], &boxes[b]) && !r->fn(r->ctx, p->ids[a], p->ids[b])) {
				r->stop = true;
				return;
			}
		for (uint32_t c = c0; c < c1 && !r->stop; ++c)
			if (pk_overlap(&boxes[a], &p->nodes[c].bounds)) pk_item_vs(r, a, c);
		if (r->stop) return;
	}
	for (uint32_t c = c0; c < c1 && !r->stop; ++c)
		for (uint32_t d = c + 1; d < c1 && !r->stop; ++d)
			if (pk_overlap(&p->nodes[c].bounds, &p->nodes[d].bounds)) pk_cross(r, c, d);
	for (uint32_t c = c0; c < c1 && !r->stop; ++c) pk_self(r, c);
}

ort_result ORTHANT_NAME(packed_find_pairs)(const packed_t *p, ort_id_pair_fn *fn, void *ctx)
{
	if (!p || !fn) return ORT_ERROR_INVALID_ARGUMENT;
	pk_pairs r = {p, fn, ctx, false};
	if (p->node_count) pk_self(&r, 0);
	return ORT_OK;
}

// ---- stats and validation -------------------------------------------------------

static void pk_stats_walk(const packed_t *p, uint32_t x, int depth, ort_tree_stats *s)
{
	const pnode *n = &p->nodes[x];
	s->nodes++;
	if (depth > s->depth) s->depth = depth;
	s->items_per_level[depth < ORTHANT_STATS_LEVELS ? depth : ORTHANT_STATS_LEVELS - 1] += (int)n->own;
	if (n->kids == 0) s->leaves++;
	for (uint32_t c = n->child; c < n->child + n->kids; ++c) pk_stats_walk(p, c, depth + 1, s);
}

void ORTHANT_NAME(packed_get_stats)(const packed_t *p, ort_tree_stats *out)
{
	if (!out) return;
	memset(out, 0, sizeof *out);
	if (!p) return;
	out->items = out->entries = (int)p->count;
	out->bytes = p->bytes;
	out->bytes_peak = p->bytes_peak;
	if (p->node_count) pk_stats_walk(p, 0, 0, out);
}

static ort_result pk_fail(char *msg, size_t size, const char *what, uint32_t i)
{
	if (msg && size) snprintf(msg, size, "packed node %u: %s", (unsigned)i, what);
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
	uint32_t nn = p->node_count, n = p->count;
	if (n > p->cap || nn > p->node_cap || (n == 0) != (nn == 0))
		return pk_fail(msg, msg_size, "counts past capacity", 0);
	if (n == 0) return ORT_OK;
	// Scratch: each subtree's item end, and one bit per node and per id.
	const ort_allocator *a = &p->def.allocator;
	size_t nwords = ((size_t)nn + 63) / 64, iwords = ((size_t)n + 63) / 64;
	size_t size = (size_t)nn * sizeof(uint32_t) + (nwords + iwords) * sizeof(uint64_t);
	void *mem = a->alloc ? a->alloc(a->ctx, size) : malloc(size);
	if (!mem) return ORT_ERROR_OUT_OF_MEMORY;
	memset(mem, 0, size);
	uint64_t *node_seen = mem, *id_seen = node_seen + nwords;
	uint32_t *end = (uint32_t *)(id_seen + iwords);
	ort_result res = ORT_OK;
	// Links: children lie after their parent (so there is no cycle) and every
	// node but the root is some node's child exactly once.
	for (uint32_t i = 0; i < nn && res == ORT_OK; ++i) {
		const pnode *nd = &p->nodes[i];
		if (nd->kids > NCHILD || (nd->kids && (nd->child <= i || nd->child > nn - nd->kids)))
			res = pk_fail(msg, msg_size, "children out of range", i);
		else if (nd->kids == 1 && nd->own == 0)
			res = pk_fail(msg, msg_size, "a node with one child and no items", i);
		else if (nd->kids == 0 && nd->own == 0)
			res = pk_fail(msg, msg_size, "an empty leaf", i);
		for (uint32_t c = nd->child; res == ORT_OK && c < nd->child + nd->kids; ++c) {
			if (node_seen[c / 64] >> (c % 64) & 1u) res = pk_fail(msg, msg_size, "a node with two parents", c);
			node_seen[c / 64] |= (uint64_t)1 << (c % 64);
		}
	}
	for (uint32_t i = 1; i < nn && res == ORT_OK; ++i)
		if (!(node_seen[i / 64] >> (i % 64) & 1u)) res = pk_fail(msg, msg_size, "a node no parent reaches", i);
	// Items: children tile what their parent does not own; bounds hold it all.
	for (uint32_t i = nn; i-- > 0 && res == ORT_OK;) {
		const pnode *nd = &p->nodes[i];
		uint32_t at = nd->first + nd->own;
		if (nd->first > n || nd->own > n - nd->first) {
			res = pk_fail(msg, msg_size, "item range", i);
			break;
		}
		for (uint32_t c = nd->child; c < nd->child + nd->kids && res == ORT_OK; ++c) {
			if (p->nodes[c].first != at) res = pk_fail(msg, msg_size, "children do not tile the items", i);
			else if (!pk_box_holds(&nd->bounds, &p->nodes[c].bounds))
				res = pk_fail(msg, msg_size, "bounds miss a child", i);
			at = end[c];
		}
		for (uint32_t k = nd->first; k < nd->first + nd->own && res == ORT_OK; ++k)
			if (!pk_box_holds(&nd->bounds, &p->boxes[k])) res = pk_fail(msg, msg_size, "bounds miss an item", i);
		end[i] = at;
	}
	if (res == ORT_OK && (p->nodes[0].first != 0 || end[0] != n))
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
	if (a->free)
		a->free(a->ctx, mem, size);
	else
		free(mem);
	return res;
}

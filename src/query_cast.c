// query_cast.c: everything that moves through the tree — ray casts, swept
// boxes (box casts), and ray intersection records (ray_first, ray_all).
//
// ## Sweeps
//
// A box moving along delta touches an item's box exactly when its min corner,
// moving along the same ray, touches the item's box grown downwards by the
// moving box's size (the Minkowski difference). A ray is the sweep of a box of
// size 0, so ray records and box casts share one near-first traversal, the
// same as ortN_tree_ray_cast's, with node bounds grown the same way (which
// keeps the containment that makes pruning sound). Like every query these
// only read the tree: any number may run at once.
#include <float.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "tree_int.h"
#include "tree_ownidx.h"

typedef ORTHANT_NAME(ray_hit) ray_hit_t;

bool ORTHANT_NAME(box_ray)(box_t box, const float origin[DIM], const float dir[DIM], float max_t, float *t)
{
	float enter = 0.0f;
	bool hit = ray_slab(origin, dir, max_t, box.min, box.max, &enter);
	if (hit && t) *t = enter;
	return hit;
}

// ---- the walk ------------------------------------------------------------------------

/// A node on the near-first stack, with where the sweep enters it, and its
/// sub code: MIRROR_NODE to walk it by its node, else its mirror record's
/// (tree_mirror.c).
typedef struct ray_node {
	uint32_t node, sub;
	float enter;
} ray_node;

/// A sweep: the ray origin + t * dir, t in [0, max_t], against boxes grown
/// downwards by size (all zero for a plain ray); `moving` is the swept box
/// ([origin, origin] for a ray).
typedef struct sweep {
	float origin[DIM], dir[DIM], size[DIM];
	float max_t;
	box_t moving;
	uint64_t mask; ///< the query mask
#if defined(__SSE2__)
	/// sweep_box_hits' four lanes (sweep_lanes): the size, origin and direction
	/// per lane, when no axis of dir is 0 (an axis the sweep does not move
	/// along is a test of its own: ray_slab).
	bool lanes;
	__m128 lane_size, lane_origin, lane_dir;
	/// sweep_mirror_hits' rows: each axis' size, origin and direction in all four lanes.
	__m128 row_size[DIM], row_origin[DIM], row_dir[DIM];
#endif
} sweep;

/// Called for each entry whose box a sweep touches, with the entry parameter
/// of that box and the current clip; returns the parameter to clip to, with
/// ortN_ray_fn's meaning.
typedef float sweep_fn(void *ctx, const tree_t *t, const entry *e, float te, float tmax);

static inline bool sweep_hits(const sweep *w, float tmax, const float lo[DIM], const float hi[DIM], float *enter)
{
	float grown[DIM];
	for (int d = 0; d < DIM; ++d) grown[d] = lo[d] - w->size[d];
	return ray_slab(w->origin, w->dir, tmax, grown, hi, enter);
}

#if defined(__SSE2__)
/// The lanes sweep_box_hits divides in: 2D one register (min x, min y, max x,
/// max y), 3D two (min x, y, z and a spare; max x, y, z and a spare).
static void sweep_lanes(sweep *w)
{
	w->lanes = true;
	for (int d = 0; d < DIM; ++d) w->lanes &= w->dir[d] != 0.0f;
	float s[4] = {0}, o[4], v[4];
	for (int k = 0; k < 4; ++k) {
		int d = k % DIM;
		if (k < DIM) s[k] = w->size[d];
		o[k] = w->origin[d];
		v[k] = w->dir[d];
	}
	w->lane_size = _mm_loadu_ps(s);
	w->lane_origin = _mm_loadu_ps(o);
	w->lane_dir = _mm_loadu_ps(v);
	for (int d = 0; d < DIM; ++d) {
		w->row_size[d] = _mm_set1_ps(w->size[d]);
		w->row_origin[d] = _mm_set1_ps(w->origin[d]);
		w->row_dir[d] = _mm_set1_ps(w->dir[d]);
	}
}
#endif

#if defined(__SSE2__) && (DIM == 2 || DIM == 3)
/// The end of sweep_box_hits: each axis' entry and exit quotients, lanes l
/// and h, met as ray_slab meets them.
static inline bool sweep_quotients_meet(float tmax, __m128 l, __m128 h, float *enter)
{
	// No quotient is NaN (no axis of dir is 0 and every coordinate is
	// finite), so min and max are ray_slab's swap, and max_ss(x, t0) /
	// min_ss(x, t1) its "if (x > t0) t0 = x" / "if (x < t1) t1 = x".
	__m128 a = _mm_min_ps(l, h), c = _mm_max_ps(l, h);
	__m128 t0 = _mm_max_ss(a, _mm_setzero_ps()), t1 = _mm_min_ss(c, _mm_set_ss(tmax));
	t0 = _mm_max_ss(_mm_shuffle_ps(a, a, _MM_SHUFFLE(1, 1, 1, 1)), t0);
	t1 = _mm_min_ss(_mm_shuffle_ps(c, c, _MM_SHUFFLE(1, 1, 1, 1)), t1);
#if DIM == 3
	t0 = _mm_max_ss(_mm_shuffle_ps(a, a, _MM_SHUFFLE(2, 2, 2, 2)), t0);
	t1 = _mm_min_ss(_mm_shuffle_ps(c, c, _MM_SHUFFLE(2, 2, 2, 2)), t1);
#endif
	float e0 = _mm_cvtss_f32(t0);
	*enter = e0;
	return e0 <= _mm_cvtss_f32(t1);
}
#endif

#if defined(__SSE2__) && DIM == 2
/// sweep_box_hits of a 2D box in a register (min x, min y, max x, max y).
static inline bool sweep_reg_hits(const sweep *w, float tmax, __m128 b, float *enter)
{
	assert(w->lanes);
	__m128 l = _mm_div_ps(_mm_sub_ps(_mm_sub_ps(b, w->lane_size), w->lane_origin), w->lane_dir);
	__m128 h = _mm_shuffle_ps(l, l, _MM_SHUFFLE(1, 0, 3, 2)); // each axis' max quotient in its lane
	return sweep_quotients_meet(tmax, l, h, enter);
}
#endif

/// sweep_hits of a box: the same numbers, each quotient one IEEE division as
/// ray_slab makes it, but all of them in one or two vector divisions (a ray
/// test was four dependent scalar divisions and as many branches), and
/// ray_slab's comparisons made on the registers, in its order, without its
/// early exits (which change nothing: t0 only grows, t1 only shrinks).
static inline bool sweep_box_hits(const sweep *w, float tmax, const box_t *b, float *enter)
{
#if defined(__SSE2__) && (DIM == 2 || DIM == 3)
	if (w->lanes) {
#if DIM == 2
		return sweep_reg_hits(w, tmax, _mm_loadu_ps((const float *)b), enter); // min and max adjacent: one load
#else
		__m128 l = _mm_loadu_ps(b->min);
		__m128 h = _mm_loadu_ps(&b->min[2]); // min z, max x, y, z: every lane a coordinate
		h = _mm_shuffle_ps(h, h, _MM_SHUFFLE(0, 3, 2, 1));
		l = _mm_div_ps(_mm_sub_ps(_mm_sub_ps(l, w->lane_size), w->lane_origin), w->lane_dir);
		h = _mm_div_ps(_mm_sub_ps(h, w->lane_origin), w->lane_dir);
		return sweep_quotients_meet(tmax, l, h, enter);
#endif
	}
#endif
	return sweep_hits(w, tmax, b->min, b->max, enter);
}

/// Whether the sweep reaches the node, and where: its bound, which holds every
/// entry it could touch. Leaves placement tests the cell widened by a hair (as
/// ray_cast does) so the leaf owning an item's contact point is reached even
/// when that point rounds onto its face.
static inline bool sweep_node(const tree_t *t, const sweep *w, float tmax, const node *n, float *enter)
{
	if (t->def.placement != ORT_PLACEMENT_LEAVES) return sweep_box_hits(w, tmax, &n->bound, enter);
	float lo[DIM], hi[DIM];
	for (int d = 0; d < DIM; ++d) {
		float m = (n->hi[d] - n->lo[d]) * 1e-5f;
		lo[d] = n->lo[d] - m;
		hi[d] = n->hi[d] + m;
	}
	return sweep_hits(w, tmax, lo, hi, enter);
}

/// Prefetch the lines of chunk c that hold its links and its first fill
/// entries (a full 2D chunk's 88 bytes span two or three lines, 3D's 232 four
/// or five; a head chunk's empty slots are not read). The ray walk waits on
/// memory more than it computes: S5's rays ran 15 % (every hit) and 17 %
/// (first hit) faster with the prefetches of sweep_descend and sweep_own, 3D
/// uniform rays 10 %, at 8 % more instructions.
/// Always inlined, as fetch_span: GCC finds it pure and would delete a call.
ORT_INLINE void chunk_prefetch(const tree_t *t, uint32_t c, uint32_t fill)
{
	assert(fill >= 1 && fill <= CHUNK_CAP);
	fetch_span(&t->chunks[c], offsetof(chunk, e) + fill * sizeof(entry));
}

#if defined(__SSE2__)
/// sweep_box_hits of four boxes at once, given as rows (lo[d], hi[d]: axis
/// d of the four, a lane each; w->lanes): a bit a box, enter[k] its entry
/// parameter. Each quotient is the same IEEE division as sweep_box_hits',
/// and each min and max the same operation on the same operands in the same
/// order (sweep_quotients_meet: axis 0 first), so the bits and the enters
/// are its.
static inline unsigned sweep_rows_hits(const sweep *w, float tmax, const __m128 lo[DIM], const __m128 hi[DIM],
                                       float enter[4])
{
	assert(w->lanes);
	__m128 t0 = _mm_setzero_ps(), t1 = _mm_set1_ps(tmax);
	for (int d = 0; d < DIM; ++d) {
		__m128 o = w->row_origin[d], v = w->row_dir[d];
		__m128 l = _mm_div_ps(_mm_sub_ps(_mm_sub_ps(lo[d], w->row_size[d]), o), v);
		__m128 h = _mm_div_ps(_mm_sub_ps(hi[d], o), v);
		t0 = _mm_max_ps(_mm_min_ps(l, h), t0);
		t1 = _mm_min_ps(_mm_max_ps(l, h), t1);
	}
	_mm_storeu_ps(enter, t0);
	return (unsigned)_mm_movemask_ps(_mm_cmple_ps(t0, t1));
}
#endif

#if defined(__SSE2__) && DIM == 2 && CHUNK_CAP == 4
/// The entries [from, fill) of chunk es that the sweep touches, a bit each,
/// and where: enter[k]. A chunk's four boxes are read as four registers
/// (min x, min y, max x, max y) and turned into rows, one test for all
/// four; slots past fill repeat the last entry (their bits are dropped).
static inline unsigned sweep_chunk_hits(const sweep *w, float tmax, const entry *es, uint32_t from, uint32_t fill,
                                        float enter[4])
{
	assert(fill >= 1 && fill <= 4 && from < fill);
	__m128 r0 = _mm_loadu_ps((const float *)&es[0].box), r1 = _mm_loadu_ps((const float *)&es[fill > 1].box);
	__m128 r2 = _mm_loadu_ps((const float *)&es[fill > 2 ? 2 : fill - 1].box);
	__m128 r3 = _mm_loadu_ps((const float *)&es[fill - 1].box);
	_MM_TRANSPOSE4_PS(r0, r1, r2, r3);
	__m128 lo[2] = {r0, r1}, hi[2] = {r2, r3};
	unsigned in = ((1u << fill) - 1u) & ~((1u << from) - 1u);
	return sweep_rows_hits(w, tmax, lo, hi, enter) & in;
}
#endif

/// A sweep and its current clip, for an own-list index walk (tree_ownidx.h).
typedef struct sweep_reach {
	const sweep *w;
	const float *tmax;
} sweep_reach;

static bool sweep_group(const void *q, const box_t *b, float *key)
{
	const sweep_reach *r = q;
	return sweep_box_hits(r->w, *r->tmax, b, key);
}

/// The own entries of node ni that the sweep touches, to fn, a chunk at a
/// time, each clipping *clip as fn says; false when fn stopped the walk.
/// Always inlined: plain and leaves are constants of each walk, which drop
/// the tests that walk does not make (left out of line in the mirror walk,
/// it made a third of that walk's instructions).
ORT_INLINE bool sweep_own(const tree_t *t, const sweep *w, sweep_fn *fn, void *ctx, bool plain, bool leaves,
                             uint32_t ni, float *clip)
{
	const node *n = &t->nodes[ni];
	float tmax = *clip;
	float cell_lo[DIM], cell_hi[DIM]; // copies: a callback's deferred change may move the pool
	if (leaves) {
		memcpy(cell_lo, n->lo, sizeof cell_lo);
		memcpy(cell_hi, n->hi, sizeof cell_hi);
	}
	// A chunk at a time: find its hits, fetch their items together (the
	// callbacks read them, and one miss after another is what a hit cost),
	// then hand them over. An earlier hit may clip the sweep meanwhile:
	// with the entry parameter fixed, the clipped test is te <= tmax.
	own_iter it;
	sweep_reach reach = {w, &tmax};
	own_iter_init(t, ni, &it, sweep_group, &reach);
	for (uint32_t fill, c = own_iter_next(t, &it, &fill); c != NIL; c = own_iter_next(t, &it, &fill)) {
		uint8_t hit_k[CHUNK_CAP];
		float hit_t[CHUNK_CAP];
		int nh = 0;
		if (it.next != NIL) chunk_prefetch(t, it.next, CHUNK_CAP); // the chain's next, while this one is tested
		const entry *es = t->chunks[c].e;
		// A built tree's items are in its entries' order (tree_build.c:
		// bd_entries): a chunk's are one or two lines, fetched as soon as
		// the chunk is here, while its boxes are tested, not after a hit
		// (a first-hit ray's callback waited on its item).
		if (plain && t->mirror && it.from < fill) { // (an index stretch may be empty: no entry to read)
			__builtin_prefetch(&t->items[es[it.from].item]);
			__builtin_prefetch(&t->items[es[fill - 1].item]);
		}
		uint32_t k = it.from;
#if defined(__SSE2__) && DIM == 2 && CHUNK_CAP == 4
		if (plain && w->lanes && k < fill) { // (an index stretch may be empty)
			// The same tests as the loop's, four at once (sweep_chunk_hits).
			float enter[4];
			for (unsigned hit = sweep_chunk_hits(w, tmax, es, k, fill, enter); hit; hit &= hit - 1) {
				int j = __builtin_ctz(hit);
				__builtin_prefetch(&t->items[es[j].item]);
				hit_k[nh] = (uint8_t)j;
				hit_t[nh++] = enter[j];
			}
			k = fill;
		}
#endif
		for (; k < fill; ++k) {
			const entry *e = &es[k];
			float te;
			if (!plain && w->mask != ORT_MASK_ALL && !(item_cat(t, e->item) & w->mask)) continue;
			if (!sweep_box_hits(w, tmax, &e->box, &te)) continue;
			if (leaves) {
				// The contact point: the moving min corner at te, pushed into the item.
				float p[DIM];
				for (int d = 0; d < DIM; ++d) p[d] = ray_at(w->origin, w->dir, te, d);
				clamp_point(p, &e->box, p);
				if (!cell_owns(cell_lo, cell_hi, p)) continue;
			}
			__builtin_prefetch(&t->items[e->item]);
			hit_k[nh] = (uint8_t)k;
			hit_t[nh++] = te;
		}
		for (int j = 0; j < nh; ++j) {
			if (hit_t[j] > tmax) continue;
			float r = fn(ctx, t, &t->chunks[c].e[hit_k[j]], hit_t[j], tmax);
			if (r < 0.0f || isnan(r)) continue;
			if (r == 0.0f) return false;
			if (r < tmax) tmax = r;
		}
	}
	*clip = tmax;
	return true;
}

/// The children of mirror record b the sweep reaches, a bit each (live
/// holds the children there are), and where: enter[c]. sweep_box_hits' test
/// on each child's bound, four at a time with lanes: a row of the record is
/// one axis of four children, so each quotient is the same IEEE division and
/// each min and max the same operation on the same operands in the same
/// order as sweep_box_hits' (the four-box test of c573be0 was slower for
/// gathering boxes from four nodes; a row needs no gather).
static inline unsigned sweep_mirror_hits(const sweep *w, float tmax, const mirror_bounds *b, unsigned live,
                                         float enter[NCHILD])
{
	unsigned hit = 0;
#if defined(__SSE2__)
	if (w->lanes) {
		for (int g = 0; g < NCHILD; g += 4) {
			__m128 lo[DIM], hi[DIM];
			for (int d = 0; d < DIM; ++d) {
				lo[d] = _mm_loadu_ps(&b->lo[d][g]);
				hi[d] = _mm_loadu_ps(&b->hi[d][g]);
			}
			hit |= sweep_rows_hits(w, tmax, lo, hi, &enter[g]) << g;
		}
		return hit & live;
	}
#endif
	for (int c = 0; c < NCHILD; ++c) {
		box_t cb;
		for (int d = 0; d < DIM; ++d) {
			cb.min[d] = b->lo[d][c];
			cb.max[d] = b->hi[d][c];
		}
		if ((live >> c & 1) && sweep_box_hits(w, tmax, &cb, &enter[c])) hit |= 1u << c;
	}
	return hit;
}

/// sweep_descend's step for a node with a mirror record (rn.sub): its own
/// entries when it has any, then its children's bounds from the record, four
/// at a time, each pushed with its sub code; false when fn stopped the walk.
/// The same tests as on the nodes (the bounds are copies), in the same
/// order, but a line a node, and no node read but where entries are.
ORT_INLINE bool sweep_record(const tree_t *t, const sweep *w, sweep_fn *fn, void *ctx, ray_node rn, float *clip,
                             ray_node *stack, size_t *top, size_t cap)
{
	if ((rn.sub & MIRROR_OWN) && t->nodes[rn.node].count && !sweep_own(t, w, fn, ctx, true, false, rn.node, clip))
		return false;
	// Read after the callbacks: what they change waits for the walk's end,
	// so the mirror is still there (the node pool may have moved).
	uint32_t ri = rn.sub & MIRROR_INDEX;
	assert(t->mirror && ri < t->mirror_len);
	const mirror_link *l = &t->mirror[ri];
	unsigned live = mirror_live(l);
	WORK_TESTS(__builtin_popcount(live)); // the children's bounds (the counting build: tests/test_adversarial.c)
	float child_t[NCHILD];
	size_t kids = *top;
	(void)cap; // the asserts'
	for (unsigned hit = sweep_mirror_hits(w, *clip, &t->mirror_box[ri], live, child_t); hit; hit &= hit - 1) {
		int c = __builtin_ctz(hit);
		// What its pop reads first, fetched while the nodes above it on the
		// stack are walked: its record, and its node if it has entries or
		// has no record.
		uint32_t sub = l->sub[c], ci = l->child[c];
		if (!(sub & MIRROR_NODE)) {
			fetch_span(&t->mirror_box[sub & MIRROR_INDEX], sizeof(mirror_bounds));
			__builtin_prefetch(&t->mirror[sub & MIRROR_INDEX]);
		}
		if (sub == MIRROR_NODE)
			built_children_prefetch(t, ci);
		else if (sub & (MIRROR_OWN | MIRROR_NODE))
			fetch_span(&t->nodes[ci], sizeof(node));
		float te = child_t[c];
		assert(*top < cap);
		size_t j = (*top)++;
		for (; j > kids && stack[j - 1].enter < te; --j) stack[j] = stack[j - 1];
		stack[j] = (ray_node){ci, sub, te};
	}
	return true;
}

/// Every entry the sweep touches, each item once, children near-first, the
/// segment clipped by what fn returns. Called with plain (no filter, not
/// leaves placement: each node and entry one box test) and leaves constant
/// (sweep_walk), so a plain walk carries none of the other tests.
static inline ort_result sweep_descend(const tree_t *t, const sweep *w, sweep_fn *fn, void *ctx, bool plain,
                                       bool leaves)
{
	size_t cap = (size_t)(NCHILD - 1) * (size_t)(t->height + 1) + 1;
	ray_node local[LOCAL_STACK];
	ray_node *stack = cap <= LOCAL_STACK ? local : query_alloc(t, cap * sizeof *stack);
	if (!stack) return ORT_ERROR_OUT_OF_MEMORY;
	size_t top = 0;
	float tmax = w->max_t, enter;
	const node *root = &t->nodes[t->root];
	// A plain walk of a tree with a mirror reads records down to the nodes
	// the mirror leaves to it.
	uint32_t root_sub = plain && t->mirror ? t->mirror_root : MIRROR_NODE;
	if (sweep_node(t, w, tmax, root, &enter) && root->total && (node_cats(t, t->root) & w->mask))
		stack[top++] = (ray_node){t->root, root_sub, enter};
	while (top > 0) {
		ray_node rn = stack[--top];
		if (rn.enter > tmax) continue;
		if (plain && !(rn.sub & MIRROR_NODE)) {
			if (!sweep_record(t, w, fn, ctx, rn, &tmax, stack, &top, cap)) goto done;
			continue;
		}
		const node *n = &t->nodes[rn.node];
		// An inner node's own list is mostly empty (S5: 7 of the 9 nodes a
		// first-hit ray enters): its walk is not even set up.
		if (n->count && !sweep_own(t, w, fn, ctx, plain, leaves, rn.node, &tmax)) goto done;
		n = &t->nodes[rn.node]; // a callback's deferred change may have moved the pool
		// Children sorted farthest first, so the nearest is popped next:
		// each goes onto the stack by insertion among its siblings there.
		// Only a divided node has children (validate checks it): a leaf's
		// are NIL, and its flags, a line of their own in most nodes, are
		// not read. A child's bound is tested before its total, as
		// region_enters does (query.c).
		size_t kids = top;
		for (int c = 0; c < NCHILD; ++c) {
			uint32_t ci = n->child[c];
			if (ci == NIL) continue;
			const node *cn = &t->nodes[ci];
			WORK_TESTS(1); // a child's bound (the counting build: tests/test_adversarial.c)
			if (plain ? !sweep_box_hits(w, tmax, &cn->bound, &enter) : !sweep_node(t, w, tmax, cn, &enter)) continue;
			if (cn->total == 0 || (!plain && !(node_cats(t, ci) & w->mask))) continue;
			// What its pop reads first, fetched while the nodes above it on
			// the stack are walked: its entries, and (when a child holds
			// anything: total > count) its children, whose bounds it tests.
			// A prefetch reads nothing: should a callback's deferred change
			// move a pool, a fetch is wasted, no more.
			if (cn->head != NIL) {
				if (plain && t->mirror)
					built_chunks_prefetch(t, cn);
				else
					chunk_prefetch(t, cn->head, head_fill(cn->count));
			}
			if (cn->total > cn->count)
				for (int g = 0; g < NCHILD; ++g)
					if (cn->child[g] != NIL) __builtin_prefetch(&t->nodes[cn->child[g]]);
			assert(top < cap);
			size_t j = top++;
			for (; j > kids && stack[j - 1].enter < enter; --j) stack[j] = stack[j - 1];
			stack[j] = (ray_node){ci, MIRROR_NODE, enter};
		}
	}
done:
	if (stack != local) query_free(t, stack, cap * sizeof *stack);
	return ORT_OK;
}

static ort_result sweep_walk(const tree_t *t, const sweep *w, sweep_fn *fn, void *ctx)
{
	if (t->root == NIL) return ORT_OK;
	bool leaves = t->def.placement == ORT_PLACEMENT_LEAVES;
	if (!leaves && w->mask == ORT_MASK_ALL)
		return sweep_descend(t, w, fn, ctx, true, false);
	return leaves ? sweep_descend(t, w, fn, ctx, false, true) : sweep_descend(t, w, fn, ctx, false, false);
}

/// A sweep of the box (NULL: the ray from origin) along dir.
static void sweep_make(sweep *w, const box_t *box, const float origin[DIM], const float dir[DIM], float max_t)
{
	for (int d = 0; d < DIM; ++d) {
		w->origin[d] = box ? box->min[d] : origin[d];
		w->dir[d] = dir[d];
		w->size[d] = box ? box->max[d] - box->min[d] : 0.0f;
		w->moving.min[d] = w->origin[d];
		w->moving.max[d] = box ? box->max[d] : origin[d];
	}
	w->max_t = max_t;
	w->mask = ORT_MASK_ALL;
#if defined(__SSE2__)
	sweep_lanes(w);
#endif
}

/// A sweep with the caller's callback (ray casts and box casts).
typedef struct sweep_user {
	const sweep *w;
	ORTHANT_NAME(ray_fn) * fn;
	void *ctx;
} sweep_user;

// ---- ray casts ---------------------------------------------------------------------

/// A ray cast is a sweep of a point: each box it touches, tested exactly if
/// the item is a sphere, goes to the caller's callback.
static float ray_cast_visit(void *ctx, const tree_t *t, const entry *e, float te, float tmax)
{
	sweep_user *rc = ctx;
	const sphere_t *sph = t->spheres ? item_sphere(t, e->item) : NULL;
	if (sph && !ray_sphere(rc->w->origin, rc->w->dir, tmax, sph, &te)) return -1.0f;
	return rc->fn(rc->ctx, make_handle(t, e->item), t->items[e->item].user, te);
}

ort_result ORTHANT_NAME(tree_ray_cast)(const tree_t *t, const float origin[DIM], const float dir[DIM], float max_t,
                                       uint64_t mask, ORTHANT_NAME(ray_fn) * fn, void *ctx)
{
	if (!t || !fn || !origin || !dir) return ORT_ERROR_INVALID_ARGUMENT;
	if (point_check(origin) != ORT_OK || point_check(dir) != ORT_OK || isnan(max_t) || max_t < 0.0f)
		return ORT_ERROR_INVALID_BOX;
	sweep w;
	sweep_make(&w, NULL, origin, dir, max_t);
	w.mask = mask;
	sweep_user rc = {&w, fn, ctx};
	ort_result attached = detached_read(t);
	if (attached != ORT_OK) return attached;
	reading_begin(t);
	ort_result r = sweep_walk(t, &w, ray_cast_visit, &rc);
	reading_end(t);
	return r;
}

// ---- box casts -------------------------------------------------------------------

/// The first t in [0, tmax] at which the moving box touches the sphere item,
/// in double: the sphere's centre moves by -t * dir relative to the box, and
/// g(t) = dist2(c - t * dir, box) is convex and piecewise quadratic between
/// the t where a coordinate crosses a face. 0 when g(0) <= r^2; otherwise the
/// smaller root of g(t) = r^2 on the first piece that has one at or after
/// its start (the start itself when rounding puts the root just before it).
static bool sweep_sphere(const sweep *w, float tmax, const sphere_t *s, float *enter)
{
	double r2 = (double)s->r * s->r;
	if (dist2_point_box(s->c, &w->moving) <= r2) {
		*enter = 0.0f;
		return true;
	}
	double cut[2 * DIM + 1];
	int n = 0;
	for (int d = 0; d < DIM; ++d)
		for (int f = 0; f < 2 && w->dir[d] != 0.0f; ++f) {
			double tc = ((double)s->c[d] - (f ? w->moving.max[d] : w->moving.min[d])) / w->dir[d];
			if (tc > 0.0 && tc < tmax) {
				int j = n++;
				for (; j > 0 && cut[j - 1] > tc; --j) cut[j] = cut[j - 1];
				cut[j] = tc;
			}
		}
	cut[n++] = tmax;
	double start = 0.0;
	for (int i = 0; i < n; start = cut[i++]) {
		double end = cut[i];
		if (!(end > start)) continue;
		double mid = isinf(end) ? start + 1.0 : 0.5 * (start + end);
		double a = 0.0, b = 0.0, c = -r2;
		for (int d = 0; d < DIM; ++d) {
			double p = (double)s->c[d] - mid * w->dir[d], al, be;
			if (p < w->moving.min[d]) {
				al = (double)w->moving.min[d] - s->c[d];
				be = w->dir[d];
			} else if (p > w->moving.max[d]) {
				al = (double)s->c[d] - w->moving.max[d];
				be = -(double)w->dir[d];
			} else {
				continue;
			}
			a += be * be;
			b += 2.0 * al * be;
			c += al * al;
		}
		double disc = b * b - 4.0 * a * c;
		if (a == 0.0 || disc < 0.0) continue;
		double root = sqrt(disc), t0 = (-b - root) / (2.0 * a), t1 = (-b + root) / (2.0 * a);
		if (t1 < start) continue;
		if (t0 < start) t0 = start;
		if (t0 <= end) {
			*enter = (float)t0;
			return true;
		}
	}
	return false;
}

/// The exact entry of the sweep into entry e's item: its box's te, or for a
/// sphere item the sphere's (false when the sweep misses the sphere).
static bool sweep_item(const tree_t *t, const sweep *w, const entry *e, float tmax, float *te)
{
	const sphere_t *sph = t->spheres ? item_sphere(t, e->item) : NULL;
	if (!sph) return true;
	bool ray = true;
	for (int d = 0; d < DIM; ++d) ray = ray && w->size[d] == 0.0f;
	return ray ? ray_sphere(w->origin, w->dir, tmax, sph, te) : sweep_sphere(w, tmax, sph, te);
}

static float box_cast_visit(void *ctx, const tree_t *t, const entry *e, float te, float tmax)
{
	sweep_user *bc = ctx;
	if (!sweep_item(t, bc->w, e, tmax, &te)) return -1.0f;
	return bc->fn(bc->ctx, make_handle(t, e->item), t->items[e->item].user, te);
}

ort_result ORTHANT_NAME(tree_box_cast)(const tree_t *t, box_t box, const float delta[DIM], float max_t, uint64_t mask,
                                       ORTHANT_NAME(ray_fn) * fn, void *ctx)
{
	if (!t || !fn) return ORT_ERROR_INVALID_ARGUMENT;
	ort_result r = ray_args_check(box.min, delta, max_t);
	if (r != ORT_OK) return r;
	if (box_check(&box) == ORT_ERROR_INVALID_BOX) return ORT_ERROR_INVALID_BOX;
	sweep w;
	sweep_make(&w, &box, NULL, delta, max_t);
	w.mask = mask;
	sweep_user bc = {&w, fn, ctx};
	if ((r = detached_read(t)) != ORT_OK) return r;
	reading_begin(t);
	r = sweep_walk(t, &w, box_cast_visit, &bc);
	reading_end(t); // may apply changes the callback made, or destroy the tree
	return r;
}

// ---- ray records ----------------------------------------------------------------

/// The record of a ray entering a sphere item at te: the point origin + te *
/// dir, the normal (point - c) / |point - c| in double, zero when the origin
/// is inside or on the sphere (|o - c|^2 <= r^2).
static void sphere_record(const sphere_t *s, const sweep *w, float te, ray_hit_t *h)
{
	double v[DIM], len2 = 0.0;
	for (int d = 0; d < DIM; ++d) {
		h->point[d] = ray_at(w->origin, w->dir, te, d);
		v[d] = (double)h->point[d] - s->c[d];
		len2 += v[d] * v[d];
	}
	bool inside = dist2_points(w->origin, s->c) <= (double)s->r * s->r;
	double len = sqrt(len2);
	for (int d = 0; d < DIM; ++d) h->normal[d] = inside || !(len > 0.0) ? 0.0f : (float)(v[d] / len);
}

/// The record of a ray entering box b at te: the entered face's normal (the
/// axis with the largest slab entry parameter >= 0, the first on a tie) and the
/// point on the box.
static void ray_record(const tree_t *t, const entry *e, const sweep *w, float te, ray_hit_t *h)
{
	h->handle = make_handle(t, e->item);
	h->user_data = t->items[e->item].user;
	h->t = te;
	const sphere_t *sph = t->spheres ? item_sphere(t, e->item) : NULL;
	if (sph) {
		sphere_record(sph, w, te, h);
		return;
	}
	const box_t *b = &e->box;
	int axis = -1;
	float best = 0.0f;
	for (int d = 0; d < DIM; ++d) {
		if (w->dir[d] == 0.0f) continue;
		float a = (b->min[d] - w->origin[d]) / w->dir[d], c = (b->max[d] - w->origin[d]) / w->dir[d];
		float in = a < c ? a : c;
		if (in >= 0.0f && (axis < 0 || in > best)) {
			axis = d;
			best = in;
		}
	}
	for (int d = 0; d < DIM; ++d) {
		h->point[d] = ray_at(w->origin, w->dir, te, d);
		h->normal[d] = 0.0f;
	}
	clamp_point(h->point, b, h->point);
	if (axis >= 0) {
		h->point[axis] = w->dir[axis] > 0.0f ? b->min[axis] : b->max[axis];
		h->normal[axis] = w->dir[axis] > 0.0f ? -1.0f : 1.0f;
	}
}

/// Sorted order of hits: nearer first, then lower handle id.
static inline bool hit_before(float ta, uint32_t ida, float tb, uint32_t idb)
{
	return ta < tb || (ta == tb && ida < idb);
}

typedef struct ray_first_ctx {
	const sweep *w;
	const entry *best;
	float t;
} ray_first_ctx;

static float ray_first_visit(void *ctx, const tree_t *t, const entry *e, float te, float tmax)
{
	ray_first_ctx *rf = ctx;
	if (!sweep_item(t, rf->w, e, tmax, &te)) return -1.0f;
	if (!rf->best || hit_before(te, e->item, rf->t, rf->best->item)) {
		rf->best = e;
		rf->t = te;
	}
	// Keep only hits at least as near, since a tie may have a lower id; 0 would
	// stop the walk, so a nearest hit at 0 clips to the smallest float instead.
	return rf->t > 0.0f ? rf->t : FLT_TRUE_MIN;
}

bool ORTHANT_NAME(tree_ray_first)(const tree_t *t, const float origin[DIM], const float dir[DIM], float max_t,
                                  uint64_t mask, ray_hit_t *out)
{
	if (!t || !out || ray_args_check(origin, dir, max_t) != ORT_OK) return false;
	sweep w;
	sweep_make(&w, NULL, origin, dir, max_t);
	w.mask = mask;
	ray_first_ctx rf = {&w, NULL, 0.0f};
	if (detached_read(t) != ORT_OK) return false;
	if (sweep_walk(t, &w, ray_first_visit, &rf) != ORT_OK || !rf.best) return false;
	ray_record(t, rf.best, &w, rf.t, out);
	return true;
}

/// The cap best hits so far, a max-heap on (t, id) in out while searching.
typedef struct ray_all_ctx {
	const sweep *w;
	ray_hit_t *out;
	int cap, n;
	int64_t count;
} ray_all_ctx;

static inline bool hit_less(const ray_hit_t *a, const ray_hit_t *b)
{
	return hit_before(a->t, a->handle.id, b->t, b->handle.id);
}

/// Restore the max-heap below i in out[0..n).
static void hit_sift_down(ray_hit_t *out, int n, int i)
{
	ray_hit_t v = out[i];
	for (int c; (c = 2 * i + 1) < n; i = c) {
		if (c + 1 < n && hit_less(&out[c], &out[c + 1])) c++;
		if (!hit_less(&v, &out[c])) break;
		out[i] = out[c];
	}
	out[i] = v;
}

static float ray_all_visit(void *ctx, const tree_t *t, const entry *e, float te, float tmax)
{
	ray_all_ctx *ra = ctx;
	if (!sweep_item(t, ra->w, e, tmax, &te)) return -1.0f;
	ra->count++;
	if (ra->n == ra->cap && (ra->n == 0 || !hit_before(te, e->item + 1, ra->out[0].t, ra->out[0].handle.id)))
		return INFINITY;
	ray_hit_t h;
	ray_record(t, e, ra->w, te, &h);
	if (ra->n < ra->cap) {
		int i = ra->n++;
		for (int p; i > 0 && hit_less(&ra->out[p = (i - 1) / 2], &h); i = p) ra->out[i] = ra->out[p];
		ra->out[i] = h;
	} else {
		ra->out[0] = h;
		hit_sift_down(ra->out, ra->n, 0);
	}
	return INFINITY;
}

ort_result ORTHANT_NAME(tree_ray_all)(const tree_t *t, const float origin[DIM], const float dir[DIM], float max_t,
                                      uint64_t mask, ray_hit_t *out, int cap, int *count)
{
	if (count) *count = 0;
	if (!t || !count || cap < 0 || (cap > 0 && !out)) return ORT_ERROR_INVALID_ARGUMENT;
	ort_result r = ray_args_check(origin, dir, max_t);
	if (r != ORT_OK) return r;
	sweep w;
	sweep_make(&w, NULL, origin, dir, max_t);
	w.mask = mask;
	ray_all_ctx ra = {&w, out, cap, 0, 0};
	if ((r = detached_read(t)) != ORT_OK) return r;
	r = sweep_walk(t, &w, ray_all_visit, &ra);
	if (r != ORT_OK) return r;
	// Heap to ascending order.
	for (int m = ra.n; m > 1; --m) {
		ray_hit_t x = out[0];
		out[0] = out[m - 1];
		out[m - 1] = x;
		hit_sift_down(out, m - 1, 0);
	}
	*count = ra.count > INT32_MAX ? INT32_MAX : (int)ra.count;
	return ORT_OK;
}

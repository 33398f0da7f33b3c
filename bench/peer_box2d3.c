// peer_box2d3.c: Box2D v3's broad phase, driven per frame the way its world
// does it (src/broad_phase.c, src/solver.c), on the public b2DynamicTree API.
// C, in a translation unit of its own: Box2D v3 is C and shares names such as
// b2AABB with the Box2D 2.4 peer (C++), which is linked into the same program.
//
// What it mirrors:
//  - two trees kept apart: static boxes (frame->mobile[i] == 0) in a static
//    tree, grown by the speculative distance (0.02) as b2CreateShapeProxy
//    grows them, the others in a dynamic tree with fat boxes (margin 0.1, as
//    b2_aabbMargin);
//  - a mover whose box leaves its fat box gets a new fat box: EnlargeProxy and
//    the move buffer (a moved flag + a move array), as b2FinalizeBodies does;
//    one that stays inside its fat box costs nothing more;
//  - update pairs: each buffered proxy queries the dynamic tree and the static
//    tree with its fat box; a pair of two moved proxies is taken from the
//    smaller key's side only; new pairs go into the persistent pair set
//    (b2UpdateBroadPhasePairs); then the dynamic tree is refitted with
//    Rebuild(false) (b2UpdateTreesTask) and the move buffer cleared;
//  - the contacts: each frame every contact is visited (b2Collide): if the fat
//    boxes no longer overlap it is destroyed, else the exact boxes are tested
//    (the narrow phase; here the box overlap) and reported when they touch.
// Box2D never pairs two static proxies; the benchmark wants every pair, so the
// static-static pairs are found once at creation and reported from a dense
// array each frame.
// Static scenes (S5, every box static) build the static tree by insertion and
// then Rebuild(true), as b2World_RebuildStaticTree does.
#include <box2d/collision.h>
#include <box2d/math_functions.h>

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "peer_pairset.h"

#define B3_MARGIN 0.1f          // b2_aabbMargin: fat boxes of moving shapes
#define B3_STATIC_MARGIN 0.02f  // B2_SPECULATIVE_DISTANCE: what static shapes get
#define B3_MASK (~(uint64_t)0)

enum { B3_STATIC = 0, B3_DYNAMIC = 1 };

typedef struct b3_state {
	b2DynamicTree tree[2];
	int n;
	int *proxy;           // per box: proxy id in its tree
	unsigned char *kind;  // per box: B3_STATIC or B3_DYNAMIC
	unsigned char *moved; // per box: in the move buffer
	b2AABB *fat;          // per box: the box its proxy holds
	int *move;            // the move buffer
	int move_count;
	bench_pairset pairs;  // contacts that involve a dynamic proxy
	uint64_t *fixed;      // static-static pairs, found once
	size_t fixed_count;
} b3_state;

static b2AABB b3_aabb(const ort3_box *b)
{
	b2AABB a = {{b->min[0], b->min[1]}, {b->max[0], b->max[1]}};
	return a;
}

static b2AABB b3_fatten(b2AABB a, float margin)
{
	a.lowerBound.x -= margin;
	a.lowerBound.y -= margin;
	a.upperBound.x += margin;
	a.upperBound.y += margin;
	return a;
}

static void b3_buffer_move(b3_state *s, int id)
{
	if (s->moved[id]) return;
	s->moved[id] = 1;
	s->move[s->move_count++] = id;
}

typedef struct b3_pair_query {
	b3_state *s;
	int self;
	int tree;
} b3_pair_query;

static bool b3_pair_cb(int proxy_id, uint64_t user, void *ctx)
{
	(void)proxy_id;
	b3_pair_query *q = ctx;
	int other = (int)user;
	if (other == q->self) return true;
	// Both moved: the pair is taken from the smaller side only.
	if (q->tree == B3_DYNAMIC && other < q->self && q->s->moved[other]) return true;
	bench_pairset_add(&q->s->pairs, bench_pair_key((uint32_t)q->self, (uint32_t)other));
	return true;
}

static void b3_update_pairs(b3_state *s)
{
	for (int k = 0; k < s->move_count; ++k) {
		int id = s->move[k];
		b3_pair_query q = {s, id, B3_DYNAMIC};
		b2DynamicTree_Query(&s->tree[B3_DYNAMIC], s->fat[id], B3_MASK, b3_pair_cb, &q);
		q.tree = B3_STATIC;
		b2DynamicTree_Query(&s->tree[B3_STATIC], s->fat[id], B3_MASK, b3_pair_cb, &q);
	}
	b2DynamicTree_Rebuild(&s->tree[B3_DYNAMIC], false);
	for (int k = 0; k < s->move_count; ++k) s->moved[s->move[k]] = 0;
	s->move_count = 0;
}

typedef struct b3_fixed_query {
	b3_state *s;
	const ort3_box *boxes;
	int self;
	size_t cap;
} b3_fixed_query;

static bool b3_fixed_cb(int proxy_id, uint64_t user, void *ctx)
{
	(void)proxy_id;
	b3_fixed_query *q = ctx;
	int other = (int)user;
	if (other <= q->self || !bench_overlap(&q->boxes[q->self], &q->boxes[other])) return true;
	b3_state *s = q->s;
	if (s->fixed_count == q->cap) {
		q->cap = q->cap ? 2 * q->cap : 1024;
		s->fixed = realloc(s->fixed, sizeof *s->fixed * q->cap);
		if (!s->fixed) abort();
	}
	s->fixed[s->fixed_count++] = bench_pair_key((uint32_t)q->self, (uint32_t)other);
	return true;
}

static void *b3_create(const bench_frame *f)
{
	b3_state *s = calloc(1, sizeof *s);
	int n = f->count, statics = 0;
	s->n = n;
	s->proxy = malloc(sizeof *s->proxy * (size_t)n);
	s->kind = malloc((size_t)n);
	s->moved = calloc((size_t)n, 1);
	s->fat = malloc(sizeof *s->fat * (size_t)n);
	s->move = malloc(sizeof *s->move * (size_t)n);
	for (int i = 0; i < n; ++i) {
		s->kind[i] = f->mobile && !f->mobile[i] ? B3_STATIC : B3_DYNAMIC;
		statics += s->kind[i] == B3_STATIC;
	}
	s->tree[B3_STATIC] = b2DynamicTree_Create(statics > 16 ? statics : 16);
	s->tree[B3_DYNAMIC] = b2DynamicTree_Create(n - statics > 16 ? n - statics : 16);
	bench_pairset_init(&s->pairs);
	for (int i = 0; i < n; ++i) {
		b2AABB a = b3_aabb(&f->boxes[i]);
		a = b3_fatten(a, s->kind[i] == B3_DYNAMIC ? B3_MARGIN : B3_STATIC_MARGIN);
		s->fat[i] = a;
		s->proxy[i] = b2DynamicTree_CreateProxy(&s->tree[s->kind[i]], a, 1, (uint64_t)i);
		if (s->kind[i] == B3_DYNAMIC) b3_buffer_move(s, i);
	}
	if (statics) b2DynamicTree_Rebuild(&s->tree[B3_STATIC], true);
	if (statics && statics < n) { // a world with both: the static pairs, once
		b3_fixed_query q = {s, f->boxes, 0, 0};
		for (int i = 0; i < n; ++i)
			if (s->kind[i] == B3_STATIC) {
				q.self = i;
				b2DynamicTree_Query(&s->tree[B3_STATIC], s->fat[i], B3_MASK, b3_fixed_cb, &q);
			}
	}
	if (statics < n) b3_update_pairs(s); // the first step creates the initial contacts
	return s;
}

static void b3_update(void *st, const bench_frame *f)
{
	b3_state *s = st;
	for (int k = 0; k < f->moved_count; ++k) {
		int i = f->moved[k];
		b2AABB a = b3_aabb(&f->boxes[i]);
		if (b2AABB_Contains(s->fat[i], a)) continue;
		s->fat[i] = b3_fatten(a, B3_MARGIN);
		b2DynamicTree_EnlargeProxy(&s->tree[B3_DYNAMIC], s->proxy[i], s->fat[i]);
		b3_buffer_move(s, i);
	}
	b3_update_pairs(s);
}

static void b3_pairs(void *st, const bench_frame *f, bench_sink *sink)
{
	b3_state *s = st;
	bench_pairset *ps = &s->pairs;
	size_t w = 0;
	for (size_t k = 0; k < ps->count; ++k) {
		uint64_t key = ps->keys[k];
		uint32_t a = (uint32_t)key, b = (uint32_t)(key >> 32);
		if (!b2AABB_Overlaps(s->fat[a], s->fat[b])) {
			bench_pairset_forget(ps, key);
			continue;
		}
		ps->keys[w++] = key;
		if (bench_overlap(&f->boxes[a], &f->boxes[b])) bench_sink_pair(sink, a, b);
	}
	ps->count = w;
	bench_sink_keys(sink, s->fixed, s->fixed_count);
}

static void b3_destroy(void *st)
{
	b3_state *s = st;
	b2DynamicTree_Destroy(&s->tree[0]);
	b2DynamicTree_Destroy(&s->tree[1]);
	bench_pairset_free(&s->pairs);
	free(s->proxy);
	free(s->kind);
	free(s->moved);
	free(s->fat);
	free(s->move);
	free(s->fixed);
	free(s);
}

static size_t b3_bytes(void *st)
{
	b3_state *s = st;
	size_t per_box = sizeof *s->proxy + 2 + sizeof *s->fat + sizeof *s->move;
	return (size_t)b2DynamicTree_GetByteCount(&s->tree[0]) + (size_t)b2DynamicTree_GetByteCount(&s->tree[1]) +
	       per_box * (size_t)s->n;
}

typedef struct b3_box_query {
	const ort3_box *boxes;
	const ort3_box *q;
	bench_sink *sink;
} b3_box_query;

static bool b3_box_cb(int proxy_id, uint64_t user, void *ctx)
{
	(void)proxy_id;
	b3_box_query *q = ctx;
	if (bench_overlap(q->q, &q->boxes[user])) bench_sink_id(q->sink, (uint32_t)user);
	return true;
}

static void b3_query_boxes(void *st, const bench_frame *f, bench_queries *q)
{
	b3_state *s = st;
	for (int k = 0; k < q->count; ++k) {
		b3_box_query bq = {f->boxes, &q->boxes[k], &q->sinks[k]};
		b2AABB a = b3_aabb(&q->boxes[k]);
		for (int t = 0; t < 2; ++t)
			if (b2DynamicTree_GetProxyCount(&s->tree[t])) b2DynamicTree_Query(&s->tree[t], a, B3_MASK, b3_box_cb, &bq);
	}
}

typedef struct b3_ray_query {
	const ort3_box *boxes;
	const bench_ray *ray;
	bench_sink *sink;
	int first;
	float best;
} b3_ray_query;

static float b3_ray_cb(const b2RayCastInput *in, int proxy_id, uint64_t user, void *ctx)
{
	(void)proxy_id;
	b3_ray_query *q = ctx;
	float t = bench_ray_box(q->ray, &q->boxes[user], 2);
	if (t < 0.0f) return in->maxFraction; // a fat or bounding hit only: go on
	if (!q->first) {
		bench_sink_id(q->sink, (uint32_t)user);
		return in->maxFraction;
	}
	if (t < q->best) q->best = t;
	return t / q->ray->max_t; // clip: only nearer hits matter now
}

static void b3_rays(b3_state *s, const bench_frame *f, bench_queries *q, int first)
{
	for (int k = 0; k < q->count; ++k) {
		const bench_ray *r = &q->rays[k];
		b2RayCastInput in = {{r->origin[0], r->origin[1]}, {r->dir[0] * r->max_t, r->dir[1] * r->max_t}, 1.0f};
		b3_ray_query rq = {f->boxes, r, &q->sinks[k], first, INFINITY};
		for (int t = 0; t < 2; ++t) {
			if (!b2DynamicTree_GetProxyCount(&s->tree[t])) continue;
			if (first && isfinite(rq.best)) in.maxFraction = rq.best / r->max_t;
			b2DynamicTree_RayCast(&s->tree[t], &in, B3_MASK, b3_ray_cb, &rq);
		}
		if (first) q->first_t[k] = rq.best;
	}
}

static void b3_ray_all(void *st, const bench_frame *f, bench_queries *q) { b3_rays(st, f, q, 0); }
static void b3_ray_first(void *st, const bench_frame *f, bench_queries *q) { b3_rays(st, f, q, 1); }

int bench_box2d3_register(bench_impl *list, int max)
{
	if (max < 1) return 0;
	list[0] = (bench_impl){.name = "box2d3-broadphase", .family = "peer", .dims = BENCH_DIM2, .create = b3_create,
	                       .update = b3_update, .pairs = b3_pairs, .destroy = b3_destroy, .bytes = b3_bytes,
	                       .query_boxes = b3_query_boxes, .ray_all = b3_ray_all, .ray_first = b3_ray_first};
	return 1;
}

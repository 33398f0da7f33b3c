// peer_box2d.cpp: Box2D 2.4 as a user would drive it.
//  - box2d-tree: b2DynamicTree; movers call MoveProxy (fat boxes, so most moves
//    touch nothing); all pairs = one Query per proxy with its exact box, keeping
//    j > i and filtering the fat candidates exactly.
//  - box2d-broadphase: b2BroadPhase + a persistent pair set, the way
//    b2ContactManager uses it: UpdatePairs adds the new fat pairs of proxies that
//    left their fat box; each frame pairs whose fat boxes separated are dropped
//    and the rest are filtered exactly.
#include <box2d/b2_broad_phase.h>
#include <box2d/b2_dynamic_tree.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <unordered_set>
#include <vector>

#include "bench.h"

namespace {

b2AABB to_aabb(const ort3_box &b)
{
	b2AABB a;
	a.lowerBound.Set(b.min[0], b.min[1]);
	a.upperBound.Set(b.max[0], b.max[1]);
	return a;
}

b2Vec2 displacement(const ort3_box &from, const ort3_box &to)
{
	return b2Vec2(0.5f * (to.min[0] + to.max[0] - from.min[0] - from.max[0]),
	              0.5f * (to.min[1] + to.max[1] - from.min[1] - from.max[1]));
}

// The frame's boxes into a b2DynamicTree or a b2BroadPhase (same proxy calls),
// proxy[i] for box i, boxes = what the index was told.
template <class Index>
void create_proxies(Index &index, std::vector<int32> &proxy, std::vector<ort3_box> &boxes, const bench_frame *f)
{
	proxy.resize((size_t)f->count);
	boxes.assign(f->boxes, f->boxes + f->count);
	for (int i = 0; i < f->count; ++i) proxy[(size_t)i] = index.CreateProxy(to_aabb(f->boxes[i]), (void *)(uintptr_t)i);
}

template <class Index>
void move_proxies(Index &index, const std::vector<int32> &proxy, std::vector<ort3_box> &boxes, const bench_frame *f)
{
	for (int k = 0; k < f->moved_count; ++k) {
		int i = f->moved[k];
		index.MoveProxy(proxy[(size_t)i], to_aabb(f->boxes[i]), displacement(boxes[(size_t)i], f->boxes[i]));
		boxes[(size_t)i] = f->boxes[i];
	}
}

struct TreeState {
	b2DynamicTree tree;
	std::vector<int32> proxy;
	std::vector<ort3_box> boxes; // what the tree was last told
};

struct PairQuery {
	const b2DynamicTree *tree;
	const ort3_box *boxes;
	uint32_t self;
	bench_sink *sink;
	bool QueryCallback(int32 id)
	{
		uint32_t j = (uint32_t)(uintptr_t)tree->GetUserData(id);
		if (j > self && bench_overlap(&boxes[self], &boxes[j])) bench_sink_pair(sink, self, j);
		return true;
	}
};

void *tree_create(const bench_frame *f)
{
	TreeState *s = new TreeState;
	create_proxies(s->tree, s->proxy, s->boxes, f);
	return s;
}

void tree_update(void *st, const bench_frame *f)
{
	TreeState *s = static_cast<TreeState *>(st);
	move_proxies(s->tree, s->proxy, s->boxes, f);
}

void tree_pairs(void *st, const bench_frame *f, bench_sink *sink)
{
	TreeState *s = static_cast<TreeState *>(st);
	PairQuery q{&s->tree, f->boxes, 0, sink};
	for (int i = 0; i < f->count; ++i) {
		q.self = (uint32_t)i;
		s->tree.Query(&q, to_aabb(f->boxes[i]));
	}
}

void tree_destroy(void *st) { delete static_cast<TreeState *>(st); }

struct BoxQuery {
	const b2DynamicTree *tree;
	const ort3_box *boxes;
	const ort3_box *q;
	bench_sink *sink;
	bool QueryCallback(int32 id)
	{
		uint32_t j = (uint32_t)(uintptr_t)tree->GetUserData(id);
		if (bench_overlap(q, &boxes[j])) bench_sink_id(sink, j);
		return true;
	}
};

void tree_query_boxes(void *st, const bench_frame *f, bench_queries *q)
{
	TreeState *s = static_cast<TreeState *>(st);
	for (int k = 0; k < q->count; ++k) {
		BoxQuery bq{&s->tree, f->boxes, &q->boxes[k], &q->sinks[k]};
		s->tree.Query(&bq, to_aabb(q->boxes[k]));
	}
}

struct RayQuery {
	const b2DynamicTree *tree;
	const ort3_box *boxes;
	const bench_ray *ray;
	bool first;
	bench_sink *sink;
	float best;
	float RayCastCallback(const b2RayCastInput &in, int32 id)
	{
		uint32_t j = (uint32_t)(uintptr_t)tree->GetUserData(id);
		float t = bench_ray_box(ray, &boxes[j], 2);
		if (t < 0.0f) return in.maxFraction;
		if (!first) {
			bench_sink_id(sink, j);
			return in.maxFraction;
		}
		if (t < best) best = t;
		return t / ray->max_t; // clip: only nearer hits matter now (0 stops: nothing is nearer)
	}
};

void tree_rays(TreeState *s, const bench_frame *f, bench_queries *q, bool first)
{
	for (int k = 0; k < q->count; ++k) {
		const bench_ray *r = &q->rays[k];
		b2RayCastInput in;
		in.p1.Set(r->origin[0], r->origin[1]);
		in.p2.Set(r->origin[0] + r->dir[0] * r->max_t, r->origin[1] + r->dir[1] * r->max_t);
		in.maxFraction = 1.0f;
		RayQuery rq{&s->tree, f->boxes, r, first, &q->sinks[k], INFINITY};
		s->tree.RayCast(&rq, in);
		if (first) q->first_t[k] = rq.best;
	}
}

void tree_ray_all(void *st, const bench_frame *f, bench_queries *q) { tree_rays(static_cast<TreeState *>(st), f, q, false); }
void tree_ray_first(void *st, const bench_frame *f, bench_queries *q) { tree_rays(static_cast<TreeState *>(st), f, q, true); }

// ---------------------------------------------------------------- b2BroadPhase

struct BroadState {
	b2BroadPhase bp;
	std::vector<int32> proxy;
	std::vector<ort3_box> boxes;
	std::vector<uint64_t> pairs;       // persistent fat pairs (the contact list)
	std::unordered_set<uint64_t> set;  // for dropping duplicates, like b2ContactManager's edge check
	void AddPair(void *a, void *b)
	{
		uint64_t i = (uint64_t)(uintptr_t)a, j = (uint64_t)(uintptr_t)b;
		if (i > j) std::swap(i, j);
		uint64_t key = j << 32 | i;
		if (set.insert(key).second) pairs.push_back(key);
	}
};

void *broad_create(const bench_frame *f)
{
	BroadState *s = new BroadState;
	s->set.reserve((size_t)f->count * 4);
	create_proxies(s->bp, s->proxy, s->boxes, f);
	s->bp.UpdatePairs(s); // new proxies are buffered: this finds every initial pair
	return s;
}

void broad_update(void *st, const bench_frame *f)
{
	BroadState *s = static_cast<BroadState *>(st);
	move_proxies(s->bp, s->proxy, s->boxes, f);
	s->bp.UpdatePairs(s);
}

void broad_pairs(void *st, const bench_frame *f, bench_sink *sink)
{
	BroadState *s = static_cast<BroadState *>(st);
	size_t w = 0;
	for (size_t k = 0; k < s->pairs.size(); ++k) {
		uint64_t key = s->pairs[k];
		uint32_t i = (uint32_t)key, j = (uint32_t)(key >> 32);
		if (!s->bp.TestOverlap(s->proxy[i], s->proxy[j])) {
			s->set.erase(key);
			continue;
		}
		s->pairs[w++] = key;
		if (bench_overlap(&f->boxes[i], &f->boxes[j])) bench_sink_pair(sink, i, j);
	}
	s->pairs.resize(w);
}

void broad_destroy(void *st) { delete static_cast<BroadState *>(st); }

} // namespace

extern "C" int bench_box2d_register(bench_impl *list, int max)
{
	int n = 0;
	for (int broad = 0; broad < 2 && n < max; ++broad) {
		bench_impl im = {};
		im.name = broad ? "box2d-broadphase" : "box2d-tree";
		im.family = "peer";
		im.dims = BENCH_DIM2;
		im.create = broad ? broad_create : tree_create;
		im.update = broad ? broad_update : tree_update;
		im.pairs = broad ? broad_pairs : tree_pairs;
		im.destroy = broad ? broad_destroy : tree_destroy;
		if (!broad) {
			im.query_boxes = tree_query_boxes;
			im.ray_all = tree_ray_all;
			im.ray_first = tree_ray_first;
		}
		list[n++] = im;
	}
	return n;
}

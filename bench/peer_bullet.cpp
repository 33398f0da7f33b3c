// peer_bullet.cpp: Bullet's btDbvtBroadphase (two dynamic AABB trees with fat
// leaves and a hashed pair cache), driven as btCollisionWorld drives it:
// setAabb for movers, calculateOverlappingPairs once per frame, then the pair
// cache is filtered exactly (it holds fat pairs, and cleans stale ones lazily).
// In 2D the proxies get z in [-1, 1]: Bullet is 3D, and flat boxes would defeat
// its ray slab test.
#include <btBulletCollisionCommon.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "bench.h"

namespace {

struct BulletState {
	btDbvtBroadphase bp;
	std::vector<btBroadphaseProxy *> proxy;
	int dim = 2;
};

void to_bt(const ort3_box &b, int dim, btVector3 &lo, btVector3 &hi)
{
	lo.setValue(b.min[0], b.min[1], dim == 3 ? b.min[2] : -1.0f);
	hi.setValue(b.max[0], b.max[1], dim == 3 ? b.max[2] : 1.0f);
}

void *bt_create(const bench_frame *f)
{
	BulletState *s = new BulletState;
	s->dim = f->dim;
	s->proxy.resize((size_t)f->count);
	for (int i = 0; i < f->count; ++i) {
		btVector3 lo, hi;
		to_bt(f->boxes[i], f->dim, lo, hi);
		s->proxy[(size_t)i] = s->bp.createProxy(lo, hi, BOX_SHAPE_PROXYTYPE, (void *)(uintptr_t)i, 1, -1, nullptr);
	}
	s->bp.calculateOverlappingPairs(nullptr);
	return s;
}

void bt_update(void *st, const bench_frame *f)
{
	BulletState *s = static_cast<BulletState *>(st);
	for (int k = 0; k < f->moved_count; ++k) {
		int i = f->moved[k];
		btVector3 lo, hi;
		to_bt(f->boxes[i], f->dim, lo, hi);
		s->bp.setAabb(s->proxy[(size_t)i], lo, hi, nullptr);
	}
	s->bp.calculateOverlappingPairs(nullptr);
}

void bt_pairs(void *st, const bench_frame *f, bench_sink *sink)
{
	BulletState *s = static_cast<BulletState *>(st);
	btBroadphasePairArray &arr = s->bp.getOverlappingPairCache()->getOverlappingPairArray();
	for (int k = 0; k < arr.size(); ++k) {
		uint32_t i = (uint32_t)(uintptr_t)arr[k].m_pProxy0->m_clientObject;
		uint32_t j = (uint32_t)(uintptr_t)arr[k].m_pProxy1->m_clientObject;
		if (bench_overlap(&f->boxes[i], &f->boxes[j])) bench_sink_pair(sink, i, j);
	}
}

// destroyProxy scans the whole pair cache for each proxy (O(proxies x pairs):
// minutes at 1M boxes), so the broadphase goes first and the proxies, which it
// allocated with btAlignedAlloc and never frees itself, after it.
void bt_destroy(void *st)
{
	BulletState *s = static_cast<BulletState *>(st);
	std::vector<btBroadphaseProxy *> proxies;
	proxies.swap(s->proxy);
	delete s;
	for (btBroadphaseProxy *p : proxies) btAlignedFree(p);
}

struct BoxCallback : btBroadphaseAabbCallback {
	const ort3_box *boxes = nullptr;
	const ort3_box *q = nullptr;
	bench_sink *sink = nullptr;
	bool process(const btBroadphaseProxy *p) override
	{
		uint32_t j = (uint32_t)(uintptr_t)p->m_clientObject;
		if (bench_overlap(q, &boxes[j])) bench_sink_id(sink, j);
		return true;
	}
};

void bt_query_boxes(void *st, const bench_frame *f, bench_queries *q)
{
	BulletState *s = static_cast<BulletState *>(st);
	BoxCallback cb;
	cb.boxes = f->boxes;
	for (int k = 0; k < q->count; ++k) {
		btVector3 lo, hi;
		to_bt(q->boxes[k], f->dim, lo, hi);
		cb.q = &q->boxes[k];
		cb.sink = &q->sinks[k];
		s->bp.aabbTest(lo, hi, cb);
	}
}

struct RayCallback : btBroadphaseRayCallback {
	const ort3_box *boxes = nullptr;
	const bench_ray *ray = nullptr;
	int dim = 2;
	bool first = false;
	bench_sink *sink = nullptr;
	float best = INFINITY;
	bool process(const btBroadphaseProxy *p) override
	{
		uint32_t j = (uint32_t)(uintptr_t)p->m_clientObject;
		float t = bench_ray_box(ray, &boxes[j], dim);
		if (t < 0.0f) return true;
		if (first) {
			if (t < best) best = t;
		} else {
			bench_sink_id(sink, j);
		}
		return true;
	}
};

// Bullet's broadphase ray test cannot clip the ray while it runs (the limit is
// passed by value into the tree walk), so the nearest hit is the minimum of all.
void bt_rays(BulletState *s, const bench_frame *f, bench_queries *q, bool first)
{
	RayCallback cb;
	cb.boxes = f->boxes;
	cb.dim = f->dim;
	cb.first = first;
	for (int k = 0; k < q->count; ++k) {
		const bench_ray *r = &q->rays[k];
		btVector3 from(r->origin[0], r->origin[1], r->origin[2]);
		btVector3 dir(r->dir[0], r->dir[1], r->dir[2]);
		btVector3 to = from + dir * r->max_t;
		for (int d = 0; d < 3; ++d) {
			cb.m_rayDirectionInverse[d] = dir[d] == 0.0f ? BT_LARGE_FLOAT : 1.0f / dir[d];
			cb.m_signs[d] = cb.m_rayDirectionInverse[d] < 0.0f;
		}
		cb.m_lambda_max = dir.dot(to - from);
		cb.ray = r;
		cb.sink = &q->sinks[k];
		cb.best = INFINITY;
		s->bp.rayTest(from, to, cb);
		if (first) q->first_t[k] = cb.best;
	}
}

void bt_ray_all(void *st, const bench_frame *f, bench_queries *q) { bt_rays(static_cast<BulletState *>(st), f, q, false); }
void bt_ray_first(void *st, const bench_frame *f, bench_queries *q) { bt_rays(static_cast<BulletState *>(st), f, q, true); }

} // namespace

extern "C" int bench_bullet_register(bench_impl *list, int max)
{
	if (max < 1) return 0;
	bench_impl im = {};
	im.name = "bullet-dbvt";
	im.family = "peer";
	im.dims = BENCH_DIM2 | BENCH_DIM3;
	im.create = bt_create;
	im.update = bt_update;
	im.pairs = bt_pairs;
	im.destroy = bt_destroy;
	im.query_boxes = bt_query_boxes;
	im.ray_all = bt_ray_all;
	im.ray_first = bt_ray_first;
	list[0] = im;
	return 1;
}

// peer_jolt.cpp: Jolt Physics' broad phase (BroadPhaseQuadTree), driven per
// frame the way PhysicsSystem::Update drives it, on one thread.
//
// What it mirrors (Jolt/Physics/PhysicsSystem.cpp, BroadPhaseQuadTree.cpp):
//  - a PhysicsSystem owns the bodies and its BroadPhaseQuadTree; each box is a
//    body with a BoxShape (convex radius 0, so its bounds are the box; 2D boxes
//    get a z extent shared by all, so 3D overlap is 2D overlap);
//  - layers as in Jolt's own examples: boxes that never move
//    (frame->mobile[i] == 0) are static bodies in a NON_MOVING object and
//    broad-phase layer, the others dynamic bodies in MOVING; NON_MOVING pairs
//    only with MOVING;
//  - bodies are added in one batch (AddBodiesPrepare / AddBodiesFinalize); a
//    world with static bodies then gets OptimizeBroadPhase, as a loader does;
//  - each frame: FrameSync; the bodies that moved are the active ones (bodies
//    that stopped are deactivated, as sleeping would); their new positions
//    (SetPositionAndRotationInternal recomputes the bounds) go to
//    NotifyBodiesAABBChanged in one batch, as the integration job does; then
//    LockModifications / UpdatePrepare / UpdateFinalize / UnlockModifications;
//    then FindCollidingPairs for the active bodies with the default speculative
//    contact distance (0.02);
//  - the contact cache: pairs of bodies that did not move persist; pairs of a
//    body that moved are dropped and re-found by FindCollidingPairs when the
//    boxes still touch (the narrow phase: here the exact box overlap), as the
//    contact constraint manager keeps only the pairs found this step.
// Jolt never pairs two static bodies; the benchmark wants every pair, so the
// static-static pairs are found once at creation (CollideAABox) and reported
// from a dense array each frame.
#include <Jolt/Jolt.h>

#include <Jolt/Core/Factory.h>
#include <Jolt/Core/Memory.h>
#include <Jolt/Physics/Body/BodyCreationSettings.h>
#include <Jolt/Physics/Collision/BroadPhase/BroadPhase.h>
#include <Jolt/Physics/Collision/CastResult.h>
#include <Jolt/Physics/Collision/RayCast.h>
#include <Jolt/Physics/Collision/Shape/BoxShape.h>
#include <Jolt/Physics/PhysicsSystem.h>
#include <Jolt/RegisterTypes.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench.h"
#include "peer_pairset.h"

namespace {

namespace Layers {
constexpr JPH::ObjectLayer NON_MOVING = 0;
constexpr JPH::ObjectLayer MOVING = 1;
constexpr JPH::uint COUNT = 2;
} // namespace Layers

class BPLayers final : public JPH::BroadPhaseLayerInterface {
public:
	JPH::uint GetNumBroadPhaseLayers() const override { return Layers::COUNT; }
	JPH::BroadPhaseLayer GetBroadPhaseLayer(JPH::ObjectLayer layer) const override { return JPH::BroadPhaseLayer((JPH::uint8)layer); }
#if defined(JPH_EXTERNAL_PROFILE) || defined(JPH_PROFILE_ENABLED)
	const char *GetBroadPhaseLayerName(JPH::BroadPhaseLayer layer) const override
	{
		return (JPH::BroadPhaseLayer::Type)layer == Layers::MOVING ? "MOVING" : "NON_MOVING";
	}
#endif
};

class ObjectVsBP final : public JPH::ObjectVsBroadPhaseLayerFilter {
public:
	bool ShouldCollide(JPH::ObjectLayer a, JPH::BroadPhaseLayer b) const override
	{
		return a == Layers::MOVING || (JPH::BroadPhaseLayer::Type)b == Layers::MOVING;
	}
};

class ObjectPair final : public JPH::ObjectLayerPairFilter {
public:
	bool ShouldCollide(JPH::ObjectLayer a, JPH::ObjectLayer b) const override
	{
		return a == Layers::MOVING || b == Layers::MOVING;
	}
};

constexpr float SPECULATIVE = 0.02f; // PhysicsSettings::mSpeculativeContactDistance
constexpr float Z_HALF = 0.5f;       // the shared z extent of 2D boxes

void jolt_once()
{
	static bool done = false;
	if (done) return;
	done = true;
	JPH::RegisterDefaultAllocator();
	JPH::Factory::sInstance = new JPH::Factory();
	JPH::RegisterTypes();
}

struct State {
	int dim = 2;
	BPLayers bp_layers;
	ObjectVsBP object_vs_bp;
	ObjectPair object_pair;
	JPH::PhysicsSystem system;
	JPH::BroadPhase *bp = nullptr;
	std::vector<JPH::Body *> body;       // per box
	std::vector<JPH::BodyID> active;     // the bodies active this frame (the movers)
	std::vector<JPH::BodyID> scratch;    // ids handed to calls that reorder them
	std::vector<JPH::BodyID> stopped;    // active last frame, not now
	std::vector<unsigned char> moved;    // per box: moved this frame
	std::vector<unsigned char> is_active; // per box
	std::vector<uint64_t> found;         // candidate pairs of this frame
	bench_pairset pairs;                 // the contact cache
	std::vector<uint64_t> fixed;         // static-static pairs
};

JPH::Vec3 centre(const ort3_box &b, int dim)
{
	return JPH::Vec3(0.5f * (b.min[0] + b.max[0]), 0.5f * (b.min[1] + b.max[1]), dim == 3 ? 0.5f * (b.min[2] + b.max[2]) : 0.0f);
}

JPH::AABox jbox(const ort3_box &b, int dim)
{
	return JPH::AABox(JPH::Vec3(b.min[0], b.min[1], dim == 3 ? b.min[2] : -Z_HALF),
	                  JPH::Vec3(b.max[0], b.max[1], dim == 3 ? b.max[2] : Z_HALF));
}

class PairCollector final : public JPH::BodyPairCollector {
public:
	std::vector<uint64_t> *out;
	void AddHit(const JPH::BodyPair &p) override
	{
		out->push_back(bench_pair_key(p.mBodyA.GetIndex(), p.mBodyB.GetIndex()));
	}
};

class IdCollector final : public JPH::CollideShapeBodyCollector {
public:
	const ort3_box *boxes;
	const ort3_box *q;
	bench_sink *sink = nullptr;            // box queries: exact hits
	std::vector<uint64_t> *fixed = nullptr; // static pairs: keys with self
	const unsigned char *mobile = nullptr;  // static pairs: skip the mobile boxes
	uint32_t self = 0;
	void AddHit(const JPH::BodyID &id) override
	{
		uint32_t j = id.GetIndex();
		if (!bench_overlap(q, &boxes[j])) return;
		if (sink)
			bench_sink_id(sink, j);
		else if (j > self && !mobile[j])
			fixed->push_back(bench_pair_key(self, j));
	}
};

void find_pairs(State *s, int count)
{
	if (count == 0) return;
	s->scratch.assign(s->active.begin(), s->active.end());
	PairCollector c;
	c.out = &s->found;
	s->bp->FindCollidingPairs(s->scratch.data(), count, SPECULATIVE, s->object_vs_bp, s->object_pair, c);
}

void *jolt_create(const bench_frame *f)
{
	jolt_once();
	State *s = new State;
	int n = f->count;
	s->dim = f->dim;
	s->system.Init((JPH::uint)n, 0, 65536, 10240, s->bp_layers, s->object_vs_bp, s->object_pair);
	s->bp = const_cast<JPH::BroadPhase *>(static_cast<const JPH::BroadPhase *>(&s->system.GetBroadPhaseQuery()));
	JPH::BodyInterface &bi = s->system.GetBodyInterfaceNoLock();
	s->body.resize((size_t)n);
	s->moved.assign((size_t)n, 0);
	s->is_active.assign((size_t)n, 0);
	std::vector<JPH::BodyID> ids((size_t)n);
	int statics = 0;
	for (int i = 0; i < n; ++i) {
		const ort3_box &b = f->boxes[i];
		bool fixed = f->mobile && !f->mobile[i];
		statics += fixed;
		JPH::Vec3 half(0.5f * (b.max[0] - b.min[0]), 0.5f * (b.max[1] - b.min[1]), f->dim == 3 ? 0.5f * (b.max[2] - b.min[2]) : Z_HALF);
		JPH::BodyCreationSettings cs(new JPH::BoxShape(half, 0.0f), JPH::RVec3(centre(b, f->dim)), JPH::Quat::sIdentity(),
		                             fixed ? JPH::EMotionType::Static : JPH::EMotionType::Dynamic,
		                             fixed ? Layers::NON_MOVING : Layers::MOVING);
		JPH::Body *body = bi.CreateBody(cs);
		if (!body || body->GetID().GetIndex() != (JPH::uint32)i) {
			fprintf(stderr, "jolt: body %d not created in order\n", i);
			exit(3);
		}
		s->body[(size_t)i] = body;
		ids[(size_t)i] = body->GetID();
	}
	JPH::BodyInterface::AddState st = bi.AddBodiesPrepare(ids.data(), n);
	bi.AddBodiesFinalize(ids.data(), n, st, JPH::EActivation::DontActivate);
	if (statics) s->system.OptimizeBroadPhase();
	bench_pairset_init(&s->pairs);
	if (statics && statics < n) { // a world with both: the static pairs, once
		IdCollector c;
		c.boxes = f->boxes;
		c.fixed = &s->fixed;
		c.mobile = f->mobile;
		for (int i = 0; i < n; ++i)
			if (f->mobile && !f->mobile[i]) {
				c.q = &f->boxes[i];
				c.self = (uint32_t)i;
				s->system.GetBroadPhaseQuery().CollideAABox(jbox(f->boxes[i], f->dim), c);
			}
		s->fixed.shrink_to_fit(); // exact, as the orthant adapter's
	}
	if (statics < n) { // the first step: every mobile body active once
		for (int i = 0; i < n; ++i)
			if (!f->mobile || f->mobile[i]) s->active.push_back(ids[(size_t)i]);
		bi.ActivateBodies(s->active.data(), (int)s->active.size());
		for (JPH::BodyID id : s->active) s->is_active[id.GetIndex()] = 1;
		find_pairs(s, (int)s->active.size());
		for (uint64_t key : s->found) {
			uint32_t a = (uint32_t)key, b = (uint32_t)(key >> 32);
			if (bench_overlap(&f->boxes[a], &f->boxes[b])) bench_pairset_add(&s->pairs, key);
		}
		s->found.clear();
	}
	return s;
}

void jolt_update(void *st, const bench_frame *f)
{
	State *s = static_cast<State *>(st);
	JPH::BodyInterface &bi = s->system.GetBodyInterfaceNoLock();
	s->bp->FrameSync();
	// The active set becomes the bodies that moved: the rest go to sleep.
	for (int k = 0; k < f->moved_count; ++k) s->moved[(size_t)f->moved[k]] = 1;
	s->stopped.clear();
	for (JPH::BodyID id : s->active)
		if (!s->moved[id.GetIndex()]) {
			s->stopped.push_back(id);
			s->is_active[id.GetIndex()] = 0;
		}
	if (!s->stopped.empty()) bi.DeactivateBodies(s->stopped.data(), (int)s->stopped.size());
	s->active.clear();
	for (int k = 0; k < f->moved_count; ++k) {
		int i = f->moved[k];
		JPH::Body *b = s->body[(size_t)i];
		s->active.push_back(b->GetID());
		if (!s->is_active[(size_t)i]) {
			s->is_active[(size_t)i] = 1;
			bi.ActivateBody(b->GetID());
		}
		b->SetPositionAndRotationInternal(JPH::RVec3(centre(f->boxes[i], f->dim)), JPH::Quat::sIdentity());
	}
	if (!s->active.empty()) {
		s->scratch.assign(s->active.begin(), s->active.end());
		s->bp->NotifyBodiesAABBChanged(s->scratch.data(), (int)s->scratch.size(), false);
	}
	s->bp->LockModifications();
	JPH::BroadPhase::UpdateState us = s->bp->UpdatePrepare();
	s->bp->UpdateFinalize(us);
	s->bp->UnlockModifications();
	find_pairs(s, (int)s->active.size());
}

void jolt_pairs(void *st, const bench_frame *f, bench_sink *sink)
{
	State *s = static_cast<State *>(st);
	bench_pairset *ps = &s->pairs;
	size_t w = 0;
	for (size_t k = 0; k < ps->count; ++k) { // the cache: pairs of a mover are re-found below
		uint64_t key = ps->keys[k];
		uint32_t a = (uint32_t)key, b = (uint32_t)(key >> 32);
		if (s->moved[a] || s->moved[b]) {
			bench_pairset_forget(ps, key);
			continue;
		}
		ps->keys[w++] = key;
		bench_sink_pair(sink, a, b);
	}
	ps->count = w;
	for (uint64_t key : s->found) {
		uint32_t a = (uint32_t)key, b = (uint32_t)(key >> 32);
		if (bench_overlap(&f->boxes[a], &f->boxes[b]) && bench_pairset_add(ps, key)) bench_sink_pair(sink, a, b);
	}
	s->found.clear();
	bench_sink_keys(sink, s->fixed.data(), s->fixed.size());
	for (int k = 0; k < f->moved_count; ++k) s->moved[(size_t)f->moved[k]] = 0;
}

void jolt_destroy(void *st)
{
	State *s = static_cast<State *>(st);
	bench_pairset_free(&s->pairs);
	delete s; // the PhysicsSystem frees its bodies
}

void jolt_query_boxes(void *st, const bench_frame *f, bench_queries *q)
{
	State *s = static_cast<State *>(st);
	const JPH::BroadPhaseQuery &bq = s->system.GetBroadPhaseQuery();
	IdCollector c;
	c.boxes = f->boxes;
	for (int k = 0; k < q->count; ++k) {
		c.q = &q->boxes[k];
		c.sink = &q->sinks[k];
		c.Reset();
		bq.CollideAABox(jbox(q->boxes[k], f->dim), c);
	}
}

class RayCollector final : public JPH::RayCastBodyCollector {
public:
	const ort3_box *boxes;
	const bench_ray *ray;
	bench_sink *sink;
	int dim;
	bool first;
	float best = INFINITY;
	void AddHit(const JPH::BroadPhaseCastResult &r) override
	{
		uint32_t j = r.mBodyID.GetIndex();
		float t = bench_ray_box(ray, &boxes[j], dim);
		if (t < 0.0f) return;
		if (!first) {
			bench_sink_id(sink, j);
			return;
		}
		if (t < best) {
			best = t;
			UpdateEarlyOutFraction(t / ray->max_t); // only nearer hits matter now
		}
	}
};

void jolt_rays(State *s, const bench_frame *f, bench_queries *q, bool first)
{
	const JPH::BroadPhaseQuery &bq = s->system.GetBroadPhaseQuery();
	for (int k = 0; k < q->count; ++k) {
		const bench_ray *r = &q->rays[k];
		JPH::RayCast ray{JPH::Vec3(r->origin[0], r->origin[1], r->origin[2]),
		                 JPH::Vec3(r->dir[0] * r->max_t, r->dir[1] * r->max_t, r->dir[2] * r->max_t)};
		RayCollector c;
		c.boxes = f->boxes;
		c.ray = r;
		c.sink = &q->sinks[k];
		c.dim = f->dim;
		c.first = first;
		bq.CastRay(ray, c);
		if (first) q->first_t[k] = c.best;
	}
}

void jolt_ray_all(void *st, const bench_frame *f, bench_queries *q) { jolt_rays(static_cast<State *>(st), f, q, false); }
void jolt_ray_first(void *st, const bench_frame *f, bench_queries *q) { jolt_rays(static_cast<State *>(st), f, q, true); }

} // namespace

extern "C" int bench_jolt_register(bench_impl *list, int max)
{
	if (max < 1) return 0;
	bench_impl im = {};
	im.name = "jolt-broadphase";
	im.family = "peer";
	im.dims = BENCH_DIM2 | BENCH_DIM3;
	im.create = jolt_create;
	im.update = jolt_update;
	im.pairs = jolt_pairs;
	im.destroy = jolt_destroy;
	im.query_boxes = jolt_query_boxes;
	im.ray_all = jolt_ray_all;
	im.ray_first = jolt_ray_first;
	list[0] = im;
	return 1;
}

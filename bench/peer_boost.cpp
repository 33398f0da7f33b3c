// peer_boost.cpp: Boost.Geometry's rtree (header-only).
//  - boost-rstar: rtree<rstar<16>> filled by inserts; movers removed and re-inserted.
//  - boost-pack: the packing constructor (bulk load) from all boxes, rebuilt
//    every frame.
// All pairs = one intersects query per box, keeping ids above its own.
// Boost 1.74's R* reinsertion trips GCC 12's maybe-uninitialized analysis
// inside std::partial_sort; the warning is about Boost's code, not this file.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#define BOOST_ALLOW_DEPRECATED_HEADERS
#include <boost/geometry.hpp>
#include <boost/geometry/geometries/box.hpp>
#include <boost/geometry/geometries/point.hpp>
#include <boost/geometry/geometries/segment.hpp>
#include <boost/geometry/index/rtree.hpp>

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "bench.h"

namespace bg = boost::geometry;
namespace bgi = boost::geometry::index;

namespace {

// Calls a function for every value a query yields, without collecting them.
template <class F> struct CallOut {
	F *f;
	using iterator_category = std::output_iterator_tag;
	using value_type = void;
	using difference_type = std::ptrdiff_t;
	using pointer = void;
	using reference = void;
	CallOut &operator*() { return *this; }
	CallOut &operator++() { return *this; }
	CallOut operator++(int) { return *this; }
	template <class V> CallOut &operator=(const V &v)
	{
		(*f)(v);
		return *this;
	}
};
template <class F> CallOut<F> call_out(F &f) { return CallOut<F>{&f}; }

template <int D> struct BoostImpl {
	using Point = bg::model::point<float, D, bg::cs::cartesian>;
	using Box = bg::model::box<Point>;
	using Value = std::pair<Box, uint32_t>;
	using Tree = bgi::rtree<Value, bgi::rstar<16>>;

	struct State {
		Tree tree;
		std::vector<Value> values; // what the tree was last told (remove needs the value)
		bool pack = false;
	};

	static Box to_box(const ort3_box &b)
	{
		Point lo, hi;
		bg::set<0>(lo, b.min[0]);
		bg::set<1>(lo, b.min[1]);
		bg::set<0>(hi, b.max[0]);
		bg::set<1>(hi, b.max[1]);
		if constexpr (D == 3) {
			bg::set<2>(lo, b.min[2]);
			bg::set<2>(hi, b.max[2]);
		}
		return Box(lo, hi);
	}

	static void load(State *s, const bench_frame *f)
	{
		s->values.resize((size_t)f->count);
		for (int i = 0; i < f->count; ++i) s->values[(size_t)i] = Value(to_box(f->boxes[i]), (uint32_t)i);
	}

	static void *create(const bench_frame *f, bool pack)
	{
		State *s = new State;
		s->pack = pack;
		load(s, f);
		if (pack)
			s->tree = Tree(s->values.begin(), s->values.end());
		else
			for (const Value &v : s->values) s->tree.insert(v);
		return s;
	}
	static void *create_rstar(const bench_frame *f) { return create(f, false); }
	static void *create_pack(const bench_frame *f) { return create(f, true); }

	static void update(void *st, const bench_frame *f)
	{
		State *s = static_cast<State *>(st);
		if (s->pack) {
			load(s, f);
			s->tree = Tree(s->values.begin(), s->values.end());
			return;
		}
		for (int k = 0; k < f->moved_count; ++k) {
			int i = f->moved[k];
			s->tree.remove(s->values[(size_t)i]);
			s->values[(size_t)i].first = to_box(f->boxes[i]);
			s->tree.insert(s->values[(size_t)i]);
		}
	}

	static void pairs(void *st, const bench_frame *f, bench_sink *sink)
	{
		State *s = static_cast<State *>(st);
		for (int i = 0; i < f->count; ++i) {
			uint32_t self = (uint32_t)i;
			auto fn = [&](const Value &v) {
				if (v.second > self && bench_overlap(&f->boxes[self], &f->boxes[v.second])) bench_sink_pair(sink, self, v.second);
			};
			s->tree.query(bgi::intersects(to_box(f->boxes[i])), call_out(fn));
		}
	}

	static void destroy(void *st) { delete static_cast<State *>(st); }

	static void query_boxes(void *st, const bench_frame *f, bench_queries *q)
	{
		State *s = static_cast<State *>(st);
		for (int k = 0; k < q->count; ++k) {
			bench_sink *sink = &q->sinks[k];
			const ort3_box *qb = &q->boxes[k];
			auto fn = [&](const Value &v) {
				if (bench_overlap(qb, &f->boxes[v.second])) bench_sink_id(sink, v.second);
			};
			s->tree.query(bgi::intersects(to_box(*qb)), call_out(fn));
		}
	}

	static void knn(void *st, const bench_frame *f, bench_queries *q)
	{
		State *s = static_cast<State *>(st);
		for (int k = 0; k < q->count; ++k) {
			Point p;
			bg::set<0>(p, q->points[k][0]);
			bg::set<1>(p, q->points[k][1]);
			if constexpr (D == 3) bg::set<2>(p, q->points[k][2]);
			float *best = q->knn_dist + (size_t)k * (size_t)q->k;
			for (int i = 0; i < q->k; ++i) best[i] = INFINITY;
			auto fn = [&](const Value &v) {
				bench_knn_push(best, q->k, bench_point_box_dist(q->points[k], &f->boxes[v.second], f->dim));
			};
			s->tree.query(bgi::nearest(p, (unsigned)q->k), call_out(fn));
		}
	}

	// Boost has no ray query: the segment intersects predicate finds every hit.
	static void ray_all(void *st, const bench_frame *f, bench_queries *q)
	{
		State *s = static_cast<State *>(st);
		for (int k = 0; k < q->count; ++k) {
			const bench_ray *r = &q->rays[k];
			Point a, b;
			bg::set<0>(a, r->origin[0]);
			bg::set<1>(a, r->origin[1]);
			bg::set<0>(b, r->origin[0] + r->dir[0] * r->max_t);
			bg::set<1>(b, r->origin[1] + r->dir[1] * r->max_t);
			if constexpr (D == 3) {
				bg::set<2>(a, r->origin[2]);
				bg::set<2>(b, r->origin[2] + r->dir[2] * r->max_t);
			}
			bg::model::segment<Point> seg(a, b);
			bench_sink *sink = &q->sinks[k];
			auto fn = [&](const Value &v) {
				if (bench_ray_box(r, &f->boxes[v.second], f->dim) >= 0.0f) bench_sink_id(sink, v.second);
			};
			s->tree.query(bgi::intersects(seg), call_out(fn));
		}
	}
};

// 2D and 3D are separate template instances; the adapter picks by the frame's dimension.
struct Either {
	void *state;
	int dim;
};

template <void *(*C2)(const bench_frame *), void *(*C3)(const bench_frame *)> void *create_either(const bench_frame *f)
{
	return new Either{f->dim == 3 ? C3(f) : C2(f), f->dim};
}

// Forward an operation to the instance of the frame's dimension.
#define BENCH_EITHER(fn, ...)                                                                                       \
	do {                                                                                                        \
		Either *e = static_cast<Either *>(st);                                                              \
		if (e->dim == 3)                                                                                    \
			BoostImpl<3>::fn(e->state, __VA_ARGS__);                                                    \
		else                                                                                                \
			BoostImpl<2>::fn(e->state, __VA_ARGS__);                                                    \
	} while (0)

void either_update(void *st, const bench_frame *f) { BENCH_EITHER(update, f); }
void either_pairs(void *st, const bench_frame *f, bench_sink *sink) { BENCH_EITHER(pairs, f, sink); }
void either_query_boxes(void *st, const bench_frame *f, bench_queries *q) { BENCH_EITHER(query_boxes, f, q); }
void either_knn(void *st, const bench_frame *f, bench_queries *q) { BENCH_EITHER(knn, f, q); }
void either_ray_all(void *st, const bench_frame *f, bench_queries *q) { BENCH_EITHER(ray_all, f, q); }

void either_destroy(void *st)
{
	Either *e = static_cast<Either *>(st);
	if (e->dim == 3)
		BoostImpl<3>::destroy(e->state);
	else
		BoostImpl<2>::destroy(e->state);
	delete e;
}

} // namespace

extern "C" int bench_boost_register(bench_impl *list, int max)
{
	int n = 0;
	for (int pack = 0; pack < 2 && n < max; ++pack) {
		bench_impl im = {};
		im.name = pack ? "boost-pack" : "boost-rstar";
		im.family = "peer";
		im.dims = BENCH_DIM2 | BENCH_DIM3;
		im.dynamic_only = !pack;
		im.create = pack ? create_either<BoostImpl<2>::create_pack, BoostImpl<3>::create_pack>
		                 : create_either<BoostImpl<2>::create_rstar, BoostImpl<3>::create_rstar>;
		im.update = either_update;
		im.pairs = either_pairs;
		im.destroy = either_destroy;
		if (pack) {
			im.query_boxes = either_query_boxes;
			im.ray_all = either_ray_all;
			im.knn = either_knn;
		}
		list[n++] = im;
	}
	return n;
}

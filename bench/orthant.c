// orthant.c: orthant in every placement, each driven two ways in dynamic scenes:
// "rebuild" (ortN_tree_clear + ortN_tree_build every frame) and
// "move" (ortN_tree_move for the boxes that moved), "broadphase"
// (move, then ortN_tree_update_pairs keeps the pair set; all pairs =
// ortN_tree_current_pairs), whose cost follows the movers, not the world
// ("broadphase-batch": the same with the frame's moves in one
// ortN_tree_move_many call); and
// the packed tree (ortN_packed_build every frame, then ortN_packed_find_pairs;
// "packed-diff": and the pairs diffed against the last frame's).
// In a world whose boxes mostly never move (bench_frame.mobile: the big
// static world), the broadphase rows set up as the Jolt and Box2D v3
// adapters do: the never-moving boxes are marked static (ort_filter.is_static,
// as their static layer / NON_MOVING bodies), so the broad phase keeps only
// the pairs with a mover; the static-static pairs, which no frame changes, are
// found once at creation (find_pairs) and reported each frame from a dense
// array, as the Jolt adapter reports its own (orthant_dim.h: mark_static).
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "orthant/orthant2.h"
#include "orthant/orthant3.h"

#define BENCH_OD 2
#include "orthant_dim.h"
#undef BENCH_OD
#define BENCH_OD 3
#include "orthant_dim.h"
#undef BENCH_OD

static int bench_o_dim(void *st) { return *(int *)st; }

static void *bench_o_create(const bench_frame *f, ort_placement p, int incremental)
{
	return f->dim == 3 ? bench_o3_create(f, p, incremental) : bench_o2_create(f, p, incremental);
}

#define BENCH_O_CREATE(name, placement, incremental)                                                                 \
	static void *name(const bench_frame *f) { return bench_o_create(f, placement, incremental); }
BENCH_O_CREATE(bench_o_loose_rebuild, ORT_PLACEMENT_LOOSE, 0)
BENCH_O_CREATE(bench_o_loose_move, ORT_PLACEMENT_LOOSE, 1)
BENCH_O_CREATE(bench_o_tight_rebuild, ORT_PLACEMENT_TIGHT, 0)
BENCH_O_CREATE(bench_o_tight_move, ORT_PLACEMENT_TIGHT, 1)
BENCH_O_CREATE(bench_o_leaves_rebuild, ORT_PLACEMENT_LEAVES, 0)
BENCH_O_CREATE(bench_o_leaves_move, ORT_PLACEMENT_LEAVES, 1)
BENCH_O_CREATE(bench_o_loose_broad, ORT_PLACEMENT_LOOSE, 2)
BENCH_O_CREATE(bench_o_tight_broad, ORT_PLACEMENT_TIGHT, 2)
BENCH_O_CREATE(bench_o_leaves_broad, ORT_PLACEMENT_LEAVES, 2)
BENCH_O_CREATE(bench_o_loose_batch, ORT_PLACEMENT_LOOSE, 3)

// Forward an operation to the adapter of the state's dimension.
#define BENCH_O_DISPATCH(fn, ...)                                                                                    \
	do {                                                                                                         \
		if (bench_o_dim(st) == 3)                                                                            \
			bench_o3_##fn(st, __VA_ARGS__);                                                              \
		else                                                                                                 \
			bench_o2_##fn(st, __VA_ARGS__);                                                              \
	} while (0)

static void bench_o_update(void *st, const bench_frame *f) { BENCH_O_DISPATCH(update, f); }
static void bench_o_pairs(void *st, const bench_frame *f, bench_sink *sink) { BENCH_O_DISPATCH(pairs, f, sink); }
static void bench_o_query_boxes(void *st, const bench_frame *f, bench_queries *q) { BENCH_O_DISPATCH(query_boxes, f, q); }
static void bench_o_ray_all(void *st, const bench_frame *f, bench_queries *q) { BENCH_O_DISPATCH(ray_all, f, q); }
static void bench_o_ray_first(void *st, const bench_frame *f, bench_queries *q) { BENCH_O_DISPATCH(ray_first, f, q); }
static void bench_o_knn(void *st, const bench_frame *f, bench_queries *q) { BENCH_O_DISPATCH(knn, f, q); }
static size_t bench_o_bytes(void *st) { return bench_o_dim(st) == 3 ? bench_o3_bytes(st) : bench_o2_bytes(st); }
static size_t bench_o_pair_bytes(void *st) { return bench_o_dim(st) == 3 ? bench_o3_pair_bytes(st) : bench_o2_pair_bytes(st); }

// The packed tree: one more variant, rebuilt every frame.
static void *bench_p_create(const bench_frame *f) { return f->dim == 3 ? bench_o3_packed_create(f, 0) : bench_o2_packed_create(f, 0); }
// ... and rebuilt every frame with its pairs diffed against the last frame's
// (began/ended, as the broad phase reports them): the reference the broad
// phase's all-pairs update is held to.
static void *bench_pd_create(const bench_frame *f) { return f->dim == 3 ? bench_o3_packed_create(f, 1) : bench_o2_packed_create(f, 1); }
#define BENCH_P_FORWARD(fn, params, args)                                                                            \
	static void bench_p_##fn params                                                                              \
	{                                                                                                            \
		if (bench_o_dim(st) == 3)                                                                            \
			bench_o3_packed_##fn args;                                                                   \
		else                                                                                                 \
			bench_o2_packed_##fn args;                                                                   \
	}
BENCH_P_FORWARD(update, (void *st, const bench_frame *f), (st, f))
BENCH_P_FORWARD(pairs, (void *st, const bench_frame *f, bench_sink *sink), (st, f, sink))
BENCH_P_FORWARD(query_boxes, (void *st, const bench_frame *f, bench_queries *q), (st, f, q))
BENCH_P_FORWARD(ray_all, (void *st, const bench_frame *f, bench_queries *q), (st, f, q))
BENCH_P_FORWARD(ray_first, (void *st, const bench_frame *f, bench_queries *q), (st, f, q))
BENCH_P_FORWARD(knn, (void *st, const bench_frame *f, bench_queries *q), (st, f, q))
BENCH_P_FORWARD(destroy, (void *st), (st))
static size_t bench_p_bytes(void *st) { return bench_o_dim(st) == 3 ? bench_o3_packed_bytes(st) : bench_o2_packed_bytes(st); }

static void bench_o_destroy(void *st)
{
	if (bench_o_dim(st) == 3)
		bench_o3_destroy(st);
	else
		bench_o2_destroy(st);
}

int bench_orthant_register(bench_impl *list, int max)
{
	static const struct {
		const char *name;
		void *(*create)(const bench_frame *);
		int incremental;
	} variants[] = {
	    {"orthant-loose-rebuild", bench_o_loose_rebuild, 0}, {"orthant-loose-move", bench_o_loose_move, 1},
	    {"orthant-tight-rebuild", bench_o_tight_rebuild, 0}, {"orthant-tight-move", bench_o_tight_move, 1},
	    {"orthant-leaves-rebuild", bench_o_leaves_rebuild, 0}, {"orthant-leaves-move", bench_o_leaves_move, 1},
	    {"orthant-loose-broadphase", bench_o_loose_broad, 2}, {"orthant-tight-broadphase", bench_o_tight_broad, 2},
	    {"orthant-leaves-broadphase", bench_o_leaves_broad, 2},
	    {"orthant-loose-broadphase-batch", bench_o_loose_batch, 3},
	};
	int n = 0;
	for (size_t v = 0; v < sizeof variants / sizeof variants[0] && n < max; ++v) {
		bench_impl im = {.name = variants[v].name, .family = "orthant", .dims = BENCH_DIM2 | BENCH_DIM3,
		                 .dynamic_only = variants[v].incremental != 0, .create = variants[v].create,
		                 .update = bench_o_update, .pairs = bench_o_pairs, .destroy = bench_o_destroy,
		                 .bytes = bench_o_bytes, .pair_bytes = bench_o_pair_bytes};
		if (!variants[v].incremental) {
			im.query_boxes = bench_o_query_boxes;
			im.ray_all = bench_o_ray_all;
			im.ray_first = bench_o_ray_first;
			im.knn = bench_o_knn;
		}
		list[n++] = im;
	}
	if (n < max)
		list[n++] = (bench_impl){.name = "orthant-packed-rebuild", .family = "orthant", .dims = BENCH_DIM2 | BENCH_DIM3,
		                         .create = bench_p_create, .update = bench_p_update, .pairs = bench_p_pairs,
		                         .destroy = bench_p_destroy, .bytes = bench_p_bytes, .query_boxes = bench_p_query_boxes,
		                         .ray_all = bench_p_ray_all, .ray_first = bench_p_ray_first, .knn = bench_p_knn};
	if (n < max)
		list[n++] = (bench_impl){.name = "orthant-packed-diff", .family = "orthant", .dims = BENCH_DIM2 | BENCH_DIM3,
		                         .dynamic_only = 1, .create = bench_pd_create, .update = bench_p_update,
		                         .pairs = bench_p_pairs, .destroy = bench_p_destroy, .bytes = bench_p_bytes};
	return n;
}

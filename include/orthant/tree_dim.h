// SPDX-License-Identifier: MIT. Copyright (c) 2026 the orthant authors; the terms are in LICENSE.
/// @file tree_dim.h
/// The tree API, written once for any dimension. Do not include this file
/// directly: include <orthant/orthant2.h> (quadtree, names `ort2_*`) or
/// <orthant/orthant3.h> (octree, names `ort3_*`). Each defines ORTHANT_DIM and
/// includes this file, so the two APIs have the same shape by construction.
/// The reference in docs/API.md writes `ortN_` for either.
#ifndef ORTHANT_DIM
#error "include <orthant/orthant2.h> or <orthant/orthant3.h>, not tree_dim.h"
#endif

#include "orthant/base.h"
#include "orthant/task.h"

#define ORTHANT_CAT_(a, b, c) a##b##_##c
#define ORTHANT_CAT(a, b, c) ORTHANT_CAT_(a, b, c)
/// ORTHANT_NAME(tree) is ort2_tree or ort3_tree.
#define ORTHANT_NAME(x) ORTHANT_CAT(ort, ORTHANT_DIM, x)

#ifdef __cplusplus
extern "C" {
#endif

/// A closed axis-aligned box: min[i] <= max[i]. Boxes that touch overlap, and a
/// box with min == max on every axis is a point.
typedef struct ORTHANT_NAME(box) {
	float min[ORTHANT_DIM];
	float max[ORTHANT_DIM];
} ORTHANT_NAME(box);

/// A tree. Opaque; made by ortN_tree_create, freed by ortN_tree_destroy.
typedef struct ORTHANT_NAME(tree) ORTHANT_NAME(tree);

/// How to make a tree. Start from ortN_tree_default_def() and change what you need.
typedef struct ORTHANT_NAME(tree_def) {
	/// The starting root cell, used when use_region is true. Items outside it
	/// are never refused: the root grows (doubles) until it holds them.
	ORTHANT_NAME(box) region;
	bool use_region;
	/// Items a leaf holds before it splits (default 16). >= 1.
	int bucket_size;
	/// Splits stop this many levels below the root (default 8). 0..ORTHANT_MAX_DEPTH.
	/// A crowded cell goes deeper: a node there holding more than 2 buckets of
	/// boxes that are not all one box splits on, until floats run out (a pile,
	/// or a world too big for the depth).
	int max_depth;
	/// Splits stop at cells this small on their shortest axis (default 0). >= 0.
	float min_cell_size;
	/// Where items live; see ort_placement.
	ort_placement placement;
	/// Loose cell side / cell side, for ORT_PLACEMENT_LOOSE. 1 < looseness <= 4; default 2.
	float looseness;
	/// A divided node whose subtree holds at most this many entries folds its
	/// children back into itself (underfull siblings merge). -1 (the default)
	/// means bucket_size - 1 for loose and tight placement: a moved tree keeps
	/// nearly the shape a build gives the same boxes, and its memory stays what
	/// the build's was, while one item moving to and fro cannot split and merge
	/// a node on every frame. A lower value trades memory for fewer merges: a
	/// node then stays divided once it split until it drops to merge_size (at
	/// half a bucket, a fifth more nodes after a long churn). Leaves placement,
	/// whose totals count copies, takes bucket_size / 2 for -1.
	/// -1 <= merge_size <= bucket_size.
	int merge_size;
	/// Frames an emptied branch is kept before it is freed (a prune countdown; doubled
	/// each time the branch is reused, capped at 8x). 0 frees at once. A frame is
	/// one call of ortN_tree_tick.
	int prune_delay;
	/// Items to make room for at creation; the pools grow past it as needed.
	int item_capacity;
	/// The caller's allocator; zeroed means malloc/free.
	ort_allocator allocator;
	/// Called on programmer errors before they are returned; may be NULL.
	ort_assert_fn *assert_fn;
	void *assert_ctx;
	/// Workers for build, find_pairs and the batched queries (task.h); NULL (the
	/// default) runs them on the calling thread. Borrowed: it must outlive the
	/// tree or be replaced first (ortN_tree_set_tasks).
	ort_tasks *tasks;
} ORTHANT_NAME(tree_def);

/// The defaults: no region (the first items choose the root), bucket 16, depth 8,
/// no minimum cell size, loose placement with looseness 2, merge at 15 (-1; leaves
/// placement: 8), no prune delay, malloc/free.
ORTHANT_API ORTHANT_NAME(tree_def) ORTHANT_NAME(tree_default_def)(void);

/// Make an empty tree. On success *out owns it; on failure *out is NULL and the
/// result says why (ORT_ERROR_INVALID_ARGUMENT for a definition out of range).
ORTHANT_API ort_result ORTHANT_NAME(tree_create)(const ORTHANT_NAME(tree_def) * def, ORTHANT_NAME(tree) * *out);

/// Free the tree and everything it holds. NULL is ignored. Handles become stale.
ORTHANT_API void ORTHANT_NAME(tree_destroy)(ORTHANT_NAME(tree) * tree);

/// Use tasks (NULL: none) for build, find_pairs, update_pairs and the batched queries from now on,
/// as if the definition had named it. Not from a callback or while another
/// thread uses the tree.
ORTHANT_API void ORTHANT_NAME(tree_set_tasks)(ORTHANT_NAME(tree) * tree, ort_tasks *tasks);

/// Store an item. O(depth) amortised; allocates only when a pool must grow.
/// On success *out (may be NULL) gets its handle. A box outside the root makes
/// the root grow. On failure nothing changed, the root cell included (the
/// pools may keep room they grew).
ORTHANT_API ort_result ORTHANT_NAME(tree_insert)(ORTHANT_NAME(tree) * tree, ORTHANT_NAME(box) box, void *user_data,
                                                 ort_handle *out);

/// Store an item whose bound is a sphere (a circle in 2D). The tree indexes its
/// box (widened by an ulp so it holds the exact sphere); every query, the pair
/// finder and the broad phase then test the sphere exactly. get_box gives
/// that box.
ORTHANT_API ort_result ORTHANT_NAME(tree_insert_sphere)(ORTHANT_NAME(tree) * tree, const float centre[ORTHANT_DIM],
                                                        float radius, void *user_data, ort_handle *out);

/// Give an item a sphere bound (it may have been a box); like ortN_tree_move.
/// ortN_tree_move makes any item a box item.
ORTHANT_API ort_result ORTHANT_NAME(tree_move_sphere)(ORTHANT_NAME(tree) * tree, ort_handle handle,
                                                      const float centre[ORTHANT_DIM], float radius);

/// The item's sphere; ORT_ERROR_INVALID_ARGUMENT for a box item.
ORTHANT_API ort_result ORTHANT_NAME(tree_get_sphere)(const ORTHANT_NAME(tree) * tree, ort_handle handle,
                                                     float centre[ORTHANT_DIM], float *radius);

/// Forget an item; its handle becomes stale. Underfull siblings merge back.
/// ORT_ERROR_STALE_HANDLE for a null, removed or foreign handle.
ORTHANT_API ort_result ORTHANT_NAME(tree_remove)(ORTHANT_NAME(tree) * tree, ort_handle handle);

/// Give an item a new box, keeping its handle. While the box still fits the
/// item's node (and could go no deeper) only the stored box changes; otherwise
/// the item climbs to the first ancestor that holds it and goes down as deep as
/// it fits. On failure the item keeps its old box and place, and the root its cell.
ORTHANT_API ort_result ORTHANT_NAME(tree_move)(ORTHANT_NAME(tree) * tree, ort_handle handle, ORTHANT_NAME(box) box);

/// New boxes for many items at once: handles[k] gets boxes[k], as count calls
/// of ortN_tree_move in that order would give them (an item named twice ends
/// with its last box; every item becomes a box item). The moves that keep an
/// item in its node (most, when items move a little each frame) are a write
/// of its box; with the tree's ort_tasks they run on its workers, the others
/// on the calling thread after them. A batch of a quarter of the items or more
/// is taken in bulk on the calling thread: it detaches the tree, writing each
/// box into a dense array by item (a box and a byte an item, kept), which
/// ortN_tree_update_pairs reads directly; the first later call that reads or
/// changes the tree otherwise (a query, get_box, validate, a move, ...)
/// attaches it first: one walk in memory order writes the boxes that stay,
/// then the others re-home. A query that cannot get memory for that returns
/// ORT_ERROR_OUT_OF_MEMORY and the tree stays detached and whole (concurrent
/// readers: one attaches, the others wait for it). The tree is the same for
/// any worker count.
/// Every handle and box is checked first: ORT_ERROR_STALE_HANDLE or
/// ORT_ERROR_INVALID_BOX (or ORT_ERROR_INVALID_ARGUMENT: NULL arrays with a
/// count, count < 0) changes nothing. ORT_ERROR_OUT_OF_MEMORY for the call's
/// own room (count bytes, kept between calls) changes nothing either; an item
/// that must move to another node and cannot get the memory keeps its old box
/// (as with ortN_tree_move), the others still move, and the first such error is
/// returned: calling again with the same arrays finishes the batch. From inside
/// a callback each move waits as ortN_tree_move's does. ortN_tree_update_pairs
/// sees every moved item (a batch of a quarter of the items or more makes the
/// next update find every pair at once, as that many moves would anyway).
ORTHANT_API ort_result ORTHANT_NAME(tree_move_many)(ORTHANT_NAME(tree) * tree, const ort_handle *handles,
                                                    const ORTHANT_NAME(box) * boxes, int count);

/// The item's box, or ORT_ERROR_STALE_HANDLE.
ORTHANT_API ort_result ORTHANT_NAME(tree_get_box)(const ORTHANT_NAME(tree) * tree, ort_handle handle,
                                                  ORTHANT_NAME(box) * out);

/// The item's user data; NULL for a stale handle (or when NULL was stored).
ORTHANT_API void *ORTHANT_NAME(tree_get_user_data)(const ORTHANT_NAME(tree) * tree, ort_handle handle);

/// True when the handle names a live item of this tree.
ORTHANT_API bool ORTHANT_NAME(tree_is_valid)(const ORTHANT_NAME(tree) * tree, ort_handle handle);

/// Live items.
ORTHANT_API int ORTHANT_NAME(tree_count)(const ORTHANT_NAME(tree) * tree);

/// Forget every item (for trees rebuilt every frame). Keeps the memory for
/// the next frame, so clear + insert/build allocates nothing in steady state.
/// Every handle becomes stale. The root returns to the definition's region.
ORTHANT_API void ORTHANT_NAME(tree_clear)(ORTHANT_NAME(tree) * tree);

/// Store count items in one pass (a batched build). Into an empty tree
/// it partitions the whole batch top-down, O(n * depth), much faster than n
/// inserts; into a non-empty tree it inserts one by one. user_data and
/// handles_out may be NULL. On failure nothing of the batch is stored. With
/// tasks (task.h) a loose or tight build into an empty tree is split over the
/// workers and makes the same tree, index for index. A tree's first build
/// gives its scratch back (about 50 bytes an item) and trims the node and
/// chunk pools to what it made; from its second build on a tree keeps both,
/// so clear + build every frame allocates nothing in steady state.
ORTHANT_API ort_result ORTHANT_NAME(tree_build)(ORTHANT_NAME(tree) * tree, const ORTHANT_NAME(box) * boxes,
                                                void *const *user_data, int count, ort_handle *handles_out);

/// One frame has passed: counts down the grace period of emptied branches
/// (def.prune_delay) and frees those whose time is up. Cheap when nothing waits.
ORTHANT_API void ORTHANT_NAME(tree_tick)(ORTHANT_NAME(tree) * tree);

/// Masks. Every query and the pair finder take a mask: only items whose
/// category (ort_filter) meets it count, and subtrees holding no such category
/// are skipped whole. ORT_MASK_ALL admits everything; 0 admits nothing.

/// Called for each hit of a query. Return true to go on, false to stop.
typedef bool ORTHANT_NAME(query_fn)(void *ctx, ort_handle handle, void *user_data);

/// Every item whose box overlaps `box` (closed: touching counts), each once, in
/// no particular order. Allocates nothing unless the tree is deeper than the
/// query's local stack holds, and then never drops a node.
ORTHANT_API ort_result ORTHANT_NAME(tree_query_box)(const ORTHANT_NAME(tree) * tree, ORTHANT_NAME(box) box,
                                                    uint64_t mask, ORTHANT_NAME(query_fn) * fn, void *ctx);

/// Every item whose box contains the point.
ORTHANT_API ort_result ORTHANT_NAME(tree_query_point)(const ORTHANT_NAME(tree) * tree, const float point[ORTHANT_DIM],
                                                      uint64_t mask, ORTHANT_NAME(query_fn) * fn, void *ctx);

/// Every item whose box touches the sphere (a circle in 2D): the distance from
/// the centre to the box is at most radius.
ORTHANT_API ort_result ORTHANT_NAME(tree_query_sphere)(const ORTHANT_NAME(tree) * tree,
                                                       const float centre[ORTHANT_DIM], float radius,
                                                       uint64_t mask, ORTHANT_NAME(query_fn) * fn, void *ctx);

/// Called for each item a ray touches, with t, the ray parameter where it enters
/// the item's box (origin + t * dir; 0 when the origin is inside). Return the
/// parameter to clip the ray to: t keeps only nearer hits (nearest-hit search),
/// the current maximum (or larger) goes on with every hit, 0 stops, and a
/// negative value ignores this item. Items arrive roughly near-first, not sorted.
typedef float ORTHANT_NAME(ray_fn)(void *ctx, ort_handle handle, void *user_data, float t);

/// Cast the segment origin + t * dir, t in [0, max_t] (max_t may be INFINITY;
/// dir need not be normalised and may have zero components). Children are
/// visited near-first, so a clipping callback prunes most of the tree.
ORTHANT_API ort_result ORTHANT_NAME(tree_ray_cast)(const ORTHANT_NAME(tree) * tree, const float origin[ORTHANT_DIM],
                                                   const float dir[ORTHANT_DIM], float max_t, uint64_t mask,
                                                   ORTHANT_NAME(ray_fn) * fn, void *ctx);

/// Whether the segment origin + t * dir, t in [0, max_t], touches the closed box,
/// and where it enters it (*t; 0 when the origin is inside). This is the rule
/// every ray query of both trees applies to an item's box, so a narrow phase or a
/// brute-force check written with it agrees with the trees to the bit. Pure: no
/// tree, no checks of its arguments beyond what the arithmetic does with them.
ORTHANT_API bool ORTHANT_NAME(box_ray)(ORTHANT_NAME(box) box, const float origin[ORTHANT_DIM],
                                       const float dir[ORTHANT_DIM], float max_t, float *t);

/// One result of a nearest-neighbour search.
typedef struct ORTHANT_NAME(neighbor) {
	ort_handle handle;
	void *user_data;
	float distance; ///< Euclidean distance from the point to the box (0 inside), rounded to float (infinity past FLT_MAX)
} ORTHANT_NAME(neighbor);

/// The k items nearest to point (distance to the box, 0 inside), at most
/// max_distance away (INFINITY for no limit), written to out[0..*found) in
/// ascending distance as reported; equal ones (exactly tied, or rounded to
/// one float far from the origin) in ascending handle id. Best-first
/// search; allocates only when k or the tree outgrows its local buffers.
ORTHANT_API ort_result ORTHANT_NAME(tree_nearest)(const ORTHANT_NAME(tree) * tree, const float point[ORTHANT_DIM],
                                                  int k, float max_distance, uint64_t mask,
                                                  ORTHANT_NAME(neighbor) * out, int *found);

/// Called for each overlapping pair. Return true to go on, false to stop.
typedef bool ORTHANT_NAME(pair_fn)(void *ctx, ort_handle a, ort_handle b, void *user_a, void *user_b);

/// Every pair of items whose boxes overlap and whose filters allow it (see
/// ort_filter), each pair exactly once (a pass down the tree of each node's
/// entries to its descendants). Uses scratch memory kept in the tree, so in
/// steady state it allocates nothing. With tasks (task.h) the pairs are found
/// by the workers, buffered in the context, and reported on the calling thread
/// in the order the serial call reports them.
ORTHANT_API ort_result ORTHANT_NAME(tree_find_pairs)(ORTHANT_NAME(tree) * tree, uint64_t mask, ORTHANT_NAME(pair_fn) * fn,
                                                     void *ctx);

/// Set an item's filter (category, mask, static). Pairs reported by
/// find_pairs and update_pairs honour it from now on.
ORTHANT_API ort_result ORTHANT_NAME(tree_set_filter)(ORTHANT_NAME(tree) * tree, ort_handle handle, ort_filter filter);

/// The item's filter, or ORT_ERROR_STALE_HANDLE.
ORTHANT_API ort_result ORTHANT_NAME(tree_get_filter)(const ORTHANT_NAME(tree) * tree, ort_handle handle,
                                                     ort_filter *out);

/// Called for each pair event of ortN_tree_update_pairs.
typedef void ORTHANT_NAME(pair_event_fn)(void *ctx, ort_handle a, ort_handle b, void *user_a, void *user_b);

/// The incremental broad phase. Reports the pairs that began (boxes now
/// overlap, filters allow it) and the pairs that ended (no longer overlap, an
/// item was removed, or a filter changed) since the previous call; the first
/// call reports every current pair as begun. Cost grows with the items
/// inserted, moved or re-filtered since the last call, not with the world: a
/// static world with a few movers costs a few movers; when a quarter or more
/// of the items changed (and on the first call) it finds all pairs in one
/// pass, as find_pairs does, and diffs them against the set (the first call
/// takes them as the set). Ended pairs come first, then begun ones, each in
/// the order the items were touched (in the one-pass case, in ascending order
/// of (lower handle id, higher handle id); when the set was empty, as on the
/// first call, in the order that pass finds them), so the same sequence of calls gives the same sequence of events.
/// Pairs of items removed since the last call end first. An ended pair of a
/// removed item carries its (now stale) handle and the user data it had.
/// begin or end may be NULL. After ortN_tree_clear the pair set starts over
/// without end events. Callbacks must not change the tree.
ORTHANT_API ort_result ORTHANT_NAME(tree_update_pairs)(ORTHANT_NAME(tree) * tree, ORTHANT_NAME(pair_event_fn) * begin,
                                                       ORTHANT_NAME(pair_event_fn) * end, void *ctx);

/// Every pair in the broad phase's current set (as of the last update_pairs),
/// in the order of ortN_tree_pair_array.
ORTHANT_API ort_result ORTHANT_NAME(tree_current_pairs)(const ORTHANT_NAME(tree) * tree, ORTHANT_NAME(pair_fn) * fn,
                                                        void *ctx);

/// The broad phase's current set as one dense array of handle ids (no holes),
/// *count pairs, in the order of ortN_tree_pair_array; NULL and 0 before the
/// first update_pairs. This is the set as the broad phase keeps it (8 bytes a
/// pair): reading it runs at memory speed. a and b are the ids of the items'
/// handles (ort_handle.id, never 0), live until the set changes; index your
/// own per-item data by them. Valid as long as ortN_tree_pair_array's pointer.
ORTHANT_API const ort_id_pair *ORTHANT_NAME(tree_pair_ids)(const ORTHANT_NAME(tree) * tree, size_t *count);

/// One pair of the broad phase's current set: the two items' handles and user
/// data, as they were when the pair began.
typedef struct ORTHANT_NAME(pair) {
	ort_handle a, b;
	void *user_a, *user_b;
} ORTHANT_NAME(pair);

/// The broad phase's current set as one dense array (no holes), *count
/// records; NULL and 0 before the first update_pairs. The records are made
/// from the set's handle ids (ortN_tree_pair_ids) by the first call after the
/// set changed, into memory the tree keeps (no allocation in steady state), and
/// read at memory speed by later calls; NULL with *count > 0 when that memory
/// is refused. As it may write that memory, it counts as a mutation for
/// threads (call it once; then any number of threads may read the array). The pointer and the records stay valid and
/// unchanged until the next call that changes the tree (update_pairs, insert,
/// remove, move, set_filter, build, clear, destroy), including one made from a
/// callback; read-only calls (queries, find_pairs, current_pairs) keep it.
/// The order is deterministic for the same sequence of calls but otherwise
/// unspecified (a removed pair's slot takes the last record).
ORTHANT_API const ORTHANT_NAME(pair) * ORTHANT_NAME(tree_pair_array)(const ORTHANT_NAME(tree) * tree, size_t *count);

/// Pairs in the broad phase's current set.
ORTHANT_API int ORTHANT_NAME(tree_pair_count)(const ORTHANT_NAME(tree) * tree);

/// An intersection record for a pair.
typedef struct ORTHANT_NAME(contact) {
	ort_handle a, b;
	bool touching;              ///< the exact bounds meet (depth >= 0)
	float normal[ORTHANT_DIM];  ///< unit, the way to push b out of a
	float depth;                ///< how far to push b along normal to separate them
	float point[ORTHANT_DIM];   ///< a point in both: the overlap's centre (boxes), halfway
	                            ///< through it (spheres), the box's point nearest the sphere
} ORTHANT_NAME(contact);

/// The record for items a and b, exact for box-box (the shortest push out
/// along an axis), sphere-sphere and box-sphere. When they do not touch, touching
/// is false (for boxes, depth is -1; for spheres, -depth is the gap).
ORTHANT_API ort_result ORTHANT_NAME(tree_contact)(const ORTHANT_NAME(tree) * tree, ort_handle a, ort_handle b,
                                                  ORTHANT_NAME(contact) * out);

/// Called for each node by ortN_tree_visit_nodes: its cell, the bounds its items
/// must lie in (the cell itself, or the loose cell), its depth below the root
/// and the entries it holds itself.
typedef void ORTHANT_NAME(node_fn)(void *ctx, const ORTHANT_NAME(box) * cell, const ORTHANT_NAME(box) * bounds,
                                    int depth, int entries);

/// Every node, parents before children (to draw the tree).
ORTHANT_API void ORTHANT_NAME(tree_visit_nodes)(const ORTHANT_NAME(tree) * tree, ORTHANT_NAME(node_fn) * fn,
                                                void *ctx);

/// The node holding an item (leaves placement: the first leaf it was stored
/// in, or the node holding it once when it is over the cap on copies): its cell, the bounds its items lie in (the loose cell for loose
/// placement) and its depth. Any output may be NULL. ORT_ERROR_BUSY for an
/// item inserted from a callback and not yet stored.
ORTHANT_API ort_result ORTHANT_NAME(tree_get_node)(const ORTHANT_NAME(tree) * tree, ort_handle handle,
                                                   ORTHANT_NAME(box) * cell, ORTHANT_NAME(box) * bounds, int *depth);

/// The root cell (what the tree covers now): cells are half-open [min, max),
/// and with a region the root reaches one ulp past the region's upper faces,
/// so a box resting on them fits. Before the first item it is the region, or
/// a zero box without one.
ORTHANT_API ORTHANT_NAME(box) ORTHANT_NAME(tree_root_cell)(const ORTHANT_NAME(tree) * tree);

/// Check every invariant: node links and levels, each entry inside its node's
/// bounds and placed as the placement requires, counts, free lists, pool
/// accounting. ORT_OK, or ORT_ERROR_CORRUPT with a message in msg (may be NULL).
ORTHANT_API ort_result ORTHANT_NAME(tree_validate)(const ORTHANT_NAME(tree) * tree, char *msg, size_t msg_size);

/// The tree's shape now.
ORTHANT_API void ORTHANT_NAME(tree_get_stats)(const ORTHANT_NAME(tree) * tree, ort_tree_stats *out);

// ---- shapes: frustum, swept box, ray records, batches ----
// The rules below are exact: docs/QUERIES.md spells each one out with the
// float operations in order, and the tests' brute force uses the same ones.

/// A half-space: the points p with dot(normal, p) + offset >= 0 are inside.
/// The normal need not be unit length.
typedef struct ORTHANT_NAME(plane) {
	float normal[ORTHANT_DIM];
	float offset;
} ORTHANT_NAME(plane);

/// Every item whose box is inside or touching the convex region where all
/// `count` planes hold (a 3D view frustum, a 2D camera polygon). The test is
/// the standard conservative one: a box passes when, for every plane, its most
/// positive vertex p (p[i] = normal[i] >= 0 ? max[i] : min[i]) gives
/// normal[0]*p[0] + normal[1]*p[1] (+ normal[2]*p[2]) + offset >= 0, summed left
/// to right in float. A box near a corner of the region but outside it can
/// pass (the classic false positive); a box that meets the region always does.
/// count 0 reports everything. A sphere item must also pass every plane
/// exactly: in double, sum(normal[i] * c[i]) + offset >= -r * |normal|.
/// Each item once, in no particular order.
/// ORT_ERROR_INVALID_ARGUMENT for count < 0 or planes NULL with count > 0;
/// ORT_ERROR_INVALID_BOX for a non-finite plane. With ORT_PLACEMENT_LEAVES the
/// tree prunes by one plane only (docs/QUERIES.md says why), so it is slower.
ORTHANT_API ort_result ORTHANT_NAME(tree_query_planes)(const ORTHANT_NAME(tree) * tree,
                                                       const ORTHANT_NAME(plane) * planes, int count,
                                                       uint64_t mask, ORTHANT_NAME(query_fn) * fn, void *ctx);

#if ORTHANT_DIM == 3
/// The six planes of the frustum of a view-projection matrix m, column-major as
/// OpenGL keeps it (m[col * 4 + row]; clip space -w <= x, y, z <= w), in the
/// order left, right, bottom, top, near, far (Gribb and Hartmann). Row r of m
/// is (m[r], m[4 + r], m[8 + r], m[12 + r]); left = row3 + row0, right = row3 -
/// row0, bottom = row3 + row1, top = row3 - row1, near = row3 + row2, far = row3
/// - row2, each then divided by the length of its normal (left as is when
/// that length is 0). The normals point into the frustum.
ORTHANT_API void ORTHANT_NAME(frustum_from_matrix)(const float m[16], ORTHANT_NAME(plane) out[6]);
#else
/// The n planes of a convex polygon given counter-clockwise (y up): plane i
/// keeps the points left of the edge e = pts[(i + 1) % n] - pts[i], with the
/// normal (-ey, ex) * (1 / sqrtf(ex*ex + ey*ey)) and then the offset
/// -(normal[0]*pts[i][0] + normal[1]*pts[i][1]), so pts[i] is exactly on it. Convexity is not checked: a
/// clockwise or concave polygon gives planes that do not describe it.
/// ORT_ERROR_INVALID_ARGUMENT for n < 3 or NULL pointers, ORT_ERROR_INVALID_BOX
/// for a non-finite point or an edge of length 0 (out is then unspecified).
ORTHANT_API ort_result ORTHANT_NAME(planes_from_polygon)(const float (*pts)[2], int n, ORTHANT_NAME(plane) * out);
#endif

/// Sweep `box` along delta: box + t * delta for t in [0, max_t] (delta need not
/// be normalised; max_t may be INFINITY). Every item the moving box touches is
/// reported with the entry fraction t, by the Minkowski rule: a ray from
/// box.min along delta against the item's box grown by the moving box's size,
/// lo[i] = item.min[i] - (box.max[i] - box.min[i]), hi[i] = item.max[i], with
/// the slab formula of ortN_tree_ray_cast. fn clips exactly as for ray_cast
/// (t keeps nearer hits, 0 stops, negative ignores the item). Children are
/// visited near-first. Touching counts (closed boxes), so t is 0 for items
/// the box overlaps at the start. For a sphere item t is the first time the
/// moving box touches the sphere, solved exactly in double (docs/QUERIES.md);
/// a box of size 0 uses ray_cast's sphere rule.
ORTHANT_API ort_result ORTHANT_NAME(tree_box_cast)(const ORTHANT_NAME(tree) * tree, ORTHANT_NAME(box) box,
                                                   const float delta[ORTHANT_DIM], float max_t, uint64_t mask,
                                                   ORTHANT_NAME(ray_fn) * fn, void *ctx);

/// An intersection record of a ray and an item's box.
typedef struct ORTHANT_NAME(ray_hit) {
	ort_handle handle;
	void *user_data;
	/// Where the ray enters the box, as in ortN_tree_ray_cast (0 from inside).
	float t;
	/// origin + t * dir clamped into the box; on the entered face's axis it is
	/// that face's coordinate exactly.
	float point[ORTHANT_DIM];
	/// The outward normal of the entered face: -sign(dir[a]) on axis a, where a
	/// is the axis whose slab entry parameter is the largest (the first such axis
	/// on a tie, as when the ray enters exactly at an edge or corner), provided
	/// it is >= 0. Zero when no axis enters at t >= 0: the origin is inside the
	/// box (or on its boundary, leaving it), or dir is zero.
	/// A sphere item: point is origin + t * dir, normal is (point - centre) /
	/// |point - centre| (in double), zero when the origin is inside or on it.
	float normal[ORTHANT_DIM];
} ORTHANT_NAME(ray_hit);

/// The nearest item the segment origin + t * dir, t in [0, max_t], touches:
/// smallest t, then smallest handle id. Returns true and fills *out, or false
/// (out untouched) on no hit or an invalid argument (as ray_cast refuses).
ORTHANT_API bool ORTHANT_NAME(tree_ray_first)(const ORTHANT_NAME(tree) * tree, const float origin[ORTHANT_DIM],
                                              const float dir[ORTHANT_DIM], float max_t, uint64_t mask,
                                              ORTHANT_NAME(ray_hit) * out);

/// Every item the segment touches, as records sorted by t, then handle id.
/// *count gets the number of hits, which may exceed cap: out[0..min(cap,
/// *count)) then holds the first cap of the sorted order. Allocates nothing
/// (a bounded heap in out). out may be NULL when cap is 0 (to count).
ORTHANT_API ort_result ORTHANT_NAME(tree_ray_all)(const ORTHANT_NAME(tree) * tree, const float origin[ORTHANT_DIM],
                                                  const float dir[ORTHANT_DIM], float max_t, uint64_t mask,
                                                  ORTHANT_NAME(ray_hit) * out, int cap, int *count);

/// Run nq box queries (rules of ortN_tree_query_box) and write their hits as
/// compact rows: query i's handles are out[offsets[i] .. offsets[i + 1]), in no
/// particular order; offsets has nq + 1 entries, offsets[0] = 0, and *total =
/// offsets[nq] is the number of hits. offsets and *total are always complete;
/// out receives the hits whose position is below out_cap. When *total >
/// out_cap the result is ORT_ERROR_CAPACITY (the rows past out_cap are not
/// written): allocate *total and call again. No callback, no allocation
/// (with tasks, task.h, the rows are split over the workers, buffered in the
/// context, and laid out exactly as the serial call lays them).
/// ORT_ERROR_INVALID_BOX if a query box is invalid (nothing is reported then).
ORTHANT_API ort_result ORTHANT_NAME(tree_query_boxes)(const ORTHANT_NAME(tree) * tree,
                                                      const ORTHANT_NAME(box) * queries, int nq, uint64_t mask,
                                                      ort_handle *out, int out_cap, int *offsets, int *total);

/// ortN_tree_query_boxes for points: np points, rules of ortN_tree_query_point.
ORTHANT_API ort_result ORTHANT_NAME(tree_query_points)(const ORTHANT_NAME(tree) * tree,
                                                       const float (*points)[ORTHANT_DIM], int np, uint64_t mask,
                                                       ort_handle *out, int out_cap, int *offsets, int *total);

/// ortN_tree_query_boxes for rays: ray i is origins[i] + t * dirs[i], t in
/// [0, max_t[i]]; its row holds every hit's record sorted as ortN_tree_ray_all.
ORTHANT_API ort_result ORTHANT_NAME(tree_query_rays)(const ORTHANT_NAME(tree) * tree,
                                                     const float (*origins)[ORTHANT_DIM],
                                                     const float (*dirs)[ORTHANT_DIM], const float *max_t, int nr,
                                                     uint64_t mask, ORTHANT_NAME(ray_hit) * out, int out_cap,
                                                     int *offsets, int *total);

#ifdef __cplusplus
}
#endif

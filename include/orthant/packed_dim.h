// SPDX-License-Identifier: MIT. Copyright (c) 2026 the orthant authors; the terms are in LICENSE.
/// @file packed_dim.h
/// The packed tree, written once for any dimension: a loose quadtree (2D,
/// `ort2_packed_*`) or octree (3D, `ort3_packed_*`) built whole from an array
/// of boxes and stored as flat arrays, for scenes that are rebuilt every frame
/// or never change. Included by <orthant/orthant2.h> and <orthant/orthant3.h>.
///
/// How it differs from ortN_tree:
/// - items are named by their index in the array given to build (an id), not
///   by handles; there is no insert, remove or move: build again instead;
/// - build is a radix sort of the items' Morton keys and a few linear passes
///   (Karras 2012's linear trees, with loose-octree levels so that large boxes
///   sit high instead of inflating the leaves);
/// - boxes and ids are contiguous in tree order, and nodes are kept in blocks
///   of siblings, their bounds axis by axis; a query walks the blocks with a
///   small fixed stack, testing a block's children at once;
/// - a rebuild allocates only when the count, or the node blocks the scene's
///   shape needs, outgrow what earlier builds made room for.
///
/// Reads (every query and find_pairs) never change the tree (find_pairs keeps
/// scratch in it, held by one call at a time), so any number of threads may
/// query it at once while nobody builds it.
#ifndef ORTHANT_DIM
#error "include <orthant/orthant2.h> or <orthant/orthant3.h>, not packed_dim.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/// A packed tree. Opaque; made by ortN_packed_create, freed by ortN_packed_destroy.
typedef struct ORTHANT_NAME(packed) ORTHANT_NAME(packed);

/// How to make a packed tree. Start from ortN_packed_default_def().
typedef struct ORTHANT_NAME(packed_def) {
	/// Items a leaf holds before it is divided (default 16). 1..64.
	int bucket_size;
	/// Levels of the grid below the root (default and most: 13 in 2D, 9 in
	/// 3D). More than a bucket of items still sharing a cell at this depth,
	/// or sharing a cell and a level, or more own items at a node than twice
	/// a bucket and 16, are a pile: put in Morton order of its centres (in
	/// the cube over them) and cut by count down to buckets, so the tree's
	/// depth may pass max_depth (by at most max_depth + 2 and log of the
	/// count in NCHILD). 1..most.
	int max_depth;
	/// The caller's allocator; zeroed means malloc/free.
	ort_allocator allocator;
	/// Where build lays its grid of cells. Without it (use_region false, the
	/// default) build first bounds the boxes, one more pass over them. With it,
	/// checking, bounding and keying are one pass; boxes outside the region are
	/// stored and found as any other, only grouped less finely. A valid box.
	ORTHANT_NAME(box) region;
	bool use_region;
	/// Workers for build and find_pairs (task.h); NULL (the default) runs them
	/// on the calling thread. Borrowed: it must outlive the tree or be
	/// replaced first (ortN_packed_set_tasks).
	ort_tasks *tasks;
} ORTHANT_NAME(packed_def);

/// The defaults: bucket 16, the deepest max_depth, malloc/free, no region.
ORTHANT_API ORTHANT_NAME(packed_def) ORTHANT_NAME(packed_default_def)(void);

/// Make an empty packed tree. On failure *out is NULL and the result says why.
ORTHANT_API ort_result ORTHANT_NAME(packed_create)(const ORTHANT_NAME(packed_def) * def,
                                                   ORTHANT_NAME(packed) * *out);

/// Free the tree. NULL is ignored. Called from a callback of one of this
/// tree's queries or pair searches, the tree is freed when that call returns
/// (the walk still reads it); use it no more either way.
ORTHANT_API void ORTHANT_NAME(packed_destroy)(ORTHANT_NAME(packed) * tree);

/// Use tasks (NULL: none) for the tree's builds and find_pairs from now on,
/// as if the definition had named it. Not while another thread uses the tree.
ORTHANT_API void ORTHANT_NAME(packed_set_tasks)(ORTHANT_NAME(packed) * tree, ort_tasks *tasks);

/// Replace the tree's contents with boxes[0..count); boxes[i] gets id i.
/// O(count). Allocates only when count, or the node blocks the scene's shape
/// needs, outgrow the room earlier builds made (blocks get a quarter to spare),
/// so rebuilding a moving scene every frame stops allocating after its first
/// frames, and rebuilding the same boxes never allocates.
/// On failure (a NaN, infinite or inverted box: ORT_ERROR_INVALID_BOX; a
/// coordinate past ORTHANT_COORD_LIMIT: ORT_ERROR_OUT_OF_RANGE; no memory) the
/// tree keeps its previous contents. ORT_ERROR_BUSY, changing nothing, while a
/// query or pair search of this tree runs: from its callback (the walk reads
/// the arrays a build would move), or from another thread.
ORTHANT_API ort_result ORTHANT_NAME(packed_build)(ORTHANT_NAME(packed) * tree, const ORTHANT_NAME(box) * boxes,
                                                  int count);

/// ortN_packed_build for boxes embedded in the caller's records: box i is the
/// ortN_box at (const char *)first + i * stride. stride >= sizeof(ortN_box).
ORTHANT_API ort_result ORTHANT_NAME(packed_build_strided)(ORTHANT_NAME(packed) * tree, const void *first,
                                                          size_t stride, int count);

/// Items stored.
ORTHANT_API int ORTHANT_NAME(packed_count)(const ORTHANT_NAME(packed) * tree);

/// The union of every stored box (inverted, min > max, when empty).
ORTHANT_API ORTHANT_NAME(box) ORTHANT_NAME(packed_bounds)(const ORTHANT_NAME(packed) * tree);

/// Every item whose box overlaps box (closed: touching counts).
ORTHANT_API ort_result ORTHANT_NAME(packed_query_box)(const ORTHANT_NAME(packed) * tree, ORTHANT_NAME(box) box,
                                                      ort_id_fn *fn, void *ctx);

/// Every item whose box contains point (boundary included).
ORTHANT_API ort_result ORTHANT_NAME(packed_query_point)(const ORTHANT_NAME(packed) * tree,
                                                        const float point[ORTHANT_DIM], ort_id_fn *fn, void *ctx);

/// Every item whose box comes within radius of centre (distance <= radius).
ORTHANT_API ort_result ORTHANT_NAME(packed_query_sphere)(const ORTHANT_NAME(packed) * tree,
                                                         const float centre[ORTHANT_DIM], float radius,
                                                         ort_id_fn *fn, void *ctx);

/// The segment origin + t * dir, t in [0, max_t], against every box, nearest
/// subtrees first; fn gets each box it enters with the entry t and clips the
/// segment by its return value (see ort_id_ray_fn; as 0 stops, a callback that
/// wants every hit returns INFINITY, which also serves max_t = 0). Hits come
/// roughly near to far, not sorted.
ORTHANT_API ort_result ORTHANT_NAME(packed_ray_cast)(const ORTHANT_NAME(packed) * tree,
                                                     const float origin[ORTHANT_DIM], const float dir[ORTHANT_DIM],
                                                     float max_t, ort_id_ray_fn *fn, void *ctx);

/// The box the segment enters first: true with *id and *t set, or false for
/// no hit (or bad arguments). Equal t: the lower id.
ORTHANT_API bool ORTHANT_NAME(packed_ray_first)(const ORTHANT_NAME(packed) * tree, const float origin[ORTHANT_DIM],
                                                const float dir[ORTHANT_DIM], float max_t, uint32_t *id, float *t);

/// The k items nearest to point (distance to the box, 0 inside), at most
/// max_distance away, in out[0..*found) by ascending distance as reported
/// (rounded to float, infinity past FLT_MAX), equal ones by ascending id.
/// Depth-first, nearest child first, and best-first (by distance, then least
/// id) once more than two leaves of piles are searched for ties alone (the
/// search ortN_packed_nearest_batch makes for each point); allocates nothing unless
/// k > 64 (then k * 16 bytes for the call, through the tree's allocator).
ORTHANT_API ort_result ORTHANT_NAME(packed_nearest)(const ORTHANT_NAME(packed) * tree,
                                                    const float point[ORTHANT_DIM], int k, float max_distance,
                                                    ort_id_neighbor *out, int *found);

/// ortN_packed_nearest for count points at once: row i of out, out[i * k ..
/// i * k + k), gets point i's answer — the rows ortN_packed_nearest gives, the
/// same for any order of the points and any worker count — with the rest of
/// the row (past found[i], when fewer are found) set to {UINT32_MAX, INFINITY}.
/// exclude (NULL: none) names an id per point to leave out (UINT32_MAX: none),
/// such as the point's own box when the points are the items. found may be
/// NULL. The points are searched in a spatial order, each search bounded from
/// the start by what the previous one found, so a batch is several times
/// faster than the calls one by one. Borrows 20 bytes per point for the call
/// (and 16 * k per job when k > 64) from the tree's allocator; with tasks
/// (task.h) the points are split over the workers. ORT_ERROR_INVALID_BOX,
/// writing nothing, when a point is not finite or max_distance is NaN or negative.
ORTHANT_API ort_result ORTHANT_NAME(packed_nearest_batch)(const ORTHANT_NAME(packed) * tree,
                                                          const float (*points)[ORTHANT_DIM], int count, int k,
                                                          float max_distance, const uint32_t *exclude,
                                                          ort_id_neighbor *out, int *found);

/// Every pair of overlapping boxes exactly once (closed: touching counts).
/// Allocates nothing, unless a node holds a pile the build could not spread
/// out (96 or more items of its own: a speck of boxes far smaller than the
/// scene, strips across split lines, duplicates): such piles are sorted and
/// swept, with 16 bytes per item of the largest, through the tree's allocator,
/// kept by the tree for the next call (so a steady scene allocates nothing per
/// call; a call made while another holds them takes its own and gives them
/// back); when that fails, the pile is tested pair by pair (slower, the same
/// pairs). Leaves whose boxes all meet each other are reported without a test
/// per pair.
/// With tasks (task.h) the pairs are found by the workers (a sweep's keys in
/// the context's job buffers), buffered in the context, and reported here, on
/// the calling thread, in the order the serial call reports them.
ORTHANT_API ort_result ORTHANT_NAME(packed_find_pairs)(const ORTHANT_NAME(packed) * tree, ort_id_pair_fn *fn,
                                                       void *ctx);

/// Nodes, leaves, depth, items and the bytes held (ort_tree_stats; entries ==
/// items, items_per_level counts items by the level of their node).
ORTHANT_API void ORTHANT_NAME(packed_get_stats)(const ORTHANT_NAME(packed) * tree, ort_tree_stats *out);

/// Every node, parents before children, for drawing the tree: fn gets the
/// node's bounds (the union of its subtree's boxes) as both cell and bounds —
/// a packed node keeps no cell of its own —, its depth and its own items.
ORTHANT_API void ORTHANT_NAME(packed_visit_nodes)(const ORTHANT_NAME(packed) * tree, ORTHANT_NAME(node_fn) * fn,
                                                  void *ctx);

/// Check every invariant (bounds hold their subtree, lanes tile the items,
/// every block has one parent and comes after it, ids are a permutation).
/// ORT_OK, or ORT_ERROR_CORRUPT with a message in msg (may be NULL). Borrows
/// 4 bytes per block and a bit per item and block from the tree's allocator
/// for the call (ORT_ERROR_OUT_OF_MEMORY if refused).
ORTHANT_API ort_result ORTHANT_NAME(packed_validate)(const ORTHANT_NAME(packed) * tree, char *msg, size_t msg_size);

#ifdef __cplusplus
}
#endif

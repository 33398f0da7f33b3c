// SPDX-License-Identifier: MIT. Copyright (c) 2026 the orthant authors; the terms are in LICENSE.
/// @file base.h
/// orthant: what every dimension shares — results, handles, the allocator hook,
/// the assert hook and the version.
///
/// orthant keeps no global state: every hook here is handed to a tree through its
/// definition struct, so two trees in one program never see each other's settings.
#ifndef ORTHANT_BASE_H
#define ORTHANT_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ORTHANT_VERSION_MAJOR 0
#define ORTHANT_VERSION_MINOR 1
#define ORTHANT_VERSION_PATCH 0
#define ORTHANT_VERSION_STRING "0.1.0"

#if defined(ORTHANT_SHARED) && defined(_WIN32)
#  ifdef ORTHANT_BUILDING
#    define ORTHANT_API __declspec(dllexport)
#  else
#    define ORTHANT_API __declspec(dllimport)
#  endif
#elif defined(ORTHANT_SHARED) && defined(__GNUC__)
#  define ORTHANT_API __attribute__((visibility("default")))
#else
#  define ORTHANT_API
#endif

/// The deepest a tree may be asked to split (ort_tree_def.max_depth).
#define ORTHANT_MAX_DEPTH 32

/// The largest coordinate magnitude a box may have. Beyond it the root could not
/// grow by doubling without overflowing a float, so such boxes are refused with
/// ORT_ERROR_OUT_OF_RANGE instead of being stored in a cell that cannot hold them.
/// The bound is this float exactly, the float nearest 1e30:
/// 1000000015047466219876688855040 (about 1.000000015e30). A coordinate c is accepted
/// when |c| <= ORTHANT_COORD_LIMIT; the next float up, 1.00000009e30, is
/// refused. A program reading decimal text compares the number it read with
/// (double)ORTHANT_COORD_LIMIT before rounding (as the orthant tool does), so
/// 1.00000001e30 is in range and 1.00000002e30 is not.
#define ORTHANT_COORD_LIMIT 1.0e30f

/// Levels reported by ort_tree_stats.items_per_level; deeper levels are summed
/// into the last slot.
#define ORTHANT_STATS_LEVELS 64

/// What every fallible call returns. Failure never changes the tree: the call
/// reports, the tree validates, and everything stored before is still stored.
typedef enum ort_result {
	ORT_OK = 0,
	ORT_ERROR_INVALID_ARGUMENT, ///< NULL where a pointer is required, a bad definition
	ORT_ERROR_INVALID_BOX,      ///< NaN or infinite coordinate, or min > max on an axis
	ORT_ERROR_OUT_OF_RANGE,     ///< a coordinate beyond ORTHANT_COORD_LIMIT
	ORT_ERROR_STALE_HANDLE,     ///< null, removed, reused or foreign handle
	ORT_ERROR_OUT_OF_MEMORY,    ///< the allocator returned NULL
	ORT_ERROR_CAPACITY,         ///< more items than a 32-bit index can address
	ORT_ERROR_CORRUPT,          ///< ort*_tree_validate found a broken invariant
	ORT_ERROR_BUSY,             ///< called from a callback, where it cannot be deferred
	ORT_RESULT_COUNT
} ort_result;

/// A stable, human-readable name for a result ("ORT_OK", ...). Never NULL.
ORTHANT_API const char *ort_result_string(ort_result result);

/// An item's handle: a slot index plus a generation, so a handle that outlives
/// its item (removed, or the tree cleared) is detected instead of silently naming
/// whatever reuses the slot. A slot's generation has 22 bits: a handle kept
/// across more than four million reuses of its one slot could name the slot
/// again (the price of 16-byte items; Box2D's ids keep 16 bits). The all-zero
/// handle is the null handle.
typedef struct ort_handle {
	uint32_t id;  ///< slot index + 1; 0 means null
	uint32_t gen; ///< generation, mixed with a per-tree tag
} ort_handle;

/// The null handle.
#define ORT_NULL_HANDLE ((ort_handle){0, 0})

/// True for the null handle.
static inline bool ort_handle_is_null(ort_handle h) { return h.id == 0; }

/// True when two handles name the same item.
static inline bool ort_handle_equal(ort_handle a, ort_handle b) { return a.id == b.id && a.gen == b.gen; }

/// The caller's allocator. All memory a tree owns goes through it, with the size
/// handed back on free. Unset functions (NULL) mean malloc/free. Either both are
/// set or neither: a partial override is refused with ORT_ERROR_INVALID_ARGUMENT.
typedef struct ort_allocator {
	void *(*alloc)(void *ctx, size_t size);
	void (*free)(void *ctx, void *ptr, size_t size);
	void *ctx;
} ort_allocator;

/// Called on a programmer error (a stale handle, mutating a tree from another
/// tree's handle) before the call returns its error. Tests use it to prove the
/// misuse is seen; a debug build may abort from it. NULL: errors are only returned.
typedef void ort_assert_fn(void *ctx, const char *message);

/// Where a tree keeps an item. Chosen per tree; every query and pair finder
/// returns the same results whichever is used.
typedef enum ort_placement {
	/// Loose cells (each cell's bounds enlarged by the looseness factor); an item
	/// goes as deep as a child's loose bounds can hold it, chosen by its centre,
	/// so nothing piles up on split lines. The default.
	ORT_PLACEMENT_LOOSE = 0,
	/// The smallest cell that fully contains the item (the classic quadtree's rule).
	ORT_PLACEMENT_TIGHT,
	/// Items only in leaves, referenced from every leaf they overlap (as a quadtree
	/// rebuilt every frame often keeps them).
	/// Results are never duplicated.
	ORT_PLACEMENT_LEAVES,
	ORT_PLACEMENT_COUNT
} ort_placement;

/// A name for a placement ("loose", "tight", "leaves").
ORTHANT_API const char *ort_placement_string(ort_placement placement);

/// Which items meet which (Box2D's category/mask scheme, a game octree's type
/// bitmask and static objects). Two items pair only when each one's category
/// meets the other's mask, and never when both are static.
typedef struct ort_filter {
	uint64_t category; ///< the kinds this item is (default 1)
	uint64_t mask;     ///< the kinds it pairs with (default all)
	bool is_static;    ///< static items never pair with each other
} ort_filter;

/// Every item starts with this filter.
#define ORT_FILTER_DEFAULT ((ort_filter){1u, ~(uint64_t)0, false})
/// A query mask that admits every category.
#define ORT_MASK_ALL (~(uint64_t)0)

/// Callbacks of the packed tree (packed_dim.h), whose items are named by
/// their index in the array it was built from. Return true to go on.
typedef bool ort_id_fn(void *ctx, uint32_t id);
/// Called once per overlapping pair of a packed tree, a < b not implied.
typedef bool ort_id_pair_fn(void *ctx, uint32_t a, uint32_t b);

/// A pair of items named by ids: a tree's handle ids (ort_handle.id), or a
/// packed tree's item indices, as the function handing it out says.
typedef struct ort_id_pair {
	uint32_t a, b;
} ort_id_pair;
/// A packed tree's ray callback: t is where the segment enters the box. The
/// return value clips the segment as in ortN_tree_ray_cast: 0 stops, t keeps
/// only nearer hits, max_t goes on, a negative value ignores this hit.
typedef float ort_id_ray_fn(void *ctx, uint32_t id, float t);
/// One result of a packed tree's nearest-neighbour search.
typedef struct ort_id_neighbor {
	uint32_t id;
	float distance; ///< Euclidean distance from the point to the box (0 inside)
} ort_id_neighbor;

/// The shape of a tree, for tests, tools and the benchmark.
typedef struct ort_tree_stats {
	int items;      ///< live items
	int entries;    ///< stored references (> items only with ORT_PLACEMENT_LEAVES)
	int nodes;      ///< live nodes, the root included
	int leaves;     ///< nodes that are not divided
	int depth;      ///< deepest level below the root holding a node
	int items_per_level[ORTHANT_STATS_LEVELS]; ///< entries stored at each depth
	size_t bytes;   ///< bytes the tree holds from its allocator now
	size_t bytes_peak; ///< most bytes it ever held at once
	size_t bytes_pairs; ///< of bytes: what grows with the broad phase's pairs (records, index, ended pairs, diff keys)
} ort_tree_stats;

#ifdef __cplusplus
}
#endif

#endif

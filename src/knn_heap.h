// knn_heap.h: the two heaps of a best-first nearest-neighbour search (the
// tree's and the packed tree's).
//
// - The frontier: nodes still to visit, a min-heap on their distance, in a
//   local array first and in allocated memory once it outgrows it
//   (KNN_HEAP: the tree's search keeps its own-list groups in a second one).
// - The best: the k results so far, a max-heap on (distance, id), so the worst
//   is at the top to be replaced; sorted into result order at the end.
#ifndef ORTHANT_SRC_KNN_HEAP_H
#define ORTHANT_SRC_KNN_HEAP_H

#include <stdbool.h>
#include <stdint.h>
#include <math.h>
#include <string.h>

#include "mem.h"

/// Frontier entries held before a frontier moves to allocated memory.
#define KNN_LOCAL 256

/// A growable min-heap `name` of T, ordered by before(&a, &b), in a local
/// array first: name_init, name_free, name_push (false when it had to grow
/// and the allocation failed), name_pop.
#define KNN_HEAP(name, T, before)                                                                                   \
	typedef struct name {                                                                                           \
		T local[KNN_LOCAL];                                                                                         \
		T *data;                                                                                                    \
		size_t n, cap;                                                                                              \
	} name;                                                                                                         \
	static inline void name##_init(name *h)                                                                         \
	{                                                                                                               \
		h->data = h->local;                                                                                         \
		h->n = 0;                                                                                                   \
		h->cap = KNN_LOCAL;                                                                                         \
	}                                                                                                               \
	static inline void name##_free(const ort_allocator *a, name *h)                                                 \
	{                                                                                                               \
		if (h->data != h->local) allocator_free(a, h->data, h->cap * sizeof *h->data);                              \
	}                                                                                                               \
	static inline bool name##_push(const ort_allocator *a, name *h, T v)                                            \
	{                                                                                                               \
		if (h->n == h->cap) {                                                                                       \
			size_t cap = h->cap * 2;                                                                                \
			T *p = allocator_alloc(a, cap * sizeof *p);                                                             \
			if (!p) return false;                                                                                   \
			memcpy(p, h->data, h->n * sizeof *p);                                                                   \
			if (h->data != h->local) allocator_free(a, h->data, h->cap * sizeof *p);                                \
			h->data = p;                                                                                            \
			h->cap = cap;                                                                                           \
		}                                                                                                           \
		size_t i = h->n++;                                                                                          \
		while (i > 0) {                                                                                             \
			size_t parent = (i - 1) / 2;                                                                            \
			if (!before(&v, &h->data[parent])) break;                                                               \
			h->data[i] = h->data[parent];                                                                           \
			i = parent;                                                                                             \
		}                                                                                                           \
		h->data[i] = v;                                                                                             \
		return true;                                                                                                \
	}                                                                                                               \
	static inline T name##_pop(name *h)                                                                             \
	{                                                                                                               \
		T top = h->data[0], last = h->data[--h->n];                                                                 \
		size_t i = 0;                                                                                               \
		for (;;) {                                                                                                  \
			size_t c = 2 * i + 1;                                                                                   \
			if (c >= h->n) break;                                                                                   \
			if (c + 1 < h->n && before(&h->data[c + 1], &h->data[c])) c++;                                          \
			if (!before(&h->data[c], &last)) break;                                                                 \
			h->data[i] = h->data[c];                                                                                \
			i = c;                                                                                                  \
		}                                                                                                           \
		if (h->n) h->data[i] = last;                                                                                \
		return top;                                                                                                 \
	}

/// A node of the tree's frontier.
typedef struct knn_node {
	double d2;
	uint32_t node;
} knn_node;

static inline bool knn_node_before(const knn_node *a, const knn_node *b) { return a->d2 < b->d2; }

/// The frontier of nodes by distance: knn_heap_init, _free, _push, _pop.
KNN_HEAP(knn_heap, knn_node, knn_node_before)

/// A result candidate: the k best so far form a max-heap on (dist, id).
///
/// The rank is the distance as reported, sqrt(d2) rounded to float, then the
/// id: ranking by the exact d2 instead would list two items whose distances
/// round to one float in exact order, not id order, and far from the origin
/// (a point near 3e38) whole runs of distances round to one float, or past
/// FLT_MAX to infinity. d2 (exact, in double) is kept to reject quickly.
typedef struct knn_best {
	double d2;
	float dist; ///< (float)sqrt(d2): what the caller is told
	uint32_t id; ///< the tie-break: a handle id (item + 1), or a packed tree's id
} knn_best;

/// Result order: nearer (as reported) first, then lower id.
static inline bool knn_before(const knn_best *a, const knn_best *b)
{
	return a->dist < b->dist || (a->dist == b->dist && a->id < b->id);
}

/// The squared distance from which nothing can rank before a candidate at
/// reported distance dist: sqrt(d2) >= the next float up rounds above dist.
/// A node or item at least this far is pruned with one compare. dist is a
/// reported distance, >= 0 (never -0: a square root of a sum of squares) or
/// +inf: the next float up is its bits plus one, without the library call.
static inline double knn_beyond(float dist)
{
	if (!(dist < INFINITY)) return INFINITY;
	uint32_t u;
	memcpy(&u, &dist, sizeof u);
	u += 1;
	float up;
	memcpy(&up, &u, sizeof up);
	double d = up;
	return d * d;
}

static inline knn_best knn_make(double d2, uint32_t id)
{
	knn_best v = {d2, (float)sqrt(d2), id};
	return v;
}

static void knn_sift_down(knn_best *h, int n, int i)
{
	knn_best v = h[i];
	for (;;) {
		int c = 2 * i + 1;
		if (c >= n) break;
		if (c + 1 < n && knn_before(&h[c], &h[c + 1])) c++;
		if (!knn_before(&v, &h[c])) break;
		h[i] = h[c];
		i = c;
	}
	h[i] = v;
}

static void knn_sift_up(knn_best *h, int i)
{
	knn_best v = h[i];
	while (i > 0) {
		int p = (i - 1) / 2;
		if (!knn_before(&h[p], &v)) break;
		h[i] = h[p];
		i = p;
	}
	h[i] = v;
}

/// Offer c to the k best so far, the max-heap best[0..*n): it enters while
/// fewer than k are held, or in place of the worst when it ranks before it.
/// True when it entered.
static inline bool knn_offer(knn_best *best, int *n, int k, knn_best c)
{
	if (*n < k) {
		best[*n] = c;
		knn_sift_up(best, (*n)++);
		return true;
	}
	if (!knn_before(&c, &best[0])) return false;
	best[0] = c;
	knn_sift_down(best, *n, 0);
	return true;
}

/// The max-heap best[0..n) in ascending result order.
static void knn_heap_sort(knn_best *best, int n)
{
	for (int m = n; m > 1; --m) {
		knn_best x = best[0];
		best[0] = best[m - 1];
		best[m - 1] = x;
		knn_sift_down(best, m - 1, 0);
	}
}

#endif

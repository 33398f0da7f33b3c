/// @file bench.h
/// orthant_bench: the interface every benchmarked implementation fills in.
///
/// A scenario hands an implementation the scene's boxes (ort3_box; in 2D the z
/// extent is 0..0, so one three-axis overlap test serves both dimensions). A
/// dynamic scenario times, per frame, `update` (tell the structure which boxes
/// moved) plus `pairs` (report every overlapping pair once). A static scenario
/// (S5) times `create` and then batches of queries. Every result goes through a
/// sink that keeps a count and an order-independent checksum, which the runner
/// compares with the brute-force reference before any time is kept.
#ifndef ORTHANT_BENCH_H
#define ORTHANT_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "orthant/orthant.h"

#ifdef __cplusplus
extern "C" {
#endif

/// A set of pairs or ids as a count and a sum of mixed keys: equal sets give
/// equal sums whatever the order; a missing, extra or duplicated element changes both.
typedef struct bench_sink {
	uint64_t count;
	uint64_t sum;
} bench_sink;

static inline uint64_t bench_mix(uint64_t k)
{
	k *= 0x9E3779B97F4A7C15ull;
	k ^= k >> 29;
	k *= 0xBF58476D1CE4E5B9ull;
	k ^= k >> 32;
	return k;
}

/// The median of v[0, n), sorted in place (the mean of the middle two for
/// even n; NAN for none): report.c.
double bench_median(double *v, int n);

static inline void bench_sink_pair(bench_sink *s, uint32_t a, uint32_t b)
{
	uint64_t lo = a < b ? a : b, hi = a < b ? b : a;
	s->count++;
	s->sum += bench_mix(hi << 32 | lo);
}

/// A pair's key: hi << 32 | lo, lo < hi.
static inline uint64_t bench_pair_key(uint32_t a, uint32_t b)
{
	uint64_t lo = a < b ? a : b, hi = a < b ? b : a;
	return hi << 32 | lo;
}

/// The pairs keys[0, n) (bench_pair_key's) into s. Every adapter reports the
/// pairs it keeps itself (those of two static boxes, which no frame changes)
/// through this one loop, so that part of a frame is the same code for every
/// engine. The keys are fetched 1 KB ahead: S10's 1.06M static pairs, cold
/// after the frame's step rewrote the boxes, took 5.1 ms a frame without
/// (1.7 GB/s) and 2.1 with.
static inline void bench_sink_keys(bench_sink *s, const uint64_t *keys, size_t n)
{
	for (size_t k = 0; k < n; ++k) {
		if (k + 128 < n) __builtin_prefetch(&keys[k + 128]);
		bench_sink_pair(s, (uint32_t)keys[k], (uint32_t)(keys[k] >> 32));
	}
}

static inline void bench_sink_id(bench_sink *s, uint32_t id)
{
	s->count++;
	s->sum += bench_mix((uint64_t)id + 1);
}

/// Closed overlap (touching counts), all three axes (2D scenes have z = 0..0).
static inline int bench_overlap(const ort3_box *a, const ort3_box *b)
{
	return a->min[0] <= b->max[0] && b->min[0] <= a->max[0] && a->min[1] <= b->max[1] &&
	       b->min[1] <= a->max[1] && a->min[2] <= b->max[2] && b->min[2] <= a->max[2];
}

/// What a dynamic frame (or a static build) sees.
typedef struct bench_frame {
	int dim;              ///< 2 or 3
	int count;            ///< boxes, indexed 0..count-1 (the index is the id)
	const ort3_box *boxes; ///< current boxes
	ort3_box world;       ///< the scene's world box (boxes stay inside it)
	const int *moved;     ///< ids whose box changed since the last update
	int moved_count;
	/// NULL: any box may move. Else mobile[i] != 0 for the boxes that ever move;
	/// the others are static from the start, and engines that keep static
	/// objects apart (a static tree, a non-moving layer) put them there.
	const unsigned char *mobile;
} bench_frame;

/// A ray: origin + t * dir, t in [0, max_t].
typedef struct bench_ray {
	float origin[3];
	float dir[3];
	float max_t;
} bench_ray;

/// What a static query batch gets and returns. Outputs are per query so the
/// runner can compare any query with brute force.
typedef struct bench_queries {
	int count;
	const ort3_box *boxes;  ///< box queries
	const bench_ray *rays;  ///< ray queries
	const float (*points)[3]; ///< kNN query points
	int k;                  ///< neighbours per kNN query
	bench_sink *sinks;      ///< out: one sink per query (box queries, all-hit rays)
	float *first_t;         ///< out: per ray, the nearest entry t (INFINITY for none)
	float *knn_dist;        ///< out: per point, k ascending distances (INFINITY pads)
} bench_queries;

/// Capabilities.
enum {
	BENCH_DIM2 = 1 << 0,
	BENCH_DIM3 = 1 << 1,
};

/// One implementation. Unused operations are NULL.
typedef struct bench_impl {
	const char *name;
	const char *family; ///< "orthant", "baseline" or "peer"
	unsigned dims;      ///< BENCH_DIM2 | BENCH_DIM3
	int max_count;      ///< skip scenes larger than this (0: no limit)
	int dynamic_only;   ///< a variant that differs only in how it follows motion: skip S5, S9
	/// Make the structure from frame->boxes (bulk when it can).
	void *(*create)(const bench_frame *frame);
	/// The boxes in frame->moved changed; bring the structure up to date.
	void (*update)(void *state, const bench_frame *frame);
	/// Every overlapping pair exactly once, into sink.
	void (*pairs)(void *state, const bench_frame *frame, bench_sink *sink);
	void (*destroy)(void *state);
	/// Bytes the structure holds by its own account (NULL: only heap growth is known).
	size_t (*bytes)(void *state);
	/// Of those, the bytes that grow with the pairs (NULL: not known apart).
	size_t (*pair_bytes)(void *state);
	/// Static queries over the created structure.
	void (*query_boxes)(void *state, const bench_frame *frame, bench_queries *q);
	void (*ray_all)(void *state, const bench_frame *frame, bench_queries *q);
	void (*ray_first)(void *state, const bench_frame *frame, bench_queries *q);
	void (*knn)(void *state, const bench_frame *frame, bench_queries *q);
} bench_impl;

/// Registration: each module appends its implementations to list (at most
/// max entries) and returns how many it added.
int bench_baselines_register(bench_impl *list, int max);
int bench_orthant_register(bench_impl *list, int max);
int bench_box2d_register(bench_impl *list, int max);
int bench_bullet_register(bench_impl *list, int max);
int bench_sidx_register(bench_impl *list, int max);
int bench_boost_register(bench_impl *list, int max);
int bench_box2d3_register(bench_impl *list, int max);
int bench_jolt_register(bench_impl *list, int max);

/// The thread rows (scn_threads.c, `--only T`): one worker against two, printed
/// as a table; returns how many rows the two disagreed on.
int bench_threads_run(int quick, int rounds);

/// Shared exact helpers (baselines.c), also used by peers for their exact filter.
/// The entry parameter of a ray into a box: t in [0, max_t], or -1 for a miss.
float bench_ray_box(const bench_ray *ray, const ort3_box *box, int dim);
/// Euclidean distance from a point to a box (0 inside).
float bench_point_box_dist(const float p[3], const ort3_box *box, int dim);
/// Insert d into the ascending list best[0..k) (INFINITY-padded), dropping the largest.
void bench_knn_push(float *best, int k, float d);

/// The adversarial scenario (scn_adversarial.c): scenes built to hurt, each
/// timed against a uniform one, per placement and operation; a Markdown table
/// to path, n boxes a scene (0: 20000, quick 4000). Returns the exit status.
int bench_adversarial(const char *path, int quick, int n, bool shuffle);

#ifdef __cplusplus
}
#endif

#endif

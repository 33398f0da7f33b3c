// scn_adversarial.c: the adversarial scenario — scenes built to hurt a
// quadtree or octree, each timed against a uniform scene of the same size, per
// placement (loose, tight, leaves) and for the packed tree, per operation,
// in 2D and 3D. The table gives adversarial time / uniform time, measured in
// the same run; the goal is every ratio at most 5.
//
//   orthant_bench --adversarial FILE [--quick] [--adversarial-n N] [--adversarial-shuffle]
//
// --adversarial-shuffle inserts every scene in random order (the default:
// in the order its boxes are made), since an index laid out as items arrive
// can hide a cliff behind a kind order (pinwheel-shuffled shows one).
//
// The scenes (n boxes; the uniform one has about n pairs):
//   speck     the uniform scene shrunk 1e5 times into a corner, one box far away
//   strips    long thin boxes along x, stacked apart: no pairs
//   binary    points at x = 2^-u, u uniform in [0, 60]: binary scales towards 0
//   straddle  every box across the centre line x = 500 of the region
//   dups      the uniform scene with every box there 8 times
//   pinwheel  four arms of strips around the centre, each arm across a
//             centre line, long in x or in y (every other axis long): every
//             axis has a quarter of all pairs overlapping on it, no pairs
//   plates    all over one square (interval in 2D), stacked apart on the last
//             axis: every pair overlaps on all axes but one, no pairs
//   rods      one family long on each axis, thin on the others, the families
//             apart (support/scene.h): in 3D every pair of a family meets on
//             its long axis and rods of two families on two axes
// and scenes shaped like data users bring (a tree that is only tried on the
// shapes above can still fall over on these):
//   clusters  64 dense blobs (normal, sigma 2) of tiny boxes, like cities on
//             a map or particles in jets, the rest of the region empty
//   tiles     a lattice of equal boxes whose faces touch exactly, like a tile
//             map or a voxel grid: every box meets each neighbour
//   sizes     sides from a power law (Pareto, exponent 1), like buildings or
//             asteroids: most tiny, a few across much of the region
//   shell     tiny boxes on a circle (2D) or a sphere (3D) of radius 400,
//             like a scanned surface
//   diagonal  tiny boxes along the region's diagonal: a curve that crosses
//             every level's centre lines
//   nested    groups of 16 boxes about one centre, each holding the smaller
//             ones, like levels of detail or zones around a site
//   segments  the boxes of segments in uniform directions, lengths
//             exponential: roads, cables, a mesh's edges
//   spokes    short segments on rays from the region's centre out to 450:
//             long boxes crowding towards the centre, across every centre
//             line, like a scanner's beams
//   pinwheel-shuffled  the pinwheel inserted in random order, not an arm
//             at a time round-robin: own lists' index runs then mix the arms
//             at every level (tests/test_adversarial.c:
//             test_pinwheel_tree_query_work)
//
// A scene that meets many more pairs a box than the uniform one (2D rods:
// 25 against 0.5) also gets an output-matched baseline: the uniform scene
// with its boxes grown by a factor found by bisection until its pairs a box
// match the scene's within 5%; the pairs, update, query and remove + insert
// columns (each remove ends its item's pairs) are then also given against it
// (both scenes' pairs a box and query hits printed), in a second table. The
// verdict below the tables counts both ways.
//
// The operations: build (insert one by one; packed: build), find_pairs, the
// first update_pairs, box queries around items, rays, 10 nearest, and a
// remove + insert of every item. Each is the median of a few rounds.
//
// The file compiles itself once per dimension (AD_DIM 2, then 3), so one
// implementation serves both.
#ifndef AD_DIM
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "scene.h"

static double ad_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t ad_rng(uint64_t *s)
{
	*s += 0x9E3779B97F4A7C15ull;
	uint64_t z = *s;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static float ad_float(uint64_t *s, float lo, float hi)
{
	return lo + (hi - lo) * (float)((ad_rng(s) >> 40) * (1.0 / 16777216.0));
}

enum {
	AD_UNIFORM,
	AD_SPECK,
	AD_STRIPS,
	AD_BINARY,
	AD_STRADDLE,
	AD_DUPS,
	AD_PINWHEEL,
	AD_PLATES,
	AD_RODS,
	AD_CLUSTERS,
	AD_TILES,
	AD_SIZES,
	AD_SHELL,
	AD_DIAGONAL,
	AD_NESTED,
	AD_SEGMENTS,
	AD_SPOKES,
	AD_PINWHEEL_SHUFFLED,
	AD_KINDS
};
static const char *const ad_kind_names[AD_KINDS] = {"uniform",  "speck",  "strips", "binary", "straddle",
                                                    "dups",     "pinwheel", "plates", "rods",   "clusters",
                                                    "tiles",    "sizes",  "shell",  "diagonal", "nested",
                                                    "segments", "spokes",   "pinwheel-shuffled"};
enum { AD_BUILD, AD_PAIRS, AD_UPDATE, AD_QUERY, AD_RAY, AD_KNN, AD_CHURN, AD_OPS };
static const char *const ad_op_names[AD_OPS] = {"build", "pairs", "update", "query", "ray", "knn", "remove+insert"};
#define AD_PLACES 4
static const char *const ad_place_names[AD_PLACES] = {"loose", "tight", "leaves", "packed"};

static float ad_draw(void *s, float lo, float hi) { return ad_float(s, lo, hi); }

/// A standard normal sample (Box-Muller, one of its pair), from two draws of s.
static float ad_normal(uint64_t *s)
{
	float u1 = ad_float(s, 1e-7f, 1.0f), u2 = ad_float(s, 0.0f, 6.2831853f);
	return sqrtf(-2.0f * logf(u1)) * cosf(u2);
}

/// Box i of n of a scene kind, lo/hi per axis, in the region [0, 1000]^dim;
/// the uniform scene's sides grown `grow` times (1 for the scenes proper).
static void ad_box(int kind, int dim, uint64_t *s, int i, int n, float grow, float *lo, float *hi)
{
	float side = ad_float(s, 0.5f, 3.0f) * grow;
	// A uniform density of about one pair per box.
	float world = dim == 2 ? 3.5f * sqrtf((float)n) : 3.5f * cbrtf((float)n * 3.0f);
	if (world > 1000.0f) world = 1000.0f;
	int src = kind == AD_DUPS ? i / 8 : i;
	uint64_t bs = (uint64_t)src * 7919u + 1u;
	for (int d = 0; d < dim; ++d) {
		lo[d] = kind == AD_DUPS ? ad_float(&bs, 0.0f, world) : ad_float(s, 0.0f, world);
		hi[d] = lo[d] + (kind == AD_DUPS ? 2.0f : side);
	}
	switch (kind) {
	case AD_SPECK:
		for (int d = 0; d < dim; ++d) {
			lo[d] = i == n - 1 ? 1e6f : lo[d] * 1e-5f;
			hi[d] = i == n - 1 ? 1e6f + 1.0f : hi[d] * 1e-5f;
		}
		break;
	case AD_STRIPS:
		lo[0] = ad_float(s, 0.0f, 10.0f);
		hi[0] = ad_float(s, 990.0f, 1000.0f);
		for (int d = 1; d < dim; ++d) {
			int per = dim == 2 ? n : (int)sqrtf((float)n) + 1;
			int row = d == 1 ? i % per : i / per;
			lo[d] = (float)row * (1000.0f / (float)per);
			hi[d] = lo[d] + 0.5f * (1000.0f / (float)per);
		}
		break;
	case AD_BINARY:
		for (int d = 0; d < dim; ++d) lo[d] = hi[d] = d == 0 ? exp2f(-ad_float(s, 0.0f, 60.0f)) : ad_float(s, 0.0f, 1.0f);
		break;
	case AD_STRADDLE:
		lo[0] = 500.0f - side * 0.5f;
		hi[0] = 500.0f + side * 0.5f;
		for (int d = 1; d < dim; ++d) {
			lo[d] = ad_float(s, 0.0f, 1000.0f);
			hi[d] = lo[d] + 1000.0f / (float)n;
		}
		break;
	case AD_PINWHEEL:
	case AD_PINWHEEL_SHUFFLED:
	case AD_PLATES:
	case AD_RODS: {
		scn_pile pk = kind == AD_PLATES ? SCN_PILE_PLATES : kind == AD_RODS ? SCN_PILE_RODS : SCN_PILE_PINWHEEL;
		scn_pile_box(pk, dim, ad_draw, s, i, n, lo, hi);
		break;
	}
	case AD_CLUSTERS: {
		// Blob i % 64 (centres drawn from their own stream), offsets normal by
		// Box-Muller.
		uint64_t cs = (uint64_t)(i % 64) * 104729u + 7u;
		for (int d = 0; d < dim; ++d) {
			float c = ad_float(&cs, 50.0f, 950.0f);
			lo[d] = c + 2.0f * ad_normal(s);
			hi[d] = lo[d] + ad_float(s, 0.01f, 0.05f);
		}
		break;
	}
	case AD_TILES: {
		int per = (int)ceil(pow((double)n, 1.0 / dim) - 1e-9), at = i;
		float step = 1000.0f / (float)per;
		for (int d = 0; d < dim; ++d, at /= per) {
			lo[d] = (float)(at % per) * step;
			hi[d] = (float)(at % per + 1) * step;
		}
		break;
	}
	case AD_SIZES: {
		float len = 0.5f / ad_float(s, 1e-6f, 1.0f);
		for (int d = 0; d < dim; ++d) {
			lo[d] = ad_float(s, 0.0f, 1000.0f);
			hi[d] = fminf(lo[d] + len, 1000.0f);
		}
		break;
	}
	case AD_SHELL: {
		// A direction uniform on the circle or sphere (normalised normals).
		float v[3], len = 0.0f;
		for (int d = 0; d < dim; ++d) {
			v[d] = ad_normal(s);
			len += v[d] * v[d];
		}
		len = sqrtf(len);
		for (int d = 0; d < dim; ++d) {
			lo[d] = 500.0f + 400.0f * v[d] / len;
			hi[d] = lo[d] + ad_float(s, 0.01f, 0.05f);
		}
		break;
	}
	case AD_DIAGONAL: {
		float t = ad_float(s, 0.0f, 1000.0f);
		for (int d = 0; d < dim; ++d) {
			lo[d] = t;
			hi[d] = t + ad_float(s, 0.01f, 0.05f);
		}
		break;
	}
	case AD_NESTED: {
		// Groups of 16 boxes around one centre, each a step larger than the
		// last (the centres from their own stream): every box of a group
		// holds the smaller ones.
		uint64_t cs = (uint64_t)(i / 16) * 6151u + 3u;
		float r = 0.1f + 0.2f * (float)(i % 16);
		for (int d = 0; d < dim; ++d) {
			float c = ad_float(&cs, 5.0f, world - 5.0f);
			lo[d] = c - r;
			hi[d] = c + r;
		}
		break;
	}
	case AD_SEGMENTS: {
		// The bounding box of a segment from a uniform point, in a direction
		// uniform on the circle or sphere, its length exponential (mean 4):
		// roads, cables, edges of a mesh.
		float v[3], len = 0.0f, at[3];
		for (int d = 0; d < dim; ++d) {
			v[d] = ad_normal(s);
			len += v[d] * v[d];
			at[d] = ad_float(s, 0.0f, world);
		}
		float l = -4.0f * logf(ad_float(s, 1e-7f, 1.0f)) / (sqrtf(len) + 1e-30f);
		for (int d = 0; d < dim; ++d) {
			float e = at[d] + l * v[d];
			lo[d] = fminf(at[d], e);
			hi[d] = fmaxf(at[d], e);
		}
		break;
	}
	case AD_SPOKES: {
		// Segments of length 3 on rays from the region's centre, at every
		// distance out to 450: long boxes crowding towards the centre
		// (a scanner's beams, a wheel's spokes), across every centre line.
		float v[3], len = 0.0f, r = ad_float(s, 0.0f, 450.0f);
		for (int d = 0; d < dim; ++d) {
			v[d] = ad_normal(s);
			len += v[d] * v[d];
		}
		len = sqrtf(len) + 1e-30f;
		for (int d = 0; d < dim; ++d) {
			float a = 500.0f + r * v[d] / len, b = 500.0f + (r + 3.0f) * v[d] / len;
			lo[d] = fminf(a, b);
			hi[d] = fmaxf(a, b);
		}
		break;
	}
	default: break;
	}
}

#define AD_DIM 2
#include "scn_adversarial.c"
#undef AD_DIM
#define AD_DIM 3
#include "scn_adversarial.c"
#undef AD_DIM

int bench_adversarial(const char *path, int quick, int n, bool shuffle)
{
	int rounds = quick ? 1 : 3;
	if (n <= 0) n = quick ? 4000 : 20000;
	FILE *out = fopen(path, "w");
	if (!out) {
		fprintf(stderr, "orthant_bench: cannot write %s\n", path);
		return 1;
	}
	fprintf(out, "## Adversarial scenes: time / the uniform scene's time, same run\n\n");
	fprintf(out, "%d boxes, median of %d rounds; `orthant_bench --adversarial FILE%s%s`.%s The goal: every ratio <= 5.\n",
	        n, rounds, n == (quick ? 4000 : 20000) ? "" : " --adversarial-n N", shuffle ? " --adversarial-shuffle" : "",
	        shuffle ? " Every scene inserted in random order." : "");
	int m2 = 0, m3 = 0;
	int over = ad_run2_d(out, n, rounds, shuffle, &m2);
	over += ad_run3_d(out, n, rounds, shuffle, &m3);
	fprintf(out,
	        "\n%d ratio(s) above 5 against the plain uniform scene; %d with the pairs, update, query and remove + insert columns"
	        " of the scenes with an output-matched baseline taken against it.\n",
	        over, m2 + m3);
	fclose(out);
	fprintf(stderr, "adversarial: %d ratio(s) above 5 (%d output-matched), table in %s\n", over, m2 + m3, path);
	return 0;
}

#else // ---- one dimension ----------------------------------------------------------

#define AD_CAT_(a, b, c) a##b##_##c
#define AD_CAT(a, b, c) AD_CAT_(a, b, c)
#define AD(x) AD_CAT(ort, AD_DIM, x)
#define AD_FN(x) AD_CAT(x, AD_DIM, d)

static bool AD_FN(ad_count_pair)(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)a, (void)b, (void)ua, (void)ub;
	++*(uint64_t *)ctx;
	return true;
}

static bool AD_FN(ad_count_id_pair)(void *ctx, uint32_t a, uint32_t b)
{
	(void)a, (void)b;
	++*(uint64_t *)ctx;
	return true;
}

static bool AD_FN(ad_count_hit)(void *ctx, ort_handle h, void *u)
{
	(void)h, (void)u;
	++*(uint64_t *)ctx;
	return true;
}

static bool AD_FN(ad_count_id)(void *ctx, uint32_t id)
{
	(void)id;
	++*(uint64_t *)ctx;
	return true;
}

static float AD_FN(ad_ray_hit)(void *ctx, ort_handle h, void *u, float t)
{
	(void)h, (void)u;
	++*(uint64_t *)ctx;
	return t;
}

static float AD_FN(ad_ray_id)(void *ctx, uint32_t id, float t)
{
	(void)id;
	++*(uint64_t *)ctx;
	return t;
}

static void AD_FN(ad_event)(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)a, (void)b, (void)ua, (void)ub;
	++*(uint64_t *)ctx;
}

/// A ray from just below a random item's low corner, in a random direction.
static void AD_FN(ad_ray_near)(const AD(box) * boxes, int n, uint64_t *s, float o[AD_DIM], float dir[AD_DIM])
{
	const AD(box) *b = &boxes[ad_rng(s) % (uint64_t)n];
	for (int d = 0; d < AD_DIM; ++d) {
		o[d] = b->min[d] - 1.0f;
		dir[d] = ad_float(s, -1.0f, 1.0f);
	}
}

/// Seconds for each operation on one scene, one placement (3 = packed);
/// *pairs gets the pairs find_pairs found, *hits the box queries' hits.
static void AD_FN(ad_time)(const AD(box) * boxes, int n, int place, double t[AD_OPS], uint64_t *pairs,
                           uint64_t *hits)
{
	enum { Q = 2000 };
	uint64_t sink = 0, s = 99;
	for (int op = 0; op < AD_OPS; ++op) t[op] = 0.0;
	double t0 = ad_now();
	if (place == 3) {
		AD(packed_def) def = AD(packed_default_def)();
		AD(packed) *p = NULL;
		if (AD(packed_create)(&def, &p) != ORT_OK || AD(packed_build)(p, boxes, n) != ORT_OK) exit(1);
		t[AD_BUILD] = ad_now() - t0;
		t0 = ad_now();
		AD(packed_find_pairs)(p, AD_FN(ad_count_id_pair), &sink);
		t[AD_PAIRS] = ad_now() - t0;
		*pairs = sink;
		t0 = ad_now();
		sink = 0;
		for (int q = 0; q < Q; ++q) AD(packed_query_box)(p, boxes[ad_rng(&s) % (uint64_t)n], AD_FN(ad_count_id), &sink);
		t[AD_QUERY] = ad_now() - t0;
		*hits = sink;
		t0 = ad_now();
		for (int q = 0; q < Q; ++q) {
			float o[AD_DIM], dir[AD_DIM];
			AD_FN(ad_ray_near)(boxes, n, &s, o, dir);
			AD(packed_ray_cast)(p, o, dir, 50.0f, AD_FN(ad_ray_id), &sink);
		}
		t[AD_RAY] = ad_now() - t0;
		t0 = ad_now();
		for (int q = 0; q < Q; ++q) {
			ort_id_neighbor nb[10];
			int found;
			AD(packed_nearest)(p, boxes[ad_rng(&s) % (uint64_t)n].max, 10, INFINITY, nb, &found);
		}
		t[AD_KNN] = ad_now() - t0;
		AD(packed_destroy)(p);
		return;
	}
	AD(tree_def) def = AD(tree_default_def)();
	def.placement = place == 0 ? ORT_PLACEMENT_LOOSE : place == 1 ? ORT_PLACEMENT_TIGHT : ORT_PLACEMENT_LEAVES;
	def.use_region = true;
	for (int d = 0; d < AD_DIM; ++d) {
		def.region.min[d] = 0.0f;
		def.region.max[d] = 1000.0f;
	}
	AD(tree) *tr = NULL;
	ort_handle *h = malloc(sizeof *h * (size_t)n);
	if (!h || AD(tree_create)(&def, &tr) != ORT_OK) exit(1);
	for (int i = 0; i < n; ++i)
		if (AD(tree_insert)(tr, boxes[i], NULL, &h[i]) != ORT_OK) exit(1);
	t[AD_BUILD] = ad_now() - t0;
	t0 = ad_now();
	AD(tree_find_pairs)(tr, ORT_MASK_ALL, AD_FN(ad_count_pair), &sink);
	t[AD_PAIRS] = ad_now() - t0;
	*pairs = sink;
	t0 = ad_now();
	AD(tree_update_pairs)(tr, AD_FN(ad_event), AD_FN(ad_event), &sink);
	t[AD_UPDATE] = ad_now() - t0;
	t0 = ad_now();
	sink = 0;
	for (int q = 0; q < Q; ++q)
		AD(tree_query_box)(tr, boxes[ad_rng(&s) % (uint64_t)n], ORT_MASK_ALL, AD_FN(ad_count_hit), &sink);
	t[AD_QUERY] = ad_now() - t0;
	*hits = sink;
	t0 = ad_now();
	for (int q = 0; q < Q; ++q) {
		float o[AD_DIM], dir[AD_DIM];
		AD_FN(ad_ray_near)(boxes, n, &s, o, dir);
		AD(tree_ray_cast)(tr, o, dir, 50.0f, ORT_MASK_ALL, AD_FN(ad_ray_hit), &sink);
	}
	t[AD_RAY] = ad_now() - t0;
	t0 = ad_now();
	for (int q = 0; q < Q; ++q) {
		AD(neighbor) nb[10];
		int found;
		AD(tree_nearest)(tr, boxes[ad_rng(&s) % (uint64_t)n].max, 10, INFINITY, ORT_MASK_ALL, nb, &found);
	}
	t[AD_KNN] = ad_now() - t0;
	t0 = ad_now();
	for (int i = 0; i < n; ++i) {
		AD(tree_remove)(tr, h[i]);
		if (AD(tree_insert)(tr, boxes[i], NULL, &h[i]) != ORT_OK) exit(1);
	}
	t[AD_CHURN] = ad_now() - t0;
	AD(tree_destroy)(tr);
	free(h);
}

/// The uniform scene of n boxes with sides grown `grow` times, into boxes.
static void AD_FN(ad_uniform)(AD(box) * boxes, int n, float grow)
{
	uint64_t s = 1234u + AD_UNIFORM;
	for (int i = 0; i < n; ++i) {
		float lo[3], hi[3];
		ad_box(AD_UNIFORM, AD_DIM, &s, i, n, grow, lo, hi);
		memcpy(boxes[i].min, lo, sizeof boxes[i].min);
		memcpy(boxes[i].max, hi, sizeof boxes[i].max);
	}
}

/// The pairs of boxes[0..n) (the packed tree's find_pairs).
static uint64_t AD_FN(ad_pairs)(const AD(box) * boxes, int n)
{
	AD(packed_def) def = AD(packed_default_def)();
	AD(packed) *p = NULL;
	uint64_t k = 0;
	if (AD(packed_create)(&def, &p) != ORT_OK || AD(packed_build)(p, boxes, n) != ORT_OK) exit(1);
	AD(packed_find_pairs)(p, AD_FN(ad_count_id_pair), &k);
	AD(packed_destroy)(p);
	return k;
}

/// The growth of the uniform scene's sides at which it meets `want` pairs
/// (within 5%; more pairs with larger boxes, so a bisection), into boxes;
/// *got the pairs it meets there.
static float AD_FN(ad_match)(AD(box) * boxes, int n, uint64_t want, uint64_t *got)
{
	float lo = 1.0f, hi = 2.0f;
	for (AD_FN(ad_uniform)(boxes, n, hi); (*got = AD_FN(ad_pairs)(boxes, n)) < want && hi < 1e3f;)
		AD_FN(ad_uniform)(boxes, n, hi *= 2.0f);
	// The growth that matched (hi, failing a match: the nearest above).
	float grow = hi;
	for (int it = 0; it < 40 && fabs((double)*got - (double)want) > 0.05 * (double)want; ++it) {
		float mid = 0.5f * (lo + hi);
		AD_FN(ad_uniform)(boxes, n, mid);
		*got = AD_FN(ad_pairs)(boxes, n);
		if (*got < want)
			lo = mid;
		else
			hi = mid;
		grow = fabs((double)*got - (double)want) > 0.05 * (double)want ? hi : mid;
	}
	AD_FN(ad_uniform)(boxes, n, grow);
	*got = AD_FN(ad_pairs)(boxes, n);
	return grow;
}

/// Medians over `rounds` of each operation on boxes, per placement.
static void AD_FN(ad_medians)(const AD(box) * boxes, int n, int rounds, bool warm, double med[AD_PLACES][AD_OPS],
                              uint64_t *pairs, uint64_t hits[AD_PLACES])
{
	double all[8][AD_OPS], samples[8];
	for (int place = 0; place < AD_PLACES; ++place) {
		// A first, untimed pass when asked: the uniform scene, timed first,
		// would otherwise pay for every cold cache and page.
		if (warm) AD_FN(ad_time)(boxes, n, place, all[0], pairs, &hits[place]);
		for (int r = 0; r < rounds; ++r) AD_FN(ad_time)(boxes, n, place, all[r], pairs, &hits[place]);
		for (int op = 0; op < AD_OPS; ++op) {
			for (int r = 0; r < rounds; ++r) samples[r] = all[r][op];
			med[place][op] = bench_median(samples, rounds);
		}
	}
}

/// The table for this dimension; returns how many ratios pass 5 (plain,
/// and in *over_matched with the output-matched baseline where one is);
/// shuffle: every scene inserted in random order.
static int AD_FN(ad_run)(FILE *out, int n, int rounds, bool shuffle, int *over_matched)
{
	AD(box) *boxes = malloc(sizeof *boxes * (size_t)n);
	static double med[AD_KINDS][AD_PLACES][AD_OPS], mmed[AD_KINDS][AD_PLACES][AD_OPS];
	uint64_t pairs[AD_KINDS] = {0}, mpairs[AD_KINDS] = {0}, hits[AD_KINDS][AD_PLACES], mhits[AD_KINDS][AD_PLACES];
	float grow[AD_KINDS] = {0};
	if (!boxes || rounds > 8) exit(1);
	for (int kind = 0; kind < AD_KINDS; ++kind) {
		uint64_t s = 1234u + (uint64_t)kind;
		for (int i = 0; i < n; ++i) {
			float lo[3], hi[3];
			ad_box(kind, AD_DIM, &s, i, n, 1.0f, lo, hi);
			memcpy(boxes[i].min, lo, sizeof boxes[i].min);
			memcpy(boxes[i].max, hi, sizeof boxes[i].max);
		}
		if (kind == AD_PINWHEEL_SHUFFLED || shuffle) // Fisher-Yates, the scene's own stream
			for (int i = n - 1; i > 0; --i) {
				int j = (int)(ad_rng(&s) % (uint64_t)(i + 1));
				AD(box) x = boxes[i];
				boxes[i] = boxes[j];
				boxes[j] = x;
			}
		AD_FN(ad_medians)(boxes, n, rounds, kind == AD_UNIFORM, med[kind], &pairs[kind], hits[kind]);
		fprintf(stderr, "adversarial %dD %s done\n", AD_DIM, ad_kind_names[kind]);
	}
	// Output-matched baselines: for scenes with more than twice the uniform
	// scene's pairs (a scene with fewer is held to the plain uniform scene,
	// which has more output than it).
	for (int kind = 1; kind < AD_KINDS; ++kind) {
		if (pairs[kind] <= 2 * pairs[AD_UNIFORM]) continue;
		grow[kind] = AD_FN(ad_match)(boxes, n, pairs[kind], &mpairs[kind]);
		uint64_t k = 0;
		AD_FN(ad_medians)(boxes, n, rounds, false, mmed[kind], &k, mhits[kind]);
		fprintf(stderr, "adversarial %dD uniform matched to %s (sides x%.3f) done\n", AD_DIM, ad_kind_names[kind],
		        (double)grow[kind]);
	}
	int over = 0;
	fprintf(out, "\n### %dD\n\nPairs per box:", AD_DIM);
	for (int kind = 0; kind < AD_KINDS; ++kind)
		fprintf(out, "%s %s %.2f", kind ? "," : "", ad_kind_names[kind], (double)pairs[kind] / n);
	// A box query's output, beside the pairs: the matched baselines match
	// pairs, so a scene whose queries return many more hits than the uniform
	// scene's, with no more pairs, would show here.
	fprintf(out, ".\n\nHits per box query (loose):");
	for (int kind = 0; kind < AD_KINDS; ++kind)
		fprintf(out, "%s %s %.2f", kind ? "," : "", ad_kind_names[kind], (double)hits[kind][0] / 2000.0);
	fprintf(out, ".\n\n| scene | placement |");
	for (int op = 0; op < AD_OPS; ++op) fprintf(out, " %s |", ad_op_names[op]);
	fprintf(out, "\n|---|---|");
	for (int op = 0; op < AD_OPS; ++op) fprintf(out, "---|");
	fprintf(out, "\n");
	for (int place = 0; place < AD_PLACES; ++place) {
		fprintf(out, "| uniform (ms) | %s |", ad_place_names[place]);
		for (int op = 0; op < AD_OPS; ++op) {
			if (place == 3 && (op == AD_UPDATE || op == AD_CHURN))
				fprintf(out, " - |");
			else
				fprintf(out, " %.2f |", med[AD_UNIFORM][place][op] * 1e3);
		}
		fprintf(out, "\n");
	}
	for (int kind = 1; kind < AD_KINDS; ++kind)
		for (int place = 0; place < AD_PLACES; ++place) {
			fprintf(out, "| %s | %s |", ad_kind_names[kind], ad_place_names[place]);
			for (int op = 0; op < AD_OPS; ++op) {
				if (place == 3 && (op == AD_UPDATE || op == AD_CHURN)) {
					fprintf(out, " - |");
					continue;
				}
				double base = med[AD_UNIFORM][place][op], ratio = base > 0.0 ? med[kind][place][op] / base : 0.0;
				over += ratio > 5.0;
				fprintf(out, ratio > 5.0 ? " **%.1f** |" : " %.1f |", ratio);
			}
			fprintf(out, "\n");
		}
	// The dynamic tree's first update_pairs against its own find_pairs, same
	// scene, same tree: the broad phase's target is at most 2 on any scene
	// (the first update finds the same pairs and keeps them).
	int over_update = 0;
	fprintf(out, "\nFirst update_pairs / find_pairs, same scene and tree (the target: <= 2):\n\n| scene |");
	for (int place = 0; place < 3; ++place) fprintf(out, " %s |", ad_place_names[place]);
	fprintf(out, "\n|---|---|---|---|\n");
	for (int kind = 0; kind < AD_KINDS; ++kind) {
		fprintf(out, "| %s |", ad_kind_names[kind]);
		for (int place = 0; place < 3; ++place) {
			double base = med[kind][place][AD_PAIRS], ratio = base > 0.0 ? med[kind][place][AD_UPDATE] / base : 0.0;
			over_update += ratio > 2.0;
			fprintf(out, ratio > 2.0 ? " **%.2f** |" : " %.2f |", ratio);
		}
		fprintf(out, "\n");
	}
	fprintf(out, "\n%d first update(s) above 2x find_pairs.\n", over_update);
	// The output-matched table: the pairs, update, query and remove + insert
	// columns of each scene with much more output, against the uniform scene
	// matched to it. Remove + insert runs after update_pairs, so each remove
	// also ends the item's pairs: its work grows with the pairs, as theirs does.
	static const int mops[] = {AD_PAIRS, AD_UPDATE, AD_QUERY, AD_CHURN};
	*over_matched = 0;
	bool any = false;
	for (int kind = 1; kind < AD_KINDS; ++kind) {
		if (!(grow[kind] > 0.0f)) {
			// No matched baseline: the plain ratios stand.
			for (int place = 0; place < AD_PLACES; ++place)
				for (int op = 0; op < AD_OPS; ++op) {
					double base = med[AD_UNIFORM][place][op];
					if (place == 3 && (op == AD_UPDATE || op == AD_CHURN)) continue;
					*over_matched += base > 0.0 && med[kind][place][op] / base > 5.0;
				}
			continue;
		}
		if (!any)
			fprintf(out, "\nOutput-matched baselines (the uniform scene, sides grown until its pairs a box match;"
			             " hits/query: a box query's hits):\n\n"
			             "| scene | placement | pairs/box scene | pairs/box matched | hits/query scene |"
			              " hits/query matched | pairs | update | query | remove+insert |\n|---|---|---|---|---|---|---|---|---|---|\n");
		any = true;
		for (int place = 0; place < AD_PLACES; ++place) {
			fprintf(out, "| %s (uniform sides x%.2f) | %s | %.2f | %.2f | %.1f | %.1f |", ad_kind_names[kind],
			        (double)grow[kind], ad_place_names[place], (double)pairs[kind] / n, (double)mpairs[kind] / n,
			        (double)hits[kind][place] / 2000.0, (double)mhits[kind][place] / 2000.0);
			for (int m = 0; m < 4; ++m) {
				int op = mops[m];
				if (place == 3 && (op == AD_UPDATE || op == AD_CHURN)) {
					fprintf(out, " - |");
					continue;
				}
				double base = mmed[kind][place][op], ratio = base > 0.0 ? med[kind][place][op] / base : 0.0;
				fprintf(out, ratio > 5.0 ? " **%.1f** |" : " %.1f |", ratio);
			}
			fprintf(out, "\n");
			// The other columns against the plain uniform scene.
			for (int op = 0; op < AD_OPS; ++op) {
				if (place == 3 && (op == AD_UPDATE || op == AD_CHURN)) continue;
				bool matched = op == AD_PAIRS || op == AD_UPDATE || op == AD_QUERY || op == AD_CHURN;
				double base = matched ? mmed[kind][place][op] : med[AD_UNIFORM][place][op];
				*over_matched += base > 0.0 && med[kind][place][op] / base > 5.0;
			}
		}
	}
	free(boxes);
	return over;
}

#undef AD_CAT_
#undef AD_CAT
#undef AD
#undef AD_FN
#endif

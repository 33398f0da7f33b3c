// packed_scene.h: the scenes of the packed tree's tests and what brute force
// says about them, for one dimension (included by test_packed.c and
// test_packed_fail.c, each compiled twice: TEST_DIM=2 and TEST_DIM=3).
//
// An item's id is its index in the array the tree was built from, so the
// oracle is that array: every answer is compared with a brute-force pass over
// it, never with numbers the library produced. Here: eleven scene kinds
// (random, boxes on the split lines, identical boxes beyond the bucket,
// coinciding points, touching grids, huge among small, +-1e6, negative,
// clusters, coordinates at the limit, all flat on one axis); queries that
// touch boxes exactly, miss by an ulp, cover or miss everything; rays with
// zero components, from inside boxes, with max_t 0; nearest with k past the
// count and limits; and check_tree, every answer of a tree against its scene.
#ifndef ORTHANT_TEST_PACKED_SCENE_H
#define ORTHANT_TEST_PACKED_SCENE_H

#include <limits.h>

#include "testutil.h"

typedef TU(packed) packed_t;
typedef TU(packed_def) pdef_t;

/// The deepest max_depth the header allows (and the default).
#define DEEPEST (DIM == 2 ? 13 : 9)

/// A call that must return want; otherwise fail, naming both and the context.
#define EXPECT(call, want)                                                                                        \
	do {                                                                                                          \
		ort_result got_ = (call);                                                                                 \
		if (got_ != (want)) TU_FAIL("%s: %s, not %s\n", #call, ort_result_string(got_), ort_result_string(want)); \
	} while (0)

// ---- scene kinds ----------------------------------------------------------------
//
// Each kind makes box i of n; the rng is the scene's.

typedef void scene_gen(tu_rng *r, int i, int n, box_t *b);

static inline void set_axis(box_t *b, int d, float lo, float side)
{
	b->min[d] = lo;
	b->max[d] = lo + side;
}

static inline void gen_random(tu_rng *r, int i, int n, box_t *b)
{
	(void)i, (void)n;
	for (int d = 0; d < DIM; ++d) set_axis(b, d, tu_float(r, 0, 1000), tu_float(r, 0, 40));
}

/// Faces on the split lines 1024 k / 2^level of the cell [0, 1024] (the first
/// two items, zero-size, pin its corners), down to a level past the deepest.
static inline void gen_centre_lines(tu_rng *r, int i, int n, box_t *b)
{
	(void)n;
	for (int d = 0; d < DIM; ++d) {
		if (i < 2) {
			b->min[d] = b->max[d] = i ? 1024.0f : 0.0f;
			continue;
		}
		int level = tu_int(r, 1, DEEPEST + 1);
		float step = ldexpf(1024.0f, -level), line = step * (float)tu_int(r, 0, 1 << level);
		float side = step * 0.25f * (float)tu_int(r, 0, 4);
		int mode = tu_int(r, 0, 2);
		float lo = mode == 0 ? line : mode == 1 ? line - side : line - side * 0.5f;
		b->min[d] = fmaxf(lo, 0.0f);
		b->max[d] = fminf(lo + side, 1024.0f);
	}
}

/// Groups of 70 identical boxes (more than the largest bucket); every other
/// group is a point.
static inline void gen_duplicates(tu_rng *r, int i, int n, box_t *b)
{
	(void)r, (void)n;
	tu_rng g = tu_rng_make(5000u + (unsigned)(i / 70));
	for (int d = 0; d < DIM; ++d) set_axis(b, d, tu_float(&g, 0, 1000), (i / 70) % 2 ? 0.0f : tu_float(&g, 1, 10));
}

/// Zero-size boxes on a lattice of step 25, many coinciding.
static inline void gen_points(tu_rng *r, int i, int n, box_t *b)
{
	(void)i, (void)n;
	for (int d = 0; d < DIM; ++d) set_axis(b, d, 25.0f * (float)tu_int(r, 0, 40), 0.0f);
}

/// A grid of 100-unit cells sharing faces, edges and corners.
static inline void gen_touching(tu_rng *r, int i, int n, box_t *b)
{
	(void)r;
	int side = 1;
	while ((DIM == 2 ? side * side : side * side * side) < n) side++;
	for (int d = 0, k = i; d < DIM; ++d, k /= side) set_axis(b, d, 100.0f * (float)(k % side), 100.0f);
}

/// Every 251st box huge, the rest small.
static inline void gen_huge(tu_rng *r, int i, int n, box_t *b)
{
	(void)n;
	bool huge = i % 251 == 0;
	for (int d = 0; d < DIM; ++d)
		set_axis(b, d, huge ? tu_float(r, -200, 200) : tu_float(r, 0, 1000), huge ? 1500.0f : tu_float(r, 0, 5));
}

/// Out to +-1e6: odd items tiny, near the corners; even ones wide, anywhere.
static inline void gen_far(tu_rng *r, int i, int n, box_t *b)
{
	(void)n;
	for (int d = 0; d < DIM; ++d) {
		if (i % 2)
			set_axis(b, d, (i % 4 == 1 ? 1e6f : -1e6f) + tu_float(r, -100, 100), tu_float(r, 0, 10));
		else
			set_axis(b, d, tu_float(r, -1e6f, 1e6f), tu_float(r, 0, 5e4f));
	}
}

static inline void gen_negative(tu_rng *r, int i, int n, box_t *b)
{
	(void)i, (void)n;
	for (int d = 0; d < DIM; ++d) set_axis(b, d, tu_float(r, -1000, -10), tu_float(r, 0, 30));
}

/// Four dense clusters on the diagonal.
static inline void gen_clustered(tu_rng *r, int i, int n, box_t *b)
{
	(void)n;
	float c = 100.0f + 250.0f * (float)(i % 4);
	for (int d = 0; d < DIM; ++d) set_axis(b, d, c + tu_float(r, -60, 60), tu_float(r, 0, 8));
}

/// Coordinates exactly at +-ORTHANT_COORD_LIMIT (accepted: only past it is
/// refused) among small boxes: every 97th a point at a corner of the limit,
/// the next a wall from -limit to +limit across one axis.
static inline void gen_limit(tu_rng *r, int i, int n, box_t *b)
{
	(void)n;
	const float L = ORTHANT_COORD_LIMIT;
	int wall_axis = i / 97 % DIM;
	for (int d = 0; d < DIM; ++d) {
		if (i % 97 == 0) set_axis(b, d, i / 97 % 2 ? L : -L, 0.0f);
		else if (i % 97 == 1 && d == wall_axis) b->min[d] = -L, b->max[d] = L;
		else set_axis(b, d, tu_float(r, -100, 100), tu_float(r, 0, 4));
	}
}

/// Every box flat on the last axis, at 0 (or -0): that axis has no extent.
static inline void gen_flat(tu_rng *r, int i, int n, box_t *b)
{
	(void)n;
	for (int d = 0; d < DIM - 1; ++d) set_axis(b, d, tu_float(r, 0, DIM == 2 ? 20000 : 1000), tu_float(r, 0, 30));
	b->min[DIM - 1] = i % 2 ? -0.0f : 0.0f;
	b->max[DIM - 1] = 0.0f;
}

/// Groups of 12 (under a bucket) boxes round one centre, each a little
/// larger than the one before: a grid leaf holds a group in key order, the
/// larger (coarser) boxes first, so its ids do not ascend, and a point at
/// the centre lies in all of them, parted by ids alone.
static inline void gen_nested(tu_rng *r, int i, int n, box_t *b)
{
	(void)r, (void)n;
	tu_rng g = tu_rng_make(7000u + (unsigned)(i / 12));
	float side = 2.0f + 0.25f * (float)(i % 12);
	for (int d = 0; d < DIM; ++d) {
		float c = tu_float(&g, 10, 990);
		set_axis(b, d, c - 0.5f * side, side);
	}
}

static const struct kind {
	const char *name;
	scene_gen *gen;
} kinds[] = {
    {"random", gen_random},     {"centre-lines", gen_centre_lines}, {"duplicates", gen_duplicates},
    {"points", gen_points},     {"touching", gen_touching},         {"huge", gen_huge},
    {"far", gen_far},           {"negative", gen_negative},         {"clustered", gen_clustered},
    {"limit", gen_limit},       {"flat", gen_flat},                 {"nested", gen_nested},
};
enum { KINDS = sizeof kinds / sizeof kinds[0], NQ = 24 };

static inline int kind_of(const char *name)
{
	int k = 0;
	while (k < KINDS && strcmp(kinds[k].name, name)) k++;
	assert_true(k < KINDS);
	return k;
}

// ---- a scene and what brute force says about it ----------------------------------

typedef struct hit {
	uint32_t id;
	float t;
} hit;

typedef struct near_item {
	double d2;
	float dist;
	uint32_t id;
} near_item;

typedef struct scene {
	char name[64];
	box_t *box;
	int n;
	box_t bounds; ///< the union; inverted when empty
	box_t world;  ///< where queries go: the bounds, or [0, 1000] when empty
	int nq;       ///< queries made (fewer for big scenes: brute force is the cost)
	tu_list pairs; ///< overlapping pairs, (lower id) << 32 | higher id, ascending
	size_t *pair_first; ///< pair_first[i]: the first pair whose lower id is i or more
	box_t qbox[NQ];
	tu_list box_want[NQ];
	float qpoint[NQ][DIM];
	tu_list point_want[NQ];
	float centre[NQ][DIM], radius[NQ];
	tu_list sphere_want[NQ];
	float origin[NQ][DIM], dir[NQ][DIM], tmax[NQ];
	hit *ray_want[NQ]; ///< every hit by id, with its entry t
	int ray_n[NQ];
	float npoint[NQ][DIM];
	near_item *near[NQ]; ///< every item, by (distance, id)
} scene;

/// A point of a random item: a corner, or its centre.
static inline void item_point(const scene *s, tu_rng *r, float p[DIM], bool centre)
{
	const box_t *b = &s->box[tu_int(r, 0, s->n - 1)];
	for (int d = 0; d < DIM; ++d)
		p[d] = centre ? b->min[d] * 0.5f + b->max[d] * 0.5f : tu_int(r, 0, 1) ? b->max[d] : b->min[d];
}

/// A random point in the world grown by 10% (beyond = false), or one outside
/// everything, past the world's max corner.
static inline void world_point(const scene *s, tu_rng *r, float p[DIM], bool beyond)
{
	for (int d = 0; d < DIM; ++d) {
		float lo = s->world.min[d], hi = s->world.max[d], span = hi - lo;
		p[d] = beyond ? hi + span * 0.5f + 1.0f : tu_float(r, lo - span * 0.1f, hi + span * 0.1f);
	}
}

static inline float world_span(const scene *s)
{
	float most = 0;
	for (int d = 0; d < DIM; ++d) most = fmaxf(most, s->world.max[d] - s->world.min[d]);
	return fmaxf(most, 1.0f); // a world of one point still has room around it
}

static inline bool contains_point(const box_t *b, const float p[DIM])
{
	box_t q;
	memcpy(q.min, p, sizeof q.min);
	memcpy(q.max, p, sizeof q.max);
	return tu_overlap(b, &q);
}

/// By distance as reported (rounded to float), then id.
static inline int cmp_near(const void *a, const void *b)
{
	const near_item *x = a, *y = b;
	if (x->dist != y->dist) return x->dist < y->dist ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/// The box queries: an item's box (neighbours touch it), boxes touching an
/// item only at its max or min corner, zero-size boxes, random boxes, exactly
/// the bounds (covers everything), one ulp past the bounds (touches nothing).
static inline box_t make_query_box(const scene *s, tu_rng *r, int q)
{
	box_t qb;
	const box_t *it = s->n ? &s->box[tu_int(r, 0, s->n - 1)] : &s->world;
	float span = world_span(s), side = tu_float(r, 0, span * 0.3f);
	for (int d = 0; d < DIM; ++d) {
		float p = tu_float(r, s->world.min[d] - span * 0.1f, s->world.max[d]);
		switch (q % 8) {
		case 0: qb.min[d] = it->min[d], qb.max[d] = it->max[d]; break;
		case 1: qb.min[d] = it->max[d], qb.max[d] = it->max[d] + side; break;
		case 2: qb.min[d] = qb.max[d] = d % 2 ? it->min[d] : it->max[d]; break;
		case 3: qb.min[d] = qb.max[d] = p; break;
		case 4: qb.min[d] = p, qb.max[d] = p + side; break;
		case 5: qb.min[d] = s->world.min[d], qb.max[d] = s->world.max[d]; break;
		case 6:
			qb.min[d] = d == q / 8 % DIM ? nextafterf(s->world.max[d], INFINITY) : s->world.min[d];
			qb.max[d] = d == q / 8 % DIM ? qb.min[d] + side : s->world.max[d];
			break;
		default: qb.min[d] = it->min[d] - side, qb.max[d] = it->min[d];
		}
	}
	return qb;
}

/// The sphere queries: radius 0 at an item's corner; random; touching an
/// item's face from outside at exactly the radius; from outside everything,
/// covering all or nothing.
static inline void make_query_sphere(scene *s, tu_rng *r, int q)
{
	float *c = s->centre[q], span = world_span(s);
	switch (s->n ? q % 4 : 1) {
	case 0:
		item_point(s, r, c, false);
		s->radius[q] = 0;
		break;
	case 1:
		world_point(s, r, c, false);
		s->radius[q] = tu_float(r, 0, span * 0.2f);
		break;
	case 2: {
		const box_t *b = &s->box[tu_int(r, 0, s->n - 1)];
		memcpy(c, b->max, sizeof b->max);
		c[0] = b->max[0] + (float)tu_int(r, 1, 9);
		s->radius[q] = c[0] - b->max[0];
		break;
	}
	default:
		world_point(s, r, c, true);
		s->radius[q] = q % 8 == 3 ? span * 3.0f : 0.0f;
	}
}

/// The rays: from inside an item, from its corner, from anywhere, from outside
/// aimed at the middle; axis-aligned or with one zero component; max_t
/// INFINITY, 0 or finite.
static inline void make_query_ray(scene *s, tu_rng *r, int q)
{
	float *o = s->origin[q], *dir = s->dir[q], span = world_span(s);
	int kind = s->n ? q % 4 : 2, axis = q / 5 % DIM;
	if (kind == 0 || kind == 1) item_point(s, r, o, kind == 0);
	else world_point(s, r, o, false);
	if (kind == 3)
		for (int d = 0; d < DIM; ++d) o[d] = s->world.min[d] - span * 0.5f - 1.0f;
	float len = 0;
	for (int d = 0; d < DIM; ++d) {
		float mid = s->world.min[d] * 0.5f + s->world.max[d] * 0.5f;
		dir[d] = kind == 3 ? (mid - o[d]) / span + tu_float(r, -0.2f, 0.2f) : tu_float(r, -1, 1);
		if ((q % 5 == 1 && d != axis) || (q % 5 == 2 && d == axis)) dir[d] = 0;
		len = fmaxf(len, fabsf(dir[d]));
	}
	if (len == 0) dir[axis] = len = 1;
	switch (q % 6) {
	case 0:
	case 3: s->tmax[q] = INFINITY; break;
	case 1: s->tmax[q] = 0; break;
	default: s->tmax[q] = tu_float(r, 0, 2.0f * span / len);
	}
}

/// The scene of boxes[0..n) (taken over), its queries drawn from seed, and
/// brute force's answer to each.
static inline void scene_init(scene *s, const char *name, box_t *boxes, int n, uint64_t seed)
{
	memset(s, 0, sizeof *s);
	snprintf(s->name, sizeof s->name, "%s, %d boxes", name, n);
	s->n = n;
	s->box = boxes;
	for (int d = 0; d < DIM; ++d) {
		s->bounds.min[d] = INFINITY;
		s->bounds.max[d] = -INFINITY;
		for (int i = 0; i < n; ++i) {
			s->bounds.min[d] = fminf(s->bounds.min[d], boxes[i].min[d]);
			s->bounds.max[d] = fmaxf(s->bounds.max[d], boxes[i].max[d]);
		}
		s->world.min[d] = n ? s->bounds.min[d] : 0.0f;
		s->world.max[d] = n ? s->bounds.max[d] : 1000.0f;
	}
	// Every pair, brute force (the first axis tested inline: this is the cost).
	s->pair_first = malloc(sizeof *s->pair_first * (size_t)(n + 1));
	for (int i = 0; i < n; ++i) {
		s->pair_first[i] = s->pairs.n;
		float lo = boxes[i].min[0], hi = boxes[i].max[0];
		for (int j = i + 1; j < n; ++j)
			if (!(boxes[j].min[0] > hi || lo > boxes[j].max[0]) && tu_overlap(&boxes[i], &boxes[j]))
				tu_push(&s->pairs, (uint64_t)i << 32 | (uint64_t)j);
	}
	s->pair_first[n] = s->pairs.n;
	tu_rng r = tu_rng_make(seed);
	s->nq = n > 1000 ? NQ / 3 : NQ;
	for (int q = 0; q < s->nq; ++q) {
		s->qbox[q] = make_query_box(s, &r, q);
		if (n && q % 4 < 2) item_point(s, &r, s->qpoint[q], q % 4 == 1);
		else world_point(s, &r, s->qpoint[q], q % 4 == 3);
		make_query_sphere(s, &r, q);
		make_query_ray(s, &r, q);
		if (n && q % 3 == 0) item_point(s, &r, s->npoint[q], false);
		else world_point(s, &r, s->npoint[q], q % 3 == 2);
		s->ray_want[q] = malloc(sizeof(hit) * (size_t)(n ? n : 1));
		s->near[q] = malloc(sizeof(near_item) * (size_t)(n ? n : 1));
		for (int i = 0; i < n; ++i) {
			const box_t *b = &boxes[i];
			if (tu_overlap(b, &s->qbox[q])) tu_push(&s->box_want[q], (uint64_t)i);
			if (contains_point(b, s->qpoint[q])) tu_push(&s->point_want[q], (uint64_t)i);
			if (tu_dist2(s->centre[q], b) <= (double)s->radius[q] * s->radius[q])
				tu_push(&s->sphere_want[q], (uint64_t)i);
			float t;
			if (tu_ray_hit(s->origin[q], s->dir[q], s->tmax[q], b, &t))
				s->ray_want[q][s->ray_n[q]++] = (hit){(uint32_t)i, t};
			double d2 = tu_dist2(s->npoint[q], b);
			s->near[q][i] = (near_item){d2, (float)sqrt(d2), (uint32_t)i};
		}
		tu_sort(s->near[q], (size_t)n, sizeof(near_item), cmp_near);
	}
}

/// n boxes of a kind, from seed.
static inline void scene_make(scene *s, int kind, int n, uint64_t seed)
{
	box_t *boxes = malloc(sizeof *boxes * (size_t)(n ? n : 1));
	tu_rng r = tu_rng_make(seed);
	for (int i = 0; i < n; ++i) kinds[kind].gen(&r, i, n, &boxes[i]);
	scene_init(s, kinds[kind].name, boxes, n, seed ^ 0x5EEDu);
}

static inline void scene_free(scene *s)
{
	free(s->box);
	free(s->pairs.v);
	free(s->pair_first);
	for (int q = 0; q < NQ; ++q) {
		free(s->box_want[q].v);
		free(s->point_want[q].v);
		free(s->sphere_want[q].v);
		free(s->ray_want[q]);
		free(s->near[q]);
	}
}

// ---- comparing --------------------------------------------------------------------

static inline void print_box(const scene *s, uint64_t id)
{
	if (id >= (uint64_t)s->n) {
		print_error("  id %llu: no such item\n", (unsigned long long)id);
		return;
	}
	print_error("  id %llu: min", (unsigned long long)id);
	for (int d = 0; d < DIM; ++d) print_error(" %.9g", (double)s->box[id].min[d]);
	print_error(", max");
	for (int d = 0; d < DIM; ++d) print_error(" %.9g", (double)s->box[id].max[d]);
	print_error("\n");
}

/// One result the two sides disagree on: an id, or for pairs both ids.
static inline void print_result(const scene *s, uint64_t v, bool pair)
{
	if (pair) print_box(s, v >> 32);
	print_box(s, pair ? v & 0xFFFFFFFFu : v);
}

/// got (emptied here) against want (kept, ascending): the same set, nothing
/// twice. On a difference the first result one side lacks is printed with
/// its boxes. Pairs are looked up among those of their lower id.
static inline void expect_set(tu_list *got, const tu_list *want, const scene *s, bool pair, const char *what)
{
	unsigned char *seen = calloc(want->n + 1, 1);
	for (size_t i = 0; i < got->n; ++i) {
		uint64_t first = got->v[i] >> 32;
		size_t lo = 0, hi = want->n;
		if (pair && first < (uint64_t)s->n) lo = s->pair_first[first], hi = s->pair_first[first + 1];
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (want->v[mid] < got->v[i]) lo = mid + 1;
			else hi = mid;
		}
		bool found = lo < want->n && want->v[lo] == got->v[i];
		if (!found || seen[lo]) {
			print_result(s, got->v[i], pair);
			TU_FAIL("%s: the result above is %s (%zu results, brute force %zu)\n", what,
			        found ? "reported twice" : "not in brute force's set", got->n, want->n);
		}
		seen[lo] = 1;
	}
	for (size_t j = 0; j < want->n; ++j)
		if (!seen[j]) {
			print_result(s, want->v[j], pair);
			TU_FAIL("%s: the result above is missing (%zu results, brute force %zu)\n", what, got->n, want->n);
		}
	free(seen);
	free(got->v);
	got->v = NULL;
	got->n = got->cap = 0;
}

static inline void print_floats(const char *name, const float *v, int count)
{
	print_error("  %s", name);
	for (int d = 0; d < count; ++d) print_error(" %.9g", (double)v[d]);
	print_error("\n");
}

// ---- the library's answers ----------------------------------------------------------

static inline bool collect_id(void *ctx, uint32_t id)
{
	tu_push(ctx, id);
	return true;
}

static inline bool collect_pair(void *ctx, uint32_t a, uint32_t b)
{
	tu_push(ctx, a < b ? (uint64_t)a << 32 | b : (uint64_t)b << 32 | a);
	return true;
}

/// What a ray callback saw, and what it returns: 0 INFINITY, 1 max_t, 2 a
/// negative value (all three go on), 3 t (clips to the nearest hit).
typedef struct ray_log {
	hit *v;
	int n, cap, mode;
	float tmax;
} ray_log;

static inline float collect_hit(void *ctx, uint32_t id, float t)
{
	ray_log *l = ctx;
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->v = realloc(l->v, sizeof *l->v * (size_t)l->cap);
	}
	l->v[l->n++] = (hit){id, t};
	return l->mode == 0 ? INFINITY : l->mode == 1 ? l->tmax : l->mode == 2 ? -1.0f : t;
}

static inline int cmp_hit(const void *a, const void *b)
{
	const hit *x = a, *y = b;
	return x->id < y->id ? -1 : x->id > y->id;
}

static inline const hit *find_hit(const scene *s, int q, uint32_t id)
{
	return s->ray_n[q] ? bsearch(&(hit){id, 0}, s->ray_want[q], (size_t)s->ray_n[q], sizeof(hit), cmp_hit) : NULL;
}

static inline void ray_fail(const scene *s, int q, const char *what, uint32_t id, double got, double want)
{
	print_floats("origin", s->origin[q], DIM);
	print_floats("dir", s->dir[q], DIM);
	print_floats("max_t", &s->tmax[q], 1);
	print_box(s, id);
	TU_FAIL("ray %d: %s (id %u: %.9g, brute force %.9g)\n", q, what, id, got, want);
}

/// The nearest hit by brute force: smallest t, then lowest id. False: none.
static inline bool ray_best(const scene *s, int q, hit *best)
{
	for (int i = 0; i < s->ray_n[q]; ++i)
		if (i == 0 || s->ray_want[q][i].t < best->t) *best = s->ray_want[q][i];
	return s->ray_n[q] > 0;
}

static inline void check_ray(const packed_t *t, const scene *s, int q)
{
	const float *o = s->origin[q], *dir = s->dir[q];
	float tmax = s->tmax[q];
	hit best = {UINT32_MAX, INFINITY};
	bool any = ray_best(s, q, &best);
	// Every hit, with every kind of "go on" return; but max_t 0 returned is
	// also the 0 that stops.
	ray_log l = {NULL, 0, 0, q % 3 == 1 && tmax == 0 ? 0 : q % 3, tmax};
	EXPECT(TU(packed_ray_cast)(t, o, dir, tmax, collect_hit, &l), ORT_OK);
	tu_sort(l.v, (size_t)l.n, sizeof *l.v, cmp_hit);
	for (int i = 0; i < l.n; ++i) {
		const hit *w = find_hit(s, q, l.v[i].id);
		if (i > 0 && l.v[i].id == l.v[i - 1].id) ray_fail(s, q, "hit reported twice", l.v[i].id, l.v[i].t, 0);
		if (!w) ray_fail(s, q, "hit brute force does not have", l.v[i].id, l.v[i].t, NAN);
		if (w->t != l.v[i].t) ray_fail(s, q, "entry t differs", l.v[i].id, l.v[i].t, w->t);
	}
	if (l.n != s->ray_n[q]) {
		for (int i = 0, j = 0; i < s->ray_n[q]; ++i, ++j)
			if (j == l.n || l.v[j].id != s->ray_want[q][i].id)
				ray_fail(s, q, "hit missing", s->ray_want[q][i].id, NAN, s->ray_want[q][i].t);
	}
	// Clipped at each hit: the nearest survives.
	l.n = 0;
	l.mode = 3;
	EXPECT(TU(packed_ray_cast)(t, o, dir, tmax, collect_hit, &l), ORT_OK);
	float nearest = INFINITY;
	for (int i = 0; i < l.n; ++i) {
		const hit *w = find_hit(s, q, l.v[i].id);
		if (!w || w->t != l.v[i].t) ray_fail(s, q, "clipped: wrong hit", l.v[i].id, l.v[i].t, w ? w->t : NAN);
		nearest = fminf(nearest, l.v[i].t);
	}
	if (any != (l.n > 0) || (any && nearest != best.t)) ray_fail(s, q, "clipped: nearest t", best.id, nearest, best.t);
	free(l.v);
	// The first hit: smallest t, then lowest id.
	uint32_t id = UINT32_MAX;
	float tf = NAN;
	bool hit_any = TU(packed_ray_first)(t, o, dir, tmax, &id, &tf);
	if (hit_any != any) ray_fail(s, q, "ray_first: hit or not", best.id, hit_any, any);
	if (any && (id != best.id || tf != best.t)) {
		print_box(s, id);
		ray_fail(s, q, "ray_first: the id above (with its t), brute force's below", best.id, tf, best.t);
	}
}

static inline void check_nearest(const packed_t *t, const scene *s, int q, int k, float maxd)
{
	ort_id_neighbor *out = malloc(sizeof *out * (size_t)k);
	int found = -1;
	ort_result r = TU(packed_nearest)(t, s->npoint[q], k, maxd, out, &found);
	if (r != ORT_OK) TU_FAIL("nearest %d, k %d, max_distance %g: %s\n", q, k, (double)maxd, ort_result_string(r));
	int want = 0;
	for (int i = 0; i < s->n && want < k; ++i) {
		const near_item *w = &s->near[q][i];
		if (!(isinf(maxd) || w->d2 <= (double)maxd * maxd)) continue;
		if (want < found && (out[want].id != w->id || out[want].distance != w->dist)) {
			print_floats("point", s->npoint[q], DIM);
			print_box(s, out[want].id);
			print_box(s, w->id);
			TU_FAIL("nearest %d, k %d, max_distance %g: #%d is id %u at %.9g, brute force id %u at %.9g\n", q, k,
			        (double)maxd, want, out[want].id, (double)out[want].distance, w->id, (double)w->dist);
		}
		want++;
	}
	if (found != want) {
		print_floats("point", s->npoint[q], DIM);
		TU_FAIL("nearest %d, k %d, max_distance %g: %d found, brute force %d\n", q, k, (double)maxd, found, want);
	}
	free(out);
}

// ---- a whole tree against its scene --------------------------------------------------

/// The pause switch of the test allocator the allocation tests give the
/// tree: validate (not promised to allocate nothing) runs with it paused.
static bool *validate_pauses;

typedef struct visit {
	int nodes, items, depth, last_depth;
	bool bad;
} visit;

static inline void count_node(void *ctx, const box_t *cell, const box_t *bounds, int depth, int items)
{
	visit *v = ctx;
	if (memcmp(cell, bounds, sizeof *cell) != 0 || (v->nodes == 0 ? depth != 0 : depth > v->last_depth + 1) ||
	    depth < 0 || items < 0)
		v->bad = true;
	v->nodes++;
	v->items += items;
	v->last_depth = depth;
	if (depth > v->depth) v->depth = depth;
}

static inline void check_shape(const packed_t *t, const scene *s, int max_depth)
{
	char msg[256] = "";
	bool was_paused = validate_pauses && *validate_pauses;
	if (validate_pauses) *validate_pauses = true;
	ort_result r = TU(packed_validate)(t, msg, sizeof msg);
	if (r != ORT_OK) TU_FAIL("validate: %s: %s\n", ort_result_string(r), msg);
	EXPECT(TU(packed_validate)(t, NULL, 0), ORT_OK);
	if (validate_pauses) *validate_pauses = was_paused;
	if (TU(packed_count)(t) != s->n) TU_FAIL("count %d, %d stored\n", TU(packed_count)(t), s->n);
	box_t b = TU(packed_bounds)(t);
	for (int d = 0; d < DIM; ++d) {
		if (s->n == 0 && !(b.min[d] > b.max[d])) TU_FAIL("bounds of an empty tree not inverted on axis %d\n", d);
		if (s->n && (b.min[d] != s->bounds.min[d] || b.max[d] != s->bounds.max[d]))
			TU_FAIL("bounds on axis %d: [%.9g, %.9g], brute force [%.9g, %.9g]\n", d, (double)b.min[d],
			        (double)b.max[d], (double)s->bounds.min[d], (double)s->bounds.max[d]);
	}
	ort_tree_stats st;
	memset(&st, 0xA5, sizeof st);
	TU(packed_get_stats)(t, &st);
	int per_level = 0;
	for (int i = 0; i < ORTHANT_STATS_LEVELS; ++i) per_level += st.items_per_level[i];
	if (st.items != s->n || st.entries != s->n || per_level != s->n)
		TU_FAIL("stats: items %d, entries %d, by level %d; %d stored\n", st.items, st.entries, per_level, s->n);
	// The grid's levels, each perhaps split from a pile of its own items by a
	// node of none, then one pile, split by count in NCHILD parts a level.
	int pile = 1;
	for (long m = 1; m < s->n; m *= 1L << DIM) ++pile;
	if (st.depth < 0 || st.depth > 2 * (max_depth + 1) + pile)
		TU_FAIL("stats: depth %d, max_depth %d, %d items\n", st.depth, max_depth, s->n);
	if (st.leaves > st.nodes || (s->n && st.leaves < 1)) TU_FAIL("stats: %d leaves of %d nodes\n", st.leaves, st.nodes);
	// visit_nodes: every node once, parents first (depth grows by at most one
	// from one node to the next), own items adding up, cell == bounds; NULL
	// tree or callback visit nothing.
	visit v = {0};
	TU(packed_visit_nodes)(t, count_node, &v);
	TU(packed_visit_nodes)(t, NULL, &v);
	TU(packed_visit_nodes)(NULL, count_node, &v);
	if (v.nodes != st.nodes || v.items != s->n || v.depth != (st.nodes ? st.depth : 0) || v.bad)
		TU_FAIL("visit_nodes: %d nodes, %d items, depth %d%s; stats %d, %d, %d\n", v.nodes, v.items, v.depth,
		        v.bad ? ", out of order or cell != bounds" : "", st.nodes, s->n, st.depth);
}

static inline void check_pairs(const packed_t *t, const scene *s)
{
	tu_list got = {0};
	EXPECT(TU(packed_find_pairs)(t, collect_pair, &got), ORT_OK);
	expect_set(&got, &s->pairs, s, true, "find_pairs");
}

static const int ks[] = {1, 5, 10, 100, -1}; ///< -1: more than the count
/// nearest promises no allocation up to this k; tests that refuse every
/// allocation lower k_cap to it.
#define NO_ALLOC_K 64
static int k_cap = INT_MAX;

/// Everything the tree answers about s, queries 0..queries-1 of the scene's.
static inline void check_tree(const packed_t *t, const scene *s, int max_depth, int queries)
{
	check_shape(t, s, max_depth);
	check_pairs(t, s);
	char what[64];
	for (int q = 0; q < queries && q < s->nq; ++q) {
		tu_list got = {0};
		snprintf(what, sizeof what, "query_box %d", q);
		EXPECT(TU(packed_query_box)(t, s->qbox[q], collect_id, &got), ORT_OK);
		if (got.n != s->box_want[q].n) {
			print_floats("min", s->qbox[q].min, DIM);
			print_floats("max", s->qbox[q].max, DIM);
		}
		expect_set(&got, &s->box_want[q], s, false, what);
		snprintf(what, sizeof what, "query_point %d", q);
		EXPECT(TU(packed_query_point)(t, s->qpoint[q], collect_id, &got), ORT_OK);
		if (got.n != s->point_want[q].n) print_floats("point", s->qpoint[q], DIM);
		expect_set(&got, &s->point_want[q], s, false, what);
		snprintf(what, sizeof what, "query_sphere %d", q);
		EXPECT(TU(packed_query_sphere)(t, s->centre[q], s->radius[q], collect_id, &got), ORT_OK);
		if (got.n != s->sphere_want[q].n) {
			print_floats("centre", s->centre[q], DIM);
			print_floats("radius", &s->radius[q], 1);
		}
		expect_set(&got, &s->sphere_want[q], s, false, what);
		check_ray(t, s, q);
		// Every k and both kinds of limit for the first queries, one pair after.
		float finite = world_span(s) * (float)(q % 7) * 0.05f;
		for (int i = 0; i < 5; ++i)
			for (int inf = 0; inf < 2; ++inf)
				if (q < 2 || (i == q % 5 && inf == q % 2))
				{
					int k = ks[i] > 0 ? ks[i] : s->n + 1;
					check_nearest(t, s, q, k < k_cap ? k : k_cap, inf ? INFINITY : finite);
				}
	}
}

static inline pdef_t make_def(int bucket, int depth)
{
	pdef_t def = TU(packed_default_def)();
	def.bucket_size = bucket;
	def.max_depth = depth;
	return def;
}

#endif

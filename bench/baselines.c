// baselines.c: what a user writes without a library — brute force (the
// reference every other result is checked against), a uniform grid and
// sort-and-sweep — plus the exact ray/distance helpers shared by all adapters.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

// The library's own slab rule (ortN_box_ray), so the reference and the trees
// agree to the bit on grazing hits.
float bench_ray_box(const bench_ray *ray, const ort3_box *box, int dim)
{
	float t = -1.0f;
	if (dim == 3) return ort3_box_ray(*box, ray->origin, ray->dir, ray->max_t, &t) ? t : -1.0f;
	ort2_box b = {{box->min[0], box->min[1]}, {box->max[0], box->max[1]}};
	return ort2_box_ray(b, ray->origin, ray->dir, ray->max_t, &t) ? t : -1.0f;
}

float bench_point_box_dist(const float p[3], const ort3_box *box, int dim)
{
	float s = 0.0f;
	for (int d = 0; d < dim; ++d) {
		float e = 0.0f;
		if (p[d] < box->min[d])
			e = box->min[d] - p[d];
		else if (p[d] > box->max[d])
			e = p[d] - box->max[d];
		s += e * e;
	}
	return sqrtf(s);
}

void bench_knn_push(float *best, int k, float d)
{
	if (!(d < best[k - 1])) return;
	int i = k - 1;
	while (i > 0 && best[i - 1] > d) {
		best[i] = best[i - 1];
		--i;
	}
	best[i] = d;
}

// ---------------------------------------------------------------- brute force

typedef struct brute_state {
	int n;
	float *v; // 6 floats per box: min xyz, max xyz (SoA would not vectorise the early-outs better)
} brute_state;

static void brute_load(brute_state *s, const bench_frame *f)
{
	for (int i = 0; i < f->count; ++i) {
		const ort3_box *b = &f->boxes[i];
		float *o = s->v + 6 * (size_t)i;
		o[0] = b->min[0];
		o[1] = b->min[1];
		o[2] = b->min[2];
		o[3] = b->max[0];
		o[4] = b->max[1];
		o[5] = b->max[2];
	}
}

static void *brute_create(const bench_frame *f)
{
	brute_state *s = calloc(1, sizeof *s);
	s->n = f->count;
	s->v = malloc(sizeof(float) * 6 * (size_t)(f->count + 1));
	brute_load(s, f);
	return s;
}

static void brute_update(void *st, const bench_frame *f) { brute_load(st, f); }

static void brute_pairs(void *st, const bench_frame *f, bench_sink *sink)
{
	(void)f;
	brute_state *s = st;
	for (int i = 0; i < s->n; ++i) {
		const float *a = s->v + 6 * (size_t)i;
		for (int j = i + 1; j < s->n; ++j) {
			const float *b = s->v + 6 * (size_t)j;
			if (a[0] <= b[3] && b[0] <= a[3] && a[1] <= b[4] && b[1] <= a[4] && a[2] <= b[5] && b[2] <= a[5])
				bench_sink_pair(sink, (uint32_t)i, (uint32_t)j);
		}
	}
}

static void brute_destroy(void *st)
{
	brute_state *s = st;
	free(s->v);
	free(s);
}

static void brute_query_boxes(void *st, const bench_frame *f, bench_queries *q)
{
	(void)st;
	for (int k = 0; k < q->count; ++k)
		for (int i = 0; i < f->count; ++i)
			if (bench_overlap(&q->boxes[k], &f->boxes[i])) bench_sink_id(&q->sinks[k], (uint32_t)i);
}

static void brute_ray_all(void *st, const bench_frame *f, bench_queries *q)
{
	(void)st;
	for (int k = 0; k < q->count; ++k)
		for (int i = 0; i < f->count; ++i)
			if (bench_ray_box(&q->rays[k], &f->boxes[i], f->dim) >= 0.0f) bench_sink_id(&q->sinks[k], (uint32_t)i);
}

static void brute_ray_first(void *st, const bench_frame *f, bench_queries *q)
{
	(void)st;
	for (int k = 0; k < q->count; ++k) {
		float best = INFINITY;
		for (int i = 0; i < f->count; ++i) {
			float t = bench_ray_box(&q->rays[k], &f->boxes[i], f->dim);
			if (t >= 0.0f && t < best) best = t;
		}
		q->first_t[k] = best;
	}
}

static void brute_knn(void *st, const bench_frame *f, bench_queries *q)
{
	(void)st;
	for (int k = 0; k < q->count; ++k) {
		float *best = q->knn_dist + (size_t)k * (size_t)q->k;
		for (int i = 0; i < q->k; ++i) best[i] = INFINITY;
		for (int i = 0; i < f->count; ++i) bench_knn_push(best, q->k, bench_point_box_dist(q->points[k], &f->boxes[i], f->dim));
	}
}

// ---------------------------------------------------------------- uniform grid
//
// A dense grid over the world box, rebuilt every frame by a counting sort of
// box-cell references. The cell side is twice the mean box extent (the readers'
// advice for uniform grids), grown if the grid would have more than 4 cells per box.
// A pair (or a query hit) found in several cells is reported only from the
// cell holding the lower corner of the two boxes' intersection.

typedef struct grid_entry {
	ort3_box box;
	uint32_t id;
} grid_entry;

typedef struct grid_state {
	int dim;
	int n;
	float origin[3], cell, inv;
	int res[3];
	int ncells;
	int *start;      // ncells + 1
	int *fill;       // ncells
	grid_entry *ent; // references
	size_t ent_cap;
	uint32_t *stamp; // kNN: last query that saw each id
	uint32_t qstamp;
} grid_state;

static int grid_coord(const grid_state *g, int d, float x)
{
	int c = (int)floorf((x - g->origin[d]) * g->inv);
	if (c < 0) c = 0;
	if (c >= g->res[d]) c = g->res[d] - 1;
	return c;
}

static void grid_range(const grid_state *g, const ort3_box *b, int lo[3], int hi[3])
{
	for (int d = 0; d < 3; ++d) {
		lo[d] = grid_coord(g, d, b->min[d]);
		hi[d] = grid_coord(g, d, b->max[d]);
	}
}

static int grid_index(const grid_state *g, int x, int y, int z) { return (z * g->res[1] + y) * g->res[0] + x; }

static void grid_rebuild(grid_state *g, const bench_frame *f)
{
	memset(g->start, 0, sizeof(int) * (size_t)(g->ncells + 1));
	size_t total = 0;
	for (int i = 0; i < f->count; ++i) {
		int lo[3], hi[3];
		grid_range(g, &f->boxes[i], lo, hi);
		for (int z = lo[2]; z <= hi[2]; ++z)
			for (int y = lo[1]; y <= hi[1]; ++y)
				for (int x = lo[0]; x <= hi[0]; ++x) g->start[grid_index(g, x, y, z) + 1]++;
		total += (size_t)(hi[0] - lo[0] + 1) * (size_t)(hi[1] - lo[1] + 1) * (size_t)(hi[2] - lo[2] + 1);
	}
	for (int c = 0; c < g->ncells; ++c) g->start[c + 1] += g->start[c];
	if (total > g->ent_cap) {
		free(g->ent);
		g->ent_cap = total + total / 4;
		g->ent = malloc(sizeof *g->ent * g->ent_cap);
	}
	memcpy(g->fill, g->start, sizeof(int) * (size_t)g->ncells);
	for (int i = 0; i < f->count; ++i) {
		int lo[3], hi[3];
		grid_range(g, &f->boxes[i], lo, hi);
		for (int z = lo[2]; z <= hi[2]; ++z)
			for (int y = lo[1]; y <= hi[1]; ++y)
				for (int x = lo[0]; x <= hi[0]; ++x) {
					grid_entry *e = &g->ent[g->fill[grid_index(g, x, y, z)]++];
					e->box = f->boxes[i];
					e->id = (uint32_t)i;
				}
	}
}

static void *grid_create(const bench_frame *f)
{
	grid_state *g = calloc(1, sizeof *g);
	g->dim = f->dim;
	g->n = f->count;
	double ext = 0.0;
	for (int i = 0; i < f->count; ++i) {
		float e = 0.0f;
		for (int d = 0; d < f->dim; ++d) {
			float w = f->boxes[i].max[d] - f->boxes[i].min[d];
			if (w > e) e = w;
		}
		ext += e;
	}
	float cell = f->count ? (float)(2.0 * ext / f->count) : 1.0f;
	if (!(cell > 0.0f)) cell = 1.0f;
	for (;;) {
		double cells = 1.0;
		for (int d = 0; d < 3; ++d) {
			g->origin[d] = f->world.min[d];
			g->res[d] = d < f->dim ? (int)ceilf((f->world.max[d] - f->world.min[d]) / cell) : 1;
			if (g->res[d] < 1) g->res[d] = 1;
			cells *= g->res[d];
		}
		if (cells <= 4.0 * f->count + 1024.0) break;
		cell *= 1.25f;
	}
	g->cell = cell;
	g->inv = 1.0f / cell;
	g->ncells = g->res[0] * g->res[1] * g->res[2];
	g->start = malloc(sizeof(int) * (size_t)(g->ncells + 1));
	g->fill = malloc(sizeof(int) * (size_t)g->ncells);
	g->stamp = calloc((size_t)f->count + 1, sizeof *g->stamp);
	grid_rebuild(g, f);
	return g;
}

static void grid_update(void *st, const bench_frame *f) { grid_rebuild(st, f); }

static void grid_pairs(void *st, const bench_frame *f, bench_sink *sink)
{
	(void)f;
	grid_state *g = st;
	for (int z = 0; z < g->res[2]; ++z)
		for (int y = 0; y < g->res[1]; ++y)
			for (int x = 0; x < g->res[0]; ++x) {
				int c = grid_index(g, x, y, z);
				int b = g->start[c], e = g->start[c + 1];
				for (int i = b; i < e; ++i) {
					const grid_entry *p = &g->ent[i];
					for (int j = i + 1; j < e; ++j) {
						const grid_entry *r = &g->ent[j];
						if (!bench_overlap(&p->box, &r->box)) continue;
						// Report from the cell holding the intersection's lower corner only.
						float lx = p->box.min[0] > r->box.min[0] ? p->box.min[0] : r->box.min[0];
						float ly = p->box.min[1] > r->box.min[1] ? p->box.min[1] : r->box.min[1];
						float lz = p->box.min[2] > r->box.min[2] ? p->box.min[2] : r->box.min[2];
						if (grid_coord(g, 0, lx) != x || grid_coord(g, 1, ly) != y || grid_coord(g, 2, lz) != z) continue;
						bench_sink_pair(sink, p->id, r->id);
					}
				}
			}
}

static void grid_destroy(void *st)
{
	grid_state *g = st;
	free(g->start);
	free(g->fill);
	free(g->ent);
	free(g->stamp);
	free(g);
}

static void grid_query_boxes(void *st, const bench_frame *f, bench_queries *q)
{
	(void)f;
	grid_state *g = st;
	for (int k = 0; k < q->count; ++k) {
		const ort3_box *qb = &q->boxes[k];
		int lo[3], hi[3];
		grid_range(g, qb, lo, hi);
		bench_sink *sink = &q->sinks[k];
		for (int z = lo[2]; z <= hi[2]; ++z)
			for (int y = lo[1]; y <= hi[1]; ++y)
				for (int x = lo[0]; x <= hi[0]; ++x) {
					int c = grid_index(g, x, y, z);
					for (int i = g->start[c]; i < g->start[c + 1]; ++i) {
						const grid_entry *p = &g->ent[i];
						if (!bench_overlap(&p->box, qb)) continue;
						float lx = p->box.min[0] > qb->min[0] ? p->box.min[0] : qb->min[0];
						float ly = p->box.min[1] > qb->min[1] ? p->box.min[1] : qb->min[1];
						float lz = p->box.min[2] > qb->min[2] ? p->box.min[2] : qb->min[2];
						if (grid_coord(g, 0, lx) != x || grid_coord(g, 1, ly) != y || grid_coord(g, 2, lz) != z) continue;
						bench_sink_id(sink, p->id);
					}
				}
	}
}

// kNN by rings of cells around the point's cell. After ring r every box not yet
// seen lies only in cells at ring > r, at least r * cell away.
static void grid_knn(void *st, const bench_frame *f, bench_queries *q)
{
	grid_state *g = st;
	int maxr = g->res[0] > g->res[1] ? g->res[0] : g->res[1];
	if (g->res[2] > maxr) maxr = g->res[2];
	for (int k = 0; k < q->count; ++k) {
		float *best = q->knn_dist + (size_t)k * (size_t)q->k;
		for (int i = 0; i < q->k; ++i) best[i] = INFINITY;
		const float *p = q->points[k];
		int pc[3];
		for (int d = 0; d < 3; ++d) pc[d] = grid_coord(g, d, p[d]);
		uint32_t stamp = ++g->qstamp;
		for (int r = 0; r <= maxr; ++r) {
			int lo[3], hi[3];
			for (int d = 0; d < 3; ++d) {
				lo[d] = pc[d] - r;
				hi[d] = pc[d] + r;
				if (d >= f->dim) lo[d] = hi[d] = 0;
			}
			for (int z = lo[2]; z <= hi[2]; ++z) {
				if (z < 0 || z >= g->res[2]) continue;
				for (int y = lo[1]; y <= hi[1]; ++y) {
					if (y < 0 || y >= g->res[1]) continue;
					int edge = (z == lo[2] || z == hi[2]) && f->dim == 3;
					edge |= (y == lo[1] || y == hi[1]);
					int step = edge ? 1 : hi[0] - lo[0];
					if (step < 1) step = 1;
					for (int x = lo[0]; x <= hi[0]; x += step) {
						if (x < 0 || x >= g->res[0]) continue;
						int c = grid_index(g, x, y, z);
						for (int i = g->start[c]; i < g->start[c + 1]; ++i) {
							const grid_entry *e = &g->ent[i];
							if (g->stamp[e->id] == stamp) continue;
							g->stamp[e->id] = stamp;
							bench_knn_push(best, q->k, bench_point_box_dist(p, &e->box, f->dim));
						}
					}
				}
			}
			if (best[q->k - 1] <= (float)r * g->cell) break;
		}
	}
}

// ---------------------------------------------------------------- sort and sweep
//
// Boxes sorted by min x; the order is kept between frames and repaired by an
// insertion sort (nearly linear for coherent motion). The sweep tests each box
// against the following ones while their min x is within its max x.

typedef struct sweep_state {
	int n;
	int *order;
	float *key;
	float *v; // sorted copies: min x, max x, min y, max y, min z, max z
} sweep_state;

static const ort3_box *sweep_sort_boxes;

static int sweep_cmp(const void *a, const void *b)
{
	float x = sweep_sort_boxes[*(const int *)a].min[0], y = sweep_sort_boxes[*(const int *)b].min[0];
	return (x > y) - (x < y);
}

static void sweep_resort(sweep_state *s, const bench_frame *f)
{
	int n = s->n;
	for (int i = 0; i < n; ++i) s->key[i] = f->boxes[s->order[i]].min[0];
	for (int i = 1; i < n; ++i) {
		float k = s->key[i];
		int o = s->order[i];
		int j = i - 1;
		while (j >= 0 && s->key[j] > k) {
			s->key[j + 1] = s->key[j];
			s->order[j + 1] = s->order[j];
			--j;
		}
		s->key[j + 1] = k;
		s->order[j + 1] = o;
	}
	for (int i = 0; i < n; ++i) {
		const ort3_box *b = &f->boxes[s->order[i]];
		float *o = s->v + 6 * (size_t)i;
		o[0] = b->min[0];
		o[1] = b->max[0];
		o[2] = b->min[1];
		o[3] = b->max[1];
		o[4] = b->min[2];
		o[5] = b->max[2];
	}
}

static void *sweep_create(const bench_frame *f)
{
	sweep_state *s = calloc(1, sizeof *s);
	s->n = f->count;
	s->order = malloc(sizeof(int) * (size_t)(f->count + 1));
	s->key = malloc(sizeof(float) * (size_t)(f->count + 1));
	s->v = malloc(sizeof(float) * 6 * (size_t)(f->count + 1));
	for (int i = 0; i < f->count; ++i) s->order[i] = i;
	sweep_sort_boxes = f->boxes;
	qsort(s->order, (size_t)f->count, sizeof(int), sweep_cmp);
	sweep_resort(s, f);
	return s;
}

static void sweep_update(void *st, const bench_frame *f) { sweep_resort(st, f); }

static void sweep_pairs(void *st, const bench_frame *f, bench_sink *sink)
{
	(void)f;
	sweep_state *s = st;
	int n = s->n;
	for (int i = 0; i < n; ++i) {
		const float *a = s->v + 6 * (size_t)i;
		float ax = a[1];
		for (int j = i + 1; j < n; ++j) {
			const float *b = s->v + 6 * (size_t)j;
			if (b[0] > ax) break;
			if (a[2] <= b[3] && b[2] <= a[3] && a[4] <= b[5] && b[4] <= a[5])
				bench_sink_pair(sink, (uint32_t)s->order[i], (uint32_t)s->order[j]);
		}
	}
}

static void sweep_destroy(void *st)
{
	sweep_state *s = st;
	free(s->order);
	free(s->key);
	free(s->v);
	free(s);
}

int bench_baselines_register(bench_impl *list, int max)
{
	int n = 0;
	if (n < max)
		list[n++] = (bench_impl){.name = "brute", .family = "baseline", .dims = BENCH_DIM2 | BENCH_DIM3,
		                         .max_count = 20000, .create = brute_create, .update = brute_update,
		                         .pairs = brute_pairs, .destroy = brute_destroy, .query_boxes = brute_query_boxes,
		                         .ray_all = brute_ray_all, .ray_first = brute_ray_first, .knn = brute_knn};
	if (n < max)
		list[n++] = (bench_impl){.name = "grid", .family = "baseline", .dims = BENCH_DIM2 | BENCH_DIM3,
		                         .create = grid_create, .update = grid_update, .pairs = grid_pairs,
		                         .destroy = grid_destroy, .query_boxes = grid_query_boxes, .knn = grid_knn};
	if (n < max)
		list[n++] = (bench_impl){.name = "sweep", .family = "baseline", .dims = BENCH_DIM2 | BENCH_DIM3,
		                         .create = sweep_create, .update = sweep_update, .pairs = sweep_pairs,
		                         .destroy = sweep_destroy};
	return n;
}

// peer_sidx.c: libspatialindex through its C API (sidx), in memory.
//  - sidx-rstar: an R*-tree filled one insert at a time; movers are deleted
//    and re-inserted.
//  - sidx-bulk: the tree bulk-loaded (Index_CreateWithStream, STR packing)
//    from all boxes, rebuilt every frame.
// All pairs = one intersection query per box, keeping ids above its own.
#include <math.h>
#include <stddef.h> // sidx_api.h uses size_t without including it
#include <stdint.h>
#include <stdlib.h>

#include <spatialindex/capi/sidx_api.h>
#include <string.h>

#include "bench.h"

typedef struct sidx_state {
	IndexH index;
	int dim;
	int bulk;
	ort3_box *boxes; // what the index was last told (deletes need the old box)
	int count;
} sidx_state;

static void sidx_bounds(const ort3_box *b, int dim, double lo[3], double hi[3])
{
	for (int d = 0; d < dim; ++d) {
		lo[d] = b->min[d];
		hi[d] = b->max[d];
	}
}

// The IDs whose boxes intersect b, n of them (free them with Index_Free).
static int64_t *sidx_intersects(const sidx_state *s, const ort3_box *b, int dim, uint64_t *n)
{
	double lo[3], hi[3];
	sidx_bounds(b, dim, lo, hi);
	int64_t *ids = NULL;
	*n = 0;
	Index_Intersects_id(s->index, lo, hi, (uint32_t)dim, &ids, n);
	return ids;
}

static IndexPropertyH sidx_props(int dim)
{
	IndexPropertyH p = IndexProperty_Create();
	IndexProperty_SetIndexType(p, RT_RTree);
	IndexProperty_SetIndexVariant(p, RT_Star);
	IndexProperty_SetIndexStorage(p, RT_Memory);
	IndexProperty_SetDimension(p, (uint32_t)dim);
	return p;
}

// Index_CreateWithStream's reader takes no context: the stream being loaded.
static const ort3_box *sidx_stream_boxes;
static int sidx_stream_count, sidx_stream_next, sidx_stream_dim;
static double sidx_stream_lo[3], sidx_stream_hi[3];

static int sidx_read_next(int64_t *id, double **pmin, double **pmax, uint32_t *ndim, const uint8_t **data, size_t *len)
{
	if (sidx_stream_next >= sidx_stream_count) return 1; // non-zero: end of stream
	int i = sidx_stream_next++;
	sidx_bounds(&sidx_stream_boxes[i], sidx_stream_dim, sidx_stream_lo, sidx_stream_hi);
	*id = i;
	*pmin = sidx_stream_lo;
	*pmax = sidx_stream_hi;
	*ndim = (uint32_t)sidx_stream_dim;
	*data = NULL;
	*len = 0;
	return 0;
}

static IndexH sidx_bulk_load(const ort3_box *boxes, int count, int dim)
{
	IndexPropertyH p = sidx_props(dim);
	sidx_stream_boxes = boxes;
	sidx_stream_count = count;
	sidx_stream_next = 0;
	sidx_stream_dim = dim;
	IndexH index = Index_CreateWithStream(p, sidx_read_next);
	IndexProperty_Destroy(p);
	return index;
}

static void *sidx_create_common(const bench_frame *f, int bulk)
{
	sidx_state *s = calloc(1, sizeof *s);
	s->dim = f->dim;
	s->bulk = bulk;
	s->count = f->count;
	s->boxes = malloc(sizeof *s->boxes * (size_t)(f->count + 1));
	memcpy(s->boxes, f->boxes, sizeof *s->boxes * (size_t)f->count);
	if (bulk) {
		s->index = sidx_bulk_load(f->boxes, f->count, f->dim);
	} else {
		IndexPropertyH p = sidx_props(f->dim);
		s->index = Index_Create(p);
		IndexProperty_Destroy(p);
		for (int i = 0; i < f->count; ++i) {
			double lo[3], hi[3];
			sidx_bounds(&f->boxes[i], f->dim, lo, hi);
			Index_InsertData(s->index, i, lo, hi, (uint32_t)f->dim, NULL, 0);
		}
	}
	return s;
}

static void *sidx_create_rstar(const bench_frame *f) { return sidx_create_common(f, 0); }
static void *sidx_create_bulk(const bench_frame *f) { return sidx_create_common(f, 1); }

static void sidx_update(void *st, const bench_frame *f)
{
	sidx_state *s = st;
	if (s->bulk) {
		Index_Destroy(s->index);
		s->index = sidx_bulk_load(f->boxes, f->count, f->dim);
		return;
	}
	for (int k = 0; k < f->moved_count; ++k) {
		int i = f->moved[k];
		double lo[3], hi[3];
		sidx_bounds(&s->boxes[i], f->dim, lo, hi);
		Index_DeleteData(s->index, i, lo, hi, (uint32_t)f->dim);
		sidx_bounds(&f->boxes[i], f->dim, lo, hi);
		Index_InsertData(s->index, i, lo, hi, (uint32_t)f->dim, NULL, 0);
		s->boxes[i] = f->boxes[i];
	}
}

static void sidx_pairs(void *st, const bench_frame *f, bench_sink *sink)
{
	sidx_state *s = st;
	for (int i = 0; i < f->count; ++i) {
		uint64_t n;
		int64_t *ids = sidx_intersects(s, &f->boxes[i], f->dim, &n);
		for (uint64_t k = 0; k < n; ++k) {
			int64_t j = ids[k];
			if (j > i && bench_overlap(&f->boxes[i], &f->boxes[j])) bench_sink_pair(sink, (uint32_t)i, (uint32_t)j);
		}
		Index_Free(ids);
	}
}

static void sidx_destroy(void *st)
{
	sidx_state *s = st;
	Index_Destroy(s->index);
	free(s->boxes);
	free(s);
}

static void sidx_query_boxes(void *st, const bench_frame *f, bench_queries *q)
{
	sidx_state *s = st;
	for (int k = 0; k < q->count; ++k) {
		uint64_t n;
		int64_t *ids = sidx_intersects(s, &q->boxes[k], f->dim, &n);
		for (uint64_t i = 0; i < n; ++i)
			if (bench_overlap(&q->boxes[k], &f->boxes[ids[i]])) bench_sink_id(&q->sinks[k], (uint32_t)ids[i]);
		Index_Free(ids);
	}
}

// k nearest by the library (it may return ties past k); distances recomputed exactly.
static void sidx_knn(void *st, const bench_frame *f, bench_queries *q)
{
	sidx_state *s = st;
	for (int k = 0; k < q->count; ++k) {
		double p[3] = {q->points[k][0], q->points[k][1], q->points[k][2]};
		int64_t *ids = NULL;
		uint64_t n = (uint64_t)q->k; // in: k; out: how many came back
		Index_NearestNeighbors_id(s->index, p, p, (uint32_t)f->dim, &ids, &n);
		float *best = q->knn_dist + (size_t)k * (size_t)q->k;
		for (int i = 0; i < q->k; ++i) best[i] = INFINITY;
		for (uint64_t i = 0; i < n; ++i) bench_knn_push(best, q->k, bench_point_box_dist(q->points[k], &f->boxes[ids[i]], f->dim));
		Index_Free(ids);
	}
}

int bench_sidx_register(bench_impl *list, int max)
{
	int n = 0;
	if (n < max)
		// Deleting from it costs ~0.6 ms per box at 10k boxes (measured), so scenes past 5000 boxes are skipped.
		list[n++] = (bench_impl){.name = "sidx-rstar", .family = "peer", .dims = BENCH_DIM2 | BENCH_DIM3,
		                         .dynamic_only = 1, .max_count = 5000, .create = sidx_create_rstar, .update = sidx_update,
		                         .pairs = sidx_pairs, .destroy = sidx_destroy};
	if (n < max)
		list[n++] = (bench_impl){.name = "sidx-bulk", .family = "peer", .dims = BENCH_DIM2 | BENCH_DIM3,
		                         .create = sidx_create_bulk, .update = sidx_update, .pairs = sidx_pairs,
		                         .destroy = sidx_destroy, .query_boxes = sidx_query_boxes, .knn = sidx_knn};
	return n;
}

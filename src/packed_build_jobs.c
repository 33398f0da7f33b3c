// packed_build_jobs.c: ortN_packed_build split into jobs through an ort_tasks
// (task_int.h); the serial steps it mirrors are in packed_build.c.
//
// With tasks, every pass over the items runs in chunks of PK_CHUNK items, cut
// by the count alone: checking and bounding; keying, with a histogram of the
// top digit per chunk; when the top digit spreads the keys, one radix pass on
// it (a scatter per chunk whose offsets, digit by digit, then chunk by chunk,
// keep the sort stable) and then runs of its buckets sorted in jobs of their
// own (pk_sort_top_first) — else each radix pass as a count per chunk and
// such a scatter per chunk; and the
// gather. Then the blocks: a walk of the top of the tree on the calling
// thread (pk_node with a mode) stops at every subtree of at most job_items
// items and lists it as a job; the workers count each job's blocks; a second
// walk numbers the blocks as the serial build would (a job's blocks start
// where the serial build's counter would stand when it reached it); the
// workers build the jobs into their blocks; a last walk writes the top
// blocks from the jobs' results. So the tree is the serial build's, block
// for block, whatever the workers.
#include "packed_int.h"
#include "task_int.h"

#define PK_CHUNK 16384u

typedef struct pk_node_job {
	uint32_t lo, hi, code;
	int level;
	uint32_t base, count; ///< its blocks: [base, base + count)
	box_t bounds;
	pk_lane_out lane;
} pk_node_job;

static box_t pk_job_edge(pk_build *b, uint32_t lo, uint32_t hi, int level, uint32_t code, pk_lane_out *ln)
{
	pk_node_job *j = b->mode == PK_COUNT_JOBS ? NULL : &b->jobs[b->next_job];
	b->next_job++;
	*ln = (pk_lane_out){lo, 0, NIL, false};
	switch (b->mode) {
	case PK_PLAN: *j = (pk_node_job){lo, hi, code, level, 0, 0, pk_empty_box(), {lo, 0, NIL, false}}; break;
	case PK_NUMBER:
		j->base = b->made;
		b->made += j->count;
		break;
	case PK_FINISH:
		assert(j->base == b->made);
		b->made += j->count;
		*ln = j->lane;
		return j->bounds;
	default: break;
	}
	return pk_empty_box();
}

/// One chunk's findings.
typedef struct pk_chunk {
	uint32_t hist[3][2048];
	box_t bounds;
	ort_result r;
} pk_chunk;

/// What the jobs of one build share.
typedef struct pk_par {
	const pk_grid *g;
	const char *base;
	size_t stride;
	uint32_t n;
	bool check;
	pk_chunk *chunks;
	uint64_t *src, *dst; ///< a radix pass: from, to
	int pass;
	const uint64_t *sorted;
	box_t *boxes;
	uint32_t *ids;
	uint64_t *scratch;
	pblock *blocks;
	int depth, bucket;
	pk_node_job *jobs;
	const uint32_t *groups; ///< the sort's runs of top-digit buckets: ends
} pk_par;

static void pk_chunk_range(const pk_par *c, int j, uint32_t *lo, uint32_t *hi)
{
	*lo = (uint32_t)j * PK_CHUNK;
	*hi = c->n - *lo > PK_CHUNK ? *lo + PK_CHUNK : c->n;
}

/// Chunk j's items [*lo, *hi) and its findings, bounds emptied.
static pk_chunk *pk_chunk_begin(const pk_par *c, int j, uint32_t *lo, uint32_t *hi)
{
	pk_chunk_range(c, j, lo, hi);
	pk_chunk *ch = &c->chunks[j];
	ch->bounds = pk_empty_box();
	ch->r = ORT_OK;
	return ch;
}

static void pk_job_bound(void *ctx, int j, tk_out *out)
{
	(void)out;
	pk_par *c = ctx;
	uint32_t lo, hi;
	pk_chunk *ch = pk_chunk_begin(c, j, &lo, &hi);
	ch->r = pk_bound_all(c->base + (size_t)lo * c->stride, c->stride, hi - lo, &ch->bounds);
}

static void pk_job_keys(void *ctx, int j, tk_out *out)
{
	(void)out;
	pk_par *c = ctx;
	uint32_t lo, hi;
	pk_chunk *ch = pk_chunk_begin(c, j, &lo, &hi);
	memset(ch->hist[2], 0, sizeof ch->hist[2]);
	for (uint32_t i = lo; i < hi; ++i) {
		box_t b = pk_load(c->base, c->stride, i);
		if (c->check) {
			if ((ch->r = pk_box_ok(&b)) != ORT_OK) return;
			pk_grow(&ch->bounds, &b);
		}
		uint32_t key = pk_key(c->g, &b);
		c->dst[i] = (uint64_t)key << 32 | i;
		ch->hist[2][key >> 22]++; // the other digits: counted when a pass needs them
	}
}

static inline uint32_t pk_digit(uint64_t v, int pass) { return (uint32_t)(v >> (32 + 11 * pass)) & 2047u; }

static void pk_job_recount(void *ctx, int j, tk_out *out)
{
	(void)out;
	pk_par *c = ctx;
	uint32_t lo, hi, *h = c->chunks[j].hist[c->pass];
	pk_chunk_range(c, j, &lo, &hi);
	memset(h, 0, sizeof c->chunks[j].hist[0]);
	for (uint32_t i = lo; i < hi; ++i) h[pk_digit(c->src[i], c->pass)]++;
}

static void pk_job_scatter(void *ctx, int j, tk_out *out)
{
	(void)out;
	pk_par *c = ctx;
	uint32_t lo, hi, *h = c->chunks[j].hist[c->pass];
	pk_chunk_range(c, j, &lo, &hi);
	for (uint32_t i = lo; i < hi; ++i) {
		uint64_t v = c->src[i];
		c->dst[h[pk_digit(v, c->pass)]++] = v;
	}
}

static void pk_job_gather(void *ctx, int j, tk_out *out)
{
	(void)out;
	pk_par *c = ctx;
	uint32_t lo, hi;
	pk_chunk_range(c, j, &lo, &hi);
	pk_gather(c->boxes + lo, c->ids + lo, c->sorted + lo, c->base, c->stride, hi - lo);
}

static void pk_job_count_blocks(void *ctx, int j, tk_out *out)
{
	(void)out;
	pk_par *c = ctx;
	pk_node_job *jb = &c->jobs[j];
	pk_build b = {c->sorted, NULL, NULL, 0, c->depth, c->bucket, NULL, 0, false, NULL, 0, PK_SERIAL, 0, NULL, NULL};
	pk_lane_out ln;
	pk_node(&b, jb->lo, jb->hi, jb->level, jb->code, &ln);
	jb->count = b.made;
}

static void pk_job_fill(void *ctx, int j, tk_out *out)
{
	(void)out;
	pk_par *c = ctx;
	pk_node_job *jb = &c->jobs[j];
	pk_build b = {c->sorted, c->boxes, c->blocks, jb->base, c->depth, c->bucket, NULL, 0, false, NULL, 0, PK_SERIAL, 0,
	              c->ids, c->scratch};
	jb->bounds = pk_node(&b, jb->lo, jb->hi, jb->level, jb->code, &jb->lane);
	assert(b.made == jb->base + jb->count);
}

/// Sort src[lo, hi), whose keys come grouped by top digit in ascending
/// order, by key, stably, in three LSD passes through tmp (the same range
/// of the other buffer): the result ends in tmp. One counting pass makes
/// all three histograms; the top digit's spans only the digits the run holds.
static void pk_sort_run(uint64_t *src, uint64_t *tmp, uint32_t lo, uint32_t hi)
{
	uint32_t h[3][2048], top0 = pk_digit(src[lo], 2), top1 = pk_digit(src[hi - 1], 2);
	assert(top0 <= top1);
	memset(h, 0, sizeof h[0] * 2);
	memset(&h[2][top0], 0, sizeof h[2][0] * (top1 - top0 + 1));
	for (uint32_t i = lo; i < hi; ++i) {
		uint64_t v = src[i];
		h[0][pk_digit(v, 0)]++;
		h[1][pk_digit(v, 1)]++;
		h[2][pk_digit(v, 2)]++;
	}
	for (int pass = 0; pass < 3; ++pass) {
		uint32_t sum = lo, *hp = h[pass];
		for (uint32_t d = pass == 2 ? top0 : 0, e = pass == 2 ? top1 : 2047; d <= e; ++d) {
			uint32_t t = hp[d];
			hp[d] = sum;
			sum += t;
		}
		for (uint32_t i = lo; i < hi; ++i) tmp[hp[pk_digit(src[i], pass)]++] = src[i];
		uint64_t *t = src;
		src = tmp;
		tmp = t;
	}
}

/// A run of whole top-digit buckets (c->groups: the runs' ends), sorted
/// from c->dst into c->src.
static void pk_job_run(void *ctx, int j, tk_out *out)
{
	(void)out;
	pk_par *c = ctx;
	pk_sort_run(c->dst, c->src, c->groups[j], c->groups[j + 1]);
}

/// When the top digit spreads the keys well (no bucket above n / 32), sort
/// by it first — one scatter over all keys, offsets by digit then chunk,
/// as an LSD pass makes them — and then each run of whole buckets in a job
/// of its own, in cache (its three passes sort within the run, so back into
/// *keys): no recount passes over the whole array, and the same stable order
/// as three LSD passes over it. False (nothing done) when a bucket is too
/// large for the jobs to balance.
static bool pk_sort_top_first(ort_tasks *tasks, pk_par *c, int chunks, uint64_t *keys, uint64_t *other)
{
	uint32_t n = c->n, total[2048] = {0}, most = 0;
	for (int d = 0; d < 2048; ++d) {
		for (int k = 0; k < chunks; ++k) total[d] += c->chunks[k].hist[2][d];
		most = total[d] > most ? total[d] : most;
	}
	if (most > n / 32) return false;
	uint32_t sum = 0, job_items = n / TK_JOBS_TARGET < 4096 ? 4096 : n / TK_JOBS_TARGET, groups[2049];
	int jobs = 0;
	groups[0] = 0;
	for (int d = 0; d < 2048; ++d) {
		for (int k = 0; k < chunks; ++k) {
			uint32_t t = c->chunks[k].hist[2][d];
			c->chunks[k].hist[2][d] = sum;
			sum += t;
		}
		if (sum - groups[jobs] >= job_items || (d == 2047 && sum > groups[jobs])) groups[++jobs] = sum;
	}
	c->src = keys;
	c->dst = other;
	c->pass = 2;
	ort_tk_for(tasks, chunks, pk_job_scatter, c);
	c->groups = groups;
	ort_tk_for(tasks, jobs, pk_job_run, c); // from c->dst back into c->src
	return true;
}

/// Sort the keys into a->sort_a (as pk_sort_keys), in chunks. With a region
/// the boxes are checked and bounded into *all here.
static ort_result pk_sort_in_jobs(ort_tasks *tasks, pk_par *c, bool growing, pk_arrays *a, box_t *all)
{
	uint32_t n = c->n;
	int chunks = (int)((n + PK_CHUNK - 1) / PK_CHUNK);
	uint64_t *keys, *other;
	pk_sort_buffers(growing, a, &keys, &other);
	c->dst = keys;
	ort_tk_for(tasks, chunks, pk_job_keys, c);
	for (int k = 0; k < chunks; ++k) {
		if (c->chunks[k].r != ORT_OK) return c->chunks[k].r;
		pk_grow(all, &c->chunks[k].bounds);
	}
	bool top_first = pk_sort_top_first(tasks, c, chunks, keys, other);
	for (int pass = 0; pass < 3 && !top_first; ++pass) {
		c->src = keys;
		c->dst = other;
		c->pass = pass;
		// The keys were made counting the top digit alone (all that the
		// top-first sort needs): the passes count the array as it is now.
		ort_tk_for(tasks, chunks, pk_job_recount, c);
		uint32_t digit0 = pk_digit(keys[0], pass), total = 0;
		for (int k = 0; k < chunks; ++k) total += c->chunks[k].hist[pass][digit0];
		if (total == n) continue; // one bucket: the pass would not move anything
		uint32_t sum = 0;
		for (int d = 0; d < 2048; ++d)
			for (int k = 0; k < chunks; ++k) {
				uint32_t t = c->chunks[k].hist[pass][d];
				c->chunks[k].hist[pass][d] = sum;
				sum += t;
			}
		ort_tk_for(tasks, chunks, pk_job_scatter, c);
		uint64_t *t = keys;
		keys = other;
		other = t;
	}
	pk_sort_end(growing, a, keys, other, n);
	return ORT_OK;
}

/// The blocks' jobs and their numbering: *need blocks in all. Only scratch is written.
static ort_result pk_plan_blocks(ort_tasks *tasks, pk_par *c, pk_build *bd, uint32_t n, uint32_t *need)
{
	uint32_t job_items = n / TK_JOBS_TARGET;
	*bd = (pk_build){c->sorted, NULL, NULL, 1, c->depth, c->bucket, NULL, 0, false,
	                 NULL, job_items < 2048 ? 2048 : job_items, PK_COUNT_JOBS, 0, NULL, NULL};
	pk_root(bd, n);
	int jobs = bd->next_job;
	c->jobs = ort_tk_scratch(tasks, (size_t)jobs * sizeof *c->jobs);
	if (!c->jobs) return ORT_ERROR_OUT_OF_MEMORY;
	bd->jobs = c->jobs;
	bd->mode = PK_PLAN;
	bd->next_job = 0;
	pk_root(bd, n);
	ort_tk_for(tasks, jobs, pk_job_count_blocks, c);
	bd->mode = PK_NUMBER;
	bd->next_job = 0;
	bd->made = 1;
	pk_root(bd, n);
	*need = bd->made;
	return ORT_OK;
}

static ort_result pk_build_in_jobs(packed_t *p, ort_tasks *tasks, const char *base, size_t stride, uint32_t n)
{
	int chunks = (int)((n + PK_CHUNK - 1) / PK_CHUNK);
	pk_par c = {.base = base, .stride = stride, .n = n, .depth = p->def.max_depth, .bucket = p->def.bucket_size};
	c.chunks = ort_tk_scratch(tasks, (size_t)chunks * sizeof *c.chunks);
	if (!c.chunks) return ORT_ERROR_OUT_OF_MEMORY;
	bool in_region = p->def.use_region;
	box_t all = pk_empty_box();
	if (!in_region) {
		ort_tk_for(tasks, chunks, pk_job_bound, &c);
		for (int k = 0; k < chunks; ++k) {
			if (c.chunks[k].r != ORT_OK) return c.chunks[k].r;
			pk_grow(&all, &c.chunks[k].bounds);
		}
	}
	pk_arrays a;
	ort_result r = pk_arrays_for(p, n, &a);
	if (r != ORT_OK) return r;
	bool growing = a.boxes != p->boxes;
	pk_grid g = pk_grid_make(in_region ? &p->def.region : &all, p->def.max_depth, n);
	c.g = &g;
	c.check = in_region;
	pk_build bd;
	uint32_t need = 0;
	r = pk_sort_in_jobs(tasks, &c, growing, &a, &all);
	c.sorted = a.sort_a;
	if (r == ORT_OK) r = pk_plan_blocks(tasks, &c, &bd, n, &need);
	pblock *blocks = p->blocks;
	uint32_t block_cap = p->block_cap;
	if (r == ORT_OK && need > block_cap) {
		block_cap = need + need / 4 + 16; // room to spare: shapes vary from frame to frame
		blocks = pk_alloc(p, (size_t)block_cap * sizeof *blocks);
		if (!blocks) r = ORT_ERROR_OUT_OF_MEMORY;
	}
	if (r != ORT_OK) {
		if (growing) pk_arrays_free(p, &a);
		return r;
	}
	// Nothing fails from here: the new arrays replace the old.
	if (growing) {
		pk_free_items(p, p->boxes, p->ids, p->sort_a, p->sort_b, p->cap);
		p->boxes = a.boxes;
		p->ids = a.ids;
		p->cap = a.cap;
	}
	p->sort_a = a.sort_a;
	p->sort_b = a.sort_b;
	if (blocks != p->blocks) {
		pk_free(p, p->blocks, (size_t)p->block_cap * sizeof *p->blocks);
		p->blocks = blocks;
		p->block_cap = block_cap;
	}
	c.boxes = p->boxes;
	c.ids = p->ids;
	c.scratch = p->sort_b;
	c.blocks = p->blocks;
	ort_tk_for(tasks, chunks, pk_job_gather, &c);
	ort_tk_for(tasks, bd.next_job, pk_job_fill, &c);
	bd.boxes = p->boxes;
	bd.ids = p->ids;
	bd.scratch = p->sort_b;
	bd.blocks = p->blocks;
	bd.mode = PK_FINISH;
	bd.next_job = 0;
	bd.made = 1;
	pk_root(&bd, n);
	assert(bd.made == need);
	p->block_count = need;
	p->count = n;
	p->bounds = all;
	pk_least_fill(p);
	return ORT_OK;
}


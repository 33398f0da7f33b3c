/// @file orthant_dim.h
/// The orthant adapter for one dimension. Included by orthant.c with
/// BENCH_OD set to 2 and then 3, so both dimensions share one text (names
/// bench_o2_* / bench_o3_*, calling ort2_* / ort3_*).
#ifndef BENCH_OD
#error "define BENCH_OD (2 or 3) before including orthant_dim.h"
#endif

#define BENCH_OCAT_(a, b, c) a##b##_##c
#define BENCH_OCAT(a, b, c) BENCH_OCAT_(a, b, c)
#define OT(x) BENCH_OCAT(ort, BENCH_OD, x)
#define BF(x) BENCH_OCAT(bench_o, BENCH_OD, x)

typedef struct BF(state) {
	int dim; // first, as in every adapter state: orthant.c dispatches on it
	int incremental; // 0: clear + build each frame; 1: move; 2: move + the incremental broad phase; 3: as 2, moves in one move_many batch
	int n;
	OT(tree) * tree;
	ort_handle *handles;
	OT(box) * boxes; // the frame's boxes in the tree's form (rebuild mode; batch mode: the moved ones)
	ort_handle *batch; // batch mode: the moved ones' handles
	void **user;     // user data = the box id
	uint32_t *box_of_id; // handle id -> box, as a user indexes its objects by id (NULL: id - 1)
	uint64_t *fixed; // broad phase with never-moving boxes: their pairs among themselves (bench_pair_key of box ids), found once
	size_t fixed_len, fixed_cap;
} BF(state);

static OT(box) BF(box)(const ort3_box *b)
{
	OT(box) r;
	for (int d = 0; d < BENCH_OD; ++d) {
		r.min[d] = b->min[d];
		r.max[d] = b->max[d];
	}
	return r;
}

static bool BF(fixed_cb)(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)a;
	(void)b;
	BF(state) *s = ctx;
	if (s->fixed_len == s->fixed_cap) {
		s->fixed_cap = s->fixed_cap ? 2 * s->fixed_cap : 4096;
		s->fixed = realloc(s->fixed, sizeof *s->fixed * s->fixed_cap);
		if (!s->fixed) {
			fprintf(stderr, "orthant: out of memory for the static pairs\n");
			exit(3);
		}
	}
	s->fixed[s->fixed_len++] = bench_pair_key((uint32_t)(uintptr_t)ua, (uint32_t)(uintptr_t)ub);
	return true;
}

// The broad phase in a world whose boxes mostly never move (frame->mobile),
// set up as the Jolt and Box2D v3 adapters set theirs up: the boxes that
// never move are marked static (ort_filter.is_static), so the broad phase
// keeps only the pairs with a mover in its set, as their layers do; the pairs
// of two static boxes, which no frame can change, are found once here
// (find_pairs, before the marking) and reported each frame from a dense array
// of their own, as the Jolt adapter reports its static pairs.
static void BF(mark_static)(BF(state) * s, const bench_frame *f)
{
	int statics = 0;
	for (int i = 0; i < f->count; ++i) statics += !f->mobile[i];
	if (statics == 0 || statics == f->count) return; // a world of one kind: nothing to keep apart
	OT(tree_find_pairs)(s->tree, ORT_MASK_ALL, BF(fixed_cb), s);
	size_t keep = 0;
	for (size_t k = 0; k < s->fixed_len; ++k)
		if (!f->mobile[(uint32_t)s->fixed[k]] && !f->mobile[s->fixed[k] >> 32]) s->fixed[keep++] = s->fixed[k];
	s->fixed_len = keep;
	// The set is final: its array is cut to its length (doubling left up to
	// twice the room, which bytes() would count as the library's).
	if (keep && keep < s->fixed_cap) {
		uint64_t *fit = realloc(s->fixed, sizeof *s->fixed * keep);
		if (fit) s->fixed = fit, s->fixed_cap = keep;
	}
	ort_filter still = ORT_FILTER_DEFAULT;
	still.is_static = true;
	for (int i = 0; i < f->count; ++i)
		if (!f->mobile[i] && OT(tree_set_filter)(s->tree, s->handles[i], still) != ORT_OK) {
			fprintf(stderr, "orthant: set_filter failed\n");
			exit(3);
		}
}

static void *BF(create)(const bench_frame *f, ort_placement placement, int incremental)
{
	BF(state) *s = calloc(1, sizeof *s);
	s->dim = BENCH_OD;
	s->incremental = incremental;
	s->n = f->count;
	OT(tree_def) def = OT(tree_default_def)();
	def.placement = placement;
	def.region = BF(box)(&f->world);
	def.use_region = true;
	def.item_capacity = f->count;
	if (OT(tree_create)(&def, &s->tree) != ORT_OK) {
		fprintf(stderr, "orthant: tree_create failed\n");
		exit(3);
	}
	s->handles = malloc(sizeof *s->handles * (size_t)(f->count + 1));
	s->boxes = malloc(sizeof *s->boxes * (size_t)(f->count + 1));
	s->user = malloc(sizeof *s->user * (size_t)(f->count + 1));
	s->batch = malloc(sizeof *s->batch * (size_t)(f->count + 1));
	for (int i = 0; i < f->count; ++i) {
		s->boxes[i] = BF(box)(&f->boxes[i]);
		s->user[i] = (void *)(uintptr_t)i;
	}
	ort_result r = OT(tree_build)(s->tree, s->boxes, s->user, f->count, s->handles);
	if (r != ORT_OK) {
		fprintf(stderr, "orthant: tree_build failed: %s\n", ort_result_string(r));
		exit(3);
	}
	// The build hands out handles in its own order: a user reading the pair
	// ids keeps a table from id to object, as here (skipped when they agree).
	uint32_t max_id = 0;
	bool in_order = true;
	for (int i = 0; i < f->count; ++i) {
		in_order &= s->handles[i].id == (uint32_t)i + 1;
		if (s->handles[i].id > max_id) max_id = s->handles[i].id;
	}
	if (!in_order) {
		s->box_of_id = calloc((size_t)max_id + 1, sizeof *s->box_of_id);
		for (int i = 0; i < f->count; ++i) s->box_of_id[s->handles[i].id] = (uint32_t)i;
	}
	if (incremental >= 2 && f->mobile) BF(mark_static)(s, f);
	if (incremental >= 2) OT(tree_update_pairs)(s->tree, NULL, NULL, NULL); // the initial pair set
	return s;
}

static void BF(update)(void *st, const bench_frame *f)
{
	BF(state) *s = st;
	if (s->incremental == 3) {
		for (int k = 0; k < f->moved_count; ++k) {
			int i = f->moved[k];
			s->batch[k] = s->handles[i];
			s->boxes[k] = BF(box)(&f->boxes[i]);
		}
		OT(tree_move_many)(s->tree, s->batch, s->boxes, f->moved_count);
		OT(tree_update_pairs)(s->tree, NULL, NULL, NULL);
		return;
	}
	if (s->incremental) {
		for (int k = 0; k < f->moved_count; ++k) {
			int i = f->moved[k];
			OT(tree_move)(s->tree, s->handles[i], BF(box)(&f->boxes[i]));
		}
		if (s->incremental == 2) OT(tree_update_pairs)(s->tree, NULL, NULL, NULL);
		return;
	}
	OT(tree_clear)(s->tree);
	for (int i = 0; i < f->count; ++i) s->boxes[i] = BF(box)(&f->boxes[i]);
	OT(tree_build)(s->tree, s->boxes, s->user, f->count, NULL);
}

static bool BF(pair_cb)(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)a;
	(void)b;
	bench_sink_pair(ctx, (uint32_t)(uintptr_t)ua, (uint32_t)(uintptr_t)ub);
	return true;
}

static void BF(pairs)(void *st, const bench_frame *f, bench_sink *sink)
{
	(void)f;
	BF(state) *s = st;
	if (s->incremental >= 2) {
		// The current set as the dense array of handle ids the broad phase
		// keeps, read at memory speed, as the peers read theirs (Jolt's
		// body indices name the boxes the same way).
		bench_sink_keys(sink, s->fixed, s->fixed_len);
		size_t count;
		const ort_id_pair *p = OT(tree_pair_ids)(s->tree, &count);
		if (s->box_of_id)
			for (size_t k = 0; k < count; ++k) bench_sink_pair(sink, s->box_of_id[p[k].a], s->box_of_id[p[k].b]);
		else
			for (size_t k = 0; k < count; ++k) bench_sink_pair(sink, p[k].a - 1, p[k].b - 1);
	} else
		OT(tree_find_pairs)(s->tree, ORT_MASK_ALL, BF(pair_cb), sink);
}

static void BF(destroy)(void *st)
{
	BF(state) *s = st;
	OT(tree_destroy)(s->tree);
	free(s->handles);
	free(s->boxes);
	free(s->user);
	free(s->box_of_id);
	free(s->batch);
	free(s->fixed);
	free(s);
}

static size_t BF(bytes)(void *st)
{
	BF(state) *s = st;
	ort_tree_stats stats;
	OT(tree_get_stats)(s->tree, &stats);
	return stats.bytes + s->fixed_cap * sizeof *s->fixed;
}

static size_t BF(pair_bytes)(void *st)
{
	BF(state) *s = st;
	ort_tree_stats stats;
	OT(tree_get_stats)(s->tree, &stats);
	return stats.bytes_pairs + s->fixed_cap * sizeof *s->fixed;
}

static bool BF(id_cb)(void *ctx, ort_handle h, void *user)
{
	(void)h;
	bench_sink_id(ctx, (uint32_t)(uintptr_t)user);
	return true;
}

static void BF(query_boxes)(void *st, const bench_frame *f, bench_queries *q)
{
	(void)f;
	BF(state) *s = st;
	for (int k = 0; k < q->count; ++k) OT(tree_query_box)(s->tree, BF(box)(&q->boxes[k]), ORT_MASK_ALL, BF(id_cb), &q->sinks[k]);
}

/// A benchmark ray's origin and direction in this dimension's arrays.
static void BF(ray_arrays)(const bench_ray *r, float o[BENCH_OD], float d[BENCH_OD])
{
	for (int i = 0; i < BENCH_OD; ++i) {
		o[i] = r->origin[i];
		d[i] = r->dir[i];
	}
}

/// The distances of the k nearest items to p, nearest first, into dist;
/// returns how many were found.
typedef int BF(nearest_fn)(void *st, const float p[BENCH_OD], int k, float *dist);

/// Every query point's row of q->knn_dist: the distances nearest() found, then
/// INFINITY up to q->k.
static void BF(knn_rows)(void *st, bench_queries *q, BF(nearest_fn) *nearest)
{
	int k = q->k < 64 ? q->k : 64;
	for (int j = 0; j < q->count; ++j) {
		float p[BENCH_OD];
		for (int i = 0; i < BENCH_OD; ++i) p[i] = q->points[j][i];
		float *best = q->knn_dist + (size_t)j * (size_t)q->k;
		int found = nearest(st, p, k, best);
		for (int i = found; i < q->k; ++i) best[i] = INFINITY;
	}
}

typedef struct BF(ray_ctx) {
	bench_sink *sink;
	float max_t;
	float best;
} BF(ray_ctx);

static float BF(ray_all_cb)(void *ctx, ort_handle h, void *user, float t)
{
	(void)h;
	(void)t;
	BF(ray_ctx) *c = ctx;
	bench_sink_id(c->sink, (uint32_t)(uintptr_t)user);
	return c->max_t; // go on with every hit
}

static float BF(ray_first_cb)(void *ctx, ort_handle h, void *user, float t)
{
	(void)h;
	(void)user;
	BF(ray_ctx) *c = ctx;
	if (t < c->best) c->best = t;
	return t; // clip: only nearer hits matter now
}

static void BF(rays)(BF(state) * s, bench_queries *q, int first)
{
	for (int k = 0; k < q->count; ++k) {
		const bench_ray *r = &q->rays[k];
		float o[BENCH_OD], d[BENCH_OD];
		BF(ray_arrays)(r, o, d);
		BF(ray_ctx) c = {&q->sinks[k], r->max_t, INFINITY};
		OT(tree_ray_cast)(s->tree, o, d, r->max_t, ORT_MASK_ALL, first ? BF(ray_first_cb) : BF(ray_all_cb), &c);
		if (first) q->first_t[k] = c.best;
	}
}

static void BF(ray_all)(void *st, const bench_frame *f, bench_queries *q) { (void)f, BF(rays)(st, q, 0); }
static void BF(ray_first)(void *st, const bench_frame *f, bench_queries *q) { (void)f, BF(rays)(st, q, 1); }

static int BF(nearest)(void *st, const float p[BENCH_OD], int k, float *dist)
{
	BF(state) *s = st;
	OT(neighbor) out[64];
	int found = 0;
	OT(tree_nearest)(s->tree, p, k, INFINITY, ORT_MASK_ALL, out, &found);
	for (int i = 0; i < found; ++i) dist[i] = out[i].distance;
	return found;
}

static void BF(knn)(void *st, const bench_frame *f, bench_queries *q) { (void)f, BF(knn_rows)(st, q, BF(nearest)); }

// ---- the packed tree: built whole from the frame's boxes every frame

typedef struct BF(packed_state) {
	int dim; // first, as in every adapter state
	int packed; // 1: tells the dispatcher this is the packed tree
	int n;
	OT(packed) * tree;
	OT(box) * boxes; // the frame's boxes in the tree's form
	// diff mode: began/ended found as the broad phase must find them, against
	// the last frame's sorted pair keys (lower id << idbits | higher id)
	int diff, idbits;
	uint64_t *keys[3]; // [0] the last frame's (sorted), [1] this frame's, [2] sort room
	size_t len, old_len, cap;
	size_t began, ended;
} BF(packed_state);

static void BF(packed_build)(BF(packed_state) * s, const bench_frame *f)
{
	const OT(box) *boxes = (const OT(box) *)(const void *)f->boxes; // 3D: the scene's own boxes
	if (BENCH_OD == 2) {
		for (int i = 0; i < f->count; ++i) s->boxes[i] = BF(box)(&f->boxes[i]);
		boxes = s->boxes;
	}
	ort_result r = OT(packed_build)(s->tree, boxes, f->count);
	if (r != ORT_OK) {
		fprintf(stderr, "orthant: packed_build failed: %s\n", ort_result_string(r));
		exit(3);
	}
}

static void BF(packed_update)(void *st, const bench_frame *f);

static void *BF(packed_create)(const bench_frame *f, int diff)
{
	BF(packed_state) *s = calloc(1, sizeof *s);
	s->diff = diff;
	s->idbits = 1;
	while (s->idbits < 31 && (uint64_t)f->count > (1ull << s->idbits)) s->idbits++;
	s->dim = BENCH_OD;
	s->packed = 1;
	s->n = f->count;
	OT(packed_def) def = OT(packed_default_def)();
	def.region = BF(box)(&f->world); // as the tree adapters: the scene's world is known
	def.use_region = true;
	if (OT(packed_create)(&def, &s->tree) != ORT_OK) exit(3);
	if (BENCH_OD == 2) s->boxes = malloc(sizeof *s->boxes * (size_t)(f->count + 1));
	BF(packed_update)(s, f); // diff mode: the first frame's pairs all begin
	return s;
}

static bool BF(packed_key_cb)(void *ctx, uint32_t a, uint32_t b)
{
	BF(packed_state) *s = ctx;
	if (s->len == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 1024;
		for (int k = 0; k < 3; ++k) s->keys[k] = realloc(s->keys[k], sizeof *s->keys[k] * s->cap);
	}
	s->keys[1][s->len++] = a < b ? (uint64_t)a << s->idbits | b : (uint64_t)b << s->idbits | a;
	return true;
}

/// The frame's pair keys sorted (digits of up to 12 bits, least significant
/// first), then merged with the last frame's: a key in one list alone began
/// or ended. What a user of the packed tree writes to get the events the
/// broad phase gives.
static void BF(packed_diff)(BF(packed_state) * s)
{
	int bits = 2 * s->idbits, passes = (bits + 11) / 12, width = (bits + passes - 1) / passes;
	uint32_t count[4096], mask = (1u << width) - 1;
	for (int pass = 0, shift = 0; pass < passes; ++pass, shift += width) {
		memset(count, 0, sizeof count);
		for (size_t j = 0; j < s->len; ++j) count[(s->keys[1][j] >> shift) & mask]++;
		uint32_t sum = 0;
		for (uint32_t b = 0; b <= mask; ++b) {
			uint32_t c = count[b];
			count[b] = sum;
			sum += c;
		}
		for (size_t j = 0; j < s->len; ++j) s->keys[2][count[(s->keys[1][j] >> shift) & mask]++] = s->keys[1][j];
		uint64_t *x = s->keys[1];
		s->keys[1] = s->keys[2];
		s->keys[2] = x;
	}
	size_t i = 0, j = 0;
	const uint64_t *ko = s->keys[0], *kn = s->keys[1];
	s->began = s->ended = 0;
	while (i < s->old_len && j < s->len) {
		if (ko[i] == kn[j])
			i++, j++;
		else if (ko[i] < kn[j])
			i++, s->ended++;
		else
			j++, s->began++;
	}
	s->ended += s->old_len - i;
	s->began += s->len - j;
	uint64_t *x = s->keys[0];
	s->keys[0] = s->keys[1];
	s->keys[1] = x;
	s->old_len = s->len;
}

static void BF(packed_update)(void *st, const bench_frame *f)
{
	BF(packed_state) *s = st;
	BF(packed_build)(s, f);
	if (!s->diff) return;
	s->len = 0;
	OT(packed_find_pairs)(s->tree, BF(packed_key_cb), s);
	BF(packed_diff)(s);
}

static bool BF(packed_pair_cb)(void *ctx, uint32_t a, uint32_t b)
{
	bench_sink_pair(ctx, a, b);
	return true;
}

static void BF(packed_pairs)(void *st, const bench_frame *f, bench_sink *sink)
{
	(void)f;
	BF(packed_state) *s = st;
	if (s->diff) {
		// The current set, as the broad phase rows read theirs.
		for (size_t k = 0; k < s->old_len; ++k)
			bench_sink_pair(sink, (uint32_t)(s->keys[0][k] >> s->idbits),
			                (uint32_t)(s->keys[0][k] & ((1ull << s->idbits) - 1)));
		return;
	}
	OT(packed_find_pairs)(s->tree, BF(packed_pair_cb), sink);
}

static void BF(packed_destroy)(void *st)
{
	BF(packed_state) *s = st;
	OT(packed_destroy)(s->tree);
	free(s->boxes);
	for (int k = 0; k < 3; ++k) free(s->keys[k]);
	free(s);
}

static size_t BF(packed_bytes)(void *st)
{
	BF(packed_state) *s = st;
	ort_tree_stats stats;
	OT(packed_get_stats)(s->tree, &stats);
	return stats.bytes;
}

static bool BF(packed_id_cb)(void *ctx, uint32_t id)
{
	bench_sink_id(ctx, id);
	return true;
}

static void BF(packed_query_boxes)(void *st, const bench_frame *f, bench_queries *q)
{
	(void)f;
	BF(packed_state) *s = st;
	for (int k = 0; k < q->count; ++k)
		OT(packed_query_box)(s->tree, BF(box)(&q->boxes[k]), BF(packed_id_cb), &q->sinks[k]);
}

static float BF(packed_ray_all_cb)(void *ctx, uint32_t id, float t)
{
	(void)t;
	BF(ray_ctx) *c = ctx;
	bench_sink_id(c->sink, id);
	return c->max_t;
}

static void BF(packed_rays)(BF(packed_state) * s, bench_queries *q, int first)
{
	for (int k = 0; k < q->count; ++k) {
		const bench_ray *r = &q->rays[k];
		float o[BENCH_OD], d[BENCH_OD];
		BF(ray_arrays)(r, o, d);
		if (first) {
			float t;
			q->first_t[k] = OT(packed_ray_first)(s->tree, o, d, r->max_t, NULL, &t) ? t : INFINITY;
		} else {
			BF(ray_ctx) c = {&q->sinks[k], r->max_t, INFINITY};
			OT(packed_ray_cast)(s->tree, o, d, r->max_t, BF(packed_ray_all_cb), &c);
		}
	}
}

static void BF(packed_ray_all)(void *st, const bench_frame *f, bench_queries *q) { (void)f, BF(packed_rays)(st, q, 0); }
static void BF(packed_ray_first)(void *st, const bench_frame *f, bench_queries *q) { (void)f, BF(packed_rays)(st, q, 1); }

static int BF(packed_nearest)(void *st, const float p[BENCH_OD], int k, float *dist)
{
	BF(packed_state) *s = st;
	ort_id_neighbor out[64];
	int found = 0;
	OT(packed_nearest)(s->tree, p, k, INFINITY, out, &found);
	for (int i = 0; i < found; ++i) dist[i] = out[i].distance;
	return found;
}

static void BF(packed_knn)(void *st, const bench_frame *f, bench_queries *q)
{
	(void)f, BF(knn_rows)(st, q, BF(packed_nearest));
}

#undef OT
#undef BF
#undef BENCH_OCAT
#undef BENCH_OCAT_

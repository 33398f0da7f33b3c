// fuzz_packed_check.h: fuzz_packed.c's checks of a packed tree against its
// model, brute force over the array the tree was built from: validate, count,
// bounds, stats and live bytes; find_pairs; query_box, query_point,
// query_sphere, ray_cast (all hits with their t, clipped, filtered and
// stopped), ray_first, nearest and nearest_batch. Included once, by fuzz_packed.c, inside
// its TEST_DIM part, after the fuzz state it checks; the decoding of the
// input stays there.

// ---- scene-level checks ------------------------------------------------------------

static bool on_id(void *ctx, uint32_t id)
{
	tu_push(ctx, id);
	return true;
}

static bool first_id(void *ctx, uint32_t id)
{
	(void)id;
	++*(int *)ctx;
	return false;
}

/// The pairs find_pairs reported: each must be two items whose boxes
/// overlap, reported once (one bit per pair: sorting the tens of thousands of
/// pairs of a pile would cost more than the rest of a step).
typedef struct pair_log {
	const fuzz *f;
	uint64_t *seen;
	size_t n;
} pair_log;

static bool on_pair(void *ctx, uint32_t a, uint32_t b)
{
	pair_log *l = ctx;
	int n = l->f->n;
	if (a >= (uint32_t)n || b >= (uint32_t)n || a == b)
		TU_FAIL("find_pairs: (%u, %u) of %d items\n", (unsigned)a, (unsigned)b, n);
	if (!tu_overlap(&l->f->box[a], &l->f->box[b]))
		TU_FAIL("find_pairs: (%u, %u) do not overlap\n", (unsigned)a, (unsigned)b);
	size_t bit = a < b ? (size_t)a * (size_t)n + b : (size_t)b * (size_t)n + a;
	if (l->seen[bit / 64] >> (bit % 64) & 1u) TU_FAIL("find_pairs: (%u, %u) twice\n", (unsigned)a, (unsigned)b);
	l->seen[bit / 64] |= (uint64_t)1 << (bit % 64);
	// Building, from inside the tree's own pair search, is refused: the walk
	// reads the arrays a build would move (destroy waits; test_adversarial).
	if (l->n++ == 0 && TU(packed_build)(l->f->t, l->f->box, n) != ORT_ERROR_BUSY)
		TU_FAIL("find_pairs: a build from its callback was not refused\n");
	return true;
}

static bool first_pair(void *ctx, uint32_t a, uint32_t b)
{
	(void)a, (void)b;
	++*(int *)ctx;
	return false;
}

static void expect_result(const char *what, ort_result got, ort_result want)
{
	if (got != want) TU_FAIL("%s: %s, not %s\n", what, ort_result_string(got), ort_result_string(want));
}

/// A callback that returns false must be the last one: once, if there is anything.
static void expect_stopped(const char *what, int calls, size_t want)
{
	if (calls != (want ? 1 : 0))
		TU_FAIL("%s: %d calls after the first returned false (%zu results)\n", what, calls, want);
}

/// validate, count, bounds, stats and bytes.
static void check_shape(fuzz *f)
{
	char msg[256];
	ort_result r = TU(packed_validate)(f->t, msg, sizeof msg);
	if (r != ORT_OK) TU_FAIL("validate: %s: %s\n", ort_result_string(r), msg);
	if (TU(packed_count)(f->t) != f->n) TU_FAIL("count %d, the model has %d\n", TU(packed_count)(f->t), f->n);
	box_t b = TU(packed_bounds)(f->t);
	for (int d = 0; d < DIM; ++d) {
		float lo = INFINITY, hi = -INFINITY;
		for (int i = 0; i < f->n; ++i) {
			lo = fminf(lo, f->box[i].min[d]);
			hi = fmaxf(hi, f->box[i].max[d]);
		}
		if (f->n == 0 ? !(b.min[d] > b.max[d]) : b.min[d] != lo || b.max[d] != hi)
			TU_FAIL("bounds on axis %d: %a..%a, brute force %a..%a\n", d, (double)b.min[d], (double)b.max[d],
			        (double)lo, (double)hi);
	}
	ort_tree_stats st;
	TU(packed_get_stats)(f->t, &st);
	int per_level = 0;
	for (int l = 0; l < ORTHANT_STATS_LEVELS; ++l) per_level += st.items_per_level[l];
	if (st.items != f->n || st.entries != f->n || per_level != f->n)
		TU_FAIL("stats: %d items, %d entries, %d by level; the model has %d\n", st.items, st.entries, per_level, f->n);
	// Depth: the grid's levels, each perhaps split from a pile of its own
	// items by a node of none, then one pile, NCHILD parts a level.
	int pile = 1;
	for (long m = 1; m < f->n; m *= 1L << DIM) ++pile;
	bool shape = f->n == 0 ? st.nodes == 0 && st.leaves == 0 && st.depth == 0
	                       : st.leaves >= 1 && st.leaves <= f->n && st.nodes >= st.leaves && st.nodes <= 2 * f->n - 1 &&
	                             st.depth <= 2 * (f->def.max_depth + 1) + pile;
	if (!shape) TU_FAIL("stats: %d nodes, %d leaves, depth %d for %d items\n", st.nodes, st.leaves, st.depth, f->n);
	if (st.bytes_peak < st.bytes) TU_FAIL("stats: peak %zu bytes below the %zu held\n", st.bytes_peak, st.bytes);
	size_t held = f->counted ? st.bytes : 0;
	if (held != f->alloc.live) TU_FAIL("stats: %zu bytes held, the allocator has %zu live\n", held, f->alloc.live);
	if (f->alloc.nblocks_peak > LIVE_MAX) TU_FAIL("allocator: more than %d blocks live at once\n", LIVE_MAX);
}

static void check_pairs(fuzz *f)
{
	static uint64_t seen[(MAX_ITEMS * MAX_ITEMS + 63) / 64];
	memset(seen, 0, ((size_t)f->n * (size_t)f->n + 63) / 64 * sizeof *seen);
	pair_log got = {f, seen, 0};
	size_t live = f->alloc.live;
	ort_tree_stats st0, st1;
	TU(packed_get_stats)(f->t, &st0);
	expect_result("find_pairs", TU(packed_find_pairs)(f->t, on_pair, &got), ORT_OK);
	// It keeps the keys it sweeps piles with (even refused, the pairs are
	// right): what it keeps is what the tree's stats count, nothing more
	// (seen only through the counting allocator: plain malloc is not).
	TU(packed_get_stats)(f->t, &st1);
	if (f->counted && f->alloc.live - live != st1.bytes - st0.bytes)
		TU_FAIL("find_pairs kept %zu bytes, stats count %zu\n", f->alloc.live - live, st1.bytes - st0.bytes);
	size_t want = 0;
	for (int i = 0; i < f->n; ++i)
		for (int j = i + 1; j < f->n; ++j) want += tu_overlap(&f->box[i], &f->box[j]);
	if (got.n != want) TU_FAIL("find_pairs: %zu pairs, brute force has %zu\n", got.n, want);
	int calls = 0;
	expect_result("find_pairs", TU(packed_find_pairs)(f->t, first_pair, &calls), ORT_OK);
	expect_stopped("find_pairs", calls, want);
}

// ---- queries ----------------------------------------------------------------------

static bool point_ok(const float p[DIM])
{
	for (int d = 0; d < DIM; ++d)
		if (!isfinite(p[d])) return false;
	return true;
}

/// query_box (point NULL) or query_point (q = [point, point]): items whose
/// box overlaps q, closed. query_box refuses NaN and min > max only (infinite
/// bounds are a query), query_point any coordinate that is not finite.
static void check_overlap_query(fuzz *f, box_t q, const float *point)
{
	const char *what = point ? "query_point" : "query_box";
	bool bad = point && !point_ok(point);
	for (int d = 0; d < DIM; ++d) bad |= !(q.min[d] <= q.max[d]);
	tu_list got = {0}, want = {0};
	int calls = 0;
	ort_result r = point ? TU(packed_query_point)(f->t, point, on_id, &got)
	                     : TU(packed_query_box)(f->t, q, on_id, &got);
	ort_result stopped = point ? TU(packed_query_point)(f->t, point, first_id, &calls)
	                           : TU(packed_query_box)(f->t, q, first_id, &calls);
	expect_result(what, r, bad ? ORT_ERROR_INVALID_BOX : ORT_OK);
	expect_result(what, stopped, r);
	for (int i = 0; i < f->n && !bad; ++i)
		if (tu_overlap(&f->box[i], &q)) tu_push(&want, (uint64_t)i);
	expect_stopped(what, calls, want.n);
	tu_expect_same(&got, &want, what);
}

static void check_box_query(fuzz *f, box_t q)
{
	trace_box("query box", 0, &q);
	check_overlap_query(f, q, NULL);
}

static void check_point_query(fuzz *f, const float p[DIM])
{
	box_t q;
	for (int d = 0; d < DIM; ++d) q.min[d] = q.max[d] = p[d];
	check_overlap_query(f, q, p);
}

/// Exact: distance <= radius with both squared in double, as documented
/// (docs/QUERIES.md). (The sphere's pruning box once dropped items the double
/// rule accepts at 1e20: corpus/packed/sphere-rounding.)
static void check_sphere_query(fuzz *f, const float c[DIM], float radius)
{
	tu_list got = {0};
	ort_result r = TU(packed_query_sphere)(f->t, c, radius, on_id, &got);
	if (!point_ok(c) || !isfinite(radius) || radius < 0.0f) {
		expect_result("query_sphere with a bad centre or radius", r, ORT_ERROR_INVALID_BOX);
		if (got.n) TU_FAIL("query_sphere with a bad centre or radius called back\n");
		free(got.v);
		return;
	}
	expect_result("query_sphere", r, ORT_OK);
	tu_sort(got.v, got.n, sizeof *got.v, tu_cmp_u64);
	size_t matched = 0;
	for (size_t i = 1; i < got.n; ++i)
		if (got.v[i] == got.v[i - 1]) TU_FAIL("query_sphere: id %u twice\n", (unsigned)got.v[i]);
	for (int i = 0; i < f->n; ++i) {
		double d2 = tu_dist2(c, &f->box[i]), r2 = (double)radius * radius;
		uint64_t key = (uint64_t)i;
		bool in = d2 <= r2, found = got.n && bsearch(&key, got.v, got.n, sizeof *got.v, tu_cmp_u64);
		matched += found;
		if (in != found)
			TU_FAIL("query_sphere: id %d %s: d2 %a, r2 %a (centre %a, radius %a)\n", i, found ? "found" : "missed", d2,
			        r2, (double)c[0], (double)radius);
	}
	if (matched != got.n) TU_FAIL("query_sphere: %zu results are no items\n", got.n - matched);
	int calls = 0;
	expect_result("query_sphere", TU(packed_query_sphere)(f->t, c, radius, first_id, &calls), ORT_OK);
	if (calls > 1 || (calls == 0 && got.n)) TU_FAIL("query_sphere: %d calls after the first returned false\n", calls);
	free(got.v);
}

/// A ray hit as one number: the id, then the bits of t (t >= 0, so the bits
/// order as the values do).
static uint64_t ray_key(uint32_t id, float t)
{
	uint32_t bits;
	memcpy(&bits, &t, sizeof bits);
	return (uint64_t)id << 32 | bits;
}

static float hit_t(uint64_t key)
{
	uint32_t bits = (uint32_t)key;
	float t;
	memcpy(&t, &bits, sizeof t);
	return t;
}

enum { RAY_ALL, RAY_ALL_MAX_T, RAY_CLIP, RAY_FILTER, RAY_STOP, RAY_MODES };

/// What a ray callback saw, and what it returns (by mode): INFINITY or max_t
/// (go on), t (clip), -1 for every third id and t for the rest (a filter), or
/// 0 (stop).
typedef struct ray_log {
	tu_list keys;
	int mode;
	float max_t;
} ray_log;

static bool ray_filtered(uint32_t id) { return id % 3 == 0; }

static float on_ray(void *ctx, uint32_t id, float t)
{
	ray_log *l = ctx;
	tu_push(&l->keys, ray_key(id, t));
	switch (l->mode) {
	case RAY_ALL: return INFINITY;
	case RAY_ALL_MAX_T: return l->max_t > 0.0f ? l->max_t : INFINITY; // at max_t 0, 0 would stop
	case RAY_CLIP: return t;
	case RAY_FILTER: return ray_filtered(id) ? -1.0f : t;
	default: return 0.0f;
	}
}

/// The nearest of the hits in want (sorted keys), lower id on a tie;
/// filtered: only ids the filter keeps. Returns the key, or UINT64_MAX.
static uint64_t ray_best(const tu_list *hits, bool filtered)
{
	uint64_t best = UINT64_MAX;
	for (size_t i = 0; i < hits->n; ++i) {
		uint64_t k = hits->v[i];
		if (filtered && ray_filtered((uint32_t)(k >> 32))) continue;
		if (best == UINT64_MAX || hit_t(k) < hit_t(best)) best = k; // ids ascend: ties keep the lower
	}
	return best;
}

static void check_ray_mode(fuzz *f, const float o[DIM], const float dir[DIM], float max_t, int mode, tu_list *want)
{
	ray_log l = {{0}, mode, max_t};
	expect_result("ray_cast", TU(packed_ray_cast)(f->t, o, dir, max_t, on_ray, &l), ORT_OK);
	if (mode == RAY_ALL || mode == RAY_ALL_MAX_T) {
		tu_list copy = {0};
		for (size_t i = 0; i < want->n; ++i) tu_push(&copy, want->v[i]);
		tu_expect_same(&l.keys, &copy, mode == RAY_ALL ? "ray_cast (all hits, t)" : "ray_cast (returning max_t)");
		return;
	}
	// Clipped, filtered, stopped: every hit reported is a true hit with its t,
	// once; the nearest (kept) one is among them.
	tu_sort(l.keys.v, l.keys.n, sizeof *l.keys.v, tu_cmp_u64);
	for (size_t i = 0; i < l.keys.n; ++i) {
		uint64_t k = l.keys.v[i];
		if (i > 0 && k >> 32 == l.keys.v[i - 1] >> 32)
			TU_FAIL("ray_cast (mode %d): id %u twice\n", mode, (unsigned)(k >> 32));
		if (!want->n || !bsearch(&k, want->v, want->n, sizeof *want->v, tu_cmp_u64))
			TU_FAIL("ray_cast (mode %d): id %u at t %a, not a hit there by brute force\n", mode, (unsigned)(k >> 32),
			        (double)hit_t(k));
	}
	if (mode == RAY_STOP) {
		expect_stopped("ray_cast (returning 0)", (int)l.keys.n, want->n);
	} else {
		bool filtered = mode == RAY_FILTER;
		uint64_t got = ray_best(&l.keys, filtered), best = ray_best(want, filtered);
		if ((got == UINT64_MAX) != (best == UINT64_MAX) || (best != UINT64_MAX && hit_t(got) != hit_t(best)))
			TU_FAIL("ray_cast (%s): nearest t %a, brute force %a\n", filtered ? "filtered" : "clipped",
			        got == UINT64_MAX ? -1.0 : (double)hit_t(got), best == UINT64_MAX ? -1.0 : (double)hit_t(best));
	}
	free(l.keys.v);
}

/// ray_cast in every callback mode and ray_first, against tu_ray_hit: the
/// slab formula of src/geom.h's ray_slab, per item, with the caller's max_t.
static void check_ray(fuzz *f, const float o[DIM], const float dir[DIM], float max_t)
{
	if (tracing) {
		fprintf(stderr, "ray");
		for (int d = 0; d < DIM; ++d) fprintf(stderr, " %a+%a", (double)o[d], (double)dir[d]);
		fprintf(stderr, " t <= %a\n", (double)max_t);
	}
	uint32_t id = 0;
	float t = 0;
	if (!point_ok(o) || !point_ok(dir) || isnan(max_t) || max_t < 0.0f) {
		ray_log l = {{0}, RAY_ALL, max_t};
		expect_result("ray_cast with a bad ray", TU(packed_ray_cast)(f->t, o, dir, max_t, on_ray, &l),
		              ORT_ERROR_INVALID_BOX);
		if (l.keys.n || TU(packed_ray_first)(f->t, o, dir, max_t, &id, &t)) TU_FAIL("a bad ray hit\n");
		free(l.keys.v);
		return;
	}
	tu_list want = {0};
	for (int i = 0; i < f->n; ++i) {
		float te;
		if (tu_ray_hit(o, dir, max_t, &f->box[i], &te)) tu_push(&want, ray_key((uint32_t)i, te));
	}
	for (int mode = 0; mode < RAY_MODES; ++mode) check_ray_mode(f, o, dir, max_t, mode, &want);
	uint64_t best = ray_best(&want, false);
	bool hit = TU(packed_ray_first)(f->t, o, dir, max_t, &id, &t);
	if (hit != (best != UINT64_MAX) || (hit && (id != best >> 32 || t != hit_t(best))))
		TU_FAIL("ray_first: %s id %u at %a, brute force %s id %u at %a\n", hit ? "hit" : "no hit", (unsigned)id,
		        (double)t, best != UINT64_MAX ? "hit" : "no hit", (unsigned)(best >> 32), (double)hit_t(best));
	free(want.v);
}

/// Nearest k by squared distance in double, then id; the distance reported
/// is (float)sqrt(d2). With armed, allocations may be refused (k > 64).
static void check_nearest(fuzz *f, const float p[DIM], int k, float max_distance)
{
	if (tracing) fprintf(stderr, "nearest k %d within %a\n", k, (double)max_distance);
	ort_id_neighbor *out = malloc(sizeof *out * (size_t)(k + 1));
	int found = -1;
	long allocs = f->alloc.calls, refused = f->alloc.refused;
	size_t live = f->alloc.live;
	ort_result r = TU(packed_nearest)(f->t, p, k, max_distance, out, &found);
	if (!point_ok(p) || isnan(max_distance) || max_distance < 0.0f) {
		expect_result("nearest with a bad point or distance", r, ORT_ERROR_INVALID_BOX);
		if (found != 0) TU_FAIL("nearest with a bad point or distance found %d\n", found);
		free(out);
		return;
	}
	if (f->alloc.live != live) TU_FAIL("nearest kept memory\n");
	if (k <= 64 && f->alloc.calls != allocs) TU_FAIL("nearest allocated with k %d\n", k);
	if (f->alloc.refused != refused) {
		expect_result("nearest refused memory", r, ORT_ERROR_OUT_OF_MEMORY);
		if (found != 0) TU_FAIL("nearest out of memory found %d\n", found);
		free(out);
		return;
	}
	expect_result("nearest", r, ORT_OK);
	tu_near *all = malloc(sizeof *all * (size_t)(f->n + 1));
	int n = 0;
	for (int i = 0; i < f->n; ++i) {
		double d2 = tu_dist2(p, &f->box[i]);
		if (isinf(max_distance) || d2 <= (double)max_distance * max_distance) all[n++] = (tu_near){d2, (uint32_t)i};
	}
	tu_sort(all, (size_t)n, sizeof *all, tu_cmp_near);
	int want = n < k ? n : k;
	if (found != want) TU_FAIL("nearest: %d found, brute force %d (k %d)\n", found, want, k);
	for (int i = 0; i < found; ++i)
		if (out[i].id != all[i].id || out[i].distance != (float)sqrt(all[i].d2))
			TU_FAIL("nearest: #%d is id %u at %a, brute force id %u at %a\n", i, (unsigned)out[i].id,
			        (double)out[i].distance, (unsigned)all[i].id, sqrt(all[i].d2));
	free(all);
	free(out);
}

/// nearest_batch of count points against nearest one point at a time: row i
/// must be nearest's k + 1 nearest of point i without exclude[i] (when it is
/// among them), cut to k, the row's rest {UINT32_MAX, INFINITY}. With armed,
/// the batch's one allocation may be refused. A bad point or distance is
/// refused, writing nothing.
static void check_nearest_batch(fuzz *f, const float (*pts)[DIM], int count, int k, float max_distance,
                                const uint32_t *exclude)
{
	if (tracing) fprintf(stderr, "nearest_batch of %d, k %d within %a\n", count, k, (double)max_distance);
	size_t cells = (size_t)count * (size_t)k;
	ort_id_neighbor *out = malloc(sizeof *out * (cells + 1)), *one = malloc(sizeof *one * (size_t)(k + 2));
	int *found = malloc(sizeof *found * (size_t)(count + 1));
	for (size_t j = 0; j < cells; ++j) out[j] = (ort_id_neighbor){7, -1.0f}; // never an answer
	for (int i = 0; i < count; ++i) found[i] = -1;
	long refused = f->alloc.refused;
	size_t live = f->alloc.live;
	ort_result r = TU(packed_nearest_batch)(f->t, pts, count, k, max_distance, exclude, out, found);
	tu_alloc_disarm(&f->alloc);
	if (f->alloc.live != live) TU_FAIL("nearest_batch kept memory\n");
	bool bad = isnan(max_distance) || max_distance < 0.0f;
	for (int i = 0; i < count; ++i) bad = bad || !point_ok(pts[i]);
	if (bad || f->alloc.refused != refused) {
		expect_result(bad ? "nearest_batch with a bad point or distance" : "nearest_batch refused memory", r,
		              bad ? ORT_ERROR_INVALID_BOX : ORT_ERROR_OUT_OF_MEMORY);
		if (bad)
			for (size_t j = 0; j < cells; ++j)
				if (out[j].id != 7 || out[j].distance != -1.0f) TU_FAIL("nearest_batch refused, but wrote\n");
		goto done;
	}
	expect_result("nearest_batch", r, ORT_OK);
	for (int i = 0; i < count; ++i) {
		int got = -1;
		expect_result("nearest for nearest_batch", TU(packed_nearest)(f->t, pts[i], k + 1, max_distance, one, &got),
		              ORT_OK);
		uint32_t ex = exclude ? exclude[i] : UINT32_MAX;
		int w = 0;
		for (int j = 0; j < got && w < k; ++j)
			if (one[j].id != ex) one[w++] = one[j];
		if (found[i] != w) TU_FAIL("nearest_batch: point %d found %d, nearest %d (k %d)\n", i, found[i], w, k);
		const ort_id_neighbor *row = out + (size_t)i * (size_t)k;
		for (int j = 0; j < k; ++j) {
			ort_id_neighbor want = j < w ? one[j] : (ort_id_neighbor){UINT32_MAX, INFINITY};
			if (row[j].id != want.id || !(row[j].distance == want.distance))
				TU_FAIL("nearest_batch: point %d #%d is id %u at %a, nearest id %u at %a\n", i, j,
				        (unsigned)row[j].id, (double)row[j].distance, (unsigned)want.id, (double)want.distance);
		}
	}
done:
	free(out);
	free(one);
	free(found);
}

/// Points around the scene for nearest_batch: items' centres and corners
/// (duplicates among them when items coincide) and the given point p; each
/// excluding its own item, none, or an id past the items, by the step.
static void check_scene_batch(fuzz *f, const float p[DIM], int k, float max_distance)
{
	int s = f->step, n = f->n, count = n ? 1 + (s * 5 + 3) % (n < 40 ? n : 40) : 3;
	float(*pts)[DIM] = malloc(sizeof *pts * (size_t)(count + 1));
	uint32_t *ex = malloc(sizeof *ex * (size_t)(count + 1));
	for (int i = 0; i < count; ++i) {
		int at = n ? (s * 11 + i * 7) % n : 0;
		for (int d = 0; d < DIM; ++d)
			pts[i][d] = !n || i == 0 ? p[d]
			            : i % 3 == 1 ? f->box[at].min[d] + (f->box[at].max[d] - f->box[at].min[d]) * 0.5f
			            : (i >> d) & 1 ? f->box[at].max[d]
			                           : f->box[at].min[d];
		ex[i] = (s + i) % 4 == 0 ? UINT32_MAX : (s + i) % 4 == 1 ? (uint32_t)n + (uint32_t)i : (uint32_t)at;
	}
	check_nearest_batch(f, (const float(*)[DIM])pts, count, k, max_distance, s & 32 ? NULL : ex);
	free(pts);
	free(ex);
}

/// Every query around operands the scene itself gives (so they touch items
/// exactly, at any scale), chosen by the step number.
static void check_scene_queries(fuzz *f)
{
	int s = f->step, n = f->n;
	float o[DIM] = {0}, dir[DIM] = {0};
	if (n == 0) {
		box_t all;
		for (int d = 0; d < DIM; ++d) {
			all.min[d] = -INFINITY;
			all.max[d] = INFINITY;
		}
		dir[0] = 1;
		check_box_query(f, all);
		check_point_query(f, o);
		check_sphere_query(f, o, FLT_MAX);
		check_ray(f, o, dir, INFINITY);
		check_nearest(f, o, s % 70 + 1, INFINITY);
		check_scene_batch(f, o, s % 70 + 1, INFINITY);
		return;
	}
	const box_t *a = &f->box[(s * 7) % n], *b = &f->box[(s * 13 + 1) % n];
	float corner[DIM], other[DIM], centre[DIM], axis[DIM] = {0};
	for (int d = 0; d < DIM; ++d) {
		corner[d] = s & 1 ? a->max[d] : a->min[d];
		other[d] = s & 2 ? b->min[d] : b->max[d];
		centre[d] = b->min[d] + (b->max[d] - b->min[d]) * 0.5f;
		dir[d] = centre[d] - corner[d];
	}
	axis[s % DIM] = s & 4 ? -1.0f : 1.0f;
	check_box_query(f, *a); // touches its neighbours exactly
	check_point_query(f, corner);
	check_point_query(f, other);
	float reach = (float)sqrt(tu_dist2(corner, b)); // b rounds onto the surface
	check_sphere_query(f, corner, reach);
	check_ray(f, corner, dir, s & 8 ? INFINITY : 1.0f); // t = 1 is b's centre
	check_ray(f, other, axis, INFINITY);                // along b's face
	check_nearest(f, centre, s % 70 + 1, s & 16 ? INFINITY : reach);
	check_scene_batch(f, centre, s % 9 + 1 + (s & 64 ? 64 : 0), s & 16 ? INFINITY : reach);
}

/// The tree agrees with the model on everything, after every step. The pairs
/// (most of a step's time) only after a step that built or tried to: a query
/// leaves the tree as find_pairs last saw it.
static void check(fuzz *f, bool built)
{
	context(f);
	check_shape(f);
	if (built) check_pairs(f);
	check_scene_queries(f);
}

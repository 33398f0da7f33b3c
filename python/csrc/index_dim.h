// index_dim.h: the extension's work for one dimension, written once and
// included twice by ext.c (XD 2, then XD 3), as the library writes its own
// modules once for both. Nothing here touches Python objects: these functions
// run with the GIL released, on plain arrays, and report failure by result.
//
// The packed tree stores float boxes. float64 input is rounded outward (min
// down, max up) into the tree, so the float tree finds a superset of the exact
// answer; every box test is then redone in double against the caller's
// coordinates, so answers are exact for float32 and float64 alike.
// Distances are computed in double by one rule, the one numpy's brute force
// uses too: gap[d] = max(lo - p, p - hi, 0), dist = sqrt(sum gap[d]^2).

#define XBOX ORT_X(box)
#define XN(name) XCAT(name, XD)

/// One tree with the caller's boxes kept beside it (float or double, by input
/// dtype) for the exact tests. The copy is kept in the order the tree walks
/// its items, so the boxes a query tests lie near each other in memory:
/// row i is at boxes[rank[i]].
typedef struct XN(core) {
	ORT_X(packed) * tree;
	int n;
	int is64;
	void *boxes;   // n rows of 2*XD floats or doubles, in tree order
	uint32_t *rank; // input row -> position in boxes
} XN(core);

/// Row i's box in double.
static inline void XN(data_box)(const XN(core) * c, uint32_t i, double out[2 * XD])
{
	size_t at = (size_t)c->rank[i] * 2 * XD;
	if (c->is64) {
		const double *b = (const double *)c->boxes + at;
		for (int d = 0; d < 2 * XD; ++d) out[d] = b[d];
	} else {
		const float *b = (const float *)c->boxes + at;
		for (int d = 0; d < 2 * XD; ++d) out[d] = b[d];
	}
}

/// Row i of an input array as a float box holding it (outward rounding) and,
/// when q64, the exact double box in qd.
static inline XBOX XN(row_box)(const void *data, int is64, size_t i, double qd[2 * XD])
{
	XBOX b;
	if (is64) {
		const double *r = (const double *)data + i * 2 * XD;
		for (int d = 0; d < XD; ++d) {
			b.min[d] = round_down(r[d]);
			b.max[d] = round_up(r[XD + d]);
		}
		if (qd)
			for (int d = 0; d < 2 * XD; ++d) qd[d] = r[d];
	} else {
		memcpy(&b, (const float *)data + i * 2 * XD, sizeof b);
		if (qd)
			for (int d = 0; d < XD; ++d) {
				qd[d] = b.min[d];
				qd[XD + d] = b.max[d];
			}
	}
	return b;
}

/// The first bad row of an (n, 2*XD) array, or -1; *why says what is wrong.
static long XN(check_boxes)(const void *data, int is64, size_t n, const char **why, int *axis)
{
	for (size_t i = 0; i < n; ++i) {
		for (int d = 0; d < XD; ++d) {
			double lo, hi;
			if (is64) {
				lo = ((const double *)data)[i * 2 * XD + d];
				hi = ((const double *)data)[i * 2 * XD + XD + d];
			} else {
				lo = ((const float *)data)[i * 2 * XD + d];
				hi = ((const float *)data)[i * 2 * XD + XD + d];
			}
			*axis = d;
			if (!isfinite(lo) || !isfinite(hi)) {
				*why = "NaN or infinite coordinate";
				return (long)i;
			}
			if (lo > hi) {
				*why = "min > max";
				return (long)i;
			}
			if (fabs(lo) > COORD_LIMIT || fabs(hi) > COORD_LIMIT) {
				*why = "coordinate beyond 1e30";
				return (long)i;
			}
		}
	}
	return -1;
}

/// The first bad row of an (n, XD) array of points (or directions), or -1.
static long XN(check_points)(const void *data, int is64, size_t n, int *axis)
{
	for (size_t i = 0; i < n * XD; ++i) {
		double v = is64 ? ((const double *)data)[i] : ((const float *)data)[i];
		if (!isfinite(v) || fabs(v) > COORD_LIMIT) {
			*axis = (int)(i % XD);
			return (long)(i / XD);
		}
	}
	return -1;
}

static bool XN(on_walk)(void *ctx, uint32_t id) { return u32vec_push(ctx, id); }

/// Build: the boxes were checked. Keeps a copy of them, in tree order.
static ort_result XN(core_build)(XN(core) * c, const void *data, int is64, int n)
{
	size_t row = (is64 ? sizeof(double) : sizeof(float)) * 2 * XD;
	c->n = n;
	c->is64 = is64;
	c->boxes = malloc(n ? (size_t)n * row : 1);
	c->rank = malloc(n ? (size_t)n * sizeof *c->rank : 1);
	if (!c->boxes || !c->rank) return ORT_ERROR_OUT_OF_MEMORY;
	ORT_X(packed_def) def = ORT_X(packed_default_def)();
	ort_result r = ORT_X(packed_create)(&def, &c->tree);
	if (r != ORT_OK) return r;
	if (is64) {
		XBOX *f = malloc(n ? (size_t)n * sizeof *f : 1);
		if (!f) return ORT_ERROR_OUT_OF_MEMORY;
		for (int i = 0; i < n; ++i) f[i] = XN(row_box)(data, 1, (size_t)i, NULL);
		r = ORT_X(packed_build)(c->tree, f, n);
		free(f);
	} else {
		r = ORT_X(packed_build)(c->tree, (const XBOX *)data, n);
	}
	if (r != ORT_OK || n == 0) return r;
	// The tree's walk order: every box meets the bounds of them all.
	u32vec order = {0};
	ORT_X(packed_query_box)(c->tree, ORT_X(packed_bounds)(c->tree), XN(on_walk), &order);
	if (order.failed || order.n != (size_t)n) {
		free(order.p);
		return order.failed ? ORT_ERROR_OUT_OF_MEMORY : ORT_ERROR_CORRUPT;
	}
	for (int k = 0; k < n; ++k) {
		c->rank[order.p[k]] = (uint32_t)k;
		memcpy((char *)c->boxes + (size_t)k * row, (const char *)data + (size_t)order.p[k] * row, row);
	}
	free(order.p);
	return ORT_OK;
}

static void XN(core_free)(XN(core) * c)
{
	ORT_X(packed_destroy)(c->tree);
	free(c->boxes);
	free(c->rank);
	c->tree = NULL;
	c->boxes = NULL;
	c->rank = NULL;
}

// ---- box queries ----------------------------------------------------------------

typedef struct XN(hit_ctx) {
	const XN(core) * c;
	const double *qd; // the exact query box, or NULL when the float test is exact
	uint32_t after;   // keep only ids > after (UINT32_MAX: keep all)
	u32vec *out;
} XN(hit_ctx);

static inline bool XN(overlap_d)(const double a[2 * XD], const double b[2 * XD])
{
	for (int d = 0; d < XD; ++d)
		if (a[d] > b[XD + d] || b[d] > a[XD + d]) return false;
	return true;
}

static bool XN(on_hit)(void *ctx, uint32_t id)
{
	XN(hit_ctx) *h = ctx;
	if (h->after != UINT32_MAX && id <= h->after) return true;
	if (h->qd) {
		double b[2 * XD];
		XN(data_box)(h->c, id, b);
		if (!XN(overlap_d)(b, h->qd)) return true;
	}
	return u32vec_push(h->out, id);
}

/// on_hit for the common batch: float64 boxes and queries, every id.
static bool XN(on_hit64)(void *ctx, uint32_t id)
{
	XN(hit_ctx) *h = ctx;
	const double *b = (const double *)h->c->boxes + (size_t)h->c->rank[id] * 2 * XD, *q = h->qd;
	for (int d = 0; d < XD; ++d)
		if (b[d] > q[XD + d] || q[d] > b[XD + d]) return true;
	return u32vec_push(h->out, id);
}

/// on_hit when the float test is exact (float32 boxes and queries), every id.
static bool XN(on_hit_exact)(void *ctx, uint32_t id) { return u32vec_push(((XN(hit_ctx) *)ctx)->out, id); }

/// The query box fb (holding qd; qd NULL when fb is exact and so are the
/// stored boxes): its hits appended to out, sorted; only ids > after when
/// after != UINT32_MAX. False when out of memory.
static bool XN(query_one)(const XN(core) * c, XBOX fb, const double *qd, uint32_t after, u32vec *out)
{
	size_t start = out->n;
	XN(hit_ctx) h = {c, qd, after, out};
	ort_id_fn *fn = after != UINT32_MAX ? XN(on_hit) : !qd ? XN(on_hit_exact) : c->is64 ? XN(on_hit64) : XN(on_hit);
	ORT_X(packed_query_box)(c->tree, fb, fn, &h);
	if (out->failed) return false;
	sort_u32(out->p + start, out->n - start);
	return true;
}

/// Row q of queries (float or double), as query_one.
static bool XN(query_row)(const XN(core) * c, const void *queries, int q64, size_t q, uint32_t after, u32vec *out)
{
	double qd[2 * XD];
	XBOX fb = XN(row_box)(queries, q64, q, qd);
	return XN(query_one)(c, fb, (q64 || c->is64) ? qd : NULL, after, out);
}

/// The stored row i against the tree: its partners j > i, sorted.
static bool XN(self_row)(const XN(core) * c, uint32_t i, u32vec *out)
{
	double qd[2 * XD];
	XN(data_box)(c, i, qd);
	XBOX fb = XN(row_box)(qd, 1, 0, NULL);
	return XN(query_one)(c, fb, c->is64 ? qd : NULL, i, out);
}

/// Queries perm[lo..hi): their hits appended to out; for each such q,
/// counts[q] hits start at out->p[pos[q]].
static bool XN(query_range)(const XN(core) * c, const void *queries, int q64, const uint32_t *perm, size_t lo,
                            size_t hi, u32vec *out, int64_t *counts, size_t *pos)
{
	// Morton order reads the rows far apart: ask for row t + AHEAD while row t runs.
	enum { AHEAD = 8 };
	size_t row = (q64 ? sizeof(double) : sizeof(float)) * 2 * XD;
	for (size_t t = lo; t < hi; ++t) {
		size_t q = perm[t];
		if (t + AHEAD < hi) {
			size_t ahead = perm[t + AHEAD];
			__builtin_prefetch((const char *)queries + ahead * row);
			__builtin_prefetch(&pos[ahead], 1);
			__builtin_prefetch(&counts[ahead], 1);
		}
		pos[q] = out->n;
		if (!XN(query_row)(c, queries, q64, q, UINT32_MAX, out)) return false;
		counts[q] = (int64_t)(out->n - pos[q]);
	}
	return true;
}

/// Where rows lie in space: perm[0..m) gets the rows sorted by the Morton key
/// of their centres (cols = XD: points; 2 * XD: boxes) on morton.h's grid over
/// the tree's bounds, so that consecutive queries walk the same part of the
/// tree. Points are keyed as float, the way the library's batched nearest keys
/// them, so it finds each chunk of them already in its order and does not sort
/// it again. Only the order of work changes, never a result. False when out of
/// memory.
static bool XN(morton_perm)(const XN(core) * c, const void *data, int is64, int cols, size_t m, uint32_t *perm)
{
	XBOX bb = ORT_X(packed_bounds)(c->tree);
	morton_grid g = morton_grid_make(bb.min, bb.max, XD);
	uint64_t *k = malloc((m ? m : 1) * sizeof *k), *tmp = malloc((m ? m : 1) * sizeof *tmp);
	if (!k || !tmp) {
		free(k);
		free(tmp);
		return false;
	}
	for (size_t i = 0; i < m; ++i) {
		double x[XD];
		for (int d = 0; d < XD; ++d) {
			size_t a = i * (size_t)cols + (size_t)d, b = a + (cols == XD ? 0 : XD);
			if (cols == XD)
				x[d] = is64 ? (float)((const double *)data)[a] : ((const float *)data)[a];
			else
				x[d] = is64 ? (((const double *)data)[a] + ((const double *)data)[b]) * 0.5
				            : ((double)((const float *)data)[a] + ((const float *)data)[b]) * 0.5;
		}
		k[i] = (uint64_t)morton_point_key(&g, x) << 32 | (uint64_t)i;
	}
	uint64_t *sorted = k, *other = tmp;
	morton_sort(&sorted, &other, m);
	for (size_t i = 0; i < m; ++i) perm[i] = (uint32_t)sorted[i];
	free(k);
	free(tmp);
	return true;
}

// ---- all pairs in one pass (find_pairs), ordered by a counting sort ----------------

typedef struct XN(pair_ctx) {
	const XN(core) * c;
	u32vec *out;
} XN(pair_ctx);

static bool XN(on_pair)(void *ctx, uint32_t a, uint32_t b)
{
	XN(pair_ctx) *p = ctx;
	if (p->c->is64) {
		double x[2 * XD], y[2 * XD];
		XN(data_box)(p->c, a, x);
		XN(data_box)(p->c, b, y);
		if (!XN(overlap_d)(x, y)) return true;
	}
	if (a > b) {
		uint32_t t = a;
		a = b;
		b = t;
	}
	return u32vec_push(p->out, a) && u32vec_push(p->out, b);
}

/// Every pair once, into out as (i, j) with i < j (unordered).
static bool XN(find_pairs)(const XN(core) * c, u32vec *out)
{
	XN(pair_ctx) p = {c, out};
	ORT_X(packed_find_pairs)(c->tree, XN(on_pair), &p);
	return !out->failed;
}

// ---- k nearest ----------------------------------------------------------------------

static inline double XN(dist_d)(const double b[2 * XD], const double p[XD])
{
	double s = 0.0;
	for (int d = 0; d < XD; ++d) {
		double g = b[d] - p[d];
		double h = p[d] - b[XD + d];
		double v = g > h ? g : h;
		if (v < 0.0) v = 0.0;
		s += v * v;
	}
	return sqrt(s);
}

typedef struct XN(knn_job) {
	const XN(core) * c;
	const void *points;
	int p64;
	int k;
	double max_distance;
	const int64_t *exclude; // NULL or one index per point (-1: none)
	double *dist;           // (m, k)
	int64_t *idx;           // (m, k)
	double coord_max;       // largest |coordinate| of the stored boxes
} XN(knn_job);

/// Row q of the points in double and in float (rounded to nearest), and the
/// largest |coordinate| of it and the stored boxes.
static double XN(knn_point)(const XN(knn_job) * j, size_t q, double pd[XD], float pf[XD])
{
	double pmax = j->coord_max;
	for (int d = 0; d < XD; ++d) {
		pd[d] = j->p64 ? ((const double *)j->points)[q * XD + d] : ((const float *)j->points)[q * XD + d];
		pf[d] = (float)pd[d];
		if (fabs(pd[d]) > pmax) pmax = fabs(pd[d]);
	}
	return pmax;
}

/// How far a float distance of the tree may be from the exact one: the
/// outward rounding of boxes and the point (an ulp of the largest coordinate
/// on each axis; none when both are float32), and the float the library
/// returns (KNN_REL relative). Generous, so never too small.
#define KNN_REL 0x1p-21
static double XN(knn_slack)(const XN(knn_job) * j, double pmax)
{
	return (!j->c->is64 && !j->p64) ? 0.0 : pmax * 0x1p-20 + 0x1p-120;
}

/// The float max_distance to ask the tree for: the caller's, widened by the slack.
static float XN(knn_fmax)(const XN(knn_job) * j, double slack)
{
	return isfinite(j->max_distance) ? round_up(j->max_distance * (1.0 + KNN_REL) + 2 * slack) : INFINITY;
}

/// Whether the tree's candidates buf[0..found) (want asked for, the excluded
/// item `skip` among them or not) surely hold the exact k nearest: fewer came
/// than asked (everything within the limit came), or all items came, or the
/// last is farther than the k-th by more than twice the slack.
static bool XN(knn_complete)(const XN(core) * c, const ort_id_neighbor *buf, int found, int want, int k,
                             int64_t skip, double slack)
{
	if (found < want || want >= c->n) return true;
	int seen = 0;
	double dk = INFINITY;
	for (int i = 0; i < found; ++i) {
		if ((int64_t)buf[i].id == skip) continue;
		if (++seen == k) {
			dk = buf[i].distance;
			break;
		}
	}
	return buf[found - 1].distance > dk * (1.0 + 2 * KNN_REL) + 2 * slack;
}

/// Rank the candidates buf[0..found) by exact distance (then index) into row
/// q of dist/idx: the excluded item and those past max_distance left out,
/// missing ones as inf / -1. cand is scratch of at least found entries.
static void XN(knn_write)(const XN(knn_job) * j, size_t q, const double pd[XD], const ort_id_neighbor *buf,
                          int found, int64_t skip, dpair *cand)
{
	int nc = 0, k = j->k;
	for (int i = 0; i < found; ++i) {
		uint32_t id = buf[i].id;
		if ((int64_t)id == skip) continue;
		double b[2 * XD];
		XN(data_box)(j->c, id, b);
		double dd = XN(dist_d)(b, pd);
		if (!(dd <= j->max_distance)) continue;
		cand[nc++] = (dpair){dd, id};
	}
	sort_dpair(cand, (size_t)nc);
	double *drow = j->dist + q * (size_t)k;
	int64_t *irow = j->idx + q * (size_t)k;
	for (int i = 0; i < k; ++i) {
		drow[i] = i < nc ? cand[i].d : INFINITY;
		irow[i] = i < nc ? (int64_t)cand[i].id : -1;
	}
}

/// Point q's k nearest into row q of dist/idx, on its own. The float tree
/// ranks by the stored (rounded) boxes; candidates are taken wide enough that
/// the exact double ranking is found among them, then ranked exactly.
/// buf and cand are the caller's scratch, grown here.
static bool XN(knn_row)(const XN(knn_job) * j, size_t q, ort_id_neighbor **buf, int *cap, dpair **cand, int *ccap)
{
	const XN(core) *c = j->c;
	double pd[XD];
	float pf[XD];
	double slack = XN(knn_slack)(j, XN(knn_point)(j, q, pd, pf));
	int64_t skip = j->exclude ? j->exclude[q] : -1;
	float fmax = XN(knn_fmax)(j, slack);
	int want = j->k + (skip >= 0) + 1;
	if (want > c->n) want = c->n;
	int found = 0;
	for (;;) {
		if (want > *cap) {
			free(*buf);
			*cap = want * 2;
			*buf = malloc((size_t)*cap * sizeof **buf);
			if (!*buf) return false;
		}
		if (want == 0) break;
		if (ORT_X(packed_nearest)(c->tree, pf, want, fmax, *buf, &found) != ORT_OK) return false;
		if (XN(knn_complete)(c, *buf, found, want, j->k, skip, slack)) break;
		want = want * 2 > c->n ? c->n : want * 2;
	}
	if (found > *ccap) {
		free(*cand);
		*ccap = found * 2;
		*cand = malloc((size_t)*ccap * sizeof **cand);
		if (!*cand) return false;
	}
	XN(knn_write)(j, q, pd, *buf, found, skip, *cand);
	return true;
}

/// Points handed to the library's batched nearest at once: their scratch
/// stays in cache, and each batch's first search (no bound yet) is one in many.
#define KNN_CHUNK 2048

/// Points perm[lo..hi) (in spatial order): the library's batched nearest
/// gives k + 1 candidates for each (it visits them in that order, each search
/// bounded by the one before, and leaves the excluded item out), which are
/// ranked exactly; a point whose candidates may not hold the exact answer (a
/// near tie within the rounding) is searched again on its own.
static bool XN(knn_range)(const XN(knn_job) * j, const uint32_t *perm, size_t lo, size_t hi)
{
	const XN(core) *c = j->c;
	int want = j->k + 1 > c->n ? c->n : j->k + 1;
	size_t chunk = hi - lo < KNN_CHUNK ? hi - lo : KNN_CHUNK;
	float(*pf)[XD] = malloc((chunk ? chunk : 1) * sizeof *pf);
	double(*pd)[XD] = malloc((chunk ? chunk : 1) * sizeof *pd), *pm = malloc((chunk ? chunk : 1) * sizeof *pm);
	uint32_t *ex = malloc((chunk ? chunk : 1) * sizeof *ex);
	int *found = malloc((chunk ? chunk : 1) * sizeof *found);
	ort_id_neighbor *out = malloc((chunk ? chunk : 1) * (size_t)(want ? want : 1) * sizeof *out);
	dpair *cand = malloc((size_t)(want ? want : 1) * sizeof *cand);
	ort_id_neighbor *buf = NULL;
	dpair *rcand = NULL;
	int cap = 0, ccap = 0;
	bool ok = pf && pd && pm && ex && found && out && cand;
	for (size_t at = lo; ok && at < hi; at += chunk) {
		size_t n = hi - at < chunk ? hi - at : chunk;
		// The chunk's largest coordinate (of the boxes and the points): every
		// point's slack is at most the one from it, so the float limit holds
		// every candidate of each.
		double pmax = j->coord_max;
		for (size_t t = 0; t < n; ++t) {
			size_t q = perm[at + t];
			pm[t] = XN(knn_point)(j, q, pd[t], pf[t]);
			if (pm[t] > pmax) pmax = pm[t];
			int64_t e = j->exclude ? j->exclude[q] : -1;
			ex[t] = e >= 0 && e < c->n ? (uint32_t)e : UINT32_MAX;
		}
		float fmax = XN(knn_fmax)(j, XN(knn_slack)(j, pmax));
		if (want > 0 && ORT_X(packed_nearest_batch)(c->tree, (const float(*)[XD])pf, (int)n, want, fmax,
		                                            j->exclude ? ex : NULL, out, found) != ORT_OK) {
			ok = false;
			break;
		}
		for (size_t t = 0; ok && t < n; ++t) {
			size_t q = perm[at + t];
			const ort_id_neighbor *row = out + t * (size_t)want;
			double slack = XN(knn_slack)(j, pm[t]);
			int nf = want > 0 ? found[t] : 0;
			// The excluded item is never among the candidates, so it is not
			// counted as one of all the items either.
			int avail = c->n - (ex[t] != UINT32_MAX);
			if (nf < want || nf >= avail || XN(knn_complete)(c, row, nf, want, j->k, -1, slack))
				XN(knn_write)(j, q, pd[t], row, nf, -1, cand);
			else
				ok = XN(knn_row)(j, q, &buf, &cap, &rcand, &ccap);
		}
	}
	free(pf);
	free(pd);
	free(pm);
	free(ex);
	free(found);
	free(out);
	free(cand);
	free(buf);
	free(rcand);
	return ok;
}

// ---- rays -------------------------------------------------------------------------

static float XN(on_ray)(void *ctx, uint32_t id, float t)
{
	return thitvec_push(ctx, (thit){t, id}) ? INFINITY : 0.0f;
}

/// Rays [lo, hi): every hit, sorted by t then id, appended; counts[r] set.
static bool XN(ray_range)(const XN(core) * c, const void *origins, const void *dirs, int r64, const double *max_t,
                          size_t lo, size_t hi, thitvec *hits, int64_t *counts)
{
	for (size_t r = lo; r < hi; ++r) {
		float o[XD], dv[XD];
		for (int d = 0; d < XD; ++d) {
			o[d] = r64 ? (float)((const double *)origins)[r * XD + d] : ((const float *)origins)[r * XD + d];
			dv[d] = r64 ? (float)((const double *)dirs)[r * XD + d] : ((const float *)dirs)[r * XD + d];
		}
		size_t start = hits->n;
		float mt = isinf(max_t[r]) ? INFINITY : (float)max_t[r];
		ORT_X(packed_ray_cast)(c->tree, o, dv, mt, XN(on_ray), hits);
		if (hits->failed) return false;
		sort_thit(hits->p + start, hits->n - start);
		counts[r] = (int64_t)(hits->n - start);
	}
	return true;
}

#undef XBOX
#undef XN

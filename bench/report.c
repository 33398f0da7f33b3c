// report.c: orthant_bench's reporting — the Markdown tables, CSV, the SVG plot and
// the target report, from the results the runners of main.c recorded.
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

// ---------------------------------------------------------------- reporting

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double bench_median(double *v, int n)
{
	if (n == 0) return NAN;
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct bench_summary {
	double median, min, max, ratio;
} bench_summary;

static double result_median(const bench_result *r)
{
	double v[BENCH_MAX_ROUNDS];
	int m = 0;
	for (int i = 0; i < BENCH_MAX_ROUNDS; ++i)
		if (!isnan(r->t[i])) v[m++] = r->t[i];
	return bench_median(v, m);
}

// A result's time in one round; an implementation that skipped the round counts its median.
static double result_at(const bench_result *r, int round)
{
	return isnan(r->t[round]) ? result_median(r) : r->t[round];
}

static int case_rounds(const bench_case *c)
{
	int rounds = 0;
	for (int i = 0; i < g_nimpl; ++i)
		for (int r = 0; r < BENCH_MAX_ROUNDS; ++r)
			if (!isnan(c->res[i].t[r]) && r + 1 > rounds) rounds = r + 1;
	return rounds;
}

// The median over rounds of (best time of set A in the round) / (best time of set B in the round).
static double ratio_sets(const bench_case *c, int (*in_a)(int), int (*in_b)(int))
{
	int rounds = case_rounds(c);
	double v[BENCH_MAX_ROUNDS];
	int m = 0;
	for (int r = 0; r < rounds; ++r) {
		double a = INFINITY, b = INFINITY;
		for (int i = 0; i < g_nimpl; ++i) {
			if (!c->res[i].ran || c->res[i].status != RES_OK) continue;
			double t = result_at(&c->res[i], r);
			if (in_a(i) && t < a) a = t;
			if (in_b(i) && t < b) b = t;
		}
		if (isfinite(a) && isfinite(b) && b > 0) v[m++] = a / b;
	}
	return bench_median(v, m);
}

static int g_ratio_impl;
static int is_ratio_impl(int i) { return i == g_ratio_impl; }
static int is_any(int i)
{
	(void)i;
	return 1;
}
static int is_orthant(int i) { return !strcmp(g_impls[i].family, "orthant"); }
static int is_peer(int i) { return !strcmp(g_impls[i].family, "peer"); }
static int is_engine_peer(int i)
{
	return !strcmp(g_impls[i].name, "box2d3-broadphase") || !strcmp(g_impls[i].name, "jolt-broadphase");
}
static int is_orthant_broadphase(int i)
{
	size_t n = strlen(g_impls[i].name);
	return is_orthant(i) && n > 11 && !strcmp(g_impls[i].name + n - 11, "-broadphase");
}
static int is_orthant_default(int i) { return !strcmp(g_impls[i].name, "orthant-loose-rebuild"); }
static int is_own_baseline(int i) { return !strcmp(g_impls[i].name, "grid") || !strcmp(g_impls[i].name, "sweep"); }

static bench_summary summarize(const bench_case *c, int i)
{
	const bench_result *r = &c->res[i];
	bench_summary s = {result_median(r), INFINITY, -INFINITY, NAN};
	for (int k = 0; k < BENCH_MAX_ROUNDS; ++k)
		if (!isnan(r->t[k])) {
			if (r->t[k] < s.min) s.min = r->t[k];
			if (r->t[k] > s.max) s.max = r->t[k];
		}
	g_ratio_impl = i;
	s.ratio = ratio_sets(c, is_ratio_impl, is_any);
	return s;
}

static int order_cmp_case;
static int order_cmp(const void *a, const void *b)
{
	const bench_case *c = &g_cases[order_cmp_case];
	double x = result_median(&c->res[*(const int *)a]), y = result_median(&c->res[*(const int *)b]);
	return (x > y) - (x < y);
}

void print_tables(FILE *out)
{
	for (int ci = 0; ci < g_ncases; ++ci) {
		bench_case *c = &g_cases[ci];
		if (!c->used) continue;
		int idx[BENCH_MAX_IMPLS], m = 0;
		for (int i = 0; i < g_nimpl; ++i)
			if (c->res[i].ran) idx[m++] = i;
		order_cmp_case = ci;
		qsort(idx, (size_t)m, sizeof *idx, order_cmp);
		int frames = !strncmp(c->id, "S5", 2) || !strncmp(c->id, "S9", 2) ? 0 : 1;
		fprintf(out, "\n### %s — %s\n\n", c->id, c->desc);
		fprintf(out, "| implementation | %s median | min – max | ratio | B/obj | %s | rounds | check |\n",
		        frames ? "ms/frame" : "ms", c->unit_label);
		fprintf(out, "|---|---:|---:|---:|---:|---:|---:|---|\n");
		for (int k = 0; k < m; ++k) {
			int i = idx[k];
			bench_summary s = summarize(c, i);
			const bench_result *r = &c->res[i];
			char unit[32] = "";
			if (strcmp(c->unit_label, "-")) snprintf(unit, sizeof unit, "%.6g", r->per_unit);
			char bytes[32] = "";
			if (r->lib_bytes_per_obj > 0)
				snprintf(bytes, sizeof bytes, "%.0f (%.0f)", r->bytes_per_obj, r->lib_bytes_per_obj);
			else if (r->bytes_per_obj > 0)
				snprintf(bytes, sizeof bytes, "%.0f", r->bytes_per_obj);
			char ratio[32] = "-";
			if (!isnan(s.ratio)) snprintf(ratio, sizeof ratio, "%.2f", s.ratio);
			fprintf(out, "| %s | %.3f | %.3f – %.3f | %s | %s | %s | %d | %s |\n", g_impls[i].name, s.median * 1e3,
			        s.min * 1e3, s.max * 1e3, ratio, bytes, unit, r->ran, r->status == RES_OK ? "ok" : "MISMATCH");
		}
	}
}

void write_csv(const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "cannot write %s\n", path);
		return;
	}
	fprintf(f, "machine,mode,case,n,dim,impl,family,rounds,median_ms,min_ms,max_ms,ratio_to_fastest,bytes_per_obj,"
	           "lib_bytes_per_obj,per_unit,unit,status\n");
	for (int ci = 0; ci < g_ncases; ++ci) {
		bench_case *c = &g_cases[ci];
		for (int i = 0; i < g_nimpl; ++i) {
			const bench_result *r = &c->res[i];
			if (!r->ran) continue;
			bench_summary s = summarize(c, i);
			fprintf(f, "%s,%s,%s,%d,%d,%s,%s,%d,%.6f,%.6f,%.6f,%.4f,%.1f,%.1f,%.6g,%s,%s\n", g_opt.machine,
			        g_opt.quick ? "quick" : "full", c->id, c->n, c->dim, g_impls[i].name, g_impls[i].family, r->ran,
			        s.median * 1e3, s.min * 1e3, s.max * 1e3, s.ratio, r->bytes_per_obj, r->lib_bytes_per_obj, r->per_unit, c->unit_label,
			        r->status == RES_OK ? "ok" : "mismatch");
		}
	}
	fclose(f);
	fprintf(stderr, "wrote %s\n", path);
}

// Time per frame against N for S1-S3, log-log, one line per implementation.
void write_svg(const char *path)
{
	const char *ids[3] = {"S1", "S2", "S3"};
	const bench_case *cs[3] = {NULL, NULL, NULL};
	for (int ci = 0; ci < g_ncases; ++ci)
		for (int k = 0; k < 3; ++k)
			if (!strcmp(g_cases[ci].id, ids[k])) cs[k] = &g_cases[ci];
	double nmin = INFINITY, nmax = -INFINITY, tmin = INFINITY, tmax = -INFINITY;
	for (int k = 0; k < 3; ++k) {
		if (!cs[k]) continue;
		for (int i = 0; i < g_nimpl; ++i) {
			if (!cs[k]->res[i].ran) continue;
			double t = result_median(&cs[k]->res[i]) * 1e3;
			if (!(t > 0)) continue;
			nmin = fmin(nmin, cs[k]->n);
			nmax = fmax(nmax, cs[k]->n);
			tmin = fmin(tmin, t);
			tmax = fmax(tmax, t);
		}
	}
	if (!isfinite(nmin) || !isfinite(tmin)) return;
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "cannot write %s\n", path);
		return;
	}
	const double W = 900, H = 560, L = 70, R = 250, T = 40, B = 50;
	double lx0 = floor(log10(nmin)), lx1 = ceil(log10(nmax)), ly0 = floor(log10(tmin)), ly1 = ceil(log10(tmax));
	if (lx1 <= lx0) lx1 = lx0 + 1;
	if (ly1 <= ly0) ly1 = ly0 + 1;
#define SX(n) (L + (log10(n) - lx0) / (lx1 - lx0) * (W - L - R))
#define SY(t) (H - B - (log10(t) - ly0) / (ly1 - ly0) * (H - T - B))
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
	           "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, H);
	fprintf(f, "<text x=\"%.0f\" y=\"22\" font-size=\"15\">orthant_bench on %s: time per frame (move + update + all "
	           "pairs) vs N, S1-S3</text>\n", L, g_opt.machine);
	for (double e = lx0; e <= lx1 + 1e-9; e += 1) {
		double x = SX(pow(10, e));
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", x, T, x, H - B);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n", x, H - B + 18, pow(10, e));
	}
	for (double e = ly0; e <= ly1 + 1e-9; e += 1) {
		double y = SY(pow(10, e));
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", L, y, W - R, y);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g ms</text>\n", L - 6, y + 4, pow(10, e));
	}
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">N (boxes; S1 bouncing boxes, S2/S3 small boxes)</text>\n",
	        (L + W - R) / 2, H - 12);
	static const char *colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
	                               "#7f7f7f", "#bcbd22", "#17becf", "#000000", "#aa4499", "#44aa99", "#999933",
	                               "#882255", "#332288"};
	int line = 0;
	for (int i = 0; i < g_nimpl; ++i) {
		char pts[512] = "";
		size_t len = 0;
		int np = 0;
		for (int k = 0; k < 3; ++k) {
			if (!cs[k] || !cs[k]->res[i].ran) continue;
			double t = result_median(&cs[k]->res[i]) * 1e3;
			if (!(t > 0)) continue;
			len += (size_t)snprintf(pts + len, sizeof pts - len, "%.1f,%.1f ", SX(cs[k]->n), SY(t));
			np++;
		}
		if (!np) continue;
		const char *col = colors[line % 16];
		int dash = !strcmp(g_impls[i].family, "orthant") ? 0 : (!strcmp(g_impls[i].family, "peer") ? 1 : 2);
		fprintf(f, "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"%s/>\n", pts, col,
		        dash == 0 ? "2.5" : "1.5", dash == 1 ? " stroke-dasharray=\"6,3\"" : dash == 2 ? " stroke-dasharray=\"2,3\"" : "");
		double ly = T + 14 + line * 17;
		fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"%s/>\n",
		        W - R + 15, ly - 4, W - R + 40, ly - 4, col, dash == 1 ? " stroke-dasharray=\"6,3\"" : dash == 2 ? " stroke-dasharray=\"2,3\"" : "");
		fprintf(f, "<text x=\"%.0f\" y=\"%.1f\">%s</text>\n", W - R + 46, ly, g_impls[i].name);
		line++;
	}
#undef SX
#undef SY
	fprintf(f, "</svg>\n");
	fclose(f);
	fprintf(stderr, "wrote %s\n", path);
}

static const bench_case *case_by_id(const char *id)
{
	for (int i = 0; i < g_ncases; ++i)
		if (!strcmp(g_cases[i].id, id) && g_cases[i].used) return &g_cases[i];
	return NULL;
}

static double best_median(const bench_case *c, int (*in)(int), int *which)
{
	double b = INFINITY;
	for (int i = 0; i < g_nimpl; ++i)
		if (c->res[i].ran && c->res[i].status == RES_OK && in(i)) {
			double t = result_median(&c->res[i]);
			if (t < b) {
				b = t;
				if (which) *which = i;
			}
		}
	return b;
}

static void target_line(FILE *out, const char *what, double value, double limit, const char *detail)
{
	const char *verdict = isnan(value) ? "n/a" : (value <= limit ? "HELD" : "NOT HELD");
	fprintf(out, "| %s | %.3g | %.3g | %s | %s |\n", what, value, limit, verdict, detail);
}

void print_targets(FILE *out)
{
	fprintf(out, "\n### Targets (orthant's best placement; ratios are medians of same-round ratios)\n\n");
	fprintf(out, "| target | value | limit | verdict | detail |\n|---|---:|---:|---|---|\n");
	int have_orthant = 0;
	for (int i = 0; i < g_nimpl; ++i) have_orthant |= is_orthant(i);
	if (!have_orthant) {
		fprintf(out, "| all | | | n/a | orthant not linked in this build |\n");
		return;
	}
	char what[96], detail[160];
	for (int ci = 0; ci < g_ncases; ++ci) {
		const bench_case *c = &g_cases[ci];
		// Box2D's broadphase and Bullet find their pairs while building: S9 compares the sum.
		if (!c->used || !strcmp(c->id, "S9-build") || !strcmp(c->id, "S9-pairs")) continue;
		if (best_median(c, is_orthant, NULL) == INFINITY) continue;
		int wo = -1, wp = -1;
		best_median(c, is_orthant, &wo);
		if (best_median(c, is_peer, &wp) < INFINITY) {
			snprintf(what, sizeof what, "%.23s vs fastest peer", c->id);
			snprintf(detail, sizeof detail, "%s vs %s", g_impls[wo].name, g_impls[wp].name);
			target_line(out, what, ratio_sets(c, is_orthant, is_peer), 0.5, detail);
		}
	}
	// The engines' broad phases: orthant's incremental broad phase (S5: the
	// default tree's queries) against the faster of Box2D v3 and Jolt.
	for (int ci = 0; ci < g_ncases; ++ci) {
		const bench_case *c = &g_cases[ci];
		int s5 = !strcmp(c->id, "S5-box") || !strcmp(c->id, "S5-ray-all");
		if (!c->used || (!s5 && !strncmp(c->id, "S5", 2)) || !strncmp(c->id, "S9", 2)) continue;
		int (*mine)(int) = s5 ? is_orthant_default : is_orthant_broadphase;
		int wo = -1, wp = -1;
		if (best_median(c, mine, &wo) == INFINITY || best_median(c, is_engine_peer, &wp) == INFINITY) continue;
		snprintf(what, sizeof what, "%.23s vs Box2D v3/Jolt", c->id);
		snprintf(detail, sizeof detail, "%s vs %s", g_impls[wo].name, g_impls[wp].name);
		target_line(out, what, ratio_sets(c, mine, is_engine_peer), 0.5, detail);
	}
	// The dynamic tree with its broad-phase state, per object, on the 2D
	// broad-phase scene. The figure includes the pair set (about half a pair
	// per object on S4), so it overstates what the target counts.
	const bench_case *bp = case_by_id("S4");
	int wbp = -1;
	if (bp && best_median(bp, is_orthant_broadphase, &wbp) < INFINITY) {
		const bench_result *res = &bp->res[wbp];
		double bpo = res->lib_bytes_per_obj > 0 ? res->lib_bytes_per_obj - res->lib_pair_bytes_per_obj : res->bytes_per_obj;
		snprintf(detail, sizeof detail, "%s, tree + broad phase, its pairs (%.0f B/object) excluded (stats.bytes - bytes_pairs)",
		         g_impls[wbp].name, res->lib_pair_bytes_per_obj);
		target_line(out, "S4 broad phase memory, B/object", bpo, 64, detail);
	}
	static const char *own[] = {"S1", "S2", "S3", "S4", "S6", "S7", "S8"};
	for (int k = 0; k < 7; ++k) {
		const bench_case *c = case_by_id(own[k]);
		if (!c) continue;
		int wo = -1, wb = -1;
		if (best_median(c, is_orthant, &wo) == INFINITY || best_median(c, is_own_baseline, &wb) == INFINITY) continue;
		snprintf(what, sizeof what, "%.23s vs best own baseline", c->id);
		snprintf(detail, sizeof detail, "%s vs %s", g_impls[wo].name, g_impls[wb].name);
		target_line(out, what, ratio_sets(c, is_orthant, is_own_baseline), k >= 5 ? 0.5 : 1.0, detail);
	}
	const bench_case *s3 = case_by_id("S3"), *s4 = case_by_id("S4");
	if (s3 && s4) {
		double a = best_median(s4, is_orthant, NULL), b = best_median(s3, is_orthant, NULL);
		snprintf(detail, sizeof detail, "S4 %.3f ms vs S3 %.3f ms per frame", a * 1e3, b * 1e3);
		target_line(out, "S4 / S3 frame time", a / b, 0.25, detail);
	}
	for (int ci = 0; ci < g_ncases; ++ci) {
		const bench_case *c = &g_cases[ci];
		if (!c->used || (strncmp(c->id, "S5", 2) == 0 && strcmp(c->id, "S5-build")) || strcmp(c->id, "S9-pairs") == 0 ||
		    strcmp(c->id, "S9") == 0)
			continue;
		int wo = -1;
		if (best_median(c, is_orthant, &wo) == INFINITY) continue;
		double bpo = c->res[wo].lib_bytes_per_obj > 0 ? c->res[wo].lib_bytes_per_obj : c->res[wo].bytes_per_obj;
		snprintf(what, sizeof what, "%.23s memory, B/object", c->id);
		snprintf(detail, sizeof detail, "%s, tree bytes (stats.bytes); heap growth incl. adapter %.0f",
		         g_impls[wo].name, c->res[wo].bytes_per_obj);
		target_line(out, what, bpo, c->dim == 2 ? 48 : 64, detail);
	}
	const bench_case *s9 = case_by_id("S9-build");
	if (s9) {
		int wo = -1;
		double t = best_median(s9, is_orthant, &wo);
		if (t < INFINITY) {
			snprintf(detail, sizeof detail, "%s, %d boxes", g_impls[wo].name, s9->n);
			target_line(out, "S9 bulk build, ns/object", t * 1e9 / s9->n, 50, detail);
		}
	}
}

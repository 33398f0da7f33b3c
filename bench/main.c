// main.c: orthant_bench — orthant against brute force, simple baselines and the
// libraries a user would otherwise pick, on the shared scenes of support/scene.h.
// This file holds the dynamic, static and one-shot runners and main(); the
// tables, CSV, SVG and target report are in report.c.
//
// Usage: orthant_bench [--quick] [--rounds N] [--only ID] [--machine NAME]
//                      [--csv FILE] [--svg FILE] [--list]
// Progress goes to stderr; tables (Markdown) and the target report to stdout.
// The exit status is 1 when any implementation disagreed with the reference.
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#if defined(__GLIBC__) || defined(__linux__)
#include <malloc.h>
#endif

#include "bench.h"
#include "bench_extra.h"
#include "scene.h"
#include "report.h"

bench_impl g_impls[BENCH_MAX_IMPLS];
int g_nimpl;
bench_case g_cases[BENCH_MAX_CASES];
int g_ncases;
static int g_failures;
bench_opts g_opt;

double bench_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

size_t bench_heap(void)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
	struct mallinfo2 m = mallinfo2();
	return m.uordblks + m.hblkhd;
#else
	return 0;
#endif
}

static bench_case *case_new(const char *id, const char *desc, int n, int dim, int frames, const char *label)
{
	bench_case *c = &g_cases[g_ncases++];
	memset(c, 0, sizeof *c);
	snprintf(c->id, sizeof c->id, "%s", id);
	snprintf(c->desc, sizeof c->desc, "%s", desc);
	c->n = n;
	c->dim = dim;
	c->frames = frames;
	c->unit_label = label;
	for (int i = 0; i < BENCH_MAX_IMPLS; ++i)
		for (int r = 0; r < BENCH_MAX_ROUNDS; ++r) c->res[i].t[r] = NAN;
	return c;
}

static int impl_fits(const bench_impl *im, int dim, int n)
{
	if (!(im->dims & (dim == 2 ? BENCH_DIM2 : BENCH_DIM3))) return 0;
	if (im->max_count && n > im->max_count) return 0;
	return 1;
}

static const bench_impl *impl_named(const char *name)
{
	for (int i = 0; i < g_nimpl; ++i)
		if (!strcmp(g_impls[i].name, name)) return &g_impls[i];
	return NULL;
}

static void record(bench_case *c, int impl, int round, double t)
{
	bench_result *r = &c->res[impl];
	r->t[round] = t;
	r->ran++;
	c->used = 1;
}

static void mismatch(bench_case *c, int impl, const char *what, int frame, uint64_t got_n, uint64_t want_n)
{
	if (c->res[impl].status != RES_MISMATCH)
		fprintf(stderr, "  MISMATCH %s %s: %s (frame/query %d): %llu results, reference %llu\n", c->id,
		        g_impls[impl].name, what, frame, (unsigned long long)got_n, (unsigned long long)want_n);
	c->res[impl].status = RES_MISMATCH;
	g_failures++;
}

// ---------------------------------------------------------------- dynamic scenes

typedef struct bench_scenario {
	const char *id;
	const char *desc;
	scn_kind kind;
	int dim;
	int n, quick_n;
	float moving;
	int frames, quick_frames;
	int rounds, quick_rounds;
	int mover_stride;  // > 0: a big static world, only the boxes i % stride == 0 ever move
	const char *impls; // NULL: every implementation; else those whose name holds one of these (comma list)
} bench_scenario;

static const bench_scenario g_dynamic[] = {
	{"S1", "bouncing-boxes scene: boxes side 1..20 in 600x800, all moving", SCN_BOUNCING, 2, 1000, 1000, 1.0f, 100, 20, 7, 1, 0, NULL},
	{"S2", "10k small boxes, all moving a small step", SCN_UNIFORM, 2, 10000, 2000, 1.0f, 30, 4, 5, 1, 0, NULL},
	{"S3", "100k small boxes, all moving a small step", SCN_UNIFORM, 2, 100000, 10000, 1.0f, 10, 3, 3, 1, 0, NULL},
	{"S4", "as S3, 5% moving per frame", SCN_UNIFORM, 2, 100000, 10000, 0.05f, 10, 3, 3, 1, 0, NULL},
	{"S6", "S3 in 3D (cubes)", SCN_UNIFORM, 3, 100000, 10000, 1.0f, 10, 3, 3, 1, 0, NULL},
	// ~45 overlaps per box at any n: 30k boxes already report 1.4M pairs a frame.
	{"S7", "clustered: 8 dense clusters, all moving", SCN_CLUSTERED, 2, 30000, 10000, 1.0f, 5, 2, 3, 1, 0, NULL},
	{"S8", "mixed sizes: 0.1% huge boxes among small, all moving", SCN_MIXED, 2, 100000, 10000, 1.0f, 10, 3, 3, 1, 0, NULL},
	// A big static world: 2M boxes, 2k of them (always the same) move each frame;
	// every current pair is reported each frame. Incremental broad phases only.
	{"S10", "big static world: every 1000th box moves", SCN_UNIFORM, 2, 2000000, 200000, 1.0f, 10, 3, 3, 1, 1000,
	 "broadphase,packed"},
};

/// Whether some comma-separated word of list occurs in name.
static int name_in_list(const char *list, const char *name)
{
	for (const char *p = list; *p;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		for (const char *q = name; *q; ++q)
			if (!strncmp(q, p, len)) return 1;
		if (!e) break;
		p = e + 1;
	}
	return 0;
}

static int impl_wanted(const bench_scenario *sc, const bench_impl *im)
{
	if (g_opt.impls && !name_in_list(g_opt.impls, im->name)) return 0;
	return !sc->impls || name_in_list(sc->impls, im->name);
}

typedef struct bench_run {
	scn_scene scene;
	ort3_box *prev;
	int *moved;
	unsigned char *mobile;
	int stride;
	bench_frame frame;
} bench_run;

static int run_start(bench_run *run, const bench_scenario *sc, int n)
{
	memset(run, 0, sizeof *run);
	if (scn_scene_make(&run->scene, sc->kind, sc->dim, n, BENCH_SEED) != 0) return -1;
	run->scene.moving_fraction = sc->moving;
	run->prev = malloc(sizeof *run->prev * (size_t)n);
	run->moved = malloc(sizeof(int) * (size_t)n);
	run->frame = (bench_frame){.dim = sc->dim, .count = n, .boxes = run->scene.boxes, .world = run->scene.world,
	                           .moved = run->moved, .moved_count = 0};
	run->stride = sc->mover_stride;
	if (run->stride > 0) run->frame.mobile = run->mobile = bench_bigworld_mobile(n, run->stride);
	return 0;
}

// Advance the scene one tick and list the boxes that changed (untimed).
static void run_step(bench_run *run)
{
	int n = run->scene.count;
	memcpy(run->prev, run->scene.boxes, sizeof *run->prev * (size_t)n);
	if (run->stride > 0)
		bench_bigworld_step(&run->scene, run->stride);
	else
		scn_scene_step(&run->scene);
	int m = 0;
	for (int i = 0; i < n; ++i)
		if (memcmp(&run->prev[i], &run->scene.boxes[i], sizeof(ort3_box)) != 0) run->moved[m++] = i;
	run->frame.moved_count = m;
}

static void run_end(bench_run *run)
{
	scn_scene_free(&run->scene);
	free(run->prev);
	free(run->moved);
	free(run->mobile);
}

static int bench_brute_pairs(const bench_frame *f, bench_sink *out)
{
	const bench_impl *b = impl_named("brute");
	void *st = b->create(f);
	b->pairs(st, f, out);
	b->destroy(st);
	return 0;
}

// The reference pair sets of every frame: brute force up to its size limit,
// else sort-and-sweep whose first frame is checked against brute force while
// n <= brute_check_max. Returns NULL when the reference disagrees with itself.
static bench_sink *dynamic_reference(const bench_scenario *sc, int n, int frames, const char **how)
{
	const bench_impl *brute = impl_named("brute");
	const bench_impl *ref = (n <= brute->max_count) ? brute : impl_named("sweep");
	*how = ref->name;
	bench_sink *out = calloc((size_t)frames + 1, sizeof *out);
	bench_run run;
	if (run_start(&run, sc, n) != 0) return NULL;
	void *st = ref->create(&run.frame);
	for (int f = 0; f < frames; ++f) {
		run_step(&run);
		ref->update(st, &run.frame);
		ref->pairs(st, &run.frame, &out[f]);
		if (f == 0 && ref != brute && n <= g_opt.brute_check_max) {
			bench_sink b = {0, 0};
			fprintf(stderr, "  checking the %s reference against brute force (n=%d)...\n", ref->name, n);
			bench_brute_pairs(&run.frame, &b);
			if (b.count != out[0].count || b.sum != out[0].sum) {
				fprintf(stderr, "  REFERENCE MISMATCH: sweep %llu pairs, brute %llu\n",
				        (unsigned long long)out[0].count, (unsigned long long)b.count);
				g_failures++;
			}
			*how = "sweep (frame 1 checked by brute force)";
		}
	}
	ref->destroy(st);
	run_end(&run);
	return out;
}

static void run_dynamic(const bench_scenario *sc)
{
	int n = g_opt.quick ? sc->quick_n : sc->n;
	int frames = g_opt.quick ? sc->quick_frames : sc->frames;
	int rounds = g_opt.rounds ? g_opt.rounds : (g_opt.quick ? sc->quick_rounds : sc->rounds);
	if (rounds > BENCH_MAX_ROUNDS) rounds = BENCH_MAX_ROUNDS;
	char desc[128];
	snprintf(desc, sizeof desc, "%s (n=%d, %dD)", sc->desc, n, sc->dim);
	bench_case *c = case_new(sc->id, desc, n, sc->dim, frames, "pairs/frame");
	fprintf(stderr, "%s: %s\n", sc->id, desc);
	const char *how = "";
	bench_sink *ref = dynamic_reference(sc, n, frames, &how);
	if (!ref) {
		fprintf(stderr, "  out of memory\n");
		g_failures++;
		return;
	}
	uint64_t total = 0;
	for (int f = 0; f < frames; ++f) total += ref[f].count;
	fprintf(stderr, "  reference: %s, %.1f pairs/frame\n", how, (double)total / frames);
	int planned[BENCH_MAX_IMPLS];
	for (int i = 0; i < g_nimpl; ++i) planned[i] = frames;
	for (int r = 0; r < rounds; ++r) {
		for (int k = 0; k < g_nimpl; ++k) {
			int idx = (k + r) % g_nimpl;
			const bench_impl *im = &g_impls[idx];
			if (!im->pairs || !impl_fits(im, sc->dim, n) || !impl_wanted(sc, im) || planned[idx] == 0) continue;
			bench_result *res = &c->res[idx];
			int nf = planned[idx];
			bench_run run;
			if (run_start(&run, sc, n) != 0) continue;
			size_t heap0 = bench_heap();
			void *st = im->create(&run.frame);
			double spent = 0.0, spent_pairs = 0.0; // the frames', and their reporting's (im->pairs)
			uint64_t pairs = 0;
			for (int f = 0; f < nf; ++f) {
				run_step(&run);
				bench_sink sink = {0, 0};
				double t0 = bench_now();
				im->update(st, &run.frame);
				double t1 = bench_now();
				im->pairs(st, &run.frame, &sink);
				double t2 = bench_now();
				spent += t2 - t0;
				spent_pairs += t2 - t1;
				pairs += sink.count;
				if (sink.count != ref[f].count || sink.sum != ref[f].sum)
					mismatch(c, idx, "pair set", f, sink.count, ref[f].count);
				if (spent > 2.0 * g_opt.run_budget) {
					nf = f + 1; // too slow for every frame: time what ran
					break;
				}
			}
			size_t heap1 = bench_heap();
			if (r == 0 && im->bytes) res->lib_bytes_per_obj = (double)im->bytes(st) / n;
			if (r == 0 && im->pair_bytes) res->lib_pair_bytes_per_obj = (double)im->pair_bytes(st) / n;
			im->destroy(st);
			run_end(&run);
			double tpf = spent / nf;
			record(c, idx, r, tpf);
			if (r == 0) {
				res->bytes_per_obj = heap1 > heap0 ? (double)(heap1 - heap0) / n : 0.0;
				res->per_unit = (double)pairs / nf;
				res->frames = nf;
				// Slow implementations run fewer frames in later rounds.
				int want = (int)(g_opt.run_budget / (tpf > 1e-9 ? tpf : 1e-9));
				planned[idx] = want < 2 ? 2 : (want > frames ? frames : want);
				if (tpf > g_opt.run_budget) planned[idx] = 1;
				if (tpf > 4 * g_opt.run_budget) planned[idx] = 0; // one slow frame is enough: no more rounds
			}
			// The split says how much of a frame is the library's: reporting
			// reads the pair set (and an adapter's own static pairs) after it.
			fprintf(stderr, "  round %d %-24s %9.3f ms/frame (%d frames; update %.3f, reporting the pairs %.3f)%s\n", r + 1,
			        im->name, tpf * 1e3, nf, (spent - spent_pairs) / nf * 1e3, spent_pairs / nf * 1e3,
			        res->status == RES_MISMATCH ? "  MISMATCH" : "");
		}
	}
	free(ref);
}

// ---------------------------------------------------------------- S5: static queries

typedef struct static_phase {
	const char *id;
	const char *desc;
	const char *label;
} static_phase;

enum { PH_BUILD, PH_BOX, PH_RAY_ALL, PH_RAY_FIRST, PH_KNN, PH_COUNT };

static void queries_alloc(bench_queries *q, int count, int k)
{
	memset(q, 0, sizeof *q);
	q->count = count;
	q->k = k;
	q->sinks = calloc((size_t)count, sizeof *q->sinks);
	q->first_t = calloc((size_t)count, sizeof *q->first_t);
	q->knn_dist = calloc((size_t)count * (size_t)(k > 0 ? k : 1), sizeof *q->knn_dist);
}

static void queries_reset(bench_queries *q)
{
	memset(q->sinks, 0, sizeof *q->sinks * (size_t)q->count);
	for (int i = 0; i < q->count; ++i) q->first_t[i] = INFINITY;
	for (int i = 0; i < q->count * (q->k > 0 ? q->k : 1); ++i) q->knn_dist[i] = INFINITY;
}

static void queries_free(bench_queries *q)
{
	free(q->sinks);
	free(q->first_t);
	free(q->knn_dist);
}

static int close_enough(float a, float b)
{
	if (isinf(a) || isinf(b)) return isinf(a) && isinf(b);
	return fabsf(a - b) <= 1e-3f * (1.0f + fabsf(b));
}

static void run_static(void)
{
	int n = g_opt.quick ? 10000 : 100000;
	int nq = g_opt.quick ? 10000 : 100000, nk = g_opt.quick ? 1000 : 10000, k = 10;
	int sample = g_opt.quick ? 500 : 1000;
	int rounds = g_opt.rounds ? g_opt.rounds : (g_opt.quick ? 1 : 3);
	bench_scenario sc = {"S5", "static", SCN_UNIFORM, 2, n, n, 0.0f, 0, 0, 0, 0, 0, NULL};
	bench_run run;
	if (run_start(&run, &sc, n) != 0) return;
	run.mobile = calloc((size_t)n, 1); // every box static: engines put them in their static tree
	run.frame.mobile = run.mobile;
	const bench_frame *f = &run.frame;
	static const static_phase phases[PH_COUNT] = {
	    {"S5-build", "build the index", "-"},
	    {"S5-box", "box queries returning ~10 each", "hits/query"},
	    {"S5-ray-all", "rays of length 50, every hit", "hits/ray"},
	    {"S5-ray-first", "rays across the world, nearest hit", "hit rate"},
	    {"S5-knn", "k-nearest boxes to a point, k = 10", "k"},
	};
	bench_case *cs[PH_COUNT];
	for (int p = 0; p < PH_COUNT; ++p) {
		char desc[128];
		int cnt = p == PH_BUILD ? n : (p == PH_KNN ? nk : nq);
		snprintf(desc, sizeof desc, "%s (%d static boxes, %d queries; time for the whole batch)", phases[p].desc, n,
		         p == PH_BUILD ? 0 : cnt);
		cs[p] = case_new(phases[p].id, desc, n, 2, cnt, phases[p].label);
	}
	fprintf(stderr, "S5: %d static boxes, %d box queries, %d rays, %d kNN\n", n, nq, nq, nk);

	// The queries: box side chosen from the density for ~10 hits; random rays and points.
	double area = (double)(f->world.max[0] - f->world.min[0]) * (f->world.max[1] - f->world.min[1]);
	double mean_side = 0.0;
	for (int i = 0; i < n; ++i) mean_side += f->boxes[i].max[0] - f->boxes[i].min[0];
	mean_side /= n;
	float qside = (float)(sqrt(10.0 * area / n) - mean_side);
	scn_rng rng = scn_rng_make(BENCH_SEED + 5);
	ort3_box *qboxes = calloc((size_t)nq, sizeof *qboxes);
	bench_ray *rays_all = calloc((size_t)nq, sizeof *rays_all), *rays_first = calloc((size_t)nq, sizeof *rays_first);
	float(*pts)[3] = calloc((size_t)nk, sizeof *pts);
	float diag = sqrtf((float)area) * 1.5f;
	for (int i = 0; i < nq; ++i) {
		float cx = scn_rng_float(&rng, f->world.min[0], f->world.max[0]);
		float cy = scn_rng_float(&rng, f->world.min[1], f->world.max[1]);
		qboxes[i] = (ort3_box){{cx - qside / 2, cy - qside / 2, 0}, {cx + qside / 2, cy + qside / 2, 0}};
		for (int j = 0; j < 2; ++j) {
			bench_ray *ray = j ? &rays_first[i] : &rays_all[i];
			float a = scn_rng_float(&rng, 0.0f, 6.2831853f);
			ray->origin[0] = scn_rng_float(&rng, f->world.min[0], f->world.max[0]);
			ray->origin[1] = scn_rng_float(&rng, f->world.min[1], f->world.max[1]);
			ray->origin[2] = 0.0f;
			ray->dir[0] = cosf(a);
			ray->dir[1] = sinf(a);
			ray->dir[2] = 0.0f;
			ray->max_t = j ? diag : 50.0f;
		}
	}
	for (int i = 0; i < nk; ++i) {
		pts[i][0] = scn_rng_float(&rng, f->world.min[0], f->world.max[0]);
		pts[i][1] = scn_rng_float(&rng, f->world.min[1], f->world.max[1]);
		pts[i][2] = 0.0f;
	}

	// Brute-force answers for the first `sample` queries of each kind.
	fprintf(stderr, "  brute-force reference on %d queries of each kind...\n", sample);
	const bench_impl *brute = impl_named("brute");
	bench_queries ref[PH_COUNT];
	for (int p = PH_BOX; p < PH_COUNT; ++p) {
		queries_alloc(&ref[p], sample, k);
		queries_reset(&ref[p]);
		ref[p].boxes = qboxes;
		ref[p].rays = p == PH_RAY_ALL ? rays_all : rays_first;
		ref[p].points = (const float(*)[3])pts;
	}
	brute->query_boxes(NULL, f, &ref[PH_BOX]);
	brute->ray_all(NULL, f, &ref[PH_RAY_ALL]);
	brute->ray_first(NULL, f, &ref[PH_RAY_FIRST]);
	brute->knn(NULL, f, &ref[PH_KNN]);

	bench_queries q[PH_COUNT];
	int slow[PH_COUNT][BENCH_MAX_IMPLS] = {{0}};
	bench_sink *kept[PH_COUNT][BENCH_MAX_IMPLS] = {{NULL}}; // first-round results of box queries and all-hit rays
	for (int p = PH_BOX; p < PH_COUNT; ++p) {
		queries_alloc(&q[p], p == PH_KNN ? nk : nq, k);
		q[p].boxes = qboxes;
		q[p].rays = p == PH_RAY_ALL ? rays_all : rays_first;
		q[p].points = (const float(*)[3])pts;
	}
	for (int r = 0; r < rounds; ++r) {
		for (int kk = 0; kk < g_nimpl; ++kk) {
			int idx = (kk + r) % g_nimpl;
			const bench_impl *im = &g_impls[idx];
			if (!strcmp(im->name, "brute") || im->dynamic_only || !impl_fits(im, 2, n) || !impl_wanted(&sc, im)) continue;
			if (!im->query_boxes && !im->ray_all && !im->ray_first && !im->knn) continue;
			size_t heap0 = bench_heap();
			double t0 = bench_now();
			void *st = im->create(f);
			double tb = bench_now() - t0;
			size_t heap1 = bench_heap();
			record(cs[PH_BUILD], idx, r, tb);
			if (r == 0) {
				cs[PH_BUILD]->res[idx].bytes_per_obj = heap1 > heap0 ? (double)(heap1 - heap0) / n : 0.0;
				if (im->bytes) cs[PH_BUILD]->res[idx].lib_bytes_per_obj = (double)im->bytes(st) / n;
			}
			fprintf(stderr, "  round %d %-24s build %8.3f ms", r + 1, im->name, tb * 1e3);
			void (*ops[PH_COUNT])(void *, const bench_frame *, bench_queries *) = {
			    NULL, im->query_boxes, im->ray_all, im->ray_first, im->knn};
			for (int p = PH_BOX; p < PH_COUNT; ++p) {
				if (!ops[p] || slow[p][idx]) continue;
				queries_reset(&q[p]);
				t0 = bench_now();
				ops[p](st, f, &q[p]);
				double tq = bench_now() - t0;
				record(cs[p], idx, r, tq);
				if (tq > 4 * g_opt.run_budget) slow[p][idx] = 1; // one slow batch is enough: no more rounds
				fprintf(stderr, " | %s %.2f ms", phases[p].id + 3, tq * 1e3);
				bench_result *res = &cs[p]->res[idx];
				uint64_t tc = 0, finite = 0;
				for (int i = 0; i < q[p].count; ++i) {
					tc += q[p].sinks[i].count;
					if (p == PH_RAY_FIRST && !isinf(q[p].first_t[i])) finite++;
				}
				if (r == 0 && p <= PH_RAY_ALL) {
					kept[p][idx] = malloc(sizeof(bench_sink) * (size_t)q[p].count);
					memcpy(kept[p][idx], q[p].sinks, sizeof(bench_sink) * (size_t)q[p].count);
				}
				if (r == 0) {
					res->per_unit = p == PH_RAY_FIRST ? (double)finite / q[p].count
					                : p == PH_KNN ? (double)k : (double)tc / q[p].count;
				}
				for (int i = 0; i < sample && i < q[p].count; ++i) {
					int bad = 0;
					if (p == PH_BOX || p == PH_RAY_ALL)
						bad = q[p].sinks[i].count != ref[p].sinks[i].count || q[p].sinks[i].sum != ref[p].sinks[i].sum;
					else if (p == PH_RAY_FIRST)
						bad = !close_enough(q[p].first_t[i], ref[p].first_t[i]);
					else
						for (int j = 0; j < k; ++j)
							bad |= !close_enough(q[p].knn_dist[(size_t)i * k + j], ref[p].knn_dist[(size_t)i * k + j]);
					if (bad) {
						mismatch(cs[p], idx, phases[p].desc, i, p <= PH_RAY_ALL ? q[p].sinks[i].count : 0,
						         p <= PH_RAY_ALL ? ref[p].sinks[i].count : 0);
						break;
					}
				}
			}
			fprintf(stderr, "\n");
			im->destroy(st);
		}
	}
	// Beyond the sample: wherever implementations disagree on a box query or an
	// all-hit ray, brute force settles that query and whoever differs is marked.
	for (int p = PH_BOX; p <= PH_RAY_ALL; ++p) {
		int disputed = 0;
		for (int i = 0; i < q[p].count; ++i) {
			int first = -1, differ = 0;
			for (int m = 0; m < g_nimpl; ++m) {
				if (!kept[p][m]) continue;
				if (first < 0)
					first = m;
				else if (kept[p][m][i].count != kept[p][first][i].count || kept[p][m][i].sum != kept[p][first][i].sum)
					differ = 1;
			}
			if (!differ) continue;
			disputed++;
			bench_sink truth = {0, 0};
			bench_queries one = {.count = 1, .boxes = qboxes + i, .rays = rays_all + i, .sinks = &truth};
			if (p == PH_BOX)
				brute->query_boxes(NULL, f, &one);
			else
				brute->ray_all(NULL, f, &one);
			for (int m = 0; m < g_nimpl; ++m)
				if (kept[p][m] && (kept[p][m][i].count != truth.count || kept[p][m][i].sum != truth.sum))
					mismatch(cs[p], m, "query settled by brute force", i, kept[p][m][i].count, truth.count);
		}
		if (disputed) fprintf(stderr, "  %s: %d queries disputed, settled by brute force\n", phases[p].id, disputed);
		for (int m = 0; m < g_nimpl; ++m) free(kept[p][m]);
	}
	for (int p = PH_BOX; p < PH_COUNT; ++p) {
		queries_free(&q[p]);
		queries_free(&ref[p]);
	}
	free(qboxes);
	free(rays_all);
	free(rays_first);
	free(pts);
	run_end(&run);
}

// ---------------------------------------------------------------- S9: bulk build + all pairs once

static void run_oneshot(void)
{
	int n = g_opt.quick ? 50000 : 1000000;
	int rounds = g_opt.rounds ? g_opt.rounds : (g_opt.quick ? 1 : 3);
	if (rounds > 3 && !g_opt.quick) rounds = 3;
	bench_scenario sc = {"S9", "bulk", SCN_UNIFORM, 2, n, n, 0.0f, 0, 0, 0, 0, 0, NULL};
	char desc[128];
	snprintf(desc, sizeof desc, "bulk build of %d boxes (time for the build)", n);
	bench_case *ct = case_new("S9", "", n, 2, 1, "pairs");
	snprintf(ct->desc, sizeof ct->desc, "bulk build + all pairs once, %d boxes (time for both; the split follows)", n);
	bench_case *cb = case_new("S9-build", desc, n, 2, 1, "-");
	snprintf(desc, sizeof desc, "all pairs once over the %d boxes just built", n);
	bench_case *cp = case_new("S9-pairs", desc, n, 2, 1, "pairs");
	fprintf(stderr, "S9: %d boxes, bulk build + all pairs once\n", n);
	const char *how = "";
	bench_sink *ref = NULL;
	{
		// The reference: sweep over the unmoved scene (checked by brute force when small enough).
		bench_run run;
		if (run_start(&run, &sc, n) != 0) return;
		const bench_impl *sw = impl_named("sweep");
		ref = calloc(1, sizeof *ref);
		void *st = sw->create(&run.frame);
		sw->pairs(st, &run.frame, ref);
		sw->destroy(st);
		how = "sweep";
		if (n <= g_opt.brute_check_max) {
			bench_sink b = {0, 0};
			bench_brute_pairs(&run.frame, &b);
			if (b.count != ref->count || b.sum != ref->sum) {
				fprintf(stderr, "  REFERENCE MISMATCH\n");
				g_failures++;
			}
			how = "sweep, checked by brute force";
		}
		run_end(&run);
	}
	fprintf(stderr, "  reference: %s, %llu pairs\n", how, (unsigned long long)ref->count);
	int skip[BENCH_MAX_IMPLS] = {0};
	for (int r = 0; r < rounds; ++r) {
		for (int k = 0; k < g_nimpl; ++k) {
			int idx = (k + r) % g_nimpl;
			const bench_impl *im = &g_impls[idx];
			if (skip[idx] || !im->pairs || im->dynamic_only || !impl_fits(im, 2, n) || !impl_wanted(&sc, im)) continue;
			bench_run run;
			if (run_start(&run, &sc, n) != 0) continue;
			size_t heap0 = bench_heap();
			double t0 = bench_now();
			void *st = im->create(&run.frame);
			double t1 = bench_now();
			size_t heap1 = bench_heap();
			bench_sink sink = {0, 0};
			im->pairs(st, &run.frame, &sink);
			double t2 = bench_now();
			if (r == 0 && im->bytes) ct->res[idx].lib_bytes_per_obj = cb->res[idx].lib_bytes_per_obj = (double)im->bytes(st) / n;
			im->destroy(st);
			run_end(&run);
			record(ct, idx, r, t2 - t0);
			record(cb, idx, r, t1 - t0);
			record(cp, idx, r, t2 - t1);
			if (r == 0) {
				cb->res[idx].bytes_per_obj = heap1 > heap0 ? (double)(heap1 - heap0) / n : 0.0;
				ct->res[idx].bytes_per_obj = cb->res[idx].bytes_per_obj;
				cp->res[idx].per_unit = ct->res[idx].per_unit = (double)sink.count;
			}
			if (sink.count != ref->count || sink.sum != ref->sum) {
				mismatch(cp, idx, "pair set", 0, sink.count, ref->count);
				ct->res[idx].status = RES_MISMATCH;
			}
			if (t2 - t0 > 8.0) skip[idx] = 1; // too slow to repeat
			fprintf(stderr, "  round %d %-24s build %9.2f ms  pairs %9.2f ms%s\n", r + 1, im->name, (t1 - t0) * 1e3,
			        (t2 - t1) * 1e3, cp->res[idx].status == RES_MISMATCH ? "  MISMATCH" : "");
		}
	}
	free(ref);
}


static void usage(void)
{
	fprintf(stderr, "usage: orthant_bench [--quick] [--rounds N] [--only S1,S3,...] [--impls orthant-loose,jolt,...] [--machine NAME] [--csv FILE] "
	                "[--svg FILE] [--list] [--adversarial FILE [--adversarial-n N] [--adversarial-shuffle]]\n");
}

static int wanted(const char *id)
{
	if (!g_opt.only) return 1;
	const char *p = g_opt.only;
	size_t n = strlen(id);
	while (*p) {
		if (!strncmp(p, id, n) && (p[n] == ',' || p[n] == 0)) return 1;
		p = strchr(p, ',');
		if (!p) break;
		++p;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct utsname u;
	snprintf(g_opt.machine, sizeof g_opt.machine, "%.63s", uname(&u) == 0 ? u.nodename : "unknown");
	int list = 0;
	const char *adversarial = NULL; // the adversarial scenario alone (scn_adversarial.c)
	int adversarial_n = 0;          // its boxes a scene; 0: the default (20000, --quick 4000)
	bool adversarial_shuffle = false; // --adversarial-shuffle: every scene in random order
	for (int i = 1; i < argc; ++i) {
		if (!strcmp(argv[i], "--quick"))
			g_opt.quick = 1;
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			g_opt.rounds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--only") && i + 1 < argc)
			g_opt.only = argv[++i];
		else if (!strcmp(argv[i], "--impls") && i + 1 < argc)
			g_opt.impls = argv[++i];
		else if (!strcmp(argv[i], "--machine") && i + 1 < argc)
			snprintf(g_opt.machine, sizeof g_opt.machine, "%s", argv[++i]);
		else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
			g_opt.csv = argv[++i];
		else if (!strcmp(argv[i], "--svg") && i + 1 < argc)
			g_opt.svg = argv[++i];
		else if (!strcmp(argv[i], "--list"))
			list = 1;
		else if (!strcmp(argv[i], "--adversarial") && i + 1 < argc)
			adversarial = argv[++i];
		else if (!strcmp(argv[i], "--adversarial-n") && i + 1 < argc && atoi(argv[i + 1]) >= 100)
			adversarial_n = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--adversarial-shuffle"))
			adversarial_shuffle = true;
		else {
			usage();
			return 2;
		}
	}
	if (adversarial) return bench_adversarial(adversarial, g_opt.quick, adversarial_n, adversarial_shuffle);
	g_opt.run_budget = g_opt.quick ? 0.25 : 1.5;
	g_opt.brute_check_max = g_opt.quick ? 50000 : 100000;
	// Every implementation compiled in: the baselines, orthant, then the peers found.
	int (*const registers[])(bench_impl *, int) = {
	    bench_baselines_register,
#ifdef BENCH_HAVE_ORTHANT
	    bench_orthant_register,
#endif
#ifdef BENCH_HAVE_BOX2D
	    bench_box2d_register,
#endif
#ifdef BENCH_HAVE_BULLET
	    bench_bullet_register,
#endif
#ifdef BENCH_HAVE_SIDX
	    bench_sidx_register,
#endif
#ifdef BENCH_HAVE_BOOST
	    bench_boost_register,
#endif
#ifdef BENCH_HAVE_BOX2D3
	    bench_box2d3_register,
#endif
#ifdef BENCH_HAVE_JOLT
	    bench_jolt_register,
#endif
	};
	for (size_t k = 0; k < sizeof registers / sizeof registers[0]; ++k)
		g_nimpl += registers[k](g_impls + g_nimpl, BENCH_MAX_IMPLS - g_nimpl);
	if (list) {
		for (int i = 0; i < g_nimpl; ++i) printf("%-26s %s\n", g_impls[i].name, g_impls[i].family);
		return 0;
	}
	double t0 = bench_now();
	fprintf(stderr, "orthant_bench %s mode on %s, %d implementations\n", g_opt.quick ? "quick" : "full", g_opt.machine,
	        g_nimpl);
	for (size_t k = 0; k < sizeof g_dynamic / sizeof g_dynamic[0]; ++k) {
		if (wanted(g_dynamic[k].id)) run_dynamic(&g_dynamic[k]);
		if (!strcmp(g_dynamic[k].id, "S4") && wanted("S5")) run_static();
	}
	if (wanted("S9")) run_oneshot();
	// T (scn_threads.c): one worker against two; only when asked for by name.
	if (g_opt.only && wanted("T")) g_failures += bench_threads_run(g_opt.quick, g_opt.rounds);
	printf("## orthant_bench results: %s, %s mode\n", g_opt.machine, g_opt.quick ? "quick" : "full");
	printf("\nTimes are medians over rounds (each round runs every implementation once, in a rotated order);\n"
	       "ratio = median over rounds of (this time / fastest time in the same round).\n");
	print_tables(stdout);
	print_targets(stdout);
	if (wanted("F1")) g_failures += bench_first_update(stdout, g_opt.quick);
	if (g_opt.csv) write_csv(g_opt.csv);
	if (g_opt.svg) write_svg(g_opt.svg);
	fprintf(stderr, "done in %.1f s, %d disagreement(s) with the reference\n", bench_now() - t0, g_failures);
	return g_failures ? 1 : 0;
}

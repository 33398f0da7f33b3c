// main.c: orthant_bench — orthant against brute force, simple baselines and the
// libraries a user would otherwise pick, on the shared scenes of support/scene.h.
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

#define BENCH_MAX_IMPLS 32
#define BENCH_MAX_ROUNDS 15
#define BENCH_MAX_CASES 24
#define BENCH_SEED 20240601u

enum { RES_OK = 0, RES_MISMATCH = 1 };

typedef struct bench_result {
	int ran;                       // rounds run
	double t[BENCH_MAX_ROUNDS];    // seconds per frame (or per phase), NAN when not run
	double bytes_per_obj;          // heap growth while the structure lived, per object
	double lib_bytes_per_obj;      // the structure's own count (orthant: stats.bytes), 0 if unknown
	double per_unit;               // pairs per frame, hits per query...
	int status;
	int frames;                    // frames in the first round
} bench_result;

typedef struct bench_case {
	char id[24];
	char desc[128];
	int n, dim;
	int frames;
	const char *unit_label; // what per_unit counts
	bench_result res[BENCH_MAX_IMPLS];
	int used;
} bench_case;

typedef struct bench_opts {
	int quick;
	int rounds;
	const char *only;
	char machine[64];
	const char *csv;
	const char *svg;
	double run_budget;  // seconds one implementation may spend per run of a dynamic scene
	int brute_check_max; // largest n whose reference is checked by brute force
} bench_opts;

static bench_impl g_impls[BENCH_MAX_IMPLS];
static int g_nimpl;
static bench_case g_cases[BENCH_MAX_CASES];
static int g_ncases;
static int g_failures;
static bench_opts g_opt;

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

static int impl_wanted(const bench_scenario *sc, const bench_impl *im)
{
	if (!sc->impls) return 1;
	for (const char *p = sc->impls; *p;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		for (const char *q = im->name; *q; ++q)
			if (!strncmp(q, p, len)) return 1;
		if (!e) break;
		p = e + 1;
	}
	return 0;
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
			double spent = 0.0;
			uint64_t pairs = 0;
			for (int f = 0; f < nf; ++f) {
				run_step(&run);
				bench_sink sink = {0, 0};
				double t0 = bench_now();
				im->update(st, &run.frame);
				im->pairs(st, &run.frame, &sink);
				spent += bench_now() - t0;
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
			fprintf(stderr, "  round %d %-24s %9.3f ms/frame (%d frames)%s\n", r + 1, im->name, tpf * 1e3, nf,
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
			if (!strcmp(im->name, "brute") || im->dynamic_only || !impl_fits(im, 2, n)) continue;
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
			if (skip[idx] || !im->pairs || im->dynamic_only || !impl_fits(im, 2, n)) continue;
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

// ---------------------------------------------------------------- reporting

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median_of(double *v, int n)
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
	return median_of(v, m);
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
	return median_of(v, m);
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

static void print_tables(FILE *out)
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

static void write_csv(const char *path)
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
static void write_svg(const char *path)
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

static void print_targets(FILE *out)
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

static void usage(void)
{
	fprintf(stderr, "usage: orthant_bench [--quick] [--rounds N] [--only S1,S3,...] [--machine NAME] [--csv FILE] "
	                "[--svg FILE] [--list] [--adversarial FILE]\n");
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
	for (int i = 1; i < argc; ++i) {
		if (!strcmp(argv[i], "--quick"))
			g_opt.quick = 1;
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			g_opt.rounds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--only") && i + 1 < argc)
			g_opt.only = argv[++i];
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
		else {
			usage();
			return 2;
		}
	}
	if (adversarial) return bench_adversarial(adversarial, g_opt.quick);
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

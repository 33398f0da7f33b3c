// scn_threads.c: orthant_bench's thread rows (--only T) — each call that can
// split its work, timed with one worker and with two (the built-in pool of
// ort_tasks) in the same run, rounds alternating, so the printed ratio
// (one-worker time / two-worker time, the median over rounds) compares like
// with like even on a machine whose load drifts.
//
// Rows: 1M uniform boxes (SCN_UNIFORM, 2D), build + find_pairs for the packed
// and the default tree; S3 (100k uniform boxes, all moving) update_pairs on
// the default tree; S5 (100k static boxes) build and batched box and ray
// queries. Each pair of runs is checked to report the same count and checksum.
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "scene.h"

#define TH_ROUNDS_MAX 15

/// A moment: wall-clock seconds and the process's CPU seconds (all threads).
typedef struct th_time {
	double wall, cpu;
} th_time;

static th_time th_now(void)
{
	struct timespec w, c;
	clock_gettime(CLOCK_MONOTONIC, &w);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c);
	return (th_time){(double)w.tv_sec + (double)w.tv_nsec * 1e-9, (double)c.tv_sec + (double)c.tv_nsec * 1e-9};
}

static th_time th_since(th_time a, th_time b) { return (th_time){b.wall - a.wall, b.cpu - a.cpu}; }

static bool th_pair(void *ctx, uint32_t a, uint32_t b)
{
	bench_sink_pair(ctx, a, b);
	return true;
}

static bool th_tree_pair(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)ua, (void)ub;
	bench_sink_pair(ctx, a.id, b.id);
	return true;
}

static void th_begin(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)ua, (void)ub;
	bench_sink_pair(ctx, a.id, b.id);
}

static void th_end(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)ua, (void)ub;
	bench_sink *s = ctx;
	bench_sink_pair(s, a.id, b.id);
	s->sum += 1; // an end differs from a begin
}

/// One measured row: times[phase] for each worker count, per round.
typedef struct th_row {
	const char *name;
	int phases;
	const char *phase_name[3];
	th_time t[2][TH_ROUNDS_MAX][3];
	bench_sink sink[2];
	bool mismatch;
} th_row;

/// What a row's run does with one context (NULL: serial): fills t[phase].
typedef void th_run_fn(const scn_scene *s, ort_tasks *tasks, th_time t[3], bench_sink *sink);

static void th_packed_1m(const scn_scene *s, ort_tasks *tasks, th_time t[3], bench_sink *sink)
{
	ort2_packed_def def = ort2_packed_default_def();
	def.tasks = tasks;
	ort2_packed *p;
	if (ort2_packed_create(&def, &p) != ORT_OK) exit(1);
	ort2_box *boxes = malloc(sizeof *boxes * (size_t)s->count);
	for (int i = 0; i < s->count; ++i) boxes[i] = scn_box2(s, i);
	// A first build makes the arrays; a rebuild (a frame) is what is timed.
	if (ort2_packed_build(p, boxes, s->count) != ORT_OK) exit(1);
	th_time t0 = th_now();
	if (ort2_packed_build(p, boxes, s->count) != ORT_OK) exit(1);
	th_time t1 = th_now();
	*sink = (bench_sink){0, 0};
	ort2_packed_find_pairs(p, th_pair, sink);
	th_time t2 = th_now();
	t[0] = th_since(t0, t1);
	t[1] = th_since(t1, t2);
	free(boxes);
	ort2_packed_destroy(p);
}

static void th_tree_1m(const scn_scene *s, ort_tasks *tasks, th_time t[3], bench_sink *sink)
{
	ort2_tree_def def = ort2_tree_default_def();
	def.tasks = tasks;
	ort2_tree *tree;
	if (ort2_tree_create(&def, &tree) != ORT_OK) exit(1);
	ort2_box *boxes = malloc(sizeof *boxes * (size_t)s->count);
	for (int i = 0; i < s->count; ++i) boxes[i] = scn_box2(s, i);
	th_time t0 = th_now();
	if (ort2_tree_build(tree, boxes, NULL, s->count, NULL) != ORT_OK) exit(1);
	th_time t1 = th_now();
	*sink = (bench_sink){0, 0};
	ort2_tree_find_pairs(tree, ORT_MASK_ALL, th_tree_pair, sink);
	th_time t2 = th_now();
	t[0] = th_since(t0, t1);
	t[1] = th_since(t1, t2);
	free(boxes);
	ort2_tree_destroy(tree);
}

static void th_s3(const scn_scene *s0, ort_tasks *tasks, th_time t[3], bench_sink *sink)
{
	scn_scene s;
	if (scn_scene_make(&s, SCN_UNIFORM, 2, s0->count, 20240601u) != 0) exit(1);
	ort2_tree_def def = ort2_tree_default_def();
	def.tasks = tasks;
	ort2_tree *tree;
	if (ort2_tree_create(&def, &tree) != ORT_OK) exit(1);
	ort_handle *h = malloc(sizeof *h * (size_t)s.count);
	for (int i = 0; i < s.count; ++i)
		if (ort2_tree_insert(tree, scn_box2(&s, i), NULL, &h[i]) != ORT_OK) exit(1);
	*sink = (bench_sink){0, 0};
	ort2_tree_update_pairs(tree, th_begin, th_end, sink);
	t[0] = (th_time){0, 0};
	for (int frame = 0; frame < 10; ++frame) {
		scn_scene_step(&s);
		th_time t0 = th_now();
		for (int i = 0; i < s.count; ++i) ort2_tree_move(tree, h[i], scn_box2(&s, i));
		ort2_tree_update_pairs(tree, th_begin, th_end, sink);
		th_time d = th_since(t0, th_now());
		t[0].wall += d.wall / 10;
		t[0].cpu += d.cpu / 10;
	}
	free(h);
	ort2_tree_destroy(tree);
	scn_scene_free(&s);
}

static void th_s5(const scn_scene *s, ort_tasks *tasks, th_time t[3], bench_sink *sink)
{
	int n = s->count;
	ort2_tree_def def = ort2_tree_default_def();
	def.tasks = tasks;
	ort2_tree *tree;
	if (ort2_tree_create(&def, &tree) != ORT_OK) exit(1);
	ort2_box *boxes = malloc(sizeof *boxes * (size_t)n);
	for (int i = 0; i < n; ++i) boxes[i] = scn_box2(s, i);
	th_time t0 = th_now();
	if (ort2_tree_build(tree, boxes, NULL, n, NULL) != ORT_OK) exit(1);
	th_time t1 = th_now();
	// Box queries of about ten hits each, and rays of length 50, one per box.
	float side = 3.0f * (s->boxes[0].max[0] - s->boxes[0].min[0]) + 2.0f;
	ort2_box *q = malloc(sizeof *q * (size_t)n);
	float(*org)[2] = malloc(sizeof *org * (size_t)n), (*dir)[2] = malloc(sizeof *dir * (size_t)n);
	float *len = malloc(sizeof *len * (size_t)n);
	scn_rng r = scn_rng_make(77);
	for (int i = 0; i < n; ++i) {
		for (int d = 0; d < 2; ++d) {
			q[i].min[d] = scn_rng_float(&r, s->world.min[d], s->world.max[d]);
			q[i].max[d] = q[i].min[d] + side;
			org[i][d] = q[i].min[d];
			dir[i][d] = scn_rng_float(&r, -1.0f, 1.0f);
		}
		len[i] = 50.0f;
	}
	int cap = 64 * n, *offsets = malloc(sizeof *offsets * (size_t)(n + 1)), total = 0;
	ort_handle *out = malloc(sizeof *out * (size_t)cap);
	ort2_ray_hit *hits = malloc(sizeof *hits * (size_t)cap);
	// Once untimed: the job buffers grow on first use.
	ort2_tree_query_boxes(tree, q, n, ORT_MASK_ALL, out, cap, offsets, &total);
	ort2_tree_query_rays(tree, (const float(*)[2])org, (const float(*)[2])dir, len, n, ORT_MASK_ALL, hits, cap,
	                     offsets, &total);
	th_time t2 = th_now();
	ort2_tree_query_boxes(tree, q, n, ORT_MASK_ALL, out, cap, offsets, &total);
	*sink = (bench_sink){0, 0};
	for (int i = 0; i < total && i < cap; ++i) bench_sink_id(sink, out[i].id);
	th_time t3 = th_now();
	ort2_tree_query_rays(tree, (const float(*)[2])org, (const float(*)[2])dir, len, n, ORT_MASK_ALL, hits, cap,
	                     offsets, &total);
	th_time t4 = th_now();
	for (int i = 0; i < total && i < cap; ++i) bench_sink_id(sink, hits[i].handle.id);
	t[0] = th_since(t0, t1);
	t[1] = th_since(t2, t3);
	t[2] = th_since(t3, t4);
	free(q), free(org), free(dir), free(len), free(offsets), free(out), free(hits), free(boxes);
	ort2_tree_destroy(tree);
}

static int th_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double th_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, th_cmp);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Run a row: rounds alternate which worker count goes first.
static void th_measure(th_row *row, th_run_fn *run, const scn_scene *s, ort_tasks *two, int rounds)
{
	for (int round = 0; round < rounds; ++round)
		for (int k = 0; k < 2; ++k) {
			int w = (round + k) % 2;
			bench_sink sink = {0, 0};
			run(s, w ? two : NULL, row->t[w][round], &sink);
			if (round == 0) row->sink[w] = sink;
			if (round == 0 && k == 1) row->mismatch = memcmp(&row->sink[0], &row->sink[1], sizeof sink) != 0;
		}
}

/// One line per phase (and a total): medians of the wall times, of the
/// same-round ratio, and of the CPU-time ratio (2-worker CPU / 1-worker CPU:
/// the work the split adds, which a loaded machine does not hide).
static void th_print(FILE *out, const th_row *row, int rounds)
{
	double w1[TH_ROUNDS_MAX], w2[TH_ROUNDS_MAX], ratio[TH_ROUNDS_MAX], cpu[TH_ROUNDS_MAX];
	for (int p = 0; p <= row->phases; ++p) {
		if (p == row->phases && row->phases == 1) break;
		for (int r = 0; r < rounds; ++r) {
			th_time a = {0, 0}, b = {0, 0};
			for (int q = 0; q < row->phases; ++q) {
				if (p != row->phases && q != p) continue;
				a.wall += row->t[0][r][q].wall, a.cpu += row->t[0][r][q].cpu;
				b.wall += row->t[1][r][q].wall, b.cpu += row->t[1][r][q].cpu;
			}
			w1[r] = a.wall, w2[r] = b.wall, ratio[r] = a.wall / b.wall, cpu[r] = b.cpu / a.cpu;
		}
		const char *what = p == row->phases ? "total" : row->phase_name[p];
		fprintf(out, "| %s | %s | %.1f | %.1f | %.2fx | %.2f |%s\n", row->name, what, 1e3 * th_median(w1, rounds),
		        1e3 * th_median(w2, rounds), th_median(ratio, rounds), th_median(cpu, rounds),
		        row->mismatch ? " MISMATCH" : "");
	}
}

int bench_threads_run(int quick, int rounds)
{
	if (rounds < 1) rounds = quick ? 1 : 5;
	if (rounds > TH_ROUNDS_MAX) rounds = TH_ROUNDS_MAX;
	ort_tasks_def def = ort_tasks_default_def();
	def.workers = 2;
	ort_tasks *two;
	if (ort_tasks_create(&def, &two) != ORT_OK) return 1;
	int n1m = quick ? 100000 : 1000000, n100k = quick ? 10000 : 100000;
	scn_scene big, mid;
	if (scn_scene_make(&big, SCN_UNIFORM, 2, n1m, 20240601u) != 0) return 1;
	if (scn_scene_make(&mid, SCN_UNIFORM, 2, n100k, 20240601u) != 0) return 1;
	static th_row rows[] = {
	    {.name = "uniform packed", .phases = 2, .phase_name = {"build", "pairs"}},
	    {.name = "uniform tree", .phases = 2, .phase_name = {"build", "pairs"}},
	    {.name = "S3 tree", .phases = 1, .phase_name = {"move + update_pairs"}},
	    {.name = "S5 tree", .phases = 3, .phase_name = {"build", "query_boxes", "query_rays"}},
	};
	th_run_fn *runs[] = {th_packed_1m, th_tree_1m, th_s3, th_s5};
	const scn_scene *scenes[] = {&big, &big, &mid, &mid};
	fprintf(stderr, "T: 1 vs 2 workers, %d and %d uniform boxes, %d rounds\n", n1m, n100k, rounds);
	int failures = 0;
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; ++i) {
		th_measure(&rows[i], runs[i], scenes[i], two, rounds);
		failures += rows[i].mismatch;
	}
	printf("\n### Threads: one worker against two (same run; speedup = median of 1-worker / 2-worker wall time;\n"
	       "CPU = median of 2-worker / 1-worker CPU time, the work splitting adds)\n\n");
	printf("| scene | phase | 1 worker ms | 2 workers ms | speedup | CPU |\n|---|---|---:|---:|---:|---:|\n");
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; ++i) th_print(stdout, &rows[i], rounds);
	scn_scene_free(&big);
	scn_scene_free(&mid);
	ort_tasks_destroy(two);
	return failures;
}

// scn_threads.c: orthant_bench's thread rows (--only T) — each call that can
// split its work, timed serially, with two workers (the built-in pool of
// ort_tasks) and inline on one core (th_inline_enqueue), in the same run with
// the order rotating, so the printed ratios (medians over rounds) compare like
// with like even on a machine whose load drifts, and the projected two-core
// speedup holds even when other processes take the second core.
//
// Rows: 1M uniform boxes (SCN_UNIFORM, 2D), build + find_pairs for the packed
// and the default tree; S3 (100k uniform boxes, all moving) and S4 (5% of
// them moving) update_pairs on the default tree (S3 twice: a move call per
// box, and the frame's moves in one move_many batch); S5 (100k static boxes) build and batched box and ray
// queries. The three ways are checked to report the same count and checksum.
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "scene.h"

#define TH_ROUNDS_MAX 15

/// CPU seconds spent inside the inline task system's tasks so far.
static double g_th_par;

/// A moment: wall-clock seconds, the process's CPU seconds (all threads), and g_th_par.
typedef struct th_time {
	double wall, cpu, par;
} th_time;

static double th_seconds(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static th_time th_now(void)
{
	return (th_time){th_seconds(CLOCK_MONOTONIC), th_seconds(CLOCK_PROCESS_CPUTIME_ID), g_th_par};
}

static th_time th_since(th_time a, th_time b) { return (th_time){b.wall - a.wall, b.cpu - a.cpu, b.par - a.par}; }

/// A build + pairs row's two phases from its three clock readings.
static void th_build_pairs(th_time t[3], th_time t0, th_time t1, th_time t2)
{
	t[0] = th_since(t0, t1);
	t[1] = th_since(t1, t2);
}

// A task system that runs every task at once on the calling thread, timing it:
// the split calls then take their parallel path on one core, and the CPU time
// inside the tasks (par) against the whole call's gives what two idle cores
// could do — (serial CPU) / (call CPU - par / 2) — however loaded this machine is.
static void *th_inline_enqueue(ort_task_fn *task, int count, int min_range, void *task_ctx, void *user)
{
	(void)min_range, (void)user;
	double t0 = th_seconds(CLOCK_THREAD_CPUTIME_ID);
	task(0, count, 0, task_ctx);
	g_th_par += th_seconds(CLOCK_THREAD_CPUTIME_ID) - t0;
	return NULL; // done: finish is not called
}

static void th_inline_finish(void *handle, void *user) { (void)handle, (void)user; }

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
	th_time t[3][TH_ROUNDS_MAX][3]; ///< [serial, the pool's 2 workers, inline][round][phase]
	bench_sink sink[3];
	bool mismatch;
} th_row;

/// What a row's run does with one context (NULL: serial): fills t[phase].
typedef void th_run_fn(const scn_scene *s, ort_tasks *tasks, th_time t[3], bench_sink *sink);

/// A tree whose jobs run on tasks (NULL: serial).
static ort2_tree *th_tree_make(ort_tasks *tasks)
{
	ort2_tree_def def = ort2_tree_default_def();
	def.tasks = tasks;
	ort2_tree *tree;
	if (ort2_tree_create(&def, &tree) != ORT_OK) exit(1);
	return tree;
}

/// The scene's boxes as an array (free it).
static ort2_box *th_boxes(const scn_scene *s)
{
	ort2_box *boxes = malloc(sizeof *boxes * (size_t)s->count);
	for (int i = 0; i < s->count; ++i) boxes[i] = scn_box2(s, i);
	return boxes;
}

static void th_packed_1m(const scn_scene *s, ort_tasks *tasks, th_time t[3], bench_sink *sink)
{
	ort2_packed_def def = ort2_packed_default_def();
	def.tasks = tasks;
	ort2_packed *p;
	if (ort2_packed_create(&def, &p) != ORT_OK) exit(1);
	ort2_box *boxes = th_boxes(s);
	// A first build makes the arrays; a rebuild (a frame) is what is timed.
	if (ort2_packed_build(p, boxes, s->count) != ORT_OK) exit(1);
	th_time t0 = th_now();
	if (ort2_packed_build(p, boxes, s->count) != ORT_OK) exit(1);
	th_time t1 = th_now();
	*sink = (bench_sink){0, 0};
	ort2_packed_find_pairs(p, th_pair, sink);
	th_time t2 = th_now();
	th_build_pairs(t, t0, t1, t2);
	free(boxes);
	ort2_packed_destroy(p);
}

static void th_tree_1m(const scn_scene *s, ort_tasks *tasks, th_time t[3], bench_sink *sink)
{
	ort2_tree *tree = th_tree_make(tasks);
	ort2_box *boxes = th_boxes(s);
	th_time t0 = th_now();
	if (ort2_tree_build(tree, boxes, NULL, s->count, NULL) != ORT_OK) exit(1);
	th_time t1 = th_now();
	*sink = (bench_sink){0, 0};
	ort2_tree_find_pairs(tree, ORT_MASK_ALL, th_tree_pair, sink);
	th_time t2 = th_now();
	th_build_pairs(t, t0, t1, t2);
	free(boxes);
	ort2_tree_destroy(tree);
}

/// Ten frames of move + update_pairs on the default tree, `moving` of the
/// boxes moving each frame (only those are moved): S3 (all, one find_pairs
/// pass) or S4 (5%, a query per mover); batch: the frame's moves in one
/// ort2_tree_move_many call, else one ort2_tree_move per box.
static void th_frames(const scn_scene *s0, ort_tasks *tasks, th_time t[3], bench_sink *sink, float moving, bool batch)
{
	scn_scene s;
	if (scn_scene_make(&s, SCN_UNIFORM, 2, s0->count, 20240601u) != 0) exit(1);
	s.moving_fraction = moving;
	ort2_tree *tree = th_tree_make(tasks);
	ort_handle *h = malloc(sizeof *h * (size_t)s.count), *mh = malloc(sizeof *mh * (size_t)s.count);
	ort2_box *was = malloc(sizeof *was * (size_t)s.count), *mb = malloc(sizeof *mb * (size_t)s.count);
	for (int i = 0; i < s.count; ++i)
		if (ort2_tree_insert(tree, was[i] = scn_box2(&s, i), NULL, &h[i]) != ORT_OK) exit(1);
	*sink = (bench_sink){0, 0};
	ort2_tree_update_pairs(tree, th_begin, th_end, sink);
	t[0] = (th_time){0, 0, 0};
	for (int frame = 0; frame < 10; ++frame) {
		scn_scene_step(&s);
		th_time t0 = th_now();
		int moved = 0;
		for (int i = 0; i < s.count; ++i) {
			ort2_box b = scn_box2(&s, i);
			if (moving < 1.0f && !memcmp(&b, &was[i], sizeof b)) continue;
			was[i] = b;
			if (!batch) {
				ort2_tree_move(tree, h[i], b);
				continue;
			}
			mh[moved] = h[i];
			mb[moved++] = b;
		}
		if (batch) ort2_tree_move_many(tree, mh, mb, moved);
		ort2_tree_update_pairs(tree, th_begin, th_end, sink);
		th_time d = th_since(t0, th_now());
		t[0].wall += d.wall / 10;
		t[0].cpu += d.cpu / 10;
		t[0].par += d.par / 10;
	}
	free(h), free(mh);
	free(was), free(mb);
	ort2_tree_destroy(tree);
	scn_scene_free(&s);
}

static void th_s3(const scn_scene *s, ort_tasks *tasks, th_time t[3], bench_sink *sink)
{
	th_frames(s, tasks, t, sink, 1.0f, false);
}

static void th_s3_batch(const scn_scene *s, ort_tasks *tasks, th_time t[3], bench_sink *sink)
{
	th_frames(s, tasks, t, sink, 1.0f, true);
}

static void th_s4(const scn_scene *s, ort_tasks *tasks, th_time t[3], bench_sink *sink)
{
	th_frames(s, tasks, t, sink, 0.05f, false);
}

static void th_s5(const scn_scene *s, ort_tasks *tasks, th_time t[3], bench_sink *sink)
{
	int n = s->count;
	ort2_tree *tree = th_tree_make(tasks);
	ort2_box *boxes = th_boxes(s);
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

/// Run a row: serially, on the pool's two workers and inline, the order
/// rotating from round to round.
static void th_measure(th_row *row, th_run_fn *run, const scn_scene *s, ort_tasks *ctx[3], int rounds)
{
	for (int round = 0; round < rounds; ++round)
		for (int k = 0; k < 3; ++k) {
			int w = (round + k) % 3;
			bench_sink sink = {0, 0};
			run(s, ctx[w], row->t[w][round], &sink);
			if (round == 0) row->sink[w] = sink;
		}
	row->mismatch = memcmp(&row->sink[0], &row->sink[1], sizeof row->sink[0]) != 0 ||
	                memcmp(&row->sink[0], &row->sink[2], sizeof row->sink[0]) != 0;
}

/// One line per phase (and a total): medians of the wall times, of the
/// same-round speedup, of the CPU-time ratio (2-worker CPU / serial CPU: the
/// work the split adds, which a loaded machine does not hide), and of the
/// projected 2-core speedup from the inline run (see th_inline_enqueue).
static void th_print(FILE *out, const th_row *row, int rounds)
{
	double w1[TH_ROUNDS_MAX], w2[TH_ROUNDS_MAX], ratio[TH_ROUNDS_MAX], cpu[TH_ROUNDS_MAX], proj[TH_ROUNDS_MAX];
	for (int p = 0; p <= row->phases; ++p) {
		if (p == row->phases && row->phases == 1) break;
		for (int r = 0; r < rounds; ++r) {
			th_time sum[3] = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
			for (int q = 0; q < row->phases; ++q) {
				if (p != row->phases && q != p) continue;
				for (int w = 0; w < 3; ++w) {
					sum[w].wall += row->t[w][r][q].wall;
					sum[w].cpu += row->t[w][r][q].cpu;
					sum[w].par += row->t[w][r][q].par;
				}
			}
			w1[r] = sum[0].wall, w2[r] = sum[1].wall, ratio[r] = sum[0].wall / sum[1].wall;
			cpu[r] = sum[1].cpu / sum[0].cpu;
			proj[r] = sum[0].cpu / (sum[2].cpu - sum[2].par / 2);
		}
		const char *what = p == row->phases ? "total" : row->phase_name[p];
		fprintf(out, "| %s | %s | %.1f | %.1f | %.2fx | %.2f | %.2fx |%s\n", row->name, what,
		        1e3 * th_median(w1, rounds), 1e3 * th_median(w2, rounds), th_median(ratio, rounds),
		        th_median(cpu, rounds), th_median(proj, rounds), row->mismatch ? " MISMATCH" : "");
	}
}

int bench_threads_run(int quick, int rounds)
{
	if (rounds < 1) rounds = quick ? 1 : 5;
	if (rounds > TH_ROUNDS_MAX) rounds = TH_ROUNDS_MAX;
	ort_tasks_def def = ort_tasks_default_def();
	def.workers = 2;
	ort_tasks *ctx[3] = {NULL, NULL, NULL};
	if (ort_tasks_create(&def, &ctx[1]) != ORT_OK) return 1;
	def.enqueue = th_inline_enqueue;
	def.finish = th_inline_finish;
	if (ort_tasks_create(&def, &ctx[2]) != ORT_OK) return 1;
	int n1m = quick ? 100000 : 1000000, n100k = quick ? 10000 : 100000;
	scn_scene big, mid;
	if (scn_scene_make(&big, SCN_UNIFORM, 2, n1m, 20240601u) != 0) return 1;
	if (scn_scene_make(&mid, SCN_UNIFORM, 2, n100k, 20240601u) != 0) return 1;
	static th_row rows[] = {
	    {.name = "uniform packed", .phases = 2, .phase_name = {"build", "pairs"}},
	    {.name = "uniform tree", .phases = 2, .phase_name = {"build", "pairs"}},
	    {.name = "S3 tree", .phases = 1, .phase_name = {"move + update_pairs"}},
	    {.name = "S3 tree", .phases = 1, .phase_name = {"move_many + update_pairs"}},
	    {.name = "S4 tree", .phases = 1, .phase_name = {"move + update_pairs"}},
	    {.name = "S5 tree", .phases = 3, .phase_name = {"build", "query_boxes", "query_rays"}},
	};
	th_run_fn *runs[] = {th_packed_1m, th_tree_1m, th_s3, th_s3_batch, th_s4, th_s5};
	const scn_scene *scenes[] = {&big, &big, &mid, &mid, &mid, &mid};
	fprintf(stderr, "T: 1 vs 2 workers, %d and %d uniform boxes, %d rounds\n", n1m, n100k, rounds);
	int failures = 0;
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; ++i) {
		th_measure(&rows[i], runs[i], scenes[i], ctx, rounds);
		failures += rows[i].mismatch;
	}
	printf("\n### Threads: one worker against two (same run; medians over rounds)\n\n"
	       "speedup: 1-worker / 2-worker wall time. CPU: 2-worker / 1-worker CPU time, the work the split\n"
	       "adds. projected: serial CPU / (CPU of the parallel path on one core - half its CPU inside\n"
	       "tasks), what two idle cores could give, measured on one core so that load does not hide it.\n\n");
	printf("| scene | phase | 1 worker ms | 2 workers ms | speedup | CPU | projected |\n"
	       "|---|---|---:|---:|---:|---:|---:|\n");
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; ++i) th_print(stdout, &rows[i], rounds);
	scn_scene_free(&big);
	scn_scene_free(&mid);
	ort_tasks_destroy(ctx[1]);
	ort_tasks_destroy(ctx[2]);
	return failures;
}

// scn_bigworld.c: what the big-static-world scenario and the first-update
// measurement need beyond the shared scenes.
//  - A big static world: millions of boxes of which a fixed few move every
//    frame (every stride-th box), the rest never. Engines keep such boxes apart
//    (a static tree, a non-moving layer), so the frame says which boxes ever
//    move (bench_frame.mobile).
//  - The first update_pairs: a tree just built, then its first update_pairs
//    (which reports every pair as begun) against find_pairs on the same tree,
//    on a scene of identical boxes (every pair overlaps) and on uniform boxes.
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_extra.h"
#include "orthant/orthant2.h"
#include "scene.h"

unsigned char *bench_bigworld_mobile(int count, int stride)
{
	unsigned char *m = calloc((size_t)count, 1);
	if (!m) return NULL;
	for (int i = 0; i < count; i += stride) m[i] = 1;
	return m;
}

// One tick for the boxes i % stride == 0, the motion of scn_scene_step
// (constant velocity, bouncing off the world's walls).
void bench_bigworld_step(scn_scene *s, int stride)
{
	for (int i = 0; i < s->count; i += stride) {
		ort3_box *b = &s->boxes[i];
		for (int d = 0; d < s->dim; ++d) {
			float v = s->vel[i][d];
			b->min[d] += v;
			b->max[d] += v;
			if (b->min[d] < s->world.min[d] || b->max[d] > s->world.max[d]) {
				float o = b->min[d] < s->world.min[d] ? s->world.min[d] - b->min[d] : s->world.max[d] - b->max[d];
				b->min[d] += o;
				b->max[d] += o;
				s->vel[i][d] = -v;
			}
		}
	}
}

// ---------------------------------------------------------------- first update_pairs

static bool fu_pair(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)a;
	(void)b;
	bench_sink_pair(ctx, (uint32_t)(uintptr_t)ua, (uint32_t)(uintptr_t)ub);
	return true;
}

static void fu_begin(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub) { fu_pair(ctx, a, b, ua, ub); }

static ort2_tree *fu_build(const ort2_box *boxes, void **user, int n, ort2_box world, ort_handle *handles)
{
	ort2_tree_def def = ort2_tree_default_def();
	def.region = world;
	def.use_region = true;
	def.item_capacity = n;
	ort2_tree *t = NULL;
	if (ort2_tree_create(&def, &t) != ORT_OK) return NULL;
	if (ort2_tree_build(t, boxes, user, n, handles) != ORT_OK) {
		ort2_tree_destroy(t);
		return NULL;
	}
	return t;
}

// Times (seconds) of find_pairs and of the first update_pairs on trees built
// from the same boxes, and of the next update_pairs after one box moved (in
// place: no event; it pays for what the first one left to do); returns -1
// when they disagree or a call fails.
static int fu_measure(const ort2_box *boxes, int n, ort2_box world, double *t_find, double *t_first, double *t_next,
                      uint64_t *pairs, double *mb_find, double *mb_first)
{
	void **user = malloc(sizeof *user * (size_t)n);
	ort_handle *handles = malloc(sizeof *handles * (size_t)n);
	if (!user || !handles) {
		free(user);
		free(handles);
		return -1;
	}
	for (int i = 0; i < n; ++i) user[i] = (void *)(uintptr_t)i;
	bench_sink a = {0, 0}, b = {0, 0};
	int rc = 0;
	ort2_tree *t = fu_build(boxes, user, n, world, NULL);
	size_t h0 = bench_heap();
	double t0 = bench_now();
	if (!t || ort2_tree_find_pairs(t, ORT_MASK_ALL, fu_pair, &a) != ORT_OK) rc = -1;
	*t_find = bench_now() - t0;
	*mb_find = (double)(bench_heap() - h0) / 1048576.0;
	ort2_tree_destroy(t);
	t = fu_build(boxes, user, n, world, handles);
	h0 = bench_heap();
	t0 = bench_now();
	if (!t || ort2_tree_update_pairs(t, fu_begin, NULL, &b) != ORT_OK) rc = -1;
	*t_first = bench_now() - t0;
	bench_sink c = {0, 0};
	if (t && ort2_tree_move(t, handles[0], boxes[0]) != ORT_OK) rc = -1;
	t0 = bench_now();
	if (!t || ort2_tree_update_pairs(t, fu_begin, fu_begin, &c) != ORT_OK || c.count != 0) rc = -1;
	*t_next = bench_now() - t0;
	*mb_first = (double)(bench_heap() - h0) / 1048576.0;
	ort2_tree_destroy(t);
	free(user);
	free(handles);
	*pairs = a.count;
	if (a.count != b.count || a.sum != b.sum) rc = -1;
	return rc;
}

/// Measurements a row of the table takes (one in quick mode).
#define FU_REPS 5

int bench_first_update(FILE *out, int quick)
{
	// group: boxes a set of identical ones holds (0: a uniform scene). Groups
	// of 32 are where the first update's own costs (a record written and
	// its page mapped, then reported, a pair) weigh most against find_pairs,
	// whose loose walk meets such piles at a few ns a pair.
	struct {
		const char *what;
		int n;
		int group;
	} cases[3] = {{"identical boxes", quick ? 2000 : 10000, quick ? 2000 : 10000},
	              {"groups of 32 identical boxes", 20000, 32},
	              {"uniform boxes", quick ? 50000 : 1000000, 0}};
	int failures = 0;
	fprintf(out, "\n### F1 — first update_pairs on a tree just built vs find_pairs on it (orthant, default tree; medians of %d)\n\n",
	        quick ? 1 : FU_REPS);
	fprintf(out, "| scene | n | pairs | find_pairs ms | first update_pairs ms | ratio | then 1 move: update_pairs ms | "
	             "heap kept by find_pairs, both updates (MB) | check |\n");
	fprintf(out, "|---|---:|---:|---:|---:|---:|---:|---:|---|\n");
	for (int c = 0; c < 3; ++c) {
		int n = cases[c].n;
		fprintf(stderr, "F1: first update_pairs, %d %s\n", n, cases[c].what);
		ort2_box *boxes = malloc(sizeof *boxes * (size_t)n);
		ort2_box world = {{0, 0}, {1, 1}};
		if (!boxes) return 1;
		if (cases[c].group == n) {
			for (int i = 0; i < n; ++i) boxes[i] = (ort2_box){{0.25f, 0.25f}, {0.75f, 0.75f}};
		} else if (cases[c].group) {
			// Each group's box drawn once, sides 0.5-3 in a world holding
			// about one group pair per group (as the uniform scenes' density).
			int groups = (n + cases[c].group - 1) / cases[c].group;
			float side = 3.5f * sqrtf((float)groups);
			world = (ort2_box){{0, 0}, {side, side}};
			uint64_t rng = 0x9e3779b97f4a7c15u;
			for (int g = 0; g < groups; ++g) {
				float v[3];
				for (int k = 0; k < 3; ++k) {
					rng = rng * 6364136223846793005u + 1442695040888963407u;
					v[k] = (float)(rng >> 40) * (1.0f / 16777216.0f);
				}
				float s = 0.5f + 2.5f * v[2];
				ort2_box b = {{v[0] * (side - s), v[1] * (side - s)}, {v[0] * (side - s) + s, v[1] * (side - s) + s}};
				for (int i = g * cases[c].group; i < n && i < (g + 1) * cases[c].group; ++i) boxes[i] = b;
			}
		} else {
			scn_scene s;
			if (scn_scene_make(&s, SCN_UNIFORM, 2, n, 20240601u) != 0) {
				free(boxes);
				return 1;
			}
			for (int i = 0; i < n; ++i) boxes[i] = scn_box2(&s, i);
			world = (ort2_box){{s.world.min[0], s.world.min[1]}, {s.world.max[0], s.world.max[1]}};
			scn_scene_free(&s);
		}
		// FU_REPS measurements, each on trees built afresh; the medians of
		// the times and of the same-measurement ratios are reported (a row of
		// a few ms, timed once, read 1.8 to 2.3 from run to run); the heap
		// figures are the first measurement's.
		double tfs[FU_REPS], tus[FU_REPS], tns[FU_REPS], ratio[FU_REPS], mf = 0, mu = 0;
		uint64_t pairs = 0;
		int rc = 0, reps = quick ? 1 : FU_REPS;
		for (int r = 0; r < reps; ++r) {
			double m1 = 0, m2 = 0;
			rc |= fu_measure(boxes, n, world, &tfs[r], &tus[r], &tns[r], &pairs, &m1, &m2);
			if (r == 0) mf = m1, mu = m2;
			ratio[r] = tus[r] / tfs[r];
		}
		double tf = bench_median(tfs, reps), tu = bench_median(tus, reps), tn = bench_median(tns, reps);
		fprintf(out, "| %s | %d | %llu | %.3f | %.3f | %.2f | %.3f | %.1f, %.1f | %s |\n", cases[c].what, n,
		        (unsigned long long)pairs, tf * 1e3, tu * 1e3, bench_median(ratio, reps), tn * 1e3, mf, mu,
		        rc == 0 ? "ok" : "MISMATCH");
		fprintf(stderr, "  find_pairs %.3f ms, first update_pairs %.3f ms, then 1 move %.3f ms%s\n", tf * 1e3,
		        tu * 1e3, tn * 1e3, rc == 0 ? "" : "  MISMATCH");
		free(boxes);
		failures += rc != 0;
	}
	return failures;
}

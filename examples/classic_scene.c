// classic_scene.c: the classic collision step without a window, measured. Each
// frame moves every box, brings the tree up to date and finds all pairs; the
// table compares brute force with every placement, both ways of keeping the
// tree current (rebuild every frame, as the bouncing-boxes demo does, or move
// each item), and the incremental broad phase: the answer to whether a tree
// rebuilt every frame could be kept up to date instead;
// last, the packed tree rebuilt every frame. Every method's pairs per frame must
// equal brute force's.
//
//   orthant_classic_scene [count] [frames] [bouncing|uniform] [moving fraction]
//     bouncing: the bouncing-boxes demo's boxes (side 1..20, speed <= 10) in 600x800 (default, 1000 boxes)
//     uniform:  small boxes (side 0.5..2) spread so each overlaps 1-3 others
//     moving fraction: the share of boxes that move each frame (default 1); only
//     boxes that moved are passed to move, as a game would.
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scene.h"

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static bool count_pair(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)a, (void)b, (void)ua, (void)ub;
	++*(long *)ctx;
	return true;
}

static void on_begin(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)a, (void)b, (void)ua, (void)ub;
	++*(long *)ctx;
}

static void on_end(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)a, (void)b, (void)ua, (void)ub;
	--*(long *)ctx;
}

static long brute_pairs(const scn_scene *s)
{
	long n = 0;
	for (int i = 0; i < s->count; ++i) {
		ort2_box a = scn_box2(s, i);
		for (int j = i + 1; j < s->count; ++j) {
			ort2_box b = scn_box2(s, j);
			if (a.min[0] <= b.max[0] && b.min[0] <= a.max[0] && a.min[1] <= b.max[1] && b.min[1] <= a.max[1]) n++;
		}
	}
	return n;
}

static bool count_id_pair(void *ctx, uint32_t a, uint32_t b)
{
	(void)a, (void)b;
	++*(long *)ctx;
	return true;
}

/// The packed tree, rebuilt from the boxes every frame: pairs over n_frames.
static long packed_pairs(scn_scene *s, int n_frames, double *us)
{
	ort2_packed_def def = ort2_packed_default_def();
	def.region = (ort2_box){{s->world.min[0], s->world.min[1]}, {s->world.max[0], s->world.max[1]}};
	def.use_region = true;
	ort2_packed *tree;
	ort2_box *boxes = malloc(sizeof *boxes * (size_t)s->count);
	if (!boxes || ort2_packed_create(&def, &tree) != ORT_OK) exit(1);
	long pairs = 0;
	double t0 = now_us();
	for (int f = 0; f < n_frames; ++f) {
		scn_scene_step(s);
		for (int i = 0; i < s->count; ++i) boxes[i] = scn_box2(s, i);
		ort2_packed_build(tree, boxes, s->count);
		ort2_packed_find_pairs(tree, count_id_pair, &pairs);
	}
	*us = (now_us() - t0) / n_frames;
	ort2_packed_destroy(tree);
	free(boxes);
	return pairs;
}

enum { KEEP_REBUILD, KEEP_MOVE, KEEP_BROADPHASE, KEEP_COUNT };
static const char *keep_names[KEEP_COUNT] = {"rebuild", "move", "move+update_pairs"};

int main(int argc, char **argv)
{
	int count = argc > 1 ? atoi(argv[1]) : 1000;
	int frames = argc > 2 ? atoi(argv[2]) : 200;
	scn_kind kind = argc > 3 && strcmp(argv[3], "uniform") == 0 ? SCN_UNIFORM : SCN_BOUNCING;
	float moving = argc > 4 ? (float)atof(argv[4]) : 1.0f;
	if (count < 2 || frames < 1 || (argc > 3 && kind == SCN_BOUNCING && strcmp(argv[3], "bouncing") != 0) ||
	    !(moving > 0.0f && moving <= 1.0f)) {
		fprintf(stderr, "usage: orthant_classic_scene [count >= 2] [frames >= 1] [bouncing|uniform] [moving 0..1]\n");
		return 2;
	}
	printf("%s scene: %d boxes, %d frames, %.0f%% moving; per frame: move, update, all pairs\n",
	       kind == SCN_BOUNCING ? "bouncing boxes (600x800)" : "uniform small boxes", count, frames,
	       (double)moving * 100.0);
	printf("%-8s %-18s %12s %12s %10s\n", "placement", "keeping current", "pairs/frame", "us/frame", "vs brute");
	// Brute force is O(n^2): time it on as few frames as give a stable figure.
	int brute_frames = frames;
	while (brute_frames > 1 && (double)count * count * brute_frames > 4e9) brute_frames /= 2;
	double brute_us = 0;
	long brute_total = 0;
	int status = 0;
	for (int method = -1; method < ORT_PLACEMENT_COUNT * KEEP_COUNT; ++method) {
		scn_scene s;
		if (scn_scene_make(&s, kind, 2, count, 1) != 0) return 1;
		s.moving_fraction = moving;
		ort2_tree_def def = ort2_tree_default_def();
		def.region = (ort2_box){{s.world.min[0], s.world.min[1]}, {s.world.max[0], s.world.max[1]}};
		def.use_region = true;
		def.placement = method < 0 ? ORT_PLACEMENT_LOOSE : (ort_placement)(method / KEEP_COUNT);
		int keep = method < 0 ? 0 : method % KEEP_COUNT;
		ort2_tree *tree;
		if (ort2_tree_create(&def, &tree) != ORT_OK) return 1;
		ort_handle *h = malloc(sizeof *h * (size_t)count);
		ort2_box *boxes = malloc(sizeof *boxes * (size_t)count);
		for (int i = 0; i < count; ++i) boxes[i] = scn_box2(&s, i);
		ort2_tree_build(tree, boxes, NULL, count, h);
		long live = 0;
		if (keep == KEEP_BROADPHASE) ort2_tree_update_pairs(tree, on_begin, on_end, &live);
		int n_frames = method < 0 ? brute_frames : frames;
		long pairs = 0;
		double t0 = now_us();
		for (int f = 0; f < n_frames; ++f) {
			scn_scene_step(&s);
			if (method < 0) {
				pairs += brute_pairs(&s);
				continue;
			}
			if (keep == KEEP_REBUILD) {
				for (int i = 0; i < count; ++i) boxes[i] = scn_box2(&s, i);
				ort2_tree_clear(tree);
				ort2_tree_build(tree, boxes, NULL, count, h);
			} else {
				for (int i = 0; i < count; ++i) {
					ort2_box b = scn_box2(&s, i);
					if (memcmp(&b, &boxes[i], sizeof b) == 0) continue; // did not move
					boxes[i] = b;
					ort2_tree_move(tree, h[i], b);
				}
			}
			if (keep == KEEP_BROADPHASE) {
				ort2_tree_update_pairs(tree, on_begin, on_end, &live);
				pairs += live;
			} else {
				ort2_tree_find_pairs(tree, ORT_MASK_ALL, count_pair, &pairs);
			}
		}
		double us = (now_us() - t0) / n_frames;
		if (method < 0) {
			brute_us = us;
			brute_total = pairs;
			printf("%-8s %-18s %12.1f %12.1f %9.2fx\n", "-", "brute force", (double)pairs / n_frames, us, 1.0);
		} else {
			printf("%-8s %-18s %12.1f %12.1f %9.3fx\n", ort_placement_string(def.placement), keep_names[keep],
			       (double)pairs / n_frames, us, us / brute_us);
			// The same scene, frame for frame: the first frames must agree.
			if (n_frames == brute_frames && pairs != brute_total) status = 1;
		}
		free(h);
		free(boxes);
		ort2_tree_destroy(tree);
		scn_scene_free(&s);
	}
	scn_scene s;
	if (scn_scene_make(&s, kind, 2, count, 1) != 0) return 1;
	s.moving_fraction = moving;
	double us;
	long pairs = packed_pairs(&s, frames, &us);
	printf("%-8s %-18s %12.1f %12.1f %9.3fx\n", "packed", "rebuild", (double)pairs / frames, us, us / brute_us);
	if (frames == brute_frames && pairs != brute_total) status = 1;
	scn_scene_free(&s);
	if (status) fprintf(stderr, "orthant_classic_scene: a method's pairs differ from brute force\n");
	return status;
}

// seed_scene.c: seed 001's bouncing boxes without a window — each frame moves
// every box, updates the tree and finds all pairs; prints pairs per frame and
// the time of the collision step for each placement against brute force.
//
//   orthant_seed_scene [count] [frames]     (default 1000 boxes, 200 frames)
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
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

int main(int argc, char **argv)
{
	int count = argc > 1 ? atoi(argv[1]) : 1000;
	int frames = argc > 2 ? atoi(argv[2]) : 200;
	if (count < 1 || frames < 1) {
		fprintf(stderr, "usage: orthant_seed_scene [count >= 1] [frames >= 1]\n");
		return 2;
	}
	printf("seed 001 scene: %d boxes (side 1..20, speed <= 10) in 600x800, %d frames\n", count, frames);
	printf("%-22s %12s %14s %10s\n", "method", "pairs/frame", "us/frame", "vs brute");
	double brute_us = 0;
	for (int method = -1; method < ORT_PLACEMENT_COUNT; ++method) {
		scn_scene s;
		if (scn_scene_make(&s, SCN_BOUNCING, 2, count, 1) != 0) return 1;
		ort2_tree_def def = ort2_tree_default_def();
		def.region = (ort2_box){{0, 0}, {600, 800}};
		def.use_region = true;
		def.placement = method < 0 ? ORT_PLACEMENT_LOOSE : (ort_placement)method;
		ort2_tree *tree;
		if (ort2_tree_create(&def, &tree) != ORT_OK) return 1;
		ort_handle *h = malloc(sizeof *h * (size_t)count);
		for (int i = 0; i < count; ++i) ort2_tree_insert(tree, scn_box2(&s, i), NULL, &h[i]);
		long pairs = 0;
		double t0 = now_us();
		for (int f = 0; f < frames; ++f) {
			scn_scene_step(&s);
			if (method < 0) {
				pairs += brute_pairs(&s);
				continue;
			}
			for (int i = 0; i < count; ++i) ort2_tree_move(tree, h[i], scn_box2(&s, i));
			ort2_tree_find_pairs(tree, ORT_MASK_ALL, count_pair, &pairs);
		}
		double us = (now_us() - t0) / frames;
		if (method < 0) brute_us = us;
		char name[64];
		snprintf(name, sizeof name, "%s", method < 0 ? "brute force" : ort_placement_string(def.placement));
		printf("%-22s %12.1f %14.1f %9.2fx\n", name, (double)pairs / frames, us, us / brute_us);
		free(h);
		ort2_tree_destroy(tree);
		scn_scene_free(&s);
	}
	return 0;
}

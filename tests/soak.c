// soak.c: the bouncing-boxes scene for many frames with incremental updates — every
// box moves (ortN_tree_move) and all pairs are found (ortN_tree_find_pairs)
// each frame; every 100th frame the broad phase also reports what began and
// ended (ortN_tree_update_pairs), replayed into a pair count. Memory must stay
// flat after warm-up (bytes in use, as the library reports them), the tree
// must validate, and both pair counts must equal brute force at checkpoints
// and at the end.
//
//   soak [frames] [boxes]       (default 1,000,000 frames of 1,000 boxes)
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "scene.h"

static long live_pairs;

static void on_begin(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)ctx, (void)a, (void)b, (void)ua, (void)ub;
	live_pairs++;
}

static void on_end(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)ctx, (void)a, (void)b, (void)ua, (void)ub;
	live_pairs--;
}

static long brute_pairs(const scn_scene *s)
{
	long n = 0;
	for (int i = 0; i < s->count; ++i)
		for (int j = i + 1; j < s->count; ++j) {
			const ort3_box *a = &s->boxes[i], *b = &s->boxes[j];
			if (a->min[0] <= b->max[0] && b->min[0] <= a->max[0] && a->min[1] <= b->max[1] && b->min[1] <= a->max[1])
				n++;
		}
	return n;
}

static bool count_pair(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)a, (void)b, (void)ua, (void)ub;
	++*(long *)ctx;
	return true;
}

static int fail(const char *what, long frame)
{
	fprintf(stderr, "soak: %s at frame %ld\n", what, frame);
	return 1;
}

int main(int argc, char **argv)
{
	long frames = argc > 1 ? atol(argv[1]) : 1000000;
	int count = argc > 2 ? atoi(argv[2]) : 1000;
	scn_scene s;
	if (frames < 1 || count < 2 || scn_scene_make(&s, SCN_BOUNCING, 2, count, 42) != 0) return 2;
	ort2_tree_def def = ort2_tree_default_def();
	def.region = (ort2_box){{0, 0}, {600, 800}};
	def.use_region = true;
	ort2_tree *t;
	if (ort2_tree_create(&def, &t) != ORT_OK) return 1;
	ort_handle *h = malloc(sizeof *h * (size_t)count);
	for (int i = 0; i < count; ++i)
		if (ort2_tree_insert(t, scn_box2(&s, i), NULL, &h[i]) != ORT_OK) return fail("insert", 0);
	long warm = frames / 100 < 1000 ? (frames < 1000 ? frames / 2 : 1000) : frames / 100;
	size_t bytes_warm = 0, bytes_max = 0;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long f = 1; f <= frames; ++f) {
		scn_scene_step(&s);
		for (int i = 0; i < count; ++i)
			if (ort2_tree_move(t, h[i], scn_box2(&s, i)) != ORT_OK) return fail("move", f);
		long found = 0;
		if (ort2_tree_find_pairs(t, ORT_MASK_ALL, count_pair, &found) != ORT_OK) return fail("find_pairs", f);
		if (f % 100 == 0 && ort2_tree_update_pairs(t, on_begin, on_end, NULL) != ORT_OK) return fail("update_pairs", f);
		ort_tree_stats st;
		ort2_tree_get_stats(t, &st);
		if (f == warm) bytes_warm = st.bytes;
		if (f > warm && st.bytes > bytes_max) bytes_max = st.bytes;
		if (f % 100000 == 0 || f == frames) {
			if (f % 100 != 0 && ort2_tree_update_pairs(t, on_begin, on_end, NULL) != ORT_OK)
				return fail("update_pairs", f);
			char msg[200];
			if (ort2_tree_validate(t, msg, sizeof msg) != ORT_OK) return fail(msg, f);
			long want = brute_pairs(&s);
			if (found != want) return fail("find_pairs differs from brute force", f);
			if (live_pairs != want || ort2_tree_pair_count(t) != want) return fail("the broad phase differs from brute force", f);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	printf("soak: %ld frames of %d boxes in %.1f s (%.1f us a frame), %ld pairs now\n", frames, count, secs,
	       secs / (double)frames * 1e6, live_pairs);
	printf("soak: bytes in use %zu after %ld warm-up frames, at most %zu after\n", bytes_warm, warm, bytes_max);
	if (frames > warm && bytes_max > bytes_warm) return fail("memory grew after warm-up", frames);
	free(h);
	ort2_tree_destroy(t);
	scn_scene_free(&s);
	return 0;
}

// knn_mask.c: the k nearest things of one kind. Every item has a category
// (ort_filter); ort2_tree_nearest takes a mask, so "the 5 nearest enemies
// within 40" skips pickups and walls, and whole subtrees that hold none.
// Results come nearest first. Checked against sorting every enemy by distance.
#include <math.h>
#include <orthant/orthant2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { ITEMS = 3000, K = 5, PLAYERS = 200 };
static const float RANGE = 40;
enum { ENEMY = 1, PICKUP = 2, WALL = 4 }; // categories, one bit each

static float box_distance(const ort2_box *b, const float p[2]) // 0 inside
{
	double s = 0;
	for (int i = 0; i < 2; i++) {
		double d = p[i] < b->min[i] ? b->min[i] - p[i] : p[i] > b->max[i] ? p[i] - b->max[i] : 0;
		s += d * d;
	}
	return (float)sqrt(s);
}

static int by_value(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

static float next_random(uint32_t *state) // 0 <= r < 1, the same on every machine
{
	*state = *state * 1664525u + 1013904223u;
	return (float)(*state >> 8) / 16777216.0f;
}

int main(void)
{
	static ort2_box boxes[ITEMS];
	static int kind[ITEMS];
	static float enemy_distance[ITEMS];
	ort2_tree_def def = ort2_tree_default_def();
	ort2_tree *tree;
	if (ort2_tree_create(&def, &tree) != ORT_OK) return 1;
	uint32_t rng = 2024;
	for (int i = 0; i < ITEMS; i++) {
		float x = next_random(&rng) * 1000, y = next_random(&rng) * 1000, s = 2 + next_random(&rng) * 8;
		boxes[i] = (ort2_box){{x, y}, {x + s, y + s}};
		kind[i] = i % 3 == 0 ? ENEMY : i % 3 == 1 ? PICKUP : WALL;
		ort_handle h;
		if (ort2_tree_insert(tree, boxes[i], (void *)(intptr_t)i, &h) != ORT_OK) return 1;
		ort2_tree_set_filter(tree, h, (ort_filter){(uint64_t)kind[i], ORT_MASK_ALL, kind[i] == WALL});
	}

	int wrong = 0, found_total = 0, short_lists = 0;
	for (int p = 0; p < PLAYERS; p++) {
		float player[2] = {next_random(&rng) * 1000, next_random(&rng) * 1000};
		ort2_neighbor out[K];
		int found;
		if (ort2_tree_nearest(tree, player, K, RANGE, ENEMY, out, &found) != ORT_OK) return 1;

		// Brute force: every enemy's distance, sorted; those within 40 count.
		int n = 0;
		for (int i = 0; i < ITEMS; i++)
			if (kind[i] == ENEMY && box_distance(&boxes[i], player) <= RANGE)
				enemy_distance[n++] = box_distance(&boxes[i], player);
		qsort(enemy_distance, (size_t)n, sizeof *enemy_distance, by_value);
		int want = n < K ? n : K;
		wrong += found != want;
		for (int j = 0; j < found && j < want; j++) {
			int i = (int)(intptr_t)out[j].user_data;
			wrong += kind[i] != ENEMY;                                                 // the mask held
			wrong += fabsf(out[j].distance - enemy_distance[j]) > 1e-3f;               // the j-th nearest
			wrong += fabsf(box_distance(&boxes[i], player) - out[j].distance) > 1e-3f; // and it is that far
		}
		found_total += found;
		short_lists += found < K;
	}
	ort2_tree_destroy(tree);
	printf("k nearest: %d players, %d enemies found (k = %d, within 40), %d short lists, %d differ from brute force\n",
	       PLAYERS, found_total, K, short_lists, wrong);
	if (wrong || found_total == 0) {
		printf("FAIL\n");
		return 1;
	}
	printf("every player's nearest enemies matched brute force\n");
	return 0;
}

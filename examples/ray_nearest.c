// ray_nearest.c: what does a shot hit first? ort3_tree_ray_cast calls back for
// each box the ray touches, roughly near-first; the callback returns the ray
// parameter t it was given, which clips the ray there, so every box beyond the
// best hit so far is skipped whole. The shooter's own category is masked out.
// Each shot is checked against a brute-force slab test over every box.
#include <math.h>
#include <orthant/orthant3.h>
#include <stdint.h>
#include <stdio.h>

enum { CRATES = 2000, SHOTS = 500 };
enum { PLAYER = 1, SCENERY = 2 }; // categories

typedef struct nearest_hit {
	float t;
	int index; // -1: nothing hit
} nearest_hit;

static float keep_nearest(void *ctx, ort_handle h, void *user_data, float t)
{
	(void)h;
	nearest_hit *hit = ctx;
	if (t < hit->t) {
		hit->t = t;
		hit->index = (int)(intptr_t)user_data;
	}
	return hit->t; // clip: only nearer boxes are of interest from now on
}

// Brute force: where origin + t * dir enters box b, t >= 0 (0 from inside), or INFINITY.
static float slab(const ort3_box *b, const float o[3], const float d[3])
{
	double lo = 0, hi = INFINITY;
	for (int i = 0; i < 3; i++) {
		if (d[i] == 0) {
			if (o[i] < b->min[i] || o[i] > b->max[i]) return INFINITY;
			continue;
		}
		double t0 = (b->min[i] - (double)o[i]) / d[i], t1 = (b->max[i] - (double)o[i]) / d[i];
		if (t0 > t1) {
			double s = t0;
			t0 = t1, t1 = s;
		}
		lo = t0 > lo ? t0 : lo;
		hi = t1 < hi ? t1 : hi;
	}
	return lo <= hi ? (float)lo : INFINITY;
}

static float next_random(uint32_t *state) // 0 <= r < 1, the same on every machine
{
	*state = *state * 1664525u + 1013904223u;
	return (float)(*state >> 8) / 16777216.0f;
}

int main(void)
{
	static ort3_box crates[CRATES];
	ort3_tree_def def = ort3_tree_default_def();
	ort3_tree *tree;
	if (ort3_tree_create(&def, &tree) != ORT_OK) return 1;
	uint32_t rng = 7;
	for (int i = 0; i < CRATES; i++) {
		float x = next_random(&rng) * 500, y = next_random(&rng) * 20, z = next_random(&rng) * 500;
		float s = 1 + next_random(&rng) * 4;
		crates[i] = (ort3_box){{x, y, z}, {x + s, y + s, z + s}};
		ort_handle h;
		if (ort3_tree_insert(tree, crates[i], (void *)(intptr_t)i, &h) != ORT_OK) return 1;
		ort3_tree_set_filter(tree, h, (ort_filter){SCENERY, ORT_MASK_ALL, true});
	}
	// The player stands among the crates; its own box must never be the hit.
	ort_handle player;
	ort3_tree_insert(tree, (ort3_box){{249, 0, 249}, {251, 2, 251}}, (void *)(intptr_t)-2, &player);
	ort3_tree_set_filter(tree, player, (ort_filter){PLAYER, ORT_MASK_ALL, false});

	int hits = 0, wrong = 0;
	for (int s = 0; s < SHOTS; s++) {
		float origin[3] = {250, 1.5f, 250};
		float a = next_random(&rng) * 6.2831853f, up = next_random(&rng) * 0.2f - 0.05f;
		float dir[3] = {cosf(a), up, sinf(a)};
		nearest_hit hit = {INFINITY, -1};
		if (ort3_tree_ray_cast(tree, origin, dir, 400, ~(uint64_t)PLAYER, keep_nearest, &hit) != ORT_OK) return 1;

		float best = INFINITY;
		for (int i = 0; i < CRATES; i++) {
			float t = slab(&crates[i], origin, dir);
			best = t < best ? t : best;
		}
		if (best > 400) best = INFINITY;
		if (hit.index == -2)
			wrong++; // the mask let the player through
		else if (isinf(best) != isinf(hit.t) || (!isinf(best) && fabsf(hit.t - best) > 1e-3f * (1 + best)))
			wrong++;
		else if (hit.index >= 0 && fabsf(slab(&crates[hit.index], origin, dir) - hit.t) > 1e-3f * (1 + hit.t))
			wrong++; // the reported crate is not where the hit is
		hits += hit.index >= 0;
	}
	ort3_tree_destroy(tree);
	printf("nearest hit: %d shots, %d hit a crate within 400, %d differ from brute force\n", SHOTS, hits, wrong);
	if (wrong || hits == 0 || hits == SHOTS) {
		printf("FAIL\n");
		return 1;
	}
	printf("every shot's nearest crate matched brute force\n");
	return 0;
}

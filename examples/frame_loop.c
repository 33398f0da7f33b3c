// frame_loop.c: a game's per-frame collision loop. Every frame each mover moves
// (ort2_tree_move re-homes it only when it leaves its node), then one call,
// ort2_tree_update_pairs, reports the contacts that began and the ones that
// ended since the last frame. The program keeps its own "touching" table from
// those two callbacks alone and checks it against brute force every frame.
#include <orthant/orthant2.h>
#include <stdint.h>
#include <stdio.h>

enum { MOVERS = 300, FRAMES = 200 };
static const float WORLD = 200, SIZE = 6;

typedef struct body {
	float x, y, vx, vy;
	ort_handle handle;
} body;

typedef struct game {
	unsigned char touching[MOVERS][MOVERS]; // kept only by the callbacks below
	long began, ended;
	int bad_events; // a begin for a pair already touching, an end for one that was not
} game;

static void on_begin(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)a, (void)b;
	game *g = ctx;
	int i = (int)(intptr_t)ua, j = (int)(intptr_t)ub; // user data: the body's index
	g->bad_events += g->touching[i][j];
	g->touching[i][j] = g->touching[j][i] = 1;
	g->began++;
}

static void on_end(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)a, (void)b;
	game *g = ctx;
	int i = (int)(intptr_t)ua, j = (int)(intptr_t)ub;
	g->bad_events += !g->touching[i][j];
	g->touching[i][j] = g->touching[j][i] = 0;
	g->ended++;
}

static ort2_box box_of(const body *b) { return (ort2_box){{b->x, b->y}, {b->x + SIZE, b->y + SIZE}}; }

static float next_random(uint32_t *state) // 0 <= r < 1, the same on every machine
{
	*state = *state * 1664525u + 1013904223u;
	return (float)(*state >> 8) / 16777216.0f;
}

int main(void)
{
	static game g;
	static body bodies[MOVERS];
	ort2_tree_def def = ort2_tree_default_def();
	def.region = (ort2_box){{0, 0}, {WORLD, WORLD}}; // the world, known up front
	def.use_region = true;
	ort2_tree *tree;
	if (ort2_tree_create(&def, &tree) != ORT_OK) return 1;
	uint32_t rng = 12345;
	for (int i = 0; i < MOVERS; i++) {
		body *b = &bodies[i];
		b->x = next_random(&rng) * (WORLD - SIZE);
		b->y = next_random(&rng) * (WORLD - SIZE);
		b->vx = next_random(&rng) * 2 - 1;
		b->vy = next_random(&rng) * 2 - 1;
		if (ort2_tree_insert(tree, box_of(b), (void *)(intptr_t)i, &b->handle) != ORT_OK) return 1;
	}

	int mismatched_frames = 0;
	for (int frame = 0; frame < FRAMES; frame++) {
		// 1. Move the movers (bouncing off the walls).
		for (int i = 0; i < MOVERS; i++) {
			body *b = &bodies[i];
			b->x += b->vx, b->y += b->vy;
			if (b->x < 0 || b->x > WORLD - SIZE) b->vx = -b->vx;
			if (b->y < 0 || b->y > WORLD - SIZE) b->vy = -b->vy;
			ort2_tree_move(tree, b->handle, box_of(b));
		}
		// 2. What began and ended touching since the last frame.
		if (ort2_tree_update_pairs(tree, on_begin, on_end, &g) != ORT_OK) return 1;
		ort2_tree_tick(tree); // a frame has passed (frees branches emptied long enough)

		// The table the callbacks keep must be exactly the overlapping pairs.
		int wrong = 0;
		for (int i = 0; i < MOVERS; i++)
			for (int j = i + 1; j < MOVERS; j++) {
				ort2_box a = box_of(&bodies[i]), c = box_of(&bodies[j]);
				int overlap =
				    a.min[0] <= c.max[0] && c.min[0] <= a.max[0] && a.min[1] <= c.max[1] && c.min[1] <= a.max[1];
				wrong += overlap != g.touching[i][j];
			}
		mismatched_frames += wrong != 0;
	}
	int now = ort2_tree_pair_count(tree);
	ort2_tree_destroy(tree);

	printf("frame loop: %d movers, %d frames, %ld contacts began, %ld ended, %d touching now\n", MOVERS, FRAMES,
	       g.began, g.ended, now);
	if (mismatched_frames || g.bad_events || g.began == 0 || g.ended == 0) {
		printf("FAIL: %d frames differ from brute force, %d inconsistent events\n", mismatched_frames, g.bad_events);
		return 1;
	}
	printf("the began/ended events matched brute force on every frame\n");
	return 0;
}

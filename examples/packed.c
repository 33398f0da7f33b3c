// packed.c: the packed tree — rebuild the whole scene every frame, then ask it.
//
// A particle system: 10,000 small boxes drift each frame. Nothing is inserted
// or moved one by one; the packed octree is rebuilt from the boxes array every
// frame (a radix sort and a few linear passes) and answers with array indices.
#include <orthant/orthant3.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define COUNT 10000

static bool count_pair(void *ctx, uint32_t a, uint32_t b)
{
	(void)a, (void)b;
	++*(long *)ctx;
	return true;
}

static bool count_hit(void *ctx, uint32_t id)
{
	(void)id;
	++*(long *)ctx;
	return true;
}

int main(void)
{
	ort3_box *boxes = malloc(sizeof *boxes * COUNT);
	float (*vel)[3] = malloc(sizeof *vel * COUNT);
	if (!boxes || !vel) return 1;
	srand(1);
	for (int i = 0; i < COUNT; ++i)
		for (int d = 0; d < 3; ++d) {
			boxes[i].min[d] = (float)(rand() % 1000) / 10.0f;
			boxes[i].max[d] = boxes[i].min[d] + 1.0f;
			vel[i][d] = (float)(rand() % 21 - 10) / 100.0f;
		}

	ort3_packed_def def = ort3_packed_default_def();
	def.region = (ort3_box){{0, 0, 0}, {101, 101, 101}}; // optional: saves build one pass
	def.use_region = true;
	ort3_packed *tree;
	if (ort3_packed_create(&def, &tree) != ORT_OK) return 1;

	long pairs = 0;
	for (int frame = 0; frame < 10; ++frame) {
		for (int i = 0; i < COUNT; ++i)
			for (int d = 0; d < 3; ++d) {
				boxes[i].min[d] += vel[i][d];
				boxes[i].max[d] += vel[i][d];
			}
		// After the first frames, this allocates nothing.
		if (ort3_packed_build(tree, boxes, COUNT) != ORT_OK) return 1;
		pairs = 0;
		ort3_packed_find_pairs(tree, count_pair, &pairs);
	}
	printf("last frame: %ld overlapping pairs among %d boxes\n", pairs, COUNT);

	long hits = 0;
	ort3_packed_query_box(tree, (ort3_box){{40, 40, 40}, {60, 60, 60}}, count_hit, &hits);
	printf("%ld boxes meet the middle cube\n", hits);

	ort_id_neighbor near[5];
	int found = 0;
	ort3_packed_nearest(tree, (float[3]){50, 50, 50}, 5, INFINITY, near, &found);
	printf("nearest to the centre: box %u at %.3f\n", near[0].id, near[0].distance);

	// A ray along x through the middle of box 0: it enters box 0 or one before it.
	uint32_t id;
	float t;
	float y = 0.5f * (boxes[0].min[1] + boxes[0].max[1]), z = 0.5f * (boxes[0].min[2] + boxes[0].max[2]);
	if (ort3_packed_ray_first(tree, (float[3]){-10, y, z}, (float[3]){1, 0, 0}, 200, &id, &t))
		printf("a ray along x first enters box %u at t = %.3f\n", id, t);

	ort3_packed_destroy(tree);
	free(boxes);
	free(vel);
	return 0;
}

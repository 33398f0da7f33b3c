// frustum_cull.c: what the camera can see. ort3_frustum_from_matrix turns the
// camera's view-projection matrix (column-major, as OpenGL keeps it) into six
// planes; ort3_tree_query_planes reports every object inside or touching them,
// skipping whole octree cells outside any plane. Checked against the same
// plane test applied to every object, and against the objects' corners in clip space.
#include <math.h>
#include <orthant/orthant3.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { OBJECTS = 5000 };

static void multiply(const float a[16], const float b[16], float out[16]) // out = a * b, column-major
{
	for (int c = 0; c < 4; c++)
		for (int r = 0; r < 4; r++) {
			float s = 0;
			for (int k = 0; k < 4; k++) s += a[k * 4 + r] * b[c * 4 + k];
			out[c * 4 + r] = s;
		}
}

// A camera at eye looking along +x (y up), 60 degrees vertical, 16:9, near 1, far 300.
static void view_projection(const float eye[3], float out[16])
{
	float f = 1 / tanf(0.5f * 60 * 3.14159265f / 180), aspect = 16.0f / 9, n = 1, fa = 300;
	float proj[16] = {f / aspect, 0, 0, 0, 0, f, 0, 0, 0, 0, (fa + n) / (n - fa), -1, 0, 0, 2 * fa * n / (n - fa), 0};
	// View: world +x becomes -z (forward), +y stays up, +z becomes +x (right).
	float view[16] = {0, 0, -1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1};
	view[12] = -eye[2], view[13] = -eye[1], view[14] = eye[0];
	multiply(proj, view, out);
}

static bool count_seen(void *ctx, ort_handle h, void *user_data)
{
	(void)h;
	unsigned char *seen = ctx;
	seen[(intptr_t)user_data]++;
	return true;
}

// The documented test: for every plane, the box's most positive corner is on the inside.
static bool passes(const ort3_box *b, const ort3_plane planes[6])
{
	for (int i = 0; i < 6; i++) {
		const float *nrm = planes[i].normal;
		float p[3];
		for (int k = 0; k < 3; k++) p[k] = nrm[k] >= 0 ? b->max[k] : b->min[k];
		if (nrm[0] * p[0] + nrm[1] * p[1] + nrm[2] * p[2] + planes[i].offset < 0) return false;
	}
	return true;
}

// Is any corner of the box strictly inside the clip volume? Then it is surely visible.
static bool corner_on_screen(const ort3_box *b, const float m[16])
{
	for (int c = 0; c < 8; c++) {
		float v[3] = {c & 1 ? b->max[0] : b->min[0], c & 2 ? b->max[1] : b->min[1], c & 4 ? b->max[2] : b->min[2]};
		float clip[4];
		for (int r = 0; r < 4; r++) clip[r] = m[r] * v[0] + m[4 + r] * v[1] + m[8 + r] * v[2] + m[12 + r];
		if (clip[3] > 0 && fabsf(clip[0]) < 0.99f * clip[3] && fabsf(clip[1]) < 0.99f * clip[3] &&
		    fabsf(clip[2]) < 0.99f * clip[3])
			return true;
	}
	return false;
}

static float next_random(uint32_t *state) // 0 <= r < 1, the same on every machine
{
	*state = *state * 1664525u + 1013904223u;
	return (float)(*state >> 8) / 16777216.0f;
}

int main(void)
{
	static ort3_box objects[OBJECTS];
	static unsigned char seen[OBJECTS];
	ort3_tree_def def = ort3_tree_default_def();
	ort3_tree *tree;
	if (ort3_tree_create(&def, &tree) != ORT_OK) return 1;
	uint32_t rng = 99;
	for (int i = 0; i < OBJECTS; i++) {
		float x = next_random(&rng) * 1000 - 500, y = next_random(&rng) * 100 - 50, z = next_random(&rng) * 1000 - 500;
		float s = 1 + next_random(&rng) * 5;
		objects[i] = (ort3_box){{x, y, z}, {x + s, y + s, z + s}};
		if (ort3_tree_insert(tree, objects[i], (void *)(intptr_t)i, NULL) != ORT_OK) return 1;
	}

	float eye[3] = {-100, 0, 20}, m[16];
	view_projection(eye, m);
	ort3_plane planes[6];
	ort3_frustum_from_matrix(m, planes);
	memset(seen, 0, sizeof seen);
	if (ort3_tree_query_planes(tree, planes, 6, ORT_MASK_ALL, count_seen, seen) != ORT_OK) return 1;

	int visible = 0, wrong = 0, missed_on_screen = 0;
	for (int i = 0; i < OBJECTS; i++) {
		visible += seen[i] != 0;
		wrong += seen[i] > 1 || (seen[i] != 0) != passes(&objects[i], planes);
		missed_on_screen += !seen[i] && corner_on_screen(&objects[i], m);
	}
	ort3_tree_destroy(tree);
	printf("frustum culling: %d of %d objects in view, %d differ from the plane test, %d on screen but culled\n",
	       visible, OBJECTS, wrong, missed_on_screen);
	if (wrong || missed_on_screen || visible == 0 || visible > OBJECTS / 2) {
		printf("FAIL\n");
		return 1;
	}
	printf("the culled set matched brute force\n");
	return 0;
}

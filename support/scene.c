// scene.c: the deterministic scenes shared by tests, demo and benchmark.
#include "scene.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

scn_rng scn_rng_make(uint64_t seed)
{
	// splitmix64 spreads any seed, 0 included, over the whole state space.
	uint64_t z = seed + 0x9E3779B97F4A7C15ull;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	z ^= z >> 31;
	scn_rng r = {z ? z : 1};
	return r;
}

uint64_t scn_rng_next(scn_rng *rng)
{
	uint64_t x = rng->state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng->state = x;
	return x * 0x2545F4914F6CDD1Dull;
}

float scn_rng_float(scn_rng *rng, float lo, float hi)
{
	float u = (float)(scn_rng_next(rng) >> 40) * (1.0f / 16777216.0f);
	return lo + (hi - lo) * u;
}

int scn_rng_int(scn_rng *rng, int lo, int hi)
{
	uint64_t span = (uint64_t)((int64_t)hi - lo + 1);
	return lo + (int)(scn_rng_next(rng) % span);
}

void scn_pile_box(scn_pile kind, int dim, scn_draw_fn *draw, void *rng, int i, int n, float lo[3], float hi[3])
{
	int f = i % dim, per = (n + dim - 1) / dim, s = i / dim;
	for (int d = 0; d < dim; ++d) {
		lo[d] = draw(rng, 0.0f, 10.0f);
		hi[d] = draw(rng, 990.0f, 1000.0f);
	}
	if (kind == SCN_PILE_PLATES) {
		float step = 1000.0f / (float)n;
		lo[dim - 1] = (float)i * step;
		hi[dim - 1] = lo[dim - 1] + draw(rng, 0.0f, 0.9f) * step;
	} else if (kind == SCN_PILE_STACKS) {
		// family f stacked on axis f; on axis 0 in its own third (half in 2D)
		float band = 1000.0f / (float)dim, at = (float)f * band, step = 0.8f * band / (float)per;
		lo[0] = at + draw(rng, 0.0f, 5.0f);
		hi[0] = at + 0.8f * band - draw(rng, 0.0f, 5.0f);
		lo[f] = (f ? 0.0f : at) + (float)s * (f ? 1000.0f / (float)per : step);
		hi[f] = lo[f] + 0.5f * (f ? 1000.0f / (float)per : step);
	} else if (kind == SCN_PILE_PINWHEEL) {
		// Arm i % 4 (top, right, bottom, left): the strips of the top arm lie
		// over the left arm on x, those of the right arm beside the top one on
		// y, and so on round; strip i / 4 of its arm's stack of 190 across.
		static const float arm[4][4] = {
		    // long axis, its range, the thin axis' band start
		    {0, 0.0f, 790.0f, 810.0f}, {1, 210.0f, 1000.0f, 810.0f}, {0, 210.0f, 1000.0f, 0.0f}, {1, 0.0f, 790.0f, 0.0f}};
		const float *a = arm[i % 4];
		int along = (int)a[0], across = 1 - along;
		float step = 190.0f / (float)((n + 3) / 4);
		lo[along] = a[1] + draw(rng, 0.0f, 10.0f);
		hi[along] = a[2] - draw(rng, 0.0f, 10.0f);
		lo[across] = a[3] + (float)(i / 4) * step;
		hi[across] = lo[across] + 0.4f * step;
	} else {
		// family f long on axis f; thin elsewhere, in the low or high part
		// of each axis: [f][d] is 0 for [0, 400], 1 for [600, 1000]
		static const int part[3][3] = {{0, 0, 0}, {0, 0, 1}, {1, 1, 0}};
		for (int d = 0; d < dim; ++d) {
			if (d == f) continue;
			int high = dim == 2 && f == 1 ? 0 : part[f][d];
			lo[d] = (high ? 600.0f : 0.0f) + draw(rng, 0.0f, 398.0f);
			hi[d] = lo[d] + draw(rng, 0.0f, 2.0f);
		}
		if (dim == 2 && f == 1) lo[1] = draw(rng, 600.0f, 700.0f); // apart from the first family on y
	}
}

static void place(scn_scene *s, int i, const float centre[3], const float half[3])
{
	for (int d = 0; d < 3; ++d) {
		float c = centre[d], h = half[d];
		if (d >= s->dim) {
			c = 0.0f;
			h = 0.0f;
		}
		// Keep the box inside the world so bouncing starts from a legal state.
		float lo = s->world.min[d] + h, hi = s->world.max[d] - h;
		if (c < lo) c = lo;
		if (c > hi) c = hi;
		s->boxes[i].min[d] = c - h;
		s->boxes[i].max[d] = c + h;
	}
}

int scn_scene_make(scn_scene *s, scn_kind kind, int dim, int count, uint64_t seed)
{
	memset(s, 0, sizeof *s);
	s->dim = dim;
	s->count = count;
	s->moving_fraction = 1.0f;
	s->rng = scn_rng_make(seed);
	s->boxes = calloc((size_t)(count > 0 ? count : 1), sizeof *s->boxes);
	s->vel = calloc((size_t)(count > 0 ? count : 1), sizeof *s->vel);
	if (!s->boxes || !s->vel) {
		scn_scene_free(s);
		return -1;
	}
	float side;
	float speed;
	if (kind == SCN_BOUNCING) {
		// The bouncing-boxes demo's field: 600 wide, 800 high; in 3D a 600x800x600 room.
		s->world = (ort3_box){{0, 0, 0}, {600, 800, dim == 3 ? 600.0f : 0.0f}};
		side = 0;
		speed = 10.0f;
	} else {
		// Mean side 1.25; a density that gives each box ~2 overlaps: the expected
		// overlaps of a box are n * (2 * mean side)^dim / world volume.
		float per = (dim == 2) ? 2.0f * 2.5f * 2.5f : 2.0f * 2.5f * 2.5f * 2.5f;
		float volume = (float)count * per / 2.0f;
		side = (dim == 2) ? sqrtf(volume) : cbrtf(volume);
		if (side < 10.0f) side = 10.0f;
		s->world = (ort3_box){{0, 0, 0}, {side, side, dim == 3 ? side : 0.0f}};
		speed = 0.2f;
	}
	scn_rng *r = &s->rng;
	int clusters = 8;
	float cc[8][3];
	for (int k = 0; k < clusters; ++k)
		for (int d = 0; d < 3; ++d) cc[k][d] = scn_rng_float(r, s->world.min[d], s->world.max[d]);
	for (int i = 0; i < count; ++i) {
		float centre[3], half[3];
		float h;
		if (kind == SCN_BOUNCING)
			h = (float)scn_rng_int(r, 1, 20) * 0.5f;
		else if (kind == SCN_MIXED && i % 1000 == 0)
			h = side * scn_rng_float(r, 0.05f, 0.25f);
		else
			h = scn_rng_float(r, 0.25f, 1.0f);
		for (int d = 0; d < 3; ++d) {
			half[d] = h;
			if (kind == SCN_CLUSTERED) {
				const float *c = cc[i % clusters];
				float spread = (s->world.max[0] - s->world.min[0]) * 0.02f;
				centre[d] = c[d] + scn_rng_float(r, -spread, spread);
			} else {
				centre[d] = scn_rng_float(r, s->world.min[d], s->world.max[d]);
			}
			s->vel[i][d] = d < dim ? scn_rng_float(r, -speed, speed) : 0.0f;
		}
		place(s, i, centre, half);
	}
	return 0;
}

void scn_scene_free(scn_scene *s)
{
	free(s->boxes);
	free(s->vel);
	s->boxes = NULL;
	s->vel = NULL;
	s->count = 0;
}

void scn_scene_step(scn_scene *s)
{
	int step = 1;
	if (s->moving_fraction < 1.0f && s->moving_fraction > 0.0f) step = (int)(1.0f / s->moving_fraction + 0.5f);
	// With a fraction f, a rotating 1/f of the boxes moves each tick, so the set
	// of movers is deterministic and every box moves now and then.
	uint64_t phase = s->moving_fraction < 1.0f ? scn_rng_next(&s->rng) % (uint64_t)step : 0;
	for (int i = (int)phase; i < s->count; i += step) {
		ort3_box *b = &s->boxes[i];
		for (int d = 0; d < s->dim; ++d) {
			float v = s->vel[i][d];
			b->min[d] += v;
			b->max[d] += v;
			if (b->min[d] < s->world.min[d]) {
				float o = s->world.min[d] - b->min[d];
				b->min[d] += o;
				b->max[d] += o;
				s->vel[i][d] = -v;
			} else if (b->max[d] > s->world.max[d]) {
				float o = b->max[d] - s->world.max[d];
				b->min[d] -= o;
				b->max[d] -= o;
				s->vel[i][d] = -v;
			}
		}
	}
}

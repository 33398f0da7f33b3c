// draw3.c: the 3D view — cubes in a room seen by an orbiting camera in
// perspective, the octree's cells as wireframe, collisions in red.
//
// Cubes are drawn back to front (painter's order) as their visible faces,
// yellow ones first and red ones last, so a collision is never hidden behind
// a cube that is not colliding.
#include "demo.h"

#include <math.h>
#include <stdlib.h>

#define DEMO_FOV_DEGREES 50.0f
#define DEMO_NEAR 1.0f

typedef struct demo_depth {
	float depth;
	int index;
} demo_depth;

struct demo_draw3 {
	demo_depth *order;
	int order_cap;
	SDL_Vertex *verts;
	int *indices;
	int vert_count, index_count, vert_cap;
};

void demo_draw3_free(demo_draw *d)
{
	if (!d->d3) return;
	free(d->d3->order);
	free(d->d3->verts);
	free(d->d3->indices);
	free(d->d3);
	d->d3 = NULL;
}

static float demo_dot(const float a[3], const float b[3]) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

static void demo_normalize(float v[3])
{
	float l = sqrtf(demo_dot(v, v));
	if (l > 0.0f)
		for (int i = 0; i < 3; ++i) v[i] /= l;
}

static void demo_cross(const float a[3], const float b[3], float out[3])
{
	out[0] = a[1] * b[2] - a[2] * b[1];
	out[1] = a[2] * b[0] - a[0] * b[2];
	out[2] = a[0] * b[1] - a[1] * b[0];
}

demo_camera demo_camera_make(const demo_sim *sim, const demo_ui *ui)
{
	demo_camera c;
	const ort3_box *w = &sim->scene.world;
	float target[3];
	for (int i = 0; i < 3; ++i) target[i] = 0.5f * (w->min[i] + w->max[i]);
	float cp = cosf(ui->pitch), sp = sinf(ui->pitch);
	c.eye[0] = target[0] + ui->distance * cp * sinf(ui->yaw);
	c.eye[1] = target[1] + ui->distance * sp;
	c.eye[2] = target[2] + ui->distance * cp * cosf(ui->yaw);
	for (int i = 0; i < 3; ++i) c.forward[i] = target[i] - c.eye[i];
	demo_normalize(c.forward);
	const float world_up[3] = {0.0f, 1.0f, 0.0f};
	demo_cross(c.forward, world_up, c.right);
	demo_normalize(c.right);
	demo_cross(c.right, c.forward, c.up);
	c.cx = 0.5f * DEMO_FIELD_W;
	c.cy = 0.5f * DEMO_FIELD_H;
	c.focal = 0.5f * DEMO_FIELD_W / tanf(0.5f * DEMO_FOV_DEGREES * 3.14159265f / 180.0f);
	return c;
}

// Window point of a world point; false behind the near plane.
static bool demo_project(const demo_camera *c, const float p[3], float *sx, float *sy, float *depth)
{
	float d[3] = {p[0] - c->eye[0], p[1] - c->eye[1], p[2] - c->eye[2]};
	float z = demo_dot(d, c->forward);
	if (z < DEMO_NEAR) return false;
	*sx = c->cx + c->focal * demo_dot(d, c->right) / z;
	*sy = c->cy - c->focal * demo_dot(d, c->up) / z;
	if (depth) *depth = z;
	return true;
}

void demo_camera_ray(const demo_camera *c, float x, float y, float dir[3])
{
	for (int i = 0; i < 3; ++i) dir[i] = c->forward[i] * c->focal + c->right[i] * (x - c->cx) + c->up[i] * (c->cy - y);
	demo_normalize(dir);
	// Long enough to cross the room from any orbit: the ray is a segment t in [0, 1].
	for (int i = 0; i < 3; ++i) dir[i] *= 20000.0f;
}

static void demo_line3(SDL_Renderer *r, const demo_camera *c, const float a[3], const float b[3])
{
	float ax, ay, bx, by;
	if (demo_project(c, a, &ax, &ay, NULL) && demo_project(c, b, &bx, &by, NULL)) SDL_RenderDrawLineF(r, ax, ay, bx, by);
}

static void demo_wire_box(SDL_Renderer *r, const demo_camera *c, const ort3_box *b)
{
	// The 12 edges: for each axis, the 4 edges along it.
	for (int axis = 0; axis < 3; ++axis) {
		int u = (axis + 1) % 3, v = (axis + 2) % 3;
		for (int k = 0; k < 4; ++k) {
			float p[3], q[3];
			p[u] = q[u] = (k & 1) ? b->max[u] : b->min[u];
			p[v] = q[v] = (k & 2) ? b->max[v] : b->min[v];
			p[axis] = b->min[axis];
			q[axis] = b->max[axis];
			demo_line3(r, c, p, q);
		}
	}
}

static int demo_depth_cmp(const void *pa, const void *pb)
{
	const demo_depth *a = pa, *b = pb;
	return (a->depth < b->depth) - (a->depth > b->depth); // far first
}

static bool demo_reserve(struct demo_draw3 *g, int verts)
{
	if (g->vert_count + verts <= g->vert_cap) return true;
	int cap = g->vert_cap ? g->vert_cap : 4096;
	while (cap < g->vert_count + verts) cap *= 2;
	SDL_Vertex *v = realloc(g->verts, (size_t)cap * sizeof *v);
	if (!v) return false;
	g->verts = v;
	int *ix = realloc(g->indices, (size_t)cap / 4 * 6 * sizeof *ix);
	if (!ix) return false;
	g->indices = ix;
	g->vert_cap = cap;
	return true;
}

static void demo_quad(struct demo_draw3 *g, const float xy[8], SDL_Color col)
{
	if (!demo_reserve(g, 4)) return;
	int base = g->vert_count;
	for (int k = 0; k < 4; ++k) {
		SDL_Vertex *v = &g->verts[g->vert_count++];
		v->position.x = xy[2 * k];
		v->position.y = xy[2 * k + 1];
		v->color = col;
		v->tex_coord.x = v->tex_coord.y = 0.0f;
	}
	static const int corner[6] = {0, 1, 2, 0, 2, 3};
	for (int k = 0; k < 6; ++k) g->indices[g->index_count++] = base + corner[k];
}

static void demo_flush(SDL_Renderer *r, struct demo_draw3 *g)
{
	if (g->vert_count) SDL_RenderGeometry(r, NULL, g->verts, g->vert_count, g->indices, g->index_count);
	g->vert_count = g->index_count = 0;
}

static SDL_Color demo_shade(SDL_Color c, float f)
{
	SDL_Color s = {(Uint8)(c.r * f), (Uint8)(c.g * f), (Uint8)(c.b * f), 255};
	return s;
}

// The faces of a cube the eye sees (at most three), or a 2x2 dot when the cube
// is smaller than that on screen, so every cube leaves pixels.
static void demo_cube(struct demo_draw3 *g, const demo_camera *c, const ort3_box *b, SDL_Color col)
{
	float centre[3], sx, sy, z;
	for (int i = 0; i < 3; ++i) centre[i] = 0.5f * (b->min[i] + b->max[i]);
	if (!demo_project(c, centre, &sx, &sy, &z)) return;
	float size = (b->max[0] - b->min[0]) * c->focal / z;
	if (size < 2.0f) {
		float q[8] = {sx - 1, sy - 1, sx + 1, sy - 1, sx + 1, sy + 1, sx - 1, sy + 1};
		demo_quad(g, q, col);
		return;
	}
	static const float light[3] = {0.78f, 1.0f, 0.62f};
	for (int axis = 0; axis < 3; ++axis) {
		float at;
		if (c->eye[axis] > b->max[axis])
			at = b->max[axis];
		else if (c->eye[axis] < b->min[axis])
			at = b->min[axis];
		else
			continue;
		int u = (axis + 1) % 3, v = (axis + 2) % 3;
		static const int cu[4] = {0, 1, 1, 0}, cv[4] = {0, 0, 1, 1};
		float q[8];
		bool ok = true;
		for (int k = 0; k < 4 && ok; ++k) {
			float p[3];
			p[axis] = at;
			p[u] = cu[k] ? b->max[u] : b->min[u];
			p[v] = cv[k] ? b->max[v] : b->min[v];
			ok = demo_project(c, p, &q[2 * k], &q[2 * k + 1], NULL);
		}
		if (ok) demo_quad(g, q, demo_shade(col, light[axis]));
	}
}

static void demo_cubes(demo_draw *d, const demo_camera *cam, demo_sim *sim, bool hit)
{
	struct demo_draw3 *g = d->d3;
	int n = 0;
	for (int i = 0; i < sim->total; ++i) {
		if (!sim->alive[i] || sim->hit[i] != hit) continue;
		float centre[3], rel[3];
		for (int k = 0; k < 3; ++k) {
			centre[k] = 0.5f * (sim->boxes[i].min[k] + sim->boxes[i].max[k]);
			rel[k] = centre[k] - cam->eye[k];
		}
		g->order[n].depth = demo_dot(rel, cam->forward);
		g->order[n].index = i;
		++n;
	}
	qsort(g->order, (size_t)n, sizeof *g->order, demo_depth_cmp);
	const SDL_Color yellow = {DEMO_RGB_YELLOW, 255}, red = {DEMO_RGB_RED, 255}, white = {240, 240, 240, 255};
	for (int k = 0; k < n; ++k) {
		int i = g->order[k].index;
		demo_cube(g, cam, &sim->boxes[i], hit ? red : (i >= sim->count ? white : yellow));
		if (g->vert_count > 60000) demo_flush(d->renderer, g);
	}
	demo_flush(d->renderer, g);
}

void demo_draw_world3(demo_draw *d, demo_sim *sim, demo_ui *ui)
{
	SDL_Renderer *r = d->renderer;
	if (!d->d3) {
		d->d3 = calloc(1, sizeof *d->d3);
		if (!d->d3) return;
	}
	struct demo_draw3 *g = d->d3;
	if (g->order_cap < sim->total) {
		demo_depth *o = realloc(g->order, (size_t)sim->total * sizeof *o);
		if (!o) return;
		g->order = o;
		g->order_cap = sim->total;
	}
	demo_camera cam = demo_camera_make(sim, ui);

	SDL_SetRenderDrawColor(r, 110, 110, 125, 255);
	demo_wire_box(r, &cam, &sim->scene.world);
	if (ui->show_cells && !sim->brute) {
		for (int k = 0; k < sim->cell_count; ++k) {
			// Deeper cells darker, so the structure reads from the outside in.
			int depth = sim->cells[k].depth;
			float f = depth < 6 ? 1.0f - 0.1f * (float)depth : 0.45f;
			SDL_SetRenderDrawColor(r, (Uint8)(70 * f + 20), (Uint8)(100 * f + 20), (Uint8)(150 * f + 40), 255);
			demo_wire_box(r, &cam, &sim->cells[k].cell);
		}
	}
	SDL_SetRenderDrawColor(r, 240, 240, 240, 255);
	for (int i = sim->count; i < sim->total; ++i) {
		if (!sim->alive[i]) continue;
		// A streak behind each bullet, so the stream reads as fast.
		const float *v = sim->bullet_vel[i - sim->count];
		float a[3], b[3];
		for (int k = 0; k < 3; ++k) {
			b[k] = 0.5f * (sim->boxes[i].min[k] + sim->boxes[i].max[k]);
			a[k] = b[k] - 1.5f * v[k];
		}
		demo_line3(r, &cam, a, b);
	}
	demo_cubes(d, &cam, sim, false);
	demo_cubes(d, &cam, sim, true);

	if (ui->hover >= 0 && ui->hover < sim->total && sim->alive[ui->hover]) {
		int c = demo_sim_item_cell(sim, ui->hover);
		if (c >= 0) {
			SDL_SetRenderDrawColor(r, 210, 90, 210, 255);
			demo_wire_box(r, &cam, &sim->cells[c].cell);
		}
		SDL_SetRenderDrawColor(r, 255, 255, 255, 255);
		demo_wire_box(r, &cam, &sim->boxes[ui->hover]);
	}
}

// sim.c: the demo's simulation — the shared scene, the collision step by tree
// or by brute force, the queries, and the numbers the panel shows.
//
// The scene is the benchmark's bouncing boxes, shrunk about their centres when
// the count is large (demo_scale_for), and for the clustered scene re-placed
// into drifting swarms that this file moves itself (demo_sim_step_clustered).
// Every DEMO_COMPARE_EVERY steps the method that is not running is timed on the
// same boxes (demo_sim_compare), so the panel can set brute force against the
// tree without running both every frame.
//
// Objects are the scene's boxes followed by DEMO_BULLET_SLOTS bullet slots; an
// object's index is its ID and the user data stored with its item. Boxes are
// kept as ort3_box in both dimensions (z is 0 in 2D), and every library call is
// made on ort2_* or ort3_* as the dimension says.
#include "demo.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static ort2_box demo_box2(const ort3_box *b)
{
	ort2_box r = {{b->min[0], b->min[1]}, {b->max[0], b->max[1]}};
	return r;
}

static ort3_box demo_box3_from2(const ort2_box *b)
{
	ort3_box r = {{b->min[0], b->min[1], 0.0f}, {b->max[0], b->max[1], 0.0f}};
	return r;
}

static void *demo_id_ptr(int i) { return (void *)(intptr_t)i; }
static int demo_ptr_id(const void *p) { return (int)(intptr_t)p; }

static double demo_now_us(void)
{
	return (double)SDL_GetPerformanceCounter() * 1.0e6 / (double)SDL_GetPerformanceFrequency();
}

static void demo_sim_destroy_tree(demo_sim *sim)
{
	ort2_tree_destroy(sim->t2);
	ort3_tree_destroy(sim->t3);
	sim->t2 = NULL;
	sim->t3 = NULL;
	sim->tree_filled = false;
	if (sim->handles) memset(sim->handles, 0, (size_t)sim->total * sizeof *sim->handles);
}

static ort_result demo_sim_create_tree(demo_sim *sim)
{
	demo_sim_destroy_tree(sim);
	const ort3_box *w = &sim->scene.world;
	if (sim->dim == 2) {
		ort2_tree_def def = ort2_tree_default_def();
		def.region = demo_box2(w);
		def.use_region = true;
		def.placement = sim->placement;
		def.item_capacity = sim->total;
		// As in a game octree: emptied branches wait a few frames, so a stream of bullets
		// reuses its nodes instead of freeing and making them every frame.
		def.prune_delay = sim->incremental ? 8 : 0;
		return ort2_tree_create(&def, &sim->t2);
	}
	ort3_tree_def def = ort3_tree_default_def();
	def.region = *w;
	def.use_region = true;
	def.placement = sim->placement;
	def.item_capacity = sim->total;
	def.prune_delay = sim->incremental ? 8 : 0;
	return ort3_tree_create(&def, &sim->t3);
}

static void demo_sim_free_objects(demo_sim *sim)
{
	scn_scene_free(&sim->scene);
	free(sim->region);
	sim->region = NULL;
	free(sim->boxes);
	free(sim->alive);
	free(sim->hit);
	free(sim->handles);
	free(sim->bullet_vel);
	free(sim->soa);
	free(sim->ids);
	free(sim->udata);
	free(sim->hit_scratch);
	free(sim->packed);
	free(sim->packed2);
	sim->boxes = NULL;
	sim->alive = sim->hit = NULL;
	sim->handles = NULL;
	sim->bullet_vel = NULL;
	sim->soa = NULL;
	sim->ids = NULL;
	sim->udata = NULL;
	sim->hit_scratch = NULL;
	sim->packed = NULL;
	sim->packed2 = NULL;
}

const char *demo_scene_string(demo_scene scene) { return scene == DEMO_SCENE_CLUSTERED ? "clustered" : "uniform"; }

// Box sides and speeds for count objects: the classic sizes up to the scale
// count, then shrinking so that count * side^dim, the density, stays that of the
// scale count — the same scene seen from further away.
static float demo_scale_for(int dim, int count)
{
	int ref = dim == 2 ? DEMO_SCALE_COUNT_2D : DEMO_SCALE_COUNT_3D;
	if (count <= ref) return 1.0f;
	return dim == 2 ? sqrtf((float)ref / (float)count) : cbrtf((float)ref / (float)count);
}

static void demo_box_scale(ort3_box *b, int dim, float f)
{
	for (int d = 0; d < dim; ++d) {
		float c = 0.5f * (b->min[d] + b->max[d]), h = 0.5f * (b->max[d] - b->min[d]) * f;
		b->min[d] = c - h;
		b->max[d] = c + h;
	}
}

// A normal deviate (Box-Muller) from the scene's generator.
static float demo_gauss(scn_rng *rng)
{
	float u = scn_rng_float(rng, 1e-6f, 1.0f), v = scn_rng_float(rng, 0.0f, 6.2831853f);
	return sqrtf(-2.0f * logf(u)) * cosf(v);
}

// How strongly a cluster pulls its members back to its centre: each member
// swings about the centre like a spring, with period 2*pi/omega ticks.
#define DEMO_CLUSTER_OMEGA 0.05f

// Crowd the scene: DEMO_CLUSTERED_SHARE of the objects, smaller, swarm in a few
// clusters of different sizes that drift over the field; the rest keep
// bouncing over the whole field. A member's offset from its cluster's centre
// and its velocity / omega are both normal with the same spread: a spring keeps
// such a swarm's distribution as it is (it only turns in phase space), so the
// crowd stays densest in its middle instead of spreading into its box.
static void demo_sim_cluster(demo_sim *sim)
{
	scn_scene *s = &sim->scene;
	scn_rng rng = scn_rng_make(sim->seed * 0x9E3779B97F4A7C15ULL + 1);
	const ort3_box *w = &s->world;
	float side = w->max[0] - w->min[0];
	for (int k = 0; k < DEMO_CLUSTERS; ++k) {
		float half = side * (0.08f + 0.025f * (float)k);
		for (int d = 0; d < 3; ++d) {
			bool on = d < sim->dim;
			float c = on ? scn_rng_float(&rng, w->min[d] + half, w->max[d] - half) : 0.0f;
			sim->clusters[k].min[d] = on ? c - half : 0.0f;
			sim->clusters[k].max[d] = on ? c + half : 0.0f;
			sim->cluster_vel[k][d] = on ? scn_rng_float(&rng, -1.0f, 1.0f) : 0.0f;
		}
	}
	for (int i = 0; i < sim->count; ++i) {
		sim->region[i] = -1;
		if (scn_rng_float(&rng, 0.0f, 1.0f) >= DEMO_CLUSTERED_SHARE) continue;
		int k = i % DEMO_CLUSTERS;
		sim->region[i] = (signed char)k;
		const ort3_box *c = &sim->clusters[k];
		ort3_box *b = &s->boxes[i];
		for (int d = 0; d < sim->dim; ++d) {
			float half_c = 0.5f * (c->max[d] - c->min[d]), centre = c->min[d] + half_c;
			float h = 0.5f * (b->max[d] - b->min[d]) * 0.3f;
			float spread = 0.35f * half_c;
			float x = centre + spread * demo_gauss(&rng);
			if (x < c->min[d] + h) x = c->min[d] + h;
			if (x > c->max[d] - h) x = c->max[d] - h;
			b->min[d] = x - h;
			b->max[d] = x + h;
			s->vel[i][d] = DEMO_CLUSTER_OMEGA * spread * demo_gauss(&rng);
		}
	}
}

// Keep b (moving at v) inside region: a box that crosses a wall is put back
// against it and its velocity on that axis turns (as the scene's own step does).
static void demo_bounce(ort3_box *b, float v[3], const ort3_box *region, int dim)
{
	for (int d = 0; d < dim; ++d) {
		float o = 0.0f;
		if (b->min[d] < region->min[d] && v[d] <= 0.0f)
			o = region->min[d] - b->min[d];
		else if (b->max[d] > region->max[d] && v[d] >= 0.0f)
			o = region->max[d] - b->max[d];
		else
			continue;
		b->min[d] += o;
		b->max[d] += o;
		v[d] = -v[d];
	}
}

// One tick of the clustered scene: the clusters drift (bouncing off the field's
// walls), their members ride along, swinging about the centre (and bouncing
// off the cluster's box, which only the rare far member reaches), the rest
// bounce in the field.
static void demo_sim_step_clustered(demo_sim *sim)
{
	scn_scene *s = &sim->scene;
	float shift[DEMO_CLUSTERS][3];
	for (int k = 0; k < DEMO_CLUSTERS; ++k) {
		ort3_box before = sim->clusters[k];
		for (int d = 0; d < sim->dim; ++d) {
			sim->clusters[k].min[d] += sim->cluster_vel[k][d];
			sim->clusters[k].max[d] += sim->cluster_vel[k][d];
		}
		demo_bounce(&sim->clusters[k], sim->cluster_vel[k], &s->world, sim->dim);
		for (int d = 0; d < 3; ++d) shift[k][d] = sim->clusters[k].min[d] - before.min[d];
	}
	for (int i = 0; i < sim->count; ++i) {
		int k = sim->region[i];
		ort3_box *b = &s->boxes[i];
		for (int d = 0; d < sim->dim; ++d) {
			if (k >= 0) {
				float pull = 0.5f * (sim->clusters[k].min[d] + sim->clusters[k].max[d]) - 0.5f * (b->min[d] + b->max[d]);
				s->vel[i][d] += DEMO_CLUSTER_OMEGA * DEMO_CLUSTER_OMEGA * pull;
			}
			float m = s->vel[i][d] + (k >= 0 ? shift[k][d] : 0.0f);
			b->min[d] += m;
			b->max[d] += m;
		}
		demo_bounce(b, s->vel[i], k >= 0 ? &sim->clusters[k] : &s->world, sim->dim);
	}
}

static int demo_sim_make_objects(demo_sim *sim, int count)
{
	demo_sim_destroy_tree(sim);
	demo_sim_free_objects(sim);
	if (scn_scene_make(&sim->scene, SCN_BOUNCING, sim->dim, count, sim->seed) != 0) return -1;
	sim->scale = demo_scale_for(sim->dim, count);
	for (int i = 0; i < count; ++i) {
		demo_box_scale(&sim->scene.boxes[i], sim->dim, sim->scale);
		for (int d = 0; d < 3; ++d) sim->scene.vel[i][d] *= sim->scale;
	}
	sim->region = malloc((size_t)(count > 0 ? count : 1));
	if (!sim->region) return -1;
	// The new count first: demo_sim_cluster gives every object its region,
	// and one left out (the old count was smaller) would index the clusters
	// by whatever malloc left in its byte.
	sim->count = count;
	if (sim->kind == DEMO_SCENE_CLUSTERED) demo_sim_cluster(sim);
	sim->compare_us = sim->step_min_us = 0.0;
	sim->compare_kept = 0;
	sim->steps = 0;
	sim->total = count + DEMO_BULLET_SLOTS;
	size_t n = (size_t)sim->total;
	sim->boxes = calloc(n, sizeof *sim->boxes);
	sim->alive = calloc(n, sizeof *sim->alive);
	sim->hit = calloc(n, sizeof *sim->hit);
	sim->handles = calloc(n, sizeof *sim->handles);
	sim->bullet_vel = calloc(DEMO_BULLET_SLOTS, sizeof *sim->bullet_vel);
	sim->soa = calloc(6 * n, sizeof *sim->soa);
	sim->ids = calloc(n, sizeof *sim->ids);
	sim->udata = calloc(n, sizeof *sim->udata);
	sim->hit_scratch = calloc(n, 1);
	sim->packed = calloc(n, sizeof *sim->packed);
	sim->packed2 = calloc(n, sizeof *sim->packed2);
	if (!sim->boxes || !sim->alive || !sim->hit || !sim->handles || !sim->bullet_vel || !sim->soa || !sim->ids || !sim->udata || !sim->hit_scratch ||
	    !sim->packed || !sim->packed2)
		return -1;
	for (int i = 0; i < count; ++i) sim->alive[i] = true;
	return demo_sim_create_tree(sim) == ORT_OK ? 0 : -1;
}

int demo_sim_init(demo_sim *sim, int dim, int count, uint64_t seed)
{
	memset(sim, 0, sizeof *sim);
	sim->dim = dim;
	sim->seed = seed;
	sim->placement = ORT_PLACEMENT_LOOSE;
	return demo_sim_make_objects(sim, count);
}

void demo_sim_free(demo_sim *sim)
{
	demo_sim_destroy_tree(sim);
	demo_sim_free_objects(sim);
	free(sim->cells);
	sim->cells = NULL;
	sim->cell_count = sim->cell_cap = 0;
}

int demo_sim_set_scene(demo_sim *sim, demo_scene kind)
{
	sim->kind = kind;
	bool bullets = sim->bullets;
	int rc = demo_sim_make_objects(sim, sim->count);
	sim->bullets = bullets;
	return rc;
}

int demo_sim_set_count(demo_sim *sim, int count)
{
	if (count < DEMO_COUNT_MIN) count = DEMO_COUNT_MIN;
	if (count > DEMO_COUNT_MAX) count = DEMO_COUNT_MAX;
	bool bullets = sim->bullets;
	int rc = demo_sim_make_objects(sim, count);
	sim->bullets = bullets;
	return rc;
}

void demo_sim_set_placement(demo_sim *sim, ort_placement placement)
{
	sim->placement = placement;
	demo_sim_create_tree(sim);
}

void demo_sim_set_incremental(demo_sim *sim, bool incremental)
{
	sim->incremental = incremental;
	demo_sim_create_tree(sim);
}

void demo_sim_set_brute(demo_sim *sim, bool brute)
{
	sim->brute = brute;
	// Back to the tree: start it afresh (incremental items would be stale).
	if (!brute) demo_sim_create_tree(sim);
}

const char *demo_sim_mode(const demo_sim *sim, char *buf, size_t size)
{
	if (sim->brute)
		SDL_snprintf(buf, size, "brute force");
	else
		SDL_snprintf(buf, size, "%s, %s, %s", sim->dim == 2 ? "quadtree" : "octree",
		             ort_placement_string(sim->placement), sim->incremental ? "incremental" : "rebuild");
	return buf;
}

// Bullets (as in a 3D game): small fast cubes fired from the left wall, sweeping up and
// down, gone when they leave the room.
static void demo_sim_bullets_step(demo_sim *sim)
{
	const ort3_box *w = &sim->scene.world;
	const float half = 3.0f, speed = 24.0f;
	for (int s = 0; s < DEMO_BULLET_SLOTS; ++s) {
		int i = sim->count + s;
		if (!sim->alive[i]) continue;
		bool inside = true;
		for (int d = 0; d < sim->dim; ++d) {
			sim->boxes[i].min[d] += sim->bullet_vel[s][d];
			sim->boxes[i].max[d] += sim->bullet_vel[s][d];
			if (sim->boxes[i].min[d] < w->min[d] || sim->boxes[i].max[d] > w->max[d]) inside = false;
		}
		if (!inside) sim->alive[i] = false;
	}
	if (!sim->bullets) return;
	for (int k = 0, s = 0; k < 2 && s < DEMO_BULLET_SLOTS; ++s) {
		int i = sim->count + s;
		if (sim->alive[i]) continue;
		float phase = (float)sim->bullet_clock++ * 0.02f;
		float c[3] = {w->min[0] + half, (w->min[1] + w->max[1]) * 0.5f + (w->max[1] - w->min[1]) * 0.4f * sinf(phase),
		              (w->min[2] + w->max[2]) * 0.5f};
		float v[3] = {speed, speed * 0.15f * cosf(phase * 3.0f), 0.0f};
		if (sim->dim == 3) {
			c[2] += (w->max[2] - w->min[2]) * 0.35f * cosf(phase * 0.7f);
			v[2] = speed * 0.1f * sinf(phase * 2.0f);
		}
		for (int d = 0; d < 3; ++d) {
			float h = d < sim->dim ? half : 0.0f;
			sim->boxes[i].min[d] = c[d] - h;
			sim->boxes[i].max[d] = c[d] + h;
			sim->bullet_vel[s][d] = d < sim->dim ? v[d] : 0.0f;
		}
		sim->alive[i] = true;
		++k;
	}
}

static bool demo_pair2(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)a;
	(void)b;
	demo_sim *sim = ctx;
	sim->hit[demo_ptr_id(ua)] = true;
	sim->hit[demo_ptr_id(ub)] = true;
	++sim->pairs;
	return true;
}

// Gather objects into the flat arrays brute force reads: every live object, or
// (sample > 0) an evenly spread sample of at most that many. Returns how many.
static int demo_brute_gather(demo_sim *sim, int sample)
{
	int n = 0;
	for (int i = 0; i < sim->total; ++i)
		if (sim->alive[i]) sim->ids[n++] = i;
	if (sample > 0 && n > sample) {
		for (int k = 0; k < sample; ++k) sim->ids[k] = sim->ids[(long long)k * n / sample];
		n = sample;
	}
	for (int d = 0; d < 3; ++d) {
		float *lo = sim->soa + (size_t)(2 * d) * (size_t)sim->total, *hi = lo + sim->total;
		for (int k = 0; k < n; ++k) {
			lo[k] = sim->boxes[sim->ids[k]].min[d];
			hi[k] = sim->boxes[sim->ids[k]].max[d];
		}
	}
	return n;
}

// Brute force over every unordered pair of the n gathered objects: n(n-1)/2
// exact tests, on flat arrays so that the comparison with the tree is not lost
// to memory layout. hit_scratch[k] gets whether gathered object k overlaps one.
static long long demo_brute_pairs(demo_sim *sim, int n)
{
	const float *x0 = sim->soa, *y0 = sim->soa + 2 * (size_t)sim->total, *z0 = sim->soa + 4 * (size_t)sim->total;
	const float *x1 = x0 + sim->total, *y1 = y0 + sim->total, *z1 = z0 + sim->total;
	unsigned char *hit = sim->hit_scratch;
	memset(hit, 0, (size_t)n);
	long long pairs = 0;
	for (int i = 0; i < n; ++i) {
		const float ax0 = x0[i], ax1 = x1[i], ay0 = y0[i], ay1 = y1[i], az0 = z0[i], az1 = z1[i];
		// Branch-free, so the compiler can test several pairs at once.
		int found = 0;
		for (int j = i + 1; j < n; ++j) {
			unsigned char o = (unsigned char)((x0[j] <= ax1) & (x1[j] >= ax0) & (y0[j] <= ay1) & (y1[j] >= ay0) &
			                                  (z0[j] <= az1) & (z1[j] >= az0));
			hit[j] |= o;
			found += o;
		}
		if (found) hit[i] = 1;
		pairs += found;
	}
	return pairs;
}

static void demo_sim_brute(demo_sim *sim)
{
	int n = demo_brute_gather(sim, 0);
	long long pairs = demo_brute_pairs(sim, n);
	for (int k = 0; k < n; ++k) sim->hit[sim->ids[k]] = sim->hit_scratch[k] != 0;
	sim->objects = n;
	sim->pairs = pairs;
	sim->tests = (long long)n * (n - 1) / 2;
}

// Rebuild: clear the tree and store every object again, in one batch.
static ort_result demo_sim_rebuild(demo_sim *sim)
{
	int n = 0;
	for (int i = 0; i < sim->total; ++i) {
		if (!sim->alive[i]) continue;
		sim->packed[n] = sim->boxes[i];
		sim->packed2[n] = demo_box2(&sim->boxes[i]);
		sim->udata[n] = demo_id_ptr(i);
		++n;
	}
	sim->objects = n;
	if (sim->dim == 2) {
		ort2_tree_clear(sim->t2);
		return ort2_tree_build(sim->t2, sim->packed2, (void *const *)sim->udata, n, NULL);
	}
	ort3_tree_clear(sim->t3);
	return ort3_tree_build(sim->t3, sim->packed, (void *const *)sim->udata, n, NULL);
}

// Incremental: keep the items and move them; bullets come and go.
static ort_result demo_sim_update(demo_sim *sim)
{
	int n = 0;
	for (int i = 0; i < sim->total; ++i) {
		ort_handle *h = &sim->handles[i];
		ort_result r = ORT_OK;
		bool stored = !ort_handle_is_null(*h);
		if (sim->alive[i]) {
			++n;
			if (sim->dim == 2)
				r = stored ? ort2_tree_move(sim->t2, *h, demo_box2(&sim->boxes[i]))
				           : ort2_tree_insert(sim->t2, demo_box2(&sim->boxes[i]), demo_id_ptr(i), h);
			else
				r = stored ? ort3_tree_move(sim->t3, *h, sim->boxes[i])
				           : ort3_tree_insert(sim->t3, sim->boxes[i], demo_id_ptr(i), h);
		} else if (stored) {
			r = sim->dim == 2 ? ort2_tree_remove(sim->t2, *h) : ort3_tree_remove(sim->t3, *h);
			*h = ORT_NULL_HANDLE;
		}
		if (r != ORT_OK) return r;
	}
	sim->objects = n;
	if (sim->dim == 2)
		ort2_tree_tick(sim->t2);
	else
		ort3_tree_tick(sim->t3);
	return ORT_OK;
}

static void demo_cell_add(demo_sim *sim, ort3_box cell, int depth, int entries)
{
	if (sim->cell_count == sim->cell_cap) {
		int cap = sim->cell_cap ? 2 * sim->cell_cap : 256;
		demo_cell *c = realloc(sim->cells, (size_t)cap * sizeof *c);
		if (!c) return;
		sim->cells = c;
		sim->cell_cap = cap;
	}
	sim->cells[sim->cell_count++] = (demo_cell){cell, depth, entries};
}

static void demo_node2(void *ctx, const ort2_box *cell, const ort2_box *bounds, int depth, int entries)
{
	(void)bounds;
	demo_cell_add(ctx, demo_box3_from2(cell), depth, entries);
}

static void demo_node3(void *ctx, const ort3_box *cell, const ort3_box *bounds, int depth, int entries)
{
	(void)bounds;
	demo_cell_add(ctx, *cell, depth, entries);
}

static bool demo_count_pair(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)a;
	(void)b;
	(void)ua;
	(void)ub;
	++*(long long *)ctx;
	return true;
}

// Time the method that is not running on the boxes of this step, leaving the
// step's results (hits, pairs, the tree's items in incremental mode) alone. A
// shared machine makes single timings noisy, and noise only ever adds time: so
// the other method's time is the least of its last DEMO_COMPARE_KEEP timings
// (for the same count and mode) and the running method's the least step since
// the last comparison.
static void demo_sim_compare(demo_sim *sim)
{
	double t0 = demo_now_us(), other = 0.0;
	if (!sim->brute) {
		int m = demo_brute_gather(sim, DEMO_BRUTE_SAMPLE);
		demo_brute_pairs(sim, m);
		double us = demo_now_us() - t0, n = sim->objects;
		other = m > 1 ? us * (n * (n - 1.0)) / ((double)m * (m - 1.0)) : us;
		sim->compare_sample = m;
	} else {
		// Brute force keeps no items in the tree, so it is free to rebuild it;
		// switching back to the tree starts it afresh (demo_sim_set_brute).
		long long pairs = 0;
		ort_result r = demo_sim_rebuild(sim);
		if (r == ORT_OK)
			r = sim->dim == 2 ? ort2_tree_find_pairs(sim->t2, ORT_MASK_ALL, demo_count_pair, &pairs)
			                  : ort3_tree_find_pairs(sim->t3, ORT_MASK_ALL, demo_count_pair, &pairs);
		if (r != ORT_OK) return;
		other = demo_now_us() - t0;
		sim->compare_sample = sim->objects;
	}
	if (sim->compare_objects != sim->objects || sim->compare_brute != sim->brute) sim->compare_kept = 0;
	sim->compare_objects = sim->objects;
	sim->compare_brute = sim->brute;
	sim->compare_times[sim->compare_kept++ % DEMO_COMPARE_KEEP] = other;
	int kept = sim->compare_kept < DEMO_COMPARE_KEEP ? sim->compare_kept : DEMO_COMPARE_KEEP;
	sim->compare_us = other;
	for (int k = 0; k < kept; ++k)
		if (sim->compare_times[k] < sim->compare_us) sim->compare_us = sim->compare_times[k];
	sim->compare_step_us = sim->step_min_us;
	sim->step_min_us = 0.0;
}

int demo_sim_frame(demo_sim *sim, bool move)
{
	if (move) {
		if (sim->kind == DEMO_SCENE_CLUSTERED)
			demo_sim_step_clustered(sim);
		else
			scn_scene_step(&sim->scene);
		demo_sim_bullets_step(sim);
		++sim->frame;
	}
	memcpy(sim->boxes, sim->scene.boxes, (size_t)sim->count * sizeof *sim->boxes);
	memset(sim->hit, 0, (size_t)sim->total * sizeof *sim->hit);
	sim->pairs = 0;
	sim->last_error = ORT_OK;

	// The collision step: everything between the moved boxes and the pairs.
	double t0 = demo_now_us();
	++sim->steps;
	if (sim->brute) {
		demo_sim_brute(sim);
	} else {
		ort_result r = sim->incremental ? demo_sim_update(sim) : demo_sim_rebuild(sim);
		if (r == ORT_OK)
			r = sim->dim == 2 ? ort2_tree_find_pairs(sim->t2, ORT_MASK_ALL, demo_pair2, sim)
			                  : ort3_tree_find_pairs(sim->t3, ORT_MASK_ALL, demo_pair2, sim);
		sim->last_error = r;
		// The tree's exact tests are the pairs it reports: each candidate it hands
		// over is one exact test, and it hands over only overlapping pairs.
		sim->tests = sim->pairs;
	}
	sim->step_us = demo_now_us() - t0;
	if (sim->step_min_us <= 0.0 || sim->step_us < sim->step_min_us) sim->step_min_us = sim->step_us;
	// The third step first: by then the tree has its nodes (an incremental tree is
	// filled from nothing on the first), so both methods are timed warm.
	if (sim->last_error == ORT_OK && sim->steps % DEMO_COMPARE_EVERY == 3 % DEMO_COMPARE_EVERY) demo_sim_compare(sim);

	sim->cell_count = 0;
	memset(&sim->tree_stats, 0, sizeof sim->tree_stats);
	if (!sim->brute) {
		if (sim->dim == 2) {
			ort2_tree_visit_nodes(sim->t2, demo_node2, sim);
			ort2_tree_get_stats(sim->t2, &sim->tree_stats);
		} else {
			ort3_tree_visit_nodes(sim->t3, demo_node3, sim);
			ort3_tree_get_stats(sim->t3, &sim->tree_stats);
		}
	}
	return sim->last_error == ORT_OK ? 0 : -1;
}

static bool demo_overlap(const ort3_box *a, const ort3_box *b)
{
	for (int d = 0; d < 3; ++d)
		if (a->min[d] > b->max[d] || b->min[d] > a->max[d]) return false;
	return true;
}

typedef struct demo_hit_ctx {
	demo_hit_fn *fn;
	void *ctx;
	float best_t;
	int best;
	bool nearest; ///< clip the ray to each hit (pick), or take all hits
} demo_hit_ctx;

static bool demo_query_hit(void *ctx, ort_handle h, void *user_data)
{
	(void)h;
	demo_hit_ctx *c = ctx;
	c->fn(c->ctx, demo_ptr_id(user_data), 0.0f);
	return true;
}

void demo_sim_query_box(demo_sim *sim, ort3_box box, demo_hit_fn *fn, void *ctx)
{
	demo_hit_ctx c = {fn, ctx, 0.0f, -1, false};
	if (!sim->brute) {
		ort_result r = sim->dim == 2 ? ort2_tree_query_box(sim->t2, demo_box2(&box), ORT_MASK_ALL, demo_query_hit, &c)
		                             : ort3_tree_query_box(sim->t3, box, ORT_MASK_ALL, demo_query_hit, &c);
		if (r == ORT_OK) return;
	}
	for (int i = 0; i < sim->total; ++i)
		if (sim->alive[i] && demo_overlap(&sim->boxes[i], &box)) fn(ctx, i, 0.0f);
}

// Where the segment origin + t * dir, t in [0, 1], enters the box, by the
// library's own rule (ortN_box_ray), so brute force and the tree agree.
static bool demo_ray_box(int dim, const float o[3], const float dir[3], const ort3_box *b, float *t_out)
{
	return dim == 3 ? ort3_box_ray(*b, o, dir, 1.0f, t_out) : ort2_box_ray(demo_box2(b), o, dir, 1.0f, t_out);
}

static float demo_ray_hit(void *ctx, ort_handle h, void *user_data, float t)
{
	(void)h;
	demo_hit_ctx *c = ctx;
	int i = demo_ptr_id(user_data);
	if (c->best < 0 || t < c->best_t) {
		c->best = i;
		c->best_t = t;
	}
	if (c->fn) c->fn(c->ctx, i, t);
	return c->nearest ? t : 1.0f;
}

static ort_result demo_sim_cast(demo_sim *sim, const float o[3], const float dir[3], demo_hit_ctx *c)
{
	ort_result r = ORT_ERROR_INVALID_ARGUMENT;
	if (!sim->brute) {
		r = sim->dim == 2 ? ort2_tree_ray_cast(sim->t2, o, dir, 1.0f, ORT_MASK_ALL, demo_ray_hit, c)
		                  : ort3_tree_ray_cast(sim->t3, o, dir, 1.0f, ORT_MASK_ALL, demo_ray_hit, c);
		if (r == ORT_OK) return r;
	}
	for (int i = 0; i < sim->total; ++i) {
		float t;
		if (sim->alive[i] && demo_ray_box(sim->dim, o, dir, &sim->boxes[i], &t)) demo_ray_hit(c, ORT_NULL_HANDLE, demo_id_ptr(i), t);
	}
	return sim->brute ? ORT_OK : r;
}

ort_result demo_sim_ray(demo_sim *sim, const float origin[3], const float dir[3], demo_hit_fn *fn, void *ctx)
{
	demo_hit_ctx c = {fn, ctx, 0.0f, -1, false};
	return demo_sim_cast(sim, origin, dir, &c);
}

int demo_sim_pick(demo_sim *sim, const float origin[3], const float dir[3], float *t_out)
{
	demo_hit_ctx c = {NULL, NULL, 0.0f, -1, true};
	demo_sim_cast(sim, origin, dir, &c);
	if (t_out) *t_out = c.best_t;
	return c.best;
}

static bool demo_contains(const ort3_box *outer, const ort3_box *inner)
{
	for (int d = 0; d < 3; ++d)
		if (inner->min[d] < outer->min[d] || inner->max[d] > outer->max[d]) return false;
	return true;
}

// The library does not say which node holds an item, so this applies the
// placement's rule to the drawn cells: the deepest cell holding the box (tight),
// the deepest cell holding the box's centre whose loose bounds hold the box
// (loose), or the deepest cell the box overlaps (leaves: one of several).
int demo_sim_item_cell(const demo_sim *sim, int i)
{
	if (sim->brute || i < 0 || i >= sim->total || !sim->alive[i]) return -1;
	const ort3_box *b = &sim->boxes[i];
	float centre[3];
	for (int d = 0; d < 3; ++d) centre[d] = 0.5f * (b->min[d] + b->max[d]);
	int best = -1;
	for (int k = 0; k < sim->cell_count; ++k) {
		const demo_cell *c = &sim->cells[k];
		bool fits;
		if (sim->placement == ORT_PLACEMENT_TIGHT) {
			fits = demo_contains(&c->cell, b);
		} else if (sim->placement == ORT_PLACEMENT_LEAVES) {
			fits = demo_overlap(&c->cell, b);
		} else {
			ort3_box point = {{centre[0], centre[1], centre[2]}, {centre[0], centre[1], centre[2]}};
			ort3_box loose = c->cell;
			for (int d = 0; d < sim->dim; ++d) {
				float h = 0.5f * (c->cell.max[d] - c->cell.min[d]);
				loose.min[d] -= h;
				loose.max[d] += h;
			}
			fits = demo_contains(&c->cell, &point) && demo_contains(&loose, b);
		}
		if (fits && (best < 0 || c->depth > sim->cells[best].depth)) best = k;
	}
	return best;
}

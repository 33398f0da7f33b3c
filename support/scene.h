/// @file scene.h
/// Deterministic scenes shared by the tests, the demo and the benchmark, so a
/// benchmarked scene can be watched and a tested scene can be timed.
/// Not part of the library: support code for orthant's own programs.
#ifndef ORTHANT_SUPPORT_SCENE_H
#define ORTHANT_SUPPORT_SCENE_H

#include <stdint.h>

#include "orthant/orthant.h"

/// A small, fast, seedable generator (splitmix64 seeding a xorshift64*), so
/// every program draws the same scene from the same seed on every machine.
typedef struct scn_rng {
	uint64_t state;
} scn_rng;

scn_rng scn_rng_make(uint64_t seed);
uint64_t scn_rng_next(scn_rng *rng);
/// Uniform in [lo, hi).
float scn_rng_float(scn_rng *rng, float lo, float hi);
/// Uniform integer in [lo, hi].
int scn_rng_int(scn_rng *rng, int lo, int hi);

/// The kinds of scene.
typedef enum scn_kind {
	SCN_BOUNCING,  ///< the bouncing-boxes demo: side 1..20, speed up to 10, in a 600x800 field
	SCN_UNIFORM,   ///< small boxes (side 0.5..2) spread so each overlaps 1-3 others
	SCN_CLUSTERED, ///< a few dense clusters
	SCN_MIXED,     ///< many small boxes and a few huge ones
	SCN_KIND_COUNT
} scn_kind;

/// Boxes with velocities in a world box; dim is 2 or 3. Boxes are kept in
/// ort3_box form; in 2D the z components are 0 (use scn_box2).
typedef struct scn_scene {
	int dim;
	int count;
	ort3_box world;
	ort3_box *boxes;
	float (*vel)[3];
	/// How much of the scene moves each frame (1 = every box).
	float moving_fraction;
	scn_rng rng;
} scn_scene;

/// Make a scene of count boxes. world_size scales the field (0 = the kind's
/// default: 600x800 for SCN_BOUNCING, a side giving ~2 overlaps per box for the
/// others). Returns 0, or -1 when out of memory.
int scn_scene_make(scn_scene *scene, scn_kind kind, int dim, int count, uint64_t seed);
void scn_scene_free(scn_scene *scene);

/// Advance one tick: each moving box steps by its velocity and bounces off the
/// world's walls (as the bouncing-boxes demo does).
void scn_scene_step(scn_scene *scene);

/// The piles a tree cannot spread out: boxes that overlap on all axes but one
/// (in 3D, two of three) and rarely as boxes, in [0, 1000]^dim, so a sweep or
/// a tree on any two axes meets a third or more of all pairs.
typedef enum scn_pile {
	SCN_PILE_PLATES, ///< all over one square (interval in 2D), stacked apart on the last axis
	SCN_PILE_STACKS, ///< one stack a family, each stacked on its own axis, the families apart on axis 0
	SCN_PILE_RODS,   ///< one family long on each axis, thin on the others, each two families apart
	                 ///< on the third axis (in 2D on the one the first family is thin on)
	/// four arms of strips round the centre, box i in arm i % 4, each arm
	/// across a centre line and long in x or y (every other axis long), its
	/// strips over the next arm's on their long axis: none fits a child
	SCN_PILE_PINWHEEL,
} scn_pile;

/// Draws uniform in [lo, hi) from the caller's generator, so each program
/// keeps its own stream (a test's scenes stay what its bounds were set on).
typedef float scn_draw_fn(void *rng, float lo, float hi);

/// Box i of n of a pile kind in dim (2 or 3) dimensions, into lo/hi.
void scn_pile_box(scn_pile kind, int dim, scn_draw_fn *draw, void *rng, int i, int n, float lo[3], float hi[3]);

static inline ort2_box scn_box2(const scn_scene *s, int i)
{
	const ort3_box *b = &s->boxes[i];
	ort2_box r = {{b->min[0], b->min[1]}, {b->max[0], b->max[1]}};
	return r;
}

static inline ort3_box scn_box3(const scn_scene *s, int i) { return s->boxes[i]; }

#endif

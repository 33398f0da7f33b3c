/// @file demo.h
/// orthant's demo: the classic bouncing boxes (and a 3D game's cubes and bullets in
/// 3D), the tree's cells drawn live, colliding boxes in red.
///
/// The demo is three parts that know little of each other:
///   - the simulation (sim.c): the shared scene (uniform or clustered, box sizes
///     following the count), the collision step by tree or by brute force, the
///     other method timed now and then for the comparison, queries, the statistics;
///   - the drawing (draw.c, draw3.c): everything on one SDL_Renderer, which is a
///     window's renderer or a software renderer on an SDL_Surface — so the window
///     and the headless mode draw with the same code;
///   - the program (main.c): options, keys, mouse, the window or headless loop.
#ifndef ORTHANT_DEMO_H
#define ORTHANT_DEMO_H

#include <SDL.h>
#include <SDL_ttf.h>
#include <stdbool.h>
#include <stdint.h>

#include "orthant/orthant.h"
#include "scene.h"

/// The object counts + and - step through (1-2-5 steps).
#define DEMO_COUNT_MIN 10
#define DEMO_COUNT_MAX 100000

/// The two scenes: the classic bouncing boxes spread over the field, or most of
/// them crowded in a few drifting clusters over a thin uniform background — the
/// scene where a tree's cells adapt (deep where objects crowd, shallow where the
/// field is empty) and a uniform grid's cannot.
typedef enum demo_scene {
	DEMO_SCENE_UNIFORM,
	DEMO_SCENE_CLUSTERED,
	DEMO_SCENE_COUNT
} demo_scene;
const char *demo_scene_string(demo_scene scene);

/// The count up to which boxes keep the classic sizes (side 1..20); above it box
/// sides and speeds shrink as 1/sqrt(count) (3D: 1/cbrt), so the field's density,
/// and the picture, stay as readable at 100,000 objects as at 500.
#define DEMO_SCALE_COUNT_2D 500
#define DEMO_SCALE_COUNT_3D 2000

/// The clusters of DEMO_SCENE_CLUSTERED, and the share of objects in them.
#define DEMO_CLUSTERS 6
#define DEMO_CLUSTERED_SHARE 0.75f

/// Brute force against the tree, as the panel shows it: every DEMO_COMPARE_EVERY
/// steps the method not running is timed once on the same boxes; brute force on
/// more than DEMO_BRUTE_SAMPLE objects is timed on an evenly spread sample of
/// that many and scaled by n(n-1) / m(m-1) — its cost is one test per pair,
/// whatever the boxes — so a 100,000-object frame (5e9 tests) never stalls.
#define DEMO_COMPARE_EVERY 30
/// The most objects brute force runs on every frame (demo_brute_limit in main.c).
#define DEMO_BRUTE_MAX 20000
#define DEMO_COMPARE_KEEP 4
#define DEMO_BRUTE_SAMPLE 4000

/// Bullet slots: bullets live in fixed slots after the scene's boxes, so an
/// object's index (its ID) never changes while it lives.
#define DEMO_BULLET_SLOTS 256

/// The window: the field (600x800, as in the classic demo) on the left, the panel on the right.
#define DEMO_FIELD_W 600
#define DEMO_FIELD_H 800
#define DEMO_PANEL_W 320
#define DEMO_WINDOW_W (DEMO_FIELD_W + DEMO_PANEL_W)
#define DEMO_WINDOW_H DEMO_FIELD_H

/// Colours the tests look for: colliding objects are red, the others yellow, the
/// cells blue-grey. Nothing else is drawn in red.
#define DEMO_RGB_RED 220, 40, 40
#define DEMO_RGB_YELLOW 230, 200, 40
#define DEMO_RGB_CELL 70, 100, 150
#define DEMO_RGB_BACKGROUND 18, 20, 26

/// A cell of the tree, as drawn.
typedef struct demo_cell {
	ort3_box cell;
	int depth;
	int entries;
} demo_cell;

/// The simulation: the scene, the objects' boxes, the tree or brute force, and
/// the numbers of the last collision step.
typedef struct demo_sim {
	int dim;         ///< 2 or 3
	int count;       ///< boxes of the scene (without bullets)
	uint64_t seed;
	demo_scene kind;
	float scale;     ///< box sides and speeds relative to the classic scene (<= 1)
	scn_scene scene;
	/// DEMO_SCENE_CLUSTERED: the clusters (a box drifting over the field) and the
	/// region each object bounces in (a cluster's index, or -1 for the field).
	ort3_box clusters[DEMO_CLUSTERS];
	float cluster_vel[DEMO_CLUSTERS][3];
	signed char *region; ///< [count]
	/// Objects: the scene's boxes, then DEMO_BULLET_SLOTS bullet slots.
	int total;       ///< count + DEMO_BULLET_SLOTS
	ort3_box *boxes; ///< [total]; z is 0 in 2D
	bool *alive;     ///< [total]; scene boxes always, bullets while flying
	bool *hit;       ///< [total]; overlaps another object this frame
	ort_handle *handles; ///< [total]; the items, in incremental mode
	float (*bullet_vel)[3];
	bool bullets;    ///< firing
	int bullet_clock;
	/// How the collision step runs.
	bool brute;
	bool incremental;
	ort_placement placement;
	ort2_tree *t2;
	ort3_tree *t3;
	bool tree_filled;  ///< incremental: items are in the tree
	/// Scratch for building and brute force.
	float *soa;       ///< [6 * total]
	int *ids;         ///< [total]
	void **udata;     ///< [total]: the user data of a batch build
	unsigned char *hit_scratch; ///< [total]: brute force's hits by packed index
	ort3_box *packed; ///< [total]
	ort2_box *packed2;
	/// The cells, gathered after the step for drawing and hover.
	demo_cell *cells;
	int cell_count, cell_cap;
	/// The numbers of the last step.
	int objects;
	long long pairs;
	long long tests;  ///< exact tests: pairs reported (tree), n(n-1)/2 (brute)
	double step_us;   ///< the collision step (update + pairs), microseconds
	/// The other method, timed every DEMO_COMPARE_EVERY steps on the same boxes:
	/// brute force while the tree runs (estimated from a sample when objects >
	/// DEMO_BRUTE_SAMPLE), the tree (rebuild + pairs) while brute force runs.
	double compare_us;  ///< the least of its recent timings; 0 until measured
	int compare_sample; ///< objects brute force was timed on (== objects: exact)
	int compare_objects;
	double compare_step_us; ///< the running method: its least step since the last comparison
	double compare_times[DEMO_COMPARE_KEEP]; ///< the other method's last timings (a ring)
	int compare_kept;   ///< timings taken for this count and mode
	bool compare_brute; ///< the mode they were taken in
	double step_min_us; ///< the least step since the last comparison (0: none yet)
	long long steps;    ///< collision steps run
	ort_tree_stats tree_stats;
	ort_result last_error;
	long long frame;
} demo_sim;

/// A uniform scene (demo_sim_set_scene changes it).
int demo_sim_init(demo_sim *sim, int dim, int count, uint64_t seed);
/// Make a new scene of that kind, same count and seed.
int demo_sim_set_scene(demo_sim *sim, demo_scene kind);
void demo_sim_free(demo_sim *sim);
/// Change the number of scene boxes: a new scene of that size, same seed.
int demo_sim_set_count(demo_sim *sim, int count);
void demo_sim_set_placement(demo_sim *sim, ort_placement placement);
void demo_sim_set_incremental(demo_sim *sim, bool incremental);
void demo_sim_set_brute(demo_sim *sim, bool brute);
/// Advance the scene one tick (when move) and run the collision step.
int demo_sim_frame(demo_sim *sim, bool move);
/// A mode name for the panel and the statistics ("tree loose incremental").
const char *demo_sim_mode(const demo_sim *sim, char *buf, size_t size);

/// Called with an object's index for each hit.
typedef void demo_hit_fn(void *ctx, int index, float t);
/// Objects overlapping a box (tree or scan, as the mode says).
void demo_sim_query_box(demo_sim *sim, ort3_box box, demo_hit_fn *fn, void *ctx);
/// Objects the segment origin + t * dir, t in [0, 1], touches, with the entry t.
/// Returns the library's result (the scan never fails).
ort_result demo_sim_ray(demo_sim *sim, const float origin[3], const float dir[3], demo_hit_fn *fn, void *ctx);
/// The nearest object along the segment, or -1; *t_out gets its entry t.
int demo_sim_pick(demo_sim *sim, const float origin[3], const float dir[3], float *t_out);
/// The cell the tree keeps object i in, as far as the drawn cells tell (the
/// placement's rule applied to them); -1 when not known (brute force).
int demo_sim_item_cell(const demo_sim *sim, int i);

/// Rubber bands and hover from the mouse (field coordinates).
typedef struct demo_ui {
	bool paused;
	bool show_cells;
	bool show_help;
	bool has_query;
	ort3_box query;
	bool has_ray;
	float ray_from[2], ray_to[2];
	int hover;          ///< object under the mouse, or -1
	/// What the drawing found for the query box and the ray (-1: none shown).
	int query_hits;
	int ray_hits;
	int ray_nearest;
	float ray_nearest_t;
	ort_result ray_result;
	float mouse[2];     ///< in window coordinates
	bool mouse_in;
	/// 3D camera, orbiting the room's centre.
	float yaw, pitch, distance;
	double fps;
	double step_avg_us; ///< the collision step, smoothed over recent frames
	char message[128];  ///< shown for a while (saved screenshots)
	int message_frames;
} demo_ui;

/// What a frame is drawn with.
typedef struct demo_draw {
	SDL_Renderer *renderer;
	TTF_Font *font;
	TTF_Font *font_small;
	struct demo_draw3 *d3; ///< the 3D view's buffers (draw3.c)
} demo_draw;

/// The default font (DejaVu Sans from fonts-dejavu-core), or the path in
/// ORTHANT_DEMO_FONT.
int demo_draw_open(demo_draw *d, SDL_Renderer *renderer);
void demo_draw_close(demo_draw *d);
/// Draw one whole frame: the field or the 3D view, then the panel.
void demo_draw_frame(demo_draw *d, demo_sim *sim, demo_ui *ui);
/// Text at (x, y) in the colour; returns the height used.
int demo_draw_text(demo_draw *d, TTF_Font *font, int x, int y, SDL_Color colour, const char *text);

/// 3D: the view and the projection the drawing and the mouse share.
typedef struct demo_camera {
	float eye[3], right[3], up[3], forward[3];
	float focal, cx, cy;
} demo_camera;
demo_camera demo_camera_make(const demo_sim *sim, const demo_ui *ui);
/// The ray from the eye through a window point (for hover picking).
void demo_camera_ray(const demo_camera *cam, float x, float y, float dir[3]);
void demo_draw_world3(demo_draw *d, demo_sim *sim, demo_ui *ui);
void demo_draw3_free(demo_draw *d);

/// Write what the renderer shows now to a PNG file (libpng). 0, or -1 with a
/// message on stderr.
int demo_save_png(SDL_Renderer *renderer, const char *path);

#endif

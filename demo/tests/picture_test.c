// picture_test.c: the demo's pictures say what the collision step found.
//
//   orthant_demo_picture_test                  draw frames in memory and check them
//   orthant_demo_picture_test --check-png [--max-red F] PNG..
//                                             check PNGs the program wrote (and
//                                             that red covers at most F of the field)
//
// In memory, with the demo's own drawing code on a software renderer: red
// pixels are on screen exactly when the step found pairs, the tree's cells are
// drawn (and not in brute force), the picture is not blank — in 2D and 3D, for
// every placement, rebuild and incremental, both scenes. The tree's pairs are
// also checked against brute force on the same scene. In the clustered scene the
// crowded parts of the field must show more cell lines and deeper cells than
// the empty parts (what the scene is for); at 100,000 objects the picture must
// not drown in red (box sizes follow the count).
#include "demo.h"

#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                                                                                               \
	do {                                                                                                               \
		if (!(cond)) {                                                                                                 \
			++failures;                                                                                                \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                                       \
			fprintf(stderr, __VA_ARGS__);                                                                              \
			fputc('\n', stderr);                                                                                       \
		}                                                                                                              \
	} while (0)

typedef struct demo_counts {
	long red, cell, background, other;
} demo_counts;

// Red: the drawn red or one of its face shades (3D). Cell: the cell colour
// (2D) or a blue-grey of the wireframe (3D). Only the field is looked at; the
// panel's text is not part of the picture's claim.
static demo_counts demo_classify(const unsigned char *px, int w, int h)
{
	demo_counts c = {0, 0, 0, 0};
	const unsigned char bg[3] = {DEMO_RGB_BACKGROUND};
	for (int y = 0; y < h; ++y)
		for (int x = 0; x < w && x < DEMO_FIELD_W; ++x) {
			const unsigned char *p = px + ((size_t)y * (size_t)w + (size_t)x) * 4;
			int r = p[0], g = p[1], b = p[2];
			if (r == bg[0] && g == bg[1] && b == bg[2])
				++c.background;
			else if (r >= 120 && g <= 60 && b <= 60)
				++c.red;
			else if (b >= r + 30 && b >= g + 20)
				++c.cell;
			else
				++c.other;
		}
	return c;
}

static demo_counts demo_read(SDL_Renderer *r, unsigned char *px)
{
	SDL_RenderReadPixels(r, NULL, SDL_PIXELFORMAT_RGBA32, px, DEMO_WINDOW_W * 4);
	return demo_classify(px, DEMO_WINDOW_W, DEMO_WINDOW_H);
}

typedef struct demo_case {
	int dim, count;
	bool brute, incremental, bullets;
	ort_placement placement;
	int frames;
} demo_case;

static void demo_case_name(const demo_case *k, char *buf, size_t size)
{
	snprintf(buf, size, "%dD n=%d %s%s%s", k->dim, k->count,
	         k->brute ? "brute" : ort_placement_string(k->placement), k->incremental ? " incremental" : "",
	         k->bullets ? " bullets" : "");
}

static void demo_run_case(demo_draw *d, const demo_case *k, unsigned char *px, int seen[2])
{
	char name[96];
	demo_case_name(k, name, sizeof name);
	demo_sim sim;
	if (demo_sim_init(&sim, k->dim, k->count, 7) != 0) {
		CHECK(0, "%s: out of memory", name);
		return;
	}
	demo_sim_set_brute(&sim, k->brute);
	demo_sim_set_placement(&sim, k->placement);
	demo_sim_set_incremental(&sim, k->incremental);
	sim.bullets = k->bullets;
	demo_ui ui;
	memset(&ui, 0, sizeof ui);
	ui.show_cells = true;
	ui.hover = -1;
	ui.yaw = 0.6f;
	ui.pitch = 0.35f;
	ui.distance = 1250.0f;
	for (int f = 0; f < k->frames; ++f) {
		CHECK(demo_sim_frame(&sim, true) == 0, "%s frame %d: step failed: %s", name, f, ort_result_string(sim.last_error));
		demo_draw_frame(d, &sim, &ui);
		demo_counts c = demo_read(d->renderer, px);
		bool pairs = sim.pairs > 0;
		seen[pairs]++;
		CHECK(pairs == (c.red > 0), "%s frame %d: %lld pairs but %ld red pixels", name, f, sim.pairs, c.red);
		CHECK(k->brute == (c.cell == 0), "%s frame %d: %ld cell pixels (%d cells)", name, f, c.cell, sim.cell_count);
		CHECK(c.other > 0, "%s frame %d: no objects drawn", name, f);
		CHECK(c.background > 0, "%s frame %d: no background", name, f);
		if (!k->brute) CHECK(sim.tree_stats.items == sim.objects, "%s: tree holds %d of %d", name, sim.tree_stats.items, sim.objects);
	}
	demo_sim_free(&sim);
}

// The tree finds the same colliding objects and pairs as brute force.
static void demo_compare(int dim, int count, ort_placement placement, bool incremental, demo_scene kind)
{
	demo_sim a, b;
	if (demo_sim_init(&a, dim, count, 3) != 0 || demo_sim_init(&b, dim, count, 3) != 0 ||
	    demo_sim_set_scene(&a, kind) != 0 || demo_sim_set_scene(&b, kind) != 0) {
		CHECK(0, "out of memory");
		return;
	}
	demo_sim_set_placement(&a, placement);
	demo_sim_set_incremental(&a, incremental);
	demo_sim_set_brute(&b, true);
	a.bullets = b.bullets = true;
	for (int f = 0; f < 30; ++f) {
		demo_sim_frame(&a, true);
		demo_sim_frame(&b, true);
		CHECK(a.pairs == b.pairs, "%dD %s %s%s frame %d: tree %lld pairs, brute force %lld", dim,
		      demo_scene_string(kind), ort_placement_string(placement), incremental ? " incremental" : "", f, a.pairs,
		      b.pairs);
		CHECK(a.objects == b.objects && !memcmp(a.hit, b.hit, (size_t)a.total * sizeof *a.hit),
		      "%dD frame %d: colliding objects differ", dim, f);
		CHECK(b.tests == (long long)b.objects * (b.objects - 1) / 2, "brute force tests");
	}
	demo_sim_free(&a);
	demo_sim_free(&b);
}

// The clustered scene, drawn: cut the field into tiles, rank them by the
// objects whose centre lies in them, and compare the crowded tenth with the
// emptiest half — their cell-line pixels (read from the picture) and the depth
// of their deepest leaf (from the cells drawn). A uniform grid would give both
// the same; the tree must not.
enum { DEMO_TILE = 50, DEMO_TILES_X = DEMO_FIELD_W / DEMO_TILE, DEMO_TILES = DEMO_TILES_X * (DEMO_FIELD_H / DEMO_TILE) };

typedef struct demo_tile {
	int objects, cell_px, depth;
} demo_tile;

static int demo_tile_cmp(const void *pa, const void *pb)
{
	const demo_tile *a = pa, *b = pb;
	return (a->objects > b->objects) - (a->objects < b->objects);
}

static void demo_clustered_cells(demo_draw *d, unsigned char *px, int count)
{
	demo_sim sim;
	if (demo_sim_init(&sim, 2, count, 11) != 0 || demo_sim_set_scene(&sim, DEMO_SCENE_CLUSTERED) != 0) {
		CHECK(0, "out of memory");
		return;
	}
	demo_ui ui;
	memset(&ui, 0, sizeof ui);
	ui.show_cells = true;
	ui.hover = -1;
	for (int f = 0; f < 5; ++f) demo_sim_frame(&sim, true);
	demo_draw_frame(d, &sim, &ui);
	SDL_RenderReadPixels(d->renderer, NULL, SDL_PIXELFORMAT_RGBA32, px, DEMO_WINDOW_W * 4);
	static demo_tile tiles[DEMO_TILES];
	memset(tiles, 0, sizeof tiles);
	for (int i = 0; i < sim.total; ++i) {
		if (!sim.alive[i]) continue;
		int x = (int)(0.5f * (sim.boxes[i].min[0] + sim.boxes[i].max[0])) / DEMO_TILE;
		int y = (int)(0.5f * (sim.boxes[i].min[1] + sim.boxes[i].max[1])) / DEMO_TILE;
		if (x >= 0 && x < DEMO_TILES_X && y >= 0 && y < DEMO_FIELD_H / DEMO_TILE) tiles[y * DEMO_TILES_X + x].objects++;
	}
	for (int y = 0; y < DEMO_FIELD_H; ++y)
		for (int x = 0; x < DEMO_FIELD_W; ++x) {
			demo_counts c = demo_classify(px + ((size_t)y * DEMO_WINDOW_W + (size_t)x) * 4, 1, 1);
			tiles[(y / DEMO_TILE) * DEMO_TILES_X + x / DEMO_TILE].cell_px += (int)c.cell;
		}
	for (int k = 0; k < sim.cell_count; ++k) {
		const demo_cell *c = &sim.cells[k];
		float cx = 0.5f * (c->cell.min[0] + c->cell.max[0]), cy = 0.5f * (c->cell.min[1] + c->cell.max[1]);
		int x = (int)cx / DEMO_TILE, y = (int)cy / DEMO_TILE;
		if (x < 0 || x >= DEMO_TILES_X || y < 0 || y >= DEMO_FIELD_H / DEMO_TILE) continue;
		demo_tile *t = &tiles[y * DEMO_TILES_X + x];
		if (c->depth > t->depth) t->depth = c->depth;
	}
	qsort(tiles, DEMO_TILES, sizeof tiles[0], demo_tile_cmp);
	double sparse_px = 0, crowd_px = 0, sparse_depth = 0, crowd_depth = 0;
	int half = DEMO_TILES / 2, tenth = DEMO_TILES / 10;
	for (int k = 0; k < half; ++k) sparse_px += tiles[k].cell_px, sparse_depth += tiles[k].depth;
	for (int k = DEMO_TILES - tenth; k < DEMO_TILES; ++k) crowd_px += tiles[k].cell_px, crowd_depth += tiles[k].depth;
	sparse_px /= half, sparse_depth /= half, crowd_px /= tenth, crowd_depth /= tenth;
	printf("clustered, %d objects: objects per tile %d (emptiest) .. %d (most crowded); cell pixels per tile %.0f "
	       "(emptiest half) vs %.0f (most crowded tenth); deepest cell %.2f vs %.2f\n",
	       count, tiles[0].objects, tiles[DEMO_TILES - 1].objects, sparse_px, crowd_px, sparse_depth, crowd_depth);
	CHECK(tiles[DEMO_TILES - 1].objects >= 8 * (tiles[half].objects + 1), "%d objects: not clustered (%d vs %d)", count,
	      tiles[DEMO_TILES - 1].objects, tiles[half].objects);
	CHECK(crowd_px >= 2.0 * sparse_px, "%d objects: crowded tiles show %.0f cell pixels, empty ones %.0f", count,
	      crowd_px, sparse_px);
	CHECK(crowd_depth >= sparse_depth + 1.5, "%d objects: deepest cells %.2f where crowded, %.2f where empty", count,
	      crowd_depth, sparse_depth);
	demo_sim_free(&sim);
}

static double demo_max_red = 1.0; // --max-red: the most of the field red may cover

static int demo_check_png(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		CHECK(0, "%s: cannot open", path);
		return -1;
	}
	png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	png_infop info = png ? png_create_info_struct(png) : NULL;
	if (!png || !info || setjmp(png_jmpbuf(png))) {
		CHECK(0, "%s: not a PNG libpng can read", path);
		png_destroy_read_struct(&png, &info, NULL);
		fclose(f);
		return -1;
	}
	png_init_io(png, f);
	png_read_png(png, info, PNG_TRANSFORM_STRIP_16 | PNG_TRANSFORM_EXPAND, NULL);
	int w = (int)png_get_image_width(png, info), h = (int)png_get_image_height(png, info);
	int channels = png_get_channels(png, info);
	png_bytepp rows = png_get_rows(png, info);
	unsigned char *px = malloc((size_t)w * (size_t)h * 4);
	if (px && channels >= 3) {
		for (int y = 0; y < h; ++y)
			for (int x = 0; x < w; ++x)
				for (int k = 0; k < 4; ++k)
					px[((size_t)y * (size_t)w + (size_t)x) * 4 + k] = k < 3 ? rows[y][x * channels + k] : 255;
		demo_counts c = demo_classify(px, w, h);
		printf("%s: %dx%d, red %ld, cell %ld, other %ld, background %ld\n", path, w, h, c.red, c.cell, c.other,
		       c.background);
		CHECK(w == DEMO_WINDOW_W && h == DEMO_WINDOW_H, "%s: %dx%d", path, w, h);
		CHECK(c.red > 0 && c.cell > 0 && c.other > 0 && c.background > 0, "%s: a picture without red, cells or objects", path);
		double field = (double)DEMO_FIELD_W * DEMO_FIELD_H;
		CHECK(c.red <= demo_max_red * field, "%s: red covers %.1f%% of the field, at most %.1f%% allowed", path,
		      100.0 * c.red / field, 100.0 * demo_max_red);
	} else {
		CHECK(0, "%s: %d channels", path, channels);
	}
	free(px);
	png_destroy_read_struct(&png, &info, NULL);
	fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--check-png")) {
		for (int i = 2; i < argc; ++i) {
			if (!strcmp(argv[i], "--max-red") && i + 1 < argc)
				demo_max_red = atof(argv[++i]);
			else
				demo_check_png(argv[i]);
		}
		if (failures) fprintf(stderr, "%d checks failed\n", failures);
		return failures ? 1 : 0;
	}
	SDL_Surface *surface = SDL_CreateRGBSurfaceWithFormat(0, DEMO_WINDOW_W, DEMO_WINDOW_H, 32, SDL_PIXELFORMAT_RGBA32);
	SDL_Renderer *renderer = surface ? SDL_CreateSoftwareRenderer(surface) : NULL;
	demo_draw d;
	if (!renderer || demo_draw_open(&d, renderer) != 0) {
		fprintf(stderr, "cannot make a software renderer or open the font\n");
		return 1;
	}
	unsigned char *px = malloc((size_t)DEMO_WINDOW_W * DEMO_WINDOW_H * 4);
	if (!px) return 1;

	// Few boxes: frames with and without pairs. Many: always pairs.
	static const demo_case cases[] = {
		{2, 10, false, false, false, ORT_PLACEMENT_LOOSE, 150},
		{2, 10, true, false, false, ORT_PLACEMENT_LOOSE, 60},
		{2, 500, false, false, false, ORT_PLACEMENT_LOOSE, 3},
		{2, 500, false, false, false, ORT_PLACEMENT_TIGHT, 3},
		{2, 500, false, false, false, ORT_PLACEMENT_LEAVES, 3},
		{2, 500, false, true, true, ORT_PLACEMENT_LOOSE, 10},
		{2, 500, true, false, false, ORT_PLACEMENT_LOOSE, 3},
		{3, 10, false, false, false, ORT_PLACEMENT_LOOSE, 60},
		{3, 2000, false, false, false, ORT_PLACEMENT_LOOSE, 3},
		{3, 2000, false, true, true, ORT_PLACEMENT_TIGHT, 10},
		{3, 2000, false, false, true, ORT_PLACEMENT_LEAVES, 3},
		{3, 2000, true, false, false, ORT_PLACEMENT_LOOSE, 2},
	};
	int seen[2][2] = {{0, 0}, {0, 0}};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) demo_run_case(&d, &cases[i], px, seen[cases[i].dim - 2]);
	for (int dim = 2; dim <= 3; ++dim) {
		CHECK(seen[dim - 2][0] > 0 && seen[dim - 2][1] > 0, "%dD: frames without pairs %d, with pairs %d", dim,
		      seen[dim - 2][0], seen[dim - 2][1]);
		for (int p = 0; p < ORT_PLACEMENT_COUNT; ++p) {
			demo_compare(dim, 1000, (ort_placement)p, false, DEMO_SCENE_UNIFORM);
			demo_compare(dim, 1000, (ort_placement)p, true, DEMO_SCENE_UNIFORM);
			demo_compare(dim, 2000, (ort_placement)p, p == ORT_PLACEMENT_LOOSE, DEMO_SCENE_CLUSTERED);
		}
	}
	printf("2D frames without/with pairs: %d/%d, 3D: %d/%d\n", seen[0][0], seen[0][1], seen[1][0], seen[1][1]);
	demo_clustered_cells(&d, px, 500);
	demo_clustered_cells(&d, px, 10000);

	free(px);
	demo_draw_close(&d);
	SDL_DestroyRenderer(renderer);
	SDL_FreeSurface(surface);
	SDL_Quit();
	if (failures) fprintf(stderr, "%d checks failed\n", failures);
	else printf("demo pictures: all checks passed\n");
	return failures ? 1 : 0;
}

// picture_test.c: the demo's pictures say what the collision step found.
//
//   orthant_demo_picture_test                  draw frames in memory and check them
//   orthant_demo_picture_test --check-png F..  check PNGs the program wrote
//
// In memory, with the demo's own drawing code on a software renderer: red
// pixels are on screen exactly when the step found pairs, the tree's cells are
// drawn (and not in brute force), the picture is not blank — in 2D and 3D, for
// every placement, rebuild and incremental. The tree's pairs are also checked
// against brute force on the same scene.
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
static void demo_compare(int dim, int count, ort_placement placement, bool incremental)
{
	demo_sim a, b;
	if (demo_sim_init(&a, dim, count, 3) != 0 || demo_sim_init(&b, dim, count, 3) != 0) {
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
		CHECK(a.pairs == b.pairs, "%dD %s%s frame %d: tree %lld pairs, brute force %lld", dim,
		      ort_placement_string(placement), incremental ? " incremental" : "", f, a.pairs, b.pairs);
		CHECK(a.objects == b.objects && !memcmp(a.hit, b.hit, (size_t)a.total * sizeof *a.hit),
		      "%dD frame %d: colliding objects differ", dim, f);
		CHECK(b.tests == (long long)b.objects * (b.objects - 1) / 2, "brute force tests");
	}
	demo_sim_free(&a);
	demo_sim_free(&b);
}

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
		for (int i = 2; i < argc; ++i) demo_check_png(argv[i]);
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
			demo_compare(dim, 1000, (ort_placement)p, false);
			demo_compare(dim, 1000, (ort_placement)p, true);
		}
	}
	printf("2D frames without/with pairs: %d/%d, 3D: %d/%d\n", seen[0][0], seen[0][1], seen[1][0], seen[1][1]);

	free(px);
	demo_draw_close(&d);
	SDL_DestroyRenderer(renderer);
	SDL_FreeSurface(surface);
	SDL_Quit();
	if (failures) fprintf(stderr, "%d checks failed\n", failures);
	else printf("demo pictures: all checks passed\n");
	return failures ? 1 : 0;
}

// png.c: what the renderer shows, written to a PNG file with libpng.
#include "demo.h"

#include <png.h>
#include <stdio.h>
#include <stdlib.h>

int demo_save_png(SDL_Renderer *renderer, const char *path)
{
	int w = 0, h = 0;
	if (SDL_GetRendererOutputSize(renderer, &w, &h) != 0 || w <= 0 || h <= 0) {
		fprintf(stderr, "orthant_demo: cannot read the picture: %s\n", SDL_GetError());
		return -1;
	}
	size_t pitch = (size_t)w * 4;
	unsigned char *pixels = malloc(pitch * (size_t)h);
	png_bytep *rows = malloc((size_t)h * sizeof *rows);
	FILE *f = NULL;
	png_structp png = NULL;
	png_infop info = NULL;
	int rc = -1;
	if (!pixels || !rows) {
		fprintf(stderr, "orthant_demo: out of memory saving %s\n", path);
		goto done;
	}
	// RGBA32 is R, G, B, A in memory order on every machine: what PNG wants.
	if (SDL_RenderReadPixels(renderer, NULL, SDL_PIXELFORMAT_RGBA32, pixels, (int)pitch) != 0) {
		fprintf(stderr, "orthant_demo: cannot read the picture: %s\n", SDL_GetError());
		goto done;
	}
	for (int y = 0; y < h; ++y) {
		rows[y] = pixels + (size_t)y * pitch;
		for (int x = 0; x < w; ++x) rows[y][4 * x + 3] = 255;
	}
	f = fopen(path, "wb");
	if (!f) {
		fprintf(stderr, "orthant_demo: cannot write %s\n", path);
		goto done;
	}
	png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	info = png ? png_create_info_struct(png) : NULL;
	if (!png || !info) goto done;
	if (setjmp(png_jmpbuf(png))) {
		fprintf(stderr, "orthant_demo: libpng failed writing %s\n", path);
		goto done;
	}
	png_init_io(png, f);
	png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_RGBA, PNG_INTERLACE_NONE,
	             PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	png_write_info(png, info);
	png_write_image(png, rows);
	png_write_end(png, NULL);
	rc = 0;
done:
	if (png) png_destroy_write_struct(&png, info ? &info : NULL);
	if (f && fclose(f) != 0) rc = -1;
	free(rows);
	free(pixels);
	return rc;
}

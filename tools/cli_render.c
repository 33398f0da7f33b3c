/// @file cli_render.c
/// `orthant render`: draw a cli_drawing as a PNG (a small software rasteriser
/// and libpng's simplified API) or as an SVG. Both share one world-to-pixel
/// mapping: a uniform scale, y pointing up, a margin around what is drawn.
#include "cli.h"

#include <math.h>
#ifdef ORTHANT_HAVE_PNG
#include <png.h>
#endif
#include <stdlib.h>
#include <string.h>

enum { CLI_MARGIN = 10, CLI_MAX_HEIGHT = 16384 };
static const double CLI_PI = 3.14159265358979323846;

bool cli_drawing_add(cli_drawing *d, double x0, double y0, double x1, double y1, cli_style style)
{
	if (d->count == d->capacity) {
		size_t cap = d->capacity ? d->capacity * 2 : 1024;
		cli_rect *r = realloc(d->rects, cap * sizeof *r);
		if (!r)
			return false;
		d->rects = r;
		d->capacity = cap;
	}
	d->rects[d->count++] = (cli_rect){x0, y0, x1, y1, style};
	return true;
}

void cli_drawing_free(cli_drawing *d)
{
	free(d->rects);
	memset(d, 0, sizeof *d);
}

// ---------------------------------------------------------------------------
// The mapping

typedef struct cli_view {
	double x0, y0, x1, y1; ///< the world window
	double scale;          ///< pixels per world unit
	int width, height;
	double ray_end[2];     ///< the ray's far end, clipped to the window
} cli_view;

static void cli_grow(cli_view *v, double x, double y)
{
	if (x < v->x0) v->x0 = x;
	if (x > v->x1) v->x1 = x;
	if (y < v->y0) v->y0 = y;
	if (y > v->y1) v->y1 = y;
}

static void cli_view_make(const cli_drawing *d, int width, cli_view *v)
{
	v->x0 = v->y0 = INFINITY;
	v->x1 = v->y1 = -INFINITY;
	for (size_t i = 0; i < d->count; i++) {
		cli_grow(v, d->rects[i].x0, d->rects[i].y0);
		cli_grow(v, d->rects[i].x1, d->rects[i].y1);
	}
	if (d->has_circle) {
		cli_grow(v, d->circle[0] - d->circle[2], d->circle[1] - d->circle[2]);
		cli_grow(v, d->circle[0] + d->circle[2], d->circle[1] + d->circle[2]);
	}
	if (d->has_point)
		cli_grow(v, d->point[0], d->point[1]);
	if (d->has_ray) {
		cli_grow(v, d->ray_origin[0], d->ray_origin[1]);
		if (isfinite(d->ray_max))
			cli_grow(v, d->ray_origin[0] + d->ray_max * d->ray_dir[0], d->ray_origin[1] + d->ray_max * d->ray_dir[1]);
	}
	if (!(v->x0 <= v->x1)) { // nothing drawn
		v->x0 = v->y0 = 0;
		v->x1 = v->y1 = 1;
	}
	double w = v->x1 - v->x0, h = v->y1 - v->y0;
	double pad = (w > h ? w : h) * 0.02;
	if (pad == 0)
		pad = 1;
	v->x0 -= pad, v->x1 += pad, v->y0 -= pad, v->y1 += pad;
	w = v->x1 - v->x0, h = v->y1 - v->y0;

	double inner = width - 2 * CLI_MARGIN;
	v->scale = inner / w;
	if (h * v->scale > CLI_MAX_HEIGHT - 2 * CLI_MARGIN)
		v->scale = (CLI_MAX_HEIGHT - 2 * CLI_MARGIN) / h;
	v->width = width;
	v->height = (int)ceil(h * v->scale) + 2 * CLI_MARGIN;
	if (v->height < 16)
		v->height = 16;

	// The ray ends where it leaves the window (or at its --max).
	if (d->has_ray) {
		double t1 = d->ray_max;
		const double lo[2] = {v->x0, v->y0}, hi[2] = {v->x1, v->y1};
		for (int i = 0; i < 2; i++) {
			if (d->ray_dir[i] == 0)
				continue;
			double a = (lo[i] - d->ray_origin[i]) / d->ray_dir[i], b = (hi[i] - d->ray_origin[i]) / d->ray_dir[i];
			double exit = a > b ? a : b;
			if (exit < t1)
				t1 = exit;
		}
		if (!(t1 > 0) || isinf(t1))
			t1 = 0;
		v->ray_end[0] = d->ray_origin[0] + t1 * d->ray_dir[0];
		v->ray_end[1] = d->ray_origin[1] + t1 * d->ray_dir[1];
	}
}

/// World to pixels, clamped a little outside the picture so huge boxes stay drawable.
static double cli_px(const cli_view *v, double x)
{
	double p = CLI_MARGIN + (x - v->x0) * v->scale;
	return p < -4 ? -4 : p > v->width + 4 ? v->width + 4 : p;
}

static double cli_py(const cli_view *v, double y)
{
	double p = v->height - CLI_MARGIN - (y - v->y0) * v->scale;
	return p < -4 ? -4 : p > v->height + 4 ? v->height + 4 : p;
}

/// A rectangle in pixels, at least 2 pixels wide and high so points show.
static void cli_rect_px(const cli_view *v, const cli_rect *r, double *x0, double *y0, double *x1, double *y1)
{
	*x0 = cli_px(v, r->x0), *x1 = cli_px(v, r->x1);
	*y0 = cli_py(v, r->y1), *y1 = cli_py(v, r->y0);
	if (*x1 - *x0 < 2) {
		double c = (*x0 + *x1) / 2;
		*x0 = c - 1, *x1 = c + 1;
	}
	if (*y1 - *y0 < 2) {
		double c = (*y0 + *y1) / 2;
		*y0 = c - 1, *y1 = c + 1;
	}
}

// The styles: outline colour, fill colour and fill opacity (0: none).
static const struct {
	unsigned char stroke[3], fill[3];
	double fill_alpha;
	const char *name;
} cli_styles[CLI_STYLE_COUNT] = {
	[CLI_STYLE_CELL] = {{190, 190, 190}, {0, 0, 0}, 0, "cell"},
	[CLI_STYLE_OBJECT] = {{40, 80, 200}, {40, 80, 200}, 0.15, "object"},
	[CLI_STYLE_HIT] = {{210, 30, 30}, {210, 30, 30}, 0.35, "hit"},
	[CLI_STYLE_QUERY] = {{240, 140, 0}, {0, 0, 0}, 0, "query"},
};
static const unsigned char cli_ray_colour[3] = {20, 150, 40};

// ---------------------------------------------------------------------------
// PNG

#ifndef ORTHANT_HAVE_PNG
static int cli_write_png(const cli_drawing *d, const cli_view *v, const char *path)
{
	(void)d, (void)v, (void)CLI_PI;
	return cli_fail("cannot write %s: this orthant was built without libpng (Debian: libpng-dev); -o OUT.svg works",
	                path);
}
#else
typedef struct cli_raster {
	unsigned char *rgb;
	int w, h;
} cli_raster;

static void cli_plot(cli_raster *r, int x, int y, const unsigned char c[3], double a)
{
	if (x < 0 || y < 0 || x >= r->w || y >= r->h)
		return;
	unsigned char *p = r->rgb + ((size_t)y * (size_t)r->w + (size_t)x) * 3;
	for (int i = 0; i < 3; i++)
		p[i] = (unsigned char)lround(p[i] * (1 - a) + c[i] * a);
}

static void cli_line(cli_raster *r, double fx0, double fy0, double fx1, double fy1, const unsigned char c[3])
{
	int x0 = (int)lround(fx0), y0 = (int)lround(fy0), x1 = (int)lround(fx1), y1 = (int)lround(fy1);
	int dx = abs(x1 - x0), dy = -abs(y1 - y0), sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1, e = dx + dy;
	for (;;) {
		cli_plot(r, x0, y0, c, 1);
		if (x0 == x1 && y0 == y1)
			break;
		int e2 = 2 * e;
		if (e2 >= dy) {
			e += dy;
			x0 += sx;
		}
		if (e2 <= dx) {
			e += dx;
			y0 += sy;
		}
	}
}

static void cli_raster_rect(cli_raster *r, const cli_view *v, const cli_rect *rect)
{
	double x0, y0, x1, y1;
	cli_rect_px(v, rect, &x0, &y0, &x1, &y1);
	int ix0 = (int)lround(x0), iy0 = (int)lround(y0), ix1 = (int)lround(x1), iy1 = (int)lround(y1);
	double a = cli_styles[rect->style].fill_alpha;
	if (a > 0)
		for (int y = iy0 + 1; y < iy1; y++)
			for (int x = ix0 + 1 < 0 ? 0 : ix0 + 1; x < ix1 && x < r->w; x++)
				cli_plot(r, x, y, cli_styles[rect->style].fill, a);
	const unsigned char *c = cli_styles[rect->style].stroke;
	cli_line(r, ix0, iy0, ix1, iy0, c);
	cli_line(r, ix1, iy0, ix1, iy1, c);
	cli_line(r, ix1, iy1, ix0, iy1, c);
	cli_line(r, ix0, iy1, ix0, iy0, c);
}

static int cli_write_png(const cli_drawing *d, const cli_view *v, const char *path)
{
	cli_raster r = {malloc((size_t)v->width * (size_t)v->height * 3), v->width, v->height};
	if (!r.rgb)
		return cli_fail("out of memory");
	memset(r.rgb, 255, (size_t)r.w * (size_t)r.h * 3);
	for (int s = 0; s < CLI_STYLE_COUNT; s++) // cells under objects under hits under the query
		for (size_t i = 0; i < d->count; i++)
			if ((int)d->rects[i].style == s)
				cli_raster_rect(&r, v, &d->rects[i]);
	const unsigned char *q = cli_styles[CLI_STYLE_QUERY].stroke;
	if (d->has_circle) {
		double cx = cli_px(v, d->circle[0]), cy = cli_py(v, d->circle[1]), rad = d->circle[2] * v->scale;
		int steps = 16 + (int)(rad * 8 < 20000 ? rad * 8 : 20000);
		for (int i = 0; i < steps; i++) {
			double a0 = 2 * CLI_PI * i / steps, a1 = 2 * CLI_PI * (i + 1) / steps;
			cli_line(&r, cx + rad * cos(a0), cy + rad * sin(a0), cx + rad * cos(a1), cy + rad * sin(a1), q);
		}
	}
	if (d->has_point) {
		double px = cli_px(v, d->point[0]), py = cli_py(v, d->point[1]);
		cli_line(&r, px - 5, py, px + 5, py, q);
		cli_line(&r, px, py - 5, px, py + 5, q);
	}
	if (d->has_ray) {
		double ox = cli_px(v, d->ray_origin[0]), oy = cli_py(v, d->ray_origin[1]);
		cli_line(&r, ox, oy, cli_px(v, v->ray_end[0]), cli_py(v, v->ray_end[1]), cli_ray_colour);
		for (int k = -2; k <= 2; k++)
			cli_line(&r, ox - 2, oy + k, ox + 2, oy + k, cli_ray_colour);
	}

	png_image image;
	memset(&image, 0, sizeof image);
	image.version = PNG_IMAGE_VERSION;
	image.width = (png_uint_32)r.w;
	image.height = (png_uint_32)r.h;
	image.format = PNG_FORMAT_RGB;
	int ok = png_image_write_to_file(&image, path, 0, r.rgb, 0, NULL);
	free(r.rgb);
	if (!ok)
		return cli_fail("cannot write %s: %s", path, image.message);
	return CLI_EXIT_OK;
}
#endif

// ---------------------------------------------------------------------------
// SVG

static int cli_write_svg(const cli_drawing *d, const cli_view *v, const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return cli_fail("cannot write %s", path);
	fprintf(f,
	        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n",
	        v->width, v->height, v->width, v->height);
	fprintf(f, "<title>%s</title>\n<style>\n", d->title ? d->title : "orthant");
	for (int s = 0; s < CLI_STYLE_COUNT; s++) {
		const unsigned char *c = cli_styles[s].stroke, *fl = cli_styles[s].fill;
		if (cli_styles[s].fill_alpha > 0)
			fprintf(f, ".%s{stroke:rgb(%d,%d,%d);fill:rgb(%d,%d,%d);fill-opacity:%.2f;stroke-width:1}\n",
			        cli_styles[s].name, c[0], c[1], c[2], fl[0], fl[1], fl[2], cli_styles[s].fill_alpha);
		else
			fprintf(f, ".%s{stroke:rgb(%d,%d,%d);fill:none;stroke-width:%d}\n", cli_styles[s].name, c[0], c[1],
			        c[2], s == CLI_STYLE_QUERY ? 2 : 1);
	}
	fprintf(f, ".ray{stroke:rgb(%d,%d,%d);stroke-width:2}\n</style>\n", cli_ray_colour[0], cli_ray_colour[1],
	        cli_ray_colour[2]);
	fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
	for (int s = 0; s < CLI_STYLE_COUNT; s++)
		for (size_t i = 0; i < d->count; i++) {
			if ((int)d->rects[i].style != s)
				continue;
			double x0, y0, x1, y1;
			cli_rect_px(v, &d->rects[i], &x0, &y0, &x1, &y1);
			fprintf(f, "<rect class=\"%s\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\"/>\n",
			        cli_styles[s].name, x0, y0, x1 - x0, y1 - y0);
		}
	if (d->has_circle)
		fprintf(f, "<circle class=\"query\" cx=\"%.2f\" cy=\"%.2f\" r=\"%.2f\"/>\n", cli_px(v, d->circle[0]),
		        cli_py(v, d->circle[1]), d->circle[2] * v->scale);
	if (d->has_point)
		fprintf(f, "<circle class=\"query\" cx=\"%.2f\" cy=\"%.2f\" r=\"3\"/>\n", cli_px(v, d->point[0]),
		        cli_py(v, d->point[1]));
	if (d->has_ray)
		fprintf(f, "<line class=\"ray\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>\n",
		        cli_px(v, d->ray_origin[0]), cli_py(v, d->ray_origin[1]), cli_px(v, v->ray_end[0]),
		        cli_py(v, v->ray_end[1]));
	fprintf(f, "</svg>\n");
	bool bad = ferror(f) != 0;
	if (fclose(f) != 0 || bad)
		return cli_fail("cannot write %s", path);
	return CLI_EXIT_OK;
}

int cli_render_write(const cli_drawing *d, const char *path, int width)
{
	cli_view v = {0};
	cli_view_make(d, width, &v);
	size_t n = strlen(path);
	if (n >= 4 && !strcmp(path + n - 4, ".svg"))
		return cli_write_svg(d, &v, path);
	return cli_write_png(d, &v, path);
}

// draw.c: one frame of the demo on an SDL_Renderer — the 2D field, the
// panel of live numbers, the key help. The window and the headless mode both
// come here; only the renderer's target differs.
#include "demo.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define DEMO_FONT_DEFAULT "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"

static const SDL_Color demo_white = {235, 235, 240, 255};
static const SDL_Color demo_grey = {150, 155, 170, 255};
static const SDL_Color demo_accent = {120, 200, 255, 255};

int demo_draw_open(demo_draw *d, SDL_Renderer *renderer)
{
	memset(d, 0, sizeof *d);
	d->renderer = renderer;
	if (!TTF_WasInit() && TTF_Init() != 0) {
		fprintf(stderr, "orthant_demo: SDL_ttf: %s\n", TTF_GetError());
		return -1;
	}
	const char *path = SDL_getenv("ORTHANT_DEMO_FONT");
	if (!path || !*path) path = DEMO_FONT_DEFAULT;
	d->font = TTF_OpenFont(path, 16);
	d->font_small = TTF_OpenFont(path, 13);
	if (!d->font || !d->font_small) {
		fprintf(stderr, "orthant_demo: cannot open the font %s: %s (install fonts-dejavu-core, or set "
		                "ORTHANT_DEMO_FONT to a .ttf file)\n",
		        path, TTF_GetError());
		demo_draw_close(d);
		return -1;
	}
	return 0;
}

void demo_draw_close(demo_draw *d)
{
	demo_draw3_free(d);
	if (d->font) TTF_CloseFont(d->font);
	if (d->font_small) TTF_CloseFont(d->font_small);
	d->font = d->font_small = NULL;
	if (TTF_WasInit()) TTF_Quit();
}

int demo_draw_text(demo_draw *d, TTF_Font *font, int x, int y, SDL_Color colour, const char *text)
{
	SDL_Surface *s = TTF_RenderUTF8_Blended(font, text, colour);
	if (!s) return TTF_FontLineSkip(font);
	SDL_Texture *t = SDL_CreateTextureFromSurface(d->renderer, s);
	if (t) {
		SDL_Rect dst = {x, y, s->w, s->h};
		SDL_RenderCopy(d->renderer, t, NULL, &dst);
		SDL_DestroyTexture(t);
	}
	SDL_FreeSurface(s);
	return TTF_FontLineSkip(font);
}

// 1234567 -> "1,234,567".
static const char *demo_fmt(long long v, char *buf, size_t size)
{
	char raw[32];
	SDL_snprintf(raw, sizeof raw, "%lld", v < 0 ? -v : v);
	size_t len = strlen(raw), o = 0;
	if (v < 0 && o + 1 < size) buf[o++] = '-';
	for (size_t i = 0; i < len && o + 1 < size; ++i) {
		if (i > 0 && (len - i) % 3 == 0 && o + 1 < size) buf[o++] = ',';
		if (o + 1 < size) buf[o++] = raw[i];
	}
	buf[o] = '\0';
	return buf;
}

// The pixels [*at, *at + *len) a span covers: every pixel it touches, but one
// pixel, the one at its centre, when it is narrower than a pixel — so the
// smallest box is seen, and a crowd of 100,000 sub-pixel boxes does not fill the
// field with boxes drawn two or four times their size.
static void demo_span(float lo, float hi, int *at, int *len)
{
	if (hi - lo < 1.0f) {
		*at = (int)floorf(0.5f * (lo + hi));
		*len = 1;
		return;
	}
	*at = (int)floorf(lo);
	*len = (int)ceilf(hi) - *at;
}

// A box's pixels.
static SDL_Rect demo_rect(const ort3_box *b)
{
	SDL_Rect r;
	demo_span(b->min[0], b->max[0], &r.x, &r.w);
	demo_span(b->min[1], b->max[1], &r.y, &r.h);
	return r;
}

static void demo_outline(SDL_Renderer *r, const ort3_box *b, int grow)
{
	SDL_Rect q = demo_rect(b);
	q.x -= grow;
	q.y -= grow;
	q.w += 2 * grow;
	q.h += 2 * grow;
	SDL_RenderDrawRect(r, &q);
}

typedef struct demo_mark {
	demo_draw *d;
	demo_sim *sim;
	int hits;
} demo_mark;

static void demo_mark_hit(void *ctx, int i, float t)
{
	(void)t;
	demo_mark *m = ctx;
	demo_outline(m->d->renderer, &m->sim->boxes[i], 1);
	++m->hits;
}

static void demo_draw_field(demo_draw *d, demo_sim *sim, demo_ui *ui)
{
	SDL_Renderer *r = d->renderer;
	if (ui->show_cells && !sim->brute) {
		SDL_SetRenderDrawColor(r, DEMO_RGB_CELL, 255);
		for (int k = 0; k < sim->cell_count; ++k) demo_outline(r, &sim->cells[k].cell, 0);
	}
	// Yellow first, red last: a red box is never hidden, so red pixels are on
	// screen exactly when pairs were found.
	SDL_SetRenderDrawColor(r, DEMO_RGB_YELLOW, 255);
	for (int i = 0; i < sim->count; ++i) {
		if (sim->hit[i]) continue;
		SDL_Rect q = demo_rect(&sim->boxes[i]);
		SDL_RenderFillRect(r, &q);
	}
	SDL_SetRenderDrawColor(r, 240, 240, 240, 255);
	for (int i = sim->count; i < sim->total; ++i) {
		if (!sim->alive[i]) continue;
		// A streak behind each bullet, so the stream reads as fast.
		const float *v = sim->bullet_vel[i - sim->count];
		float cx = 0.5f * (sim->boxes[i].min[0] + sim->boxes[i].max[0]), cy = 0.5f * (sim->boxes[i].min[1] + sim->boxes[i].max[1]);
		SDL_RenderDrawLineF(r, cx - 1.5f * v[0], cy - 1.5f * v[1], cx, cy);
		if (sim->hit[i]) continue;
		SDL_Rect q = demo_rect(&sim->boxes[i]);
		SDL_RenderFillRect(r, &q);
	}
	SDL_SetRenderDrawColor(r, DEMO_RGB_RED, 255);
	for (int i = 0; i < sim->total; ++i) {
		if (!sim->alive[i] || !sim->hit[i]) continue;
		SDL_Rect q = demo_rect(&sim->boxes[i]);
		SDL_RenderFillRect(r, &q);
	}

	if (ui->has_query) {
		demo_mark m = {d, sim, 0};
		SDL_SetRenderDrawColor(r, 90, 230, 130, 255);
		demo_sim_query_box(sim, ui->query, demo_mark_hit, &m);
		SDL_Rect q = demo_rect(&ui->query);
		SDL_RenderDrawRect(r, &q);
		ui->query_hits = m.hits;
	}
	if (ui->has_ray) {
		float o[3] = {ui->ray_from[0], ui->ray_from[1], 0.0f};
		float dir[3] = {ui->ray_to[0] - o[0], ui->ray_to[1] - o[1], 0.0f};
		demo_mark m = {d, sim, 0};
		SDL_SetRenderDrawColor(r, 90, 200, 255, 255);
		ui->ray_result = demo_sim_ray(sim, o, dir, demo_mark_hit, &m);
		SDL_RenderDrawLineF(r, o[0], o[1], ui->ray_to[0], ui->ray_to[1]);
		ui->ray_hits = m.hits;
		float t;
		int near = demo_sim_pick(sim, o, dir, &t);
		ui->ray_nearest = near;
		ui->ray_nearest_t = t;
		if (near >= 0) {
			SDL_SetRenderDrawColor(r, 255, 255, 255, 255);
			demo_outline(r, &sim->boxes[near], 2);
			demo_outline(r, &sim->boxes[near], 3);
			float px = o[0] + t * dir[0], py = o[1] + t * dir[1];
			SDL_RenderDrawLineF(r, px - 5, py - 5, px + 5, py + 5);
			SDL_RenderDrawLineF(r, px - 5, py + 5, px + 5, py - 5);
		}
	}
	if (ui->hover >= 0 && ui->hover < sim->total && sim->alive[ui->hover]) {
		int c = demo_sim_item_cell(sim, ui->hover);
		if (c >= 0) {
			SDL_SetRenderDrawColor(r, 210, 90, 210, 255);
			demo_outline(r, &sim->cells[c].cell, 0);
		}
		SDL_SetRenderDrawColor(r, 255, 255, 255, 255);
		demo_outline(r, &sim->boxes[ui->hover], 2);
	}
}

// A time for the panel: microseconds below 10 ms, milliseconds above.
static const char *demo_fmt_us(double us, char *buf, size_t size)
{
	if (us < 10000.0)
		SDL_snprintf(buf, size, "%.0f \xc2\xb5s", us);
	else
		SDL_snprintf(buf, size, "%.1f ms", us / 1000.0);
	return buf;
}

// Brute force against the tree on this scene: one bar each, to the same scale
// (linear: the point is how much shorter the tree's is), and how it was timed.
static int demo_draw_compare(demo_draw *d, demo_sim *sim, int x, int y)
{
	SDL_Renderer *r = d->renderer;
	char line[160], a[32], b[32];
	y += demo_draw_text(d, d->font, x, y, demo_accent, "collision step, brute force vs tree");
	if (sim->compare_us <= 0.0) {
		y += demo_draw_text(d, d->font_small, x, y, demo_grey, "  (measuring)");
		return y;
	}
	// Like against like: both are the least of recent timings (demo_sim_compare).
	double tree = sim->brute ? sim->compare_us : sim->compare_step_us;
	double brute = sim->brute ? sim->compare_step_us : sim->compare_us;
	double most = tree > brute ? tree : brute;
	const int bar_w = DEMO_PANEL_W - 32 - 96;
	struct {
		const char *name;
		double us;
		Uint8 rgb[3];
	} rows[2] = {{"brute force", brute, {230, 150, 50}}, {"tree", tree, {120, 200, 255}}};
	for (int k = 0; k < 2; ++k) {
		int h = TTF_FontLineSkip(d->font_small);
		demo_draw_text(d, d->font_small, x, y, demo_white, rows[k].name);
		int w = most > 0 ? (int)(bar_w * rows[k].us / most + 0.5) : 0;
		SDL_Rect bar = {x + 84, y + 3, w > 2 ? w : 2, h - 6};
		SDL_SetRenderDrawColor(r, rows[k].rgb[0], rows[k].rgb[1], rows[k].rgb[2], 255);
		SDL_RenderFillRect(r, &bar);
		y += h;
		demo_draw_text(d, d->font_small, x + 84, y - 2, demo_grey, demo_fmt_us(rows[k].us, a, sizeof a));
		y += h;
	}
	if (tree > 0 && brute >= tree)
		SDL_snprintf(line, sizeof line, "the tree is %.1fx faster", brute / tree);
	else
		SDL_snprintf(line, sizeof line, "brute force is %.1fx faster (few objects)", brute > 0 ? tree / brute : 0.0);
	y += demo_draw_text(d, d->font, x, y, demo_white, line);
	// Say how the other method was timed: it does not run every frame.
	SDL_snprintf(line, sizeof line, "%s timed every %dth frame%s", sim->brute ? "the tree" : "brute force",
	             DEMO_COMPARE_EVERY, !sim->brute && sim->compare_sample < sim->compare_objects ? " on" : "");
	y += demo_draw_text(d, d->font_small, x, y, demo_grey, line);
	if (!sim->brute && sim->compare_sample < sim->compare_objects) {
		SDL_snprintf(line, sizeof line, "%s of %s objects, scaled by n\xc2\xb2", demo_fmt(sim->compare_sample, a, sizeof a),
		             demo_fmt(sim->compare_objects, b, sizeof b));
		y += demo_draw_text(d, d->font_small, x, y, demo_grey, line);
	}
	y += demo_draw_text(d, d->font_small, x, y, demo_grey, "both: the least of recent timings");
	return y;
}

// The key help: what to press, and what it does.
static const char *const demo_help[][2] = {
	{"+ / -", "more / fewer objects (10 .. 100,000)"},
	{"b", "brute force / tree"},
	{"c", "scene: clustered / uniform"},
	{"p", "placement: tight, leaves, loose"},
	{"u", "rebuild every frame / incremental move"},
	{"g", "cells on / off"},
	{"f", "bullets on / off"},
	{"space", "pause"},
	{"s", "save a PNG"},
	{"h", "this help"},
	{"q, Esc", "quit"},
	{"", ""},
	{"2D: left drag", "query box"},
	{"2D: right drag", "ray (nearest marked)"},
	{"hover", "item ID and its cell"},
	{"3D: left drag", "orbit; wheel: zoom"},
};

static void demo_draw_help(demo_draw *d)
{
	SDL_Renderer *r = d->renderer;
	int n = (int)(sizeof demo_help / sizeof demo_help[0]);
	int skip = TTF_FontLineSkip(d->font_small);
	SDL_Rect box = {30, 60, DEMO_FIELD_W - 60, skip * n + 60};
	SDL_SetRenderDrawBlendMode(r, SDL_BLENDMODE_BLEND);
	SDL_SetRenderDrawColor(r, 10, 12, 18, 225);
	SDL_RenderFillRect(r, &box);
	SDL_SetRenderDrawBlendMode(r, SDL_BLENDMODE_NONE);
	SDL_SetRenderDrawColor(r, 120, 200, 255, 255);
	SDL_RenderDrawRect(r, &box);
	int y = box.y + 12;
	y += demo_draw_text(d, d->font, box.x + 16, y, demo_accent, "Keys and mouse");
	for (int i = 0; i < n; ++i) {
		if (*demo_help[i][0]) demo_draw_text(d, d->font_small, box.x + 16, y, demo_accent, demo_help[i][0]);
		if (*demo_help[i][1]) demo_draw_text(d, d->font_small, box.x + 140, y, demo_white, demo_help[i][1]);
		y += skip;
	}
}

static void demo_draw_panel(demo_draw *d, demo_sim *sim, demo_ui *ui)
{
	SDL_Renderer *r = d->renderer;
	SDL_Rect panel = {DEMO_FIELD_W, 0, DEMO_PANEL_W, DEMO_WINDOW_H};
	SDL_SetRenderDrawColor(r, 30, 32, 42, 255);
	SDL_RenderFillRect(r, &panel);
	int x = DEMO_FIELD_W + 16, y = 14;
	char line[160], a[32], b[32];
	y += demo_draw_text(d, d->font, x, y, demo_accent, sim->dim == 2 ? "orthant \xe2\x80\x94 quadtree demo" : "orthant \xe2\x80\x94 octree demo");
	y += 8;
	char mode[64];
	demo_sim_mode(sim, mode, sizeof mode);
	SDL_snprintf(line, sizeof line, "mode: %s%s", mode, ui->paused ? "  (paused)" : "");
	y += demo_draw_text(d, d->font, x, y, demo_white, line);
	if (sim->scale < 1.0f)
		SDL_snprintf(line, sizeof line, "scene: %s, box size x%.2f", demo_scene_string(sim->kind), sim->scale);
	else
		SDL_snprintf(line, sizeof line, "scene: %s", demo_scene_string(sim->kind));
	y += demo_draw_text(d, d->font, x, y, demo_white, line);
	SDL_snprintf(line, sizeof line, "objects: %s", demo_fmt(sim->objects, a, sizeof a));
	y += demo_draw_text(d, d->font, x, y, demo_white, line);
	SDL_snprintf(line, sizeof line, "pairs: %s", demo_fmt(sim->pairs, a, sizeof a));
	y += demo_draw_text(d, d->font, x, y, demo_white, line);
	SDL_snprintf(line, sizeof line, "exact tests / frame: %s", demo_fmt(sim->tests, a, sizeof a));
	y += demo_draw_text(d, d->font, x, y, demo_white, line);
	if (!sim->brute) {
		// What brute force would test on the same objects (the classic comparison).
		SDL_snprintf(line, sizeof line, "  brute force would test %s",
		             demo_fmt((long long)sim->objects * (sim->objects - 1) / 2, a, sizeof a));
		y += demo_draw_text(d, d->font_small, x, y, demo_grey, line);
	}
	SDL_snprintf(line, sizeof line, "collision step: %s \xc2\xb5s (avg %s)", demo_fmt((long long)(sim->step_us + 0.5), a, sizeof a),
	             demo_fmt((long long)(ui->step_avg_us + 0.5), b, sizeof b));
	y += demo_draw_text(d, d->font, x, y, demo_white, line);
	if (ui->fps > 0)
		SDL_snprintf(line, sizeof line, "fps: %.1f", ui->fps);
	else
		SDL_snprintf(line, sizeof line, "fps: \xe2\x80\x94 (headless)");
	y += demo_draw_text(d, d->font, x, y, demo_white, line);
	if (!sim->brute) {
		SDL_snprintf(line, sizeof line, "tree: %s nodes, depth %d", demo_fmt(sim->tree_stats.nodes, a, sizeof a),
		             sim->tree_stats.depth);
		y += demo_draw_text(d, d->font, x, y, demo_grey, line);
		SDL_snprintf(line, sizeof line, "memory: %s KiB", demo_fmt((long long)(sim->tree_stats.bytes / 1024), a, sizeof a));
		y += demo_draw_text(d, d->font, x, y, demo_grey, line);
	}
	y += 8;
	y = demo_draw_compare(d, sim, x, y);
	y += 8;
	if (sim->last_error != ORT_OK) {
		SDL_snprintf(line, sizeof line, "error: %s", ort_result_string(sim->last_error));
		y += demo_draw_text(d, d->font, x, y, demo_white, line);
	}
	int bullets = 0;
	for (int i = sim->count; i < sim->total; ++i) bullets += sim->alive[i];
	if (sim->bullets || bullets) {
		SDL_snprintf(line, sizeof line, "bullets: %d in flight%s", bullets, sim->bullets ? "" : " (stopped)");
		y += demo_draw_text(d, d->font, x, y, demo_grey, line);
	}
	y += 10;
	if (ui->query_hits >= 0) {
		SDL_snprintf(line, sizeof line, "query box: %d hits", ui->query_hits);
		y += demo_draw_text(d, d->font, x, y, demo_white, line);
	}
	if (ui->ray_hits >= 0) {
		if (ui->ray_result != ORT_OK)
			SDL_snprintf(line, sizeof line, "ray: by scan (%s)", ort_result_string(ui->ray_result));
		else if (ui->ray_nearest >= 0)
			SDL_snprintf(line, sizeof line, "ray: %d hits, nearest #%d", ui->ray_hits, ui->ray_nearest);
		else
			SDL_snprintf(line, sizeof line, "ray: no hit");
		y += demo_draw_text(d, d->font, x, y, demo_white, line);
	}
	if (ui->hover >= 0 && ui->hover < sim->total && sim->alive[ui->hover]) {
		const ort3_box *hb = &sim->boxes[ui->hover];
		SDL_snprintf(line, sizeof line, "hover: #%d%s", ui->hover, ui->hover >= sim->count ? " (bullet)" : "");
		y += demo_draw_text(d, d->font, x, y, demo_white, line);
		if (sim->dim == 2)
			SDL_snprintf(line, sizeof line, "  box (%.0f, %.0f)-(%.0f, %.0f)", hb->min[0], hb->min[1], hb->max[0], hb->max[1]);
		else
			SDL_snprintf(line, sizeof line, "  box (%.0f, %.0f, %.0f)+%.0f", hb->min[0], hb->min[1], hb->min[2],
			             hb->max[0] - hb->min[0]);
		y += demo_draw_text(d, d->font_small, x, y, demo_grey, line);
		int c = demo_sim_item_cell(sim, ui->hover);
		if (c >= 0) {
			const demo_cell *cell = &sim->cells[c];
			SDL_snprintf(line, sizeof line, "  node: depth %d, %d entries", cell->depth, cell->entries);
			y += demo_draw_text(d, d->font_small, x, y, demo_grey, line);
			if (sim->dim == 2)
				SDL_snprintf(line, sizeof line, "  cell (%.0f, %.0f)-(%.0f, %.0f)", cell->cell.min[0], cell->cell.min[1],
				             cell->cell.max[0], cell->cell.max[1]);
			else
				SDL_snprintf(line, sizeof line, "  cell (%.0f, %.0f, %.0f)+%.0f", cell->cell.min[0], cell->cell.min[1],
				             cell->cell.min[2], cell->cell.max[0] - cell->cell.min[0]);
			y += demo_draw_text(d, d->font_small, x, y, demo_grey, line);
		}
	}
	if (ui->message_frames > 0) {
		y += 10;
		demo_draw_text(d, d->font_small, x, y, demo_accent, ui->message);
	}
	int bottom = DEMO_WINDOW_H - 3 * TTF_FontLineSkip(d->font_small) - 10;
	demo_draw_text(d, d->font_small, x, bottom, demo_grey, "h: keys  +/-: objects  b: brute force  c: scene");
	demo_draw_text(d, d->font_small, x, bottom + TTF_FontLineSkip(d->font_small), demo_grey,
	               "p: placement   u: update   g: cells");
	demo_draw_text(d, d->font_small, x, bottom + 2 * TTF_FontLineSkip(d->font_small), demo_grey,
	               sim->dim == 2 ? "drag: query box   right drag: ray" : "drag: orbit   f: bullets");
}

void demo_draw_frame(demo_draw *d, demo_sim *sim, demo_ui *ui)
{
	SDL_Renderer *r = d->renderer;
	SDL_SetRenderDrawBlendMode(r, SDL_BLENDMODE_NONE);
	SDL_SetRenderDrawColor(r, DEMO_RGB_BACKGROUND, 255);
	SDL_RenderClear(r);
	ui->query_hits = ui->ray_hits = ui->ray_nearest = -1;
	SDL_Rect field = {0, 0, DEMO_FIELD_W, DEMO_FIELD_H};
	SDL_RenderSetClipRect(r, &field);
	if (sim->dim == 2)
		demo_draw_field(d, sim, ui);
	else
		demo_draw_world3(d, sim, ui);
	SDL_RenderSetClipRect(r, NULL);
	demo_draw_panel(d, sim, ui);
	if (ui->show_help) demo_draw_help(d);
}

/// @file cli.h
/// What the parts of the `orthant` command-line tool share: the parsed command
/// line, buffered output, the progress line, sorting, and the drawing handed
/// from the tree to the PNG/SVG writers.
///
/// The tool is cli.c (arguments, help, reading the scene, dispatch), cli_dim.inc
/// compiled twice as cli_dim2.c and cli_dim3.c (every subcommand, written once
/// for both dimensions, like the library's tree_dim.h), cli_util.c and
/// cli_render.c. Every internal name starts with `cli_` (`cli2_`/`cli3_` for the
/// two instances of the per-dimension code).
#ifndef ORTHANT_TOOLS_CLI_H
#define ORTHANT_TOOLS_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "orthant/base.h"
#include "scene_file.h"

/// Exit statuses: a refused file or a failed run is 1, a bad command line 2.
enum { CLI_EXIT_OK = 0, CLI_EXIT_FAIL = 1, CLI_EXIT_USAGE = 2 };

typedef enum cli_command {
	CLI_PAIRS,
	CLI_QUERY,
	CLI_RAY,
	CLI_KNN,
	CLI_STATS,
	CLI_RENDER,
	CLI_COMMAND_COUNT
} cli_command;

/// A comma-separated list of numbers from the command line.
typedef struct cli_values {
	int n; ///< 0 when the option was not given
	double v[7];
} cli_values;

/// The parsed command line.
typedef struct cli_options {
	cli_command command;
	const char *file;  ///< the scene file; "-" is standard input
	const char *name;  ///< the file's name in messages ("<stdin>" for "-")
	ort_placement placement; ///< for ortN_tree; ignored when packed
	bool packed;       ///< --placement packed: an ortN_packed tree instead
	int bucket;        ///< 0: the library's default
	int max_depth;     ///< -1: the library's default
	cli_values box;    ///< --box
	cli_values sphere; ///< --sphere
	cli_values point;  ///< --point
	cli_values origin; ///< --origin (ray), or the first half of render's --ray
	cli_values dir;    ///< --dir (ray), or the second half of render's --ray
	double max_t;      ///< --max; INFINITY when not given
	int k;             ///< --k
	const char *out;   ///< render -o
	int width;         ///< render --width
	int view[2];       ///< render --view: the two axes drawn (0 x, 1 y, 2 z)
	int threads;       ///< --threads: workers for the build and the pairs (1: none)
	/// --memory (pairs): bytes the sorted pairs may hold at once; past it they
	/// are found again in passes, each keeping the pairs of a range of lower IDs
	size_t memory;
	bool timing;       ///< --timing: one line of phase times on stderr
	double read_ms;    ///< how long reading the file took (for --timing)
} cli_options;

/// Print "orthant: " + message + the subcommand's usage line to stderr; returns
/// CLI_EXIT_USAGE.
int cli_usage_error(const cli_options *o, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 3)))
#endif
	;

/// Print "orthant: " + message to stderr; returns CLI_EXIT_FAIL.
int cli_fail(const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 1, 2)))
#endif
	;

// ---------------------------------------------------------------------------
// Buffered output to stdout (no stdio call per number).

void cli_out_u64(uint64_t v);
void cli_out_char(char c);
void cli_out_str(const char *s);
/// A number with 9 significant digits (printf's %.9g).
void cli_out_g9(double v);
/// Flush; false when writing failed (a full disk, a closed pipe).
bool cli_out_flush(void);

// ---------------------------------------------------------------------------
// The progress line: shown on stderr, rewritten in place, only when stderr is
// a terminal and the run has taken more than a second.

void cli_progress_start(void);
/// Seconds on a monotonic clock (for the progress line and --timing).
double cli_now(void);
/// Show "orthant: <text>" if it is time to; cheap when it is not.
void cli_progress(const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 1, 2)))
#endif
	;
/// Erase the progress line, if one was shown.
void cli_progress_end(void);
/// The progress callback for sf_read.
void cli_progress_read(void *ctx, size_t objects);

// ---------------------------------------------------------------------------
// Sorting

/// Sort keys ascending (LSD radix sort, skipping bytes all keys share), carrying
/// vals (may be NULL) along. tmp_keys/tmp_vals: scratch of n entries each
/// (tmp_vals only when vals is given). Stable.
void cli_radix_sort(uint64_t *keys, uint32_t *vals, uint64_t *tmp_keys, uint32_t *tmp_vals, size_t n);

/// The objects ranked by ID: rank[i] is the position of object i in ID order.
/// Returns NULL when out of memory. Sorting by rank is sorting by ID.
uint32_t *cli_rank_by_id(const sf_scene *scene);

// ---------------------------------------------------------------------------
// Drawing (render): rectangles in world coordinates of the two viewed axes.

typedef enum cli_style {
	CLI_STYLE_CELL,   ///< a tree node's cell
	CLI_STYLE_OBJECT, ///< an object
	CLI_STYLE_HIT,    ///< an object the query found
	CLI_STYLE_QUERY,  ///< the query box
	CLI_STYLE_COUNT
} cli_style;

typedef struct cli_rect {
	double x0, y0, x1, y1;
	cli_style style;
} cli_rect;

typedef struct cli_drawing {
	cli_rect *rects;
	size_t count, capacity;
	bool has_ray;
	double ray_origin[2], ray_dir[2], ray_max; ///< projected; ray_max may be INFINITY
	bool has_circle;
	double circle[3]; ///< centre x, y and radius
	bool has_point;
	double point[2];
	const char *title;
} cli_drawing;

/// Append a rectangle; false when out of memory.
bool cli_drawing_add(cli_drawing *d, double x0, double y0, double x1, double y1, cli_style style);
void cli_drawing_free(cli_drawing *d);
/// Write the drawing as a PNG or SVG (by path's extension), width pixels wide.
/// Returns CLI_EXIT_OK, or prints why and returns CLI_EXIT_FAIL.
int cli_render_write(const cli_drawing *d, const char *path, int width);

// ---------------------------------------------------------------------------
// The subcommands, per dimension (cli_dim.inc).

int cli2_run(const cli_options *o, sf_scene *scene);
int cli3_run(const cli_options *o, sf_scene *scene);

#endif

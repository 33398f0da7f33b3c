/// @file scene_file.h
/// The streaming reader of orthant's plain scene files, for the command-line tool.
///
/// A scene file holds one object per line: `ID MINX MINY MAXX MAXY` (2D) or
/// `ID MINX MINY MINZ MAXX MAXY MAXZ` (3D), fields separated by spaces or tabs
/// (only those: `\v`, `\f` and other control characters are refused, and so is
/// a comma, with the hint to separate numbers with spaces). ID is an unsigned
/// 64-bit decimal integer, unique in the file. Blank lines and lines whose first
/// non-blank character is `#` are ignored. Lines end with LF or CRLF; a CR
/// anywhere else is refused, as is a NUL byte anywhere. A UTF-8 byte order mark
/// is skipped at the start of the file and refused elsewhere. A line holds at
/// most 4096 bytes, its line end excluded; a longer comment is skipped, a longer
/// object line refused. The dimension comes from the first object line and every
/// later line must agree.
///
/// How it reads: the file is read in 1 MiB blocks into one buffer that never
/// grows (an unfinished line, at most 4097 bytes, is carried to the next block),
/// so memory is bounded whatever the file holds; lines are parsed in place and
/// only the growing result arrays allocate (by doubling), never a line.
/// Numbers take a fast exact path (Clinger: at most 15 significant digits and a
/// small power of ten, where one double multiply or divide is correctly rounded)
/// and fall back to strtod otherwise, so every number reads as the nearest double
/// and then as the nearest float. Duplicate IDs are found while reading, with an
/// open-addressing hash set, so the error names the first bad line.
#ifndef ORTHANT_TOOLS_SCENE_FILE_H
#define ORTHANT_TOOLS_SCENE_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/// A scene read from a file. Coordinates are stored per object as
/// min[0..dim) then max[0..dim), the layout of ort2_box / ort3_box.
typedef struct sf_scene {
	int dim;          ///< 2 or 3; 0 when the file holds no object
	size_t count;     ///< objects read
	uint64_t *ids;    ///< count IDs, in file order
	float *coords;    ///< count * 2 * dim floats
	uint64_t *lines;  ///< the line each object came from (1-based)
	size_t capacity;  ///< room in the arrays, in objects
} sf_scene;

/// Why a read failed.
typedef enum sf_status {
	SF_OK = 0,
	SF_ERROR_LINE, ///< a bad line: sf_error.line and sf_error.message say which and why
	SF_ERROR_IO,   ///< the file could not be read (errno is in sf_error.errnum)
	SF_ERROR_MEMORY,
} sf_status;

/// What went wrong, filled on failure.
typedef struct sf_error {
	uint64_t line;      ///< 1-based line of SF_ERROR_LINE
	int errnum;         ///< errno of SF_ERROR_IO
	char message[160];  ///< the reason, without file or line
} sf_error;

/// Called now and then while reading (every 65536 lines) with the objects read
/// so far; for a progress line. May be NULL.
typedef void sf_progress_fn(void *ctx, size_t objects);

/// The largest number of objects a scene may hold (the tree indexes with int).
#define SF_MAX_OBJECTS ((size_t)0x7fffffff)

/// Read a whole scene from an open stream. On failure the scene is freed and
/// zeroed, and *err says why. Coordinates whose magnitude exceeds
/// ORTHANT_COORD_LIMIT are refused like any other bad number.
sf_status sf_read(FILE *in, sf_scene *scene, sf_error *err, sf_progress_fn *progress, void *progress_ctx);

/// Free what a scene holds and zero it. Safe on a zeroed scene.
void sf_scene_free(sf_scene *scene);

/// What sf_parse_double found.
typedef enum sf_number {
	SF_NUMBER_OK = 0,
	SF_NUMBER_INVALID,  ///< not a decimal number
	SF_NUMBER_NAN,      ///< `nan` (any case, any sign)
	SF_NUMBER_INFINITE, ///< `inf`, `infinity`, or a number too large for a double
} sf_number;

/// Parse a decimal floating-point number occupying exactly [s, end):
/// `[+-]digits[.digits][(e|E)[+-]digits]` (digits on at least one side of the
/// point; no hex), the grammar and rounding of the scene reader, so the command
/// line reads its option values the same way. *end must be writable: it is
/// overwritten for a moment (strtod needs a terminator) and restored.
sf_number sf_parse_double(char *s, char *end, double *out);

#endif

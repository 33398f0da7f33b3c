/// @file scene_file.c
/// The streaming scene-file reader (see scene_file.h for the format).
#include "scene_file.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "orthant/base.h"

enum {
	SF_BLOCK = 1 << 20,       // the read buffer: bytes read at a time, plus a kept partial line
	SF_MAX_FIELDS = 7,        // ID + 6 coordinates
	SF_PROGRESS_LINES = 1 << 16,
	SF_QUOTE_MAX = 40,        // longest token quoted in a message
	SF_LINE_MAX = 4096,       // the longest line, in bytes, its line end excluded (scene_file.h)
};

static const char *const sf_names2[] = {"ID", "MINX", "MINY", "MAXX", "MAXY"};
static const char *const sf_names3[] = {"ID", "MINX", "MINY", "MINZ", "MAXX", "MAXY", "MAXZ"};

// ---------------------------------------------------------------------------
// Numbers

static bool sf_is_digit(char c) { return c >= '0' && c <= '9'; }

static char sf_lower(char c) { return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c; }

// True when [s, end) spells word, ignoring case.
static bool sf_word(const char *s, const char *end, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(end - s) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (sf_lower(s[i]) != word[i])
			return false;
	return true;
}

sf_number sf_parse_double(char *s, char *end, double *out)
{
	// Exact powers of ten: every one up to 1e22 is a double.
	static const double pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
	                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
	const char *p = s;
	bool negative = false;
	if (p < end && (*p == '+' || *p == '-')) {
		negative = *p == '-';
		p++;
	}
	if (sf_word(p, end, "nan"))
		return SF_NUMBER_NAN;
	if (sf_word(p, end, "inf") || sf_word(p, end, "infinity"))
		return SF_NUMBER_INFINITE;

	// Scan the grammar, gathering up to 19 significant digits for the fast path.
	uint64_t mantissa = 0;
	int significant = 0;  // significant digits seen (leading zeros excluded)
	int exp10 = 0;        // decimal exponent to apply to mantissa
	int digits = 0;       // digits seen, on either side of the point
	for (; p < end && sf_is_digit(*p); p++, digits++) {
		if (significant < 19) {
			if (mantissa != 0 || *p != '0') {
				mantissa = mantissa * 10 + (uint64_t)(*p - '0');
				significant++;
			}
		} else {
			significant++;
			exp10++;
		}
	}
	if (p < end && *p == '.') {
		for (p++; p < end && sf_is_digit(*p); p++, digits++) {
			if (significant < 19) {
				if (mantissa != 0 || *p != '0') {
					mantissa = mantissa * 10 + (uint64_t)(*p - '0');
					significant++;
				}
				exp10--;
			} else {
				significant++;
			}
		}
	}
	if (digits == 0)
		return SF_NUMBER_INVALID;
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		bool eneg = false;
		if (p < end && (*p == '+' || *p == '-')) {
			eneg = *p == '-';
			p++;
		}
		if (p == end || !sf_is_digit(*p))
			return SF_NUMBER_INVALID;
		int e = 0;
		for (; p < end && sf_is_digit(*p); p++)
			if (e < 100000)
				e = e * 10 + (*p - '0');
		exp10 += eneg ? -e : e;
	}
	if (p != end)
		return SF_NUMBER_INVALID;

	double v;
	if (mantissa == 0) {
		v = 0.0;
	} else if (significant <= 15 && exp10 >= -22 && exp10 <= 22) {
		// Clinger's fast path: mantissa < 2^53 and the power of ten are exact,
		// so one correctly rounded operation gives the correctly rounded result.
		v = (double)mantissa;
		v = exp10 < 0 ? v / pow10[-exp10] : v * pow10[exp10];
	} else {
		char saved = *end;
		*end = '\0';
		v = fabs(strtod(s, NULL));
		*end = saved;
	}
	if (isinf(v))
		return SF_NUMBER_INFINITE;
	*out = negative ? -v : v;
	return SF_NUMBER_OK;
}

// ---------------------------------------------------------------------------
// The reader

/// A slot of the ID hash set: the ID and its object's index + 1 (0: empty).
/// Keeping the ID in the slot makes a probe one memory access, not two.
typedef struct sf_slot {
	uint64_t id;
	uint32_t index1;
} sf_slot;

typedef struct sf_reader {
	sf_scene *scene;
	sf_error *err;
	// Duplicate IDs: while IDs arrive in ascending order (the usual file) a
	// repeat is impossible and nothing is hashed; the first ID out of order
	// builds the hash set from the objects read so far.
	bool ascending;
	uint64_t last_id;
	sf_slot *slots;   // hash set by ID, when !ascending
	size_t slot_mask; // slot count - 1 (a power of two)
	int cols;         // 5 or 7 once known
	uint64_t dim_line;
	sf_status status;
} sf_reader;

static void sf_fail(sf_reader *r, uint64_t line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->err->message, sizeof r->err->message, fmt, ap);
	va_end(ap);
	r->err->line = line;
	r->status = SF_ERROR_LINE;
}

// Write at most SF_QUOTE_MAX characters of a token into out, for a message.
static const char *sf_quote(char *out, const char *s, const char *end)
{
	size_t n = (size_t)(end - s);
	if (n > SF_QUOTE_MAX) {
		memcpy(out, s, SF_QUOTE_MAX - 3);
		memcpy(out + SF_QUOTE_MAX - 3, "...", 4);
	} else {
		memcpy(out, s, n);
		out[n] = '\0';
	}
	return out;
}

static uint64_t sf_hash(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

// The slot holding id, or the empty slot where it belongs.
static size_t sf_find_slot(const sf_reader *r, uint64_t id)
{
	size_t i = (size_t)sf_hash(id) & r->slot_mask;
	while (r->slots[i].index1 != 0 && r->slots[i].id != id)
		i = (i + 1) & r->slot_mask;
	return i;
}

// (Re)build the hash set with room for the scene's capacity.
static bool sf_rehash(sf_reader *r)
{
	sf_scene *sc = r->scene;
	sf_slot *slots = calloc(sc->capacity * 2, sizeof *slots);
	if (!slots) {
		r->status = SF_ERROR_MEMORY;
		return false;
	}
	free(r->slots);
	r->slots = slots;
	r->slot_mask = sc->capacity * 2 - 1;
	for (size_t i = 0; i < sc->count; i++) {
		size_t k = sf_find_slot(r, sc->ids[i]);
		r->slots[k].id = sc->ids[i];
		r->slots[k].index1 = (uint32_t)(i + 1);
	}
	return true;
}

// Make room for one more object: the arrays (and the hash set) double together.
static bool sf_reserve(sf_reader *r)
{
	sf_scene *sc = r->scene;
	if (sc->count < sc->capacity)
		return true;
	size_t cap = sc->capacity ? sc->capacity * 2 : 4096;
	size_t per = (size_t)(r->cols - 1);
	uint64_t *ids = realloc(sc->ids, cap * sizeof *ids);
	if (ids)
		sc->ids = ids;
	float *coords = realloc(sc->coords, cap * per * sizeof *coords);
	if (coords)
		sc->coords = coords;
	uint64_t *lines = realloc(sc->lines, cap * sizeof *lines);
	if (lines)
		sc->lines = lines;
	if (!ids || !coords || !lines) {
		r->status = SF_ERROR_MEMORY;
		return false;
	}
	sc->capacity = cap;
	return r->ascending || sf_rehash(r);
}

// Parse an unsigned 64-bit decimal ID.
static bool sf_parse_id(sf_reader *r, uint64_t line, const char *s, const char *end, uint64_t *out)
{
	char q[SF_QUOTE_MAX + 1];
	if (*s == '-') {
		sf_fail(r, line, "ID '%s' is negative", sf_quote(q, s, end));
		return false;
	}
	uint64_t v = 0;
	for (const char *p = s; p < end; p++) {
		if (!sf_is_digit(*p)) {
			sf_fail(r, line, "ID '%s' is not an unsigned integer", sf_quote(q, s, end));
			return false;
		}
		uint64_t d = (uint64_t)(*p - '0');
		if (v > (UINT64_MAX - d) / 10) {
			sf_fail(r, line, "ID '%s' is larger than 18446744073709551615", sf_quote(q, s, end));
			return false;
		}
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

// Only space and tab separate fields: anything else is a character of a field,
// and the bytes that cannot be (sf_check_bytes) are named before parsing.
static bool sf_is_space(char c) { return c == ' ' || c == '\t'; }

// The first non-blank character of [s, end) is '#'.
static bool sf_is_comment(const char *s, const char *end)
{
	while (s < end && sf_is_space(*s))
		s++;
	return s < end && *s == '#';
}

// Refuse the bytes that make a line unreadable, with a message that names them
// and their column: NUL (a binary file), a CR that does not end the line (the
// line end is LF or CRLF; a CR-only file would be one endless line), and, on
// object lines, the other control characters (\v and \f are not separators), a
// byte order mark past the start of the file, and commas. [s, end) is the line
// without its LF; a CR just before the LF is its line end, not its content.
static bool sf_check_bytes(sf_reader *r, uint64_t line, const char *s, const char *end)
{
	bool comment = sf_is_comment(s, end);
	for (const char *p = s; p < end; p++) {
		unsigned char c = (unsigned char)*p;
		unsigned long col = (unsigned long)(p - s) + 1;
		if (c >= 0x20 && c != ',' && c != 0xEF)
			continue;
		if (c == '\t')
			continue;
		if (c == 0) {
			sf_fail(r, line, "a NUL byte at column %lu (is this a text file?)", col);
			return false;
		}
		if (c == '\r') {
			if (p + 1 == end)
				continue;
			sf_fail(r, line, "a carriage return (CR) at column %lu that does not end the line: lines end with LF or CRLF",
			        col);
			return false;
		}
		if (comment)
			continue;
		if (c == ',') {
			sf_fail(r, line, "a comma at column %lu: separate numbers with spaces", col);
			return false;
		}
		if (c == 0xEF) {
			if (end - p >= 3 && (unsigned char)p[1] == 0xBB && (unsigned char)p[2] == 0xBF) {
				sf_fail(r, line, "a UTF-8 byte order mark at column %lu (allowed only at the start of the file)", col);
				return false;
			}
			continue;
		}
		static const char *const names[] = {['\v'] = "vertical tab (\\v)", ['\f'] = "form feed (\\f)"};
		const char *name = c < sizeof names / sizeof names[0] && names[c] ? names[c] : NULL;
		if (name)
			sf_fail(r, line, "a %s at column %lu: only spaces and tabs separate fields", name, col);
		else
			sf_fail(r, line, "a control character (byte 0x%02X) at column %lu: only spaces and tabs separate fields",
			        (unsigned)c, col);
		return false;
	}
	return true;
}

// Parse one line [s, end), its LF excluded; *end is writable. Returns false on a
// bad line.
static bool sf_parse_line(sf_reader *r, uint64_t line, char *s, char *end)
{
	if (!sf_check_bytes(r, line, s, end))
		return false;
	if (end > s && end[-1] == '\r')
		end--; // CRLF
	char *tok[SF_MAX_FIELDS], *tok_end[SF_MAX_FIELDS];
	int n = 0;
	char *p = s;
	while (p < end) {
		while (p < end && sf_is_space(*p))
			p++;
		if (p == end)
			break;
		if (n == 0 && *p == '#')
			return true;
		char *t = p;
		while (p < end && !sf_is_space(*p))
			p++;
		if (n < SF_MAX_FIELDS) {
			tok[n] = t;
			tok_end[n] = p;
		}
		n++;
	}
	if (n == 0)
		return true;

	if (r->cols == 0) {
		if (n != 5 && n != 7) {
			sf_fail(r, line, "expected 5 columns (2D) or 7 (3D), found %d", n);
			return false;
		}
		r->cols = n;
		r->dim_line = line;
		r->scene->dim = (n - 1) / 2;
	} else if (n != r->cols) {
		if (n == 5 || n == 7)
			sf_fail(r, line, "a %dD line (%d columns) in a %dD file (line %llu has %d columns)", (n - 1) / 2, n,
			        r->scene->dim, (unsigned long long)r->dim_line, r->cols);
		else
			sf_fail(r, line, "expected %d columns, found %d", r->cols, n);
		return false;
	}

	uint64_t id;
	if (!sf_parse_id(r, line, tok[0], tok_end[0], &id))
		return false;

	const char *const *names = r->cols == 5 ? sf_names2 : sf_names3;
	int dim = r->scene->dim;
	double v[6];
	for (int i = 0; i < 2 * dim; i++) {
		char q[SF_QUOTE_MAX + 1];
		sf_number k = sf_parse_double(tok[i + 1], tok_end[i + 1], &v[i]);
		if (k == SF_NUMBER_INVALID) {
			sf_fail(r, line, "%s '%s' is not a number", names[i + 1], sf_quote(q, tok[i + 1], tok_end[i + 1]));
			return false;
		}
		if (k == SF_NUMBER_NAN) {
			sf_fail(r, line, "%s is NaN", names[i + 1]);
			return false;
		}
		if (k == SF_NUMBER_INFINITE) {
			sf_fail(r, line, "%s '%s' is infinite", names[i + 1], sf_quote(q, tok[i + 1], tok_end[i + 1]));
			return false;
		}
		if (fabs(v[i]) > (double)ORTHANT_COORD_LIMIT) {
			sf_fail(r, line, "%s '%s' is out of range (magnitude above 1e30)", names[i + 1],
			        sf_quote(q, tok[i + 1], tok_end[i + 1]));
			return false;
		}
	}
	for (int i = 0; i < dim; i++) {
		if (v[i] > v[i + dim]) {
			char q1[SF_QUOTE_MAX + 1], q2[SF_QUOTE_MAX + 1];
			sf_fail(r, line, "%s %s > %s %s", names[i + 1], sf_quote(q1, tok[i + 1], tok_end[i + 1]),
			        names[i + 1 + dim], sf_quote(q2, tok[i + 1 + dim], tok_end[i + 1 + dim]));
			return false;
		}
	}

	sf_scene *sc = r->scene;
	if (sc->count >= SF_MAX_OBJECTS) {
		sf_fail(r, line, "more than %zu objects", SF_MAX_OBJECTS);
		return false;
	}
	if (!sf_reserve(r))
		return false;
	if (r->ascending && sc->count > 0 && id <= r->last_id) {
		r->ascending = false;
		if (!sf_rehash(r))
			return false;
	}
	r->last_id = id;
	size_t i = sc->count;
	if (!r->ascending) {
		size_t slot = sf_find_slot(r, id);
		if (r->slots[slot].index1 != 0) {
			sf_fail(r, line, "duplicate ID %llu (first on line %llu)", (unsigned long long)id,
			        (unsigned long long)sc->lines[r->slots[slot].index1 - 1]);
			return false;
		}
		r->slots[slot].id = id;
		r->slots[slot].index1 = (uint32_t)(i + 1);
	}
	sc->count++;
	sc->ids[i] = id;
	sc->lines[i] = line;
	float *c = sc->coords + i * (size_t)(2 * dim);
	for (int k = 0; k < 2 * dim; k++)
		c[k] = (float)v[k];
	return true;
}

// A line longer than SF_LINE_MAX: a comment is skipped (true, and *skip set so
// the rest of it is dropped as it arrives); anything else is refused, after the
// bytes it has so far are checked, so a NUL or a lone CR is named before length.
static bool sf_long_line(sf_reader *r, uint64_t line, const char *s, bool *skip)
{
	if (!sf_check_bytes(r, line, s, s + SF_LINE_MAX))
		return false;
	if (sf_is_comment(s, s + SF_LINE_MAX)) {
		*skip = true;
		return true;
	}
	sf_fail(r, line, "the line is longer than %d bytes", SF_LINE_MAX);
	return false;
}

sf_status sf_read(FILE *in, sf_scene *scene, sf_error *err, sf_progress_fn *progress, void *progress_ctx)
{
	memset(scene, 0, sizeof *scene);
	memset(err, 0, sizeof *err);
	sf_reader r = {.scene = scene, .err = err, .ascending = true, .status = SF_OK};

	// The buffer holds the unfinished line (at most SF_LINE_MAX + 1 bytes: the
	// limit and a CR) followed by new data; it never grows, so memory is bounded
	// whatever the file holds. + 1: room to terminate a last line without '\n'.
	char *buf = malloc(SF_BLOCK + 1);
	if (!buf) {
		r.status = SF_ERROR_MEMORY;
		goto done;
	}
	size_t filled = 0;
	uint64_t line = 0;
	bool eof = false, started = false;
	bool skip = false; // inside an over-long comment line: drop bytes up to its LF
	while (!eof && r.status == SF_OK) {
		size_t got = fread(buf + filled, 1, SF_BLOCK - filled, in);
		if (got == 0) {
			if (ferror(in)) {
				err->errnum = errno;
				r.status = SF_ERROR_IO;
				break;
			}
			eof = true;
		}
		filled += got;
		char *p = buf, *limit = buf + filled;
		if (!started) {
			// A UTF-8 byte order mark at the start of the file (some editors write
			// one) is skipped; anywhere else it is refused (sf_check_bytes).
			if (filled < 3 && !eof)
				continue;
			started = true;
			if (filled >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3))
				p += 3;
		}
		while (r.status == SF_OK && p < limit) {
			char *nl = memchr(p, '\n', (size_t)(limit - p));
			if (skip) {
				char *stop = nl ? nl : limit;
				if (memchr(p, '\0', (size_t)(stop - p))) {
					sf_fail(&r, line, "a NUL byte in a comment (is this a text file?)");
					break;
				}
				skip = nl == NULL;
				p = nl ? nl + 1 : limit;
				continue;
			}
			size_t len = (size_t)((nl ? nl : limit) - p);
			if (len > SF_LINE_MAX && !(len == SF_LINE_MAX + 1 && p[SF_LINE_MAX] == '\r' && (nl || eof))) {
				line++;
				if (!sf_long_line(&r, line, p, &skip))
					break;
				p += SF_LINE_MAX; // the rest goes by the skip above
				continue;
			}
			if (!nl) {
				if (!eof)
					break; // wait for the rest of the line
				nl = limit; // the last line, without a newline
			}
			line++;
			if (!sf_parse_line(&r, line, p, nl))
				break;
			if (progress && line % SF_PROGRESS_LINES == 0)
				progress(progress_ctx, scene->count);
			p = nl < limit ? nl + 1 : limit;
		}
		// Keep the unfinished line (at most SF_LINE_MAX + 1 bytes) for the next read.
		filled = (size_t)(limit - p);
		memmove(buf, p, filled);
	}
done:
	free(buf);
	free(r.slots);
	if (r.status != SF_OK)
		sf_scene_free(scene);
	if (r.status == SF_ERROR_MEMORY)
		snprintf(err->message, sizeof err->message, "out of memory");
	return r.status;
}

void sf_scene_free(sf_scene *scene)
{
	free(scene->ids);
	free(scene->coords);
	free(scene->lines);
	memset(scene, 0, sizeof *scene);
}

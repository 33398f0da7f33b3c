// fuzz_input.h: what every dimension-generic fuzz target shares. Without
// TEST_DIM: FUZZ_ENTRY, the entry point. With TEST_DIM (the engine for one
// dimension): the brute-force oracle of tests/testutil.h (through
// shim/cmocka.h), and the decoding of the fuzzer's bytes into coordinates and
// boxes, so that fuzz_ops and fuzz_packed read boxes the same way.
#ifndef ORTHANT_FUZZ_INPUT_H
#define ORTHANT_FUZZ_INPUT_H

#include <float.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/// LLVMFuzzerTestOneInput for the engines run2 and run3 (run is their name
/// without the digit): bit 0 of the first byte picks the dimension, the rest
/// goes to the engine. replay.c adds the main() that replays files and
/// directories, so every corpus file and crash is a regression test.
#define FUZZ_ENTRY(run)                                                                                           \
	int run##2(const uint8_t *data, size_t size);                                                                 \
	int run##3(const uint8_t *data, size_t size);                                                                 \
	int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);                                                 \
	int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)                                                  \
	{                                                                                                             \
		if (size == 0) return 0;                                                                                  \
		return (data[0] & 1) ? run##3(data + 1, size - 1) : run##2(data + 1, size - 1);                           \
	}

#ifdef TEST_DIM

#include "testutil.h"

#define FUZZ_CAT_(a, b) a##b
#define FUZZ_CAT(a, b) FUZZ_CAT_(a, b)

/// The bytes left to decode. Running out of bytes reads zeros.
typedef struct input {
	const uint8_t *p, *end;
} input;

static inline uint8_t u8(input *in) { return in->p < in->end ? *in->p++ : 0; }

static inline float raw_float(input *in)
{
	uint32_t bits = 0;
	for (int k = 0; k < 4; ++k) bits = bits << 8 | u8(in);
	float f;
	memcpy(&f, &bits, sizeof f);
	return f;
}

/// A small signed integer, as a float.
static inline float small(input *in) { return (float)(int8_t)u8(in); }

/// A coordinate by scale (low three bits): mostly small integers on a grid (so
/// boxes touch, coincide and sit on split lines), sometimes far, sometimes
/// from a palette of edge values or raw bits (the only source of invalid
/// coordinates: NaN, infinities, beyond ORTHANT_COORD_LIMIT).
static inline float coord_raw(input *in, uint8_t scale)
{
	static const float palette[] = {NAN,     INFINITY, -INFINITY, 2.0e30f, -2.0e30f, ORTHANT_COORD_LIMIT,
	                                -1.0e30f, FLT_MAX,  1.0e20f,   -1.0e20f, 0.0f,     -0.0f,
	                                1.0e-40f, FLT_MIN,  1.0e6f,    -1.0e6f};
	int8_t v = (int8_t)u8(in);
	switch (scale & 7) {
	case 0:
	case 1:
	case 2: return (float)v;
	case 3: return (float)v * 0.125f;
	case 4: return (float)v * 64.0f;
	case 5: return 1.0e6f + (float)v;
	case 6: return palette[(uint8_t)v % (sizeof palette / sizeof palette[0])];
	default: return raw_float(in);
	}
}

/// Where a box's coordinates come from: coord_raw, or a target's variant.
typedef float fuzz_coord_fn(input *in, uint8_t scale);

/// A box: a scale byte, then per axis its min and a size (0 for a point half
/// the time), or with scale 6/7 both ends drawn on their own, so min > max
/// happens too.
static inline box_t read_box_by(input *in, fuzz_coord_fn *coord)
{
	box_t b;
	uint8_t scale = u8(in);
	for (int d = 0; d < DIM; ++d) {
		b.min[d] = coord(in, scale);
		uint8_t s = u8(in);
		if ((scale & 7) >= 6)
			b.max[d] = coord(in, scale >> 3);
		else
			b.max[d] = b.min[d] + (s & 1 ? 0.0f : (float)(s >> 1) * ((scale & 7) == 4 ? 32.0f : 0.5f));
	}
	return b;
}

/// The errors a box may earn (base.h): OK, or some defect it really has.
static inline bool result_fits_box(const box_t *b, ort_result r)
{
	bool invalid = false, range = false;
	for (int d = 0; d < DIM; ++d) {
		if (!isfinite(b->min[d]) || !isfinite(b->max[d]) || !(b->min[d] <= b->max[d])) invalid = true;
		if ((isfinite(b->min[d]) && fabsf(b->min[d]) > ORTHANT_COORD_LIMIT) ||
		    (isfinite(b->max[d]) && fabsf(b->max[d]) > ORTHANT_COORD_LIMIT))
			range = true;
	}
	if (r == ORT_OK) return !invalid && !range;
	return (r == ORT_ERROR_INVALID_BOX && invalid) || (r == ORT_ERROR_OUT_OF_RANGE && range);
}

static inline bool box_ok(const box_t *b) { return result_fits_box(b, ORT_OK); }

/// The piles of kinds FUZZ_PILES a tree cannot spread out, which the pair
/// finders sweep (src/sweep.h): box i of a speck of boxes 1e5 times smaller
/// than the scene with box 0 far away (kind 0); long thin strips along x,
/// stacked apart (1); points at x = 2^-u, u up to 60 (2); boxes across the
/// centre line x = 0 (3); boxes that all hold the origin, thin on every axis
/// but one (4: a nearest search from inside finds them all at distance 0,
/// only ids part them); a pinwheel of strips, four arms round the centre
/// (strips long in x over strips long in y, and so on round), that meet on x
/// and on y and never as boxes (5); rods, one family long on each axis, each
/// two families apart on the third axis, that meet on two axes and rarely as
/// boxes (6); plates stacked on the last axis, meeting on all the others (7);
/// duplicates of one box, some points on its corner (8). And shapes of data
/// users bring: four dense normal blobs of tiny boxes (9); a lattice of boxes
/// whose faces touch exactly (10); sides from a power law, most tiny, a few
/// across the scene (11); tiny boxes on a circle or sphere (12); tiny boxes
/// along the diagonal (13). Coordinates lie in [-100, 1000] but for the
/// speck's far box.
#define FUZZ_PILES 14
static inline box_t fuzz_pile(tu_rng *r, int kind, int i)
{
	box_t b;
	float side = tu_float(r, 0.0f, 3.0f);
	if (kind >= 9) {
		float v[DIM], len = 0.0f, at = tu_float(r, 0.0f, 100.0f), power = 0.05f / tu_float(r, 5e-4f, 1.0f);
		for (int d = 0, cell = i; d < DIM; ++d, cell /= 16) {
			// A normal draw (Box-Muller) for the blobs and the shell.
			float u1 = tu_float(r, 1e-7f, 1.0f), u2 = tu_float(r, 0.0f, 6.2831853f);
			v[d] = sqrtf(-2.0f * logf(u1)) * cosf(u2);
			len += v[d] * v[d];
			float tiny = tu_float(r, 0.001f, 0.05f);
			switch (kind) {
			case 9: b.min[d] = (float)((i % 4) >> (d & 1) & 1) * 60.0f + 20.0f + v[d]; break;
			case 10:
				b.min[d] = (float)(cell % 16) * 6.25f;
				tiny = (float)(cell % 16 + 1) * 6.25f - b.min[d];
				break;
			case 11:
				b.min[d] = tu_float(r, 0.0f, 100.0f);
				tiny = fminf(power, 100.0f);
				break;
			case 13: b.min[d] = at; break;
			default: break;
			}
			b.max[d] = b.min[d] + tiny;
		}
		if (kind == 12)
			for (int d = 0; d < DIM; ++d) {
				b.min[d] = 50.0f + 40.0f * v[d] / sqrtf(len);
				b.max[d] = b.min[d] + 0.01f;
			}
		return b;
	}
	if (kind >= 7) {
		// plates: all over [0, 100] but the last axis, stacked on it 0.25
		// apart, every fourth touching the next; duplicates: one box, and
		// every eighth a point on its corner.
		for (int d = 0; d < DIM; ++d) {
			bool stacked = kind == 7 && d == DIM - 1;
			b.min[d] = stacked ? (float)i * 0.25f : kind == 7 ? tu_float(r, 0.0f, 2.0f) : 1.0f;
			b.max[d] = stacked ? b.min[d] + (i % 4 ? 0.125f : 0.25f) : kind == 7 ? tu_float(r, 98.0f, 100.0f) : 2.0f;
			if (kind == 8 && i % 8 == 7) b.max[d] = b.min[d];
		}
		return b;
	}
	if (kind == 6) {
		static const int part[3][3] = {{0, 0, 0}, {0, 0, 1}, {1, 1, 0}};
		int f = i % DIM;
		for (int d = 0; d < DIM; ++d) {
			b.min[d] = d == f ? tu_float(r, 0.0f, 1.0f) : (float)part[f][d] * 60.0f + tu_float(r, 0.0f, 39.0f);
			b.max[d] = d == f ? tu_float(r, 99.0f, 100.0f) : b.min[d] + side * 0.3f;
		}
		return b;
	}
	if (kind == 4) {
		int a = tu_int(r, 0, DIM - 1);
		for (int d = 0; d < DIM; ++d) {
			float len = d == a ? tu_float(r, 2.0f, 100.0f) : 0.05f;
			b.min[d] = -len * tu_float(r, 0.0f, 1.0f);
			b.max[d] = b.min[d] + len;
		}
		return b;
	}
	for (int d = 0; d < DIM; ++d) {
		float lo = tu_float(r, 0.0f, 100.0f);
		switch (kind) {
		case 0:
			b.min[d] = i == 0 ? 1e6f : lo * 1e-5f;
			b.max[d] = i == 0 ? 1e6f + 1.0f : (lo + side) * 1e-5f;
			break;
		case 1:
			b.min[d] = d == 0 ? tu_float(r, 0.0f, 10.0f) : (float)(i >> (d - 1) * 4 & 15) * 2.0f;
			b.max[d] = d == 0 ? tu_float(r, 990.0f, 1000.0f) : b.min[d] + (float)tu_int(r, 0, 4) * 0.5f;
			break;
		case 2: b.min[d] = b.max[d] = d == 0 ? exp2f(-tu_float(r, 0.0f, 60.0f)) : tu_float(r, 0.0f, 1.0f); break;
		case 5: {
			// Arm i % 4: long on axis `along` over [lo, hi), its strip i / 4
			// on the other axis from `band`; axes past y long for all.
			static const float arms[4][4] = {{0, 0, 79, 81}, {1, 21, 100, 81}, {0, 21, 100, 0}, {1, 0, 79, 0}};
			const float *a = arms[i % 4];
			int along = (int)a[0];
			b.min[d] = d > 1 ? lo * 0.05f : d == along ? a[1] + lo * 0.01f : a[3] + (float)(i / 4) * 0.3f;
			b.max[d] = d > 1 ? 100.0f - lo * 0.05f : d == along ? a[2] - lo * 0.01f : b.min[d] + 0.1f;
			break;
		}
		default:
			b.min[d] = d == 0 ? -side * 0.5f : lo;
			b.max[d] = d == 0 ? side * 0.5f : lo + side * 0.1f;
			break;
		}
	}
	return b;
}

/// FUZZ_TRACE=1 prints each step, to turn a crash into a reproduction.
static bool tracing;

static inline void trace_box(const char *what, int i, const box_t *b)
{
	if (!tracing) return;
	fprintf(stderr, "%s %d {", what, i);
	for (int d = 0; d < DIM; ++d) fprintf(stderr, " %a..%a", (double)b->min[d], (double)b->max[d]);
	fprintf(stderr, " }\n");
}

#endif // TEST_DIM
#endif

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

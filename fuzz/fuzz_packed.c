// fuzz_packed.c: bytes become a packed tree (packed_dim.h) and a sequence of
// builds and queries, each answer checked against a brute-force pass over the
// array the tree was built from (box i has id i); any disagreement aborts with
// a message naming it.
//
// One source, three compilations (fuzz/CMakeLists.txt):
//   TEST_DIM=2, TEST_DIM=3  the engine for one dimension: fuzz_packed_run2/3
//   neither                 the entry (fuzz_input.h's FUZZ_ENTRY): the first
//                           byte picks the dimension; replay.c adds the main()
//                           that replays files and directories.
//
// ## Input
//
//   byte 0       dimension (bit 0)
//   bytes 1-3    definition (read_def): bucket, max depth, region, allocator
//   then ops     one byte each (op % OP_COUNT), followed by its operands;
//                running out of bytes ends the run (missing bytes read 0)
//
//   OP_BUILD     how, count, then count boxes (fuzz_input.h's read_box_by)
//   OP_GENERATE  how, pattern, count, seed, unit: a scene made by a pattern
//                (touching tiles, piles of duplicates, coinciding points,
//                huge boxes among small, far coordinates up to +-1e30, faces
//                on split lines, nested and flat boxes; piles the build cannot
//                spread out: a speck and a far box, strips, binary scales,
//                centre-line straddlers, a pinwheel of strips), scaled by a
//                unit
//   OP_REBUILD   how, mode, amount: the last scene again, resized, cut or
//                edited
//   OP_EMPTY     how: a build of no boxes
//   OP_QUERY     explicit operands for every query, see op_query
//   OP_DEF       a new definition (a new tree, the old one destroyed)
//   OP_ARGS      bad arguments to every call
//
// Each build's `how` byte: bit 2 strided records (bits 5-7 pad bytes), bit 3
// poisons one box (NaN, infinite, inverted, past ORTHANT_COORD_LIMIT), bit 4
// then a byte arms the allocator to refuse one allocation (or all from then
// on) at a decoded point. A refused build must return its documented error
// and keep the previous contents.
//
// After every step: validate returns ORT_OK; count, bounds, stats and the
// allocator's live bytes agree with the model; find_pairs (after every step
// that builds or tries to: the others leave the tree as it was), query_box,
// query_point, query_sphere, ray_cast (all hits with their t, clipped,
// filtered and stopped), ray_first and nearest around operands taken from the
// scene itself (an item's own box, its corners, the exact distance to another
// item), equal brute force. Allocation promises are checked too: rebuilding
// the contents, or a scene that needs no more items or node blocks than
// earlier builds did, allocates nothing; nor does nearest with
// k <= 64. FUZZ_TRACE=1 prints each step (every box in %a). The checks are
// fuzz_packed_check.h; this file decodes the input and runs the steps.

#include "fuzz_input.h"

#ifdef TEST_DIM

#define FUZZ_RUN FUZZ_CAT(fuzz_packed_run, TEST_DIM)

typedef TU(packed) packed_t;
typedef TU(packed_def) pdef_t;

/// The deepest max_depth packed_dim.h allows (and the default).
#define DEEPEST (DIM == 2 ? 13 : 9)
/// Keeps the O(n^2) pair check cheap enough for thousands of runs a second.
#define MAX_ITEMS 512
#define MAX_STEPS 256
/// The most blocks the tree and one query may hold at once.
#define LIVE_MAX 32
/// The most padding bytes between strided records.
#define MAX_PAD 7

int FUZZ_RUN(const uint8_t *data, size_t size);

// ---- the allocator ----------------------------------------------------------------

/// Refuse one of the next eight allocations (bit 3: and every one after).
static void arm(tu_alloc *c, uint8_t x) { tu_alloc_fail_in(c, x % 8 + 1, x & 8); }

// ---- the state -------------------------------------------------------------------

typedef struct fuzz {
	packed_t *t;
	pdef_t def;
	bool counted; ///< def.allocator is `alloc`
	tu_alloc alloc;
	box_t box[MAX_ITEMS]; ///< the model: the array the tree holds, box i has id i
	int n;
	box_t last[MAX_ITEMS]; ///< the last scene built, kept across a new definition
	int last_n;
	box_t next[MAX_ITEMS]; ///< the scene being composed
	unsigned char raw[MAX_ITEMS * (sizeof(box_t) + MAX_PAD)]; ///< next, as strided records
	int most_items, most_blocks; ///< the most any successful build of this tree needed
	int step;
} fuzz;

static const char *op_name = "start";


static void context(const fuzz *f)
{
	TU_CONTEXT("step %d (%s), %d items, bucket %d, depth %d, region %s", f->step, op_name, f->n, f->def.bucket_size,
	           f->def.max_depth, f->def.use_region ? "yes" : "no");
}

#include "fuzz_packed_check.h"

// ---- definitions --------------------------------------------------------------------

/// A region by kind: around the usual scenes, tiny, far from every box, the
/// whole range, a point, flat on one axis, decoded (maybe bad), past the limit.
static box_t read_region(input *in, int kind)
{
	box_t r;
	for (int d = 0; d < DIM; ++d) {
		static const float lo[] = {-64, 0, 1.0e20f, -ORTHANT_COORD_LIMIT, 5, -64, 0, -2.0e30f};
		static const float hi[] = {64, 1, 1.0e20f + 1.0e15f, ORTHANT_COORD_LIMIT, 5, 64, 0, 2.0e30f};
		r.min[d] = lo[kind];
		r.max[d] = hi[kind];
	}
	if (kind == 5) r.min[0] = r.max[0] = 3;
	if (kind == 6) r = read_box_by(in, coord_raw);
	return r;
}

/// A definition, and whether create must refuse it.
static pdef_t read_def(fuzz *f, input *in, bool *bad)
{
	static const int buckets[] = {1, 2, 3, 4, 8, 16, 63, 64};
	pdef_t def = TU(packed_default_def)();
	if (def.max_depth != DEEPEST || def.bucket_size != 16)
		TU_FAIL("packed_default_def: bucket %d, depth %d\n", def.bucket_size, def.max_depth);
	uint8_t a = u8(in), b = u8(in), c = u8(in);
	def.bucket_size = a & 0x40 ? a % 64 + 1 : buckets[a & 7];
	def.max_depth = b & 0x40 ? DEEPEST : b % DEEPEST + 1;
	def.use_region = c & 1;
	def.region = read_region(in, c >> 1 & 7);
	f->counted = (c & 0x30) != 0x30;
	if (f->counted) def.allocator = tu_allocator(&f->alloc);
	*bad = def.use_region && !box_ok(&def.region);
	if ((c & 0xC0) == 0xC0 && (b & 0x80)) {
		*bad = true;
		switch (b >> 3 & 7) {
		case 0: def.bucket_size = 0; break;
		case 1: def.bucket_size = 65; break;
		case 2: def.bucket_size = -1; break;
		case 3: def.max_depth = 0; break;
		case 4: def.max_depth = DEEPEST + 1; break;
		case 5: def.allocator = (ort_allocator){tu_alloc_fn, NULL, &f->alloc}; break;
		case 6: def.allocator = (ort_allocator){NULL, tu_free_fn, &f->alloc}; break;
		default: def.max_depth = -1; break;
		}
	}
	if (tracing)
		fprintf(stderr, "def: bucket %d depth %d region %d {%a..%a} %s%s\n", def.bucket_size, def.max_depth,
		        def.use_region, (double)def.region.min[0], (double)def.region.max[0],
		        f->counted ? "counted" : "malloc", *bad ? " (bad)" : "");
	return def;
}

/// A new tree with a new definition: a bad one, or a refused allocation,
/// leaves the old tree as it was. The new tree starts empty.
static void op_def(fuzz *f, input *in)
{
	bool was_counted = f->counted, bad;
	pdef_t old = f->def;
	pdef_t def = read_def(f, in, &bad);
	uint8_t fail = u8(in);
	if (fail & 1) arm(&f->alloc, fail >> 1);
	long refused = f->alloc.refused;
	packed_t *t = (packed_t *)&f->alloc; // not NULL: create must clear it on failure
	ort_result r = TU(packed_create)(&def, &t);
	bool refusal = f->alloc.refused != refused;
	tu_alloc_disarm(&f->alloc);
	if (bad || refusal) {
		expect_result(bad ? "create with a bad definition" : "create refused memory", r,
		              bad ? ORT_ERROR_INVALID_ARGUMENT : ORT_ERROR_OUT_OF_MEMORY);
		if (t) TU_FAIL("create failed but gave a tree\n");
		f->counted = was_counted;
		f->def = old;
		return;
	}
	expect_result("create", r, ORT_OK);
	TU(packed_destroy)(f->t);
	f->t = t;
	f->def = def;
	f->n = 0;
	f->most_items = f->most_blocks = 0;
}

// ---- scenes ---------------------------------------------------------------------------

/// Pattern 7 with param 8..15: the piles of fuzz_input.h (fuzz_pile), which
/// the pair finder sweeps: param & 3 (a speck, strips, binary scales,
/// straddlers); params 12 and 14 boxes holding the origin, 13 rods, 15 a pinwheel.

/// Box i of n by pattern, from the scene's rng, in units (param: 0..15).
static box_t generate(tu_rng *r, int pattern, int param, int i, float unit)
{
	box_t b;
	if (pattern == 7 && param >= 8)
		return fuzz_pile(r, param == 15 ? 5 : param == 13 ? 6 : param >= 12 && !(param & 1) ? 4 : param & 3, i);
	int per_row = param + 1;
	for (int d = 0; d < DIM; ++d) {
		float lo = 0, side = 0;
		switch (pattern) {
		case 0: // integers: touching, overlapping, coinciding
			lo = (float)tu_int(r, -16 - 4 * param, 16 + 4 * param);
			side = (float)tu_int(r, 0, 1 + param);
			break;
		case 1: { // tiles sharing faces, edges and corners
			int digit = i;
			for (int k = 0; k < d; ++k) digit /= per_row;
			lo = (float)(digit % per_row);
			if (d == DIM - 1) lo = (float)(digit);
			side = 1;
			break;
		}
		case 2: { // piles of identical boxes, more than a bucket holds; every other a point
			int group = i / (param * 8 + 1);
			tu_rng g = tu_rng_make((uint64_t)group * 131u + (uint64_t)d);
			lo = (float)tu_int(&g, -8, 8);
			side = group & 1 ? 0.0f : (float)tu_int(&g, 1, 4);
			break;
		}
		case 3: // coinciding points
			lo = (float)tu_int(r, -param, param);
			break;
		case 4: { // huge boxes among small ones: not scaled
			static const float ends[][2] = {{-ORTHANT_COORD_LIMIT, ORTHANT_COORD_LIMIT},
			                                {-ORTHANT_COORD_LIMIT, 0},
			                                {0, ORTHANT_COORD_LIMIT},
			                                {-ORTHANT_COORD_LIMIT, -ORTHANT_COORD_LIMIT},
			                                {ORTHANT_COORD_LIMIT, ORTHANT_COORD_LIMIT},
			                                {-1.0e20f, 1.0e20f},
			                                {1, 2},
			                                {-3, 3}};
			if (i % (param + 2) == 0) {
				int e = tu_int(r, 0, 7);
				b.min[d] = ends[e][0];
				b.max[d] = ends[e][1];
				continue;
			}
			lo = (float)tu_int(r, -64, 64);
			side = (float)tu_int(r, 0, 8);
			b.min[d] = lo * unit;
			b.max[d] = (lo + side) * unit;
			continue;
		}
		case 5: { // far: every magnitude up to the limit, at once; not scaled
			static const float mag[] = {1.0e30f, 1.0e29f, 1.0e25f, 1.0e20f, 1.0e15f, 1.0e10f, 1.0e5f, 1.0f};
			float m = mag[tu_int(r, 0, 7)], c = tu_float(r, -1, 1) * m;
			float s = tu_int(r, 0, 2) ? tu_float(r, 0, 0.1f) * m : 0.0f;
			b.min[d] = fmaxf(c - s, -ORTHANT_COORD_LIMIT);
			b.max[d] = fminf(c + s, ORTHANT_COORD_LIMIT);
			continue;
		}
		case 6: { // faces on split lines of the cell [0, 1024], a level past the deepest
			if (i < 2) {
				lo = i ? 1024.0f : 0.0f;
				break;
			}
			int level = tu_int(r, 1, DEEPEST + 1);
			float step = ldexpf(1024.0f, -level), line = step * (float)tu_int(r, 0, 1 << level);
			side = step * 0.25f * (float)tu_int(r, 0, 4);
			int mode = tu_int(r, 0, 2);
			lo = mode == 0 ? line : mode == 1 ? line - side : line - side * 0.5f;
			break;
		}
		default: // nested around the origin, flat on one axis
			lo = d == param % DIM ? (float)param : -(float)i;
			side = d == param % DIM ? 0.0f : 2.0f * (float)i;
			break;
		}
		b.min[d] = lo * unit;
		b.max[d] = (lo + side) * unit;
	}
	return b;
}

/// Make one box of next[0..n) bad in a way decoded from the input.
static void poison(fuzz *f, input *in, int n)
{
	uint8_t i = u8(in), kind = u8(in);
	if (n == 0) return;
	box_t *b = &f->next[i % n];
	int d = kind % DIM;
	switch (kind >> 2 & 7) {
	case 0: b->min[d] = NAN; break;
	case 1: b->max[d] = NAN; break;
	case 2: b->max[d] = INFINITY; break;
	case 3: b->min[d] = -INFINITY; break;
	case 4: b->min[d] = nextafterf(b->max[d], INFINITY); break; // inverted by one ulp
	case 5: b->max[d] = fmaxf(b->max[d], nextafterf(ORTHANT_COORD_LIMIT, INFINITY)); break;
	case 6: b->min[d] = -2.0e30f; break;
	default: b->min[d] = b->max[d] = FLT_MAX; break;
	}
	trace_box("poisoned", i % n, b);
}

static int clamp_items(int n) { return n < 0 ? 0 : n > MAX_ITEMS ? MAX_ITEMS : n; }

/// The last scene again, in one of four ways (mode & 3): as it was, resized
/// by a signed amount (new boxes copy old ones, shifted), cut to a fraction,
/// or with a few edits. Returns the count.
static int rebuild_scene(fuzz *f, input *in)
{
	uint8_t mode = u8(in), amount = u8(in);
	int m = f->last_n, n = m;
	memcpy(f->next, f->last, sizeof *f->last * (size_t)m);
	switch (mode & 3) {
	case 0: break;
	case 1:
		n = clamp_items(m + (int8_t)amount * (mode & 4 ? 4 : 1));
		for (int i = m; i < n; ++i) {
			box_t b = m ? f->last[i % m] : (box_t){{0}, {0}};
			float shift = (float)(i / (m ? m : 1)) * (float)(mode >> 4);
			for (int d = 0; d < DIM; ++d) {
				b.min[d] += shift;
				b.max[d] += shift;
			}
			f->next[i] = b;
		}
		break;
	case 2: n = m * amount / 256; break;
	default:
		for (int e = 0; e < amount % 8 && m > 0; ++e) {
			uint8_t at = u8(in), what = u8(in);
			box_t *b = &f->next[at % m];
			switch (what & 3) {
			case 0: *b = read_box_by(in, coord_raw); break;
			case 1: *b = f->next[what % m]; break; // a duplicate
			case 2: {                              // a swap: ids change places
				box_t x = *b;
				*b = f->next[what % m];
				f->next[what % m] = x;
				break;
			}
			default:
				for (int d = 0; d < DIM; ++d) {
					float v = small(in) * 0.25f;
					b->min[d] += v;
					b->max[d] += v;
				}
				break;
			}
		}
		break;
	}
	if (tracing) fprintf(stderr, "rebuild mode %d: %d of the last %d boxes\n", mode & 3, n, m);
	return n;
}

/// A scene by pattern; then up to three boxes decoded from the input.
static int generate_scene(fuzz *f, input *in)
{
	static const float units[] = {1, 0.125f, 1.0e-3f, 1024, 1.0e6f, 1.0e20f, 1.0e-40f, 3.0e28f};
	uint8_t pat = u8(in), count = u8(in), seed = u8(in), unit = u8(in);
	int n = clamp_items(pat & 0x80 ? count * 2 : count % 65), pattern = pat & 7, param = pat >> 3 & 15;
	tu_rng r = tu_rng_make((uint64_t)seed << 16 | (uint64_t)pat << 8 | unit);
	for (int i = 0; i < n; ++i) f->next[i] = generate(&r, pattern, param, i, units[unit & 7]);
	if (tracing)
		fprintf(stderr, "generate pattern %d (%d) of %d, unit %g\n", pattern, param, n, (double)units[unit & 7]);
	for (int extra = unit >> 3 & 3; extra > 0 && n < MAX_ITEMS; --extra) f->next[n++] = read_box_by(in, coord_raw);
	return n;
}

enum { OP_BUILD, OP_GENERATE, OP_REBUILD, OP_EMPTY, OP_QUERY, OP_DEF, OP_ARGS, OP_COUNT };

/// Build next[0..n): plain or strided, maybe a poisoned box, maybe with the
/// allocator armed. The result must be what the boxes and the allocator
/// earned; failure keeps the contents, success makes next the model. Then
/// the sources are scribbled over: the tree must hold its own copy.
static void build(fuzz *f, input *in, int n, uint8_t how)
{
	if (how & 8) poison(f, in, n);
	if (how & 16) arm(&f->alloc, u8(in));
	for (int i = 0; i < n; ++i) trace_box("box", i, &f->next[i]);
	size_t stride = sizeof(box_t) + (size_t)(how >> 5 & MAX_PAD);
	for (int i = 0; i < n; ++i) memcpy(f->raw + (size_t)i * stride, &f->next[i], sizeof(box_t));
	long allocs = f->alloc.calls, refused = f->alloc.refused;
	size_t live = f->alloc.live;
	const void *src = n == 0 && (how & 1) ? NULL : how & 4 ? (const void *)f->raw : (const void *)f->next;
	ort_result r = how & 4 ? TU(packed_build_strided)(f->t, src, stride, n) : TU(packed_build)(f->t, src, n);
	tu_alloc_disarm(&f->alloc);
	if (tracing) fprintf(stderr, "build of %d%s: %s\n", n, how & 4 ? " (strided)" : "", ort_result_string(r));
	bool any_bad = false, fits = false;
	for (int i = 0; i < n; ++i) {
		any_bad |= !box_ok(&f->next[i]);
		fits |= !box_ok(&f->next[i]) && result_fits_box(&f->next[i], r);
	}
	if (f->alloc.refused != refused) expect_result("build refused memory", r, ORT_ERROR_OUT_OF_MEMORY);
	else if (any_bad && !fits) TU_FAIL("build of a bad box: %s\n", ort_result_string(r));
	else if (!any_bad) expect_result("build", r, ORT_OK);
	if (r != ORT_OK) {
		if (f->alloc.live != live)
			TU_FAIL("a failed build changed the bytes held: %zu, then %zu\n", live, f->alloc.live);
		return;
	}
	bool same = n == f->n && memcmp(f->next, f->box, sizeof *f->box * (size_t)n) == 0;
	memcpy(f->box, f->next, sizeof *f->box * (size_t)n);
	memcpy(f->last, f->next, sizeof *f->box * (size_t)n);
	f->n = f->last_n = n;
	memset(f->next, 0xA5, sizeof *f->next * (size_t)n);
	memset(f->raw, 0x5A, stride * (size_t)n);
	// Allocation promises: none for the same boxes, nor for a scene that needs
	// no more items and node blocks (a block per divided node, and the root's)
	// than an earlier build made room for.
	ort_tree_stats st;
	TU(packed_get_stats)(f->t, &st);
	int blocks = n ? st.nodes - st.leaves + 1 : 0;
	long grew = f->alloc.calls - allocs;
	if (same && grew) TU_FAIL("rebuilding the same %d boxes allocated %ld times\n", n, grew);
	if (f->counted && n <= f->most_items && blocks <= f->most_blocks && grew)
		TU_FAIL("a build of %d items in %d blocks allocated %ld times after one of %d items and one of %d blocks\n", n,
		        blocks, grew, f->most_items, f->most_blocks);
	if (n > f->most_items) {
		f->most_items = n;
		// A build of more items than any before once dropped the block room
		// earlier builds made (corpus/packed/block-room).
	}
	if (blocks > f->most_blocks) f->most_blocks = blocks;
}

/// A query operand point: decoded, an item's corner, or an item's centre.
static void read_point(fuzz *f, input *in, float p[DIM])
{
	uint8_t how = u8(in), which = u8(in);
	const box_t *b = f->n ? &f->box[which % f->n] : NULL;
	for (int d = 0; d < DIM; ++d) {
		if (!b || how % 3 == 0)
			p[d] = coord_raw(in, how >> 2);
		else if (how % 3 == 1)
			p[d] = (which >> d) & 1 ? b->max[d] : b->min[d];
		else
			p[d] = b->min[d] + (b->max[d] - b->min[d]) * 0.5f;
	}
}

/// A radius, max_t or max_distance: mostly small, sometimes special.
static float read_length(input *in)
{
	static const float special[] = {0.0f, -0.0f, INFINITY, NAN, -1.0f, FLT_MAX, ORTHANT_COORD_LIMIT, 1.0e-40f,
	                                FLT_MIN, 0.5f, 1.0e20f, 2.0e30f, -INFINITY, 1.0f, 1.0e-7f, 3.0e38f};
	uint8_t v = u8(in);
	return v >= 0xF0 ? special[v & 15] : (float)v * 0.5f;
}

/// Every query around operands read from the input.
static void op_query(fuzz *f, input *in)
{
	box_t q = read_box_by(in, coord_raw);
	float p[DIM], o[DIM], dir[DIM];
	read_point(f, in, p);
	read_point(f, in, o);
	uint8_t dscale = u8(in);
	for (int d = 0; d < DIM; ++d) dir[d] = coord_raw(in, dscale) * (dscale & 8 ? 1.0f / 16.0f : 1.0f);
	float radius = read_length(in), max_t = read_length(in), max_distance = read_length(in);
	uint8_t k = u8(in), fail = u8(in);
	check_box_query(f, q);
	check_point_query(f, p);
	check_sphere_query(f, p, radius);
	check_ray(f, o, dir, max_t);
	if (fail & 1) arm(&f->alloc, fail >> 1);
	check_nearest(f, p, k, max_distance);
	tu_alloc_disarm(&f->alloc);
	if (fail & 1) arm(&f->alloc, fail >> 1);
	check_scene_batch(f, p, k ? k : 1, max_distance); // disarms
}

static float never_ray(void *ctx, uint32_t id, float t)
{
	(void)ctx, (void)id, (void)t;
	TU_FAIL("a ray callback after bad arguments\n");
	return 0;
}

/// A call that must refuse its arguments.
#define BAD_ARGUMENT(call) expect_result(#call, (call), ORT_ERROR_INVALID_ARGUMENT)

/// Bad arguments to every call: the documented error, nothing changed.
static void op_args(fuzz *f)
{
	packed_t *t = f->t;
	float p[DIM] = {0}, dir[DIM] = {0};
	dir[0] = 1;
	box_t b = {{0}, {0}};
	uint32_t id;
	float tt;
	int found = 7;
	ort_id_neighbor nb[1];
	ort_tree_stats st;
	packed_t *out = t;
	pdef_t def = TU(packed_default_def)();
	BAD_ARGUMENT(TU(packed_build)(t, &b, -1));
	BAD_ARGUMENT(TU(packed_build)(t, NULL, 2));
	BAD_ARGUMENT(TU(packed_build)(NULL, &b, 1));
	BAD_ARGUMENT(TU(packed_build_strided)(t, &b, sizeof b - 1, 1));
	BAD_ARGUMENT(TU(packed_build_strided)(t, NULL, sizeof b, 1));
	BAD_ARGUMENT(TU(packed_query_box)(t, b, NULL, NULL));
	BAD_ARGUMENT(TU(packed_query_box)(NULL, b, on_id, NULL));
	BAD_ARGUMENT(TU(packed_query_point)(t, NULL, on_id, NULL));
	BAD_ARGUMENT(TU(packed_query_point)(t, p, NULL, NULL));
	BAD_ARGUMENT(TU(packed_query_sphere)(t, NULL, 1, on_id, NULL));
	BAD_ARGUMENT(TU(packed_query_sphere)(t, p, 1, NULL, NULL));
	BAD_ARGUMENT(TU(packed_ray_cast)(t, NULL, dir, 1, never_ray, NULL));
	BAD_ARGUMENT(TU(packed_ray_cast)(t, p, NULL, 1, never_ray, NULL));
	BAD_ARGUMENT(TU(packed_ray_cast)(t, p, dir, 1, NULL, NULL));
	BAD_ARGUMENT(TU(packed_ray_cast)(NULL, p, dir, 1, never_ray, NULL));
	if (TU(packed_ray_first)(NULL, p, dir, 1, &id, &tt) || TU(packed_ray_first)(t, NULL, dir, 1, &id, &tt) ||
	    TU(packed_ray_first)(t, p, NULL, 1, &id, &tt))
		TU_FAIL("ray_first with bad arguments hit\n");
	// ray_first without somewhere to put id and t still answers.
	bool hit = TU(packed_ray_first)(t, p, dir, INFINITY, &id, &tt);
	if (TU(packed_ray_first)(t, p, dir, INFINITY, NULL, NULL) != hit) TU_FAIL("ray_first without outputs differs\n");
	BAD_ARGUMENT(TU(packed_nearest)(t, p, -1, 1, nb, &found));
	if (found != 0) TU_FAIL("nearest with bad arguments found %d\n", found);
	BAD_ARGUMENT(TU(packed_nearest)(t, p, 1, 1, NULL, &found));
	BAD_ARGUMENT(TU(packed_nearest)(t, p, 1, 1, nb, NULL));
	BAD_ARGUMENT(TU(packed_nearest)(t, NULL, 1, 1, nb, &found));
	BAD_ARGUMENT(TU(packed_nearest)(NULL, p, 1, 1, nb, &found));
	expect_result("nearest of k 0", TU(packed_nearest)(t, p, 0, INFINITY, NULL, &found), ORT_OK);
	if (found != 0) TU_FAIL("nearest of k 0 found %d\n", found);
	BAD_ARGUMENT(TU(packed_find_pairs)(t, NULL, NULL));
	BAD_ARGUMENT(TU(packed_find_pairs)(NULL, on_pair, NULL));
	BAD_ARGUMENT(TU(packed_validate)(NULL, NULL, 0));
	expect_result("validate without a message", TU(packed_validate)(t, NULL, 0), ORT_OK);
	BAD_ARGUMENT(TU(packed_create)(NULL, &out));
	if (out) TU_FAIL("create without def gave a tree\n");
	BAD_ARGUMENT(TU(packed_create)(&def, NULL));
	TU(packed_get_stats)(NULL, &st);
	TU(packed_get_stats)(t, NULL);
	box_t none = TU(packed_bounds)(NULL);
	if (st.items || st.nodes || st.bytes || TU(packed_count)(NULL) || !(none.min[0] > none.max[0]))
		TU_FAIL("no tree: stats, count or bounds not empty\n");
	TU(packed_destroy)(NULL);
}

int FUZZ_RUN(const uint8_t *data, size_t size)
{
	input in = {data, data + size};
	fuzz *f = calloc(1, sizeof *f);
	if (!f) abort();
	tracing = getenv("FUZZ_TRACE") != NULL;
	op_name = "create";
	tu_alloc_disarm(&f->alloc);
	bool bad;
	f->def = read_def(f, &in, &bad);
	ort_result r = TU(packed_create)(&f->def, &f->t);
	context(f);
	if (bad) {
		expect_result("create with a bad definition", r, ORT_ERROR_INVALID_ARGUMENT);
		f->def = TU(packed_default_def)();
		f->def.allocator = tu_allocator(&f->alloc);
		f->counted = true;
		r = TU(packed_create)(&f->def, &f->t);
	}
	expect_result("create", r, ORT_OK);
	check(f, true);
	for (f->step = 1; in.p < in.end && f->step <= MAX_STEPS; ++f->step) {
		uint8_t op = u8(&in);
		static const char *const names[] = {"build", "generate", "rebuild", "empty", "query", "def", "args"};
		op_name = names[op % OP_COUNT];
		context(f);
		if (tracing) fprintf(stderr, "-- step %d: %s\n", f->step, op_name);
		switch (op % OP_COUNT) {
		case OP_BUILD: {
			uint8_t how = u8(&in);
			int n = u8(&in) % 33;
			for (int i = 0; i < n; ++i) f->next[i] = read_box_by(&in, coord_raw);
			build(f, &in, n, how);
			break;
		}
		case OP_GENERATE: {
			uint8_t how = u8(&in);
			build(f, &in, generate_scene(f, &in), how);
			break;
		}
		case OP_REBUILD: {
			uint8_t how = u8(&in);
			build(f, &in, rebuild_scene(f, &in), how);
			break;
		}
		case OP_EMPTY: build(f, &in, 0, u8(&in)); break;
		case OP_QUERY: op_query(f, &in); break;
		case OP_DEF: op_def(f, &in); break;
		default: op_args(f); break;
		}
		check(f, op % OP_COUNT != OP_QUERY && op % OP_COUNT != OP_ARGS);
	}
	TU(packed_destroy)(f->t);
	if (f->alloc.live || f->alloc.nblocks)
		TU_FAIL("destroy left %zu bytes in %d blocks\n", f->alloc.live, f->alloc.nblocks);
	free(f);
	return 0;
}

#else

FUZZ_ENTRY(fuzz_packed_run)

#endif

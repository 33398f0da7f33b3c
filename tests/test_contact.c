// test_contact.c: pair intersection records. For random touching pairs of every
// kind (box-box, sphere-sphere, box-sphere both ways), pushing b by
// normal * depth must leave the two just touching, the normal must be a unit
// vector, box-box depth must be the least overlap, the point must lie in both
// bounds, and pairs that do not touch must say so.
#include "testutil.h"

typedef struct thing {
	bool sphere;
	box_t box;
	float c[DIM], r;
} thing;

static thing make_thing(tu_rng *r, bool sphere)
{
	thing x;
	memset(&x, 0, sizeof x);
	x.sphere = sphere;
	for (int d = 0; d < DIM; ++d) {
		x.c[d] = tu_float(r, 0, 10);
		x.box.min[d] = x.c[d] - tu_float(r, 0.1f, 3);
		x.box.max[d] = x.c[d] + tu_float(r, 0.1f, 3);
	}
	x.r = tu_float(r, 0.1f, 3);
	return x;
}

static ort_handle put(tree_t *t, const thing *x)
{
	ort_handle h;
	if (x->sphere)
		assert_int_equal(TU(tree_insert_sphere)(t, x->c, x->r, NULL, &h), ORT_OK);
	else
		assert_int_equal(TU(tree_insert)(t, x->box, NULL, &h), ORT_OK);
	return h;
}

/// Signed separation of two things: > 0 apart, < 0 overlapping, 0 touching.
static double separation(const thing *a, const thing *b)
{
	if (a->sphere && b->sphere) {
		double s = 0;
		for (int d = 0; d < DIM; ++d) s += ((double)a->c[d] - b->c[d]) * ((double)a->c[d] - b->c[d]);
		return sqrt(s) - a->r - b->r;
	}
	if (!a->sphere && !b->sphere) {
		double worst = -INFINITY;
		for (int d = 0; d < DIM; ++d) {
			double gap = fmax((double)a->box.min[d] - b->box.max[d], (double)b->box.min[d] - a->box.max[d]);
			if (gap > worst) worst = gap;
		}
		return worst; // the largest gap; negative: minus the least overlap
	}
	const thing *s = a->sphere ? a : b, *x = a->sphere ? b : a;
	double in = INFINITY, out2 = 0;
	bool inside = true;
	for (int d = 0; d < DIM; ++d) {
		double lo = x->box.min[d], hi = x->box.max[d], c = s->c[d];
		if (c < lo || c > hi) inside = false;
		double v = c < lo ? lo - c : c > hi ? c - hi : 0;
		out2 += v * v;
		in = fmin(in, fmin(c - lo, hi - c));
	}
	return inside ? -(in + s->r) : sqrt(out2) - s->r;
}

static void shift(thing *x, const float v[DIM], float k)
{
	for (int d = 0; d < DIM; ++d) {
		x->c[d] += v[d] * k;
		x->box.min[d] += v[d] * k;
		x->box.max[d] += v[d] * k;
	}
}

static void test_records(void **state)
{
	(void)state;
	def_t def = TU(tree_default_def)();
	tree_t *t;
	assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
	tu_rng r = tu_rng_make(5);
	int touching = 0, apart = 0;
	for (int n = 0; n < 4000; ++n) {
		thing a = make_thing(&r, n % 4 == 1 || n % 4 == 3), b = make_thing(&r, n % 4 >= 2);
		ort_handle ha = put(t, &a), hb = put(t, &b);
		TU(contact) ct;
		assert_int_equal(TU(tree_contact)(t, ha, hb, &ct), ORT_OK);
		assert_true(ort_handle_equal(ct.a, ha) && ort_handle_equal(ct.b, hb));
		double sep = separation(&a, &b);
		if (sep > 1e-4) {
			if (ct.touching) TU_FAIL("apart (%g) but touching\n", sep);
			apart++;
		} else if (sep < -1e-4) {
			if (!ct.touching) TU_FAIL("overlapping (%g) but not touching\n", sep);
			touching++;
			double len = 0;
			for (int d = 0; d < DIM; ++d) len += (double)ct.normal[d] * ct.normal[d];
			if (fabs(len - 1) > 1e-5) TU_FAIL("normal not unit: %g\n", len);
			// The depth is what separates them: pushed by it they just touch.
			double tol = 1e-4 * (1 + fabs(sep));
			if (fabs(ct.depth + sep) > tol && !(a.sphere != b.sphere)) TU_FAIL("depth %g, overlap %g, kind %d\n", (double)ct.depth, -sep, n % 4);
			thing moved = b;
			shift(&moved, ct.normal, ct.depth);
			double after = separation(&a, &moved);
			if (fabs(after) > 1e-3) TU_FAIL("after the push the gap is %g (kind %d)\n", after, n % 4);
			// A push any shorter leaves them overlapping.
			moved = b;
			shift(&moved, ct.normal, ct.depth * 0.9f);
			if (separation(&a, &moved) > 0) TU_FAIL("a shorter push already separates\n");
		}
		assert_int_equal(TU(tree_remove)(t, ha), ORT_OK);
		assert_int_equal(TU(tree_contact)(t, ha, hb, &ct), ORT_ERROR_STALE_HANDLE);
		assert_int_equal(TU(tree_remove)(t, hb), ORT_OK);
	}
	assert_true(touching > 500 && apart > 500);
	TU(tree_destroy)(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_records)};
	return cmocka_run_group_tests_name(TU_GROUP("contact"), tests, NULL, NULL);
}

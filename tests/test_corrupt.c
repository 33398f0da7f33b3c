// test_corrupt.c: validate against damaged memory (SQLite's integrity check
// spirit). Through the test allocator (testutil.h) it knows every block the tree
// owns; it flips one byte at a time in the pools (not the tree's own header)
// and asks validate. Every answer must be ORT_OK or ORT_ERROR_CORRUPT with a
// message — never a crash or an out-of-bounds read (ASan and valgrind watch) —
// and most damage must be caught. The byte is restored after each try.
#include "testutil.h"

typedef ort_result validate_fn(const void *tree, char *msg, size_t size);

static ort_result validate_tree(const void *t, char *msg, size_t size) { return TU(tree_validate)(t, msg, size); }
static ort_result validate_packed(const void *t, char *msg, size_t size)
{
	return TU(packed_validate)(t, msg, size);
}

/// Flip single bits in the first nblocks tracked blocks but the header, one
/// at a time, asking validate after each (and restoring it). Every answer
/// must be ORT_OK or ORT_ERROR_CORRUPT with a message; returns how many of
/// *tries were caught.
static int flip_bits(const tu_alloc *bl, int nblocks, const void *header, tu_rng *r, const void *tree,
                     validate_fn *validate, int *tries)
{
	int caught = 0;
	char msg[256];
	*tries = 0;
	for (int k = 0; k < 6000; ++k) {
		int i = tu_int(r, 0, nblocks - 1);
		const tu_block *b = &bl->blocks[i];
		if (b->p == header || b->size == 0) continue;
		unsigned char *p = (unsigned char *)b->p + tu_int(r, 0, (int)b->size - 1);
		unsigned char old = *p;
		*p ^= (unsigned char)(1u << tu_int(r, 0, 7));
		ort_result v = validate(tree, msg, sizeof msg);
		*p = old;
		++*tries;
		assert_true(v == ORT_OK || v == ORT_ERROR_CORRUPT);
		if (v == ORT_ERROR_CORRUPT) {
			assert_true(msg[0] != 0);
			caught++;
		}
	}
	return caught;
}

static void run(ort_placement placement, uint64_t seed)
{
	static tu_alloc bl;
	memset(&bl, 0, sizeof bl);
	def_t def = TU(tree_default_def)();
	def.placement = placement;
	def.bucket_size = 4;
	def.prune_delay = placement == ORT_PLACEMENT_TIGHT ? 4 : 0;
	def.allocator = tu_allocator(&bl);
	tree_t *t;
	assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
	void *header = bl.blocks[0].p; // the tree itself: its counts are trusted
	tu_rng r = tu_rng_make(seed);
	ort_handle hs[300];
	for (int i = 0; i < 300; ++i) {
		box_t b;
		for (int d = 0; d < DIM; ++d) {
			b.min[d] = tu_float(&r, 0, 100);
			b.max[d] = b.min[d] + tu_float(&r, 0, 8);
		}
		if (i % 5 == 0) {
			float c[DIM];
			for (int d = 0; d < DIM; ++d) c[d] = b.min[d];
			assert_int_equal(TU(tree_insert_sphere)(t, c, 3.0f, NULL, &hs[i]), ORT_OK);
		} else {
			assert_int_equal(TU(tree_insert)(t, b, NULL, &hs[i]), ORT_OK);
		}
	}
	for (int i = 0; i < 300; i += 3) assert_int_equal(TU(tree_remove)(t, hs[i]), ORT_OK);
	ort_filter f = ORT_FILTER_DEFAULT;
	f.category = 2;
	assert_int_equal(TU(tree_set_filter)(t, hs[1], f), ORT_OK);
	tu_check_valid(t);
	int tries;
	int caught = flip_bits(&bl, bl.nblocks, header, &r, t, validate_tree, &tries);
	tu_check_valid(t); // everything restored
	print_message("# %s: %d of %d flipped bits caught (the rest hit unused or free memory, or values that stay valid)\n",
	              ort_placement_string(placement), caught, tries);
	assert_true(caught > tries / 20);
	TU(tree_destroy)(t);
	assert_int_equal(bl.nblocks, 0);
}

static void test_corrupt(void **state)
{
	(void)state;
	for (int p = 0; p < ORT_PLACEMENT_COUNT; ++p) run((ort_placement)p, 7u + (unsigned)p);
}

/// The same for the packed tree: its blocks, boxes and ids (validate borrows
/// scratch through the same allocator, which the tracker sees come and go).
static void test_corrupt_packed(void **state)
{
	(void)state;
	static tu_alloc bl;
	memset(&bl, 0, sizeof bl);
	TU(packed_def) def = TU(packed_default_def)();
	def.bucket_size = 4;
	def.allocator = tu_allocator(&bl);
	TU(packed) *t;
	assert_int_equal(TU(packed_create)(&def, &t), ORT_OK);
	void *header = bl.blocks[0].p;
	tu_rng r = tu_rng_make(11u);
	box_t boxes[300];
	for (int i = 0; i < 300; ++i)
		for (int d = 0; d < DIM; ++d) {
			boxes[i].min[d] = tu_float(&r, 0, 100);
			boxes[i].max[d] = boxes[i].min[d] + tu_float(&r, 0, i % 50 ? 8 : 60);
		}
	assert_int_equal(TU(packed_build)(t, boxes, 300), ORT_OK);
	char msg[256];
	assert_int_equal(TU(packed_validate)(t, msg, sizeof msg), ORT_OK);
	// Only the tree's own blocks: validate's scratch comes and goes past them.
	int tries;
	int caught = flip_bits(&bl, bl.nblocks, header, &r, t, validate_packed, &tries);
	assert_int_equal(TU(packed_validate)(t, msg, sizeof msg), ORT_OK); // everything restored
	print_message("# packed: %d of %d flipped bits caught (the rest hit build scratch, spare room, or values that "
	              "stay valid)\n",
	              caught, tries);
	assert_true(caught > tries / 20);
	TU(packed_destroy)(t);
	assert_int_equal(bl.nblocks, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_corrupt), cmocka_unit_test(test_corrupt_packed)};
	return cmocka_run_group_tests_name(TU_GROUP("corrupt"), tests, NULL, NULL);
}

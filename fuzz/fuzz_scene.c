// fuzz_scene.c: the CLI's scene-file reader under arbitrary bytes. Any input
// must give either a scene that keeps every promise of scene_file.h (2 or 3
// dimensions, finite coordinates within the limit, min <= max, unique IDs,
// ascending line numbers) which the tree then accepts and validates, or an
// error that names a line inside the input — never a crash, and memory bounded
// by the input's size. What the tree builds, under every placement,
// validates and (up to PAIRS_CHECKED objects) finds brute force's pairs.
//
// A libFuzzer target; linked with replay.c it is a plain program replaying
// files and directories (the committed corpus runs in ctest).
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orthant/orthant.h"
#include "scene_file.h"

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_scene: %s\n", what);
		abort();
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/// Scenes up to this many objects have their pairs checked against brute force.
#define PAIRS_CHECKED 1024

static bool count_pair(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)a, (void)b, (void)ua, (void)ub;
	++*(size_t *)ctx;
	return true;
}

/// The overlapping pairs of a scene's boxes (dim coordinates of min, then
/// of max, each), by brute force.
static size_t brute_pairs(const sf_scene *scene)
{
	size_t k = 0, per = (size_t)scene->dim * 2;
	for (size_t i = 0; i < scene->count; ++i)
		for (size_t j = i + 1; j < scene->count; ++j) {
			const float *a = scene->coords + i * per, *b = scene->coords + j * per;
			bool meet = true;
			for (int d = 0; d < scene->dim; ++d) meet &= a[d] <= b[scene->dim + d] && b[d] <= a[scene->dim + d];
			k += meet;
		}
	return k;
}

// tree_check_2, tree_check_3: the tree of that dimension builds the scene (or
// refuses it as out of range) and validates; under every placement, and a
// scene of at most PAIRS_CHECKED objects gives brute force's pair count (the
// corpus holds piles the tree cannot spread out, which its pair finder sweeps).
#define TREE_CHECK(D) \
	static void tree_check_##D(const sf_scene *scene) \
	{ \
		size_t want = scene->count <= PAIRS_CHECKED ? brute_pairs(scene) : 0; \
		for (int p = 0; p < 3; ++p) { \
			ort##D##_tree_def def = ort##D##_tree_default_def(); \
			def.placement = (ort_placement)p; \
			ort##D##_tree *t; \
			check(ort##D##_tree_create(&def, &t) == ORT_OK, "create"); \
			ort_result r = ort##D##_tree_build(t, (const ort##D##_box *)scene->coords, NULL, (int)scene->count, NULL); \
			check(r == ORT_OK || r == ORT_ERROR_OUT_OF_RANGE, "the tree refused a scene the reader accepted"); \
			char msg[160]; \
			check(ort##D##_tree_validate(t, msg, sizeof msg) == ORT_OK, msg); \
			size_t got = 0; \
			if (r == ORT_OK && scene->count <= PAIRS_CHECKED) { \
				check(ort##D##_tree_find_pairs(t, ORT_MASK_ALL, count_pair, &got) == ORT_OK, "find_pairs"); \
				check(got == want, "find_pairs disagrees with brute force"); \
			} \
			ort##D##_tree_destroy(t); \
		} \
	}
TREE_CHECK(2)
TREE_CHECK(3)
#undef TREE_CHECK

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0) return 0;
	FILE *in = fmemopen((void *)data, size, "r");
	if (!in) return 0;
	sf_scene scene;
	sf_error err;
	memset(&scene, 0, sizeof scene);
	sf_status st = sf_read(in, &scene, &err, NULL, NULL);
	fclose(in);
	uint64_t lines = 1;
	for (size_t i = 0; i < size; ++i) lines += data[i] == '\n';
	if (st != SF_OK) {
		check(st == SF_ERROR_LINE || st == SF_ERROR_MEMORY, "an error of an unexpected kind");
		if (st == SF_ERROR_LINE) check(err.line >= 1 && err.line <= lines, "an error naming a line outside the input");
		check(scene.count == 0 && scene.ids == NULL, "a failed read left data behind");
		return 0;
	}
	check(scene.count == 0 || scene.dim == 2 || scene.dim == 3, "a dimension other than 2 or 3");
	check(scene.count <= size / 4 + 1, "more objects than the input can hold");
	size_t per = (size_t)scene.dim * 2;
	for (size_t i = 0; i < scene.count; ++i) {
		const float *c = scene.coords + i * per;
		for (int d = 0; d < scene.dim; ++d) {
			check(isfinite(c[d]) && isfinite(c[scene.dim + d]), "a coordinate that is not finite");
			check(fabsf(c[d]) <= ORTHANT_COORD_LIMIT && fabsf(c[scene.dim + d]) <= ORTHANT_COORD_LIMIT,
			      "a coordinate beyond the limit");
			check(c[d] <= c[scene.dim + d], "min > max");
		}
		check(scene.lines[i] >= 1 && scene.lines[i] <= lines, "a line number outside the input");
		check(i == 0 || scene.lines[i] > scene.lines[i - 1], "line numbers out of order");
	}
	if (scene.count > 0) {
		uint64_t *ids = malloc(scene.count * sizeof *ids);
		memcpy(ids, scene.ids, scene.count * sizeof *ids);
		qsort(ids, scene.count, sizeof *ids, cmp_u64);
		for (size_t i = 1; i < scene.count; ++i) check(ids[i] != ids[i - 1], "a duplicate ID accepted");
		free(ids);
		// Whatever the reader accepts, the tree stores and validates.
		if (scene.dim == 2)
			tree_check_2(&scene);
		else
			tree_check_3(&scene);
	}
	sf_scene_free(&scene);
	return 0;
}



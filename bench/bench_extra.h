/// @file bench_extra.h
/// The big-static-world scenario and the first-update measurement (scn_bigworld.c).
#ifndef ORTHANT_BENCH_EXTRA_H
#define ORTHANT_BENCH_EXTRA_H

#include <stdio.h>

#include "scene.h"

/// Monotonic seconds, and the heap in use (glibc; 0 where unknown): main.c.
double bench_now(void);
size_t bench_heap(void);
/// mobile[i] = 1 for the boxes i % stride == 0 (malloc'd; NULL when out of memory).
unsigned char *bench_bigworld_mobile(int count, int stride);
/// One tick of the boxes i % stride == 0 (the motion of scn_scene_step).
void bench_bigworld_step(scn_scene *scene, int stride);
/// The first update_pairs vs find_pairs table (Markdown, to out); returns the
/// number of disagreements.
int bench_first_update(FILE *out, int quick);

#endif

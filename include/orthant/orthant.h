// SPDX-License-Identifier: MIT. Copyright (c) 2026 the orthant authors; the terms are in LICENSE.
/// @file orthant.h
/// Everything: the quadtree (ort2_*) and the octree (ort3_*).
#ifndef ORTHANT_ORTHANT_H
#define ORTHANT_ORTHANT_H
#include "orthant/orthant2.h"
#include "orthant/orthant3.h"
#endif

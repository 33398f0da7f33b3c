// SPDX-License-Identifier: MIT. Copyright (c) 2026 the orthant authors; the terms are in LICENSE.
/// @file orthant3.h
/// The octree: orthant's tree in three dimensions, names `ort3_*`.
#ifndef ORTHANT_ORTHANT3_H
#define ORTHANT_ORTHANT3_H
#define ORTHANT_DIM 3
#include "orthant/tree_dim.h"
#include "orthant/packed_dim.h"
#undef ORTHANT_DIM
#endif

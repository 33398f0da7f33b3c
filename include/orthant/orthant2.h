// SPDX-License-Identifier: MIT. Copyright (c) 2026 the orthant authors; the terms are in LICENSE.
/// @file orthant2.h
/// The quadtree: orthant's tree in two dimensions, names `ort2_*`.
#ifndef ORTHANT_ORTHANT2_H
#define ORTHANT_ORTHANT2_H
#define ORTHANT_DIM 2
#include "orthant/tree_dim.h"
#include "orthant/packed_dim.h"
#undef ORTHANT_DIM
#endif

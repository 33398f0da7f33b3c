// dim.h: the dimension this compilation is for, and the names that depend on it.
//
// orthant is written once for any dimension. src/dim2.c and src/dim3.c define
// ORT_SRC_DIM and include every module (the .c files they list), so the
// quadtree and the octree are one implementation compiled twice, and every
// internal function is static to its dimension. Each module includes the
// internal headers it uses, so the order dimN.c lists them in does not matter.
//
// The public headers define ORTHANT_DIM only while they declare the API, so
// the dimension of this compilation comes in as ORT_SRC_DIM.
#ifndef ORTHANT_SRC_DIM_H
#define ORTHANT_SRC_DIM_H

#if ORT_SRC_DIM == 2
#include "orthant/orthant2.h"
#elif ORT_SRC_DIM == 3
#include "orthant/orthant3.h"
#else
#error "compile orthant's modules through src/dim2.c or src/dim3.c"
#endif
#define ORTHANT_DIM ORT_SRC_DIM

#define DIM ORTHANT_DIM
#define NCHILD (1 << DIM)
/// "No index": an empty link in any pool.
#define NIL UINT32_MAX

typedef ORTHANT_NAME(box) box_t;

/// A function the optimiser must inline. Either it only reads and prefetches,
/// which GCC finds "pure" (a prefetch is no side effect) and would delete a
/// call of as dead code; or the caller's constant arguments are what make it
/// fast. Only when optimising: unoptimised (the coverage build) it stays one
/// function, so its branches are counted once, not once a call site.
#if defined(__OPTIMIZE__) && defined(__GNUC__)
#define ORT_INLINE static inline __attribute__((always_inline))
#else
#define ORT_INLINE static inline
#endif

#endif

// dim3.c: the octree — orthant's dimension-generic modules compiled for 3D.
#define ORT_SRC_DIM 3
#include "dim.h"
#include "tree.c"
#include "pairs.c"
#include "query.c"
#include "broadphase.c"
#include "defer.c"
#include "contact.c"
#include "shapes.c"
#include "packed.c"

// dim2.c: the quadtree — orthant's dimension-generic modules compiled for 2D.
#define ORT_SRC_DIM 2
#include "dim.h"
#include "tree.c"
#include "pairs.c"
#include "query.c"
#include "broadphase.c"
#include "defer.c"
#include "contact.c"
#include "shapes.c"
#include "packed.c"

// dim3.c: the octree — orthant's dimension-generic modules compiled for 3D.
// Each module includes the internal headers it uses, so this list may be in any order.
#define ORT_SRC_DIM 3
#include "tree.c"
#include "tree_pool.c"
#include "tree_shape.c"
#include "tree_build.c"
#include "tree_check.c"
#include "pairs.c"
#include "query.c"
#include "broadphase.c"
#include "defer.c"
#include "contact.c"
#include "query_cast.c"
#include "query_planes.c"
#include "query_batch.c"
#include "packed.c"

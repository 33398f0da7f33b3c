// mem.h: the caller's allocator hook, called in one place. An ort_allocator
// whose functions are unset (NULL) means malloc and free; ortN_tree_create and
// ortN_packed_create refuse one with only one of them set.
#ifndef ORTHANT_SRC_MEM_H
#define ORTHANT_SRC_MEM_H

#include <stdlib.h>

#include "orthant/base.h"

static inline void *allocator_alloc(const ort_allocator *a, size_t size)
{
	return a->alloc ? a->alloc(a->ctx, size) : malloc(size);
}

/// Give back p (size bytes, as allocated); NULL is ignored.
static inline void allocator_free(const ort_allocator *a, void *p, size_t size)
{
	if (!p) return;
	if (a->free)
		a->free(a->ctx, p, size);
	else
		free(p);
}

#endif

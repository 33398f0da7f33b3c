// mem_os.h: prefaulting memory about to be written whole (mem_os.c).
#ifndef ORTHANT_SRC_MEM_OS_H
#define ORTHANT_SRC_MEM_OS_H

#include <stddef.h>

/// Below this, one fault a page costs less than the call.
#define ORT_PREFAULT_MIN ((size_t)64 * 1024)

/// Ask the system to map the pages of [p, p + bytes) now, writable, in one
/// call, rather than one fault a page as they are first written. Contents
/// are unchanged; a system without the call, or one refusing it, costs
/// nothing more than the faults would have.
void ort_mem_prefault(void *p, size_t bytes);

#endif

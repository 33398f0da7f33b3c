// mem_os.c: what the operating system offers for memory the library is about
// to fill. Separate from the dimension files: it needs the platform's headers
// and feature macros, which the portable core does without.
#if defined(__linux__) && !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE
#endif
#include "mem_os.h"

#include <stdint.h>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

void ort_mem_prefault(void *p, size_t bytes)
{
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
	if (bytes < ORT_PREFAULT_MIN) return;
	long size = sysconf(_SC_PAGESIZE); // madvise wants page-aligned starts: 4 KB here, 16 or 64 KB on some arm64
	if (size <= 0) return;
	uintptr_t page = (uintptr_t)size, lo = ((uintptr_t)p + page - 1) & ~(page - 1), hi = ((uintptr_t)p + bytes) & ~(page - 1);
	if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
#else
	(void)p;
	(void)bytes;
#endif
}

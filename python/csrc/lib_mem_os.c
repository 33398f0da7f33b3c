// The C library's mem_os.c (prefaulting memory about to be filled), compiled into the extension.
#include "mem_os.c"

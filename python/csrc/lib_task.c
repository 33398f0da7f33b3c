// The C library's task.c (execution contexts, the built-in pool), compiled into the extension.
#include "task.c"

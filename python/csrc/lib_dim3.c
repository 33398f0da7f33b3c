// The C library's dim3.c, compiled into the extension (the setup script puts ../src on the include path).
#include "dim3.c"

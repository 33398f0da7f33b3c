// The C library's dim2.c, compiled into the extension (the setup script puts ../src on the include path).
#include "dim2.c"

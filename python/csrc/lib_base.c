// The C library's base.c, compiled into the extension (the setup script puts ../src on the include path).
#include "base.c"

// fuzz/shim/cmocka.h: the few cmocka names tests/testutil.h uses, mapped to
// abort(), so the fuzz targets reuse the tests' brute-force oracle without
// linking cmocka. It stands first on the fuzz targets' include path.
#ifndef ORTHANT_FUZZ_CMOCKA_SHIM_H
#define ORTHANT_FUZZ_CMOCKA_SHIM_H

#include <stdio.h>
#include <stdlib.h>

#define print_error(...) fprintf(stderr, __VA_ARGS__)
#define fail() abort()
#define assert_true(c)                                                                                            \
	do {                                                                                                          \
		if (!(c)) {                                                                                               \
			fprintf(stderr, "%s:%d: %s is false\n", __FILE__, __LINE__, #c);                                      \
			abort();                                                                                              \
		}                                                                                                         \
	} while (0)
#define assert_false(c) assert_true(!(c))
#define assert_null(p) assert_true((p) == NULL)
#define assert_int_equal(a, b)                                                                                    \
	do {                                                                                                          \
		long long a_ = (long long)(a), b_ = (long long)(b);                                                       \
		if (a_ != b_) {                                                                                           \
			fprintf(stderr, "%s:%d: %s is %lld, not %lld\n", __FILE__, __LINE__, #a, a_, b_);                     \
			abort();                                                                                              \
		}                                                                                                         \
	} while (0)

#endif

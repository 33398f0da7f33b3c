#!/usr/bin/env bash
# tsan.sh: build the concurrent-readers test (tests/test_threads.c), the
# split-calls test (tests/test_tasks.c) and the broad phase's (its churn and
# move_many frames on two workers, tests/test_broadphase.c) against a
# ThreadSanitizer copy of the library (CMake option ORTHANT_TSAN) in
# build-tsan/ and run it for 2D and 3D. Any data race fails the run
# (TSAN_OPTIONS=halt_on_error=1). Extra arguments go to ctest.
# Under ThreadSanitizer every memory access costs several times over, so the
# suites run on an eighth of their scenes (ORTHANT_TEST_SHRINK, testutil.h:
# tu_size keeps every size a job threshold or a failure sweep depends on);
# both ctest runs of test.sh run them full.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-tsan
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DORTHANT_TSAN=ON -DORTHANT_SANITIZE=OFF \
	-DORTHANT_BUILD_DEMO=OFF -DORTHANT_BUILD_TOOLS=OFF -DORTHANT_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j"$(nproc 2>/dev/null || echo 2)" --target test_threads_tsan_2d test_threads_tsan_3d \
	test_tasks_tsan_2d test_tasks_tsan_3d test_broadphase_tsan_2d test_broadphase_tsan_3d >/dev/null
ORTHANT_TEST_SHRINK=${ORTHANT_TEST_SHRINK:-8} ctest --test-dir "$build" -R '^test_(threads|tasks|broadphase)_tsan_' --output-on-failure "$@"

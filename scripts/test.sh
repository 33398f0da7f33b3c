#!/usr/bin/env bash
# test.sh: every test, as CI runs it. Installs what it needs, then:
#   1. the suite, optimised, warnings as errors, every optional part required
#      (ORTHANT_REQUIRE_ALL: a missing package fails the configure, never skips tests);
#   2. the suite again under AddressSanitizer + UndefinedBehaviorSanitizer (the
#      heavy suites on half their scenes: the first run had them full), at -O1
#      with asserts on (two to three times faster than -O0 under ASan);
#   3. the soak: the bouncing-boxes scene for 250,000 frames of incremental updates;
#   4. every library test under valgrind memcheck (the heavy suites on smaller scenes);
#   5. the concurrent-readers and split-calls tests under ThreadSanitizer;
#   6. a short fuzz session of every fuzz target (libFuzzer, 40 s in all);
#   7. coverage of src/, its summary printed (lines >= 95%, branches >= 90%);
#   8. the Python package: installed into a fresh venv, its pytest suite.
# Steps 3 to 8 run in two lanes at once, of about equal length (about 11 minutes
# each on 2 cores): the 3D half of 4 with the fuzz replays, then 7 and 8; the
# 2D half of 4, then 5, 6 and 3.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh

jobs=$(nproc 2>/dev/null || echo 2)
passed=0
run_suite() {
  local dir=$1; shift
  echo "== $dir: cmake $*" >&2
  cmake -S . -B "$dir" -DORTHANT_WERROR=ON -DORTHANT_REQUIRE_ALL=ON "$@" >/dev/null
  cmake --build "$dir" -j"$jobs" >/dev/null
  ctest --test-dir "$dir" --output-on-failure -j"$jobs" | tee "$dir/ctest.log"
  passed=$((passed + $(sed -n 's/.*tests passed, 0 tests failed out of \([0-9]*\).*/\1/p' "$dir/ctest.log")))
}

run_suite build/release -DCMAKE_BUILD_TYPE=Release
# The benchmark is left out here: it times optimised code, the release run
# above has built and run it, and its C++ peers (Boost.Geometry, Bullet) were
# a minute of this build.
ORTHANT_TEST_SHRINK=2 ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_suite build/sanitize -DCMAKE_BUILD_TYPE=Debug -DORTHANT_SANITIZE=ON -DORTHANT_BUILD_BENCH=OFF \
  -DCMAKE_C_FLAGS_DEBUG="-g -O1" -DCMAKE_CXX_FLAGS_DEBUG="-g -O1"

# The rest runs in two lanes side by side, one a core: the soak, valgrind and
# the fuzzers are single-threaded, so one after another they would leave the
# second core idle. Each step's output lands in build/steps/<step>.log and is
# printed when the lane ends; a failing step stops its lane and fails the script.
mkdir -p build/steps
soak() { build/release/tests/orthant_soak 250000; }
memcheck() { # memcheck 2|3|replays: one share of the valgrind work, so both lanes carry some
  # Under valgrind every instruction costs some fifty: ORTHANT_TEST_SHRINK makes the
  # heavy suites' scenes smaller here (testutil.h, tu_size); both ctest runs above ran them full.
  local t f
  if [ "$1" = replays ]; then
    for f in scene ops packed; do
      # The same operations, the quadratic brute-force pair sets every 16th step
      # (fuzz_ops.c); both ctest runs above compared them every step.
      ORTHANT_FUZZ_ORACLE_EVERY=16 valgrind -q --error-exitcode=9 --leak-check=full \
        build/release/tests/fuzz/fuzz_${f}_replay fuzz/corpus/$f >/dev/null
    done
    echo "valgrind clean: fuzz replays"
    return
  fi
  for t in build/release/tests/test_*_"$1"d; do
    case $t in *tsan*) continue ;; esac
    ORTHANT_TEST_SHRINK=8 valgrind -q --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite,indirect \
      "$t" >/dev/null
    echo "valgrind clean: $(basename "$t")"
  done
}
memcheck_2d() { memcheck 2; }
memcheck_3d() { memcheck 3; memcheck replays; }
python_tests() { bash scripts/python.sh >build/pytest.log && cat build/pytest.log; }
lane() { # lane STEP...: the steps in order, each logged. Each runs as a job of
  # its own, not as a condition, so that set -e still stops it at its first failure.
  local step start
  for step in "$@"; do
    echo "== $step" >"build/steps/$step.log"
    start=$SECONDS
    "$step" >>"build/steps/$step.log" 2>&1 &
    wait $! || { echo "FAILED: $step" >>"build/steps/$step.log"; return 1; }
    echo "($step: $((SECONDS - start)) s)" >>"build/steps/$step.log"
  done
}
report() { # the lane's logs, in order; fails if the lane did
  local status=$1 step; shift
  for step in "$@"; do [ -f "build/steps/$step.log" ] && cat "build/steps/$step.log"; done
  return "$status"
}
tsan() { bash scripts/tsan.sh; }
# fuzz_ops runs its whole corpus before fuzzing (each input's brute-force pair
# sets every step: 38 s of its 13 s share on a quiet machine, 65 s in a loaded
# run); here every 4th step and the last, as valgrind's replays do every 16th.
# Both ctest runs above replay the corpus with the oracle every step.
fuzz() { ORTHANT_FUZZ_ORACLE_EVERY=4 bash scripts/fuzz.sh 40; }
coverage() { ORTHANT_TEST_SHRINK=4 bash scripts/coverage.sh; }
echo "== soak, valgrind memcheck, ThreadSanitizer, fuzz (40 s), coverage, python: two lanes" >&2
rm -f build/steps/*.log
lane memcheck_3d coverage python_tests &
a=$!
lane memcheck_2d tsan fuzz soak &
b=$!
sa=0 sb=0
wait $a || sa=$?
wait $b || sb=$?
status=0
report $sa memcheck_3d coverage python_tests || status=1
report $sb memcheck_2d tsan fuzz soak || status=1
[ $status -eq 0 ] || { echo "test.sh: a step failed (its log is above, and in build/steps/)" >&2; exit 1; }
passed=$((passed + $(sed -n 's/^\([0-9]*\) passed.*/\1/p' build/pytest.log)))

# Every stage above stops the script on failure, so reaching here means all passed.
echo "ctest suites, soak, valgrind, tsan, fuzz and coverage all green"
echo "$passed passed, 0 failed"

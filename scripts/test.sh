#!/usr/bin/env bash
# test.sh: every test, as CI runs it. Installs what it needs, then:
#   1. the suite, optimised, warnings as errors, every optional part required
#      (ORTHANT_REQUIRE_ALL: a missing package fails the configure, never skips tests);
#   2. the suite again under AddressSanitizer + UndefinedBehaviorSanitizer;
#   3. the soak: the bouncing-boxes scene for 1,000,000 frames of incremental updates;
#   4. every library test under valgrind memcheck;
#   5. the concurrent-readers test under ThreadSanitizer;
#   6. a short fuzz session of every fuzz target (libFuzzer, about a minute);
#   7. coverage of src/, its summary printed (lines >= 95%, branches >= 90%);
#   8. the Python package: installed into a fresh venv, its pytest suite.
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
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_suite build/sanitize -DCMAKE_BUILD_TYPE=Debug -DORTHANT_SANITIZE=ON

echo "== soak" >&2
build/release/tests/orthant_soak 1000000

echo "== valgrind memcheck" >&2
for t in build/release/tests/test_*_[23]d; do
  case $t in *tsan*) continue ;; esac
  valgrind -q --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite,indirect "$t" >/dev/null
  echo "valgrind clean: $(basename "$t")"
done
valgrind -q --error-exitcode=9 --leak-check=full build/release/tests/fuzz/fuzz_scene_replay fuzz/corpus/scene >/dev/null
valgrind -q --error-exitcode=9 --leak-check=full build/release/tests/fuzz/fuzz_ops_replay fuzz/corpus/ops >/dev/null
valgrind -q --error-exitcode=9 --leak-check=full build/release/tests/fuzz/fuzz_packed_replay fuzz/corpus/packed >/dev/null
echo "valgrind clean: fuzz replays"

echo "== ThreadSanitizer" >&2
bash scripts/tsan.sh

echo "== fuzz (60 s)" >&2
bash scripts/fuzz.sh 60

echo "== coverage" >&2
bash scripts/coverage.sh

echo "== python" >&2
bash scripts/python.sh | tee build/pytest.log
passed=$((passed + $(sed -n 's/^\([0-9]*\) passed.*/\1/p' build/pytest.log)))

# Every stage above stops the script on failure, so reaching here means all passed.
echo "ctest suites, soak, valgrind, tsan, fuzz and coverage all green"
echo "$passed passed, 0 failed"

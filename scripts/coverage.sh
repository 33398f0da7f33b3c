#!/usr/bin/env bash
# coverage.sh: build with coverage instrumentation into build/coverage, run the
# library's tests, and print gcovr's summary of src/. Fails when line coverage
# falls below ORTHANT_MIN_LINES (default 95) or branch coverage below
# ORTHANT_MIN_BRANCHES (default 90).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build/coverage
min_lines=${ORTHANT_MIN_LINES:-95}
min_branches=${ORTHANT_MIN_BRANCHES:-90}
(cd "$root" && cmake --preset coverage >/dev/null) # CMakePresets.json: Debug, --coverage, library only
find "$build" -name '*.gcda' -delete 2>/dev/null || true
cmake --build "$build" -j"$(nproc 2>/dev/null || echo 2)" >/dev/null
ctest --test-dir "$build" -j"$(nproc 2>/dev/null || echo 2)" -E soak >/dev/null
cd "$root"
gcovr -r . --filter 'src/' "$build" --print-summary --fail-under-line "$min_lines" \
	--fail-under-branch "$min_branches" -o /dev/null

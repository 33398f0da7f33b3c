#!/usr/bin/env bash
# bare_configure.sh SOURCE_DIR WORK_DIR: orthant on a machine with a compiler and
# CMake only, simulated by hiding every optional package from pkg-config and from
# CMake's find commands. Three configures of fresh build directories:
#   1. everything optional hidden: the configure succeeds and prints one skip line
#      per part, naming its Debian package; the whole build succeeds (the library,
#      the CLI without PNG output, the examples); the CLI still writes SVG and says
#      what PNG needs; the quick tests this build has pass;
#   2. no pkg-config and no C++ compiler either: still configures, and says so;
#   3. as 1 with ORTHANT_REQUIRE_ALL=ON: the configure fails and names every package.
set -euo pipefail
src=$1 work=$2
rm -rf "$work"
mkdir -p "$work/empty"
fail() { echo "FAIL: $*"; exit 1; }

# pkg-config finds no .pc file; CMake's own find modules and package configs are
# switched off; the libspatialindex header and libraries, found by path, are hidden.
hide=(-DCMAKE_DISABLE_FIND_PACKAGE_PNG=ON -DCMAKE_DISABLE_FIND_PACKAGE_box2d=ON
	-DCMAKE_DISABLE_FIND_PACKAGE_Boost=ON
	"-DCMAKE_IGNORE_PATH=/usr/include;/usr/local/include;/usr/lib;/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu);/usr/local/lib")
bare() { env -u PKG_CONFIG_PATH PKG_CONFIG_LIBDIR="$work/empty" cmake "$@"; }

expect_line() { # log, then patterns each of which one line must hold
	local log=$1; shift
	grep -q -- "$*" "$log" || fail "no line '$*' in $log"
}

echo "== 1. optional packages hidden"
# Debug builds here and below: what is checked is what configures, builds and
# runs without the optional packages; the suite's own Release build (-Werror,
# every part) compiles the optimised code (Release made this test 80 s, Debug 20).
bare -S "$src" -B "$work/b1" -DCMAKE_BUILD_TYPE=Debug "${hide[@]}" >"$work/b1.log" 2>&1 ||
	{ cat "$work/b1.log"; fail "the configure failed"; }
grep "orthant: skipped" "$work/b1.log"
expect_line "$work/b1.log" "skipped the library's unit and oracle tests.*libcmocka-dev"
expect_line "$work/b1.log" "skipped PNG output of the CLI's render command.*libpng-dev"
expect_line "$work/b1.log" "skipped the demo .*libsdl2-dev libsdl2-ttf-dev libpng-dev"
expect_line "$work/b1.log" "skipped the benchmark's Box2D peer.*libbox2d-dev"
expect_line "$work/b1.log" "skipped the benchmark's Bullet peer.*libbullet-dev"
expect_line "$work/b1.log" "skipped the benchmark's libspatialindex peer.*libspatialindex-dev"
expect_line "$work/b1.log" "skipped the benchmark's Boost.Geometry peer.*libboost-dev"
! grep "orthant: skipped" "$work/b1.log" | grep -v "(Debian: apt-get install [a-z]" || fail "a skip line names no package"
cmake --build "$work/b1" -j2 >"$work/b1-build.log" 2>&1 || { tail -30 "$work/b1-build.log"; fail "the build failed"; }
for f in liborthant.a liborthant.so tools/orthant orthant_example_quickstart bench/orthant_bench; do
	[ -e "$work/b1/$f" ] || fail "the build made no $f"
done
[ ! -e "$work/b1/demo/orthant_demo" ] || fail "the demo was built without SDL2"
printf '1 0 0 1 1\n2 0.5 0.5 2 2\n3 5 5 6 6\n' >"$work/scene.txt"
[ "$("$work/b1/tools/orthant" pairs "$work/scene.txt")" = "1 2" ] || fail "orthant pairs"
"$work/b1/tools/orthant" render -o "$work/scene.svg" "$work/scene.txt" || fail "render to SVG"
grep -q "<svg" "$work/scene.svg" || fail "render wrote no SVG"
if "$work/b1/tools/orthant" render -o "$work/scene.png" "$work/scene.txt" 2>"$work/png.err"; then
	fail "render to PNG succeeded without libpng"
fi
grep -q "libpng-dev" "$work/png.err" || fail "render's PNG refusal does not name libpng-dev"
ctest --test-dir "$work/b1" -L quick --output-on-failure >"$work/b1-ctest.log" 2>&1 ||
	{ cat "$work/b1-ctest.log"; fail "quick tests"; }
grep -q "tests passed" "$work/b1-ctest.log" || fail "no quick tests ran"
! grep -q "test_oracle" "$work/b1-ctest.log" || fail "the cmocka suites were registered without cmocka"

echo "== 2. no pkg-config, no C++ compiler"
CXX=/nonexistent/c++ bare -S "$src" -B "$work/b2" -DCMAKE_BUILD_TYPE=Debug "${hide[@]}" \
	-DCMAKE_DISABLE_FIND_PACKAGE_PkgConfig=ON >"$work/b2.log" 2>&1 || { cat "$work/b2.log"; fail "the configure failed"; }
grep "orthant: skipped" "$work/b2.log"
expect_line "$work/b2.log" "skipped the library's unit and oracle tests.*libcmocka-dev pkg-config"
expect_line "$work/b2.log" "skipped the headers' C++ compile test.*g++"
expect_line "$work/b2.log" "skipped the benchmark (.*g++"
cmake --build "$work/b2" -j2 --target orthant orthant_shared orthant_cli >/dev/null || fail "the library or CLI build failed"

echo "== 3. ORTHANT_REQUIRE_ALL=ON"
if bare -S "$src" -B "$work/b3" "${hide[@]}" -DORTHANT_REQUIRE_ALL=ON >"$work/b3.log" 2>&1; then
	fail "the configure succeeded with parts missing"
fi
tr -s ' \n' '  ' <"$work/b3.log" >"$work/b3.txt" # CMake wraps its errors
for p in libcmocka-dev libpng-dev libsdl2-dev libbox2d-dev libbullet-dev libspatialindex-dev libboost-dev; do
	grep -q "cannot be built: apt-get install [a-z0-9 -]*$p" "$work/b3.txt" || fail "no error names $p"
done
grep -q "ORTHANT_REQUIRE_ALL is ON" "$work/b3.txt" || fail "the error does not name ORTHANT_REQUIRE_ALL"

rm -rf "$work"
echo "bare configure: skips named, builds, and fails under ORTHANT_REQUIRE_ALL"

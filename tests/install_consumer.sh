#!/usr/bin/env bash
# install_consumer.sh BUILD_DIR SOURCE_DIR WORK_DIR: orthant as a user takes it.
#   1. install into a scratch prefix; the CMake package names no absolute path
#      (libm by name), has orthant::orthant and orthant::shared; then the prefix
#      is moved, so nothing may depend on where it was installed;
#   2. find_package: a consumer against the static and the shared target, both
#      run; the shared one needs liborthant.so and the static one does not; the
#      shared one installed beside the library and the prefix moved again, it
#      still finds the .so through its $ORIGIN rpath;
#   3. pkg-config: the same program compiled by hand, shared (run with
#      LD_LIBRARY_PATH) and static;
#   4. add_subdirectory of the source tree: both targets, and nothing but the
#      library is built.
set -euo pipefail
build=$1 src=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
# Output is captured before grep -q reads it: with pipefail, a writer cut off by
# grep's early exit would fail the pipeline.
has() { grep -q -- "$1" <<<"$2"; }
runs() { has "ship touches rock" "$("$@")" || fail "$* did not print its pairs"; }
needs_so() { has 'NEEDED.*liborthant\.so' "$(readelf -d "$1")"; }
example=$src/examples/quickstart.c

echo "== 1. install, check the package, move it"
cmake --install "$build" --prefix "$work/a" >/dev/null
targets=$(ls "$work"/a/lib*/cmake/orthant/orthantTargets*.cmake)
grep -q 'add_library(orthant::orthant STATIC' $targets || fail "no orthant::orthant in the package"
grep -q 'add_library(orthant::shared SHARED' $targets || fail "no orthant::shared in the package"
! grep -q 'orthant_shared' $targets || fail "the package still names orthant_shared"
! grep -n 'libm\.\|"/usr/\|;/usr/' $targets || fail "the package names an absolute path"
mv "$work/a" "$work/p"

echo "== 2. find_package, static and shared"
cmake -S "$src/tests/consumer" -B "$work/fp" -DCMAKE_PREFIX_PATH="$work/p" -DCMAKE_INSTALL_PREFIX="$work/p" \
	-DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/fp" >/dev/null
runs "$work/fp/consumer_static"
runs "$work/fp/consumer_shared"
needs_so "$work/fp/consumer_shared" || fail "consumer_shared does not load liborthant.so"
! needs_so "$work/fp/consumer_static" || fail "consumer_static loads liborthant.so"
has "liborthant.so.0 => $work/p/lib" "$(ldd "$work/fp/consumer_shared")" ||
	fail "consumer_shared does not load the installed liborthant.so"
cmake --install "$work/fp" >/dev/null
mv "$work/p" "$work/q"
has "moon touches ship" "$(env -u LD_LIBRARY_PATH "$work/q/bin/consumer_shared")" ||
	fail "the installed consumer_shared does not find liborthant.so through its rpath"
has "liborthant.so.0 => $work/q/bin/../lib" "$(ldd "$work/q/bin/consumer_shared")" ||
	fail "the installed consumer_shared loads a liborthant.so other than its prefix's"

echo "== 3. pkg-config, shared and static"
export PKG_CONFIG_PATH=$work/q/lib/pkgconfig
# shellcheck disable=SC2046
cc -std=c11 "$example" $(pkg-config --cflags --libs orthant) -o "$work/pc_shared"
needs_so "$work/pc_shared" || fail "pc_shared does not load liborthant.so"
LD_LIBRARY_PATH=$work/q/lib runs "$work/pc_shared"
# shellcheck disable=SC2046
cc -std=c11 "$example" $(pkg-config --cflags orthant) "$(pkg-config --variable=libdir orthant)/liborthant.a" -lm -pthread \
	-o "$work/pc_static"
! needs_so "$work/pc_static" || fail "pc_static loads liborthant.so"
runs "$work/pc_static"

echo "== 4. add_subdirectory"
# Debug: what is checked is which targets the tree adds and that they link and
# run, not optimised code (a Release build of the library took 60 s of this
# test's 64, a Debug one 10).
cmake -S "$src/tests/consumer" -B "$work/sub" -DORTHANT_SOURCE="$src" -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$work/sub" >/dev/null
runs "$work/sub/consumer_static"
runs "$work/sub/consumer_shared"
needs_so "$work/sub/consumer_shared" || fail "add_subdirectory: consumer_shared does not load liborthant.so"
# The Makefile's targets, less its per-file ones (foo.o, foo.i, foo.s).
targets=$(cmake --build "$work/sub" --target help | sed -n 's/^\.\.\. \([^ ./]*\)$/\1/p; s/^\.\.\. \([^ ./]*\) .*/\1/p')
for t in $targets; do
	case $t in
	all | clean | depend | edit_cache | rebuild_cache | install | list_install_components) ;;
	consumer_static | consumer_shared | orthant | orthant_shared) ;;
	*) fail "add_subdirectory builds $t, more than the library" ;;
	esac
done
[ ! -e "$work/sub/orthant/CTestTestfile.cmake" ] || fail "add_subdirectory registered orthant's tests"

rm -rf "$work"
echo "installed package (moved twice), pkg-config and add_subdirectory: static and shared all run"

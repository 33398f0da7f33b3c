#!/bin/sh
# bench/run.sh: build orthant_bench (Release) and run it — the one command.
#
#   bench/run.sh            full run (under ~15 min on 2 cores); writes
#                           bench/results/<machine>.csv, .svg and .md
#   bench/run.sh --quick    the CI smoke run (under a minute); writes into the build dir
#   other arguments go to orthant_bench (--only S3,S5  --rounds N  --machine NAME)
#
# ORTHANT_BENCH_BUILD picks the build directory (default build-bench),
# ORTHANT_BENCH_MACHINE the machine name (default: uname -n).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${ORTHANT_BENCH_BUILD:-$root/build-bench}
machine=${ORTHANT_BENCH_MACHINE:-$(uname -n)}
quick=0
for arg in "$@"; do
	[ "$arg" = "--quick" ] && quick=1
done

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DORTHANT_BUILD_BENCH=ON \
	-DORTHANT_BUILD_TESTS=OFF -DORTHANT_BUILD_TOOLS=OFF -DORTHANT_BUILD_DEMO=OFF >/dev/null
cmake --build "$build" --target orthant_bench -j2 >&2

if [ "$quick" = 1 ]; then
	exec "$build/bench/orthant_bench" --machine "$machine" --csv "$build/bench/$machine-quick.csv" \
		--svg "$build/bench/$machine-quick.svg" "$@"
fi
out="$root/bench/results"
mkdir -p "$out"
status=0
"$build/bench/orthant_bench" --machine "$machine" --csv "$out/$machine.csv" --svg "$out/$machine.svg" "$@" \
	>"$out/$machine.md" || status=$?
cat "$out/$machine.md"
exit $status

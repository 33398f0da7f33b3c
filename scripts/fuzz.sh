#!/usr/bin/env bash
# fuzz.sh [seconds]: build orthant's libFuzzer targets with clang into
# build-fuzzer/ (or $ORTHANT_FUZZ_BUILD) and run each for an equal share of the
# given seconds (default 60 in all: 20 s each for ops, scene and packed),
# starting from the committed corpus fuzz/corpus/<name>/ (copied, so the
# committed seeds stay as they are). Prints executions per second and in total.
# A crash lands in build-fuzzer/crashes/<name>/: copy it into fuzz/corpus/<name>/
# so fuzz_<name>_replay in ctest keeps it fixed.
# ORTHANT_TEST_KNOWN_BUGS=1 lifts fuzz_ops' clamp of coordinates past 1e15.
set -euo pipefail

total=${1:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${ORTHANT_FUZZ_BUILD:-$root/build-fuzzer}
targets=(ops scene packed)
cc=${CC:-$(command -v clang || command -v clang-14)}

cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DORTHANT_BUILD_FUZZ=ON -DORTHANT_BUILD_TESTS=OFF -DORTHANT_BUILD_DEMO=OFF -DORTHANT_BUILD_TOOLS=OFF \
	-DORTHANT_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target $(printf 'fuzz_%s ' "${targets[@]}") >/dev/null

share=$((total / ${#targets[@]}))
[ "$share" -ge 1 ] || share=1
status=0
for name in "${targets[@]}"; do
	corpus=$build/corpus/$name
	crashes=$build/crashes/$name
	mkdir -p "$corpus" "$crashes"
	cp -n "$root"/fuzz/corpus/"$name"/* "$corpus"/ 2>/dev/null || true
	log=$build/fuzz_$name.log
	start=$(date +%s.%N)
	if ! "$build"/fuzz/fuzz_"$name" -max_total_time="$share" -print_final_stats=1 \
		-artifact_prefix="$crashes"/ "$corpus" >"$log" 2>&1; then
		status=1
		echo "fuzz_$name: FAILED, see $log and $crashes/"
	fi
	end=$(date +%s.%N)
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	execs=${execs:-0}
	awk -v n="$name" -v e="$execs" -v s="$start" -v f="$end" -v c="$(ls "$corpus" | wc -l)" \
		'BEGIN { t = f - s; printf "fuzz_%s: %d executions in %.1f s, %.0f exec/s, corpus %d\n", n, e, t, e / t, c }'
done
exit $status

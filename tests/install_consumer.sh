#!/usr/bin/env bash
# install_consumer.sh BUILD_DIR SOURCE_DIR: install orthant into a scratch
# prefix, then build and run a consumer through find_package and pkg-config.
set -euo pipefail
build=$1 src=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
cmake -S "$src/tests/consumer" -B "$prefix/consumer" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$prefix/consumer" >/dev/null
"$prefix/consumer/consumer" | grep -q "ship touches rock"
# pkg-config route: compile the same example by hand.
PKG_CONFIG_PATH="$prefix/lib/pkgconfig:$prefix/lib/x86_64-linux-gnu/pkgconfig" \
  cc -std=c11 "$src/examples/quickstart.c" $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig:$prefix/lib/x86_64-linux-gnu/pkgconfig" pkg-config --cflags --libs --static orthant) -o "$prefix/qs"
LD_LIBRARY_PATH="$prefix/lib" "$prefix/qs" | grep -q "moon touches ship"
echo "installed package works through find_package and pkg-config"

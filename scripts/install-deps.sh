#!/usr/bin/env bash
# install-deps.sh: install from Debian's archive what orthant's build, tests,
# demo and benchmark need. Installs only what is missing; run as root.
set -euo pipefail

packages=(
  build-essential cmake pkg-config          # the build
  libcmocka-dev                             # tests
  valgrind gcovr clang libclang-rt-14-dev   # memcheck, coverage, libFuzzer
  libsdl2-dev libsdl2-ttf-dev fonts-dejavu-core libpng-dev  # demo, pictures
  xvfb xauth                                # the demo's windowed test
  libbox2d-dev libbullet-dev libspatialindex-dev libboost-dev  # benchmark peers
  python3-dev python3-venv python3-numpy python3-setuptools python3-wheel  # the Python package
  python3-pytest python3-hypothesis python3-scipy python3-matplotlib       # its tests and benchmark
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install-deps: installing ${missing[*]}" >&2
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: need root to apt-get install: ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

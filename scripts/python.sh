#!/usr/bin/env bash
# python.sh: install the Python package into a fresh venv (build/pyvenv), the
# way the README says, and run its tests. Debian's packages only, no network.
# Prints pytest's summary; exits non-zero if anything fails or no test ran.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=build/pyvenv
rm -rf "$venv"
mkdir -p build
/usr/bin/python3 -m venv --system-site-packages "$venv"
"$venv/bin/pip" install -q --no-build-isolation ./python
# From build/, so `import orthant` is the installed package, not python/orthant.
cd build && pyvenv/bin/python -m pytest -q -p no:cacheprovider ../python/tests

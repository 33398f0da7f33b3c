#!/usr/bin/env bash
# demo.sh: the main job. Builds orthant and runs the demo on its default scene
# (the classic bouncing boxes): a window when there is a display, otherwise a
# headless run that writes a picture and prints where it is.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j"$(nproc 2>/dev/null || echo 2)" >/dev/null
demo=build/release/demo/orthant_demo
if [ -x "$demo" ]; then
  if [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]; then
    exec "$demo" "$@"
  fi
  mkdir -p out
  "$demo" --headless --frames 120 -o out/demo.png "$@"
else
  # Without the demo (no SDL2): the same scene, measured, as text.
  exec build/release/orthant_classic_scene "$@"
fi

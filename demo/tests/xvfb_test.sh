#!/bin/sh
# xvfb_test.sh DEMO PICTURE_TEST DIR: the windowed demo under Xvfb — a real X
# window, keys pressed through SDL's event queue (--script), a screenshot by the
# s key and one of the last frame, both checked. Exit 77 (skipped) without xvfb-run.
demo=$1
check=$2
dir=$3
if ! command -v xvfb-run >/dev/null 2>&1; then
	echo "xvfb-run not found (Debian: xvfb): skipped"
	exit 77
fi
mkdir -p "$dir" && cd "$dir" || exit 1
rm -f orthant-demo-*.png last.png out.txt
# h: help on, b: brute force, b: tree, g g: cells off and on, p: placement,
# u: incremental, +: more objects, c: the other scene, h: help off, a left drag
# (query box), a right drag (ray), s: screenshot.
# Xvfb has no GPU: SDL's software renderer on a plain X11 framebuffer keeps the
# test off Mesa's GL drivers, which SDL loads and unloads and whose memory
# LeakSanitizer then reports without a name it could suppress (a 6-line SDL
# program that only opens a window shows the same 112 bytes).
# xvfb-run -a picks the first display number without a lock file and then
# starts Xvfb on it; two runs at once (parallel ctest, other builds) can pick
# the same one, and the loser fails to start. That is the harness, not the
# demo: try again on a new number, up to three times.
for attempt in 1 2 3; do
	SDL_RENDER_DRIVER=software SDL_FRAMEBUFFER_ACCELERATION=0 xvfb-run -a -s "-screen 0 1280x1024x24" "$demo" --frames 40 --script "h.b.b.g.g.p.u.+.c.h.(l,100,120,260,300).(r,20,700,580,100).s" -o last.png >out.txt 2>&1
	rc=$?
	grep -q "Xvfb failed to start\|Server is already active\|no window (\|no display answered" out.txt || break
	echo "attempt $attempt: the X server did not come up; trying again"
	sleep 1
done
cat out.txt
[ $rc -eq 0 ] || { echo "FAIL: the demo exited with $rc"; exit 1; }
grep -q "^orthant demo: window (video x11, renderer software)" out.txt || { echo "FAIL: no X11 window was made"; exit 1; }
grep -q "mode quadtree, tight, incremental" out.txt || { echo "FAIL: the keys did not reach the demo"; exit 1; }
grep -q "^orthant demo: 2D, uniform scene, 5000 objects" out.txt || { echo "FAIL: + did not change the count (2000 to 5000) or c the scene"; exit 1; }
grep -q "^query box: [1-9]" out.txt || { echo "FAIL: the left drag made no query box with hits"; exit 1; }
grep -q "^ray: [1-9][0-9]* hits, nearest #[0-9]* (ORT_OK)" out.txt || { echo "FAIL: the right drag made no ray with hits"; exit 1; }
[ -s orthant-demo-001.png ] || { echo "FAIL: s saved no screenshot"; exit 1; }
"$check" --check-png orthant-demo-001.png last.png

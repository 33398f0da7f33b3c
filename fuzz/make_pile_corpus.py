#!/usr/bin/env python3
"""make_pile_corpus.py: write fuzz_ops inputs that start from a pile the tree
cannot spread out (fuzz/corpus/ops/pile-*), made by fuzz_ops' pile code
(fuzz_input.h's fuzz_pile): a speck and a far box, strips, binary scales,
straddlers, boxes holding one point, a pinwheel of strips, rods, plates,
duplicates, and shapes of users' data (dense blobs, touching tiles, power-law
sizes, a circle or sphere shell, a diagonal line), in 2D and 3D, each under one placement (the pinwheel and the
rods under all three), inserted one by one or built in one batch; then
queries, moves, removes and inserts among them, with the task pool on for a
while, every step checked against brute force. The pinwheel and the rods are
big enough for the sweep of a pile to go on past its budget (the active set
on a second axis; in 3D the segment tree). And the same piles as scene files
for fuzz_scene (fuzz/corpus/scene/pile-*), whose trees must find brute
force's pairs under every placement.

    python3 fuzz/make_pile_corpus.py
"""
import os
import random

from make_ownidx_corpus import OP_COUNT, OP_INSERT, OP_MOVE_FAR, OP_MOVE_NEAR, OP_QUERY, OP_REMOVE, box, s8

# fuzz_ops.c: the clear op's code 0xEE makes a pile; the tick op's 0xF0
# switches the task context (operand 2: the built-in pool, 0: none).
OP_PILE, OP_TASKS = 0xEE, 0xF0
KINDS = ("speck", "strips", "binary", "straddle", "centre", "pinwheel", "rods", "plates", "duplicates",
         "clusters", "tiles", "sizes", "shell", "diagonal")
BIG = ("pinwheel", "rods")


def definition(placement):
    # a: placement (a % 3), no region, bucket 16 (bits 3-4 = 3), no prune
    # delay; b: depth 8; c: looseness 2; e: no item capacity.
    a = next(a for a in range(3 << 3, 32) if a % 3 == placement and not a & 4)
    return bytes([a, 8 << 2, 3, 0])


def program(dim, placement, kind, rng):
    out = bytearray([dim - 2]) + definition(placement)
    n = 512 if kind in BIG else 160
    how = (rng.randrange(64) << 2) & 0x1C | (placement + dim) % 3  # small shift; one by one, built, reversed
    out += bytes([OP_PILE, KINDS.index(kind), n // 2 - 1, rng.randrange(256), how])
    for step in range(14):
        if step == 5:
            out += bytes([OP_TASKS, 2])
        if step == 10:
            out += bytes([OP_TASKS, 0])
        r = rng.random()
        if r < 0.3:
            out += bytes([OP_QUERY] + [rng.randrange(256) for _ in range(4 * dim + 1)])
        elif r < 0.55:
            out += bytes([OP_REMOVE, rng.randrange(256)])
        elif r < 0.75:
            out += bytes([OP_MOVE_NEAR, rng.randrange(256)]) + bytes(s8(rng.randrange(-3, 4)) for _ in range(dim))
        elif r < 0.9:
            out += bytes([OP_MOVE_FAR, rng.randrange(256)]) + box([(rng.randrange(-120, 120), 4) for _ in range(dim)])
        else:
            out += bytes([OP_INSERT]) + box([(rng.randrange(-120, 120), 6) for _ in range(dim)])
    return bytes(out)


def scene_box(dim, kind, i, n, rng):
    """Box i of n of a pile as (min, max) lists, in [0, 1000] (the speck's
    far box at 1e6), the shapes of fuzz_pile at the scale of a scene."""
    lo = [rng.uniform(0, 10) for _ in range(dim)]
    hi = [rng.uniform(990, 1000) for _ in range(dim)]
    if kind == "speck":
        x = [rng.uniform(0, 100) for _ in range(dim)]
        lo, hi = ([1e6] * dim, [1e6 + 1] * dim) if i == 0 else ([v * 1e-5 for v in x], [(v + 3) * 1e-5 for v in x])
    elif kind == "strips":
        lo[1:] = [(i >> 4 * (d - 1) & 15) * 60.0 for d in range(1, dim)]
        hi[1:] = [v + rng.randrange(5) * 0.5 for v in lo[1:]]
    elif kind == "binary":
        lo = [2.0 ** -rng.uniform(0, 60)] + [rng.uniform(0, 1) for _ in range(1, dim)]
        hi = list(lo)
    elif kind == "straddle":
        side = rng.uniform(0, 3)
        lo = [500 - side / 2] + [rng.uniform(0, 1000) for _ in range(1, dim)]
        hi = [500 + side / 2] + [v + 0.5 for v in lo[1:]]
    elif kind == "centre":
        a = rng.randrange(dim)
        for d in range(dim):
            ln = rng.uniform(20, 999) if d == a else 0.05
            lo[d] = 500 - ln * rng.uniform(0, 1)
            hi[d] = lo[d] + ln
    elif kind == "pinwheel":
        along, start, end, band = ((0, 0, 790, 810), (1, 210, 1000, 810), (0, 210, 1000, 0), (1, 0, 790, 0))[i % 4]
        step = 190.0 / ((n + 3) // 4)
        lo[along], hi[along] = start + rng.uniform(0, 10), end - rng.uniform(0, 10)
        lo[1 - along] = band + (i // 4) * step
        hi[1 - along] = lo[1 - along] + 0.4 * step
    elif kind == "rods":
        f, part = i % dim, ((0, 0, 0), (0, 0, 1), (1, 1, 0))
        for d in range(dim):
            if d != f:
                lo[d] = (600 if part[f][d] and dim == 3 else 0) + rng.uniform(0, 398)
                hi[d] = lo[d] + rng.uniform(0, 2)
        if dim == 2 and f == 1:  # apart from the first family on y
            lo[1] = rng.uniform(600, 700)
    elif kind == "plates":
        lo[-1] = i * 1000.0 / n
        hi[-1] = lo[-1] + rng.uniform(0, 0.9) * 1000.0 / n
    elif kind == "duplicates":  # every eighth a point on the corner
        lo, hi = [1.0] * dim, [1.0 if i % 8 == 7 else 2.0] * dim
    elif kind == "clusters":  # four normal blobs, sigma 10
        lo = [((i % 4) >> (d & 1) & 1) * 600.0 + 200.0 + rng.gauss(0, 10) for d in range(dim)]
        hi = [v + rng.uniform(0.01, 0.5) for v in lo]
    elif kind == "tiles":  # faces touching exactly, 8 a row
        cell = [(i >> 3 * d) & 7 for d in range(dim)]
        lo, hi = [c * 125.0 for c in cell], [(c + 1) * 125.0 for c in cell]
    elif kind == "sizes":  # sides from a power law
        side = min(0.5 / rng.uniform(5e-4, 1.0), 1000.0)
        lo = [rng.uniform(0, 1000) for _ in range(dim)]
        hi = [min(v + side, 1000.0) for v in lo]
    elif kind == "shell":  # a circle or sphere of radius 400
        v = [rng.gauss(0, 1) for _ in range(dim)]
        r = sum(x * x for x in v) ** 0.5
        lo = [500 + 400 * x / r for x in v]
        hi = [x + 0.1 for x in lo]
    else:  # a diagonal line
        t = rng.uniform(0, 1000)
        lo, hi = [t] * dim, [t + rng.uniform(0.01, 0.5)] * dim
    return lo, hi


def scene(dim, kind, rng):
    n = 512 if kind in BIG else 200
    lines = ["# a pile for the pair finders' sweeps: %s, %dD" % (kind, dim)]
    for i in range(n):
        lo, hi = scene_box(dim, kind, i, n, rng)
        lines.append(" ".join([str(i + 1)] + ["%.9g" % v for v in lo + hi]))
    return "\n".join(lines) + "\n"


def main():
    assert OP_PILE % OP_COUNT == 4 and OP_TASKS % OP_COUNT == 6
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "ops")
    names = ("loose", "tight", "leaves")
    for dim in (2, 3):
        for k, kind in enumerate(KINDS):
            places = range(3) if kind in BIG else ((k + dim) % 3,)
            for placement in places:
                rng = random.Random(1000 * dim + 10 * k + placement)
                with open(os.path.join(here, "pile-%s-%s-%dd" % (kind, names[placement], dim)), "wb") as f:
                    f.write(program(dim, placement, kind, rng))
            if kind != "centre":  # the scene reader's seeds: every pile but the one nearest searches probe
                with open(os.path.join(here, "..", "scene", "pile-%s-%dd" % (kind, dim)), "w") as f:
                    f.write(scene(dim, kind, random.Random(dim * 10 + k)))


if __name__ == "__main__":
    main()

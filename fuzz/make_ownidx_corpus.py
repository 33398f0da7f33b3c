#!/usr/bin/env python3
"""make_ownidx_corpus.py: write fuzz_ops inputs that pile boxes into one
node's own list (fuzz/corpus/ops/own-list-*), so the fuzzer starts from the
indexed path of src/tree_ownidx.h: tight straddlers of the centre line and
loose full-width strips, 2D and 3D, then removes, small and far moves and
queries among them, and removes down past the point where the index goes;
and leaves strips each removed and inserted again in row order, whose
copies fill leaves that must split for them to go capped. Also a few movers
among many resting boxes (fat-movers-*): one item moved a small step per
update, as in a big world where few things move, which is what the broad
phase's fat-box candidate lists serve (one mover in 32 or fewer), then a
jump out of its fat box, its neighbours stepping into it, and removes.

    python3 fuzz/make_ownidx_corpus.py
"""
import os
import random

# fuzz_ops.c reads an op byte as op % OP_COUNT; a near move steps by 1/16
# of its operands, or by whole units when the byte has bit 4 (16) set.
OP_INSERT, OP_REMOVE, OP_MOVE_NEAR, OP_MOVE_FAR, OP_QUERY, OP_COUNT = 0, 1, 2, 3, 8, 9
# The near-move byte with bit 4 set: 2 + 9k for the least k that sets it (20).
OP_MOVE_NEAR_UNITS = next(b for b in range(OP_MOVE_NEAR, 0xF0, OP_COUNT) if b & 16)


def s8(v):
    return v & 0xFF


def definition(placement):
    # a: placement (a % 3), use_region (bit 2), bucket 16 (bits 3-4 = 3),
    # no prune delay (bit 5); b: depth 8; c: looseness 2; e: region
    # [-17, 17] on every axis, no item capacity.
    a = next(a for a in range(4 | 3 << 3, 32) if a % 3 == placement)
    return bytes([a, 8 << 2, 3, 2 | 16])


def box(axes):
    """A box by read_box_by, scale 3 (coordinates v / 8): (v, size byte) per
    axis; size byte s: odd = zero size, else (s >> 1) * 0.5."""
    out = bytearray([3])
    for v, s in axes:
        out += bytes([s8(v), s])
    return bytes(out)


def program(dim, placement, kind, rng):
    out = bytearray([dim - 2]) + definition(placement)
    n = 88
    for i in range(n):
        row = -120 + (240 * i) // n
        if kind == "straddle":  # across x = 0, 0.5 to 1.5 wide
            first = (-4 - (i % 3) * 2, 4 + (i % 3) * 4)
        else:  # a strip from -15 to 15 along x
            first = (-120, 120)
        rest = [(row if d == 1 else rng.randrange(-120, 120), 1 + 2 * (i % 2)) for d in range(1, dim)]
        out += bytes([OP_INSERT]) + box([first] + rest)
    if kind == "leaves-strips":
        # Every strip removed and inserted again, in row order: the copies of
        # the re-inserted strips fill the big leaves they touch, whose splits
        # must count them as capped (else they pile up there).
        for i in range(n):
            out += bytes([OP_REMOVE, i, OP_INSERT]) + box(
                [(-120, 120)] + [(-120 + (240 * i) // n if d == 1 else rng.randrange(-120, 120), 1) for d in range(1, dim)])
        out += bytes([OP_QUERY] + [rng.randrange(256) for _ in range(4 * dim + 1)])
        return bytes(out)
    for step in range(160):
        r = rng.random()
        if r < 0.25:
            out += bytes([OP_QUERY] + [rng.randrange(256) for _ in range(4 * dim + 1)])
        elif r < 0.45:
            out += bytes([OP_REMOVE, rng.randrange(256)])
        elif r < 0.65:
            out += bytes([(OP_MOVE_NEAR, OP_MOVE_NEAR_UNITS)[rng.randrange(2)], rng.randrange(256)])
            out += bytes(s8(rng.randrange(-3, 4)) for _ in range(dim))
        elif r < 0.8:
            out += bytes([OP_MOVE_FAR, rng.randrange(256)]) + box(
                [(-4, 4)] + [(rng.randrange(-120, 120), 2) for _ in range(1, dim)])
        else:
            out += bytes([OP_INSERT]) + box(
                [(-120, 120) if kind == "strips" else (-3, 6)] + [(rng.randrange(-120, 120), 2) for _ in range(1, dim)])
    for _ in range(80):
        out += bytes([OP_REMOVE, rng.randrange(256)])
    out += bytes([OP_QUERY] + [rng.randrange(256) for _ in range(4 * dim + 1)])
    return bytes(out)


def movers(dim, placement, rng):
    """88 small resting boxes; then, one update per step, a mover walks in
    small steps (the same one for several steps: its candidate list is
    reused), sometimes jumps far (a new list), a neighbour steps into it,
    or an item goes."""
    out = bytearray([dim - 2]) + definition(placement)
    n = 88
    for i in range(n):
        out += bytes([OP_INSERT]) + box([(rng.randrange(-110, 110), 2 + 2 * (i % 3)) for _ in range(dim)])
    for walk in range(40):
        who = rng.randrange(n)
        step = [rng.randrange(-4, 5) for _ in range(dim)]
        for _ in range(rng.randrange(3, 9)):
            out += bytes([OP_MOVE_NEAR, who]) + bytes(s8(v) for v in step)
        r = rng.random()
        if r < 0.3:
            out += bytes([OP_MOVE_FAR, who]) + box([(rng.randrange(-110, 110), 2) for _ in range(dim)])
        elif r < 0.6:
            out += bytes([OP_MOVE_NEAR, (who + 1) % n]) + bytes(s8(-4 * v) for v in step)
        elif r < 0.7:
            out += bytes([OP_REMOVE, rng.randrange(256)])
        else:
            out += bytes([OP_QUERY] + [rng.randrange(256) for _ in range(4 * dim + 1)])
    return bytes(out)


def check_ops():
    """Each op byte the script writes decodes as the op it is named for."""
    for byte, op in ((OP_INSERT, OP_INSERT), (OP_REMOVE, OP_REMOVE), (OP_MOVE_NEAR, OP_MOVE_NEAR),
                     (OP_MOVE_NEAR_UNITS, OP_MOVE_NEAR), (OP_MOVE_FAR, OP_MOVE_FAR), (OP_QUERY, OP_QUERY)):
        assert byte % OP_COUNT == op and byte < 0xF0, (byte, op)
    assert OP_MOVE_NEAR_UNITS & 16


def main():
    check_ops()
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "ops")
    for dim in (2, 3):
        for placement, kind in ((1, "straddle"), (0, "strips"), (2, "leaves-strips")):
            rng = random.Random(dim * 10 + placement)
            name = "own-list-%s-%dd" % (kind, dim)
            with open(os.path.join(here, name), "wb") as f:
                f.write(program(dim, placement, kind, rng))
        for placement, kind in ((0, "loose"), (1, "tight"), (2, "leaves")):
            rng = random.Random(dim * 100 + placement)
            with open(os.path.join(here, "fat-movers-%s-%dd" % (kind, dim)), "wb") as f:
                f.write(movers(dim, placement, rng))


if __name__ == "__main__":
    main()

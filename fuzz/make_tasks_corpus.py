#!/usr/bin/env python3
"""make_tasks_corpus.py: write fuzz_ops inputs that run the tree on a task
context (fuzz/corpus/ops/tasks-*), so the fuzzer starts from the parallel
paths: a context switched on (a toy task system of the caller's, or the
built-in pool, two workers each), 160 items built in batches, then rounds of
many movers at once (the movers' queries in jobs, with removals and
re-inserts that reuse a slot in the same frame), every item moving (the
all-pairs pass; one by one or in one move_many batch), single moves, inserts, removes and queries, with the
context switched off, to the other kind and back on between them.

    python3 fuzz/make_tasks_corpus.py
"""
import os
import random

OP_INSERT, OP_REMOVE, OP_MOVE_NEAR, OP_BUILD, OP_QUERY = 0, 1, 2, 5, 8
OP_TASKS, OP_MOVE_SOME, OP_MOVE_ALL, OP_MOVE_BATCH = 0xF0, 0xF9, 0xF5, 0xFE  # the tick op's codes, and move-near's


def s8(v):
    return v & 0xFF


def definition(placement):
    # a: placement (a % 3), use_region (bit 2), bucket 4 (bits 3-4 = 2), no
    # prune delay (bit 5); b: depth 8; c: looseness 2; e: region [-17, 17].
    a = next(a for a in range(4 | 2 << 3, 32) if a % 3 == placement)
    return bytes([a, 8 << 2, 3, 2 | 16])


def box(rng, dim):
    """A box by read_box_by, scale 3 (coordinates v / 8), 0.5 to 2 wide."""
    out = bytearray([3])
    for _ in range(dim):
        out += bytes([s8(rng.randrange(-120, 120)), 2 * rng.randrange(1, 5)])
    return bytes(out)


def program(dim, placement, first, rng):
    out = bytearray([dim - 2]) + definition(placement)
    out += bytes([OP_TASKS, first])
    for n in (24, 24, 24, 24, 24, 24, 16):  # 160 items
        out += bytes([OP_BUILD, n - 1]) + b"".join(box(rng, dim) for _ in range(n))
    for rnd in range(10):
        # Under the quarter of the items that makes it all-pairs, at least the
        # 32 that make jobs: k = 5 moves 32 of 160; k = 7 with churn names
        # 35 (23 moved, 12 of them removed, re-inserted and moved again).
        how = 5 | 0x80 if rnd % 2 else 3
        out += bytes([OP_MOVE_SOME, how, rng.randrange(5), s8(rng.randrange(-6, 7))])
        out += bytes([OP_QUERY] + [rng.randrange(256) for _ in range(4 * dim + 1)])
        out += bytes([OP_MOVE_NEAR + 18 * rng.randrange(2), rng.randrange(256)])
        out += bytes(s8(rng.randrange(-3, 4)) for _ in range(dim))
        if rnd % 3 == 0:
            # every item, one by one or (odd rounds) in one move_many batch
            out += bytes([OP_MOVE_BATCH if rnd % 2 else OP_MOVE_ALL, s8(rng.randrange(-8, 9))])
        out += bytes([OP_REMOVE, rng.randrange(256), OP_INSERT]) + box(rng, dim)
        out += bytes([OP_TASKS, (first + rnd) % 3])  # off, toy, pool in turn
    return bytes(out)


def main():
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "ops")
    for dim in (2, 3):
        for placement, pname in ((0, "loose"), (1, "tight"), (2, "leaves")):
            for first, cname in ((1, "toy"), (2, "pool")):
                if (placement + first + dim) % 2:
                    continue  # half of the combinations: every placement, both kinds, both dimensions
                rng = random.Random(dim * 100 + placement * 10 + first)
                name = "tasks-%s-%dd-%s" % (cname, dim, pname)
                with open(os.path.join(here, name), "wb") as f:
                    f.write(program(dim, placement, first, rng))


if __name__ == "__main__":
    main()

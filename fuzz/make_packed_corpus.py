#!/usr/bin/env python3
"""make_packed_corpus.py: write the seed inputs of fuzz_packed into
fuzz/corpus/packed/ (seed-*), each a short program in fuzz_packed.c's input
format that exercises some operations. Crashes the fuzzer finds are added
there by hand, under their own names; this script only rewrites seed-* files.

    python3 fuzz/make_packed_corpus.py
"""
import os
import struct

OP_BUILD, OP_GENERATE, OP_REBUILD, OP_EMPTY, OP_QUERY, OP_DEF, OP_ARGS = range(7)

# def byte c: bit 0 use_region, bits 1-3 region kind, bits 4-5 both set: malloc
R_SCENE, R_TINY, R_FAR, R_HUGE, R_POINT, R_FLAT, R_DECODED, R_PAST_LIMIT = range(8)
# generate patterns
P_INTEGERS, P_TILES, P_PILES, P_POINTS, P_HUGE, P_FAR, P_SPLIT_LINES, P_NESTED = range(8)
# generate units (index)
U_1, U_EIGHTH, U_MILLI, U_1024, U_1E6, U_1E20, U_SUBNORMAL, U_3E28 = range(8)
# build `how` bits
STRIDED, POISON, FAIL = 4, 8, 16


def s8(v):
    return v & 0xFF


def box(dim, *axes, scale=0):
    """A box by read_box_by with a small-integer scale: (min, size byte) per axis.
    size byte s: odd = zero size, else (s >> 1) * 0.5."""
    out = [scale]
    for lo, s in axes[:dim]:
        out += [s8(lo), s]
    return out


def raw_box(dim, *axes):
    """A box with both ends as raw float bits (scale 7 | 7 << 3): coord_raw reads
    a byte it ignores, then the four bytes of the float, big-endian."""
    out = [0x3F]
    for lo, hi in axes[:dim]:
        out += [0] + list(struct.pack('>f', lo)) + [0] + [0] + list(struct.pack('>f', hi))
    return out


def palette_box(dim, lo_index, hi_index):
    """Both ends from the palette (scale 6 | 6 << 3): NaN, inf, -inf, 2e30, -2e30,
    1e30, -1e30, FLT_MAX, 1e20, -1e20, 0, -0, 1e-40, FLT_MIN, 1e6, -1e6."""
    out = [0x36]
    for _ in range(dim):
        out += [lo_index, 0, hi_index]
    return out


def definition(bucket_byte, depth_byte, c, region=()):
    return [bucket_byte, depth_byte, c] + list(region)


def build(how, boxes, extra=()):
    out = [OP_BUILD, how, len(boxes)]
    for b in boxes:
        out += b
    return out + list(extra)


def generate(pattern, param, count, seed=1, unit=U_1, how=0, doubled=False, extra=()):
    pat = pattern | param << 3 | (0x80 if doubled else 0)
    return [OP_GENERATE, how, pat, count, seed, unit] + list(extra)


def rebuild(mode, amount, how=0, extra=()):
    return [OP_REBUILD, how, mode, s8(amount)] + list(extra)


def query(dim, qbox, point=(0, 0), origin=(0, 0), dscale=0, dirs=(1, 0, 0), radius=8, max_t=0xF2, max_d=0xF2,
          k=5, fail=0, pcoords=(0, 0, 0), ocoords=(0, 0, 0)):
    """point/origin: (how, which); how % 3 == 0 reads dim coordinates by scale how >> 2."""
    out = [OP_QUERY] + qbox
    for (how, which), coords in ((point, pcoords), (origin, ocoords)):
        out += [how, which]
        if how % 3 == 0:
            out += [s8(c) for c in coords[:dim]]
    out += [dscale] + [s8(d) for d in dirs[:dim]]
    return out + [radius, max_t, max_d, k, fail]


def new_def(bucket_byte, depth_byte, c, region=(), fail=0):
    return [OP_DEF] + definition(bucket_byte, depth_byte, c, region) + [fail]


def seeds():
    s = {}
    for dim in (2, 3):
        d = dim - 2  # byte 0
        D = f'{dim}d'
        # Tiles sharing faces, bucket 1, deepest: find_pairs of neighbours, queries on faces.
        s[f'tiles-{D}'] = [d] + definition(0, 0x40, 0) + generate(P_TILES, 7, 64) + \
            query(dim, box(dim, (2, 0), (2, 0), (2, 0)), point=(1, 5), origin=(2, 9), dirs=(16, 0, 0), k=9) + \
            query(dim, box(dim, (0, 2), (0, 2), (0, 2)), point=(2, 3), origin=(1, 12), dirs=(0, 0, 16), max_t=4)
        # Piles of identical boxes beyond the largest bucket.
        s[f'piles-{D}'] = [d] + definition(7, 0x40, 0) + generate(P_PILES, 9, 100, doubled=True) + \
            generate(P_PILES, 0, 40, how=STRIDED | 0x60) + query(dim, box(dim, (0, 4), (0, 4), (0, 4)), k=70)
        # Far coordinates up to 1e30 and huge boxes, then the same scene with a region.
        s[f'far-{D}'] = [d] + definition(1, 3, 0) + generate(P_FAR, 0, 75, seed=7, doubled=True) + \
            new_def(3, 0x40, 1 | R_HUGE << 1) + rebuild(0, 0) + generate(P_HUGE, 2, 80, seed=3) + \
            query(dim, palette_box(dim, 6, 5), point=(2, 0), origin=(1, 3), dscale=6, dirs=(8, 9, 8), k=0xFF)
        # Bad boxes refused, the previous scene kept; then poison of every kind.
        poisons = []
        for kind in range(8):
            poisons += rebuild(0, 0, how=POISON, extra=(kind * 3, kind << 2 | kind % dim))
        s[f'bad-boxes-{D}'] = [d] + definition(2, 5, 0) + generate(P_INTEGERS, 3, 30) + \
            build(0, [box(dim, (1, 2), (1, 2), (1, 2)), palette_box(dim, 0, 1)]) + \
            build(0, [box(dim, (1, 2), (1, 2), (1, 2)), palette_box(dim, 3, 5)]) + \
            build(0, [raw_box(dim, (4.0, 2.0), (0.0, 1.0), (0.0, 1.0))]) + \
            build(0, [raw_box(dim, (-1e30, 1e30), (1e30, 1e30), (-1e30, -1e30))]) + poisons
        # Allocation refused at each point in turn, once and from then on.
        fails = []
        for at in range(6):
            fails += generate(P_INTEGERS, 5, 60 + 40 * at, seed=at, how=FAIL, extra=(at,))
            fails += rebuild(1, 100, how=FAIL, extra=(at | 8,))
        s[f'alloc-fail-{D}'] = [d] + definition(0, 0x40, 0) + fails + \
            query(dim, box(dim, (0, 8), (0, 8), (0, 8)), k=100, fail=1 | 0 << 1) + \
            new_def(4, 4, 0, fail=1)
        # Rebuilds larger, smaller, cut, edited, the same.
        s[f'rebuild-{D}'] = [d] + definition(2, 0x40, 0) + generate(P_INTEGERS, 1, 40) + \
            rebuild(1, 100) + rebuild(2, 64) + rebuild(1, -20) + \
            rebuild(3, 5, extra=(1, 0, *box(dim, (3, 4), (3, 4), (3, 4)), 2, 1, 3, 2, 4, 3, 1, 2, 3, 9, 6)) + \
            rebuild(0, 0) + rebuild(1, 30) + rebuild(1, 50)
        # Regions of every kind (one not holding the boxes, a point, flat, bad), the same scene.
        regions = []
        for kind in range(8):
            region = box(dim, (-3, 10), (-3, 10), (-3, 10)) if kind == R_DECODED else ()
            regions += new_def(5, 6, 1 | kind << 1, region) + rebuild(0, 0)
        s[f'regions-{D}'] = [d] + definition(5, 6, 0) + generate(P_INTEGERS, 2, 50) + regions
        # Bad definitions, create out of memory, malloc.
        bad = []
        for kind in range(8):
            bad += new_def(1, 0x80 | kind << 3, 0xC0)
        s[f'defs-{D}'] = [d] + definition(1, 0x80, 0xC0) + generate(P_POINTS, 2, 30) + bad + \
            new_def(1, 2, 0, fail=1) + new_def(1, 2, 0, fail=1 | 2 << 1) + new_def(0x7F, 0x40, 0x30) + \
            rebuild(0, 0) + [OP_ARGS]
        # Faces on split lines, depth the deepest.
        s[f'split-lines-{D}'] = [d] + definition(0, 0x40, 0) + generate(P_SPLIT_LINES, 0, 120, doubled=True) + \
            query(dim, box(dim, (0, 0), (0, 0), (0, 0), scale=4), point=(1, 1), origin=(1, 0), dirs=(1, 1, 1))
        # Nested and flat boxes; coinciding points; depth 1.
        s[f'nested-points-{D}'] = [d] + definition(0, 0, 0) + generate(P_NESTED, 4, 60) + \
            generate(P_POINTS, 0, 200, doubled=True) + query(dim, box(dim, (0, 1), (0, 1), (0, 1)), k=0xFF)
        # Piles the build cannot spread out, which find_pairs sweeps: a speck and a
        # far box, strips, binary scales, centre-line straddlers.
        piles = []
        for kind in range(4):
            piles += generate(P_NESTED, 8 + kind, 200, seed=kind + 1, doubled=True)
        s[f'swept-piles-{D}'] = [d] + definition(0, 0x40, 0) + piles + \
            query(dim, box(dim, (0, 1), (0, 1), (0, 1)), point=(1, 1), origin=(1, 0), dirs=(1, 1, 1))
        # Boxes that all hold the origin, thin on all axes but one: nearest from
        # inside them (all at distance 0, parted by ids alone) and from an end.
        s[f'centre-pile-{D}'] = [d] + definition(0, 0x40, 0) + generate(P_NESTED, 12, 250, seed=3, doubled=True) + \
            query(dim, box(dim, (0, 1), (0, 1), (0, 1)), point=(2, 7), origin=(1, 0), dirs=(1, 1, 1), k=10) + \
            query(dim, box(dim, (0, 1), (0, 1), (0, 1)), point=(1, 9), origin=(2, 3), dirs=(1, 0, 1), k=70)
        # A pinwheel of strips: a sweep along any axis meets a quarter of all pairs,
        # no pair meets as boxes (the packed build cuts it by count, bucket 64).
        s[f'pinwheel-{D}'] = [d] + definition(0x7F, 0, 0) + generate(P_NESTED, 15, 255, seed=9, doubled=True) + \
            query(dim, box(dim, (0, 1), (0, 1), (0, 1)), point=(1, 1), origin=(1, 0), dirs=(1, 1, 1))
        # Units from subnormal to past the limit.
        units = []
        for unit in range(8):
            units += generate(P_INTEGERS, 4, 50, seed=unit, unit=unit | 1 << 3, extra=box(dim, (1, 2), (1, 2), (1, 2)))
        s[f'units-{D}'] = [d] + definition(3, 0x40, 0) + units
        # Queries with every special operand: bad ones, max_t 0, rays along faces, k 0 and past 64.
        qs = []
        for special in range(16):
            qs += query(dim, palette_box(dim, special, special), point=(0, 0), origin=(1, special),
                        dscale=0x08, dirs=(special * 3, 0, 16), radius=0xF0 | special,
                        max_t=0xF0 | (special + 3) % 16, max_d=0xF0 | (special + 7) % 16, k=special * 7)
        s[f'queries-{D}'] = [d] + definition(2, 0x40, 0) + generate(P_INTEGERS, 0, 40) + qs + \
            query(dim, box(dim, (0, 0), (0, 0), (0, 0)), point=(6 << 2, 0), origin=(5 << 2 | 1, 0),
                  pcoords=(0, 1, 2), ocoords=(0x7F, 0, -1))
        # nearest_batch: duplicates and coinciding points, k from 1 past 64 and past
        # the count, max_distance 0, small and none, its one allocation refused.
        batch = []
        for i, (k, max_d) in enumerate(((1, 0xF0), (8, 0xF2), (64, 4), (65, 0xF2), (200, 1), (3, 0xF3))):
            batch += query(dim, box(dim, (i, 2), (0, 2), (1, 2)), point=(1 + i % 2, i * 5), origin=(2, i),
                           max_d=max_d, k=k, fail=1 if i % 3 == 2 else 0)
        s[f'batch-{D}'] = [d] + definition(1, 0x40, 0) + generate(P_PILES, 3, 90, doubled=True) + batch + \
            generate(P_POINTS, 0, 120) + batch[:len(batch) // 2] + [OP_EMPTY, 0] + batch[:len(batch) // 3]
        # Empty builds (NULL and strided), bad arguments on empty and full trees.
        s[f'empty-args-{D}'] = [d] + definition(0x50, 0x45, 0) + [OP_ARGS] + [OP_EMPTY, 1] + \
            generate(P_INTEGERS, 1, 20) + [OP_ARGS] + [OP_EMPTY, STRIDED | 1] + [OP_EMPTY, 0] + \
            build(STRIDED | 0x20, [box(dim, (0, 2), (0, 2), (0, 2)), box(dim, (1, 2), (1, 2), (1, 2))])
    return s


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = os.path.join(here, 'corpus', 'packed')
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(out):
        if name.startswith('seed-'):
            os.remove(os.path.join(out, name))
    for name, data in sorted(seeds().items()):
        with open(os.path.join(out, 'seed-' + name), 'wb') as f:
            f.write(bytes(v & 0xFF for v in data))
    print(f'{len(seeds())} seeds in {out}')


if __name__ == '__main__':
    main()

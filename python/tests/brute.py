"""numpy brute force: every answer of orthant.Index computed the slow, obvious way."""
import numpy as np


def overlap_matrix(a, b):
    """m[i, j]: box a[i] overlaps box b[j] (closed boxes), in the arrays' own precision."""
    d = a.shape[1] // 2
    m = np.ones((len(a), len(b)), dtype=bool)
    for ax in range(d):
        m &= a[:, None, ax] <= b[None, :, d + ax]
        m &= b[None, :, ax] <= a[:, None, d + ax]
    return m


def pairs(boxes):
    m = overlap_matrix(boxes, boxes)
    i, j = np.nonzero(np.triu(m, 1))
    return np.stack([i, j], axis=1).astype(np.int64).reshape(-1, 2)


def query_boxes(tree, q):
    qi, ti = np.nonzero(overlap_matrix(q, tree))
    return qi.astype(np.int64), ti.astype(np.int64)


def distances(boxes, points):
    """(m, n) distance from each point to each box, in float64, summed axis by axis."""
    b = boxes.astype(np.float64)
    p = points.astype(np.float64)
    d = b.shape[1] // 2
    s = np.zeros((len(p), len(b)))
    for ax in range(d):
        g = np.maximum(b[None, :, ax] - p[:, None, ax], p[:, None, ax] - b[None, :, d + ax])
        g = np.maximum(g, 0.0)
        s = s + g * g
    return np.sqrt(s)


def nearest(boxes, points, k, max_distance=np.inf, exclude=None):
    dist = distances(boxes, points)
    m, n = dist.shape
    out_d = np.full((m, k), np.inf)
    out_i = np.full((m, k), -1, dtype=np.int64)
    for r in range(m):
        row = dist[r]
        ok = row <= max_distance
        if exclude is not None and exclude[r] >= 0:
            ok[exclude[r]] = False
        ids = np.nonzero(ok)[0]
        order = np.lexsort((ids, row[ids]))[:k]
        out_d[r, : len(order)] = row[ids[order]]
        out_i[r, : len(order)] = ids[order]
    return out_d, out_i


def outward32(boxes):
    """The float32 boxes the C library stores for float64 input: min down, max up."""
    d = boxes.shape[1] // 2
    f = boxes.astype(np.float32)
    lo, hi = f[:, :d], f[:, d:]
    lo = np.where(lo.astype(np.float64) > boxes[:, :d], np.nextafter(lo, np.float32(-np.inf)), lo)
    hi = np.where(hi.astype(np.float64) < boxes[:, d:], np.nextafter(hi, np.float32(np.inf)), hi)
    return np.hstack([lo, hi]).astype(np.float32)


def rays(boxes32, origins, dirs, max_t):
    """The library's slab rule in float32 (docs/QUERIES.md): (ri, ti, t) sorted by ri, t, ti."""
    d = boxes32.shape[1] // 2
    o = origins.astype(np.float32)
    v = dirs.astype(np.float32)
    out = []
    with np.errstate(divide="ignore", invalid="ignore"):
        for r in range(len(o)):
            t0 = np.zeros(len(boxes32), dtype=np.float32)
            t1 = np.full(len(boxes32), np.float32(max_t[r]), dtype=np.float32)
            hit = np.ones(len(boxes32), dtype=bool)
            for ax in range(d):
                lo, hi = boxes32[:, ax], boxes32[:, d + ax]
                if v[r, ax] == 0:
                    hit &= (lo <= o[r, ax]) & (o[r, ax] <= hi)
                    continue
                a = (lo - o[r, ax]) / v[r, ax]
                c = (hi - o[r, ax]) / v[r, ax]
                t0 = np.maximum(t0, np.minimum(a, c))
                t1 = np.minimum(t1, np.maximum(a, c))
            hit &= t0 <= t1
            for j in np.nonzero(hit)[0]:
                out.append((r, float(t0[j]), j))
    out.sort()
    ri = np.array([x[0] for x in out], dtype=np.int64)
    t = np.array([x[1] for x in out], dtype=np.float64)
    ti = np.array([x[2] for x in out], dtype=np.int64)
    return ri, ti, t

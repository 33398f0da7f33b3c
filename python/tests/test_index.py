"""orthant.Index against numpy brute force, 2D and 3D, on adversarial rows."""
import numpy as np
import pytest

import orthant
from brute import nearest, outward32, overlap_matrix, pairs, query_boxes, rays


def scene(rng, n, dim, dtype=np.float64):
    """n boxes: ordinary ones, specks, points, repeated rows, touching and
    near-touching neighbours (1e-12 apart: one float32 value, two float64 ones),
    and a few far away."""
    lo = rng.uniform(-50, 50, (n, dim))
    size = rng.uniform(0, 8, (n, dim))
    kind = rng.integers(0, 8, n)
    size[kind == 1] = 1e-7  # specks
    size[kind == 2] = 0.0  # points
    b = np.hstack([lo, lo + size])
    for i in np.nonzero(kind == 3)[0]:  # a repeat of an earlier row
        b[i] = b[rng.integers(0, i + 1)]
    for i in np.nonzero(kind == 4)[0]:  # touching the previous row's max face on axis 0
        if i:
            b[i, 0] = b[i - 1, dim]
            b[i, dim] = max(b[i, dim], b[i, 0])
    for i in np.nonzero(kind == 5)[0]:  # a hair past the previous row's max face
        if i:
            b[i, 0] = b[i - 1, dim] + 1e-12
            b[i, dim] = max(b[i, dim], b[i, 0])
    far = kind == 6
    b[far] *= rng.choice([1e3, 1e6, 1e20], size=(far.sum(), 1))
    b[far & (rng.random(n) < 0.5)] -= 1e7
    return b.astype(dtype)


DIMS = [2, 3]
DTYPES = [np.float64, np.float32]


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("seed", range(4))
def test_pairs(dim, dtype, seed):
    rng = np.random.default_rng(seed)
    b = scene(rng, 300, dim, dtype)
    idx = orthant.Index(b)
    want = pairs(b)
    assert len(want) > 0
    got = idx.pairs()
    assert got.dtype == np.int64 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(idx.pairs(workers=2), want)
    np.testing.assert_array_equal(idx.pairs(workers=-1), want)
    for chunk in (1, 7, 1000):
        parts = list(idx.iter_pairs(max_pairs=chunk))
        assert all(1 <= len(p) <= chunk for p in parts)
        np.testing.assert_array_equal(np.concatenate(parts) if parts else np.empty((0, 2), np.int64), want)


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("seed", range(4))
def test_query_boxes(dim, dtype, seed):
    rng = np.random.default_rng(100 + seed)
    b = scene(rng, 300, dim, dtype)
    q = np.vstack([scene(rng, 100, dim, dtype), b[:50]])  # rows of the tree itself touch exactly
    idx = orthant.Index(b)
    wq, wt = query_boxes(b, q)
    assert len(wq) > len(q) // 2
    for workers in (1, 2, 3, -1):
        qi, ti = idx.query_boxes(q, workers=workers)
        np.testing.assert_array_equal(qi, wq)
        np.testing.assert_array_equal(ti, wt)
    for r in range(0, len(q), 17):
        np.testing.assert_array_equal(idx.query(q[r]), wt[wq == r])


def test_float64_refined_exactly():
    # 0.1 and 0.1 + 1e-12 are one float32 value; the float tree sees these two
    # boxes touch, the caller's float64 boxes do not. Touching in float64 counts.
    b = np.array([[0, 0, 0.1, 1], [0.1 + 1e-12, 0, 0.2, 1], [0.2, 0, 0.3, 1]])
    idx = orthant.Index(b)
    assert idx.pairs().tolist() == [[1, 2]]
    assert idx.query([0.1, 0.5, 0.1, 0.5]).tolist() == [0]
    d, i = idx.nearest([[0.1 + 5e-13, 0.5]], k=3)
    assert i.tolist() == [[0, 1, 2]]
    assert d[0, 0] == pytest.approx(5e-13, rel=1e-3) and d[0, 1] == pytest.approx(5e-13, rel=1e-3)


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k", [1, 3, 8])
def test_nearest(dim, dtype, k):
    rng = np.random.default_rng(7 * k + dim)
    b = scene(rng, 250, dim, dtype)
    p = np.vstack([rng.uniform(-60, 60, (120, dim)), b[:30, :dim], b[:30, dim:]]).astype(dtype)
    idx = orthant.Index(b)
    wd, wi = nearest(b, p, k)
    for workers in (1, 2):
        d, i = idx.nearest(p, k=k, workers=workers)
        assert d.shape == (len(p), k) and i.dtype == np.int64 and d.dtype == np.float64
        np.testing.assert_array_equal(i, wi)
        np.testing.assert_array_equal(d, wd)
    # max_distance (inclusive), alone and with exclude
    md = float(np.median(wd[:, 0])) + 0.5
    wd, wi = nearest(b, p, k, max_distance=md)
    d, i = idx.nearest(p, k=k, max_distance=md)
    np.testing.assert_array_equal(i, wi)
    np.testing.assert_array_equal(d, wd)
    ex = np.where(np.arange(len(p)) % 2 == 0, wi[:, 0], -1)
    wd, wi = nearest(b, p, k, max_distance=md, exclude=ex)
    d, i = idx.nearest(p, k=k, max_distance=md, exclude=ex)
    np.testing.assert_array_equal(i, wi)
    np.testing.assert_array_equal(d, wd)
    assert (i == -1).any() and np.isinf(d[i == -1]).all()


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_nearest_many_points_self_excluded(dim, dtype):
    """Points as the index and as the queries, more than one batch of them,
    each leaving itself out: repeated points (a tie at 0 with another index),
    points 1e-12 apart, and queries in an order that jumps about."""
    rng = np.random.default_rng(31 + dim)
    pts = rng.uniform(0, 40, (2600, dim))
    pts[100:200] = pts[0:100]  # duplicates
    pts[200:300] = pts[0:100] + 1e-12
    pts = pts.astype(dtype)
    b = np.hstack([pts, pts])
    idx = orthant.Index(b)
    q = pts[rng.permutation(len(pts))[:2300]]
    own = np.array([np.nonzero((pts == r).all(axis=1))[0][0] for r in q], dtype=np.int64)
    for k in (1, 4):
        wd, wi = nearest(b, q, k, exclude=own)
        for workers in (1, 2):
            d, i = idx.nearest(q, k=k, exclude=own, workers=workers)
            np.testing.assert_array_equal(i, wi)
            np.testing.assert_array_equal(d, wd)


def test_nearest_more_than_there_are():
    b = np.array([[0, 0, 1, 1], [2, 2, 3, 3]], dtype=np.float64)
    d, i = orthant.Index(b).nearest([[0.5, 0.5], [10, 10]], k=4)
    assert i.tolist() == [[0, 1, -1, -1], [1, 0, -1, -1]]
    assert d[0, 0] == 0 and np.isinf(d[:, 2:]).all()
    d, i = orthant.Index(np.empty((0, 4))).nearest([[0, 0]], k=2)
    assert i.tolist() == [[-1, -1]]


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_ray(dim, dtype):
    rng = np.random.default_rng(40 + dim)
    b = scene(rng, 200, dim, dtype)
    o = rng.uniform(-60, 60, (150, dim)).astype(dtype)
    v = rng.normal(size=(150, dim)).astype(dtype)
    v[:10, 0] = 0  # axis-parallel rays
    mt = np.where(np.arange(150) % 3 == 0, np.inf, rng.uniform(0, 40, 150))
    idx = orthant.Index(b)
    stored = b.astype(np.float32) if dtype == np.float32 else outward32(b)
    wr, wt, wtt = rays(stored, o, v, mt)
    assert len(wr) >= 10
    for workers in (1, 2):
        ri, ti, t = idx.ray(o, v, max_t=mt, workers=workers)
        np.testing.assert_array_equal(ri, wr)
        np.testing.assert_array_equal(ti, wt)
        np.testing.assert_array_equal(t, wtt)


def test_closed_boxes_touch():
    b = np.array([[0, 0, 1, 1], [1, 0, 2, 1], [2, 1, 3, 2], [5, 5, 5, 5], [5, 5, 5, 5]], dtype=np.float32)
    idx = orthant.Index(b)
    assert idx.pairs().tolist() == [[0, 1], [1, 2], [3, 4]]
    assert idx.query([5, 5, 5, 5]).tolist() == [3, 4]


@pytest.mark.parametrize(
    "row, message",
    [
        ([np.nan, 0, 1, 1], "row 2: NaN or infinite"),
        ([0, np.inf, 1, 1], "row 2: NaN or infinite"),
        ([2, 0, 1, 1], "row 2: min > max on axis 0"),
        ([0, 2, 1, 1], "row 2: min > max on axis 1"),
        ([0, 0, 2e30, 1], "row 2: coordinate beyond 1e30"),
    ],
)
def test_bad_rows_name_the_row(row, message):
    b = np.array([[0, 0, 1, 1], [1, 1, 2, 2], row], dtype=np.float64)
    with pytest.raises(ValueError, match=message):
        orthant.Index(b)
    idx = orthant.Index(b[:2])
    with pytest.raises(ValueError, match=message):
        idx.query_boxes(b)
    assert idx.pairs().tolist() == [[0, 1]]  # nothing lost


@pytest.mark.parametrize("shape", [(5,), (5, 3), (5, 5), (2, 5, 4)])
def test_wrong_shapes(shape):
    with pytest.raises(ValueError, match="shape"):
        orthant.Index(np.zeros(shape))
    idx = orthant.Index(np.zeros((2, 4)))
    with pytest.raises(ValueError):
        idx.query_boxes(np.zeros((3, 6)))
    with pytest.raises(ValueError):
        idx.nearest(np.zeros((3, 3)))
    with pytest.raises(ValueError):
        idx.query([0, 0, 1])


def test_bad_points_and_arguments():
    idx = orthant.Index(np.array([[0, 0, 1, 1]], dtype=np.float64))
    with pytest.raises(ValueError, match="row 1"):
        idx.nearest([[0, 0], [np.nan, 0]])
    with pytest.raises(ValueError, match="k must be"):
        idx.nearest([[0, 0]], k=0)
    with pytest.raises(ValueError, match="workers"):
        idx.pairs(workers=0)
    with pytest.raises(ValueError, match="row 0"):
        idx.ray([[0, 0]], [[np.inf, 0]])
    with pytest.raises(ValueError, match="max_t"):
        idx.ray([[0, 0]], [[1, 0]], max_t=-1)


def test_input_kinds_and_no_copy_semantics():
    ints = [[0, 0, 2, 2], [1, 1, 3, 3]]
    idx = orthant.Index(ints)  # lists of ints: converted to float64
    assert idx.dtype == np.float64 and len(idx) == 2
    f = np.asfortranarray(np.array(ints, dtype=np.float32))
    assert orthant.Index(f).pairs().tolist() == [[0, 1]]
    b = np.array(ints, dtype=np.float32)
    idx = orthant.Index(b)
    b[:] = 100  # the index keeps its own copy
    assert idx.pairs().tolist() == [[0, 1]]
    assert idx.nbytes > 0 and "2 boxes" in repr(idx)


def test_help_is_useful():
    doc = orthant.__doc__
    for word in ("Index", "DynamicIndex", "pairs", "nearest", "workers", "float64"):
        assert word in doc
    for m in ("query", "query_boxes", "pairs", "iter_pairs", "nearest", "ray"):
        assert len(getattr(orthant.Index, m).__doc__) > 40

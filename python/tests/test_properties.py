"""Property tests (hypothesis): any boxes, any queries, answers equal brute force."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import orthant
from brute import nearest, pairs, query_boxes

# Coordinates from a small grid (many exact touches and repeated boxes) mixed with
# arbitrary floats, including tiny and large ones.
coord = st.one_of(
    st.integers(-4, 4).map(float),
    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
    st.floats(-1e-30, 1e-30, allow_nan=False),
)


def box_arrays(dim, max_rows=60):
    def fix(a):
        # Order each row's min and max so every row is a valid box.
        lo = np.minimum(a[:, :dim], a[:, dim:])
        hi = np.maximum(a[:, :dim], a[:, dim:])
        return np.hstack([lo, hi])

    return st.integers(0, max_rows).flatmap(lambda n: arrays(np.float64, (n, 2 * dim), elements=coord).map(fix))


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([2, 3]).flatmap(lambda d: st.tuples(box_arrays(d), box_arrays(d, 20))), st.booleans())
def test_pairs_and_queries(bq, as32):
    b, q = bq
    if as32:
        b, q = b.astype(np.float32), q.astype(np.float32)
    idx = orthant.Index(b)
    np.testing.assert_array_equal(idx.pairs(), pairs(b))
    np.testing.assert_array_equal(idx.pairs(workers=2), pairs(b))
    got = list(idx.iter_pairs(max_pairs=3))
    np.testing.assert_array_equal(np.concatenate(got) if got else np.empty((0, 2), np.int64), pairs(b))
    wq, wt = query_boxes(b, q)
    qi, ti = idx.query_boxes(q, workers=2)
    np.testing.assert_array_equal(qi, wq)
    np.testing.assert_array_equal(ti, wt)


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from([2, 3]).flatmap(
        lambda d: st.tuples(box_arrays(d), arrays(np.float64, st.tuples(st.integers(1, 10), st.just(d)), elements=coord))
    ),
    st.integers(1, 6),
    st.booleans(),
)
def test_nearest(bp, k, as32):
    b, p = bp
    if as32:
        b, p = b.astype(np.float32), p.astype(np.float32)
    wd, wi = nearest(b, p, k)
    d, i = orthant.Index(b).nearest(p, k=k)
    np.testing.assert_array_equal(i, wi)
    np.testing.assert_array_equal(d, wd)

"""orthant.DynamicIndex against a dict of boxes and numpy brute force."""
import numpy as np
import pytest

import orthant
from brute import outward32, overlap_matrix


def brute_pairs(live):
    """Sorted (a, b) handle pairs, a < b, of the stored (float32) boxes."""
    hs = np.array(sorted(live), dtype=np.uint64)
    if len(hs) == 0:
        return np.empty((0, 2), np.uint64)
    boxes = np.array([live[int(h)] for h in hs], dtype=np.float32)
    i, j = np.nonzero(np.triu(overlap_matrix(boxes, boxes), 1))
    return np.stack([hs[i], hs[j]], axis=1).reshape(-1, 2)


def as_set(p):
    return {(int(a), int(b)) for a, b in p}


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("placement", ["loose", "tight", "leaves"])
def test_random_ops_against_brute_force(dim, placement):
    rng = np.random.default_rng(dim * 10 + len(placement))
    t = orthant.DynamicIndex(dim=dim, placement=placement)
    live = {}  # handle -> stored float32 box

    def rand_boxes(m):
        lo = rng.uniform(0, 60, (m, dim))
        return np.hstack([lo, lo + rng.uniform(0, 6, (m, dim))])

    b = rand_boxes(80)
    for h, row in zip(t.insert_many(b), outward32(b)):
        live[int(h)] = row
    began, ended = t.update_pairs()
    assert len(ended) == 0
    current = as_set(began)
    assert current == as_set(brute_pairs(live))
    for step in range(300):
        op = rng.integers(0, 4)
        if op == 0 or not live:
            box = rand_boxes(1)[0]
            h = t.insert(box)
            assert h not in live
            live[h] = outward32(box[None])[0]
        elif op == 1:
            h = int(rng.choice(list(live)))
            t.remove(h)
            del live[h]
            assert h not in t
        else:
            h = int(rng.choice(list(live)))
            box = rand_boxes(1)[0]
            t.move(h, box)
            live[h] = outward32(box[None])[0]
            assert np.array_equal(np.array(t.box(h), dtype=np.float32), live[h])
        if step % 10 == 0:
            began, ended = t.update_pairs()
            want = as_set(brute_pairs(live))
            assert as_set(ended) <= current and not (as_set(began) & (current - as_set(ended)))
            current = (current - as_set(ended)) | as_set(began)
            assert current == want
            np.testing.assert_array_equal(t.pairs(), brute_pairs(live))
            q = rand_boxes(1)[0]
            hs = np.array(sorted(live), dtype=np.uint64)
            stored = np.array([live[int(h)] for h in hs], dtype=np.float32).reshape(-1, 2 * dim)
            hit = overlap_matrix(outward32(q[None]), stored)[0]
            np.testing.assert_array_equal(t.query(q), hs[hit])
    assert len(t) == len(live)


def test_stale_handle_raises():
    t = orthant.DynamicIndex()
    h = t.insert([0, 0, 1, 1])
    t.remove(h)
    for call in (lambda: t.remove(h), lambda: t.move(h, [0, 0, 1, 1]), lambda: t.box(h)):
        with pytest.raises(orthant.StaleHandleError):
            call()
    with pytest.raises(KeyError):  # StaleHandleError is a KeyError
        t.remove(h)
    h2 = t.insert([0, 0, 1, 1])  # may reuse the slot: the old handle stays stale
    assert h2 != h and h2 in t and h not in t
    other = orthant.DynamicIndex()
    with pytest.raises(orthant.StaleHandleError):
        other.remove(h2)


def test_bad_input_raises_and_keeps_everything():
    t = orthant.DynamicIndex(dim=3)
    hs = t.insert_many(np.array([[0, 0, 0, 1, 1, 1], [1, 1, 1, 2, 2, 2]], dtype=np.float32))
    bad = np.array([[0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 1], [0, 0, 0, 1, np.nan, 1]])
    with pytest.raises(ValueError, match="row 2: NaN"):
        t.insert_many(bad)
    with pytest.raises(ValueError, match="min > max on axis 2"):
        t.move(int(hs[0]), [0, 0, 3, 1, 1, 1])
    with pytest.raises(ValueError, match="shape"):
        t.insert_many(np.zeros((2, 4)))
    with pytest.raises(ValueError):
        orthant.DynamicIndex(dim=4)
    with pytest.raises(ValueError):
        orthant.DynamicIndex(placement="packed")
    assert len(t) == 2
    assert t.pairs().tolist() == [sorted(int(h) for h in hs)]

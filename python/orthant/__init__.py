"""orthant: a quadtree/octree spatial index with a numpy batch API.

Boxes are rows of an (n, 4) array ``[minx, miny, maxx, maxy]`` (2D) or an
(n, 6) array ``[minx, miny, minz, maxx, maxy, maxz]`` (3D). Boxes are closed:
boxes that touch overlap, and a box with min == max is a point.

Index(boxes)
    A static index (the C library's packed tree) built once from an array.
    Items are named by their row. Batch calls take ``workers=`` (scipy's
    convention: -1 is every core) and give identical results for any value.

    .query(box)              rows overlapping one box, sorted
    .query_boxes(q)          (qi, ti) for many boxes, sorted by qi then ti
    .pairs()                 (K, 2) overlapping rows i < j, sorted
    .iter_pairs(max_pairs)   the same pairs in chunks, in bounded memory
    .nearest(points, k)      (dist, idx) of shape (m, k), like cKDTree.query
    .ray(origins, dirs)      (ri, ti, t): every box each segment enters

DynamicIndex(dim=2, placement="loose")
    The dynamic tree: insert, insert_many, move, remove by handle; query,
    pairs, and update_pairs (the pairs that began and ended since last time).

Precision: the C library stores float32. Index keeps the caller's
coordinates too, so its box tests and distances are exact in the input's
own precision (float64 input is rounded outward into the tree, which then
finds a superset that is tested again in double). Rays and DynamicIndex
answer on the stored float32 boxes (float64 input rounded outward, so no
overlap is lost). Bad input (NaN, infinity, min > max, |x| > 1e30, a wrong
shape) raises ValueError naming the row; nothing is stored then.
"""
from __future__ import annotations

import os
from typing import Iterator, Optional, Tuple

import numpy as np

from . import _ext
from ._ext import StaleHandleError

__all__ = ["Index", "DynamicIndex", "StaleHandleError", "__version__"]
__version__ = "0.1.0"


def _workers(workers: int) -> int:
    if workers == -1:
        return os.cpu_count() or 1
    if not isinstance(workers, (int, np.integer)) or workers < 1:
        raise ValueError(f"workers must be a positive int or -1, not {workers!r}")
    return int(workers)


def _rows(a, cols, name: str, dims=(2, 3)) -> np.ndarray:
    """a as a C-contiguous float32/float64 2D array with `cols` columns.

    float32 and float64 arrays that are C-contiguous pass through untouched
    (no copy); other dtypes are converted to float64.
    """
    a = np.asarray(a)
    if a.dtype != np.float32 and a.dtype != np.float64:
        if a.dtype.kind not in "biuf":
            raise ValueError(f"{name}: expected numbers, got dtype {a.dtype}")
        a = a.astype(np.float64)
    if a.ndim != 2 or a.shape[1] not in cols:
        want = " or ".join(f"(n, {c})" for c in cols)
        raise ValueError(f"{name}: expected shape {want}, got {a.shape}")
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    return a


def _one_box(box, dim: int) -> np.ndarray:
    b = np.asarray(box)
    if b.ndim != 1 or b.shape[0] != 2 * dim:
        raise ValueError(f"box: expected {2 * dim} numbers, got shape {b.shape}")
    return _rows(b.reshape(1, -1), (2 * dim,), "box")


class Index:
    """A static spatial index over an (n, 4) or (n, 6) array of boxes.

    Built once (the packed quadtree/octree of the C library, O(n) radix sort);
    items are named by their row index. The index keeps a copy of the boxes
    for exact tests, so changing the array afterwards does not change it.

    >>> import numpy as np, orthant
    >>> idx = orthant.Index(np.array([[0, 0, 1, 1], [1, 1, 2, 2], [5, 5, 6, 6]], float))
    >>> idx.pairs().tolist()          # touching boxes overlap
    [[0, 1]]
    >>> idx.query([0.5, 0.5, 5.5, 5.5]).tolist()
    [0, 1, 2]
    """

    __slots__ = ("_t", "dim", "dtype")

    def __init__(self, boxes) -> None:
        a = _rows(boxes, (4, 6), "boxes")
        self.dim: int = a.shape[1] // 2
        self.dtype = a.dtype
        self._t = _ext._Packed(a, self.dim)

    def __len__(self) -> int:
        return len(self._t)

    def __repr__(self) -> str:
        return f"orthant.Index({len(self)} boxes, {self.dim}D, {self.dtype})"

    @property
    def nbytes(self) -> int:
        """Bytes held: the tree and the kept copy of the boxes."""
        return self._t.nbytes()

    def query(self, box) -> np.ndarray:
        """Rows whose boxes overlap `box` (2*dim numbers), as a sorted int64 array."""
        return self._t.query_boxes(_one_box(box, self.dim), 1)[1]

    def query_boxes(self, boxes, workers: int = 1) -> Tuple[np.ndarray, np.ndarray]:
        """Every (query row, tree row) pair that overlaps.

        Returns (qi, ti), two int64 arrays of equal length, sorted by qi then
        ti (as shapely 2's STRtree.query on an array).
        """
        q = _rows(boxes, (2 * self.dim,), "boxes")
        return self._t.query_boxes(q, _workers(workers))

    def pairs(self, workers: int = 1) -> np.ndarray:
        """Every pair of overlapping rows as a (K, 2) int64 array, i < j, sorted."""
        return self._t.pairs(_workers(workers))

    def iter_pairs(self, max_pairs: int = 1 << 20) -> Iterator[np.ndarray]:
        """The rows of pairs() in order, in chunks of at most max_pairs rows.

        Memory stays bounded by max_pairs (and the hits of one box), however
        many pairs there are: the pairs are made row by row, as they are read.
        """
        if max_pairs < 1:
            raise ValueError("max_pairs must be >= 1")
        row, skip, n = 0, 0, len(self)
        while row < n:
            chunk, row, skip = self._t.pairs_page(row, skip, int(max_pairs))
            if len(chunk):
                yield chunk

    def nearest(
        self,
        points,
        k: int = 1,
        max_distance: float = np.inf,
        exclude=None,
        workers: int = 1,
    ) -> Tuple[np.ndarray, np.ndarray]:
        """The k boxes nearest each point, like scipy's cKDTree.query.

        The distance is from the point to the box (0 inside). Returns (dist,
        idx), float64 and int64 arrays of shape (m, k), nearest first, equal
        distances by lower row; missing neighbours (fewer than k boxes within
        max_distance, which is inclusive) are inf and -1. exclude: one row per
        point to leave out (-1 for none), e.g. np.arange(n) for self-matches.
        """
        p = _rows(points, (self.dim,), "points")
        k = int(k)
        if k < 1:
            raise ValueError("k must be >= 1")
        ex = None
        if exclude is not None:
            ex = np.ascontiguousarray(exclude, dtype=np.int64)
            if ex.shape != (p.shape[0],):
                raise ValueError(f"exclude: expected shape ({p.shape[0]},), got {ex.shape}")
        return self._t.nearest(p, k, float(max_distance), ex, _workers(workers))

    def ray(self, origins, dirs, max_t=np.inf, workers: int = 1) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every box each segment origin + t * dir, 0 <= t <= max_t, enters.

        Returns (ri, ti, t): ray row, box row and the t where the segment
        enters the box (0 when it starts inside), sorted by ri, then t, then
        ti. Computed by the C library in float32 on the stored boxes.
        max_t: a number or one per ray.
        """
        o = _rows(origins, (self.dim,), "origins")
        d = _rows(dirs, (self.dim,), "dirs")
        if o.shape != d.shape:
            raise ValueError(f"origins and dirs: shapes differ, {o.shape} and {d.shape}")
        if o.dtype != d.dtype:
            o, d = o.astype(np.float64), d.astype(np.float64)
        mt = np.ascontiguousarray(np.broadcast_to(np.asarray(max_t, dtype=np.float64), (o.shape[0],)))
        return self._t.ray(o, d, mt, _workers(workers))


_PLACEMENTS = ("loose", "tight", "leaves")


class DynamicIndex:
    """A dynamic quadtree (dim=2) or octree (dim=3) of boxes named by handles.

    Handles are ints (uint64 in arrays). A handle outlives its item: using a
    removed one raises StaleHandleError. Boxes are stored as float32 (float64
    rounded outward), and queries answer on the stored boxes.
    placement: "loose" (default), "tight" or "leaves"; answers are the same.
    """

    __slots__ = ("_t", "dim", "placement")

    def __init__(self, dim: int = 2, placement: str = "loose") -> None:
        if dim not in (2, 3):
            raise ValueError(f"dim must be 2 or 3, not {dim!r}")
        if placement not in _PLACEMENTS:
            raise ValueError(f"placement must be one of {_PLACEMENTS}, not {placement!r}")
        self.dim = dim
        self.placement = placement
        self._t = _ext._Dynamic(dim, placement)

    def __len__(self) -> int:
        return len(self._t)

    def __contains__(self, handle: int) -> bool:
        return self._t.contains(int(handle))

    def __repr__(self) -> str:
        return f"orthant.DynamicIndex({len(self)} boxes, dim={self.dim}, placement={self.placement!r})"

    def insert(self, box) -> int:
        """Store one box; returns its handle."""
        return int(self._t.insert_many(_one_box(box, self.dim))[0])

    def insert_many(self, boxes) -> np.ndarray:
        """Store every row; returns their handles (uint64). All or nothing."""
        return self._t.insert_many(_rows(boxes, (2 * self.dim,), "boxes"))

    def move(self, handle: int, box) -> None:
        """Give an item a new box, keeping its handle."""
        self._t.move(int(handle), _one_box(box, self.dim))

    def remove(self, handle: int) -> None:
        """Forget an item; its handle becomes stale."""
        self._t.remove(int(handle))

    def box(self, handle: int) -> Tuple[float, ...]:
        """The stored (float32) box of an item."""
        return self._t.box(int(handle))

    def query(self, box) -> np.ndarray:
        """Handles of the items overlapping `box`, sorted (uint64)."""
        return self._t.query(_one_box(box, self.dim))

    def pairs(self) -> np.ndarray:
        """Every overlapping pair of handles, (K, 2) uint64, a < b, sorted."""
        return self._t.pairs()

    def update_pairs(self) -> Tuple[np.ndarray, np.ndarray]:
        """The pairs that began and ended since the last call, as (began, ended).

        Each a (K, 2) uint64 array of handles, a < b, sorted. The first call
        reports every current pair as begun. An item removed since the last
        call ends its pairs (with its now stale handle).
        """
        return self._t.update_pairs()

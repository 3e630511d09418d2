"""The OLE pairs of a round as the tree grower holds them: grouped by preferred document.

A round's pairs (seed 000, eq. 13: each pair ``(i, j)`` with ``rho``, the amount the pair
adds to both documents' hessians) are a :class:`PairCSR`: the pairs whose preferred
document is row ``d`` are ``ptr[d]:ptr[d+1]``, each with its other document as an offset
from ``d`` (``offset``: int16 when every pair's documents are less than 32768 rows apart,
as in any query of at most 32768 documents; else int32) and its ``rho`` (float32).  6
bytes a pair plus 8 a row; the grower keeps no per-pair partition (it reorders each
row's pairs in place and keeps two counts a row: see
:class:`~ltrboost.histogram.LocalHistograms`), so a round's pairs cost less than the
binned data as long as pairs per document stay below about ``n_features / 6`` (issue 16
item 4: the former layout, ``(doc_i, doc_j, rho)`` lists and a pair partition, took 24
bytes a pair).

``rho`` is stored in float32: a pair's ``rho`` is itself a curvature estimate, and its
float32 rounding (relative 6e-8) is far below what moves a split; every sum over pairs is
taken in float64.  Objectives produce :class:`~ltrboost.objectives.base.PairTerms` (the
public format); :func:`pairs_to_csr` turns them into this layout, and LambdaMART writes it
directly (no 16-byte-a-pair list in between).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from ltrboost._numba import kernel

PAIR_RHO_DTYPE = np.float32


class PairCSR(NamedTuple):
    """A round's OLE pairs by preferred document (see the module docstring).

    ``ptr``: int64 (n_rows + 1,); ``offset``: int16 or int32 (n_pairs,), the other
    document minus the preferred one (rows of the same shard); ``rho``: float32
    (n_pairs,).  Within a row's slice, pairs keep the order in which the objective
    produced them (until a tree grower reorders them: a PairCSR serves one tree).
    """

    ptr: NDArray[np.int64]
    offset: NDArray[np.signedinteger]
    rho: NDArray[np.float32]

    @property
    def n_pairs(self) -> int:
        return int(self.offset.shape[0])

    @property
    def nbytes(self) -> int:
        return int(self.ptr.nbytes + self.offset.nbytes + self.rho.nbytes)

    def slice_rows(self, lo: int, hi: int) -> PairCSR:
        """The pairs of rows ``lo .. hi - 1`` (whole queries: every pair's documents are
        among them), with rows renumbered from 0 (views of the offsets and rho)."""
        p0, p1 = int(self.ptr[lo]), int(self.ptr[hi])
        return PairCSR(self.ptr[lo : hi + 1] - p0, self.offset[p0:p1], self.rho[p0:p1])

    def to_lists(self) -> tuple[NDArray[np.int32], NDArray[np.int32], NDArray[np.float64]]:
        """``(doc_i, doc_j, rho)`` in CSR order (tests and tools; float64 ``rho``)."""
        counts = np.diff(self.ptr)
        doc_i = np.repeat(np.arange(counts.shape[0], dtype=np.int32), counts)
        doc_j = (doc_i + self.offset).astype(np.int32)
        return doc_i, doc_j, self.rho.astype(np.float64)


def n_pairs_of(pairs) -> int:  # type: ignore[no-untyped-def]
    """The number of pairs of a :class:`PairCSR`, a ``(doc_i, doc_j, rho)`` tuple or
    anything with an ``n_pairs`` attribute (a remote shard set's count)."""
    n = getattr(pairs, "n_pairs", None)
    if n is not None:
        return int(n)
    return len(pairs[0])


def pairs_to_csr(
    doc_i: NDArray[np.integer],
    doc_j: NDArray[np.integer],
    rho: NDArray[np.floating],
    n_rows: int,
    in_bag: NDArray[np.bool_] | None = None,
) -> PairCSR:
    """The pairs ``(doc_i, doc_j, rho)`` (``doc_i`` preferred) as a :class:`PairCSR`
    over ``n_rows`` rows, keeping only pairs with both documents ``in_bag`` when given.

    Raises ValueError when a document is not a row in ``0 .. n_rows - 1`` (an objective
    must name rows of the data it was given) or the arrays differ in length.
    """
    doc_i = np.asarray(doc_i)
    doc_j = np.asarray(doc_j)
    rho = np.asarray(rho)
    if not (doc_i.shape == doc_j.shape == rho.shape) or doc_i.ndim != 1:
        raise ValueError(
            f"OLE pairs: doc_i, doc_j and rho must be 1-d arrays of one length; got "
            f"shapes {doc_i.shape}, {doc_j.shape} and {rho.shape}"
        )
    if doc_i.shape[0]:
        lo = min(int(doc_i.min()), int(doc_j.min()))
        hi = max(int(doc_i.max()), int(doc_j.max()))
        if lo < 0 or hi >= n_rows:
            raise ValueError(
                f"OLE pairs: a pair names row {lo if lo < 0 else hi}, outside the "
                f"{n_rows} rows of the training data"
            )
    di = np.ascontiguousarray(doc_i, dtype=np.int32)
    dj = np.ascontiguousarray(doc_j, dtype=np.int32)
    bag = bag_mask(in_bag, n_rows)
    ptr = np.zeros(n_rows + 1, dtype=np.int64)
    n = _csr_counts(di, dj, bag, ptr)
    np.cumsum(ptr, out=ptr)
    far = int(np.max(np.abs(dj.astype(np.int64) - di), initial=0))
    offset = np.empty(n, dtype=offset_dtype(far + 1))
    out_rho = np.empty(n, dtype=PAIR_RHO_DTYPE)
    cursor = ptr[:-1].copy()
    _csr_fill(di, dj, np.ascontiguousarray(rho, dtype=np.float64), bag, cursor, offset, out_rho)
    return PairCSR(ptr, offset, out_rho)


def bag_mask(in_bag: NDArray[np.bool_] | None, n_rows: int) -> NDArray[np.bool_]:
    """``in_bag`` as the pair kernels read it (empty: no bag); ValueError unless it is
    one flag a row of the ``n_rows`` (the kernels index it by row, unchecked)."""
    if in_bag is None:
        return np.zeros(0, dtype=np.bool_)
    bag = np.ascontiguousarray(in_bag, dtype=np.bool_)
    if bag.shape != (n_rows,):
        raise ValueError(
            f"OLE pairs: in_bag must be one flag a row of the {n_rows} rows of the "
            f"training data; got shape {np.shape(in_bag)}"
        )
    return bag


def offset_dtype(span: int) -> type[np.signedinteger]:
    """The offset type for pairs whose documents lie within ``span`` consecutive rows
    (a query's length): int16 up to 32768, else int32."""
    return np.int16 if span <= 32768 else np.int32


@kernel
def _csr_counts(doc_i, doc_j, in_bag, counts):
    # counts[d + 1] += 1 per kept pair whose doc_i is d; the number of kept pairs
    has_bag = in_bag.shape[0] > 0
    n = 0
    for t in range(doc_i.shape[0]):
        i = doc_i[t]
        if has_bag and not (in_bag[i] and in_bag[doc_j[t]]):
            continue
        counts[i + 1] += 1
        n += 1
    return n


@kernel
def _csr_fill(doc_i, doc_j, rho, in_bag, cursor, offset, rho_out):
    # the kept pairs into their doc_i's slice, in input order (cursor: ptr[:-1] copy)
    has_bag = in_bag.shape[0] > 0
    for t in range(doc_i.shape[0]):
        i = doc_i[t]
        j = doc_j[t]
        if has_bag and not (in_bag[i] and in_bag[j]):
            continue
        p = cursor[i]
        offset[p] = j - i
        rho_out[p] = rho[t]
        cursor[i] = p + 1

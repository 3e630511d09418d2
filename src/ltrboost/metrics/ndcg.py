"""DCG@k and NDCG@k per query (Jarvelin & Kekalainen 2002; Burges et al. 2005), and
|delta NDCG| of a swap (:func:`delta_ndcg`, LambdaMART's pair weight).

Definitions (the ranking, gains, discounts and ``k`` conventions are those of
:mod:`ltrboost.metrics._dcg`):

* ``DCG@k = sum_{r < k} gain(y_(r)) / log2(r + 2)`` over 0-based ranks ``r`` of the
  query's ranking (seed 003, "DCG@K"; seed 004's DCG-5 is ``DCG@5``).
* ``NDCG@k = DCG@k / IDCG@k``, where the ideal ranking sorts the query's *own* labels in
  decreasing order (seed 003's worked example: ``r = [0, 1, 0, 1, 1]`` with linear gain
  has ideal ``[1, 1, 1, 0, 0]`` and NDCG@5 = 1.45 / 2.13 = 0.68).
* A query whose ideal DCG is 0 (no document with positive gain, or no document at all)
  has no defined NDCG; it scores ``empty_query_score``: 1.0 by default as in LightGBM's
  ``NDCGMetric`` and XGBoost, 0.0 selectable (ranx, trec_eval).  DCG is a plain sum and
  such a query simply scores 0.
"""

from __future__ import annotations

from itertools import pairwise
from typing import NoReturn

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ltrboost._numba import inline_kernel, kernel
from ltrboost.dataset import LTRInputError
from ltrboost.metrics._dcg import (
    _validate_empty_query_score,
    discounts,
    inverse_max_dcg,
    label_gains,
    over_ranked_prefixes,
)
from ltrboost.metrics.base import QueryMetricEvaluator


class NDCGEvaluator(QueryMetricEvaluator):
    """DCG@k or NDCG@k of each query, for labels and queries fixed once.

    Construction validates the labels and precomputes everything that does not depend on
    the scores (gains, ``1 / IDCG@k`` per query, the discount table, sort buffers).

    Parameters
    ----------
    y, query_offsets, k
        As for :class:`~ltrboost.metrics.base.QueryMetricEvaluator`.
    gain : {"exp", "linear"}, default="exp"
        ``2^y - 1`` or ``y``.  ``"exp"`` refuses labels above 31.
    normalize : bool, default=True
        True for NDCG@k, False for DCG@k.
    empty_query_score : float, default=1.0
        NDCG of a query whose ideal DCG is 0.
    """

    def __init__(
        self,
        y: ArrayLike,
        query_offsets: ArrayLike,
        *,
        k: int = 0,
        gain: str = "exp",
        normalize: bool = True,
        empty_query_score: float = 1.0,
    ) -> None:
        super().__init__(y, query_offsets, k=k)
        self.normalize = bool(normalize)
        self.empty_query_score = _validate_empty_query_score(empty_query_score)
        self.gains = label_gains(self.y, gain)
        self.gain = gain
        _check_dcg_finite(self.gains, self.query_offsets)
        if self.normalize:
            self.inverse_max_dcgs = inverse_max_dcg(self.gains, self.query_offsets, self.k)
            _check_inverse_finite(self.inverse_max_dcgs, self.gains, self.query_offsets)
        else:
            self.inverse_max_dcgs = np.zeros(0, dtype=np.float64)
        max_len = int(np.diff(self.query_offsets).max())
        if self.k > 0:
            max_len = min(max_len, self.k)
        self.discount_table = discounts(max_len)

    def _compute(self, scores: NDArray[np.float64], out: NDArray[np.float64]) -> None:
        _ndcg_all_queries(
            scores,
            self.gains,
            self.query_offsets,
            self.k,
            self.normalize,
            self.inverse_max_dcgs,
            self.empty_query_score,
            self.discount_table,
            self._order,
            self._scratch,
            out,
        )


def _check_dcg_finite(gains: NDArray[np.float64], query_offsets: NDArray[np.int64]) -> None:
    """Refuse gains whose sum over a query overflows (linear gain, grades near the
    float64 maximum): the ideal DCG would be inf and ``1 / IDCG`` 0, so every ranking
    scored ``empty_query_score``.  The plain sum bounds every (ideal) DCG of the query
    (discounts are <= 1)."""
    starts = query_offsets[:-1][np.diff(query_offsets) > 0]
    if starts.size == 0:
        return
    with np.errstate(over="ignore"):
        sums = np.add.reduceat(gains, starts)
    if not np.isfinite(sums).all():
        lo = int(starts[np.flatnonzero(~np.isfinite(sums))[0]])
        hi = int(query_offsets[np.searchsorted(query_offsets, lo, side="right")])
        refuse_query_gains(
            gains, lo, hi, "the gains of its query sum to more than float64 holds (the DCG "
            "would overflow)"
        )  # fmt: skip


def refuse_query_gains(gains: NDArray[np.float64], lo: int, hi: int, problem: str) -> NoReturn:
    """Raise :class:`LTRInputError` naming the row of the largest gain of the query
    ``gains[lo:hi]`` and ``problem`` (a query whose DCG float64 cannot hold)."""
    row = lo + int(np.argmax(gains[lo:hi]))
    raise LTRInputError(
        f"label {float(gains[row]):g}: {problem}; rescale the labels (NDCG does not change "
        "when linear gains are scaled)",
        row=row,
    )


def _check_inverse_finite(
    inverse_max_dcgs: NDArray[np.float64],
    gains: NDArray[np.float64],
    query_offsets: NDArray[np.int64],
) -> None:
    """Refuse an ideal DCG so small (linear gains below ~5.6e-309, subnormal) that
    ``1 / IDCG`` overflows: every ranking of the query then scored NDCG inf (or NaN
    when its DCG underflowed to 0) instead of a number in [0, 1]."""
    bad = ~np.isfinite(inverse_max_dcgs)
    if not bad.any():
        return
    q = int(np.flatnonzero(bad)[0])
    refuse_query_gains(
        gains, int(query_offsets[q]), int(query_offsets[q + 1]),
        "the ideal DCG of its query is too small for float64 (1 / IDCG overflows, NDCG "
        "would be inf)",
    )  # fmt: skip


# --- kernels ---


@inline_kernel
def delta_ndcg(gain_i, gain_j, discount_i, discount_j, inv_idcg):
    """|dNDCG| when two documents swap ranks: ``|gain_i - gain_j| |D_i - D_j| / IDCG``.

    The derivative LambdaMART weighs a pair with (seed 001, "LambdaMART"; LightGBM's
    ``GetGradientsForOneQuery``).  The discounts are those of the two current ranks,
    *without* the cut-off (LightGBM), and ``inv_idcg`` is ``1 / IDCG@k``.  Scalars
    only: it is called once per pair.
    """
    return abs(gain_i - gain_j) * abs(discount_i - discount_j) * inv_idcg


def _ndcg_all_queries(
    scores,
    gains,
    query_offsets,
    k,
    normalize,
    inverse_max_dcgs,
    empty_query_score,
    discount_table,
    order,
    scratch,
    out,
):
    # scores, gains: IN float64 (n_samples,); query_offsets: IN int64 (n_queries + 1,)
    # inverse_max_dcgs: IN float64 (n_queries,), 0 where IDCG@k = 0 (read if normalize)
    # discount_table: IN float64, 1/log2(r+2), length >= min(k, n) of every query
    # order, scratch: clobbered (n_samples,); out: OUT float64 (n_queries,)
    over_ranked_prefixes(
        _ndcg_queries, scores, query_offsets, k, order, scratch, out, gains, query_offsets,
        normalize, inverse_max_dcgs, empty_query_score, discount_table,
    )  # fmt: skip


@kernel
def _ndcg_queries(
    q0, q1, gains, query_offsets, normalize, inverse_max_dcgs, empty_query_score,
    discount_table, order, n_ranked, out,
):  # fmt: skip
    # queries q0..q1-1 of _ndcg_all_queries (see _numba.over_queries): DCG@k of the
    # ranked prefix order[lo:lo + n_ranked[q]] (local positions)
    for q in range(q0, q1):
        lo = query_offsets[q]
        if normalize and inverse_max_dcgs[q] == 0.0:
            out[q] = empty_query_score  # NDCG undefined: no positive gain in the query
            continue
        dcg = 0.0
        for r in range(n_ranked[q]):
            dcg += gains[lo + order[lo + r]] * discount_table[r]  # gain(y_(r)) / log2(r+2)
        out[q] = dcg * inverse_max_dcgs[q] if normalize else dcg


# --- references ---


def _ndcg_reference(
    scores, y, query_offsets, *, k=0, gain="exp", normalize=True, empty_query_score=1.0
):
    """Plain NumPy (N)DCG@k per query: stable argsort, vectorised sums."""
    g_all = np.power(2.0, y) - 1.0 if gain == "exp" else np.asarray(y, dtype=float)
    out = np.empty(len(query_offsets) - 1)
    for q, (lo, hi) in enumerate(pairwise(query_offsets)):
        g = g_all[lo:hi]
        ranked = g[np.argsort(-scores[lo:hi], kind="stable")]
        cut = len(g) if k == 0 else min(k, len(g))
        disc = 1.0 / np.log2(np.arange(cut) + 2.0)
        dcg = float(np.sum(ranked[:cut] * disc))
        if not normalize:
            out[q] = dcg
            continue
        idcg = float(np.sum(np.sort(g)[::-1][:cut] * disc))
        out[q] = dcg / idcg if idcg > 0 else empty_query_score
    return out

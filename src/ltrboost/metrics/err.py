"""Expected Reciprocal Rank, ERR@k (Chapelle, Metzler, Zhang & Grinspan, CIKM 2009).

Definition (ranking and ``k`` conventions of :mod:`ltrboost.metrics._dcg`): with 1-based
rank ``r`` and the cascade "stop" probability of the document ranked ``r``

    ``R_r = (2^{y_r} - 1) / 2^{y_max}``                      (Chapelle et al., eq. 3)

    ``ERR@k = sum_{r=1}^{k} (1 / r) R_r prod_{i<r} (1 - R_i)``  (Chapelle et al., eq. 4)

``y_max`` is the ``max_grade`` parameter.  By default it is the largest label of the
dataset being evaluated, fixed once when the labels are bound (for early stopping: the
validation set's largest label), as RankLib does without ``-gmax``.  Pass the scale's
top grade (e.g. 4 for MSLR/Yahoo, 2 for MQ2008) to make values comparable across
datasets.  Labels above ``max_grade`` are refused (they would make ``R`` exceed 1).
``R`` is computed as ``2^(y - y_max) - 2^(-y_max)``, the same number without overflow
for large grades.

ERR is not normalised: a query without any positive label scores 0 (no
``empty_query_score``), like DCG.
"""

from __future__ import annotations

import math
from itertools import pairwise

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ltrboost._config import INDEX_DTYPE
from ltrboost._numba import kernel, over_queries
from ltrboost.metrics._dcg import (
    _ranked_prefix_one_query,
    _validate_k,
    _validate_labels,
    _validate_query_offsets,
    _validate_scores,
)


class ERREvaluator:
    """ERR@k of each query, for labels and queries fixed once.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Graded relevance labels, finite and >= 0.
    query_offsets : array-like of shape (n_queries + 1,), integer
        Query ``q`` owns rows ``query_offsets[q]:query_offsets[q + 1]``.
    k : int, default=0
        Cut-off; 0 means the whole list.
    max_grade : float or None, default=None
        ``y_max`` of the stop probability; None means ``max(y)`` of these labels.

    Attributes
    ----------
    max_grade : float
        The ``y_max`` actually used.
    stop_probabilities : ndarray of shape (n_samples,), dtype=float64
        ``R`` of every document.
    """

    pooled = False

    def __init__(
        self,
        y: ArrayLike,
        query_offsets: ArrayLike,
        *,
        k: int = 0,
        max_grade: float | None = None,
    ) -> None:
        self.y = _validate_labels(y)
        self.query_offsets, self.n_samples = _validate_query_offsets(
            query_offsets, self.y.shape[0]
        )
        self.n_queries = self.query_offsets.shape[0] - 1
        self.k = _validate_k(k)
        largest = float(self.y.max()) if self.y.size else 0.0
        if max_grade is None:
            self.max_grade = largest
        else:
            try:
                self.max_grade = float(max_grade)
            except (TypeError, ValueError):
                raise ValueError(f"max_grade={max_grade!r} must be a number") from None
            if not math.isfinite(self.max_grade) or self.max_grade < 0:
                raise ValueError(f"max_grade={max_grade!r} must be finite and >= 0")
            if self.max_grade < largest:
                raise ValueError(
                    f"max_grade={max_grade!r} is smaller than the largest label "
                    f"{largest:g}; pass max_grade >= {largest:g} or None (use max(y))"
                )
        # eq. 3 of Chapelle et al., rearranged so 2^y never overflows
        self.stop_probabilities = np.exp2(self.y - self.max_grade) - np.exp2(
            -self.max_grade
        )
        self._order = np.empty(self.n_samples, dtype=INDEX_DTYPE)
        self._scratch = np.empty(self.n_samples, dtype=INDEX_DTYPE)

    def per_query(
        self, scores: ArrayLike, out: NDArray[np.float64] | None = None
    ) -> NDArray[np.float64]:
        """ERR@k of every query for ``scores``, shape (n_queries,), into ``out``."""
        scores = _validate_scores(scores, self.n_samples)
        if out is None:
            out = np.empty(self.n_queries, dtype=np.float64)
        _err_all_queries(
            scores,
            self.stop_probabilities,
            self.query_offsets,
            self.k,
            self._order,
            self._scratch,
            out,
        )
        return out


# --- kernels ---


@kernel
def _err_one_query(scores_q, stop_q, k, order, scratch):
    """ERR@k of one query (Chapelle et al. eq. 4).

    Parameters
    ----------
    scores_q, stop_q : ndarray of shape (n,), dtype=float64   # IN; stop_q = R per doc
    k : int                                                   # 0 = whole list
    order, scratch : ndarray of shape (n,), integer           # clobbered sort buffers
    """
    kk = _ranked_prefix_one_query(scores_q, k, order, scratch)
    err = 0.0
    not_stopped = 1.0  # prod_{i<r} (1 - R_i): the user reaches rank r
    for r in range(kk):
        stop = stop_q[order[r]]
        err += not_stopped * stop / (r + 1.0)  # 1-based rank r + 1
        not_stopped *= 1.0 - stop
    return err


def _err_all_queries(scores, stop_probabilities, query_offsets, k, order, scratch, out):
    # scores, stop_probabilities: IN float64 (n_samples,); query_offsets: IN int64
    # order, scratch: clobbered (n_samples,); out: OUT float64 (n_queries,)
    over_queries(
        _err_queries, query_offsets, scores, stop_probabilities, query_offsets, k,
        order, scratch, out
    )


@kernel
def _err_queries(
    q0, q1, scores, stop_probabilities, query_offsets, k, order, scratch, out
):  # fmt: skip
    # queries q0..q1-1 of _err_all_queries (see _numba.over_queries)
    for q in range(q0, q1):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        out[q] = _err_one_query(
            scores[lo:hi], stop_probabilities[lo:hi], k, order[lo:hi], scratch[lo:hi]
        )


# --- references ---


def _err_reference(scores, y, query_offsets, *, k=0, max_grade=None):
    """Plain NumPy ERR@k per query: stable argsort, cumulative product of (1 - R)."""
    if max_grade is not None:
        y_max = float(max_grade)
    else:
        y_max = float(np.max(y)) if y.size else 0.0
    stop_all = (np.power(2.0, y) - 1.0) / np.power(2.0, y_max)
    out = np.empty(len(query_offsets) - 1)
    for q, (lo, hi) in enumerate(pairwise(query_offsets)):
        stop = stop_all[lo:hi][np.argsort(-scores[lo:hi], kind="stable")]
        if k > 0:
            stop = stop[:k]
        reach = np.concatenate(([1.0], np.cumprod(1.0 - stop)[:-1]))
        out[q] = float(np.sum(reach * stop / np.arange(1, stop.size + 1)))
    return out

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
``R`` is computed as ``2^(y - y_max) - 2^(-y_max)`` (:func:`stop_probabilities`), the
same number without overflow for large grades; any non-negative grade is accepted (for
integer grades up to 53 it is bit for bit ``(2^y - 1) / 2^y_max``).

This module also differentiates ERR for LambdaMART: :func:`err_prefix` and
:func:`delta_err` give the exact change of ERR when two documents swap ranks in O(1)
per pair, from the same ``R``.  That formula divides by ``1 - R_a`` (as small as
``2^-y_max``), so its absolute rounding error grows like ``2^y_max`` machine epsilons:
measured against exact rational arithmetic on random 8-document lists, at most 8e-16
for ``y_max = 4``, 1e-10 at 20, 1.4e-7 at 31, 8e-5 at 40 and 0.3 (useless) at 53.
LambdaMART therefore refuses labels above ``MAX_DELTA_ERR_GRADE = 31`` for
``lambda_metric="err"``, while the metric itself (a forward sum, stable for any
grade) accepts them.

ERR is not normalised: a query without any positive label scores 0 (no
``empty_query_score``), like DCG.
"""

from __future__ import annotations

import math
from itertools import pairwise

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ltrboost._config import MAX_EXP_GAIN_LABEL
from ltrboost._numba import kernel
from ltrboost.metrics._dcg import over_ranked_prefixes
from ltrboost.metrics.base import QueryMetricEvaluator

# Largest y_max LambdaMART's |delta ERR| accepts: the error of :func:`delta_err` grows
# like 2^y_max machine epsilons (module docstring); 31 keeps it below ~1e-7, and is
# the bound of the exponential gain (``_config.MAX_EXP_GAIN_LABEL``) as well.
MAX_DELTA_ERR_GRADE = MAX_EXP_GAIN_LABEL


def stop_probabilities(y: NDArray[np.float64], max_grade: float) -> NDArray[np.float64]:
    """Chapelle's ``R = (2^y - 1) / 2^max_grade`` per document (eq. 3), float64.

    Written ``2^(y - max_grade) - 2^(-max_grade)`` so that ``2^y`` never overflows.  The
    one implementation of ``R``: the metric and LambdaMART's |delta ERR| both use it.
    """
    y = np.asarray(y, dtype=np.float64)
    return np.exp2(y - max_grade) - np.exp2(-max_grade)


class ERREvaluator(QueryMetricEvaluator):
    """ERR@k of each query, for labels and queries fixed once.

    Parameters
    ----------
    y, query_offsets, k
        As for :class:`~ltrboost.metrics.base.QueryMetricEvaluator`.
    max_grade : float or None, default=None
        ``y_max`` of the stop probability; None means ``max(y)`` of these labels.

    Attributes
    ----------
    max_grade : float
        The ``y_max`` actually used.
    stop_probabilities : ndarray of shape (n_samples,), dtype=float64
        ``R`` of every document.
    """

    def __init__(
        self,
        y: ArrayLike,
        query_offsets: ArrayLike,
        *,
        k: int = 0,
        max_grade: float | None = None,
    ) -> None:
        super().__init__(y, query_offsets, k=k)
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
        self.stop_probabilities = stop_probabilities(self.y, self.max_grade)

    def _compute(self, scores: NDArray[np.float64], out: NDArray[np.float64]) -> None:
        _err_all_queries(
            scores,
            self.stop_probabilities,
            self.query_offsets,
            self.k,
            self._order,
            self._scratch,
            out,
        )


# --- kernels ---


@kernel
def err_prefix(r_ranked, p_out, s_out):
    """Prefix products and sums of ERR over a ranked list (for :func:`delta_err`).

    r_ranked: IN float64 (n,) Chapelle's R in rank order (0 <= R < 1). p_out: OUT
    float64 (n + 1,): p[r] = prod_{k<r} (1 - R_k)  (reach probability of r). s_out: OUT
    float64 (n + 1,): s[r] = sum_{k<r} R_k p[k] / (k + 1)  (ERR of the top r).
    """
    n = r_ranked.shape[0]
    p_out[0] = 1.0
    s_out[0] = 0.0
    for r in range(n):
        s_out[r + 1] = s_out[r] + r_ranked[r] * p_out[r] / (r + 1.0)
        p_out[r + 1] = p_out[r] * (1.0 - r_ranked[r])


@kernel
def delta_err(r_a, r_b, p_a, p_b, middle, a, b):
    """ERR(after swapping ranks a < b) - ERR(before), O(1) from the prefixes.

    r_a, r_b: R of the documents at ranks a and b; p_a, p_b: ``p[a]``, ``p[b]``;
    middle: ``s[b] - s[a + 1]``, the ERR terms strictly between (see ``err_prefix``).
    Only ranks a..b change::

        rank a:        p_a R_a/(a+1)         -> p_a R_b/(a+1)
        a < k < b:     term_k                -> term_k (1 - R_b)/(1 - R_a)
        rank b:        p_b R_b/(b+1)         -> p_b (1 - R_b)/(1 - R_a) R_a/(b+1)
        k > b:         unchanged (both factors (1 - R_a)(1 - R_b) still above)

    Needs R_a < 1; accurate for ``y_max <= MAX_DELTA_ERR_GRADE`` (module docstring).
    Scalars only (called once per pair; array arguments would cost reference counting).
    """
    return (
        (r_b - r_a) * p_a / (a + 1.0)
        + middle * (r_a - r_b) / (1.0 - r_a)
        + p_b * (r_a * (1.0 - r_b) / (1.0 - r_a) - r_b) / (b + 1.0)
    )


def _err_all_queries(scores, stop_probabilities, query_offsets, k, order, scratch, out):
    # scores, stop_probabilities: IN float64 (n_samples,); query_offsets: IN int64
    # order, scratch: clobbered (n_samples,); out: OUT float64 (n_queries,)
    over_ranked_prefixes(
        _err_queries, scores, query_offsets, k, order, scratch, out, stop_probabilities,
        query_offsets,
    )  # fmt: skip


@kernel
def _err_queries(q0, q1, stop_probabilities, query_offsets, order, n_ranked, out):
    # queries q0..q1-1 of _err_all_queries (see _numba.over_queries): ERR@k (Chapelle
    # et al. eq. 4) of the ranked prefix order[lo:lo + n_ranked[q]] (local positions)
    for q in range(q0, q1):
        lo = query_offsets[q]
        err = 0.0
        not_stopped = 1.0  # prod_{i<r} (1 - R_i): the user reaches rank r
        for r in range(n_ranked[q]):
            stop = stop_probabilities[lo + order[lo + r]]
            err += not_stopped * stop / (r + 1.0)  # 1-based rank r + 1
            not_stopped *= 1.0 - stop
        out[q] = err


# --- references ---


def _err_ranked_reference(r_ranked: NDArray[np.float64]) -> float:
    """ERR of a ranked list of Chapelle R values, straight from the definition."""
    reach = np.concatenate(([1.0], np.cumprod(1.0 - r_ranked)[:-1]))
    return float(np.sum(r_ranked * reach / np.arange(1, r_ranked.size + 1)))


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

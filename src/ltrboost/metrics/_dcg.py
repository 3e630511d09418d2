"""Gains, discounts and the ideal-DCG cache, shared by the metrics and by ``lambdamart``.

One DCG engine serves both the evaluation metrics and the LambdaMART |delta NDCG|
(LightGBM's ``DCGCalculator`` and XGBoost's ``NDCGCache`` are shared the same way), so the
objective optimises exactly the number the metric reports.

Conventions (documented once, here):

* gain ``"exp"``: ``2^y - 1`` (Burges); gain ``"linear"``: ``y`` (Jarvelin & Kekalainen).
* discount at 0-based rank ``r``: ``1 / log2(r + 2)``.
* ``k = 0`` means "no cut-off" (the whole list).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ltrboost._config import MAX_EXP_GAIN_LABEL
from ltrboost._numba import kernel, parallel_kernel, prange

GAINS = ("exp", "linear")


def label_gains(y: NDArray[np.floating], gain: str = "exp") -> NDArray[np.float64]:
    """Per-document gain of label ``y``: ``2^y - 1`` (``"exp"``) or ``y`` (``"linear"``).

    Raises ValueError for a label that the exponential gain cannot represent exactly.
    """
    y = np.asarray(y, dtype=np.float64)
    if gain == "exp":
        if y.size and float(np.max(y)) > MAX_EXP_GAIN_LABEL:
            raise ValueError(
                f"label {float(np.max(y)):g} is too large for the exponential gain 2^y-1 "
                f"(at most {MAX_EXP_GAIN_LABEL}); use gain='linear' or rescale the labels"
            )
        return np.exp2(y) - 1.0
    if gain == "linear":
        return y.copy()
    raise ValueError(f"gain={gain!r} is not one of {GAINS}")


def discounts(n: int) -> NDArray[np.float64]:
    """``1 / log2(r + 2)`` for 0-based ranks ``r = 0 .. n-1``."""
    return 1.0 / np.log2(np.arange(n, dtype=np.float64) + 2.0)


def inverse_max_dcg(
    gains: NDArray[np.float64], query_offsets: NDArray[np.int64], k: int
) -> NDArray[np.float64]:
    """``1 / IDCG@k`` per query; 0 where the ideal DCG is 0 (no relevant document).

    Callers decide what such a query scores (``empty_query_score``).
    """
    out = np.empty(query_offsets.shape[0] - 1, dtype=np.float64)
    _inverse_max_dcg_all_queries(gains, query_offsets, k, out)
    return out


# --- kernels ---


@kernel
def _discount(rank):
    """Discount of 0-based rank ``rank``: 1 / log2(rank + 2)."""
    return 1.0 / np.log2(rank + 2.0)


@kernel
def _max_dcg_one_query(gains_q, k):
    """IDCG@k of one query: gains sorted descending, discounted (k <= 0: no cut-off)."""
    n = gains_q.shape[0]
    kk = n if (k <= 0 or k > n) else k
    g = np.sort(gains_q)[::-1]
    s = 0.0
    for r in range(kk):
        s += g[r] / np.log2(r + 2.0)
    return s


@parallel_kernel
def _inverse_max_dcg_all_queries(gains, query_offsets, k, out):
    # gains: IN float64 (n_samples,); query_offsets: IN int64; out: OUT float64 (n_queries,)
    n_queries = query_offsets.shape[0] - 1
    for q in prange(n_queries):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        m = _max_dcg_one_query(gains[lo:hi], k)
        out[q] = 1.0 / m if m > 0.0 else 0.0


# --- references ---


def _inverse_max_dcg_reference(gains, query_offsets, k):
    out = []
    for lo, hi in zip(query_offsets[:-1], query_offsets[1:], strict=True):
        g = np.sort(gains[lo:hi])[::-1]
        if k > 0:
            g = g[:k]
        m = float(np.sum(g / np.log2(np.arange(g.size) + 2.0)))
        out.append(1.0 / m if m > 0 else 0.0)
    return np.asarray(out, dtype=np.float64)

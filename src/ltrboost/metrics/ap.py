"""Average precision per query, AP@k (the per-query term of MAP), on binary relevance.

Definitions (ranking and ``k`` conventions of :mod:`ltrboost.metrics._dcg`): a document
is relevant when ``y >= relevance_threshold`` (default 1, ranx's ``rel_lvl``).  With
1-based ranks ``r``, ``rel_r`` in {0, 1}, ``P@r`` the precision of the top ``r`` and
``n_rel`` the number of relevant documents of the query,

    ``AP   = (1 / n_rel) sum_r P@r rel_r``                  (over the whole list)
    ``AP@k = (1 / min(k, n_rel)) sum_{r <= k} P@r rel_r``

Dividing AP@k by ``min(k, n_rel)`` (LightGBM's ``MapMetric``) makes a perfect top k
score 1 even when the query has more than k relevant documents; ranx and trec_eval
divide by ``n_rel`` instead, so their ``map@k`` is smaller when ``n_rel > k`` (without a
cut-off all agree).  A query without relevant documents has no defined AP and scores
``empty_query_score`` (1.0 by default, as LightGBM; 0.0 as ranx/trec_eval).
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ltrboost._config import INDEX_DTYPE
from ltrboost._numba import kernel, over_queries
from ltrboost.metrics._dcg import (
    _binary_relevance,
    _ranked_prefix_one_query,
    _validate_empty_query_score,
    _validate_k,
    _validate_labels,
    _validate_query_offsets,
    _validate_scores,
)


class APEvaluator:
    """AP@k of each query, for labels and queries fixed once.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Graded relevance labels, finite and >= 0.
    query_offsets : array-like of shape (n_queries + 1,), integer
        Query ``q`` owns rows ``query_offsets[q]:query_offsets[q + 1]``.
    k : int, default=0
        Cut-off; 0 means the whole list.
    relevance_threshold : float, default=1.0
        Labels at or above it are relevant.
    empty_query_score : float, default=1.0
        AP of a query without relevant documents.
    """

    pooled = False

    def __init__(
        self,
        y: ArrayLike,
        query_offsets: ArrayLike,
        *,
        k: int = 0,
        relevance_threshold: float = 1.0,
        empty_query_score: float = 1.0,
    ) -> None:
        self.y = _validate_labels(y)
        self.query_offsets, self.n_samples = _validate_query_offsets(
            query_offsets, self.y.shape[0]
        )
        self.n_queries = self.query_offsets.shape[0] - 1
        self.k = _validate_k(k)
        self.empty_query_score = _validate_empty_query_score(empty_query_score)
        self.relevant, self.n_relevant = _binary_relevance(
            self.y, self.query_offsets, relevance_threshold
        )
        self._order = np.empty(self.n_samples, dtype=INDEX_DTYPE)
        self._scratch = np.empty(self.n_samples, dtype=INDEX_DTYPE)

    def per_query(
        self, scores: ArrayLike, out: NDArray[np.float64] | None = None
    ) -> NDArray[np.float64]:
        """AP@k of every query for ``scores``, shape (n_queries,), into ``out``."""
        scores = _validate_scores(scores, self.n_samples)
        if out is None:
            out = np.empty(self.n_queries, dtype=np.float64)
        _ap_all_queries(
            scores,
            self.relevant,
            self.n_relevant,
            self.query_offsets,
            self.k,
            self.empty_query_score,
            self._order,
            self._scratch,
            out,
        )
        return out


# --- kernels ---


@kernel
def _ap_one_query(scores_q, relevant_q, n_relevant, k, order, scratch):
    """AP@k of one query with ``n_relevant > 0`` relevant documents.

    Parameters
    ----------
    scores_q : ndarray of shape (n,), dtype=float64   # IN
    relevant_q : ndarray of shape (n,), dtype=uint8  # IN, 1 = relevant
    n_relevant : int                                  # > 0
    k : int                                           # 0 = whole list
    order, scratch : ndarray of shape (n,), integer   # clobbered sort buffers
    """
    kk = _ranked_prefix_one_query(scores_q, k, order, scratch)
    hits = 0
    total = 0.0
    for r in range(kk):
        if relevant_q[order[r]]:
            hits += 1
            total += hits / (r + 1.0)  # P@(r+1) at a relevant rank
            if hits == n_relevant:
                break  # nothing relevant left below
    denominator = n_relevant if (k <= 0 or k >= n_relevant) else k
    return total / denominator


def _ap_all_queries(
    scores,
    relevant,
    n_relevant,
    query_offsets,
    k,
    empty_query_score,
    order,
    scratch,
    out,
):
    # scores: IN float64 (n_samples,); relevant: IN uint8 (n_samples,)
    # n_relevant: IN int64 (n_queries,); query_offsets: IN int64 (n_queries + 1,)
    # order, scratch: clobbered (n_samples,); out: OUT float64 (n_queries,)
    over_queries(
        _ap_queries, query_offsets, scores, relevant, n_relevant, query_offsets, k,
        empty_query_score, order, scratch, out
    )


@kernel
def _ap_queries(
    q0, q1, scores, relevant, n_relevant, query_offsets, k, empty_query_score,
    order, scratch, out
):  # fmt: skip
    # queries q0..q1-1 of _ap_all_queries (see _numba.over_queries)
    for q in range(q0, q1):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        if n_relevant[q] == 0:
            out[q] = empty_query_score
            continue
        out[q] = _ap_one_query(
            scores[lo:hi],
            relevant[lo:hi],
            n_relevant[q],
            k,
            order[lo:hi],
            scratch[lo:hi],
        )


# --- references ---


def _ap_reference(
    scores, y, query_offsets, *, k=0, relevance_threshold=1.0, empty_query_score=1.0
):
    """Plain NumPy AP@k per query: cumulative hits over the stable ranking."""
    out = np.empty(len(query_offsets) - 1)
    for q, (lo, hi) in enumerate(pairwise(query_offsets)):
        rel = (y[lo:hi] >= relevance_threshold).astype(float)
        n_rel = rel.sum()
        if n_rel == 0:
            out[q] = empty_query_score
            continue
        ranked = rel[np.argsort(-scores[lo:hi], kind="stable")]
        if k > 0:
            ranked = ranked[:k]
        precision_at_r = np.cumsum(ranked) / np.arange(1, ranked.size + 1)
        denominator = n_rel if k == 0 else min(k, n_rel)
        out[q] = float(np.sum(precision_at_r * ranked) / denominator)
    return out

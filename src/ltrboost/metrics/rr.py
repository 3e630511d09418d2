"""Reciprocal rank per query, RR@k (the per-query term of MRR; Voorhees, TREC-8, 1999).

Definition (ranking and ``k`` conventions of :mod:`ltrboost.metrics._dcg`; relevance
``y >= relevance_threshold`` as in :mod:`ltrboost.metrics.ap`): ``RR@k = 1 / r`` where
``r`` is the 1-based rank of the first relevant document, and 0 when it is ranked below
``k``.  A query without relevant documents has no first relevant document and scores
``empty_query_score`` (1.0 by default; 0.0 as ranx/trec_eval).

The kernel does not sort: the rank of the best-ranked relevant document is the number
of documents that the ranking convention puts before it, counted in one pass (O(n)
instead of O(n log n), and no buffers).
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np
from numpy.typing import NDArray

from ltrboost._numba import kernel, over_queries
from ltrboost.metrics.base import BinaryRelevanceEvaluator


class RREvaluator(BinaryRelevanceEvaluator):
    """RR@k of each query, for labels and queries fixed once.

    Parameters
    ----------
    y, query_offsets, k
        As for :class:`~ltrboost.metrics.base.QueryMetricEvaluator`.
    relevance_threshold : float, default=1.0
        Labels at or above it are relevant.
    empty_query_score : float, default=1.0
        RR of a query without relevant documents.
    """

    sorts = False  # one pass per query, no sort (module docstring)

    def _compute(self, scores: NDArray[np.float64], out: NDArray[np.float64]) -> None:
        _rr_all_queries(
            scores,
            self.relevant,
            self.n_relevant,
            self.query_offsets,
            self.k,
            self.empty_query_score,
            out,
        )


# --- kernels ---


@kernel
def _rr_one_query(scores_q, relevant_q, k):
    """RR@k of one query that has at least one relevant document.

    Parameters
    ----------
    scores_q : ndarray of shape (n,), dtype=float64   # IN
    relevant_q : ndarray of shape (n,), dtype=uint8  # IN, 1 = relevant, not all 0
    k : int                                           # 0 = whole list
    """
    n = scores_q.shape[0]
    # The first relevant document of the ranking: highest score, earliest on ties
    # (strict '>' keeps the earliest).
    best = -1
    for i in range(n):
        if relevant_q[i] and (best < 0 or scores_q[i] > scores_q[best]):
            best = i
    # Its 0-based rank: documents with a higher score, or an equal score and earlier.
    s_best = scores_q[best]
    rank = 0
    for i in range(n):
        if scores_q[i] > s_best or (scores_q[i] == s_best and i < best):
            rank += 1
    if k > 0 and rank >= k:
        return 0.0
    return 1.0 / (rank + 1.0)


def _rr_all_queries(scores, relevant, n_relevant, query_offsets, k, empty_query_score, out):
    # scores: IN float64 (n_samples,); relevant: IN uint8 (n_samples,)
    # n_relevant: IN int64 (n_queries,); query_offsets: IN int64 (n_queries + 1,)
    # out: OUT float64 (n_queries,)
    over_queries(
        _rr_queries,
        query_offsets,
        scores,
        relevant,
        n_relevant,
        query_offsets,
        k,
        empty_query_score,
        out,
    )


@kernel
def _rr_queries(
    q0, q1, scores, relevant, n_relevant, query_offsets, k, empty_query_score, out
):  # fmt: skip
    # queries q0..q1-1 of _rr_all_queries (see _numba.over_queries)
    for q in range(q0, q1):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        if n_relevant[q] == 0:
            out[q] = empty_query_score
        else:
            out[q] = _rr_one_query(scores[lo:hi], relevant[lo:hi], k)


# --- references ---


def _rr_reference(scores, y, query_offsets, *, k=0, relevance_threshold=1.0, empty_query_score=1.0):
    """Plain NumPy RR@k per query: first relevant position in the stable ranking."""
    out = np.empty(len(query_offsets) - 1)
    for q, (lo, hi) in enumerate(pairwise(query_offsets)):
        rel = y[lo:hi] >= relevance_threshold
        if not rel.any():
            out[q] = empty_query_score
            continue
        ranked = rel[np.argsort(-scores[lo:hi], kind="stable")]
        first = int(np.argmax(ranked))  # 0-based rank of the first relevant document
        out[q] = 0.0 if (k > 0 and first >= k) else 1.0 / (first + 1)
    return out

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

:func:`ap_prefix` and :func:`delta_ap` differentiate AP for LambdaMART: the exact change
of AP (over the whole list) when two documents swap ranks, O(1) per pair (XGBoost's
``DeltaMAP``).
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np
from numpy.typing import NDArray

from ltrboost._numba import kernel
from ltrboost.metrics._dcg import (
    over_ranked_prefixes,
)
from ltrboost.metrics.base import BinaryRelevanceEvaluator


class APEvaluator(BinaryRelevanceEvaluator):
    """AP@k of each query, for labels and queries fixed once.

    Parameters
    ----------
    y, query_offsets, k
        As for :class:`~ltrboost.metrics.base.QueryMetricEvaluator`.
    relevance_threshold : float, default=1.0
        Labels at or above it are relevant.
    empty_query_score : float, default=1.0
        AP of a query without relevant documents.
    """

    def _compute(self, scores: NDArray[np.float64], out: NDArray[np.float64]) -> None:
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


# --- kernels ---


@kernel
def ap_prefix(rel_ranked, c_out, t_out):
    """Prefix counts for AP over a ranked list of binary relevances (for
    :func:`delta_ap`).

    rel_ranked: IN float64 (n,) 1.0 relevant, 0.0 not, in rank order.
    c_out: OUT float64 (n + 1,): c[r] = number of relevant documents above rank r.
    t_out: OUT float64 (n + 1,): t[r] = sum_{k<r, relevant} 1 / (k + 1).
    """
    n = rel_ranked.shape[0]
    c_out[0] = 0.0
    t_out[0] = 0.0
    for r in range(n):
        c_out[r + 1] = c_out[r] + rel_ranked[r]
        t_out[r + 1] = t_out[r] + rel_ranked[r] / (r + 1.0)


@kernel
def delta_ap(rel_a, rel_b, c_a, c_b, middle, a, b):
    """(AP(after swapping ranks a < b) - AP(before)) times the number of relevant docs.

    rel_a, rel_b: relevance (0/1) at ranks a and b; c_a, c_b: ``c[a]``, ``c[b]``;
    middle: ``t[b] - t[a + 1]`` (see ``ap_prefix``).  With exactly one of the two
    relevant (otherwise 0) and AP = (1/N) sum over relevant k of (relevant at or above
    k)/(k + 1)::

        relevant at a moves down to b:  c_b/(b+1) - (c_a+1)/(a+1) - M
        relevant at b moves up to a:    (c_a+1)/(a+1) - (c_b+1)/(b+1) + M
        with M = sum_{a<k<b, relevant} 1/(k+1)

    (the relevant documents strictly between lose, resp. gain, one relevant above them).
    """
    if rel_a == rel_b:
        return 0.0
    if rel_a > 0.0:
        return c_b / (b + 1.0) - (c_a + 1.0) / (a + 1.0) - middle
    return (c_a + 1.0) / (a + 1.0) - (c_b + 1.0) / (b + 1.0) + middle


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
    over_ranked_prefixes(
        _ap_queries, scores, query_offsets, k, order, scratch, out, relevant, n_relevant,
        query_offsets, k, empty_query_score,
    )  # fmt: skip


@kernel
def _ap_queries(
    q0, q1, relevant, n_relevant, query_offsets, k, empty_query_score, order, n_ranked, out
):  # fmt: skip
    # queries q0..q1-1 of _ap_all_queries (see _numba.over_queries): AP@k of the
    # ranked prefix order[lo:lo + n_ranked[q]] (local positions), for a query with
    # n_relevant[q] > 0 relevant documents (empty_query_score otherwise)
    for q in range(q0, q1):
        lo = query_offsets[q]
        n_rel = n_relevant[q]
        if n_rel == 0:
            out[q] = empty_query_score
            continue
        hits = 0
        total = 0.0
        for r in range(n_ranked[q]):
            if relevant[lo + order[lo + r]]:
                hits += 1
                total += hits / (r + 1.0)  # P@(r+1) at a relevant rank
                if hits == n_rel:
                    break  # nothing relevant left below
        denominator = n_rel if (k <= 0 or k >= n_rel) else k
        out[q] = total / denominator


# --- references ---


def _ap_ranked_reference(rel_ranked: NDArray[np.float64]) -> float:
    """AP of a ranked list of 0/1 relevances (0 when nothing is relevant)."""
    rel = np.asarray(rel_ranked, dtype=bool)
    if not rel.any():
        return 0.0
    prec = np.cumsum(rel) / np.arange(1, rel.size + 1)
    return float(np.sum(prec[rel]) / rel.sum())


def _ap_reference(scores, y, query_offsets, *, k=0, relevance_threshold=1.0, empty_query_score=1.0):
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

"""Precision at rank k (P@k) and pair precision at K% (seed 004, "precision at K%").

P@k (ranking and ``k`` conventions of :mod:`ltrboost.metrics._dcg`; relevance
``y >= relevance_threshold`` as in :mod:`ltrboost.metrics.ap`): the number of relevant
documents among the top ``k``, divided by ``k`` even when the query has fewer than ``k``
documents (trec_eval's and ranx's convention: P@5 of a 2-document query is at most 0.4).
P@k is defined for every query: one without relevant documents scores 0.

Pair precision at K% (Zheng, Zha, Zhang, Chapelle, Chen & Sun, NIPS 2007; seed 004 §4,
"Evaluation metrics" and Table 1):

* The pairs are all pairs of documents of the same query with *different* labels; the
  higher-labelled one should be ranked higher.  Pairs with equal labels are left out
  (the paper "excluded all tied data ... when converting preference data from the
  absolute relevance judgments").
* "We sort all the document pairs <x, y> according to |h(x) - h(y)|" (largest first) and
  "call *precision at K%* the fraction of non-contradicting pairs in the top K% of the
  sorted list".  A pair is non-contradicting when the higher-labelled document has the
  strictly higher score; a pair with equal scores counts as contradicting (it does not
  order the pair; it also has |delta s| = 0, so it sits at the very end of the list).
* The top K% holds ``ceil(K * n_pairs / 100)`` pairs (at least one).  Pairs whose
  |delta s| equals that of the last pair taken are exchangeable, so instead of an
  arbitrary order the boundary group contributes the fraction of it that is taken, times
  its own fraction of correct pairs (the expected value over random orders of the tied
  pairs).  The metric therefore never depends on the input order of documents.
* The pairs are pooled over *all queries* of the dataset, as in the paper: the metric is
  not a mean of per-query values.  With query weights every pair counts with its query's
  weight in the fraction (the top K% is still taken by pair count).
  :meth:`PairPrecisionEvaluator.per_query` gives the same quantity computed inside each
  query (its own top K%), for diagnostics; queries without pairs (all labels equal, one
  document) score ``empty_query_score``, and so does a dataset without any pair.
* ``"pair_precision"`` is precision at 100%, "an overall performance measure": the
  fraction of correctly ordered pairs (the pairwise accuracy, or 1 - the normalised
  number of discordant pairs).

Cost: every evaluation visits ``sum_q n_q^2 / 2`` pairs and stores one float64 (plus one
for K < 100%) per pair with different labels.
"""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import pairwise

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ltrboost import _config
from ltrboost._numba import kernel, over_queries
from ltrboost.metrics._dcg import (
    _binary_relevance,
    _validate_empty_query_score,
    _validate_scores,
    over_ranked_prefixes,
)
from ltrboost.metrics.base import QueryMetricEvaluator, query_error, query_words

# Columns of the per-query pair counts (int64, shape (n_queries, 4)).
_ABOVE = 0  # pairs strictly above the cut value
_ABOVE_CORRECT = 1  # ... of which correctly ordered
_TIED = 2  # pairs exactly at the cut value
_TIED_CORRECT = 3  # ... of which correctly ordered


class PrecisionEvaluator(QueryMetricEvaluator):
    """P@k of each query, for labels and queries fixed once.

    Parameters
    ----------
    y, query_offsets
        As for :class:`~ltrboost.metrics.base.QueryMetricEvaluator`.
    k : int
        Cut-off, >= 1.
    relevance_threshold : float, default=1.0
        Labels at or above it are relevant.
    """

    def __init__(
        self,
        y: ArrayLike,
        query_offsets: ArrayLike,
        *,
        k: int,
        relevance_threshold: float = 1.0,
    ) -> None:
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise ValueError(f"k={k!r} must be an integer >= 1 for precision at k")
        super().__init__(y, query_offsets, k=int(k))
        self.relevant, _ = _binary_relevance(self.y, self.query_offsets, relevance_threshold)

    def _compute(self, scores: NDArray[np.float64], out: NDArray[np.float64]) -> None:
        _precision_all_queries(
            scores,
            self.relevant,
            self.query_offsets,
            self.k,
            self._order,
            self._scratch,
            out,
        )


class PairPrecisionEvaluator(QueryMetricEvaluator):
    """Pair precision at K% (seed 004), for labels and queries fixed once.

    Construction counts each query's pairs with different labels and allocates the pair
    buffers; evaluations then allocate nothing.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Graded relevance labels, finite and >= 0.
    query_offsets : array-like of shape (n_queries + 1,), integer
        Query ``q`` owns rows ``query_offsets[q]:query_offsets[q + 1]``.
    percent : float, int or Fraction, default=100
        K, in (0, 100].
    empty_query_score : float, default=1.0
        Value when there is no pair to judge (per query, or in the whole dataset).

    Attributes
    ----------
    n_pairs : ndarray of shape (n_queries,), dtype=int64
        Pairs with different labels per query.
    """

    pooled = True
    sorts = False  # ranks pairs by |margin|, not documents by score

    def __init__(
        self,
        y: ArrayLike,
        query_offsets: ArrayLike,
        *,
        percent: float | Fraction = 100,
        empty_query_score: float = 1.0,
    ) -> None:
        super().__init__(y, query_offsets, k=None)
        self.percent = _validate_percent(percent)
        self.empty_query_score = _validate_empty_query_score(empty_query_score)
        self.n_pairs = _count_label_pairs(self.y, self.query_offsets)
        _check_pair_memory(self.n_pairs, self.query_offsets)
        self.pair_offsets = np.zeros(self.n_queries + 1, dtype=np.int64)
        np.cumsum(self.n_pairs, out=self.pair_offsets[1:])
        self.total_pairs = int(self.pair_offsets[-1])
        self.n_taken = _n_taken(self.percent, self.total_pairs)
        self.n_taken_per_query = np.array(
            [_n_taken(self.percent, int(n)) for n in self.n_pairs], dtype=np.int64
        )
        # margins[p] = s(higher-labelled doc) - s(other doc) of pair p; > 0 is correct.
        self._margins = np.empty(self.total_pairs, dtype=np.float64)
        self._abs_margins = np.empty(self.total_pairs, dtype=np.float64)
        self._counts = np.empty((self.n_queries, 4), dtype=np.int64)
        self._unit_weights = np.ones(self.n_queries, dtype=np.float64)

    def _compute(self, scores: NDArray[np.float64], out: NDArray[np.float64]) -> None:
        """Pair precision at K% inside each query (its own top K%)."""
        _pair_margins_all_queries(
            scores, self.y, self.query_offsets, self.pair_offsets, self._margins
        )
        _pair_precision_all_queries(
            self._margins,
            self.pair_offsets,
            self.n_taken_per_query,
            self.empty_query_score,
            self._abs_margins,
            out,
        )

    def pooled_value(
        self, scores: ArrayLike, query_weights: NDArray[np.float64] | None = None
    ) -> float:
        """Pair precision at K% over the pairs of all queries (the seed's metric).

        Parameters
        ----------
        scores : array-like of shape (n_samples,)
            Model scores, no NaN.
        query_weights : ndarray of shape (n_queries,), dtype=float64, optional
            Already validated (finite, >= 0); each pair counts with its query's weight.
        """
        scores = _validate_scores(scores, self.n_samples)
        if self.total_pairs == 0:
            return self.empty_query_score
        weights = self._unit_weights if query_weights is None else query_weights
        _pair_margins_all_queries(
            scores, self.y, self.query_offsets, self.pair_offsets, self._margins
        )
        if self.n_taken == self.total_pairs:
            cut = -1.0  # every |margin| >= 0 is "above": all pairs taken
        else:
            # The n_taken-th largest |margin|: an O(n_pairs) selection, in place.
            np.abs(self._margins, out=self._abs_margins)
            self._abs_margins.partition(self.total_pairs - self.n_taken)
            cut = float(self._abs_margins[self.total_pairs - self.n_taken])
        _count_pairs_at_cut_all_queries(self._margins, self.pair_offsets, cut, self._counts)
        value = _pooled_fraction(self._counts, weights, self.n_taken)
        return self.empty_query_score if math.isnan(value) else value


def _validate_percent(percent: float | Fraction) -> Fraction:
    """K of precision at K% as an exact fraction in (0, 100]."""
    if isinstance(percent, bool):
        raise ValueError(f"percent={percent!r} must be a number in (0, 100]")
    try:
        # repr() of a float is its shortest decimal: 2.5 -> 5/2, 0.1 -> 1/10 exactly.
        value = Fraction(repr(percent)) if isinstance(percent, float) else Fraction(percent)
    except (TypeError, ValueError):
        raise ValueError(f"percent={percent!r} must be a number in (0, 100]") from None
    if not 0 < value <= 100:
        raise ValueError(f"percent={percent!r} must be in (0, 100]")
    return value


def _count_label_pairs(
    y: NDArray[np.float64], query_offsets: NDArray[np.int64]
) -> NDArray[np.int64]:
    """Pairs of documents with different labels per query, int64 (n_queries,).

    ``n (n - 1) / 2`` minus the pairs within each group of equal labels, from one sort:
    O(n log n) time and O(n) memory (a pairwise counting loop took minutes on one query
    of 70,000 documents, before any memory check could run).
    """
    sizes = np.diff(query_offsets)
    query_of_row = np.repeat(np.arange(sizes.shape[0]), sizes)
    order = np.lexsort((y, query_of_row))
    ys, qs = y[order], query_of_row[order]
    starts = np.flatnonzero(np.r_[True, (ys[1:] != ys[:-1]) | (qs[1:] != qs[:-1])])
    if ys.size == 0:
        starts = starts[:0]
    counts = np.diff(np.r_[starts, ys.size]).astype(np.int64)
    equal = np.zeros(sizes.shape[0], dtype=np.int64)
    np.add.at(equal, qs[starts], counts * (counts - 1) // 2)
    return sizes * (sizes - 1) // 2 - equal


# The pair buffers (two float64 per pair) may take at most this share of the memory this
# process may allocate (physical, cgroup limit, ulimit -v); a larger dataset is refused
# up front instead of being killed by the system.
_PAIR_MEMORY_SHARE = 2


def _pair_memory_limit() -> int:
    """Bytes the pair buffers may take: half of what this process may allocate
    (:func:`ltrboost._config.memory_budget`: physical memory, a cgroup memory limit,
    ``ulimit -v``)."""
    return _config.usable_memory() // _PAIR_MEMORY_SHARE


def _check_pair_memory(n_pairs: NDArray[np.int64], query_offsets: NDArray[np.int64]) -> None:
    """Raise ValueError when the pair buffers (16 bytes a pair) would not fit."""
    total = int(n_pairs.sum())
    need = 16 * total
    limit = _pair_memory_limit()
    if need > limit:
        q = int(np.argmax(n_pairs))
        lo, hi = int(query_offsets[q]), int(query_offsets[q + 1])
        # by position here (no ids); rows_located names it by its qid where known
        words = f"{query_words(q)} (rows {lo} to {hi - 1})"
        raise query_error(
            f"pair_precision needs {need / 2**30:.1f} GiB for the {total} pairs of "
            f"documents with different labels (16 bytes a pair; {words} alone has "
            f"{int(n_pairs[q])} pairs of {hi - lo} documents), over half of "
            f"{_config.memory_budget()[1]} ({limit / 2**30:.1f} GiB); evaluate it on "
            "fewer or shorter queries",
            q,
            words,
        )


def _n_taken(percent: Fraction, n_pairs: int) -> int:
    """``ceil(percent * n_pairs / 100)``, exactly (Python integers)."""
    return -((-percent.numerator * n_pairs) // (100 * percent.denominator))


# --- kernels ---


def _precision_all_queries(scores, relevant, query_offsets, k, order, scratch, out):
    # scores: IN float64 (n_samples,); relevant: IN uint8 (n_samples,)
    # query_offsets: IN int64 (n_queries + 1,); k >= 1; order, scratch: clobbered
    # (n_samples,); out: OUT float64 (n_queries,).  Ranked by the metrics' one ranking
    # kernel; no sort (and no parfor) compiled here.
    over_ranked_prefixes(
        _precision_queries, scores, query_offsets, k, order, scratch, out, relevant,
        query_offsets, k,
    )  # fmt: skip


@kernel
def _precision_queries(q0, q1, relevant, query_offsets, k, order, n_ranked, out):
    # queries q0..q1-1 of _precision_all_queries (see _numba.over_queries): P@k, the
    # relevant documents of the ranked prefix order[lo:lo + n_ranked[q]] divided by k
    for q in range(q0, q1):
        lo = query_offsets[q]
        hits = 0
        for r in range(n_ranked[q]):
            hits += relevant[lo + order[lo + r]]
        out[q] = hits / k


# The query loops below run on Python threads (_numba.over_queries), not as parfors:
# a parfor starts Numba's OpenMP (GNU libgomp) workers, after which a forked child
# (multiprocessing's default start method on Linux) that evaluates the metric again
# was killed by SIGTERM ("fork() called from a process already using GNU OpenMP").
def _pair_margins_all_queries(scores, y, query_offsets, pair_offsets, margins):
    # scores, y: IN float64 (n_samples,); query_offsets, pair_offsets: IN int64
    # margins: OUT float64 (n_pairs,), s(higher label) - s(lower label), pairs of query
    #          q at pair_offsets[q]:pair_offsets[q + 1] in (i < j) enumeration order
    over_queries(
        _pair_margins_queries, query_offsets, scores, y, query_offsets, pair_offsets, margins
    )


@kernel
def _pair_margins_queries(q0, q1, scores, y, query_offsets, pair_offsets, margins):
    # queries q0..q1-1 of _pair_margins_all_queries
    for q in range(q0, q1):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        p = pair_offsets[q]
        for i in range(lo, hi):
            for j in range(i + 1, hi):
                # equal scores are a tie, margin 0 (inf - inf would be NaN and drop
                # the pair from every count)
                d = 0.0 if scores[i] == scores[j] else scores[i] - scores[j]
                if y[i] > y[j]:
                    margins[p] = d
                    p += 1
                elif y[i] < y[j]:
                    margins[p] = -d
                    p += 1


@kernel
def _count_at_cut(margins_q, cut, counts_q):
    """Pairs of one query above / at the cut value of |margin|, and the correct ones.

    margins_q : ndarray (m,), float64 # IN;  counts_q : ndarray (4,), int64 # OUT
    """
    above = 0
    above_correct = 0
    tied = 0
    tied_correct = 0
    for p in range(margins_q.shape[0]):
        m = margins_q[p]
        a = abs(m)
        correct = 1 if m > 0.0 else 0  # equal scores (m == 0) contradict the labels
        if a > cut:
            above += 1
            above_correct += correct
        elif a == cut:
            tied += 1
            tied_correct += correct
    counts_q[_ABOVE] = above
    counts_q[_ABOVE_CORRECT] = above_correct
    counts_q[_TIED] = tied
    counts_q[_TIED_CORRECT] = tied_correct


def _count_pairs_at_cut_all_queries(margins, pair_offsets, cut, counts):
    # margins: IN float64 (n_pairs,); pair_offsets: IN int64 (n_queries + 1,)
    # counts: OUT int64 (n_queries, 4), columns _ABOVE.._TIED_CORRECT
    over_queries(_count_pairs_at_cut_queries, pair_offsets, margins, pair_offsets, cut, counts)


@kernel
def _count_pairs_at_cut_queries(q0, q1, margins, pair_offsets, cut, counts):
    # queries q0..q1-1 of _count_pairs_at_cut_all_queries (blocks of about equal pairs)
    for q in range(q0, q1):
        _count_at_cut(margins[pair_offsets[q] : pair_offsets[q + 1]], cut, counts[q])


@kernel
def _pooled_fraction(counts, weights, n_taken):
    """Weighted fraction of correct pairs among the ``n_taken`` largest |margin|s.

    Serial, in query order, so the float sums do not depend on the thread count.  The
    boundary group (|margin| == cut) is taken in proportion
    ``(n_taken - above) / tied``.
    Returns NaN when the taken pairs carry no weight.
    """
    above = 0
    tied = 0
    for q in range(counts.shape[0]):
        above += counts[q, _ABOVE]
        tied += counts[q, _TIED]
    share = (n_taken - above) / tied if tied > 0 else 0.0
    numerator = 0.0
    denominator = 0.0
    for q in range(counts.shape[0]):
        w = weights[q]
        numerator += w * (counts[q, _ABOVE_CORRECT] + share * counts[q, _TIED_CORRECT])
        denominator += w * (counts[q, _ABOVE] + share * counts[q, _TIED])
    if denominator == 0.0:
        return np.nan
    return numerator / denominator


def _pair_precision_all_queries(margins, pair_offsets, n_taken, empty_query_score, abs_buffer, out):
    # margins: IN float64 (n_pairs,); pair_offsets: IN int64 (n_queries + 1,)
    # n_taken: IN int64 (n_queries,), ceil(K% of the query's pairs)
    # abs_buffer: clobbered float64 (n_pairs,); out: OUT float64 (n_queries,)
    over_queries(
        _pair_precision_queries,
        pair_offsets,
        margins,
        pair_offsets,
        n_taken,
        empty_query_score,
        abs_buffer,
        out,
    )


@kernel
def _pair_precision_queries(
    q0, q1, margins, pair_offsets, n_taken, empty_query_score, abs_buffer, out
):
    # queries q0..q1-1 of _pair_precision_all_queries
    for q in range(q0, q1):
        lo = pair_offsets[q]
        hi = pair_offsets[q + 1]
        m = hi - lo
        if m == 0:
            out[q] = empty_query_score  # no pair with different labels
            continue
        abs_q = abs_buffer[lo:hi]
        for p in range(m):
            abs_q[p] = abs(margins[lo + p])
        abs_q.sort()  # ascending, in place
        cut = abs_q[m - n_taken[q]]
        above = 0
        above_correct = 0
        tied = 0
        tied_correct = 0
        for p in range(lo, hi):
            a = abs(margins[p])
            correct = 1 if margins[p] > 0.0 else 0
            if a > cut:
                above += 1
                above_correct += correct
            elif a == cut:
                tied += 1
                tied_correct += correct
        share = (n_taken[q] - above) / tied
        out[q] = (above_correct + share * tied_correct) / n_taken[q]


# --- references ---


def _precision_reference(scores, y, query_offsets, *, k, relevance_threshold=1.0):
    """Plain NumPy P@k per query over the stable ranking."""
    out = np.empty(len(query_offsets) - 1)
    for q, (lo, hi) in enumerate(pairwise(query_offsets)):
        rel = y[lo:hi] >= relevance_threshold
        ranked = rel[np.argsort(-scores[lo:hi], kind="stable")]
        out[q] = np.count_nonzero(ranked[:k]) / k
    return out


def _pairs_reference(scores, y, query_offsets):
    """Per query: margins and query index of all pairs with different labels."""
    margins, owners = [], []
    for q, (lo, hi) in enumerate(pairwise(query_offsets)):
        i, j = np.triu_indices(hi - lo, k=1)
        dy = y[lo:hi][i] - y[lo:hi][j]
        keep = dy != 0
        m = np.sign(dy[keep]) * (scores[lo:hi][i[keep]] - scores[lo:hi][j[keep]])
        margins.append(m)
        owners.append(np.full(m.size, q))
    return margins, owners


def _top_fraction_correct(margins, weights, percent):
    """Weighted correct fraction among the top ``percent``% pairs by |margin|.

    The boundary group of equal |margin| is shared in proportion (see the module doc).
    """
    n = margins.size
    n_taken = math.ceil(Fraction(percent) * n / 100)
    desc = np.sort(np.abs(margins))[::-1]
    cut = desc[n_taken - 1]
    above = np.abs(margins) > cut
    tied = np.abs(margins) == cut
    share = (n_taken - above.sum()) / tied.sum()
    correct = margins > 0
    numerator = np.sum(weights * (above & correct)) + share * np.sum(weights * (tied & correct))
    denominator = np.sum(weights * above) + share * np.sum(weights * tied)
    return numerator / denominator


def _pair_precision_reference(
    scores, y, query_offsets, *, percent=100, empty_query_score=1.0, query_weights=None
):
    """Pooled pair precision at K% (seed 004) from explicit pair lists."""
    margins, owners = _pairs_reference(scores, y, query_offsets)
    all_margins = np.concatenate(margins)
    if all_margins.size == 0:
        return empty_query_score
    w = np.ones(len(query_offsets) - 1) if query_weights is None else query_weights
    value = _top_fraction_correct(all_margins, w[np.concatenate(owners)], percent)
    return empty_query_score if np.isnan(value) else float(value)


def _pair_precision_per_query_reference(
    scores, y, query_offsets, *, percent=100, empty_query_score=1.0
):
    """Pair precision at K% inside each query, from explicit pair lists."""
    margins, _ = _pairs_reference(scores, y, query_offsets)
    return np.array(
        [
            empty_query_score if m.size == 0 else _top_fraction_correct(m, np.ones(m.size), percent)
            for m in margins
        ]
    )

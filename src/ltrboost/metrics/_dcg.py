"""Shared ranking engine: ranking order, gains, discounts, ideal DCG and input checks.

One engine serves both the evaluation metrics and the LambdaMART |delta NDCG|
(LightGBM's ``DCGCalculator`` and XGBoost's ``NDCGCache`` are shared the same way), so
the objective optimises exactly the number the metric reports.

Conventions (documented once, here; every metric and objective follows them):

* Data model: ``scores`` and labels ``y`` are float64 arrays of shape (n_samples,);
  ``query_offsets`` is int64 of shape (n_queries + 1,) and query ``q`` owns rows
  ``query_offsets[q]:query_offsets[q + 1]``.
* **Ranking of a query**: its documents sorted by score, highest first; documents with
  equal scores keep their input order (a stable sort of ``-score``, LightGBM's
  ``std::stable_sort`` convention).  :func:`rank_order` and the kernels
  :func:`rank_order_one_query` (full order) / :func:`_top_k_order_one_query` (top k)
  are the only implementations of this rule.  Because of it, a metric can depend on the
  input order of tied documents, and only on that.
* gain ``"exp"``: ``2^y - 1`` (Burges); gain ``"linear"``: ``y`` (Jarvelin &
  Kekalainen).
* discount at 0-based rank ``r``: ``1 / log2(r + 2)`` (``1 / log2(i + 1)`` for 1-based
  ``i``, seed 003 and seed 004's DCG-5).
* ``k = 0`` means "no cut-off" (the whole list); a ``k`` larger than a query is the
  whole query.
* Labels must be finite and non-negative; scores must not be NaN (infinite scores rank
  first or last, as ordinary numbers would).  Scores written as text are refused (as
  features are); labels written as text are read as numbers (as ``fit`` reads them).
"""

from __future__ import annotations

import math
import numbers
from itertools import pairwise

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ltrboost._config import INDEX_DTYPE, MAX_EXP_GAIN_LABEL, QUERY_OFFSET_DTYPE
from ltrboost._numba import inline_kernel, kernel, over_queries
from ltrboost.dataset import LTRInputError, check_labels

GAINS = ("exp", "linear")


def label_gains(y: NDArray[np.floating], gain: str = "exp") -> NDArray[np.float64]:
    """Per-document gain of label ``y``: ``2^y - 1`` (``"exp"``) or ``y``
    (``"linear"``).

    Raises :class:`~ltrboost.dataset.LTRInputError` (a ValueError) naming the first row
    (``.row``) whose label the exponential gain cannot represent exactly.
    """
    y = np.asarray(y, dtype=np.float64)
    if gain == "exp":
        if y.size and float(np.max(y)) > MAX_EXP_GAIN_LABEL:
            row = int(np.flatnonzero(y > MAX_EXP_GAIN_LABEL)[0])
            raise LTRInputError(
                f"label {y[row]:g} is too large for the exponential gain 2^y-1 (at most "
                f"{MAX_EXP_GAIN_LABEL}); use gain='linear' or rescale the labels",
                row=row,
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


def rank_order(scores: NDArray[np.float64], query_offsets: NDArray[np.int64]) -> NDArray[np.int64]:
    """Row indices of every query's documents in ranked order (the ranking convention).

    Parameters
    ----------
    scores : ndarray of shape (n_samples,), dtype=float64
        Model scores; must not contain NaN.
    query_offsets : ndarray of shape (n_queries + 1,), dtype=int64
        Query boundaries.

    Returns
    -------
    order : ndarray of shape (n_samples,), dtype=int64
        ``order[query_offsets[q]:query_offsets[q + 1]]`` are the global row indices of
        query ``q`` sorted by score descending, ties in input order.
    """
    query_offsets, n_samples = _validate_query_offsets(query_offsets, None)
    n_scores = np.shape(scores)[0] if np.ndim(scores) == 1 else None
    if n_scores is not None and n_scores != n_samples:  # no y here to compare with
        raise ValueError(
            f"query_offsets[-1]={n_samples} must equal the number of scores, but scores "
            f"has length {n_scores}"
        )
    scores = _validate_scores(scores, n_samples)
    local = np.empty(n_samples, dtype=INDEX_DTYPE)
    scratch = np.empty(n_samples, dtype=INDEX_DTYPE)
    _rank_order_all_queries(scores, query_offsets, local, scratch)
    starts = np.repeat(query_offsets[:-1], np.diff(query_offsets))
    return starts + local


def _validate_query_offsets(
    query_offsets: ArrayLike, n_samples: int | None
) -> tuple[NDArray[np.int64], int]:
    """Check query boundaries and return them as C-contiguous int64 with ``n_samples``.

    ``query_offsets`` must be 1-D integers, start at 0, never decrease and end at
    ``n_samples`` (when given).  Empty queries (two equal offsets) are allowed; metrics
    score them like queries without relevant documents.
    """
    qo = np.asarray(query_offsets)
    if qo.ndim != 1 or qo.shape[0] < 2:
        raise ValueError(
            f"query_offsets must be 1-D with n_queries + 1 >= 2 entries, got shape {qo.shape}"
        )
    if qo.dtype.kind not in "iu" and not (
        qo.dtype.kind == "f" and np.isfinite(qo).all() and (qo == np.round(qo)).all()
    ):
        raise ValueError(f"query_offsets must hold integers, got dtype {qo.dtype}")
    qo = np.ascontiguousarray(qo, dtype=QUERY_OFFSET_DTYPE)
    if qo[0] != 0:
        raise ValueError(f"query_offsets[0]={int(qo[0])} must be 0")
    steps = np.diff(qo)
    if steps.size and int(steps.min()) < 0:
        q = int(np.flatnonzero(steps < 0)[0])
        raise ValueError(
            f"query_offsets must be non-decreasing, but query_offsets[{q + 1}]="
            f"{int(qo[q + 1])} < query_offsets[{q}]={int(qo[q])}"
        )
    if n_samples is not None and int(qo[-1]) != n_samples:
        raise ValueError(
            f"query_offsets[-1]={int(qo[-1])} must equal the number of labels, "
            f"but y has length {n_samples}"
        )
    return qo, int(qo[-1])


def _validate_labels(y: ArrayLike) -> NDArray[np.float64]:
    """Labels as a C-contiguous float64 1-D array; refuses NaN, inf and negatives.

    The check is :func:`ltrboost.dataset.check_labels`, the one every objective uses.
    """
    return check_labels(y, None, nonnegative=True)


def _validate_scores(scores: ArrayLike, n_samples: int) -> NDArray[np.float64]:
    """Scores as a C-contiguous float64 1-D array of length ``n_samples``, without NaN.

    Allocation-free when ``scores`` already is float64 and contiguous (the
    early-stopping path): the NaN scan is a single sum, refined only when it is NaN.
    """
    if np.iscomplexobj(scores):  # float64 would drop the imaginary part, as for labels
        dtype = np.asarray(scores).dtype
        raise ValueError(f"scores are complex ({dtype}); a ranking needs real scores")
    if not (isinstance(scores, np.ndarray) and scores.dtype.kind == "f"):
        _refuse_text_scores(scores)
    try:
        scores = np.ascontiguousarray(scores, dtype=np.float64)
    except OverflowError:  # a Python int beyond float64 (the labels' check names it too)
        raise ValueError("scores must be real numbers within float64 (at most ±1.8e308)") from None
    except (TypeError, ValueError) as e:
        raise ValueError(f"scores must be real numbers ({e})") from None
    if scores.ndim != 1:
        raise ValueError(f"scores must be 1-D of shape (n_samples,), got shape {scores.shape}")
    if scores.shape[0] != n_samples:
        raise ValueError(f"scores has length {scores.shape[0]} but y has length {n_samples}")
    # sum() is NaN iff a score is NaN or both +inf and -inf occur (finite scores that
    # overflow it make inf, not NaN, and must not warn); only then look closer.
    with np.errstate(invalid="ignore", over="ignore"):
        total = scores.sum()
    if np.isnan(total) and np.isnan(scores).any():
        row = int(np.flatnonzero(np.isnan(scores))[0])
        raise ValueError(f"scores[{row}] is NaN; a ranking needs comparable scores")
    return scores


def _refuse_text_scores(scores: ArrayLike) -> None:
    """Refuse scores written as text (a string or bytes array, or an object array or a
    list holding one), naming the first: NumPy parsed ``"0.5"``, ``" 1e3"`` and
    ``"inf"`` silently, whereas a model's scores are numbers and features written as
    text are refused (:func:`ltrboost.dataset.make_dataset`).  Labels written as text
    are read, as ``fit``, ``Ranker.score`` and ``make_scorer`` read them."""
    try:
        arr = np.asarray(scores)
    except (TypeError, ValueError):  # ragged: the float conversion names it
        return
    if arr.ndim != 1 or not arr.size:
        return
    if arr.dtype.kind in "US":
        row = 0
    elif arr.dtype.kind == "O":
        is_text = np.frompyfunc(lambda v: isinstance(v, str | bytes), 1, 1)(arr).astype(bool)
        if not is_text.any():
            return  # numbers in an object array (a mixed DataFrame's to_numpy()): read
        row = int(np.flatnonzero(is_text)[0])
    else:
        return
    value = arr[row]
    value = value.item() if isinstance(value, np.generic) else value
    raise ValueError(
        f"scores[{row}]={value!r} is not a number (scores written as text are refused, "
        "as features are: convert them first, e.g. np.asarray(scores, dtype=float))"
    )


def _validate_k(k: int) -> int:
    """A cut-off: an integer >= 0 (0 = whole list)."""
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 0:
        raise ValueError(f"k={k!r} must be an integer >= 0 (0 means no cut-off)")
    return int(k)


def _is_real_number(value: object) -> bool:
    """A real number (NumPy's included), not a bool or a string: what training
    parameters accept."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)


def _validate_empty_query_score(value: float) -> float:
    """The score of a query the metric is undefined on: any finite number."""
    if not _is_real_number(value):
        raise ValueError(f"empty_query_score={value!r} must be a number (usually 1.0 or 0.0)")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"empty_query_score={value!r} must be finite")
    return v


def _binary_relevance(
    y: NDArray[np.float64], query_offsets: NDArray[np.int64], relevance_threshold: float
) -> tuple[NDArray[np.uint8], NDArray[np.int64]]:
    """Binary relevance ``y >= relevance_threshold`` (uint8), relevant count per query.

    The definition of "relevant" shared by AP, RR and P@k (ranx's ``rel_lvl``).
    """
    try:
        threshold = float(relevance_threshold)
    except (TypeError, ValueError):
        raise ValueError(f"relevance_threshold={relevance_threshold!r} must be a number") from None
    if not math.isfinite(threshold):
        raise ValueError(f"relevance_threshold={relevance_threshold!r} must be finite")
    rel = (y >= threshold).astype(np.uint8)
    cumulative = np.zeros(y.shape[0] + 1, dtype=np.int64)
    np.cumsum(rel, out=cumulative[1:])
    n_relevant = cumulative[query_offsets[1:]] - cumulative[query_offsets[:-1]]
    return rel, n_relevant


# --- kernels ---


@inline_kernel
def discount(rank):
    """Discount of 0-based rank ``rank``: 1 / log2(rank + 2)."""
    return 1.0 / np.log2(rank + 2.0)


def ranked_prefix_all_queries(scores, query_offsets, k, order, scratch, n_ranked):
    """The first ``kk = min(k, n)`` documents of every query's ranking (``n`` when
    ``k <= 0``): local positions in ``order[lo:lo + kk]``, ``n_ranked[q] = kk``.  Small
    cut-offs select (:func:`_top_k_order_one_query`), others sort fully
    (:func:`rank_order_one_query`); both follow the ranking convention, so callers need
    not care which ran.

    scores: IN float64 (n_samples,); query_offsets: IN int64 (n_queries + 1,); k: int
    (<= 0: whole list); order, scratch: OUT / clobbered int32 (n_samples,); n_ranked:
    OUT int64 (n_queries,).  The metric kernels read ``order`` instead of ranking
    themselves, so the sort routines are compiled into this one kernel only (inside
    each metric they were compiled and optimised again, ~0.5 s each).
    """
    over_queries(
        _ranked_prefix_queries, query_offsets, scores, query_offsets, k, order, scratch,
        n_ranked,
    )  # fmt: skip


def over_ranked_prefixes(kernel_range, scores, query_offsets, k, order, scratch, out, *args):
    """Rank every query's first ``min(k, n)`` documents (:func:`ranked_prefix_all_queries`)
    and run ``kernel_range(q0, q1, *args, order, n_ranked, out)`` over the queries
    (:func:`ltrboost._numba.over_queries`): the driver of every metric kernel that reads
    a ranked prefix.

    ``order``, ``scratch``: clobbered int32 (n_samples,); ``out``: the kernel's output;
    ``n_ranked`` (int64 (n_queries,), allocated here) holds each prefix's length.
    """
    n_ranked = np.empty(query_offsets.shape[0] - 1, dtype=np.int64)
    ranked_prefix_all_queries(scores, query_offsets, k, order, scratch, n_ranked)
    over_queries(kernel_range, query_offsets, *args, order, n_ranked, out)


def rerank_all_queries(scores, query_offsets, order, scratch, n_ranked):
    """:func:`ranked_prefix_all_queries` with no cut-off, starting from a ranking.

    ``order`` (IN/OUT) holds, per query, a permutation of its local positions -- the
    ranking of earlier scores, say the previous boosting round's -- and is re-sorted
    in place by ``scores`` (:func:`_rerank_one_query`).  The result is the ranking that
    :func:`ranked_prefix_all_queries` returns for any starting permutation (the order
    is total: score descending, then position); only the time depends on how far the
    start is from it.
    """
    over_queries(
        _ranked_prefix_queries, query_offsets, scores, query_offsets, RERANK, order,
        scratch, n_ranked,
    )  # fmt: skip


# ``k`` of _ranked_prefix_queries meaning "order holds a ranking to re-sort".
RERANK = -1
# A re-sort that has moved more than this many documents per document (plus a small
# allowance) stops and sorts the query from scratch: a permutation far from the
# ranking (the first rounds, a big step) costs the merge sort's O(n log n), not
# insertion's O(n^2).  Between boosting rounds LambdaMART's rankings are 1.5-3 moves
# per document apart (500k synthetic documents, 120 per query).
_RERANK_MOVES_PER_DOC = 8


@kernel
def _ranked_prefix_queries(q0, q1, scores, query_offsets, k, order, scratch, n_ranked):
    # queries q0..q1-1 of ranked_prefix_all_queries / rerank_all_queries (k == RERANK)
    # (see _numba.over_queries).  The three routines are called here directly, not
    # through a shared inline helper: each level of Numba inlining is typed again, and
    # the extra level cost ~0.35 s of this kernel's ~2.3 s first compilation.
    for q in range(q0, q1):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        n = hi - lo
        if k == RERANK and _rerank_one_query(scores[lo:hi], order[lo:hi]):
            n_ranked[q] = n
        elif 0 < k <= _TOP_K_SELECT_MAX:
            n_ranked[q] = _top_k_order_one_query(scores[lo:hi], k, order[lo:hi])
        else:
            rank_order_one_query(scores[lo:hi], order[lo:hi], scratch[lo:hi])
            n_ranked[q] = n if (k <= 0 or k > n) else k


@inline_kernel
def _rerank_one_query(scores_q, order):
    """Insertion sort of ``order`` (IN/OUT, a permutation of ``0..n-1``) into the
    ranking of ``scores_q`` (score descending, ties by position); O(n + moves).

    Returns False, with ``order`` some permutation, once the moves pass
    ``_RERANK_MOVES_PER_DOC`` per document: the caller then sorts from scratch.
    """
    n = scores_q.shape[0]
    budget = _RERANK_MOVES_PER_DOC * n + 64
    moves = 0
    for i in range(1, n):
        doc = order[i]
        s = scores_q[doc]
        j = i - 1
        while j >= 0:
            prev = order[j]
            sp = scores_q[prev]
            # prev stays ahead of doc: a higher score, or the same one and an earlier
            # position (the ranking convention)
            if sp > s or (sp == s and prev < doc):
                break
            order[j + 1] = prev
            j -= 1
        order[j + 1] = doc
        moves += i - 1 - j
        if moves > budget:
            return False
    return True


def _inverse_max_dcg_all_queries(gains, query_offsets, k, out):
    """IDCG@k of each query (gains sorted descending, discounted; k <= 0: no cut-off)
    inverted, 0 where it is 0.

    gains: IN float64 (n_samples,); query_offsets: IN int64; out: OUT float64
    (n_queries,).  Sorted by this module's own ranking routine rather than ``np.sort``:
    the result is the same (the ideal order of equal gains does not matter) and Numba's
    generic sort is several seconds of first-run compilation.
    """
    n = gains.shape[0]
    order = np.empty(n, dtype=INDEX_DTYPE)
    scratch = np.empty(n, dtype=INDEX_DTYPE)
    over_ranked_prefixes(
        _inverse_max_dcg_queries, gains, query_offsets, k, order, scratch, out, gains,
        query_offsets,
    )  # fmt: skip


@kernel
def _inverse_max_dcg_queries(q0, q1, gains, query_offsets, order, n_ranked, out):
    # queries q0..q1-1 of _inverse_max_dcg_all_queries (see _numba.over_queries)
    for q in range(q0, q1):
        lo = query_offsets[q]
        m = 0.0
        for r in range(n_ranked[q]):
            m += gains[lo + order[lo + r]] / np.log2(r + 2.0)
        out[q] = 1.0 / m if m > 0.0 else 0.0


# Runs up to this length are insertion-sorted before merging: fewer moves than merging
# single elements, and most queries (LETOR: tens of documents) never reach the merge.
_INSERTION_RUN = 16


@inline_kernel
def _insertion_sort_desc(scores_q, order, lo, hi):
    """Sort ``order[lo:hi]`` by ``scores_q`` descending, in place (stable insertion)."""
    for i in range(lo + 1, hi):
        doc = order[i]
        s = scores_q[doc]
        j = i - 1
        # Strict '<': an equal score never moves past an earlier one -> stable.
        while j >= lo and scores_q[order[j]] < s:
            order[j + 1] = order[j]
            j -= 1
        order[j + 1] = doc


@inline_kernel
def rank_order_one_query(scores_q, order, scratch):
    """Ranking of one query: ``order`` <- positions by score desc, ties by position.

    Parameters
    ----------
    scores_q : ndarray of shape (n,), dtype=float64      # IN, no NaN
    order : ndarray of shape (n,), integer                # OUT, local positions
    scratch : ndarray of shape (n,), same dtype as order  # clobbered

    A bottom-up merge sort (stable, no allocation): runs of ``_INSERTION_RUN`` are
    insertion-sorted, then merged in passes that alternate between ``order`` and
    ``scratch``.  Taking the left element unless the right one is *strictly* greater
    keeps equal scores in input order, which is the ranking convention of this module.
    """
    n = scores_q.shape[0]
    for i in range(n):
        order[i] = i
    for lo in range(0, n, _INSERTION_RUN):
        _insertion_sort_desc(scores_q, order, lo, min(lo + _INSERTION_RUN, n))
    if n <= _INSERTION_RUN:
        return
    src = order
    dst = scratch
    in_order = True  # whether the sorted runs currently live in `order`
    width = _INSERTION_RUN
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i = lo
            j = mid
            o = lo
            while i < mid and j < hi:
                if scores_q[src[j]] > scores_q[src[i]]:
                    dst[o] = src[j]
                    j += 1
                else:
                    dst[o] = src[i]
                    i += 1
                o += 1
            while i < mid:
                dst[o] = src[i]
                i += 1
                o += 1
            while j < hi:
                dst[o] = src[j]
                j += 1
                o += 1
        src, dst = dst, src
        in_order = not in_order
        width *= 2
    if not in_order:
        for i in range(n):
            order[i] = scratch[i]


# Cut-offs up to this use a bounded insertion (top-k selection) instead of a full sort:
# O(n + k * insertions) against O(n log n); the common ndcg@10 / err@10 early-stopping
# metrics touch only the first few ranks.
_TOP_K_SELECT_MAX = 32


@inline_kernel
def _top_k_order_one_query(scores_q, k, order):
    """The first ``min(k, n)`` positions of the ranking into ``order`` (k >= 1).

    Same convention as :func:`rank_order_one_query` (score desc, ties by position):
    a later document enters the kept prefix only with a *strictly* higher score than its
    last member, and is inserted after every kept document with a score >= its own.
    Returns ``min(k, n)``.
    """
    n = scores_q.shape[0]
    kk = min(k, n)
    for i in range(kk):
        order[i] = i
    # np.int64(0), not 0: a literal 0 would compile a second specialisation.
    _insertion_sort_desc(scores_q, order, np.int64(0), kk)
    if kk == 0:
        return kk
    for i in range(kk, n):
        s = scores_q[i]
        if s > scores_q[order[kk - 1]]:
            j = kk - 1
            while j > 0 and scores_q[order[j - 1]] < s:
                order[j] = order[j - 1]
                j -= 1
            order[j] = i
    return kk


def _rank_order_all_queries(scores, query_offsets, order, scratch):
    """scores: IN float64 (n_samples,); query_offsets: IN int64 (n_queries + 1,);
    order: OUT int32 (n_samples,), local positions per query; scratch: clobbered.  The
    whole ranking of every query: the ranking kernel with no cut-off (k = 0)."""
    n_ranked = np.empty(query_offsets.shape[0] - 1, dtype=np.int64)
    ranked_prefix_all_queries(scores, query_offsets, 0, order, scratch, n_ranked)


# --- references ---


def _inverse_max_dcg_reference(gains, query_offsets, k):
    out = []
    for lo, hi in pairwise(query_offsets):
        g = np.sort(gains[lo:hi])[::-1]
        if k > 0:
            g = g[:k]
        m = float(np.sum(g / np.log2(np.arange(g.size) + 2.0)))
        out.append(1.0 / m if m > 0 else 0.0)
    return np.asarray(out, dtype=np.float64)


def _rank_order_reference(scores, query_offsets):
    """Global row indices in ranked order: ``np.lexsort`` on (query, -score, row)."""
    n = scores.shape[0]
    query_of_row = np.repeat(np.arange(query_offsets.shape[0] - 1), np.diff(query_offsets))
    # lexsort: last key is primary -> by query, then by score descending, then by row.
    return np.lexsort((np.arange(n), -scores, query_of_row)).astype(np.int64)

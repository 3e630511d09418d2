"""Preference pairs of the objectives that take them: label pairs, explicit pairs, tau.

Shared by :mod:`.ranknet` / :mod:`.rankboost` (through :mod:`.pair_engine`) and by
:mod:`.gbrank` / :mod:`.qbrank`.

Pairs
-----
A pair ``(x, y)`` says that document ``x`` is preferred to ``y`` (seed 002's
``x_i > y_i``); both documents belong to one query.

* **Label pairs**: every ``(x, y)`` of a query with ``label_x > label_y``.  GBRank and
  QBRank walk all of them (no truncation: both seeds use every pair) with
  :func:`label_pair_buffers`, i.e. :func:`.pair_selection.enumerate_pairs_one_query`
  with method ``"all"``: the pairs the other pairwise objectives use.  Pair weight 1.
* **Explicit pairs** from ``data.pairs`` (clicks, editorial preferences), checked by
  :func:`ltrboost.dataset.check_preference_pairs` and grouped by query by
  :func:`explicit_pairs`; pair weight ``pairs.weight`` (default 1).  They add to the
  label pairs (a pair present in both counts twice).

``use_label_pairs=None`` (default) uses label pairs whenever the dataset has labels;
``False`` trains on the explicit pairs alone.

Margin ``tau`` (GBRank, QBRank)
-------------------------------
A positive constant, or ``"grade_difference"``: ``tau = label_x - label_y`` for label
pairs (seed 004: "the absolute grade difference ... if it is converted from labeled
data") and ``tau = 1`` for explicit pairs, whose degree of preference is unknown (seed
004: "Otherwise, we simply set it to be 1.0").

Weights
-------
Per-document weights ``nu_d`` multiply each document's gradient and hessian after the
per-query term (LightGBM's convention, as everywhere in the package).  In a loss a pair
is weighted by ``omega * (nu_x + nu_y) / 2`` (``omega`` = pair weight), the rule of the
pairwise engine; with one weight per query the two agree.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ltrboost._numba import kernel
from ltrboost.dataset import RankingDataset, check_labels, check_preference_pairs
from ltrboost.objectives.base import dataset_cached, doc_weights
from ltrboost.objectives.pair_selection import (
    PAIR_ALL,
    check_query_pair_buffer,
    enumerate_pairs_one_query,
    has_two_labels,
    max_pairs_one_query,
)
from ltrboost.params import ParameterError

TAU_GRADE_DIFFERENCE = "grade_difference"
# Margin of an explicit pair under tau="grade_difference" (seed 004: "Otherwise, we
# simply set it to be 1.0").
EXPLICIT_PAIR_TAU = 1.0


# --------------------------------------------------------------------------------------
# explicit pairs
# --------------------------------------------------------------------------------------


def no_explicit_pairs(n_queries: int) -> tuple[NDArray[Any], ...]:
    """The CSR arrays of :func:`explicit_pairs` for a dataset without explicit pairs."""
    return (
        np.zeros(n_queries + 1, dtype=np.int64),
        np.zeros(0, dtype=np.int32),
        np.zeros(0, dtype=np.int32),
        np.zeros(0, dtype=np.float64),
    )


def explicit_pairs(
    data: RankingDataset,
) -> tuple[NDArray[np.int64], NDArray[np.int32], NDArray[np.int32], NDArray[np.float64]]:
    """``data.pairs`` as CSR by query with rows local to their query (stable order).

    Returns ``(offsets, preferred, other, weight)``: pairs ``offsets[q]:offsets[q+1]``
    belong to query ``q``; ``preferred`` / ``other`` are int32 rows inside the query.
    The pairs are checked by :func:`ltrboost.dataset.check_preference_pairs`.
    """
    n_queries = data.n_queries
    pp = data.pairs
    if pp is None or len(pp) == 0:
        return no_explicit_pairs(n_queries)
    offsets = data.query_offsets
    pref, other, w, q_pref = check_preference_pairs(
        pp.preferred, pp.other, pp.weight, offsets, query_ids=data.query_ids
    )
    order = np.argsort(q_pref, kind="stable")
    xoff = np.zeros(n_queries + 1, dtype=np.int64)
    np.cumsum(np.bincount(q_pref, minlength=n_queries), out=xoff[1:])
    base = offsets[q_pref]
    return (
        xoff,
        np.ascontiguousarray((pref - base)[order], dtype=np.int32),
        np.ascontiguousarray((other - base)[order], dtype=np.int32),
        np.ascontiguousarray(w[order]),
    )


# --------------------------------------------------------------------------------------
# tau
# --------------------------------------------------------------------------------------


def check_tau(tau: Any) -> float | str:
    """A positive finite float, or ``"grade_difference"``; anything else is refused."""
    if isinstance(tau, str):
        if tau == TAU_GRADE_DIFFERENCE:
            return tau
        raise ValueError(f"tau={tau!r} must be a positive number or {TAU_GRADE_DIFFERENCE!r}")
    if isinstance(tau, bool | np.bool_) or not isinstance(tau, numbers.Real):
        raise ValueError(f"tau={tau!r} must be a positive number or {TAU_GRADE_DIFFERENCE!r}")
    if not (math.isfinite(tau) and tau > 0):
        raise ValueError(f"tau={tau} must be a positive finite number")
    return float(tau)


def tau_codes(tau: float | str) -> tuple[float, bool]:
    """(constant tau, grade_difference flag) as the kernels take them."""
    if tau == TAU_GRADE_DIFFERENCE:
        return 0.0, True
    return float(tau), False


# --------------------------------------------------------------------------------------
# per-dataset constants of GBRank / QBRank
# --------------------------------------------------------------------------------------


class PreferenceConstants(NamedTuple):
    """Per-dataset arrays of the GBRank / QBRank kernels (cached in ``data.cache``)."""

    labels: NDArray[np.float64]  # (n_samples,); zeros when the dataset has no labels
    has_labels: bool  # the dataset has labels (QBRank's labelled part)
    use_label_pairs: bool  # label pairs are walked
    weights: NDArray[np.float32]  # (n_samples,) or (0,) meaning "all ones"
    xpair_offsets: NDArray[np.int64]  # (n_queries + 1,) explicit pairs, CSR by query
    xpair_i: NDArray[np.int32]  # preferred document, row inside its query
    xpair_j: NDArray[np.int32]  # other document, row inside its query
    xpair_w: NDArray[np.float64]  # pair weight omega


def check_pair_sources(
    data: RankingDataset,
    use_label_pairs: bool | None,
    objective: str,
    *,
    labels_suffice: bool = False,
) -> bool:
    """Whether label pairs are used; refuses a dataset that gives nothing to learn.

    ``labels_suffice``: the objective can learn from labels without any pair (QBRank's
    labelled part), so ``use_label_pairs=False`` without explicit pairs is accepted.
    """
    has_labels = data.y is not None
    use_labels = has_labels if use_label_pairs is None else use_label_pairs
    if use_labels and not has_labels:
        raise ParameterError(
            f"use_label_pairs=True but the dataset has no labels y; give labels or "
            f"use_label_pairs=False with explicit pairs ({objective})"
        )
    pp = data.pairs
    has_pairs = pp is not None and len(pp) > 0
    # a pair of weight 0 counts for nothing: pairs all of weight 0 are as none
    # (== 0, not "not > 0": a NaN or negative weight is the pair check's to name)
    weightless = has_pairs and pp.weight is not None and bool(np.all(np.asarray(pp.weight) == 0))
    if not use_labels and (weightless or not has_pairs) and not (labels_suffice and has_labels):
        none = (
            "every explicit preference pair has weight 0 (a pair of weight 0 counts for nothing)"
            if weightless
            else "there is no explicit preference pair"
        )
        if not has_labels:
            raise ParameterError(
                f"{objective} needs labels y or explicit preference pairs; the dataset has "
                + ("no labels, and " + none if weightless else "neither")
            )
        # labels, but use_label_pairs=False: only explicit pairs were to be learnt from
        why = "preference_weight=1 gives the labels no weight and " if objective == "qbrank" else ""
        raise ParameterError(
            f"{objective}: {why}use_label_pairs=False learns from explicit preference "
            f"pairs alone, and {none}; give pairs of positive weight, or drop "
            "use_label_pairs=False to learn from the label pairs"
        )
    return bool(use_labels)


def preference_constants(
    data: RankingDataset,
    use_label_pairs: bool | None,
    objective: str,
    *,
    labels_suffice: bool = False,
) -> PreferenceConstants:
    """Validate labels and explicit pairs once per dataset; the result is cached."""
    use_labels = check_pair_sources(data, use_label_pairs, objective, labels_suffice=labels_suffice)
    # the checks above run on every call: they depend on the objective, not the key
    return dataset_cached(
        data,
        ("preference_pairs", use_label_pairs),
        lambda: _preference_constants(data, use_labels, objective),
    )


def _preference_constants(
    data: RankingDataset, use_labels: bool, objective: str
) -> PreferenceConstants:
    has_labels = data.y is not None
    if has_labels:
        labels = check_labels(data.y, data.n_samples, context=f"objective {objective!r}")
    else:
        labels = np.zeros(data.n_samples, dtype=np.float64)
    if use_labels:
        check_query_pair_buffer(data, objective)  # label pairs: n^2/2 per query
    return PreferenceConstants(
        labels, has_labels, use_labels, doc_weights(data), *explicit_pairs(data)
    )


# --------------------------------------------------------------------------------------
# kernels
# --------------------------------------------------------------------------------------


@kernel
def label_pair_buffers(labels_q, use_labels):
    """The query's label pairs as document rows ``(a, b)``, ``a < b``, labels differing.

    labels_q: IN float64 (n,).  Returns (a, b, count); the pairs are
    :func:`enumerate_pairs_one_query`'s ``"all"`` pairs, taken in document order.
    """
    n = labels_q.shape[0]
    if not use_labels or n < 2 or not has_two_labels(labels_q):
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), 0
    # np.int64(...), not literals: a literal argument compiles a second specialisation
    # of the pair helpers (they are called with int64 variables elsewhere).
    method = np.int64(PAIR_ALL)
    size = max_pairs_one_query(n, method, np.int64(-1), np.int64(1))
    a = np.empty(size, dtype=np.int64)
    b = np.empty(size, dtype=np.int64)
    count = enumerate_pairs_one_query(
        labels_q, method, np.int64(-1), np.int64(1), None, a, b
    )  # seed None: "all" pairs only, the sampler is not compiled
    return a, b, count


# --------------------------------------------------------------------------------------
# references
# --------------------------------------------------------------------------------------


def preference_pairs_reference(
    labels: NDArray[np.float64] | None,
    query_offsets: NDArray[np.int64],
    use_label_pairs: bool,
    tau: float | str,
    preferred: NDArray[np.integer] | None = None,
    other: NDArray[np.integer] | None = None,
    pair_weight: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]:
    """Every pair as global rows: ``(x preferred, y other, omega, tau_p)`` (NumPy).

    Label pairs come from ``np.triu_indices`` per query (labels differing, oriented by
    label), then the explicit pairs as given.
    """
    xs, ys, om, taus = [], [], [], []
    grade = tau == TAU_GRADE_DIFFERENCE
    if use_label_pairs and labels is not None:
        y = np.asarray(labels, dtype=np.float64)
        for q in range(len(query_offsets) - 1):
            lo, hi = int(query_offsets[q]), int(query_offsets[q + 1])
            a, b = np.triu_indices(hi - lo, k=1)
            keep = y[lo + a] != y[lo + b]
            a, b = a[keep] + lo, b[keep] + lo
            first = y[a] > y[b]
            x, o = np.where(first, a, b), np.where(first, b, a)
            xs.append(x)
            ys.append(o)
            om.append(np.ones(x.size))
            taus.append(y[x] - y[o] if grade else np.full(x.size, float(tau)))
    if preferred is not None and len(preferred) > 0:
        p = np.asarray(preferred, dtype=np.int64)
        xs.append(p)
        ys.append(np.asarray(other, dtype=np.int64))
        om.append(
            np.ones(p.size) if pair_weight is None else np.asarray(pair_weight, dtype=np.float64)
        )
        taus.append(np.full(p.size, EXPLICIT_PAIR_TAU if grade else float(tau)))
    if not xs:
        e = np.zeros(0, dtype=np.int64)
        return e, e, np.zeros(0), np.zeros(0)
    return (
        np.concatenate(xs).astype(np.int64),
        np.concatenate(ys).astype(np.int64),
        np.concatenate(om),
        np.concatenate(taus),
    )


def refuse_contradicting_pairs(data: RankingDataset) -> None:
    """Raise ValueError when ``data.pairs`` holds ``a > b`` and ``b > a``.

    The CLI refuses such a pairs file naming its lines; ``train`` (so ``Ranker.fit``)
    calls this for the objectives that use pairs."""
    pp = data.pairs
    if pp is None or len(pp) == 0:
        return
    pref = np.asarray(pp.preferred)
    other = np.asarray(pp.other)
    if (
        pref.ndim != 1
        or other.shape != pref.shape
        or not np.issubdtype(pref.dtype, np.integer)
        or not np.issubdtype(other.dtype, np.integer)
        or pref.min() < 0
        or other.min() < 0
    ):
        return  # _explicit_pairs reports these problems
    pref = pref.astype(np.int64)
    other = other.astype(np.int64)
    n = max(int(data.n_samples), int(pref.max(initial=0)) + 1, int(other.max(initial=0)) + 1)
    key = pref * n + other
    rev = other * n + pref
    sorted_keys = np.sort(key)
    pos = np.minimum(np.searchsorted(sorted_keys, rev), sorted_keys.shape[0] - 1)
    contra = (sorted_keys[pos] == rev) & (pref != other)
    if contra.any():
        k = int(np.flatnonzero(contra)[0])
        j = int(np.flatnonzero(key == rev[k])[0])
        order = data.order  # name rows as the caller numbered them, not grouped
        a, b = (int(pref[k]), int(other[k])) if order is None else (order[pref[k]], order[other[k]])
        raise ValueError(
            f"pair {k} (row {a} preferred to row {b}) contradicts pair {j}"
            " (the reverse preference); drop one of them"
        )

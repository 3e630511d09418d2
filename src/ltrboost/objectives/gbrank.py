"""GBRank (seed 002): regression on pairwise targets with the averaged update.

This module also holds the preference-pair plumbing GBRank shares with
:mod:`ltrboost.objectives.qbrank`: which pairs a query contributes and the margin
``tau`` of each pair.

Pairs
-----
A pair ``(x, y)`` says that document ``x`` is preferred to ``y`` (seed 002's
``x_i > y_i``); both documents belong to one query.

* **Label pairs**: every ``(x, y)`` of a query with ``label_x > label_y`` (all pairs
  with different labels, no truncation: both seeds use every pair).  They are walked
  with :func:`ltrboost.objectives._pairs._enumerate_pairs_one_query` (method ``"all"``),
  so they are the pairs the other pairwise objectives use.  Pair weight 1.
* **Explicit pairs** from ``data.pairs`` (clicks, editorial preferences), checked and
  grouped by :func:`ltrboost.objectives.pairwise._explicit_pairs`; pair weight
  ``pairs.weight`` (default 1).  They add to the label pairs (a pair present in both
  counts twice), exactly as for RankNet / RankBoost.

``use_label_pairs=None`` (default) uses label pairs whenever the dataset has labels;
``False`` trains on the explicit pairs alone.

Margin ``tau``
--------------
A positive constant, or ``"grade_difference"``: ``tau = label_x - label_y`` for label
pairs (seed 004: "the absolute grade difference ... if it is converted from labeled
data") and ``tau = 1`` for explicit pairs, whose degree of preference is unknown (seed
004: "Otherwise, we simply set it to be 1.0").

Weights
-------
Per-document weights ``nu_d`` multiply each document's gradient and hessian after the
per-query term (LightGBM's convention, as everywhere in the package).  In :meth:`loss`
a pair is weighted by ``omega * (nu_x + nu_y) / 2`` (``omega`` = pair weight), the rule
of the pairwise engine; with one weight per query the two agree.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ltrboost._numba import kernel, parallel_kernel, prange
from ltrboost.dataset import RankingDataset
from ltrboost.objectives._pairs import (
    PAIR_ALL,
    _enumerate_pairs_one_query,
    _has_two_labels,
    _max_pairs_one_query,
    check_query_pair_buffer,
)
from ltrboost.objectives.base import Objective
from ltrboost.objectives.lambdamart import _doc_weights, _no_explicit_pairs
from ltrboost.objectives.pairwise import _explicit_pairs
from ltrboost.objectives.pointwise import _single_output_scores, _single_output_views
from ltrboost.objectives.registry import register

TAU_GRADE_DIFFERENCE = "grade_difference"
# Margin of an explicit pair under tau="grade_difference" (seed 004: "Otherwise, we
# simply set it to be 1.0").
EXPLICIT_PAIR_TAU = 1.0

_EMPTY_F32 = np.zeros(0, dtype=np.float32)
_EMPTY_F64 = np.zeros(0, dtype=np.float64)


# --------------------------------------------------------------------------------------
# shared with QBRank: parameters and per-dataset constants
# --------------------------------------------------------------------------------------


def _check_tau(tau: Any) -> float | str:
    """A positive finite float, or ``"grade_difference"``; anything else is refused."""
    if isinstance(tau, str):
        if tau == TAU_GRADE_DIFFERENCE:
            return tau
        raise ValueError(
            f"tau={tau!r} must be a positive number or {TAU_GRADE_DIFFERENCE!r}"
        )
    if isinstance(tau, bool | np.bool_) or not isinstance(
        tau, int | float | np.integer | np.floating
    ):
        raise ValueError(
            f"tau={tau!r} must be a positive number or {TAU_GRADE_DIFFERENCE!r}"
        )
    if not (math.isfinite(tau) and tau > 0):
        raise ValueError(f"tau={tau} must be a positive finite number")
    return float(tau)


def _tau_codes(tau: float | str) -> tuple[float, bool]:
    """(constant tau, grade_difference flag) as the kernels take them."""
    if tau == TAU_GRADE_DIFFERENCE:
        return 0.0, True
    return float(tau), False


def _check_use_label_pairs(use_label_pairs: Any) -> bool | None:
    if use_label_pairs is None:
        return None
    if not isinstance(use_label_pairs, bool | np.bool_):
        raise ValueError(
            f"use_label_pairs={use_label_pairs!r} should be True, False or None"
        )
    return bool(use_label_pairs)


class _PreferenceConstants(NamedTuple):
    """Per-dataset arrays of the GBRank / QBRank kernels (cached in ``data.cache``)."""

    labels: NDArray[np.float64]  # (n_samples,); zeros when the dataset has no labels
    has_labels: bool  # the dataset has labels (QBRank's labelled part)
    use_label_pairs: bool  # label pairs are walked
    weights: NDArray[np.float32]  # (n_samples,) or (0,) meaning "all ones"
    xpair_offsets: NDArray[np.int64]  # (n_queries + 1,) explicit pairs, CSR by query
    xpair_i: NDArray[np.int32]  # preferred document, row inside its query
    xpair_j: NDArray[np.int32]  # other document, row inside its query
    xpair_w: NDArray[np.float64]  # pair weight omega


def _preference_constants(
    data: RankingDataset,
    use_label_pairs: bool | None,
    objective: str,
    *,
    labels_suffice: bool = False,
) -> _PreferenceConstants:
    """Validate labels and explicit pairs once per dataset; the result is cached.

    ``labels_suffice``: the objective can learn from labels without any pair (QBRank's
    labelled part), so ``use_label_pairs=False`` without explicit pairs is accepted.
    """
    has_labels = data.y is not None
    use_labels = has_labels if use_label_pairs is None else use_label_pairs
    if use_labels and not has_labels:
        raise ValueError(
            f"use_label_pairs=True but the dataset has no labels y; give labels or "
            f"use_label_pairs=False with explicit pairs ({objective})"
        )
    has_pairs = data.pairs is not None and len(data.pairs) > 0
    if not use_labels and not has_pairs and not (labels_suffice and has_labels):
        raise ValueError(
            f"{objective} needs labels y or explicit preference pairs; the dataset has "
            "neither (or use_label_pairs=False without pairs)"
        )
    # the checks above run on every call: they depend on the objective, not the key
    key = ("preference_pairs", use_label_pairs)
    const = data.cache.get(key)
    if const is not None:
        return const
    if has_labels:
        labels = np.ascontiguousarray(data.y, dtype=np.float64)
        if labels.shape != (data.n_samples,):
            raise ValueError(
                f"y has shape {labels.shape}; expected ({data.n_samples},)"
            )
        bad = ~np.isfinite(labels)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"label y[{row}]={labels[row]} is not finite ({objective})"
            )
    else:
        labels = np.zeros(data.n_samples, dtype=np.float64)
    if use_labels:
        check_query_pair_buffer(data, objective)  # label pairs: n^2/2 per query
    xpairs = _explicit_pairs(data) if has_pairs else _no_explicit_pairs(data.n_queries)
    const = _PreferenceConstants(
        labels, has_labels, bool(use_labels), _doc_weights(data), *xpairs
    )
    data.cache[key] = const
    return const


# --------------------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------------------


@register
class GBRank(Objective):
    r"""GBRank: regression trees fitted to pairwise targets, averaged update (seed 002).

    Loss (seed 002, with the margin; its constant ``-lambda tau^2`` term is dropped)::

        R(h) = 1/2 sum_{pairs x > y} omega (max{0, h(y) - h(x) + tau})^2

    which :meth:`loss` returns (used for monitoring and tests; the trees do not follow
    its gradient).  Round ``k`` (seed 002, "gbRank算法" steps 2-4), at the current
    scores ``h = h_{k-1}``:

    2. the violated set ``S^- = {(x, y): h(x) < h(y) + tau}``;
    3. a regression tree ``g_k`` is fitted to ``{(x, h(y) + tau), (y, h(x) - tau)}``
       over ``S^-``;
    4. ``h_k = (k h_{k-1} + eta g_k) / (k + 1)`` (``update_rule = "averaged"``: the
       booster keeps ``h_0 + eta sum g_k`` and divides by ``k + 1``).

    **Repeated documents.**  A document in several violated pairs gets *one* regression
    point whose target is the (pair-weighted) mean of its targets,
    ``t_d = sum omega t / sum omega`` (seed 004's remark for the same situation); each
    document of ``S^-`` then weighs the same in the fit, however many pairs it is in.

    **How the engine fits the targets.**  The Newton leaf of the engine is
    ``-G / (H + l2)``; this objective writes, for documents with a target,
    ``g_d = -nu_d t_d`` and ``h_d = nu_d`` (``nu_d`` the document weight, 1 by
    default), and ``g_d = h_d = 0`` for the others.  The leaf value is then
    ``sum nu t / sum nu``, the (weighted) mean target of the leaf's documents, and the
    Newton split gain ``G_l^2/H_l + G_r^2/H_r - G^2/H`` is exactly the decrease of the
    squared error of that regression: the tree is the least-squares fit of step 3.  It
    predicts the targets themselves, not residuals, which is the seed's ``g_k``.
    Consequences, all by design:

    * Documents without a target take no part in the leaf values or the gains; the tree
      still routes them, and they receive the value of the leaf they fall in
      (``g_k(x)`` is evaluated on every document, as in the seed).
    * ``min_samples_leaf`` counts *all* documents of a node, with or without a target.
      ``min_sum_hessian_in_leaf`` counts targeted documents (H of a node is the
      number of its documents in ``S^-`` with unit weights): the default 1e-3 makes
      every leaf hold at least one; set it to ``k`` to demand ``k``.
    * ``l2_regularization`` shrinks each leaf's mean target towards 0
      (``sum t / (n_targets + l2)``).
    * Use ``split_criterion="newton"`` (default) or ``"ole"``; ``"se"`` divides by
      document counts that include untargeted documents, which is not this regression.
    * When ``S^-`` is empty the tree is 0 and ``h_k = k h_{k-1} / (k + 1)``: the
      ranking is unchanged.

    **Learning rate.**  ``eta`` is the seed's scale factor of step 4.  With ``h_0 = 0``
    and a constant ``tau``, scores and targets scale with ``tau`` (the loss with
    ``tau^2``), so ``tau`` does not change the ranking and ``eta`` is the only scale.
    The averaging already damps the updates, and ``eta < 1`` keeps every pair
    violated: for a pair fitted exactly the gap ``d_k = h_k(x) - h_k(y)`` follows
    ``d_k = ((k - eta) d_{k-1} + 2 eta tau) / (k + 1)`` and settles at
    ``2 eta tau / (1 + eta) < tau``, so the targets barely move between rounds and the
    trees repeat.  Use ``learning_rate >= 1`` (1 reaches the margin exactly); this is
    GBRank's default (``learning_rate=None`` gives 1.0), while the additive objectives
    default to 0.1.

    ``is_pairwise`` is False: the tree solves a plain least-squares problem on targets
    frozen at ``h_{k-1}``, a derivative-additive loss of the tree outputs, for which
    SE (on targeted documents), RWSE and OLE choose the same splits (seed 000, Theorems
    1-2); the pairs only decide the targets.  :meth:`pair_terms` returns None.

    Parameters
    ----------
    tau : float or "grade_difference", default=0.1
        Margin (seed 002: "作者设置 tau=0.1"; the seed takes ``0 < tau <= 1``, larger
        values are accepted).  ``"grade_difference"``: ``label_x - label_y`` for label
        pairs and 1 for explicit pairs (module docstring).
    use_label_pairs : bool or None, default=None
        Use label pairs; None: whenever the dataset has labels.

    The initial score is ``h_0 = 0`` (the seed: "任意选择一个都可以", any choice).
    """

    name: ClassVar[str] = "gbrank"
    is_pairwise: ClassVar[bool] = False
    hessian_is_constant: ClassVar[bool] = False
    leaf_rule: ClassVar[str] = "mean_target"  # computed by the engine as -G/(H+l2)
    update_rule: ClassVar[str] = "averaged"
    default_learning_rate: ClassVar[float] = 1.0

    def __init__(
        self,
        tau: float | str = 0.1,
        use_label_pairs: bool | None = None,
    ) -> None:
        tau = _check_tau(tau)
        use_label_pairs = _check_use_label_pairs(use_label_pairs)
        super().__init__(tau=tau, use_label_pairs=use_label_pairs)
        self._tau, self._tau_grade = _tau_codes(tau)

    def _constants(self, data: RankingDataset) -> _PreferenceConstants:
        return _preference_constants(data, self.params["use_label_pairs"], self.name)

    def prepare(self, data: RankingDataset) -> None:
        """Validate labels and explicit pairs; cache the per-dataset arrays."""
        self._constants(data)

    def init_score(self, data: RankingDataset) -> NDArray[np.float64]:
        return np.zeros(1, dtype=np.float64)

    def _run(
        self,
        scores: NDArray[np.float64],
        data: RankingDataset,
        gradients: NDArray[np.float32],
        hessians: NDArray[np.float32],
        targets: NDArray[np.float64],
        target_weights: NDArray[np.float64],
    ) -> NDArray[np.float64]:
        c = self._constants(data)
        loss_out = np.empty(data.n_queries, dtype=np.float64)
        _gbrank_all_queries(
            scores, c.labels, c.weights, data.query_offsets, c.use_label_pairs,
            self._tau, self._tau_grade,
            c.xpair_offsets, c.xpair_i, c.xpair_j, c.xpair_w,
            gradients, hessians, targets, target_weights, loss_out,
        )  # fmt: skip
        return loss_out

    def gradient_hessian(
        self,
        scores: NDArray[np.float64],
        data: RankingDataset,
        gradients_out: NDArray[np.float32],
        hessians_out: NDArray[np.float32],
        iteration: int = 0,
    ) -> None:
        """Write ``g = -nu * target``, ``h = nu`` for documents of violated pairs.

        Every other document gets ``g = h = 0``; ``-g / h`` is each document's target.
        """
        s, g, h = _single_output_views(
            scores, gradients_out, hessians_out, data.n_samples
        )
        self._run(s, data, g, h, _EMPTY_F64, _EMPTY_F64)

    def regression_targets(
        self, scores: NDArray[np.float64], data: RankingDataset
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Step 3's training set at ``scores``, in float64.

        Returns ``(targets, pair_weight)``: the mean target of each document over its
        violated pairs and the summed weight of those pairs; documents in no violated
        pair have weight 0 and target NaN.
        """
        s = np.ascontiguousarray(_single_output_scores(scores, data.n_samples))
        t = np.empty(data.n_samples, dtype=np.float64)
        w = np.empty(data.n_samples, dtype=np.float64)
        self._run(s, data, _EMPTY_F32, _EMPTY_F32, t, w)
        return t, w

    def loss(self, scores: NDArray[np.float64], data: RankingDataset) -> float:
        """``1/2 sum omega (nu_x + nu_y)/2 max{0, h(y) - h(x) + tau}^2``."""
        s = np.ascontiguousarray(_single_output_scores(scores, data.n_samples))
        return float(
            np.sum(self._run(s, data, _EMPTY_F32, _EMPTY_F32, _EMPTY_F64, _EMPTY_F64))
        )

    def transform(self, raw_scores: NDArray[np.float64]) -> NDArray[np.float64]:
        """Rank by the (averaged) raw score."""
        raw = np.asarray(raw_scores, dtype=np.float64)
        return raw if raw.ndim == 1 else raw[0]


# --- kernels ---


@kernel
def _label_pair_buffers(labels_q, use_labels):
    """The query's label pairs as document rows ``(a, b)``, ``a < b``, labels differing.

    labels_q: IN float64 (n,).  Returns (a, b, count); the pairs are
    :func:`_enumerate_pairs_one_query`'s ``"all"`` pairs, taken in document order.
    """
    n = labels_q.shape[0]
    if not use_labels or n < 2 or not _has_two_labels(labels_q):
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), 0
    size = _max_pairs_one_query(n, PAIR_ALL, -1, 1)
    a = np.empty(size, dtype=np.int64)
    b = np.empty(size, dtype=np.int64)
    count = _enumerate_pairs_one_query(labels_q, PAIR_ALL, -1, 1, 0, a, b)
    return a, b, count


@kernel
def _gbrank_one_query(
    scores_q,
    labels_q,
    weights_q,
    use_labels,
    tau,
    tau_grade,
    xp_i,
    xp_j,
    xp_w,
    grad_q,
    hess_q,
    target_q,
    target_w_q,
):
    """One query of GBRank; returns its loss ``1/2 sum omega nu_p max{0, m}^2``.

    scores_q, labels_q: IN float64 (n,).  weights_q: IN float32 (n,) or (0,).
    xp_i, xp_j: IN int32 explicit pairs (rows in the query), xp_w: IN float64 weights.
    grad_q, hess_q: OUT float32 (n,) or (0,) (not wanted).
    target_q, target_w_q: OUT float64 (n,) or (0,): mean target (NaN if none) and the
    summed weight of the document's violated pairs.

    A pair (i preferred to j) is violated when ``s_i < s_j + tau`` (the seed's test;
    its margin is ``m = s_j - s_i + tau > 0``) and gives the targets ``s_j + tau`` to
    i, ``s_i - tau`` to j.
    Label pairs are walked first, then the explicit ones; the pair body is inline.
    """
    n = scores_q.shape[0]
    has_w = weights_q.shape[0] > 0
    a_buf, b_buf, n_lab = _label_pair_buffers(labels_q, use_labels)
    n_pairs = n_lab + xp_i.shape[0]
    t_sum = np.zeros(n, dtype=np.float64)
    w_sum = np.zeros(n, dtype=np.float64)
    loss = 0.0
    for p in range(n_pairs):
        if p < n_lab:
            i = a_buf[p]
            j = b_buf[p]
            if labels_q[j] > labels_q[i]:
                i, j = j, i
            omega = 1.0
            t = labels_q[i] - labels_q[j] if tau_grade else tau
        else:
            k = p - n_lab
            i = np.int64(xp_i[k])
            j = np.int64(xp_j[k])
            omega = xp_w[k]
            t = EXPLICIT_PAIR_TAU if tau_grade else tau
        # the seed's test h(x) < h(y) + tau, literally (m > 0 can differ by rounding)
        if scores_q[i] < scores_q[j] + t and omega > 0.0:
            m = max(scores_q[j] - scores_q[i] + t, 0.0)
            t_sum[i] += omega * (scores_q[j] + t)
            w_sum[i] += omega
            t_sum[j] += omega * (scores_q[i] - t)
            w_sum[j] += omega
            nu = (
                0.5 * (np.float64(weights_q[i]) + np.float64(weights_q[j]))
                if has_w
                else 1.0
            )
            loss += 0.5 * omega * nu * m * m
    if grad_q.shape[0] > 0:
        for d in range(n):
            if w_sum[d] > 0.0:
                nu = np.float64(weights_q[d]) if has_w else 1.0
                grad_q[d] = -nu * (t_sum[d] / w_sum[d])
                hess_q[d] = nu
            else:
                grad_q[d] = 0.0
                hess_q[d] = 0.0
    if target_q.shape[0] > 0:
        for d in range(n):
            target_w_q[d] = w_sum[d]
            target_q[d] = t_sum[d] / w_sum[d] if w_sum[d] > 0.0 else np.nan
    return loss


@parallel_kernel
def _gbrank_all_queries(
    scores,
    labels,
    weights,
    query_offsets,
    use_labels,
    tau,
    tau_grade,
    xpair_offsets,
    xpair_i,
    xpair_j,
    xpair_w,
    gradients,
    hessians,
    targets,
    target_weights,
    loss_out,
):
    """Parallel driver over queries; every query writes only its own slices.

    IN: scores, labels float64 (n_samples,); weights float32 (n_samples,) or (0,);
    query_offsets int64; explicit pairs in CSR (``xpair_offsets``).
    OUT: gradients, hessians float32 (n_samples,) or (0,); targets, target_weights
    float64 (n_samples,) or (0,); loss_out float64 (n_queries,).
    """
    n_queries = query_offsets.shape[0] - 1
    has_w = weights.shape[0] > 0
    want_gh = gradients.shape[0] > 0
    want_t = targets.shape[0] > 0
    for q in prange(n_queries):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        w_lo = lo if has_w else 0
        w_hi = hi if has_w else 0
        g_lo = lo if want_gh else 0
        g_hi = hi if want_gh else 0
        t_lo = lo if want_t else 0
        t_hi = hi if want_t else 0
        x0 = xpair_offsets[q]
        x1 = xpair_offsets[q + 1]
        loss_out[q] = _gbrank_one_query(
            scores[lo:hi], labels[lo:hi], weights[w_lo:w_hi], use_labels, tau,
            tau_grade, xpair_i[x0:x1], xpair_j[x0:x1], xpair_w[x0:x1],
            gradients[g_lo:g_hi], hessians[g_lo:g_hi],
            targets[t_lo:t_hi], target_weights[t_lo:t_hi],
        )  # fmt: skip


# --- references ---


def _preference_pairs_reference(
    labels: NDArray[np.float64] | None,
    query_offsets: NDArray[np.int64],
    use_label_pairs: bool,
    tau: float | str,
    preferred: NDArray[np.integer] | None = None,
    other: NDArray[np.integer] | None = None,
    pair_weight: NDArray[np.float64] | None = None,
) -> tuple[
    NDArray[np.int64], NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]
]:
    """Every pair as global rows: ``(x preferred, y other, omega, tau_p)``.

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
            np.ones(p.size)
            if pair_weight is None
            else np.asarray(pair_weight, dtype=np.float64)
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


def _gbrank_reference(
    scores: NDArray[np.float64],
    x: NDArray[np.int64],
    y: NDArray[np.int64],
    omega: NDArray[np.float64],
    tau_p: NDArray[np.float64],
    weights: NDArray[np.floating] | None = None,
) -> tuple[
    NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64],
    float,
]:  # fmt: skip
    """Vectorised GBRank on pair arrays from :func:`_preference_pairs_reference`.

    Returns ``(g, h, targets, target_weights, loss)``.
    """
    s = np.asarray(scores, dtype=np.float64)
    n = s.size
    nu = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    m = np.maximum(s[y] - s[x] + tau_p, 0.0)
    v = (s[x] < s[y] + tau_p) & (omega > 0)
    t_sum = np.zeros(n)
    w_sum = np.zeros(n)
    np.add.at(t_sum, x[v], omega[v] * (s[y[v]] + tau_p[v]))
    np.add.at(t_sum, y[v], omega[v] * (s[x[v]] - tau_p[v]))
    np.add.at(w_sum, x[v], omega[v])
    np.add.at(w_sum, y[v], omega[v])
    has = w_sum > 0
    targets = np.full(n, np.nan)
    targets[has] = t_sum[has] / w_sum[has]
    g = np.where(has, -nu * np.where(has, targets, 0.0), 0.0)
    h = np.where(has, nu, 0.0)
    pair_nu = 0.5 * (nu[x] + nu[y])
    loss = float(0.5 * np.sum(omega * pair_nu * np.where(v, m, 0.0) ** 2))
    return g, h, targets, w_sum, loss

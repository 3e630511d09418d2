"""GBRank (seed 002): regression on pairwise targets with the averaged update.

Pairs (label pairs and explicit ``data.pairs``), the margin ``tau`` and the weighting
rule are those of :mod:`ltrboost.objectives.preferences`, shared with
:mod:`ltrboost.objectives.qbrank`.  The derivation of how the engine fits the targets
is in ``docs/theory.md`` (section "GBRank").
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from ltrboost._numba import kernel, over_queries
from ltrboost.dataset import RankingDataset
from ltrboost.objectives.base import (
    Objective,
    check_use_label_pairs,
    identity_transform,
    single_output_scores,
    single_output_views,
)
from ltrboost.objectives.preferences import (
    EXPLICIT_PAIR_TAU,
    TAU_GRADE_DIFFERENCE,
    PreferenceConstants,
    check_tau,
    label_pair_buffers,
    preference_constants,
    preference_pairs_reference,
    tau_codes,
)
from ltrboost.objectives.registry import register

_EMPTY_F32 = np.zeros(0, dtype=np.float32)
_EMPTY_F64 = np.zeros(0, dtype=np.float64)


# --------------------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------------------


@register
class GBRank(Objective):
    r"""GBRank: regression trees fitted to pairwise targets, averaged update (seed 002).

    Loss ``R(h) = 1/2 sum_{pairs x > y} omega (max{0, h(y) - h(x) + tau})^2`` (GB-1;
    :meth:`loss`, for monitoring: the trees do not follow its gradient).  Round ``k``
    fits a regression tree ``g_k`` to the targets ``h(y) + tau`` (for ``x``) and
    ``h(x) - tau`` (for ``y``) of the violated pairs ``h(x) < h(y) + tau``, then
    ``h_k = (k h_{k-1} + eta g_k) / (k + 1)`` (GB-2, ``update_rule = "averaged"``).  A
    document's targets are averaged (pair-weighted); the engine fits them through
    ``g_d = -nu_d t_d``, ``h_d = nu_d`` (GB-3), zero for untargeted documents, so the
    Newton leaf is the mean target and the Newton gain the least-squares decrease.
    ``learning_rate`` defaults to 1.0 (``eta < 1`` never reaches the margin, GB-4);
    ``is_pairwise`` is False.  Derivation and consequences (``min_samples_leaf``,
    ``l2_regularization``, split criteria): ``docs/theory.md``, section "GBRank".

    Parameters
    ----------
    tau : float or "grade_difference", default=0.1
        Margin (seed 002: "作者设置 tau=0.1"; the seed takes ``0 < tau <= 1``, larger
        values are accepted).  ``"grade_difference"``: ``label_x - label_y`` for label
        pairs and 1 for explicit pairs (:mod:`ltrboost.objectives.preferences`).
    use_label_pairs : bool or None, default=None
        Use label pairs; None: whenever the dataset has labels.

    The initial score is ``h_0 = 0`` (the seed: "任意选择一个都可以", any choice).
    """

    name: ClassVar[str] = "gbrank"
    uses_preference_pairs: ClassVar[bool] = True
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
        tau = check_tau(tau)
        use_label_pairs = check_use_label_pairs(use_label_pairs)
        super().__init__(tau=tau, use_label_pairs=use_label_pairs)
        self._tau, self._tau_grade = tau_codes(tau)

    def _constants(self, data: RankingDataset) -> PreferenceConstants:
        return preference_constants(data, self.params["use_label_pairs"], self.name)

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
        s, g, h = single_output_views(scores, gradients_out, hessians_out, data.n_samples)
        self._run(s, data, g, h, _EMPTY_F64, _EMPTY_F64)

    def regression_targets(
        self, scores: NDArray[np.float64], data: RankingDataset
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Step 3's training set at ``scores``, in float64.

        Returns ``(targets, pair_weight)``: the mean target of each document over its
        violated pairs and the summed weight of those pairs; documents in no violated
        pair have weight 0 and target NaN.
        """
        s = np.ascontiguousarray(single_output_scores(scores, data.n_samples))
        t = np.empty(data.n_samples, dtype=np.float64)
        w = np.empty(data.n_samples, dtype=np.float64)
        self._run(s, data, _EMPTY_F32, _EMPTY_F32, t, w)
        return t, w

    def loss(self, scores: NDArray[np.float64], data: RankingDataset) -> float:
        """``1/2 sum omega (nu_x + nu_y)/2 max{0, h(y) - h(x) + tau}^2``."""
        s = np.ascontiguousarray(single_output_scores(scores, data.n_samples))
        return float(np.sum(self._run(s, data, _EMPTY_F32, _EMPTY_F32, _EMPTY_F64, _EMPTY_F64)))

    def transform(self, raw_scores: NDArray[np.float64]) -> NDArray[np.float64]:
        """Rank by the (averaged) raw score."""
        return identity_transform(raw_scores)


# --- kernels ---


@kernel
def _gbrank_one_query(
    scores_q, labels_q, weights_q, use_labels, tau, tau_grade, xp_i, xp_j, xp_w, grad_q, hess_q,
    target_q, target_w_q,
):  # fmt: skip
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
    a_buf, b_buf, n_lab = label_pair_buffers(labels_q, use_labels)
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
            nu = 0.5 * (np.float64(weights_q[i]) + np.float64(weights_q[j])) if has_w else 1.0
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


def _gbrank_all_queries(
    scores, labels, weights, query_offsets, use_labels, tau, tau_grade, xpair_offsets, xpair_i,
    xpair_j, xpair_w, gradients, hessians, targets, target_weights, loss_out,
):  # fmt: skip
    """Parallel driver over queries; every query writes only its own slices.

    IN: scores, labels float64 (n_samples,); weights float32 (n_samples,) or (0,);
    query_offsets int64; explicit pairs in CSR (``xpair_offsets``).
    OUT: gradients, hessians float32 (n_samples,) or (0,); targets, target_weights
    float64 (n_samples,) or (0,); loss_out float64 (n_queries,).
    """
    over_queries(
        _gbrank_queries, query_offsets, scores, labels, weights, query_offsets, use_labels, tau,
        tau_grade, xpair_offsets, xpair_i, xpair_j, xpair_w, gradients, hessians, targets,
        target_weights, loss_out,
    )  # fmt: skip


@kernel
def _gbrank_queries(
    q0, q1, scores, labels, weights, query_offsets, use_labels, tau, tau_grade, xpair_offsets,
    xpair_i, xpair_j, xpair_w, gradients, hessians, targets, target_weights, loss_out,
):  # fmt: skip
    # queries q0..q1-1 of _gbrank_all_queries (see ltrboost._numba.over_queries)
    has_w = weights.shape[0] > 0
    want_gh = gradients.shape[0] > 0
    want_t = targets.shape[0] > 0
    for q in range(q0, q1):
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
    """Vectorised GBRank on pair arrays from :func:`.preferences.preference_pairs_reference`.

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


# --- old import paths (the pair plumbing now lives in .preferences) ---

_check_tau = check_tau
_tau_codes = tau_codes
_check_use_label_pairs = check_use_label_pairs
_PreferenceConstants = PreferenceConstants
_preference_constants = preference_constants
_label_pair_buffers = label_pair_buffers
_preference_pairs_reference = preference_pairs_reference
__all__ = ["EXPLICIT_PAIR_TAU", "TAU_GRADE_DIFFERENCE", "GBRank"]

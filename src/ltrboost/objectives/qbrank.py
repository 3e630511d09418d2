"""QBRank (seed 004, Algorithm 2): preference and labelled data in one quadratic risk.

Pairs, margins and pair weights follow :mod:`ltrboost.objectives.preferences` (label
pairs from the grades, explicit ``data.pairs``, ``tau`` constant or the grade
difference).  Document weights weigh the risk itself: a pair by the mean weight of its
two documents, a labelled document by its own; ``g``, ``h`` and the line search all
derive from that one weighted risk.  The risk is in :class:`QBRank`'s docstring; the
derivation of ``g`` and ``h`` and the line search in ``docs/theory.md`` ("QBRank").
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
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
    tau_codes,
)
from ltrboost.objectives.registry import register

_EMPTY_F32 = np.zeros(0, dtype=np.float32)
_EMPTY_F64 = np.zeros(0, dtype=np.float64)

# Line search: stop when |phi'(alpha)| <= LS_GTOL * |phi'(0)| or the bracket is shorter
# than LS_XTOL * its right end; at most LS_MAX_EVAL evaluations of (phi, phi', phi'').
LS_GTOL = 1e-12
LS_XTOL = 1e-12
LS_MAX_EVAL = 100


@register
class QBRank(Objective):
    r"""QBRank: boosted quadratic approximations of a preference + regression risk.

    Risk (seed 004, section 3; ``w`` is ``preference_weight``, ``omega`` the pair
    weight, ``l_z`` the label as given)::

        R(h) = w/2 sum_{pairs x > y} omega (max{0, h(y) - h(x) + tau})^2
             + (1 - w)/2 sum_{labelled z} (l_z - h(z))^2                   (QB-1)

    Document weights ``nu`` (``sample_weight``; 1 without) weigh the terms of (QB-1):
    a pair's by ``nu_xy = (nu_x + nu_y) / 2`` (the package's pair convention, as in the
    loss of :class:`~ltrboost.objectives.pair_engine.PairwiseObjective`), a labelled
    document's by ``nu_z``; ``omega`` becomes ``omega nu_xy``.  ``gradients`` are the
    exact dR/dh of this weighted risk (QB-2) and ``hessians`` Algorithm 2's diagonal
    weight ``W`` (QB-3: ``w omega nu_xy`` per pair the document is in, plus
    ``(1 - w) nu_z``; constant), so the Newton leaf is the least-squares fit of
    Algorithm 2's training set with those entry weights (seed 004, eq. 3, 5-6).  The
    step ``alpha`` minimising ``R(h + alpha delta)`` (QB-4), the same weighted risk whose
    gradient the tree fits, comes from :meth:`line_search`, a safeguarded Newton search
    on the convex piecewise quadratic; leaves are scaled by ``alpha * eta``.  With one
    weight per query the weighting is the document weight multiplying ``g`` and ``h``
    (LightGBM's convention); with weights that differ inside a query, weighing each
    document's share of a pair by its own weight would not be the gradient of any risk.
    Derivation and the line search: ``docs/theory.md``, section "QBRank".

    Parameters
    ----------
    preference_weight : float in [0, 1], default=0.5
        ``w`` (the seed's experiments use 0.5).  ``w = 0`` is least-squares regression
        on the labels (the seed: then QBRank is GBT); ``w = 1`` uses the pairs only.
    tau : float or "grade_difference", default="grade_difference"
        Margin: the grade difference for label pairs and 1 for explicit pairs (seed
        004's choices), or a positive constant for every pair.
    use_label_pairs : bool or None, default=None
        Use label pairs; None: whenever the dataset has labels.  With False the
        preference part is the explicit pairs only while the labelled part stays.
    init : {"mean", "zero"}, default="mean"
        ``h_0``: the weighted mean label (the constant minimising ``R``: the preference
        part does not change under a common shift) or 0.  Without labels it is 0.
    """

    name: ClassVar[str] = "qbrank"
    uses_preference_pairs: ClassVar[bool] = True
    is_pairwise: ClassVar[bool] = False
    hessian_is_constant: ClassVar[bool] = True
    leaf_rule: ClassVar[str] = "line_search"
    update_rule: ClassVar[str] = "additive"

    def __init__(
        self,
        preference_weight: float = 0.5,
        tau: float | str = TAU_GRADE_DIFFERENCE,
        use_label_pairs: bool | None = None,
        init: str = "mean",
    ) -> None:
        w = preference_weight
        if isinstance(w, bool | np.bool_) or not isinstance(w, numbers.Real):
            raise ValueError(f"preference_weight={w!r} must be a number between 0 and 1")
        if not (0.0 <= w <= 1.0):
            raise ValueError(f"preference_weight={w} must be between 0 and 1")
        tau = check_tau(tau)
        use_label_pairs = check_use_label_pairs(use_label_pairs)
        if init not in ("mean", "zero"):
            raise ValueError(f"init={init!r} is not one of ('mean', 'zero')")
        super().__init__(
            preference_weight=float(w),
            tau=tau,
            use_label_pairs=use_label_pairs,
            init=init,
        )
        self._w = float(w)
        self._tau, self._tau_grade = tau_codes(tau)

    # -- per-dataset constants ---------------------------------------------------------

    def _constants(self, data: RankingDataset) -> PreferenceConstants:
        return preference_constants(
            data,
            self.params["use_label_pairs"],
            self.name,
            labels_suffice=self._w < 1.0,
        )

    def explicit_pairs_ignored(self) -> str | None:
        if self._w == 0.0:
            return (
                "preference_weight=0 gives the preference pairs no weight (QBRank is then "
                "least-squares regression on the labels)"
            )
        return None

    def learns_without_query_grades(self, data: RankingDataset) -> bool | None:
        """Its labelled part (weight ``1 - preference_weight``) learns from labels that
        differ between queries; the pairs only with ``preference_weight=1``."""
        return self._w < 1.0 or bool(super().learns_without_query_grades(data))

    def prepare(self, data: RankingDataset) -> None:
        """Validate labels and explicit pairs; cache the per-dataset arrays."""
        self._constants(data)

    def init_score(self, data: RankingDataset) -> NDArray[np.float64]:
        c = self._constants(data)
        if self.params["init"] == "zero" or not c.has_labels or data.n_samples == 0:
            return np.zeros(1, dtype=np.float64)
        if c.weights.shape[0] == 0:
            return np.array([float(np.mean(c.labels))], dtype=np.float64)
        w = c.weights.astype(np.float64)
        total = float(w.sum())
        mean = float(np.dot(w, c.labels) / total) if total > 0 else float(c.labels.mean())
        return np.array([mean], dtype=np.float64)

    # -- engine calls -----------------------------------------------------------------

    def _run(
        self,
        scores: NDArray[np.float64],
        delta: NDArray[np.float64],
        alpha: float,
        data: RankingDataset,
        gradients: NDArray[np.float32] = _EMPTY_F32,
        hessians: NDArray[np.float32] = _EMPTY_F32,
    ) -> NDArray[np.float64]:
        """``(phi, phi', phi'')`` of ``R(scores + alpha delta)``, summed by query."""
        c = self._constants(data)
        out = np.empty((data.n_queries, 3), dtype=np.float64)
        _qbrank_all_queries(
            scores, delta, float(alpha), c.labels, c.weights, data.query_offsets,
            c.use_label_pairs, c.has_labels, self._tau, self._tau_grade, self._w,
            c.xpair_offsets, c.xpair_i, c.xpair_j, c.xpair_w,
            gradients, hessians, out,
        )  # fmt: skip
        return out.sum(axis=0)

    def gradient_hessian(
        self,
        scores: NDArray[np.float64],
        data: RankingDataset,
        gradients_out: NDArray[np.float32],
        hessians_out: NDArray[np.float32],
        iteration: int = 0,
    ) -> None:
        """Write ``dR/dh`` and Algorithm 2's per-document weight ``W`` (see class)."""
        s, g, h = single_output_views(scores, gradients_out, hessians_out, data.n_samples)
        self._run(s, _EMPTY_F64, 0.0, data, g, h)

    def loss(self, scores: NDArray[np.float64], data: RankingDataset) -> float:
        """The risk ``R`` at ``scores``."""
        s = np.ascontiguousarray(single_output_scores(scores, data.n_samples))
        return float(self._run(s, _EMPTY_F64, 0.0, data)[0])

    def line_search(
        self,
        scores: NDArray[np.float64],
        delta: NDArray[np.float64],
        data: RankingDataset,
    ) -> float:
        """The step ``alpha >= 0`` minimising ``R(scores + alpha * delta)``.

        ``delta`` is the new tree's unscaled output on every training document.
        """
        n = data.n_samples
        s = np.ascontiguousarray(single_output_scores(scores, n))
        d = np.ascontiguousarray(single_output_scores(delta, n))
        if not np.all(np.isfinite(d)):
            raise ValueError("delta holds non-finite values")

        def evaluate(alpha: float) -> tuple[float, float, float]:
            phi, d1, d2 = self._run(s, d, alpha, data)
            return float(phi), float(d1), float(d2)

        return _minimise_convex_piecewise_quadratic(evaluate)

    def transform(self, raw_scores: NDArray[np.float64]) -> NDArray[np.float64]:
        """Rank by the raw score (identity)."""
        return identity_transform(raw_scores)


def _minimise_convex_piecewise_quadratic(
    evaluate: Callable[[float], tuple[float, float, float]],
    gtol: float = LS_GTOL,
    xtol: float = LS_XTOL,
    max_eval: int = LS_MAX_EVAL,
) -> float:
    """Safeguarded Newton on ``phi'`` over ``alpha >= 0`` (see :class:`QBRank`).

    ``evaluate(alpha)`` returns ``(phi, phi', phi'')`` of a convex function (right
    derivatives at a kink).  Returns 0 unless ``phi'(0) < 0``.  With a bracket, a
    Newton step is taken only when it stays inside and is at most half the step before
    the last one (Numerical Recipes' ``rtsafe`` rule); bisection otherwise.
    """
    f0, d0, c0 = evaluate(0.0)
    if not (d0 < 0.0 and math.isfinite(f0)):
        return 0.0  # not a descent direction (a zero tree, say): no step
    best_a, best_f = 0.0, f0
    lo, hi = 0.0, math.inf
    a, d, c = 0.0, d0, c0
    expand = 1.0
    dx_old = dx_older = math.inf
    for _ in range(max_eval - 1):
        newton = a - d / c if c > 0.0 else math.nan
        if math.isinf(hi):
            if math.isfinite(newton) and newton > a:
                cand = newton
            else:
                cand = a + expand  # flat piece (phi'' = 0) before a bracket: expand
                expand *= 2.0
        elif lo < newton < hi and abs(newton - a) <= 0.5 * dx_older:
            cand = newton
        else:
            cand = 0.5 * (lo + hi)
        dx_older, dx_old = dx_old, abs(cand - a)
        a = cand
        f, d, c = evaluate(a)
        if f < best_f or (f == best_f and a < best_a):
            best_a, best_f = a, f
        if abs(d) <= gtol * abs(d0):
            return a
        if d < 0.0:
            lo = a
        else:
            hi = a
        if math.isfinite(hi) and hi - lo <= xtol * hi:
            break
    return best_a


# --- kernels ---


@kernel
def _qbrank_one_query(
    scores_q, delta_q, alpha, labels_q, weights_q, use_labels, labelled, tau, tau_grade, w_pref,
    xp_i, xp_j, xp_w, grad_q, hess_q, out,
):  # fmt: skip
    """One query of QBRank at ``s = scores + alpha * delta``.

    scores_q, labels_q: IN float64 (n,).  delta_q: IN float64 (n,) or (0,) (zero).
    weights_q: IN float32 (n,) or (0,).  xp_*: IN explicit pairs (rows in the query).
    grad_q, hess_q: OUT float32 (n,) or (0,) (not wanted): dR/dh and Algorithm 2's W.
    out: OUT float64 (3,): phi, phi', phi'' of this query's R along ``delta``.

    Every term carries its document weight (a pair ``(nu_i + nu_j) / 2``, a labelled
    document ``nu_z``) in ``c``, the one coefficient of its value, gradient, W and line
    search derivatives: they are all of one weighted risk.
    """
    n = scores_q.shape[0]
    has_w = weights_q.shape[0] > 0
    has_d = delta_q.shape[0] > 0
    want_gh = grad_q.shape[0] > 0
    a_buf, b_buf, n_lab = label_pair_buffers(labels_q, use_labels)
    n_pairs = n_lab + xp_i.shape[0]
    g_acc = np.zeros(n if want_gh else 0, dtype=np.float64)
    h_acc = np.zeros(n if want_gh else 0, dtype=np.float64)
    phi = 0.0
    d1 = 0.0
    d2 = 0.0
    if w_pref > 0.0:
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
            si = scores_q[i]
            sj = scores_q[j]
            dd = 0.0
            if has_d:
                si += alpha * delta_q[i]
                sj += alpha * delta_q[j]
                dd = delta_q[j] - delta_q[i]
            m = sj - si + t
            c = w_pref * omega
            if has_w:
                c *= 0.5 * (np.float64(weights_q[i]) + np.float64(weights_q[j]))
            if want_gh:
                h_acc[i] += c
                h_acc[j] += c
            if m > 0.0:
                if want_gh:
                    g_acc[i] -= c * m
                    g_acc[j] += c * m
                phi += 0.5 * c * m * m
                d1 += c * m * dd
                d2 += c * dd * dd
    if labelled and w_pref < 1.0:
        wl = 1.0 - w_pref
        for z in range(n):
            s = scores_q[z]
            dz = 0.0
            if has_d:
                dz = delta_q[z]
                s += alpha * dz
            r = labels_q[z] - s
            c = wl * (np.float64(weights_q[z]) if has_w else 1.0)
            if want_gh:
                g_acc[z] -= c * r
                h_acc[z] += c
            phi += 0.5 * c * r * r
            d1 -= c * r * dz
            d2 += c * dz * dz
    if want_gh:
        for z in range(n):
            grad_q[z] = g_acc[z]
            hess_q[z] = h_acc[z]
    out[0] = phi
    out[1] = d1
    out[2] = d2


def _qbrank_all_queries(
    scores, delta, alpha, labels, weights, query_offsets, use_labels, labelled, tau, tau_grade,
    w_pref, xpair_offsets, xpair_i, xpair_j, xpair_w, gradients, hessians, out,
):  # fmt: skip
    """Parallel driver over queries; every query writes only its own slices.

    IN: scores, labels float64 (n_samples,); delta float64 (n_samples,) or (0,);
    weights float32 (n_samples,) or (0,); query_offsets int64; explicit pairs in CSR.
    OUT: gradients, hessians float32 (n_samples,) or (0,); out float64 (n_queries, 3).
    """
    over_queries(
        _qbrank_queries, query_offsets, scores, delta, alpha, labels, weights, query_offsets,
        use_labels, labelled, tau, tau_grade, w_pref, xpair_offsets, xpair_i, xpair_j, xpair_w,
        gradients, hessians, out,
    )  # fmt: skip


@kernel
def _qbrank_queries(
    q0, q1, scores, delta, alpha, labels, weights, query_offsets, use_labels, labelled, tau,
    tau_grade, w_pref, xpair_offsets, xpair_i, xpair_j, xpair_w, gradients, hessians, out,
):  # fmt: skip
    # queries q0..q1-1 of _qbrank_all_queries (see ltrboost._numba.over_queries)
    has_w = weights.shape[0] > 0
    has_d = delta.shape[0] > 0
    want_gh = gradients.shape[0] > 0
    for q in range(q0, q1):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        w_lo = lo if has_w else 0
        w_hi = hi if has_w else 0
        d_lo = lo if has_d else 0
        d_hi = hi if has_d else 0
        g_lo = lo if want_gh else 0
        g_hi = hi if want_gh else 0
        x0 = xpair_offsets[q]
        x1 = xpair_offsets[q + 1]
        _qbrank_one_query(
            scores[lo:hi], delta[d_lo:d_hi], alpha, labels[lo:hi], weights[w_lo:w_hi],
            use_labels, labelled, tau, tau_grade, w_pref,
            xpair_i[x0:x1], xpair_j[x0:x1], xpair_w[x0:x1],
            gradients[g_lo:g_hi], hessians[g_lo:g_hi], out[q],
        )  # fmt: skip


# --- references ---


def _qbrank_reference(
    scores: NDArray[np.float64],
    labels: NDArray[np.float64] | None,
    x: NDArray[np.int64],
    y: NDArray[np.int64],
    omega: NDArray[np.float64],
    tau_p: NDArray[np.float64],
    w: float,
    weights: NDArray[np.floating] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
    """Vectorised ``(g, h, R)`` on pair arrays from
    :func:`ltrboost.objectives.preferences.preference_pairs_reference` (document
    weights: a pair weighs ``(nu_x + nu_y) / 2``, a labelled document ``nu_z``)."""
    s = np.asarray(scores, dtype=np.float64)
    n = s.size
    nu = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    v = np.maximum(s[y] - s[x] + tau_p, 0.0)
    cp = w * omega * 0.5 * (nu[x] + nu[y])
    g = np.zeros(n)
    h = np.zeros(n)
    np.add.at(g, x, -cp * v)
    np.add.at(g, y, cp * v)
    np.add.at(h, x, cp)
    np.add.at(h, y, cp)
    loss = 0.5 * float(np.sum(cp * v**2))
    if labels is not None:
        r = np.asarray(labels, dtype=np.float64) - s
        g -= (1.0 - w) * nu * r
        h += (1.0 - w) * nu
        loss += 0.5 * (1.0 - w) * float(np.sum(nu * r**2))
    return g, h, loss


def _qbrank_line_search_reference(
    scores: NDArray[np.float64],
    delta: NDArray[np.float64],
    labels: NDArray[np.float64] | None,
    x: NDArray[np.int64],
    y: NDArray[np.int64],
    omega: NDArray[np.float64],
    tau_p: NDArray[np.float64],
    w: float,
    weights: NDArray[np.floating] | None = None,
) -> float:
    """Exact minimiser over ``alpha >= 0`` by walking the sorted hinge breakpoints.

    ``phi'(alpha) = sum_p c_p max(0, m_p + alpha e_p) e_p - sum_z b_z (r_z - alpha
    delta_z) delta_z`` is piecewise linear; find the first breakpoint where it is
    ``>= 0`` and solve the linear piece before it.
    """
    s = np.asarray(scores, dtype=np.float64)
    dl = np.asarray(delta, dtype=np.float64)
    n = s.size
    nu = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    cp = w * omega * 0.5 * (nu[x] + nu[y])
    m = s[y] - s[x] + tau_p
    e = dl[y] - dl[x]
    if labels is None or w >= 1.0:
        bz, r = np.zeros(n), np.zeros(n)
    else:
        bz, r = (1.0 - w) * nu, np.asarray(labels, dtype=np.float64) - s

    def dphi(a: float) -> float:
        return float(np.sum(cp * np.maximum(m + a * e, 0.0) * e) - np.sum(bz * (r - a * dl) * dl))

    if not dphi(0.0) < 0:
        return 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        bp = np.where(e != 0, -m / e, -1.0)
    knots = np.unique(np.concatenate(([0.0], bp[bp > 0])))
    vals = np.array([dphi(k) for k in knots])
    above = np.flatnonzero(vals >= 0)
    if above.size:
        k = int(above[0])
        a0, a1, v0, v1 = knots[k - 1], knots[k], vals[k - 1], vals[k]
        return float(a0 - v0 * (a1 - a0) / (v1 - v0))
    # beyond the last knot phi' is linear with the slope of the pairs active there
    a0 = float(knots[-1])
    slope = float(np.sum(cp * (m + (a0 + 1.0) * e > 0) * e * e) + np.sum(bz * dl * dl))
    return a0 - dphi(a0) / slope

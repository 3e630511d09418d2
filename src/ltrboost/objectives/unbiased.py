r"""Unbiased LambdaMART: LambdaMART from clicks, with the position bias learnt jointly.

Hu, Wang, Peng & Li, "Unbiased LambdaMART: An Unbiased Pairwise Learning-to-Rank
Algorithm", WWW 2019 (the algorithm XGBoost's ``lambdarank_unbiased`` implements).
Labels are clicks (1 clicked, 0 not; any grades work) of documents shown at known
1-based positions (``RankingDataset.position``).  A click at position ``k`` is biased
by ``t+_k`` (how much more likely a relevant document is clicked there than at the
top), a non-click by ``t-_k``; the pairwise loss of LambdaMART is debiased by dividing
each pair ``(i clicked, j not)`` by ``t+_{pos(i)} t-_{pos(j)}``::

    L = sum_pairs |dZ_ij| log(1 + exp(-sigma (s_i - s_j))) / (t+_{pos i} t-_{pos j})

(Hu et al. eq. 25), so the pair's gradient and hessian (:class:`.lambdamart.LambdaMART`)
are divided by the same product.  After every round the biases are re-estimated from the
same pairs' losses (eqs. 30, 31, with the regularisation exponent ``p =
position_bias_norm``)::

    l+_k = sum over pairs with pos(i) = k of  C_ij / t-_{pos j}
    l-_k = sum over pairs with pos(j) = k of  C_ij / t+_{pos i}
    t+_k = (l+_k / l+_1) ** (1 / (1 + p)),   t-_k = (l-_k / l-_1) ** (1 / (1 + p))

with ``C_ij = |dZ_ij| log(1 + exp(sigma (s_i - s_j)))`` (the loss the pair would have
in the *reverse* order, as XGBoost accumulates it; see below) times the pair weight
``(w_i + w_j) / 2``; ``t+_1 = t-_1 = 1``.  All biases start at 1, so the first round is plain
LambdaMART.  The gradient's ``|dZ|`` carries LightGBM's score-distance scaling ``1 /
(0.01 + |s_i - s_j|)`` when ``lambda_normalization``; ``C_ij``'s does not (see below).
The query normalisation ``log2(1 + S) / S`` multiplies gradients only (as XGBoost).

Choices, where the paper leaves room:

* Positions deeper than ``max_positions`` share the last tracked bias (XGBoost skips
  their division instead, which treats a deep position as if it were the top one).
* A position without any pair in a round keeps its previous estimate; the estimates are
  not updated at all in a round where position 1 has no pair.
* Every estimate is kept in ``[1 / BIAS_BOUND, BIAS_BOUND]`` (``1e6``), and a warning
  (:class:`~ltrboost.params.ParameterWarning`, once a run) names the first position
  whose estimate sits at the bound.  Without regularisation (``p = 0``) eqs. 30, 31
  need not have a finite solution, and their round-by-round iteration then diverges
  geometrically: positions 1 and 2 shown together, clicked at 1 as often as at 2, plus
  impressions of positions (2, k) clicked at 2 for ``m`` deeper ``k`` give ``t+_2 =
  (1 + m) t-_2`` and ``t-_2 = t+_2``, so both grew ``1 + m``-fold every two rounds (1e7
  after 20 rounds with ``m = 4``, toward ``inf`` and ``0`` after some hundreds: a model
  file that cannot be written, and gradients divided by 0), each pair through position
  2 weighted ever less.  With ``p > 0`` the exponent ``1 / (1 + p)`` damps the
  iteration and the same log settles (``t+_2 = 2.3, t-_2 = 1.75`` at ``p = 0.5``).
  The bound sits where no log gives an estimate: a ratio of ``1e6`` to position 1's
  takes more than a million impressions per click; inside it the formula is
  unchanged bit for bit.  Biases read from a model file (any positive finite value)
  are clipped to it too: ``1e-25`` made float32 gradients ``inf``.
* The loss sums of eqs. 30, 31 are sums, not means: they assume that every tracked
  position is shown equally often (every query at least ``max_positions`` long, as in
  the paper's simulation).  A position that fewer queries reach gets a proportionally
  smaller ``t+`` and ``t-`` (lists of 5 and of 10 results, half each: ``t+_6..10``
  about half the true examination, ``t-`` 0.7 for 1; a position shown once in 200
  queries: ``t+ = 0.005``), and the last tracked position sums all the deeper ones
  (``max_positions = 4`` on lists of 10: ``t+_4 = 1.2, t-_4 = 9`` for the true ``0.16,
  1``).  XGBoost sums too (it drops the deeper positions' losses instead of pooling
  them).
* ``C_ij`` of eqs. 30, 31 is ``log(1 + exp(sigma (s_i - s_j)))``, XGBoost's choice, not
  the loss of the pair in its observed order ``log(1 + exp(-sigma (s_i - s_j)))`` that
  the paper's eq. 25 and its authors' code (acbull/Unbiased_LambdaMart) use, because the
  latter does not converge: as the trees learn, the loss of a pair (clicked, unclicked
  irrelevant) vanishes, and at position 1 every unclicked document is an irrelevant
  one, so ``l-_1 -> 0`` and every ``t-_k`` grows with the number of rounds instead of
  with the log.  On 8,000 position-based impressions in random order (examination
  ``1/k``, ``t- = 1``), ``p = 0``, 50 rounds, the observed-order loss gave ``t-`` of
  88-213 and ``t+_10 = 0.039`` (true 0.1); the reverse-order loss gives ``t-`` of
  1.4-1.7 and ``t+ = 0.45, 0.31, 0.21, ..., 0.087`` for the true ``0.5, 0.33, 0.25, ...,
  0.1`` (XGBoost 3.2 on the same log: ``0.46, 0.29, 0.21, ..., 0.087``;
  ``tests/objectives/test_unbiased.py``).  Neither is consistent when the shown order
  follows relevance (``docs/experiments/clicks/estimator.md``).  The gradients (eq.
  25) are unchanged.
* ``C_ij``'s ``|dZ_ij|`` is the paper's, without the score-distance scaling that the
  gradient uses (XGBoost and the authors' code scale both): the scaling makes the
  cost of nearly tied pairs -- a clicked and an unexamined relevant document, which the
  model scores alike -- up to 100 times larger, and those pairs sit at deep positions,
  so ``t-`` drifted up with the log (to 2.1-3.0 at 32,000 random-order impressions,
  XGBoost 1.8-2.3, truth 1).  Without it: ``t-`` 0.93-0.98 and every ``t+_k`` within 8%
  of ``1/k`` on that log.

Predictions never use positions: the biases are properties of the click log, saved in
the model file for inspection (``Booster.position_bias``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from ltrboost._numba import kernel, over_queries
from ltrboost.metrics.ndcg import delta_ndcg
from ltrboost.objectives.pair_engine import (
    lambda_norm_factor,
    rank_ordered_query,
    sigmoid_from_exp,
)
from ltrboost.objectives.pair_selection import (
    has_two_labels,
    n_outer_ranks,
    query_rank_order,
)

# Hu et al.'s public implementation uses p = 0.5 (its "eta"); XGBoost's default is 2.
DEFAULT_POSITION_BIAS_NORM = 0.5
# XGBoost tracks 32 positions.
DEFAULT_MAX_POSITIONS = 32
# Below this a position's loss sum is treated as "no data" (XGBoost's Eps64).
_EPS = 1e-16
# Every estimate is kept in [1 / BIAS_BOUND, BIAS_BOUND] (module docstring).
BIAS_BOUND = 1e6


class PositionBias(NamedTuple):
    """Estimated position biases, index ``k - 1`` for position ``k`` (``t_plus[0] ==
    t_minus[0] == 1``): ``t_plus`` of clicks, ``t_minus`` of non-clicks."""

    t_plus: NDArray[np.float64]
    t_minus: NDArray[np.float64]


def position_index(position: NDArray[np.int64], max_positions: int) -> NDArray[np.int64]:
    """0-based bias index of each row: ``min(position, max_positions) - 1``."""
    return np.ascontiguousarray(np.minimum(position, max_positions) - 1, dtype=np.int64)


def bound_position_bias(t: NDArray[np.float64]) -> NDArray[np.float64]:
    """``t`` clipped to ``[1 / BIAS_BOUND, BIAS_BOUND]`` (a copy; values inside are
    returned bit for bit)."""
    return np.clip(np.asarray(t, dtype=np.float64), 1.0 / BIAS_BOUND, BIAS_BOUND)


def update_position_bias(
    bias: PositionBias,
    loss_plus: NDArray[np.float64],
    loss_minus: NDArray[np.float64],
    norm: float,
) -> PositionBias:
    """Hu et al. eqs. 30 and 31: ``t = (l / l_1) ** (1 / (1 + norm))`` where there was
    a loss; elsewhere (and everywhere when ``l_1`` is 0) the previous estimate; each
    kept in ``[1 / BIAS_BOUND, BIAS_BOUND]``."""
    exponent = 1.0 / (1.0 + norm)
    out = []
    for t, loss in ((bias.t_plus, loss_plus), (bias.t_minus, loss_minus)):
        t = t.copy()
        if loss[0] >= _EPS:
            ok = loss >= _EPS
            t[ok] = (loss[ok] / loss[0]) ** exponent
        out.append(bound_position_bias(t))
    return PositionBias(out[0], out[1])


def first_at_bound(bias: PositionBias) -> tuple[str, int, float] | None:
    """``(name, position, value)`` of the first estimate at the bound (``"t_plus"``
    before ``"t_minus"``, 1-based position), or None."""
    for name, t in (("t_plus", bias.t_plus), ("t_minus", bias.t_minus)):
        at = np.flatnonzero((t >= BIAS_BOUND) | (t <= 1.0 / BIAS_BOUND))
        if at.size:
            return name, int(at[0]) + 1, float(t[at[0]])
    return None


def losses_by_position(
    li_rows: NDArray[np.float64],
    lj_rows: NDArray[np.float64],
    pos_index: NDArray[np.int64],
    n_positions: int,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per-row loss sums (the kernels' outputs) summed by position."""
    lp = np.bincount(pos_index, weights=li_rows, minlength=n_positions)
    lm = np.bincount(pos_index, weights=lj_rows, minlength=n_positions)
    return lp[:n_positions], lm[:n_positions]


# --- kernels ---


@kernel
def _pair_loss(rho, one_minus_rho, x):
    """``log(1 + exp(-x))`` from ``rho = 1 / (1 + exp(x))`` and ``1 - rho``, precise on
    both tails (``-log(1 - rho)``); ``_pair_loss(1 - rho, rho, -x)`` is ``log(1 +
    exp(x))``."""
    if rho < 0.5:
        return -math.log1p(-rho)
    if one_minus_rho > 0.0:
        return -math.log(one_minus_rho)
    return -x


@kernel
def _unbiased_ndcg_query(
    scores_q, labels_q, values_q, inv_norm_q, weights_q, pos_q, t_plus, t_minus, order,
    n_outer, sigma, normalize, grad_q, hess_q, li_q, lj_q,
):  # fmt: skip
    """One query of Unbiased LambdaMART (NDCG, ``all``/``topk`` pairs); the pair count.

    The loop of :func:`.lambdamart._lambdamart_ndcg_scalar` with each pair's gradient
    and hessian divided by ``t+_{pos i} t-_{pos j}``; when that product is 1 the
    arithmetic is the same, so with all biases 1 the result is bit-identical
    (tested).  ``li_q`` / ``lj_q`` (OUT, by row) receive the pair losses of eqs. 30, 31.
    """
    n = order.shape[0]
    s, v, lab, disc, ex = rank_ordered_query(order, scores_q, values_q, labels_q, sigma)
    g_acc = np.zeros(n)  # by rank
    h_acc = np.zeros(n)
    li_acc = np.zeros(n)
    lj_acc = np.zeros(n)
    scale_by_diff = normalize and s[0] != s[n - 1]
    has_w = weights_q.shape[0] > 0
    sum_lambdas = 0.0
    n_pairs = 0
    for a in range(n_outer):
        la = lab[a]
        for b in range(a + 1, n):
            lb = lab[b]
            if la == lb:
                continue
            if la > lb:
                ri = a
                rj = b
            else:
                ri = b
                rj = a
            t = 1.0 if la > lb else -1.0
            dz_pair = delta_ndcg(v[a], v[b], disc[a], disc[b], inv_norm_q)
            dz = dz_pair
            x = sigma * (s[ri] - s[rj])
            if scale_by_diff:
                dz /= 0.01 + abs(s[ri] - s[rj])
            rho, one_minus_rho = sigmoid_from_exp(ex[ri], ex[rj], x)
            di = order[ri]
            dj = order[rj]
            tp = t_plus[pos_q[di]]
            tm = t_minus[pos_q[dj]]
            debias = tp * tm
            grad = sigma * dz * rho
            hess = sigma * sigma * dz * rho * one_minus_rho
            if debias != 1.0:
                grad /= debias
                hess /= debias
            sum_lambdas += 2.0 * grad
            g_acc[a] -= t * grad
            g_acc[b] += t * grad
            h_acc[a] += hess
            h_acc[b] += hess
            cost = dz_pair * _pair_loss(one_minus_rho, rho, -x)  # see the module docstring
            if has_w:
                cost *= 0.5 * (np.float64(weights_q[di]) + np.float64(weights_q[dj]))
            li_acc[ri] += cost / tm
            lj_acc[rj] += cost / tp
            n_pairs += 1
    factor = lambda_norm_factor(normalize, sum_lambdas)
    for r in range(n):
        d = order[r]
        w = weights_q[d] if has_w else 1.0
        grad_q[d] = g_acc[r] * factor * w
        hess_q[d] = h_acc[r] * factor * w
        li_q[d] = li_acc[r]
        lj_q[d] = lj_acc[r]
    return n_pairs


def unbiased_ndcg_all_queries(
    scores, labels, values, inv_norm, weights, query_offsets, pos_index, t_plus, t_minus,
    method, truncation, sigma, normalize, gradients, hessians, li_rows, lj_rows, counts_out,
):  # fmt: skip
    """Gradients, hessians (OUT float32) and the per-row pair losses (OUT float64) of
    every query, on threads (each query writes only its own rows)."""
    over_queries(
        _unbiased_ndcg_queries, query_offsets, scores, labels, values, inv_norm, weights,
        query_offsets, pos_index, t_plus, t_minus, method, truncation, sigma, normalize,
        gradients, hessians, li_rows, lj_rows, counts_out,
    )  # fmt: skip


@kernel
def _unbiased_ndcg_queries(
    q0, q1, scores, labels, values, inv_norm, weights, query_offsets, pos_index, t_plus,
    t_minus, method, truncation, sigma, normalize, gradients, hessians, li_rows, lj_rows,
    counts_out,
):  # fmt: skip
    has_w = weights.shape[0] > 0
    for q in range(q0, q1):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        n = hi - lo
        for d in range(lo, hi):
            gradients[d] = 0.0
            hessians[d] = 0.0
            li_rows[d] = 0.0
            lj_rows[d] = 0.0
        counts_out[q] = 0
        labels_q = labels[lo:hi]
        if n < 2 or inv_norm[q] <= 0.0 or not has_two_labels(labels_q):
            continue
        scores_q = scores[lo:hi]
        counts_out[q] = _unbiased_ndcg_query(
            scores_q, labels_q, values[lo:hi], inv_norm[q],
            weights[lo:hi] if has_w else weights[0:0], pos_index[lo:hi], t_plus, t_minus,
            query_rank_order(scores_q), n_outer_ranks(n, method, truncation), sigma,
            normalize, gradients[lo:hi], hessians[lo:hi], li_rows[lo:hi], lj_rows[lo:hi],
        )  # fmt: skip


# --- reference ---


def unbiased_reference(
    scores: NDArray[np.float64],
    y: NDArray[np.float64],
    query_offsets: NDArray[np.int64],
    pos_index: NDArray[np.int64],
    bias: PositionBias,
    *,
    sigma: float = 1.0,
    truncation_level: int | None = 30,
    lambda_normalization: bool = True,
    weights: NDArray[np.floating] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64], float, NDArray[np.float64], NDArray]:
    """NumPy twin of the kernels (``gain="exp"``, ``topk``/``all`` pairs).

    Returns ``(gradients, hessians, loss, loss_plus, loss_minus)``: ``loss`` is the
    debiased surrogate ``sum_q factor_q sum_pairs w_ij C_ij / (t+ t-)`` whose gradient
    (with pairs, |dZ| and the query factor frozen) is ``gradients``; ``loss_plus`` /
    ``loss_minus`` the per-position sums of eqs. 30, 31.
    """
    s_all = np.asarray(scores, dtype=np.float64)
    n_all = s_all.size
    g = np.zeros(n_all)
    h = np.zeros(n_all)
    w_all = np.ones(n_all) if weights is None else np.asarray(weights, dtype=np.float64)
    k_pos = bias.t_plus.size
    lp = np.zeros(k_pos)
    lm = np.zeros(k_pos)
    total = 0.0
    for q in range(len(query_offsets) - 1):
        lo, hi = int(query_offsets[q]), int(query_offsets[q + 1])
        s, lab, pos = s_all[lo:hi], np.asarray(y[lo:hi], float), pos_index[lo:hi]
        n = hi - lo
        order = np.argsort(-s, kind="stable")
        gains = np.exp2(lab) - 1.0
        ideal = np.sort(gains)[::-1]
        if truncation_level is not None:
            ideal = ideal[:truncation_level]
        idcg = float(np.sum(ideal / np.log2(np.arange(ideal.size) + 2.0)))
        if n < 2 or idcg == 0.0 or np.all(lab == lab[0]):
            continue
        n_outer = n if truncation_level is None else min(n, truncation_level)
        disc = 1.0 / np.log2(np.arange(n) + 2.0)
        gq = np.zeros(n)
        hq = np.zeros(n)
        rows = []
        for a in range(n_outer):
            for b in range(a + 1, n):
                da, db = order[a], order[b]
                if lab[da] == lab[db]:
                    continue
                (ri, di), (rj, dj) = ((a, da), (b, db)) if lab[da] > lab[db] else ((b, db), (a, da))
                dz = abs(gains[di] - gains[dj]) * abs(disc[ri] - disc[rj]) / idcg
                if lambda_normalization and s.max() != s.min():
                    dz /= 0.01 + abs(s[di] - s[dj])
                x = sigma * (s[di] - s[dj])
                rho = 1.0 / (1.0 + np.exp(x))
                t = bias.t_plus[pos[di]] * bias.t_minus[pos[dj]]
                gp = sigma * dz * rho / t
                hp = sigma**2 * dz * rho * (1.0 - rho) / t
                gq[di] -= gp
                gq[dj] += gp
                hq[di] += hp
                hq[dj] += hp
                wp = 0.5 * (w_all[lo + di] + w_all[lo + dj])
                cost = dz * np.logaddexp(0.0, -x) * wp  # the pair's loss (eq. 25)
                dz_pair = abs(gains[di] - gains[dj]) * abs(disc[ri] - disc[rj]) / idcg
                est = dz_pair * np.logaddexp(0.0, x) * wp  # eqs. 30, 31's C_ij (docstring)
                lp[pos[di]] += est / bias.t_minus[pos[dj]]
                lm[pos[dj]] += est / bias.t_plus[pos[di]]
                rows.append((2.0 * gp, cost / t))
        lam = sum(r[0] for r in rows)
        factor = np.log2(1.0 + lam) / lam if lambda_normalization and lam > 0 else 1.0
        g[lo:hi] = gq * factor * w_all[lo:hi]
        h[lo:hi] = hq * factor * w_all[lo:hi]
        total += factor * sum(r[1] for r in rows)
    return g, h, total, lp, lm
